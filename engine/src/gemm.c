/* GEMM: the C entry point (layout checks, launch) and the double-precision
 * reference, side by side; also the matrix-view checks that every entry
 * point launching the GEMM kernels shares (gemm-impl.h). The kernels are
 * in kernels/gemm.hip (kernels/tile/gemm_mma.h, kernels/tile/gemm.h).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine-impl.h"
#include "gemm-impl.h"
#include "kiln/kernels.h"
#include "contract/launch.h"

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

/* The reference in register tiles of KE__RT x 4 outputs, each output summed
 * p ascending from 0.0 exactly as one sum per output would be: the tiles
 * change which outputs are summed side by side, never an output's order.
 * op(A) and op(B) are first copied into panels (KE__RT rows of op(A) and 4
 * columns of op(B), k consecutive), so that the inner loop reads both
 * along memory whatever the transposes, and a panel of B is used by many
 * rows while it is in cache (a row at a time streamed all of B from memory
 * for every row of C). */
#define KE__RT 4           /* rows of a tile */
#define KE__RB 32          /* rows of C per work item */
#define KE__CB 64          /* columns of C per work item */

typedef double ke__v2d __attribute__((vector_size(16)));

typedef struct gemm_ref_job {
  const ke_gemm_params *p;
  int64_t batch, m, n, k;
  const double *a, *b;
  double *c;
  int64_t lda, stride_a, ldb, stride_b, ldc, stride_c;
  double *pa, *pb;                 /* the panels, per batch of A and B */
  int64_t na, nb;                  /* batches of A and B held */
  int64_t ra, cb;                  /* row panels of op(A), column panels of op(B) */
  int64_t rblocks, cblocks;
} gemm_ref_job;

/* Panel r of op(A) in batch bi: pa[((bi * ra + r) * k + q) * KE__RT + t] is
 * op(A)[r * KE__RT + t][q], 0 past the last row. */
static void gemm_pack_a(void *arg, int64_t item) {
  const gemm_ref_job *g = arg;
  const int64_t bi = item / g->ra, r = item % g->ra, k = g->k;
  const double *ab = g->a + bi * g->stride_a;
  ke_ref_pack_rows(ab, g->lda, g->p->trans_a, g->m, r * KE__RT, k, KE__RT,
                   g->pa + item * k * KE__RT);
}

/* Panel c of op(B): pb[((bi * cb + c) * k + q) * 4 + t] is op(B)[q][c*4+t]. */
static void gemm_pack_b(void *arg, int64_t item) {
  const gemm_ref_job *g = arg;
  const int64_t bi = item / g->cb, c = item % g->cb, k = g->k;
  const double *bb = g->b + bi * g->stride_b;
  /* op(B)'s columns are the rows of op(B) transposed: B itself when
   * trans_b, else B transposed. */
  ke_ref_pack_rows(bb, g->ldb, !g->p->trans_b, g->n, c * 4, k, 4, g->pb + item * k * 4);
}

/* acc[t][0..3] = sum over q ascending of a[q][t] * b[q][0..3], from 0.0. */
static void gemm_tile(const double *a, const double *b, int64_t k,
                      double acc[KE__RT][4]) {
  ke__v2d s00 = {0.0, 0.0}, s01 = s00, s10 = s00, s11 = s00, s20 = s00,
          s21 = s00, s30 = s00, s31 = s00;
  for (int64_t q = 0; q < k; q++, a += KE__RT, b += 4) {
    ke__v2d b0, b1;
    memcpy(&b0, b, sizeof b0);
    memcpy(&b1, b + 2, sizeof b1);
    ke__v2d a0 = {a[0], a[0]}, a1 = {a[1], a[1]}, a2 = {a[2], a[2]},
            a3 = {a[3], a[3]};
    s00 += a0 * b0, s01 += a0 * b1;
    s10 += a1 * b0, s11 += a1 * b1;
    s20 += a2 * b0, s21 += a2 * b1;
    s30 += a3 * b0, s31 += a3 * b1;
  }
  const ke__v2d s[KE__RT][2] = {{s00, s01}, {s10, s11}, {s20, s21},
                                {s30, s31}};
  for (int t = 0; t < KE__RT; t++)
    for (int u = 0; u < 2; u++)
      acc[t][2 * u] = s[t][u][0], acc[t][2 * u + 1] = s[t][u][1];
}

/* One block of KE__RB rows and KE__CB columns of C in one batch. */
static void gemm_ref_block(void *arg, int64_t item) {
  const gemm_ref_job *g = arg;
  const ke_gemm_params *p = g->p;
  const int64_t per_batch = g->rblocks * g->cblocks;
  const int64_t bi = item / per_batch, rem = item % per_batch;
  const int64_t i0 = rem / g->cblocks * KE__RB, j0 = rem % g->cblocks * KE__CB;
  const int64_t i1 = i0 + KE__RB < g->m ? i0 + KE__RB : g->m;
  const int64_t j1 = j0 + KE__CB < g->n ? j0 + KE__CB : g->n;
  const int64_t k = g->k;
  const double alpha = p->alpha, beta = p->beta;
  double *cb = g->c + bi * g->stride_c;
  for (int64_t j = j0; j < j1; j += 4) {
    const double *bp = alpha != 0.0
        ? g->pb + ((g->nb > 1 ? bi : 0) * g->cb + j / 4) * k * 4 : NULL;
    for (int64_t i = i0; i < i1; i += KE__RT) {
      double acc[KE__RT][4] = {{0.0}};
      if (alpha != 0.0)
        gemm_tile(g->pa + ((g->na > 1 ? bi : 0) * g->ra + i / KE__RT) * k *
                              KE__RT, bp, k, acc);
      for (int t = 0; t < KE__RT && i + t < i1; t++) {
        double *cr = cb + (i + t) * g->ldc;
        for (int u = 0; u < 4 && j + u < j1; u++) {
          double v = alpha * acc[t][u];
          if (beta != 0.0) v += beta * cr[j + u];
          cr[j + u] = v;
        }
      }
    }
  }
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
  gemm_ref_job g = {.p = params, .batch = batch, .m = m, .n = n, .k = k, .a = a, .b = b,
                    .c = c, .lda = lda, .stride_a = stride_a, .ldb = ldb,
                    .stride_b = stride_b, .ldc = ldc, .stride_c = stride_c};
  g.ra = (m + KE__RT - 1) / KE__RT, g.cb = (n + 3) / 4;
  g.rblocks = (m + KE__RB - 1) / KE__RB, g.cblocks = (n + KE__CB - 1) / KE__CB;
  ke_ref_begin();
  if (params->alpha != 0.0f) { /* alpha 0 reads neither A nor B */
    g.na = stride_a == 0 ? 1 : batch, g.nb = stride_b == 0 ? 1 : batch;
    g.pa = malloc((size_t)(g.na * g.ra * k * KE__RT) * sizeof *g.pa);
    g.pb = malloc((size_t)(g.nb * g.cb * k * 4) * sizeof *g.pb);
    if (!g.pa || !g.pb) abort(); /* a reference has no status to return */
    ke_ref_parallel(g.na * g.ra, (double)g.na * m * k, gemm_pack_a, &g);
    ke_ref_parallel(g.nb * g.cb, (double)g.nb * n * k, gemm_pack_b, &g);
  }
  ke_ref_parallel(batch * g.rblocks * g.cblocks, (double)batch * m * n * k,
                  gemm_ref_block, &g);
  free(g.pa);
  free(g.pb);
  ke_ref_end();
}
