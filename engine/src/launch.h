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

/* Largest row length the softmax kernel accepts (documented limit). */
#define KE__SOFTMAX_MAX_COLS ((int64_t)1 << 31)

#ifdef __cplusplus
}
#endif
#endif
