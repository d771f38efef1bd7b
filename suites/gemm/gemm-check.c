/* The GEMM suites' shared checks (gemm-check.h): the tolerance of a GEMM
 * result, and one case (operands as views of padded backings) against the
 * double reference.
 */
#include "gemm-check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* gemm_tol's walk: for every output the partial sums in the kernel's order,
 * k ascending from 0.0, a product that is not finite left out (specials
 * propagate exactly), and the sum of their squares; per work item (a block
 * of rows and columns of C) the maxima over its outputs. As in ke_gemm_ref,
 * op(A) and op(B) are first copied into panels of TOL_RT rows and 4
 * columns, k consecutive, and each tile of outputs is summed side by side
 * in registers: the order of every output's sums is the one-at-a-time
 * order. A product left out adds +0.0 instead (a mask), which changes
 * nothing: a partial sum that starts at +0.0 and adds finite terms is never
 * -0.0 (x + -x is +0.0), so adding +0.0 leaves it and its square's sum as
 * they were. */
#define TOL_RT 4  /* rows of op(A) per panel */
#define TOL_RB 32 /* rows of C per work item */
#define TOL_CB 64 /* columns of C per work item */

typedef double v2d __attribute__((vector_size(16)));
typedef long long v2i __attribute__((vector_size(16)));

typedef struct tol_job {
  const ke_gemm_params *p;
  int64_t m, n, k, lda, stride_a, ldb, stride_b, ldc, stride_c;
  const double *a, *b, *c;
  double *pa, *pb;              /* panels, per batch of A and of B held */
  int64_t na, nb, ra, cb, rblocks, cblocks;
  double *walk, *sum, *cmax;    /* per item: the maxima over its outputs */
} tol_job;

static void tol_pack_a(void *arg, int64_t item) {
  const tol_job *t = arg;
  const int64_t bi = item / t->ra, r = item % t->ra, k = t->k;
  const double *ab = t->a + bi * t->stride_a;
  ke_ref_pack_rows(ab, t->lda, t->p->trans_a, t->m, r * TOL_RT, k, TOL_RT,
                   t->pa + item * k * TOL_RT);
}

static void tol_pack_b(void *arg, int64_t item) {
  const tol_job *t = arg;
  const int64_t bi = item / t->cb, c = item % t->cb, k = t->k;
  const double *bb = t->b + bi * t->stride_b;
  ke_ref_pack_rows(bb, t->ldb, !t->p->trans_b, t->n, c * 4, k, 4, t->pb + item * k * 4);
}

/* a * b where the product is finite, +0.0 where it is not (Inf or NaN:
 * x - x is 0 only for finite x). */
static inline v2d finite_or_zero(v2d x, v2i *keep) {
  *keep = (x - x) == (v2d){0.0, 0.0};
  return (v2d)((v2i)x & *keep);
}

/* Two rows (u0, u0 + 1 of an A panel) by four columns: partial sums and
 * the sums of their squares. */
static void tol_tile(const double *a, const double *b, int64_t k, int u0,
                     double part[2][4], double sq[2][4]) {
  const v2d z = {0.0, 0.0};
  v2d p00 = z, p01 = z, p10 = z, p11 = z, q00 = z, q01 = z, q10 = z, q11 = z;
  a += u0;
  for (int64_t q = 0; q < k; q++, a += TOL_RT, b += 4) {
    v2d b0, b1;
    memcpy(&b0, b, sizeof b0);
    memcpy(&b1, b + 2, sizeof b1);
    const v2d a0 = {a[0], a[0]}, a1 = {a[1], a[1]};
    v2i k00, k01, k10, k11;
    p00 += finite_or_zero(a0 * b0, &k00);
    p01 += finite_or_zero(a0 * b1, &k01);
    p10 += finite_or_zero(a1 * b0, &k10);
    p11 += finite_or_zero(a1 * b1, &k11);
    q00 += (v2d)((v2i)(p00 * p00) & k00);
    q01 += (v2d)((v2i)(p01 * p01) & k01);
    q10 += (v2d)((v2i)(p10 * p10) & k10);
    q11 += (v2d)((v2i)(p11 * p11) & k11);
  }
  const v2d pv[2][2] = {{p00, p01}, {p10, p11}}, qv[2][2] = {{q00, q01},
                                                            {q10, q11}};
  for (int r = 0; r < 2; r++)
    for (int h = 0; h < 2; h++)
      for (int l = 0; l < 2; l++)
        part[r][2 * h + l] = pv[r][h][l], sq[r][2 * h + l] = qv[r][h][l];
}

static void tol_block(void *arg, int64_t item) {
  const tol_job *t = arg;
  const int64_t per_batch = t->rblocks * t->cblocks, k = t->k;
  const int64_t bi = item / per_batch, rem = item % per_batch;
  const int64_t i0 = rem / t->cblocks * TOL_RB, j0 = rem % t->cblocks * TOL_CB;
  const int64_t i1 = i0 + TOL_RB < t->m ? i0 + TOL_RB : t->m;
  const int64_t j1 = j0 + TOL_CB < t->n ? j0 + TOL_CB : t->n;
  double walk = 0.0, sum = 0.0, cm = 0.0;
  for (int64_t j = j0; j < j1; j += 4) {
    const double *bp = t->pb + ((t->nb > 1 ? bi : 0) * t->cb + j / 4) * k * 4;
    for (int64_t i = i0; i < i1; i += 2) {
      const double *ap =
          t->pa + ((t->na > 1 ? bi : 0) * t->ra + i / TOL_RT) * k * TOL_RT;
      double part[2][4], sq[2][4];
      tol_tile(ap, bp, k, (int)(i % TOL_RT), part, sq);
      for (int r = 0; r < 2 && i + r < i1; r++)
        for (int u = 0; u < 4 && j + u < j1; u++) {
          if (sq[r][u] > walk) walk = sq[r][u];
          if (fabs(part[r][u]) > sum) sum = fabs(part[r][u]);
        }
    }
  }
  if (t->p->beta != 0.0f)
    for (int64_t i = i0; i < i1; i++)
      for (int64_t j = j0; j < j1; j++) {
        double cv = fabs(t->c[bi * t->stride_c + i * t->ldc + j]);
        if (isfinite(cv) && cv > cm) cm = cv;
      }
  t->walk[item] = walk, t->sum[item] = sum, t->cmax[item] = cm;
}

kt_tol gemm_tol(ke_dtype out, const ke_gemm_params *p, int64_t batch,
                int64_t m, int64_t n, int64_t k, const double *a,
                int64_t lda, int64_t stride_a, const double *b, int64_t ldb,
                int64_t stride_b, const double *c, int64_t ldc,
                int64_t stride_c) {
  const double u = ldexp(1.0, -24), lambda = 8.0;
  tol_job job = {.p = p, .m = m, .n = n, .k = k, .lda = lda, .stride_a = stride_a,
                 .ldb = ldb, .stride_b = stride_b, .ldc = ldc, .stride_c = stride_c,
                 .a = a, .b = b, .c = c};
  job.na = stride_a == 0 ? 1 : batch, job.nb = stride_b == 0 ? 1 : batch;
  job.ra = (m + TOL_RT - 1) / TOL_RT, job.cb = (n + 3) / 4;
  job.rblocks = (m + TOL_RB - 1) / TOL_RB;
  job.cblocks = (n + TOL_CB - 1) / TOL_CB;
  const int64_t items = batch * job.rblocks * job.cblocks;
  job.pa = malloc((size_t)(job.na * job.ra * k * TOL_RT) * sizeof *job.pa);
  job.pb = malloc((size_t)(job.nb * job.cb * k * 4) * sizeof *job.pb);
  double *per_item = malloc((size_t)(3 * items) * sizeof *per_item);
  ck_assert_ptr_nonnull(job.pa);
  ck_assert_ptr_nonnull(job.pb);
  ck_assert_ptr_nonnull(per_item);
  job.walk = per_item, job.sum = per_item + items;
  job.cmax = per_item + 2 * items;
  ke_ref_parallel(job.na * job.ra, (double)job.na * m * k, tol_pack_a, &job);
  ke_ref_parallel(job.nb * job.cb, (double)job.nb * n * k, tol_pack_b, &job);
  ke_ref_parallel(items, (double)batch * m * n * k, tol_block, &job);
  /* Maxima of values that are never NaN: the order does not matter. */
  double walk_max = 0.0, sum_max = 0.0, c_max = 0.0;
  for (int64_t r = 0; r < items; r++) {
    if (job.walk[r] > walk_max) walk_max = job.walk[r];
    if (job.sum[r] > sum_max) sum_max = job.sum[r];
    if (job.cmax[r] > c_max) c_max = job.cmax[r];
  }
  free(per_item);
  free(job.pa);
  free(job.pb);
  const double alpha = fabs((double)p->alpha), beta = fabs((double)p->beta);
  kt_tol tol = kt_tol_default(out);
  tol.atol = alpha * lambda * u * sqrt(walk_max) +
             2.0 * u * (alpha * sum_max + beta * c_max);
  if (out == KE_F16) tol.atol += ldexp(1.0, -25); /* subnormal half-ulp */
  return tol;
}

/* ---- One GEMM against the reference -------------------------------------- */


gemm_case gemm_base(int64_t m, int64_t n, int64_t k) {
  gemm_case g;
  memset(&g, 0, sizeof g);
  g.batch = 1;
  g.m = m;
  g.n = n;
  g.k = k;
  g.ta = g.tb = g.tc = KE_F32;
  g.alpha = 1.0f;
  return g;
}


/* A stored matrix in a packed backing tensor [nb, rows, cols + pad], the
 * view the kernel gets (starting `off` elements in, off <= pad), and the
 * backing contents as doubles; `at` is the view's first element there. */
typedef struct operand {
  ke_tensor full, view;
  double *host, *at;
  int64_t ld, stride; /* in the backing's elements; stride 0 = shared */
} operand;

static void operand_make(operand *o, ke_dtype dt, int64_t batch,
                         int64_t rows, int64_t cols, int64_t pad, int64_t off,
                         int share, float mean) {
  ck_assert_msg(off <= pad, "a view offset (%lld) needs as much padding",
                (long long)off);
  const int64_t nb = share ? 1 : batch;
  int64_t shape[3] = {nb, rows, cols + pad};
  kt_alloc(&o->full, dt, 3, shape);
  kt_fill_normal(&o->full, mean, 1.0f);
  o->host = kt_to_doubles(&o->full);
  o->at = o->host + off;
  o->ld = cols + pad;
  o->stride = share ? 0 : rows * o->ld;
  o->view = o->full;
  o->view.data = (char *)o->full.data + off * (int64_t)ke_dtype_size(dt);
  if (share == 2 || (batch == 1 && share == 0)) { /* rank 2 */
    o->view.rank = 2;
    o->view.shape[0] = rows;
    o->view.shape[1] = cols;
    o->view.stride[0] = o->ld;
    o->view.stride[1] = 1;
  } else {
    o->view.shape[0] = batch;
    o->view.shape[2] = cols;
    o->view.stride[0] = o->stride;
  }
}

static void operand_free(operand *o) {
  free(o->host);
  kt_free(&o->full);
}

void check_gemm(const gemm_case *g) {
  ke_gemm_params p;
  ke_gemm_params_init(&p);
  p.trans_a = g->trans_a;
  p.trans_b = g->trans_b;
  p.alpha = g->alpha;
  p.beta = g->beta;
  operand a, b, c;
  operand_make(&a, g->ta, g->batch, g->trans_a ? g->k : g->m,
               g->trans_a ? g->m : g->k, g->pad_a, g->off_a, g->share_a,
               g->mean);
  operand_make(&b, g->tb, g->batch, g->trans_b ? g->n : g->k,
               g->trans_b ? g->k : g->n, g->pad_b, g->off_b, g->share_b,
               g->mean);
  operand_make(&c, g->tc, g->batch, g->m, g->n, g->pad_c, g->off_c, 0, 0.0f);
  const int64_t c_elems = ke_tensor_numel(&c.full);
  if (g->nan_c) {
    for (int64_t i = 0; i < c_elems; i++) c.host[i] = NAN;
    kt_from_doubles(&c.full, c.host);
  }
  kt_assert_ok(ke_gemm(kt_ctx(), &a.view, &b.view, &c.view, &p));

  /* Expected: the reference in the view, C's gap columns unchanged. */
  kt_tol tol = gemm_tol(g->tc, &p, g->batch, g->m, g->n, g->k, a.at, a.ld,
                        a.stride, b.at, b.ld, b.stride, c.at, c.ld,
                        c.stride);
  double *ref = malloc((size_t)c_elems * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  memcpy(ref, c.host, (size_t)c_elems * sizeof *ref);
  ke_gemm_ref(&p, g->batch, g->m, g->n, g->k, a.at, a.ld, a.stride, b.at,
              b.ld, b.stride, ref + g->off_c, c.ld, c.stride);
  char name[224];
  snprintf(name, sizeof name,
           "%s%sgemm_b%lld_%lldx%lldx%lld_%s%s_%s_%s_%s%s",
           g->label ? g->label : "", g->label ? ": " : "", (long long)g->batch,
           (long long)g->m, (long long)g->n, (long long)g->k,
           g->trans_a ? "T" : "N", g->trans_b ? "T" : "N",
           ke_dtype_name(g->ta), ke_dtype_name(g->tb), ke_dtype_name(g->tc),
           g->pad_a || g->pad_b || g->pad_c ? "_views" : "");
  kt_assert_close(name, &c.full, ref, tol);
  free(ref);
  operand_free(&a);
  operand_free(&b);
  operand_free(&c);
}

void check_transposes(gemm_case g) {
  for (int t = 0; t < 4; t++) {
    g.trans_a = t & 1;
    g.trans_b = t >> 1;
    check_gemm(&g);
  }
}

void gemm_cases_run(const gemm_case *rows, size_t n) {
  for (size_t i = 0; i < n; i++) {
    ck_assert_msg(rows[i].batch >= 1, "case %zu: batch %lld", i,
                  (long long)rows[i].batch);
    if (rows[i].all_t) check_transposes(rows[i]);
    else check_gemm(&rows[i]);
  }
}

/* gemm/matrix_cores_large's rows, shared with dev/host-checks.c, which
 * times their host side. */
const mm_row kMmLarge[] = {
    {"1000 cubed", 1, 1000, 1000, 1000, KE_BF16, KE_F32, 1, 0, .pad_a = 0},
    {"3001 x 1000 x 17", 1, 3001, 1000, 17, KE_F16, KE_F16, 1, 0, .pad_a = 0},
    {"17 x 3001 x 1000", 1, 17, 3001, 1000, KE_BF16, KE_BF16, 0.5f, 1, .pad_a = 0},
    {"1000 x 17 x 3001", 1, 1000, 17, 3001, KE_F16, KE_F32, 1, 0, .pad_a = 0},
    {"3001 x 3001 x 1000", 1, 3001, 3001, 1000, KE_F16, KE_F32, 1, 0, .pad_a = 0},
    {"vec 1001 cubed", 1, 1001, 1001, 1001, KE_BF16, KE_F16, 1, 0,
     .pad_a = 7, .pad_b = 7},
    {"unaligned 1000 x 1001 x 999", 2, 1000, 1001, 999, KE_BF16, KE_F32, 1,
     0, .pad_a = 1, .pad_b = 3, .off_a = 1},
};
const size_t kMmLargeN = sizeof kMmLarge / sizeof kMmLarge[0];

gemm_case mm_row_case(const mm_row *r) {
  const gemm_case g = {
      .batch = r->batch, .m = r->m, .n = r->n, .k = r->k, .ta = r->t,
      .tb = r->t, .tc = r->tc, .alpha = r->alpha, .beta = r->beta,
      .pad_a = r->pad_a, .pad_b = r->pad_b, .pad_c = r->pad_c,
      .off_a = r->off_a, .off_b = r->off_b, .off_c = r->off_c,
      .share_a = r->share_a, .share_b = r->share_b, .nan_c = r->nan_c,
      .label = r->what};
  return g;
}

void mm_rows_run(const mm_row *rows, size_t n) {
  for (size_t i = 0; i < n; i++) check_transposes(mm_row_case(&rows[i]));
}

/* ---- Operands allocated to their last element ---------------------------- */


void exact_make(exact_operand *o, ke_dtype dt, int64_t rows, int64_t cols,
                int64_t ld) {
  int64_t extent[1] = {(rows - 1) * ld + cols};
  kt_assert_ok(ke_tensor_alloc(kt_ctx(), &o->mem, dt, 1, extent));
  kt_fill_normal(&o->mem, 0.0f, 1.0f);
  o->host = kt_to_doubles(&o->mem);
  o->view = o->mem;
  o->view.rank = 2;
  o->view.shape[0] = rows;
  o->view.shape[1] = cols;
  o->view.stride[0] = ld;
  o->view.stride[1] = 1;
}

void exact_free(exact_operand *o) {
  free(o->host);
  kt_assert_ok(ke_tensor_free(kt_ctx(), &o->mem));
}

