/* What the gemm and mxfp suites share: the tolerance of a GEMM result,
 * derived from its K-length f32 accumulation (defined in suites/gemm.c).
 */
#ifndef KILN_SUITES_GEMM_CHECK_H
#define KILN_SUITES_GEMM_CHECK_H

#include <stdint.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

/* Tolerance for C = alpha * op(A) * op(B) + beta * C computed by the tiled
 * kernel and stored as `out`, given the operands as ke_gemm_ref takes them
 * (c: C before the call).
 *
 * Why it depends on K: each output is one in-order f32 sum of K products
 * with fused multiply-add, so K roundings, the k-th a relative error
 * |d_k| <= u = 2^-24 of the partial sum s_k, and an error of sum_k d_k s_k
 * (to first order). A relative tolerance alone fails correct results that
 * cancel to near zero, and one fixed atol is too tight at K = 65536 or too
 * loose at K = 1. The worst case u sum_k |s_k| grows like K^1.5 for random
 * data, sqrt(K) times the error actually made: at K = 65536 it would pass
 * a dropped term. Rounding errors of random data act as independent,
 * mean-zero variables (Higham and Mary, "A New Approach to Probabilistic
 * Rounding Error Analysis", SISC 2019), so by Hoeffding's inequality
 * |sum_k d_k s_k| <= lambda u sqrt(sum_k s_k^2) except with probability
 * 2 exp(-lambda^2 / 2): lambda = 8 makes that 3e-14 per output. The partial
 * sums are the reference's, in the kernel's order (k ascending); a kernel
 * that sums in another order needs its own bound. alpha * sum and + beta * c
 * round twice more: 2u (|alpha sum| + |beta c|). atol is the largest of
 * these over the outputs (one atol per check); rtol is the output dtype's
 * default, which covers the final rounding to that dtype (each default is at
 * least its unit roundoff), and f16 adds its subnormal half-ulp. */
kt_tol gemm_tol(ke_dtype out, const ke_gemm_params *p, int64_t batch,
                int64_t m, int64_t n, int64_t k, const double *a,
                int64_t lda, int64_t stride_a, const double *b, int64_t ldb,
                int64_t stride_b, const double *c, int64_t ldc,
                int64_t stride_c);

#endif
