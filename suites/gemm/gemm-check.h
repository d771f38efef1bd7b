/* What the GEMM suites share (gemm-check.c): the tolerance of a GEMM
 * result, derived from its K-length f32 accumulation (mxfp and perf use it
 * too), and the gemm suite's cases: one GEMM on views of padded operands
 * against the double reference, case tables, operands that end at their
 * last element.
 */
#ifndef KILN_SUITES_GEMM_CHECK_H
#define KILN_SUITES_GEMM_CHECK_H

#include <stddef.h>
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

/* ---- The gemm suite's cases ------------------------------------------------ */

typedef struct gemm_case {
  int64_t batch, m, n, k;
  int trans_a, trans_b;
  ke_dtype ta, tb, tc;
  float alpha, beta;
  int64_t pad_a, pad_b, pad_c; /* row stride minus row length */
  int64_t off_a, off_b, off_c; /* view base, elements into the backing */
  int share_a, share_b;        /* 1: batch stride 0; 2: rank-2 operand */
  int nan_c;                   /* C holds NaN before the call */
  float mean;                  /* of the operands' normal values (sd 1) */
  const char *label;           /* prefix of the check's name, or NULL */
  int all_t;                   /* 1: every transpose (check_transposes) */
} gemm_case;

/* batch 1, m x n x k, f32 throughout, alpha 1, beta 0, packed, no label. */
gemm_case gemm_base(int64_t m, int64_t n, int64_t k);
/* One GEMM against the reference: the views' results, C's gaps unchanged. */
void check_gemm(const gemm_case *g);
/* Every transpose combination of one shape and dtype triple. */
void check_transposes(gemm_case g);
/* A table of cases: each in every transpose when all_t is set, else once. */
void gemm_cases_run(const gemm_case *rows, size_t n);

/* A row of the matrix-core tables: A and B of one dtype t, C of tc. */
typedef struct mm_row {
  const char *what;
  int64_t batch, m, n, k;
  ke_dtype t, tc;
  float alpha, beta;
  int64_t pad_a, pad_b, pad_c, off_a, off_b, off_c;
  int share_a, share_b, nan_c;
} mm_row;

gemm_case mm_row_case(const mm_row *r);
/* Each row in every transpose. */
void mm_rows_run(const mm_row *rows, size_t n);
/* The large sizes of gemm/matrix_cores_large (gemm-check.c). */
extern const mm_row kMmLarge[];
extern const size_t kMmLargeN;

/* A [rows, cols] view with row stride ld over exactly (rows - 1) * ld +
 * cols elements, filled N(0, 1), with its host copy. */
typedef struct exact_operand {
  ke_tensor mem, view;
  double *host;
} exact_operand;
void exact_make(exact_operand *o, ke_dtype dt, int64_t rows, int64_t cols,
                int64_t ld);
void exact_free(exact_operand *o);

#endif
