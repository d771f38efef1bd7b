/* RMSNorm suite: hidden sizes 1 to 16384 and row counts in every dtype,
 * with and without weight, the fused residual add (the sum written back into
 * x, then normalised), rows of 1e4-scale and of tiny values, NaN/Inf rows,
 * strided rows and each refusal, against the double reference with fresh
 * random inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

/* The dtype defaults. For f32, the mean square of a 16384-element row is
 * summed in runs of 16 per thread and then a 1024-wide tree, ~26 roundings
 * deep: at worst 26 * 2^-24 = 1.5e-6 relative, of which half reaches y
 * through the square root, plus ~3 ulp from the root, the division and the
 * two products: 9e-7 < 1.3e-6 even in the worst case (measured: 2e-7).
 * For f16 and bf16 the output rounding dominates. */
static kt_tol rmsnorm_tol(ke_dtype out) { return kt_tol_default(out); }

typedef struct norm_case {
  int64_t rows, cols;
  ke_dtype x, w, y;
  int weight;             /* 0: NULL weight (ones) */
  int residual;           /* fused residual add */
  int in_place;           /* y is x */
  double scale;           /* x ~ N(0, scale); 0 means 1 */
  float eps;              /* 0: default */
} norm_case;

static void check_rmsnorm(const norm_case *c) {
  int64_t shape[2] = {c->rows, c->cols};
  int64_t wshape[1] = {c->cols};
  ke_tensor x, y, w, r;
  const float scale = c->scale > 0.0 ? (float)c->scale : 1.0f;
  kt_alloc(&x, c->x, 2, shape);
  kt_fill_normal(&x, 0.0f, scale);
  if (c->weight) {
    kt_alloc(&w, c->w, 1, wshape);
    kt_fill_normal(&w, 1.0f, 0.5f);
  }
  if (c->residual) {
    kt_alloc(&r, c->x, 2, shape);
    kt_fill_normal(&r, 0.0f, scale);
  }
  if (c->in_place) y = x;
  else kt_alloc(&y, c->y, 2, shape);

  double *xd = kt_to_doubles(&x);
  double *wd = c->weight ? kt_to_doubles(&w) : NULL;
  double *rd = c->residual ? kt_to_doubles(&r) : NULL;
  ke_rmsnorm_params p;
  ke_rmsnorm_params_init(&p);
  if (c->eps > 0.0f) p.eps = c->eps;
  kt_assert_ok(ke_rmsnorm(kt_ctx(), &x, c->residual ? &r : NULL,
                          c->weight ? &w : NULL, &y, &p));

  const int64_t n = c->rows * c->cols;
  double *ref = malloc((size_t)n * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  char name[128];
  snprintf(name, sizeof name, "rmsnorm_%lldx%lld_%s_%s_%s%s%s",
           (long long)c->rows, (long long)c->cols, ke_dtype_name(c->x),
           c->weight ? ke_dtype_name(c->w) : "now", ke_dtype_name(c->y),
           c->residual ? "_res" : "", c->in_place ? "_inplace" : "");
  if (c->residual) {
    /* x + residual in double; the kernel stores it rounded to x's dtype. */
    ke_rmsnorm_ref(xd, rd, NULL, ref, c->rows, c->cols, p.eps);
    if (!c->in_place) {
      char sum_name[160];
      snprintf(sum_name, sizeof sum_name, "%s_sum", name);
      kt_assert_close(sum_name, &x, xd, kt_tol_default(c->x));
    }
    /* y is the norm of the sum as stored: read it back, or (in place, where
     * y has overwritten it) round it the same way through a scratch copy. */
    ke_tensor stored = x;
    if (c->in_place) {
      kt_alloc(&stored, c->x, 2, shape);
      kt_from_doubles(&stored, xd);
    }
    free(xd);
    xd = kt_to_doubles(&stored);
    if (c->in_place) kt_free(&stored);
  }
  ke_rmsnorm_ref(xd, NULL, wd, ref, c->rows, c->cols, p.eps);
  kt_assert_close(name, &y, ref, rmsnorm_tol(y.dtype));

  free(ref);
  free(xd);
  free(wd);
  free(rd);
  if (!c->in_place) kt_free(&y);
  if (c->residual) kt_free(&r);
  if (c->weight) kt_free(&w);
  kt_free(&x);
}

static const int64_t kCols[] = {1, 7, 33, 113, 1000, 4096, 16384};
static const int64_t kRows[] = {1, 3, 64};

static void sweep(ke_dtype dt) {
  for (size_t i = 0; i < sizeof kRows / sizeof kRows[0]; i++)
    for (size_t j = 0; j < sizeof kCols / sizeof kCols[0]; j++) {
      norm_case c = {.rows = kRows[i], .cols = kCols[j], .x = dt, .w = dt,
                     .y = dt, .weight = 1};
      check_rmsnorm(&c);
    }
}

START_TEST(sizes_f32) { sweep(KE_F32); }
END_TEST

START_TEST(sizes_f16) { sweep(KE_F16); }
END_TEST

START_TEST(sizes_bf16) { sweep(KE_BF16); }
END_TEST

START_TEST(mixed_dtypes) {
  norm_case c = {.rows = 3, .cols = 1000, .x = KE_F16, .w = KE_F32,
                 .y = KE_F32, .weight = 1};
  check_rmsnorm(&c);
  c = (norm_case){.rows = 7, .cols = 113, .x = KE_BF16, .w = KE_BF16,
                  .y = KE_F16, .weight = 1};
  check_rmsnorm(&c);
  c = (norm_case){.rows = 33, .cols = 4096, .x = KE_F32, .w = KE_F16,
                  .y = KE_BF16, .weight = 1};
  check_rmsnorm(&c);
}
END_TEST

START_TEST(no_weight) {
  norm_case c = {.rows = 3, .cols = 113, .x = KE_F32, .y = KE_F32};
  check_rmsnorm(&c);
  c.x = c.y = KE_BF16;
  c.cols = 16384;
  check_rmsnorm(&c);
}
END_TEST

START_TEST(in_place) {
  norm_case c = {.rows = 7, .cols = 1000, .x = KE_F32, .w = KE_F32,
                 .y = KE_F32, .weight = 1, .in_place = 1};
  check_rmsnorm(&c);
  c.x = c.y = KE_F16;
  check_rmsnorm(&c);
}
END_TEST

/* x += residual is written back into x (checked), then the stored sum is
 * normalised into y. */
START_TEST(fused_residual) {
  static const ke_dtype dts[] = {KE_F32, KE_F16, KE_BF16};
  for (size_t i = 0; i < 3; i++) {
    norm_case c = {.rows = 33, .cols = 1000, .x = dts[i], .w = dts[i],
                   .y = dts[i], .weight = 1, .residual = 1};
    check_rmsnorm(&c);
    c.rows = 1;
    c.cols = 16384;
    check_rmsnorm(&c);
    c.rows = 64;
    c.cols = 1;
    check_rmsnorm(&c);
    c.rows = 3;
    c.cols = 113;
    c.in_place = 1;
    check_rmsnorm(&c);
  }
  norm_case m = {.rows = 7, .cols = 4096, .x = KE_BF16, .w = KE_F32,
                 .y = KE_F32, .weight = 1, .residual = 1};
  check_rmsnorm(&m);
}
END_TEST

/* Row scales 1e4 and 1e-3 (where eps matters: a misplaced eps fails here),
 * and 1e-20 (eps dominates). For the tiny rows atol is zeroed so the check
 * is relative: every output is far below the default atol. */
START_TEST(extreme_values) {
  static const double scales[] = {1e4, 1e-3, 1e-20};
  static const ke_dtype dts[] = {KE_F32, KE_F16, KE_BF16};
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 3; j++) {
      double s = scales[i];
      if (dts[j] == KE_F16 && s < 1e-4) s = 1e-4; /* f16 cannot hold 1e-20 */
      const int64_t rows = 5, cols = 1000;
      int64_t shape[2] = {rows, cols};
      ke_tensor x, w, y;
      kt_alloc(&x, dts[j], 2, shape);
      kt_alloc(&w, dts[j], 1, &shape[1]);
      kt_alloc(&y, dts[j], 2, shape);
      kt_fill_normal(&x, 0.0f, 1.0f);
      kt_fill_normal(&w, 1.0f, 0.5f);
      double *xd = kt_to_doubles(&x);
      /* Rows 0..3 at scale s, row 4 at 1: rows are independent. */
      for (int64_t k = 0; k < 4 * cols; k++) xd[k] *= s;
      kt_from_doubles(&x, xd);
      free(xd);
      xd = kt_to_doubles(&x);
      double *wd = kt_to_doubles(&w);
      kt_assert_ok(ke_rmsnorm(kt_ctx(), &x, NULL, &w, &y, NULL));
      double *ref = malloc((size_t)(rows * cols) * sizeof *ref);
      ck_assert_ptr_nonnull(ref);
      ke_rmsnorm_ref(xd, NULL, wd, ref, rows, cols, 1e-6f);
      kt_tol tol = rmsnorm_tol(dts[j]);
      /* Relative only, but f16's subnormal outputs keep half an ulp of the
       * smallest subnormal (3e-8) as atol. */
      if (s < 1.0) tol.atol = dts[j] == KE_F16 ? 1e-7 : 0.0;
      char name[64];
      snprintf(name, sizeof name, "scale_%g_%s", s, ke_dtype_name(dts[j]));
      kt_check_result res;
      ck_assert_msg(kt_check(name, &y, ref, tol, &res), "%s",
                    kt_last_check_summary());
      ck_assert_int_eq(res.nan_count, 0);
      ck_assert_int_eq(res.inf_count, 0);
      free(ref);
      free(wd);
      free(xd);
      kt_free(&x);
      kt_free(&w);
      kt_free(&y);
    }
}
END_TEST

/* A NaN poisons its row only; an Inf gives NaN there and 0 elsewhere in its
 * row (mean square Inf), as the formula does in any precision. */
START_TEST(nan_propagates) {
  const int64_t rows = 4, cols = 113;
  int64_t shape[2] = {rows, cols};
  static const ke_dtype dts[] = {KE_F32, KE_BF16};
  for (size_t j = 0; j < 2; j++) {
    ke_tensor x, y;
    kt_alloc(&x, dts[j], 2, shape);
    kt_alloc(&y, dts[j], 2, shape);
    kt_fill_normal(&x, 0.0f, 1.0f);
    double *xd = kt_to_doubles(&x);
    xd[0 * cols + 17] = NAN;
    xd[2 * cols + 112] = INFINITY;
    xd[3 * cols + 0] = -INFINITY;
    kt_from_doubles(&x, xd);
    kt_assert_ok(ke_rmsnorm(kt_ctx(), &x, NULL, NULL, &y, NULL));
    double *ref = malloc((size_t)(rows * cols) * sizeof *ref);
    ck_assert_ptr_nonnull(ref);
    ke_rmsnorm_ref(xd, NULL, NULL, ref, rows, cols, 1e-6f);
    int nans = 0;
    for (int64_t i = 0; i < rows * cols; i++) nans += isnan(ref[i]) != 0;
    ck_assert_int_eq(nans, (int)cols + 2);
    kt_assert_close(dts[j] == KE_F32 ? "specials_f32" : "specials_bf16", &y,
                    ref, rmsnorm_tol(dts[j]));
    free(ref);
    free(xd);
    kt_free(&x);
    kt_free(&y);
  }
}
END_TEST

/* x, residual and y as slices of wider matrices; the gaps stay untouched. */
START_TEST(strided_rows) {
  const int64_t rows = 5, cols = 33, stride = 40;
  int64_t full[2] = {rows, stride}, wshape[1] = {cols};
  ke_tensor x, r, y, w;
  kt_alloc(&x, KE_F32, 2, full);
  kt_alloc(&r, KE_F32, 2, full);
  kt_alloc(&y, KE_F32, 2, full);
  kt_alloc(&w, KE_F32, 1, wshape);
  kt_fill_normal(&x, 0.0f, 1.0f);
  kt_fill_normal(&r, 0.0f, 1.0f);
  kt_fill_uniform(&y, -1.0f, 1.0f);
  kt_fill_normal(&w, 1.0f, 0.5f);
  double *xd = kt_to_doubles(&x), *rd = kt_to_doubles(&r);
  double *yd = kt_to_doubles(&y), *wd = kt_to_doubles(&w);
  ke_tensor xv = x, rv = r, yv = y;
  xv.shape[1] = rv.shape[1] = yv.shape[1] = cols;
  kt_assert_ok(ke_rmsnorm(kt_ctx(), &xv, &rv, &w, &yv, NULL));

  double *px = malloc((size_t)(rows * cols) * sizeof *px);
  double *pr = malloc((size_t)(rows * cols) * sizeof *pr);
  double *py = malloc((size_t)(rows * cols) * sizeof *py);
  ck_assert_ptr_nonnull(px);
  ck_assert_ptr_nonnull(pr);
  ck_assert_ptr_nonnull(py);
  for (int64_t i = 0; i < rows; i++) {
    memcpy(px + i * cols, xd + i * stride, (size_t)cols * sizeof *px);
    memcpy(pr + i * cols, rd + i * stride, (size_t)cols * sizeof *pr);
  }
  ke_rmsnorm_ref(px, pr, wd, py, rows, cols, 1e-6f);
  for (int64_t i = 0; i < rows; i++) {
    memcpy(xd + i * stride, px + i * cols, (size_t)cols * sizeof *px);
    memcpy(yd + i * stride, py + i * cols, (size_t)cols * sizeof *py);
  }
  kt_assert_close("strided_sum", &x, xd, rmsnorm_tol(KE_F32));
  kt_assert_close("strided_y", &y, yd, rmsnorm_tol(KE_F32));
  free(px);
  free(pr);
  free(py);
  free(xd);
  free(rd);
  free(yd);
  free(wd);
  kt_free(&x);
  kt_free(&r);
  kt_free(&y);
  kt_free(&w);
}
END_TEST

START_TEST(refusals) {
  ke_context *ctx = kt_ctx();
  int64_t s1[2] = {3, 7}, s2[2] = {3, 8}, ws[1] = {7}, wbad[1] = {8};
  ke_tensor x, y, z, w, wb, rh;
  kt_alloc(&x, KE_F32, 2, s1);
  kt_alloc(&y, KE_F32, 2, s1);
  kt_alloc(&z, KE_F32, 2, s2);
  kt_alloc(&w, KE_F32, 1, ws);
  kt_alloc(&wb, KE_F32, 1, wbad);
  kt_alloc(&rh, KE_F16, 2, s1);
  kt_assert_status(ke_rmsnorm(ctx, &x, NULL, &w, &z, NULL), KE_ESHAPE);
  kt_assert_status(ke_rmsnorm(ctx, &x, &z, &w, &y, NULL), KE_ESHAPE);
  kt_assert_status(ke_rmsnorm(ctx, &x, NULL, &wb, &y, NULL), KE_ESHAPE);
  ke_tensor w2 = x; /* weight of rank 2 */
  kt_assert_status(ke_rmsnorm(ctx, &x, NULL, &w2, &y, NULL), KE_ESHAPE);
  ke_tensor ws2 = wb; /* weight [7] with stride 2 */
  ws2.shape[0] = 4;
  ws2.stride[0] = 2;
  ke_tensor x4 = x, y4 = y;
  x4.shape[1] = y4.shape[1] = 4;
  x4.stride[0] = y4.stride[0] = 7;
  kt_assert_status(ke_rmsnorm(ctx, &x4, NULL, &ws2, &y4, NULL), KE_ESHAPE);
  ke_tensor nc = x; /* last dimension not contiguous */
  nc.shape[1] = 3;
  nc.stride[1] = 2;
  ke_tensor y3 = y;
  y3.shape[1] = 3;
  kt_assert_status(ke_rmsnorm(ctx, &nc, NULL, NULL, &y3, NULL), KE_ESHAPE);
  ke_tensor xa = x; /* y shares x's data with another dtype */
  xa.dtype = KE_F16;
  kt_assert_status(ke_rmsnorm(ctx, &x, NULL, NULL, &xa, NULL), KE_ESHAPE);

  ke_tensor bad = x;
  bad.dtype = (ke_dtype)7;
  kt_assert_status(ke_rmsnorm(ctx, &bad, NULL, NULL, &y, NULL), KE_EDTYPE);
  kt_assert_status(ke_rmsnorm(ctx, &x, NULL, NULL, &bad, NULL), KE_EDTYPE);
  ke_tensor wbd = w;
  wbd.dtype = (ke_dtype)9;
  kt_assert_status(ke_rmsnorm(ctx, &x, NULL, &wbd, &y, NULL), KE_EDTYPE);
  kt_assert_status(ke_rmsnorm(ctx, &x, &rh, NULL, &y, NULL), KE_EDTYPE);

  ke_rmsnorm_params p;
  ke_rmsnorm_params_init(&p);
  p.eps = 0.0f;
  kt_assert_status(ke_rmsnorm(ctx, &x, NULL, &w, &y, &p), KE_EINVAL);
  p.eps = -1e-6f;
  kt_assert_status(ke_rmsnorm(ctx, &x, NULL, &w, &y, &p), KE_EINVAL);
  p.eps = NAN;
  kt_assert_status(ke_rmsnorm(ctx, &x, NULL, &w, &y, &p), KE_EINVAL);
  p.eps = INFINITY;
  kt_assert_status(ke_rmsnorm(ctx, &x, NULL, &w, &y, &p), KE_EINVAL);
  kt_assert_status(ke_rmsnorm(ctx, &x, NULL, &w, NULL, NULL), KE_EINVAL);
  kt_assert_status(ke_rmsnorm(NULL, &x, NULL, &w, &y, NULL), KE_EINVAL);
  kt_free(&x);
  kt_free(&y);
  kt_free(&z);
  kt_free(&w);
  kt_free(&wb);
  kt_free(&rh);
}
END_TEST

START_TEST(large) {
  norm_case c = {.rows = 4096, .cols = 8192, .x = KE_F32, .w = KE_F32,
                 .y = KE_F32, .weight = 1};
  check_rmsnorm(&c);
  c = (norm_case){.rows = 2048, .cols = 16384, .x = KE_BF16, .w = KE_BF16,
                  .y = KE_BF16, .weight = 1, .residual = 1};
  check_rmsnorm(&c);
  c = (norm_case){.rows = 2, .cols = 1 << 20, .x = KE_F32, .w = KE_F32,
                  .y = KE_F32, .weight = 1};
  check_rmsnorm(&c); /* far past 16384: nothing caps the row */
}
END_TEST

static const kt_test rmsnorm_tests[] = {
    KT_TEST(sizes_f32),
    KT_TEST(sizes_f16),
    KT_TEST(sizes_bf16),
    KT_TEST(mixed_dtypes),
    KT_TEST(no_weight),
    KT_TEST(in_place),
    KT_TEST(fused_residual),
    KT_TEST(extreme_values),
    KT_TEST(nan_propagates),
    KT_TEST(strided_rows),
    KT_TEST(refusals),
    KT_TEST(large, .tags = "slow", .timeout_s = 600),
};

KT_SUITE(kt_suite_rmsnorm, "rmsnorm", "gpu,kernel", rmsnorm_tests);
