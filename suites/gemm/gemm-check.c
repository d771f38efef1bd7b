/* The GEMM suites' shared checks (gemm-check.h): the tolerance of a GEMM
 * result, and one case (operands as views of padded backings) against the
 * double reference.
 */
#include "gemm-check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* gemm_tol's pass over one row of C (item: batch * m + row): the partial
 * sums in the kernel's order, k ascending, a row of B at a time when B is
 * not transposed (the sums are the same, and B is read along its rows). */
typedef struct tol_job {
  const ke_gemm_params *p;
  int64_t m, n, k, lda, stride_a, ldb, stride_b, ldc, stride_c;
  const double *a, *b, *c;
  double *walk, *sum, *cmax; /* per row: the maxima over its outputs */
} tol_job;

static void tol_row(void *arg, int64_t item) {
  const tol_job *t = arg;
  const ke_gemm_params *p = t->p;
  const int64_t bi = item / t->m, i = item % t->m, n = t->n;
  const double *ab = t->a + bi * t->stride_a, *bb = t->b + bi * t->stride_b;
  double *partial = calloc((size_t)(2 * n), sizeof *partial);
  if (!partial) abort(); /* a worker thread cannot fail a test */
  double *squares = partial + n;
  for (int64_t q = 0; q < t->k; q++) {
    const double av = p->trans_a ? ab[q * t->lda + i] : ab[i * t->lda + q];
    for (int64_t j = 0; j < n; j++) {
      const double bv = p->trans_b ? bb[j * t->ldb + q] : bb[q * t->ldb + j];
      const double prod = av * bv;
      if (!isfinite(prod)) continue; /* specials propagate exactly */
      partial[j] += prod;
      squares[j] += partial[j] * partial[j];
    }
  }
  double walk = 0.0, sum = 0.0, cm = 0.0;
  for (int64_t j = 0; j < n; j++) {
    if (squares[j] > walk) walk = squares[j];
    if (fabs(partial[j]) > sum) sum = fabs(partial[j]);
    if (p->beta != 0.0f) {
      double cv = fabs(t->c[bi * t->stride_c + i * t->ldc + j]);
      if (isfinite(cv) && cv > cm) cm = cv;
    }
  }
  t->walk[item] = walk, t->sum[item] = sum, t->cmax[item] = cm;
  free(partial);
}

kt_tol gemm_tol(ke_dtype out, const ke_gemm_params *p, int64_t batch,
                int64_t m, int64_t n, int64_t k, const double *a,
                int64_t lda, int64_t stride_a, const double *b, int64_t ldb,
                int64_t stride_b, const double *c, int64_t ldc,
                int64_t stride_c) {
  const double u = ldexp(1.0, -24), lambda = 8.0;
  const int64_t rows = batch * m;
  double *per_row = malloc((size_t)(3 * rows) * sizeof *per_row);
  ck_assert_ptr_nonnull(per_row);
  tol_job job = {p, m, n, k, lda, stride_a, ldb, stride_b, ldc, stride_c,
                 a, b, c, per_row, per_row + rows, per_row + 2 * rows};
  ke_ref_parallel(rows, (double)rows * n * k, tol_row, &job);
  double walk_max = 0.0, sum_max = 0.0, c_max = 0.0;
  for (int64_t r = 0; r < rows; r++) {
    if (job.walk[r] > walk_max) walk_max = job.walk[r];
    if (job.sum[r] > sum_max) sum_max = job.sum[r];
    if (job.cmax[r] > c_max) c_max = job.cmax[r];
  }
  free(per_row);
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

