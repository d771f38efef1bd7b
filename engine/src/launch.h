/* Launchers: the C boundary between the engine and the device code.
 *
 * Each kernel family in kernels/<family>.hip defines its launchers here with C
 * linkage. A launcher has already been handed validated shapes by its engine
 * entry point; it picks a grid, launches on the given stream and returns the
 * runtime's error code (0 on success) as an int, so that this header stays
 * free of any vendor type. Internal to the engine.
 */
#ifndef KILN_ENGINE_LAUNCH_H
#define KILN_ENGINE_LAUNCH_H

#include <stdint.h>

#include "kiln/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[r, :] = softmax(scale * x[r, :]) over rows of cols elements; row r
 * starts at r * x_row_stride (y_row_stride), elements are contiguous. With
 * causal != 0, rows come in groups of sq queries and column c of row r is
 * masked when c > (r % sq) + causal_offset. */
int ke__softmax_launch(void *stream, ke_dtype in_dtype, const void *x,
                       int64_t x_row_stride, ke_dtype out_dtype, void *y,
                       int64_t y_row_stride, int64_t rows, int64_t cols,
                       float scale, int causal, int64_t sq,
                       int64_t causal_offset);

/* out[i] = convert(a * in[i] + b) for i < n: f32 in, any dtype out. Used
 * to turn f32 random draws into the range and dtype asked for. */
int ke__affine_convert_launch(void *stream, const float *in,
                              ke_dtype out_dtype, void *out, int64_t n,
                              float a, float b);

/* ---- Attention family (kernels/masks.hip, attention.hip, kv_repeat.hip) */

/* Masks: `matrices` [sq, sk] score matrices. Matrix number n decomposes
 * over lead_shape (row-major, nlead <= 4 dimensions) into the element
 * offset sum(index[d] * lead_stride[d]); row i and column j add
 * i * row_stride + j * col_stride. offset is resolved (never the -1
 * default) and window is < 0 (none) or below sq + sk + |offset|. */
typedef struct ke__mask_desc {
  int64_t lead_shape[4];
  int64_t lead_stride[4];
  int nlead;
  int64_t matrices, sq, sk, row_stride, col_stride;
  int causal;
  int64_t window, n_global, offset;
} ke__mask_desc;
int ke__mask_launch(void *stream, ke_dtype dtype, void *scores,
                    const ke__mask_desc *desc);

/* Fused attention: q/o [b, hq, sq, d], k/v [b, hkv, sk, d]; strides in
 * elements for the B, H and S dimensions (D is contiguous); 1 <= d <= 256,
 * hq a multiple of hkv; scale resolved; offset resolved when causal. */
typedef struct ke__attention_desc {
  int64_t b, hq, hkv, sq, sk, d;
  int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];
  float scale;
  int causal;
  int64_t offset;
} ke__attention_desc;
int ke__attention_launch(void *stream, ke_dtype dtype, const void *q,
                         const void *k, const void *v, void *o,
                         const ke__attention_desc *desc);

/* K/V replication: shape is the output's [b, hq, s, d]; input head
 * h / (hq / hkv) feeds output head h. Strides in elements. */
typedef struct ke__kv_repeat_desc {
  int64_t shape[4];
  int64_t hkv;
  int64_t in_stride[4];
  int64_t out_stride[4];
} ke__kv_repeat_desc;
int ke__kv_repeat_launch(void *stream, ke_dtype dtype, const void *in,
                         void *out, const ke__kv_repeat_desc *desc);

/* Largest row length the softmax kernel accepts (documented limit). */
#define KE__SOFTMAX_MAX_COLS ((int64_t)1 << 31)

#ifdef __cplusplus
}
#endif
#endif
