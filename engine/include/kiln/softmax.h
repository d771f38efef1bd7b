/* kiln engine: row softmax with optional scale and fused causal mask.
 * Kernel: kernels/softmax.hip; entry point and reference:
 * engine/src/softmax.c; tolerances and limits: docs/kernels.md.
 */
#ifndef KILN_SOFTMAX_H
#define KILN_SOFTMAX_H

#include <stdint.h>

#include "kiln/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Softmax ------------------------------------------------------------ */

/* Row softmax over the last dimension: y = softmax(scale * x).
 *
 * x and y have the same shape, any rank 1..KE_MAX_RANK, dtypes f32, f16 or
 * bf16 independently (f32 accumulation). The last dimension must be
 * contiguous (stride 1); the leading dimensions must collapse to one row
 * stride. Rows of 1 to 2^31 elements, any number of rows.
 *
 * Special values, per row: any NaN, or any +inf, makes the whole row NaN
 * (as in PyTorch); a row that is all -inf (fully masked) gives zeros.
 *
 * causal: the last two dimensions are [Sq, Sk] scores; query i (row i of
 * each Sq x Sk matrix) may attend to key j only when j <= i + offset, where
 * offset = causal_offset, or Sk - Sq when causal_offset < 0 (decode: the
 * queries are the last Sq positions). Masked entries count as -inf. */
typedef struct ke_softmax_params {
  float scale;             /* default 1 */
  int causal;              /* default 0 */
  int64_t causal_offset;   /* default -1: Sk - Sq */
} ke_softmax_params;

void ke_softmax_params_init(ke_softmax_params *p);
int ke_softmax(ke_context *ctx, const ke_tensor *x, ke_tensor *y,
               const ke_softmax_params *params);
/* Reference on packed [rows, cols] doubles; sq = query rows per matrix
 * (used only when causal). */
void ke_softmax_ref(const double *x, double *y, int64_t rows, int64_t cols,
                    const ke_softmax_params *params, int64_t sq);

#ifdef __cplusplus
}
#endif
#endif
