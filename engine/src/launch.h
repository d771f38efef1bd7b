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
#include "kiln/rope.h"

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

/* ---- RoPE (kernels/rope.hip) ---- */

/* A RoPE launch, shapes validated. Tokens are (b, s), b < batch, s < seq;
 * head h of token (b, s) starts at b * stride[0] + s * stride[1] +
 * h * stride[2] elements; its dim elements are contiguous. The rot rotary
 * dimensions form rot / (2 * sec_pairs) sections (1 or 2) of sec_pairs
 * pairs; section 0 turns by pos, section 1 by pos2. Position of token
 * (b, s): pos[b * pos_batch_stride + s]. */
typedef struct ke__rope_args {
  ke_dtype x_dtype, y_dtype;
  const void *x;
  void *y;
  int64_t x_stride[3], y_stride[3];
  int64_t batch, seq, heads, dim, rot, sec_pairs;
  int interleaved;
  int copy_rest;               /* copy dims rot..dim-1 (out of place) */
  const void *pos, *pos2;      /* pos2 == pos in 1-D */
  int pos_i64;
  int64_t pos_batch_stride;    /* 0 or seq */
  double theta;
} ke__rope_args;

int ke__rope_launch(void *stream, const ke__rope_args *args);

/* Writes the ids of a validated spec (kiln/rope.h); block_ids may be NULL
 * except for bidirectional. */
typedef struct ke__position_ids_args {
  ke_position_ids_kind kind;
  int64_t count, seq_len, start, prefix_len, mask_pos, window, n_global;
  void *ids, *block_ids;
  int ids_i64, block_ids_i64;
} ke__position_ids_args;

int ke__position_ids_launch(void *stream, const ke__position_ids_args *args);

/* Most heads a RoPE launch takes: heads * pairs-per-chunk stays in int. */
#define KE__ROPE_MAX_HEADS ((int64_t)1 << 23)

/* ---- RMSNorm (kernels/rmsnorm.hip) ---- */

/* Rows of cols elements, row r of each tensor at r * its stride, elements
 * contiguous. residual (x's dtype) may be NULL: no add; otherwise
 * x += residual is stored into x first. weight may be NULL: all ones. */
int ke__rmsnorm_launch(void *stream, ke_dtype x_dtype, void *x,
                       int64_t x_stride, const void *residual,
                       int64_t residual_stride, ke_dtype w_dtype,
                       const void *weight, ke_dtype y_dtype, void *y,
                       int64_t y_stride, int64_t rows, int64_t cols,
                       float eps);

/* ---- SwiGLU (kernels/swiglu.hip) ---- */

/* out[r, c] = silu(gate[r, c]) * up[r, c] over rows of cols elements, row r
 * of each at r * its stride, elements contiguous; gate and up share
 * in_dtype. */
int ke__swiglu_launch(void *stream, ke_dtype in_dtype, const void *gate,
                      int64_t gate_stride, const void *up, int64_t up_stride,
                      ke_dtype out_dtype, void *out, int64_t out_stride,
                      int64_t rows, int64_t cols);

/* Largest row length the softmax kernel accepts (documented limit). */
#define KE__SOFTMAX_MAX_COLS ((int64_t)1 << 31)

#ifdef __cplusplus
}
#endif
#endif
