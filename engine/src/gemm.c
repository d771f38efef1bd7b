/* GEMM: the C entry point (layout checks, launch) and the double-precision
 * reference, side by side; also the matrix-view checks that every entry
 * point launching the GEMM kernels shares (gemm-impl.h). The kernels are
 * in kernels/gemm.hip (kernels/kd-gemm-mma.h, kernels/kd-gemm.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine-impl.h"
#include "gemm-impl.h"
#include "kiln/kernels.h"
#include "launch.h"

/* Largest element extent a view may span: its byte offsets must fit in
 * int64_t for every dtype (at most 8 bytes wide, with room to spare). */
#define KE__MAX_EXTENT (INT64_MAX / 8)

int ke__matrix_view_of(const ke_tensor *t, const char *who, const char *what,
                       ke__matrix_view *v) {
  if (ke_dtype_size(t->dtype) == 0)
    return ke__fail(KE_EDTYPE, "%s: %s dtype %d is not f32, f16 or bf16", who,
                    what, (int)t->dtype);
  if (t->rank != 2 && t->rank != 3)
    return ke__fail(KE_ESHAPE, "%s: %s has rank %d; it must be 2 ([rows, "
                               "cols]) or 3 ([batch, rows, cols])",
                    who, what, t->rank);
  for (int d = 0; d < t->rank; d++) {
    if (t->shape[d] < 1)
      return ke__fail(KE_ESHAPE, "%s: %s dimension %d is %lld; dimensions "
                                 "must be >= 1", who, what, d,
                      (long long)t->shape[d]);
    if (t->stride[d] < 0)
      return ke__fail(KE_ESHAPE, "%s: %s dimension %d has negative stride "
                                 "%lld", who, what, d,
                      (long long)t->stride[d]);
  }
  const int last = t->rank - 1;
  v->rows = t->shape[last - 1];
  v->cols = t->shape[last];
  if (v->rows > KE__GEMM_MAX_DIM || v->cols > KE__GEMM_MAX_DIM)
    return ke__fail(KE_ESHAPE, "%s: %s is [%lld, %lld]; rows and columns "
                               "are limited to %lld", who, what,
                    (long long)v->rows, (long long)v->cols,
                    (long long)KE__GEMM_MAX_DIM);
  if (v->cols > 1 && t->stride[last] != 1)
    return ke__fail(KE_ESHAPE, "%s: %s last dimension has stride %lld; it "
                               "must be contiguous (stride 1)", who, what,
                    (long long)t->stride[last]);
  v->ld = v->rows > 1 ? t->stride[last - 1] : v->cols;
  if (v->ld < v->cols)
    return ke__fail(KE_ESHAPE, "%s: %s row stride %lld is below its row "
                               "length %lld (rows would overlap)", who, what,
                    (long long)v->ld, (long long)v->cols);
  v->batch = t->rank == 3 ? t->shape[0] : 1;
  v->batch_stride = v->batch > 1 ? t->stride[0] : 0;

  /* extent = (batch - 1) * batch_stride + (rows - 1) * ld + cols */
  int64_t span, rows_span, extent;
  if (__builtin_mul_overflow(v->batch - 1, v->batch_stride, &span) ||
      __builtin_mul_overflow(v->rows - 1, v->ld, &rows_span) ||
      __builtin_add_overflow(span, rows_span, &extent) ||
      __builtin_add_overflow(extent, v->cols, &extent) ||
      extent > KE__MAX_EXTENT)
    return ke__fail(KE_ESHAPE, "%s: %s strides (batch %lld, row %lld) over "
                               "[%lld, %lld, %lld] span more than %lld "
                               "elements", who, what,
                    (long long)v->batch_stride, (long long)v->ld,
                    (long long)v->batch, (long long)v->rows,
                    (long long)v->cols, (long long)KE__MAX_EXTENT);
  v->extent = extent;
  return KE_OK;
}

int ke__matrix_view_writable(const ke__matrix_view *v, const char *who,
                             const char *what) {
  const int64_t matrix = (v->rows - 1) * v->ld + v->cols;
  if (v->batch > 1 && v->batch_stride < matrix)
    return ke__fail(KE_ESHAPE, "%s: %s batch stride %lld is below one "
                               "matrix's extent %lld: its %lld batches "
                               "would overlap", who, what,
                    (long long)v->batch_stride, (long long)matrix,
                    (long long)v->batch);
  return KE_OK;
}

int ke__views_overlap(const void *a, const ke__matrix_view *va, ke_dtype da,
                      const void *b, const ke__matrix_view *vb, ke_dtype db) {
  uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
  uintptr_t a1 = a0 + (uintptr_t)va->extent * ke_dtype_size(da);
  uintptr_t b1 = b0 + (uintptr_t)vb->extent * ke_dtype_size(db);
  return a0 < b1 && b0 < a1;
}

void ke_gemm_params_init(ke_gemm_params *p) {
  p->trans_a = 0;
  p->trans_b = 0;
  p->alpha = 1.0f;
  p->beta = 0.0f;
}

int ke_gemm(ke_context *ctx, const ke_tensor *a, const ke_tensor *b,
            ke_tensor *c, const ke_gemm_params *params) {
  ke_gemm_params defaults;
  if (!ctx || !a || !b || !c || !a->data || !b->data || !c->data)
    return ke__fail(KE_EINVAL, "gemm: NULL context, tensor or data");
  if (!params) {
    ke_gemm_params_init(&defaults);
    params = &defaults;
  }
  if ((params->trans_a != 0 && params->trans_a != 1) ||
      (params->trans_b != 0 && params->trans_b != 1))
    return ke__fail(KE_EINVAL, "gemm: trans_a %d / trans_b %d must be 0 or 1",
                    params->trans_a, params->trans_b);
  if (!isfinite(params->alpha) || !isfinite(params->beta))
    return ke__fail(KE_EINVAL, "gemm: alpha %g and beta %g must be finite",
                    (double)params->alpha, (double)params->beta);
  ke__matrix_view va, vb, vc;
  KE__TRY(ke__matrix_view_of(a, "gemm", "A", &va));
  KE__TRY(ke__matrix_view_of(b, "gemm", "B", &vb));
  KE__TRY(ke__matrix_view_of(c, "gemm", "C", &vc));

  const int64_t m = vc.rows, n = vc.cols, batch = vc.batch;
  const int64_t am = params->trans_a ? va.cols : va.rows;
  const int64_t k = params->trans_a ? va.rows : va.cols;
  const int64_t bk = params->trans_b ? vb.cols : vb.rows;
  const int64_t bn = params->trans_b ? vb.rows : vb.cols;
  if (am != m || bn != n || bk != k)
    return ke__fail(KE_ESHAPE, "gemm: op(A) is [%lld, %lld] (trans_a %d), "
                               "op(B) is [%lld, %lld] (trans_b %d), C is "
                               "[%lld, %lld]: need [M, K] x [K, N] -> [M, N]",
                    (long long)am, (long long)k, params->trans_a,
                    (long long)bk, (long long)bn, params->trans_b,
                    (long long)m, (long long)n);
  if ((va.batch != 1 && va.batch != batch) ||
      (vb.batch != 1 && vb.batch != batch))
    return ke__fail(KE_ESHAPE, "gemm: batch extents A %lld, B %lld, C %lld: "
                               "an input's must be 1 (shared) or C's",
                    (long long)va.batch, (long long)vb.batch,
                    (long long)batch);
  KE__TRY(ke__matrix_view_writable(&vc, "gemm", "C"));
  if (ke__views_overlap(c->data, &vc, c->dtype, a->data, &va, a->dtype) ||
      ke__views_overlap(c->data, &vc, c->dtype, b->data, &vb, b->dtype))
    return ke__fail(KE_EINVAL, "gemm: C's memory overlaps A's or B's; "
                               "in-place GEMM is not supported");

  const ke__gemm_operand ga = {a->dtype, a->data, va.ld, va.batch_stride,
                               !params->trans_a};
  const ke__gemm_operand gb = {b->dtype, b->data, vb.ld, vb.batch_stride,
                               params->trans_b};
  KE__TIMED_LAUNCH(ctx, "gemm",
                   ke__gemm_launch(ctx->stream, &ga, &gb, c->dtype, c->data,
                                   vc.ld, vc.batch_stride, m, n, k, batch,
                                   params->alpha, params->beta));
  KE__PLANTED_ONE_ELEMENT(ctx, c);
  return KE_OK;
}

/* One row of C per item, over all batches. Each output is summed p
 * ascending from 0.0 in either loop order below; with B not transposed
 * the row is accumulated a row of B at a time, so that B is read along
 * its rows (a column walk over a large B misses the cache on every term). */
typedef struct gemm_ref_job {
  const ke_gemm_params *p;
  int64_t m, n, k;
  const double *a, *b;
  double *c;
  int64_t lda, stride_a, ldb, stride_b, ldc, stride_c;
} gemm_ref_job;

static void gemm_ref_row(void *arg, int64_t item) {
  const gemm_ref_job *g = arg;
  const ke_gemm_params *p = g->p;
  const int64_t bi = item / g->m, i = item % g->m, n = g->n, k = g->k;
  const double *ab = g->a + bi * g->stride_a, *bb = g->b + bi * g->stride_b;
  double *cr = g->c + bi * g->stride_c + i * g->ldc;
  const double alpha = p->alpha, beta = p->beta;
  double *sum = calloc((size_t)n, sizeof *sum);
  if (!sum) abort(); /* a reference has no status to return */
  if (alpha != 0.0) {
    if (!p->trans_b) {
      for (int64_t q = 0; q < k; q++) {
        const double av = p->trans_a ? ab[q * g->lda + i] : ab[i * g->lda + q];
        const double *br = bb + q * g->ldb;
        for (int64_t j = 0; j < n; j++) sum[j] += av * br[j];
      }
    } else {
      for (int64_t j = 0; j < n; j++) {
        double s = 0.0;
        for (int64_t q = 0; q < k; q++) {
          const double av = p->trans_a ? ab[q * g->lda + i] : ab[i * g->lda + q];
          s += av * bb[j * g->ldb + q];
        }
        sum[j] = s;
      }
    }
  }
  for (int64_t j = 0; j < n; j++) {
    double v = alpha * sum[j];
    if (beta != 0.0) v += beta * cr[j];
    cr[j] = v;
  }
  free(sum);
}

void ke_gemm_ref(const ke_gemm_params *params, int64_t batch, int64_t m,
                 int64_t n, int64_t k, const double *a, int64_t lda,
                 int64_t stride_a, const double *b, int64_t ldb,
                 int64_t stride_b, double *c, int64_t ldc, int64_t stride_c) {
  ke_gemm_params defaults;
  if (!params) {
    ke_gemm_params_init(&defaults);
    params = &defaults;
  }
  gemm_ref_job g = {params, m, n, k, a, b, c, lda, stride_a,
                    ldb, stride_b, ldc, stride_c};
  ke_ref_parallel(batch * m, (double)batch * m * n * k, gemm_ref_row, &g);
}
