/* kiln engine: RMSNorm, with an optional fused residual add.
 * Kernel: kernels/rmsnorm.hip; entry point and reference:
 * engine/src/rmsnorm.c; tolerances and limits: docs/kernels.md.
 */
#ifndef KILN_RMSNORM_H
#define KILN_RMSNORM_H

#include <stdint.h>

#include "kiln/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- RMSNorm -------------------------------------------------------------- */

/* Over the last dimension (N elements per row):
 *
 *   y = x * rsqrt(mean(x^2) + eps) * weight
 *
 * weight is [N] (NULL: all ones). The mean of squares is accumulated in f32;
 * y is computed in f32 and rounded once to y's dtype.
 *
 * Fused residual add (residual != NULL): first x += residual, element by
 * element in f32, rounded to x's dtype and WRITTEN BACK INTO x; residual is
 * only read. Then the updated x (as stored, after that rounding) is
 * normalised into y, so y is exactly what ke_rmsnorm would give on the
 * updated x alone. In a transformer block: x is the residual stream,
 * residual the branch output (attention or MLP), y the next layer's input.
 *
 * Layouts: x, residual and y of the same shape, rank 1..KE_MAX_RANK; each
 * with a contiguous last dimension and leading dimensions that collapse to
 * one row stride (a slice of a wider matrix is fine). weight rank 1, [N],
 * contiguous. N any >= 1 (one block per row, threads striding over it), any
 * number of rows. y may be x itself (same data and strides: normalise in
 * place); other overlaps are undefined.
 *
 * Dtypes: x f32/f16/bf16; residual the same dtype as x; weight and y
 * f32/f16/bf16 each.
 *
 * Special values, per row: a NaN anywhere in the row (after the residual
 * add) makes the whole row of y NaN; an Inf makes mean(x^2) Inf, so that
 * element gives NaN (Inf * 0) and the rest of the row gives 0, exactly as
 * the formula in any precision. A row whose mean square overflows f32
 * (|x| around 1e19 and above) is treated the same way, where the double
 * reference still gets finite results: the f32 accumulation is the limit.
 *
 * Refused: shape or rank mismatch among x, residual, y; weight not [N] or
 * not contiguous; non-contiguous last dimension, rows that do not collapse
 * to one stride; y sharing x's data with other strides or dtype (KE_ESHAPE);
 * dtypes outside f32/f16/bf16, residual dtype != x dtype (KE_EDTYPE); NULL
 * tensors, eps not finite or <= 0 (KE_EINVAL). */
typedef struct ke_rmsnorm_params {
  float eps;               /* default 1e-6; must be > 0 */
} ke_rmsnorm_params;

void ke_rmsnorm_params_init(ke_rmsnorm_params *p);
int ke_rmsnorm(ke_context *ctx, ke_tensor *x, const ke_tensor *residual,
               const ke_tensor *weight, ke_tensor *y,
               const ke_rmsnorm_params *params);
/* Reference on packed [rows, cols] doubles. With residual non-NULL, x is
 * updated in place to x + residual (unrounded: a caller comparing with an
 * f16/bf16 device result feeds the device's stored sum back in, with
 * residual NULL, to check y). weight may be NULL; y may equal x. */
void ke_rmsnorm_ref(double *x, const double *residual, const double *weight,
                    double *y, int64_t rows, int64_t cols, double eps);

#ifdef __cplusplus
}
#endif
#endif
