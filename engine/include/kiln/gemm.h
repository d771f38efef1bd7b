/* kiln engine: batched GEMM, C = alpha * op(A) * op(B) + beta * C.
 * Kernels: kernels/gemm.hip (tiles in kernels/tile/gemm_mma.h and
 * kernels/tile/gemm.h); entry point and
 * reference: engine/src/gemm.c; tolerances and limits:
 * docs/kernels-gemm.md.
 */
#ifndef KILN_GEMM_H
#define KILN_GEMM_H

#include <stdint.h>

#include "kiln/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- GEMM --------------------------------------------------------------- */

/* For every batch index b < batch:
 *
 *   C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b]
 *
 * with op(A) of shape [M, K], op(B) of [K, N] and C of [M, N]. Matrices are
 * row-major tensors of rank 2 ([rows, cols]) or 3 ([batch, rows, cols]):
 *
 *   trans_a = 0: A is stored [.., M, K];  trans_a = 1: stored [.., K, M]
 *   trans_b = 0: B is stored [.., K, N];  trans_b = 1: stored [.., N, K]
 *
 * so attention's scores Q * K^T are trans_b = 1 with alpha = 1/sqrt(d), and
 * weights * V is trans_a = trans_b = 0.
 *
 * Layout. The last dimension must be contiguous (stride 1). The row stride
 * (stride[rank - 2], BLAS's lda/ldb/ldc) may exceed the row length: a view
 * of a wider matrix works, and C's gap columns are left untouched. The
 * batch count is C's: rank 2 means batch 1. An A or B of rank 2, of batch
 * extent 1, or with batch stride 0 is shared by every batch (one weight
 * matrix for all of them); otherwise its batch extent must equal C's.
 *
 * Dtypes f32, f16 or bf16 for A, B and C independently; products and sums
 * are f32, and the result is rounded once to C's dtype. f16 x f16 and
 * bf16 x bf16 run on the matrix units where the device has them (NVIDIA
 * sm_80+, AMD gfx90a/gfx94x): each output is summed k ascending 16 products
 * at a time by the unit, whose internal rounding is the hardware's. All
 * else (f32: no TF32; mixed dtypes; devices without matrix units) runs on
 * the CUDA/SIMD cores, each output one thread's in-order sum of its K
 * terms with fused multiply-add. docs/kernels-gemm.md bounds both.
 *
 * beta = 0: C is written and never read (it may hold NaN or garbage).
 * alpha = 0: A and B are not read; C = beta * C (as BLAS).
 * NaN and Inf in A or B propagate as IEEE arithmetic does (a NaN in row m
 * of op(A) makes row m of C NaN); an f32 sum beyond the f32 range is Inf.
 *
 * Sizes: M, N, K from 1 to 2^31 - 1, any batch count; no shape has to be a
 * multiple of a tile, and no stride or base needs any alignment (16-byte
 * aligned rows are faster on the matrix units).
 *
 * Refuses (KE_ESHAPE): rank other than 2 or 3, a dimension < 1 or too
 * large, shapes that do not agree, a non-contiguous last dimension,
 * negative strides, a row stride below the row length (rows that overlap),
 * C batches that overlap (e.g. batch stride 0 on C), extents that overflow
 * 64-bit offsets. KE_EDTYPE for a dtype outside f32/f16/bf16. KE_EINVAL
 * for NULL arguments, non-finite alpha or beta, and a C whose memory
 * overlaps A's or B's (in-place GEMM is not supported). */
typedef struct ke_gemm_params {
  int trans_a;             /* default 0 */
  int trans_b;             /* default 0 */
  float alpha;             /* default 1 */
  float beta;              /* default 0: C not read */
} ke_gemm_params;

void ke_gemm_params_init(ke_gemm_params *p);
int ke_gemm(ke_context *ctx, const ke_tensor *a, const ke_tensor *b,
            ke_tensor *c, const ke_gemm_params *params);

/* Reference on host doubles laid out as the device operands are: element
 * (b, r, col) of an operand's stored matrix is at
 * data[b * batch_stride + r * ld + col]. A batch stride of 0 shares the
 * matrix. Same semantics as ke_gemm (beta = 0 does not read C; alpha = 0
 * does not read A or B), computed in double. */
void ke_gemm_ref(const ke_gemm_params *params, int64_t batch, int64_t m,
                 int64_t n, int64_t k, const double *a, int64_t lda,
                 int64_t stride_a, const double *b, int64_t ldb,
                 int64_t stride_b, double *c, int64_t ldc, int64_t stride_c);

#ifdef __cplusplus
}
#endif
#endif
