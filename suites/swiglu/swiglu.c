/* SwiGLU suite: out = silu(gate) * up (the swish on gate) for two tensors
 * and for one fused [.., 2F] tensor, every dtype, sizes from 1 to 16384,
 * +-1e4 inputs that must stay finite, NaN/Inf, in place, strided rows and
 * each refusal, against the double reference with fresh random inputs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

/* One rounding of an f32 product of a few f32 operations (expf, a division,
 * two products): well inside the dtype defaults. */
static kt_tol swiglu_tol(ke_dtype out) { return kt_tol_default(out); }

/* gate and up as doubles from one fused [rows, 2F] buffer. */
static void split_fused(const double *g2, int64_t rows, int64_t f,
                        double *gate, double *up) {
  for (int64_t r = 0; r < rows; r++) {
    memcpy(gate + r * f, g2 + r * 2 * f, (size_t)f * sizeof *gate);
    memcpy(up + r * f, g2 + r * 2 * f + f, (size_t)f * sizeof *up);
  }
}

static void check_swiglu(int64_t rows, int64_t f, ke_dtype in, ke_dtype out,
                         int fused, float stddev) {
  int64_t oshape[2] = {rows, f}, fshape[2] = {rows, 2 * f};
  ke_tensor g, u, o;
  kt_alloc(&g, in, 2, fused ? fshape : oshape);
  kt_fill_normal(&g, 0.0f, stddev);
  if (!fused) {
    kt_alloc(&u, in, 2, oshape);
    kt_fill_normal(&u, 0.0f, stddev);
  }
  kt_alloc(&o, out, 2, oshape);
  kt_assert_ok(ke_swiglu(kt_ctx(), &g, fused ? NULL : &u, &o));

  double *gd = kt_to_doubles(&g);
  double *ud = fused ? NULL : kt_to_doubles(&u);
  double *ref = malloc((size_t)(rows * f) * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  if (fused) {
    double *gate = malloc((size_t)(rows * f) * sizeof *gate);
    double *up = malloc((size_t)(rows * f) * sizeof *up);
    ck_assert_ptr_nonnull(gate);
    ck_assert_ptr_nonnull(up);
    split_fused(gd, rows, f, gate, up);
    ke_swiglu_ref(gate, up, ref, rows * f);
    free(gate);
    free(up);
  } else {
    ke_swiglu_ref(gd, ud, ref, rows * f);
  }
  char name[96];
  snprintf(name, sizeof name, "swiglu%s_%lldx%lld_%s_%s",
           fused ? "_fused" : "", (long long)rows, (long long)f,
           ke_dtype_name(in), ke_dtype_name(out));
  kt_assert_close(name, &o, ref, swiglu_tol(out));
  free(ref);
  free(gd);
  free(ud);
  kt_free(&g);
  if (!fused) kt_free(&u);
  kt_free(&o);
}

static const int64_t kCols[] = {1, 7, 33, 113, 1000, 16384};
static const int64_t kRows[] = {1, 3, 64};

static void sweep(ke_dtype dt, int fused) {
  for (size_t i = 0; i < sizeof kRows / sizeof kRows[0]; i++)
    for (size_t j = 0; j < sizeof kCols / sizeof kCols[0]; j++)
      check_swiglu(kRows[i], kCols[j], dt, dt, fused, 3.0f);
}

START_TEST(sizes_f32) { sweep(KE_F32, 0); }
END_TEST

START_TEST(sizes_f16) { sweep(KE_F16, 0); }
END_TEST

START_TEST(sizes_bf16) { sweep(KE_BF16, 0); }
END_TEST

START_TEST(fused_f32) { sweep(KE_F32, 1); }
END_TEST

START_TEST(fused_f16_bf16) {
  sweep(KE_F16, 1);
  sweep(KE_BF16, 1);
}
END_TEST

START_TEST(mixed_dtypes) {
  check_swiglu(3, 1000, KE_BF16, KE_F32, 0, 3.0f);
  check_swiglu(7, 113, KE_F16, KE_BF16, 1, 3.0f);
  check_swiglu(33, 33, KE_F32, KE_F16, 0, 3.0f);
}
END_TEST

/* gate at +-1e4 (and the other edges of exp's range) and up at 1e4 scale:
 * nothing may come out NaN or Inf. */
START_TEST(extreme_values) {
  static const double edges[] = {1e4,   -1e4,  100.0, -100.0, 88.7,
                                 -88.7, 89.0,  -89.0, 104.0,  -104.0,
                                 20.0,  -20.0, 1e-30, -1e-30, 0.0,
                                 -0.0,  1.0,   -1.0,  6e4,    -6e4};
  static const ke_dtype dts[] = {KE_F32, KE_F16, KE_BF16};
  const int64_t n = sizeof edges / sizeof edges[0], rows = 3;
  int64_t shape[2] = {rows, n};
  for (size_t j = 0; j < 3; j++) {
    ke_tensor g, u, o;
    kt_alloc(&g, dts[j], 2, shape);
    kt_alloc(&u, dts[j], 2, shape);
    kt_alloc(&o, KE_F32, 2, shape);
    kt_fill_uniform(&u, -1.0f, 1.0f);
    double *gd = kt_to_doubles(&g);
    double *ud = kt_to_doubles(&u);
    /* Row 0: gate at the edges; row 1: the same, negated; row 2: gate at
     * the edges with up at 1e4 scale. */
    for (int64_t c = 0; c < n; c++) {
      gd[c] = edges[c];
      gd[n + c] = -edges[c];
      gd[2 * n + c] = edges[c] / 6.0;
      ud[2 * n + c] *= 1e4;
    }
    kt_from_doubles(&g, gd);
    kt_from_doubles(&u, ud);
    free(gd);
    free(ud);
    gd = kt_to_doubles(&g);
    ud = kt_to_doubles(&u);
    kt_assert_ok(ke_swiglu(kt_ctx(), &g, &u, &o));
    double ref[3 * 20];
    ke_swiglu_ref(gd, ud, ref, rows * n);
    kt_check_result res;
    char name[32];
    snprintf(name, sizeof name, "edges_%s", ke_dtype_name(dts[j]));
    ck_assert_msg(kt_check(name, &o, ref, swiglu_tol(KE_F32), &res), "%s",
                  kt_last_check_summary());
    ck_assert_int_eq(res.nan_count, 0);
    ck_assert_int_eq(res.inf_count, 0);
    free(gd);
    free(ud);
    kt_free(&g);
    kt_free(&u);
    kt_free(&o);
  }
  /* Random gates at 1e4 scale, fused, into bf16. */
  check_swiglu(7, 1000, KE_F32, KE_BF16, 1, 1e4f);
}
END_TEST

/* NaN in either input gives NaN; +-Inf follow the documented limits:
 * silu(+inf) = +inf, silu(-inf) = -0, then IEEE for the product. */
START_TEST(nan_inf) {
  const int64_t n = 10;
  const double gate[10] = {NAN, 1.0, INFINITY, -INFINITY, -INFINITY,
                           0.0, 2.0, INFINITY, -3.0,      1e4};
  const double up[10] = {1.0, NAN, 2.0, 2.0, INFINITY,
                         INFINITY, -INFINITY, 0.0, INFINITY, NAN};
  int64_t shape[1] = {n};
  ke_tensor g, u, o;
  kt_alloc(&g, KE_F32, 1, shape);
  kt_alloc(&u, KE_F32, 1, shape);
  kt_alloc(&o, KE_F32, 1, shape);
  kt_from_doubles(&g, gate);
  kt_from_doubles(&u, up);
  kt_assert_ok(ke_swiglu(kt_ctx(), &g, &u, &o));
  double ref[10];
  ke_swiglu_ref(gate, up, ref, n);
  ck_assert(ref[2] == INFINITY);          /* silu(+inf) * 2 */
  ck_assert(ref[3] == 0.0);               /* silu(-inf) * 2 = -0 * 2 */
  ck_assert(isnan(ref[4]));               /* -0 * inf */
  ck_assert(ref[8] == -INFINITY);         /* silu(-3) * inf */
  kt_assert_close("nan_inf", &o, ref, swiglu_tol(KE_F32));
  double out[10];
  kt_assert_ok(ke_tensor_to_doubles(kt_ctx(), &o, out));
  ck_assert_msg(signbit(out[3]), "silu(-inf) * 2 should be -0, got %g",
                out[3]);
  kt_free(&g);
  kt_free(&u);
  kt_free(&o);
}
END_TEST

/* out written over gate, over up, and over the gate half of a fused row. */
START_TEST(in_place) {
  const int64_t rows = 7, f = 113;
  int64_t shape[2] = {rows, f}, fshape[2] = {rows, 2 * f};
  for (int over_up = 0; over_up < 2; over_up++) {
    ke_tensor g, u;
    kt_alloc(&g, KE_BF16, 2, shape);
    kt_alloc(&u, KE_BF16, 2, shape);
    kt_fill_normal(&g, 0.0f, 3.0f);
    kt_fill_normal(&u, 0.0f, 3.0f);
    double *gd = kt_to_doubles(&g), *ud = kt_to_doubles(&u);
    double *ref = malloc((size_t)(rows * f) * sizeof *ref);
    ck_assert_ptr_nonnull(ref);
    ke_swiglu_ref(gd, ud, ref, rows * f);
    kt_assert_ok(ke_swiglu(kt_ctx(), &g, &u, over_up ? &u : &g));
    kt_assert_close(over_up ? "inplace_up" : "inplace_gate",
                    over_up ? &u : &g, ref, swiglu_tol(KE_BF16));
    free(ref);
    free(gd);
    free(ud);
    kt_free(&g);
    kt_free(&u);
  }
  ke_tensor x;
  kt_alloc(&x, KE_F32, 2, fshape);
  kt_fill_normal(&x, 0.0f, 3.0f);
  double *xd = kt_to_doubles(&x);
  ke_tensor o = x; /* the gate half of each row, row stride 2F */
  o.shape[1] = f;
  kt_assert_ok(ke_swiglu(kt_ctx(), &x, NULL, &o));
  double *gate = malloc((size_t)(rows * f) * sizeof *gate);
  double *up = malloc((size_t)(rows * f) * sizeof *up);
  double *out = malloc((size_t)(rows * f) * sizeof *out);
  ck_assert_ptr_nonnull(gate);
  ck_assert_ptr_nonnull(up);
  ck_assert_ptr_nonnull(out);
  split_fused(xd, rows, f, gate, up);
  ke_swiglu_ref(gate, up, out, rows * f);
  for (int64_t r = 0; r < rows; r++) /* up halves stay as they were */
    memcpy(xd + r * 2 * f, out + r * f, (size_t)f * sizeof *xd);
  kt_assert_close("inplace_fused", &x, xd, swiglu_tol(KE_F32));
  free(gate);
  free(up);
  free(out);
  free(xd);
  kt_free(&x);
}
END_TEST

/* gate, up and out as slices of wider matrices; the gaps stay untouched. */
START_TEST(strided_rows) {
  const int64_t rows = 5, f = 33, stride = 40;
  int64_t full[2] = {rows, stride};
  ke_tensor g, u, o;
  kt_alloc(&g, KE_F32, 2, full);
  kt_alloc(&u, KE_F32, 2, full);
  kt_alloc(&o, KE_F32, 2, full);
  kt_fill_normal(&g, 0.0f, 3.0f);
  kt_fill_normal(&u, 0.0f, 3.0f);
  kt_fill_uniform(&o, -1.0f, 1.0f);
  double *gd = kt_to_doubles(&g), *ud = kt_to_doubles(&u);
  double *od = kt_to_doubles(&o);
  ke_tensor gv = g, uv = u, ov = o;
  gv.shape[1] = uv.shape[1] = ov.shape[1] = f;
  kt_assert_ok(ke_swiglu(kt_ctx(), &gv, &uv, &ov));
  for (int64_t r = 0; r < rows; r++)
    ke_swiglu_ref(gd + r * stride, ud + r * stride, od + r * stride, f);
  kt_assert_close("strided", &o, od, swiglu_tol(KE_F32));
  free(gd);
  free(ud);
  free(od);
  kt_free(&g);
  kt_free(&u);
  kt_free(&o);
}
END_TEST

START_TEST(refusals) {
  ke_context *ctx = kt_ctx();
  int64_t s1[2] = {3, 7}, s2[2] = {3, 8}, s3[2] = {3, 15}, s4[2] = {3, 14};
  ke_tensor a, b, c, odd, fused, h;
  kt_alloc(&a, KE_F32, 2, s1);
  kt_alloc(&b, KE_F32, 2, s1);
  kt_alloc(&c, KE_F32, 2, s2);
  kt_alloc(&odd, KE_F32, 2, s3);
  kt_alloc(&fused, KE_F32, 2, s4);
  kt_alloc(&h, KE_F16, 2, s1);
  kt_assert_status(ke_swiglu(ctx, &a, &b, &c), KE_ESHAPE);  /* out */
  kt_assert_status(ke_swiglu(ctx, &a, &c, &b), KE_ESHAPE);  /* up */
  kt_assert_status(ke_swiglu(ctx, &c, &a, &b), KE_ESHAPE);  /* gate */
  kt_assert_status(ke_swiglu(ctx, &odd, NULL, &a), KE_ESHAPE); /* 2F odd */
  kt_assert_status(ke_swiglu(ctx, &a, NULL, &b), KE_ESHAPE);   /* not 2F */
  kt_assert_ok(ke_swiglu(ctx, &fused, NULL, &a));
  ke_tensor r1 = a;
  r1.rank = 1;
  r1.shape[0] = 7;
  kt_assert_status(ke_swiglu(ctx, &a, &b, &r1), KE_ESHAPE); /* rank */
  ke_tensor nc = a, ncb = b, nco = c; /* last dimension not contiguous */
  nc.shape[1] = ncb.shape[1] = nco.shape[1] = 3;
  nc.stride[1] = 2;
  kt_assert_status(ke_swiglu(ctx, &nc, &ncb, &nco), KE_ESHAPE);
  ke_tensor ah = a; /* out over gate with another dtype */
  ah.dtype = KE_F16;
  kt_assert_status(ke_swiglu(ctx, &a, &b, &ah), KE_ESHAPE);
  ke_tensor wide = a; /* out over gate with another row stride */
  wide.stride[0] = 8;
  wide.shape[0] = 2;
  ke_tensor a2 = a, b2 = b;
  a2.shape[0] = b2.shape[0] = 2;
  kt_assert_status(ke_swiglu(ctx, &a2, &b2, &wide), KE_ESHAPE);

  kt_assert_status(ke_swiglu(ctx, &a, &h, &b), KE_EDTYPE); /* gate != up */
  ke_tensor bad = a;
  bad.dtype = (ke_dtype)7;
  kt_assert_status(ke_swiglu(ctx, &bad, &b, &c), KE_EDTYPE);
  kt_assert_status(ke_swiglu(ctx, &a, &b, &bad), KE_EDTYPE);
  kt_assert_status(ke_swiglu(ctx, &a, &b, NULL), KE_EINVAL);
  kt_assert_status(ke_swiglu(ctx, NULL, &b, &c), KE_EINVAL);
  kt_assert_status(ke_swiglu(NULL, &a, &b, &c), KE_EINVAL);
  kt_free(&a);
  kt_free(&b);
  kt_free(&c);
  kt_free(&odd);
  kt_free(&fused);
  kt_free(&h);
}
END_TEST

START_TEST(large) {
  check_swiglu(4096, 14336, KE_BF16, KE_BF16, 1, 3.0f); /* Llama-3 8B MLP */
  check_swiglu(1024, 16384, KE_F32, KE_F32, 0, 3.0f);
}
END_TEST

static const kt_test swiglu_tests[] = {
    KT_TEST(sizes_f32),
    KT_TEST(sizes_f16),
    KT_TEST(sizes_bf16),
    KT_TEST(fused_f32),
    KT_TEST(fused_f16_bf16),
    KT_TEST(mixed_dtypes),
    KT_TEST(extreme_values),
    KT_TEST(nan_inf),
    KT_TEST(in_place),
    KT_TEST(strided_rows),
    KT_TEST(refusals),
    KT_TEST(large, .tags = "slow", .timeout_s = 600),
};

KT_SUITE(kt_suite_swiglu, "swiglu", "gpu,kernel", swiglu_tests);
