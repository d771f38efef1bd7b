/* Softmax suite: every row length and row count the kernel family promises,
 * in every dtype, against the double reference, with fresh random inputs;
 * the special values the API documents; and each refusal.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

/* Tolerances by output dtype. The rtol defaults hold for f16 and bf16; f32
 * is loosened to 1e-5 because a row's sum of up to 2^18 f32 terms (per-thread
 * runs then a tree) carries about log2(n) ulp of error into every output.
 * atol is tightened far below the 1e-5 default: softmax outputs of long rows
 * are all below 1e-5, so the default would let any answer pass. For f16 it
 * covers the half-ulp of the smallest subnormal (3e-8). */
static kt_tol softmax_tol(ke_dtype out) {
  switch (out) {
  case KE_F16: return (kt_tol){1e-7, 1e-3, 0.0, 0};
  case KE_BF16: return (kt_tol){1e-9, 1.6e-2, 0.0, 0};
  default: return (kt_tol){1e-9, 1e-5, 0.0, 0};
  }
}

/* Runs softmax on fresh normal inputs of [rows, cols] and checks it. */
static void check_softmax(int64_t rows, int64_t cols, ke_dtype in,
                          ke_dtype out, const ke_softmax_params *p,
                          float mean, float stddev) {
  int64_t shape[2] = {rows, cols};
  ke_tensor x, y;
  kt_alloc(&x, in, 2, shape);
  kt_alloc(&y, out, 2, shape);
  kt_fill_normal(&x, mean, stddev);
  kt_assert_ok(ke_softmax(kt_ctx(), &x, &y, p));

  double *xd = kt_to_doubles(&x);
  double *ref = malloc((size_t)(rows * cols) * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  ke_softmax_ref(xd, ref, rows, cols, p, rows);
  char name[96];
  snprintf(name, sizeof name, "softmax_%lldx%lld_%s_%s", (long long)rows,
           (long long)cols, ke_dtype_name(in), ke_dtype_name(out));
  kt_assert_close(name, &y, ref, softmax_tol(out));
  free(ref);
  free(xd);
  kt_free(&x);
  kt_free(&y);
}

static const int64_t kLengths[] = {1, 7, 31, 32, 33, 1000, 4096, 65536,
                                   262144};
static const int64_t kRows[] = {1, 3, 1024};

/* Every (rows, cols) pair up to max_elems elements, or above it. */
static void sweep(ke_dtype in, ke_dtype out, int64_t lo, int64_t hi) {
  for (size_t i = 0; i < sizeof kRows / sizeof kRows[0]; i++)
    for (size_t j = 0; j < sizeof kLengths / sizeof kLengths[0]; j++) {
      int64_t n = kRows[i] * kLengths[j];
      if (n > lo && n <= hi)
        check_softmax(kRows[i], kLengths[j], in, out, NULL, 0.0f, 2.0f);
    }
}

#define SMALL ((int64_t)1 << 21)

START_TEST(sizes_f32) { sweep(KE_F32, KE_F32, 0, SMALL); }
END_TEST

START_TEST(sizes_f16) { sweep(KE_F16, KE_F16, 0, SMALL); }
END_TEST

START_TEST(sizes_bf16) { sweep(KE_BF16, KE_BF16, 0, SMALL); }
END_TEST

/* The rest of the cross product (up to 1024 x 262144): GPU-sized. */
START_TEST(sizes_large_f32) { sweep(KE_F32, KE_F32, SMALL, INT64_MAX); }
END_TEST

START_TEST(mixed_dtypes) {
  check_softmax(3, 1000, KE_F16, KE_F32, NULL, 0.0f, 2.0f);
  check_softmax(3, 1000, KE_F32, KE_BF16, NULL, 0.0f, 2.0f);
  check_softmax(7, 33, KE_BF16, KE_F16, NULL, 0.0f, 2.0f);
}
END_TEST

START_TEST(scaled) {
  ke_softmax_params p;
  ke_softmax_params_init(&p);
  p.scale = 0.125f;
  check_softmax(33, 113, KE_F32, KE_F32, &p, 0.0f, 4.0f);
  p.scale = -3.0f;
  check_softmax(7, 1000, KE_F32, KE_F32, &p, 0.0f, 1.0f);
}
END_TEST

/* Offsets of +-1e4 must not overflow: the max is subtracted first. */
START_TEST(large_offsets) {
  check_softmax(3, 1000, KE_F32, KE_F32, NULL, 1e4f, 1.0f);
  check_softmax(3, 1000, KE_F32, KE_F32, NULL, -1e4f, 1.0f);
}
END_TEST

START_TEST(causal) {
  ke_softmax_params p;
  ke_softmax_params_init(&p);
  p.causal = 1;
  check_softmax(33, 33, KE_F32, KE_F32, &p, 0.0f, 2.0f);    /* prefill */
  check_softmax(7, 1000, KE_F32, KE_F32, &p, 0.0f, 2.0f);   /* decode tail */
  p.causal_offset = 0;
  check_softmax(113, 7, KE_F32, KE_F32, &p, 0.0f, 2.0f);
}
END_TEST

/* Writes values into a [rows, cols] tensor of dtype dt (rounded to it),
 * runs softmax into the same dtype, compares with the reference of the
 * rounded values. */
static void check_special_dt(int64_t rows, int64_t cols, const double *values,
                             ke_dtype dt, const char *name) {
  int64_t shape[2] = {rows, cols};
  ke_tensor x, y;
  kt_alloc(&x, dt, 2, shape);
  kt_alloc(&y, dt, 2, shape);
  kt_from_doubles(&x, values);
  kt_assert_ok(ke_softmax(kt_ctx(), &x, &y, NULL));
  double *xd = kt_to_doubles(&x);
  double *ref = malloc((size_t)(rows * cols) * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  ke_softmax_ref(xd, ref, rows, cols, NULL, rows);
  char full[96];
  snprintf(full, sizeof full, "%s_%lld_%s", name, (long long)cols,
           ke_dtype_name(dt));
  kt_assert_close(full, &y, ref, softmax_tol(dt));
  free(ref);
  free(xd);
  kt_free(&x);
  kt_free(&y);
}

static void check_special(int64_t rows, int64_t cols, const double *values,
                          const char *name) {
  check_special_dt(rows, cols, values, KE_F32, name);
}

/* Random rows with special values planted in some of them. */
static double *random_rows(int64_t rows, int64_t cols) {
  int64_t shape[2] = {rows, cols};
  ke_tensor t;
  kt_alloc(&t, KE_F32, 2, shape);
  kt_fill_normal(&t, 0.0f, 2.0f);
  double *v = kt_to_doubles(&t);
  kt_free(&t);
  return v;
}

START_TEST(nan_propagates) {
  const int64_t rows = 4, cols = 1000;
  double *v = random_rows(rows, cols);
  v[0 * cols + 17] = NAN;          /* one NaN: whole row NaN */
  for (int64_t c = 0; c < cols; c++) v[2 * cols + c] = NAN; /* all NaN */
  check_special(rows, cols, v, "nan_rows");
  free(v);
}
END_TEST

/* Fully masked rows give zeros (documented), not NaN. */
START_TEST(all_neg_inf_row) {
  const int64_t rows = 3, cols = 33;
  double *v = random_rows(rows, cols);
  for (int64_t c = 0; c < cols; c++) v[1 * cols + c] = -INFINITY;
  v[2 * cols + 5] = -INFINITY;     /* one -inf: that entry is 0 */
  check_special(rows, cols, v, "neg_inf_rows");
  free(v);
}
END_TEST

START_TEST(pos_inf_row) {
  const int64_t rows = 2, cols = 7;
  double *v = random_rows(rows, cols);
  v[1 * cols + 3] = INFINITY;      /* +inf: whole row NaN, as in PyTorch */
  check_special(rows, cols, v, "pos_inf_row");
  free(v);
}
END_TEST

/* Every row path in every dtype: warp rows (up to 1024), block rows held
 * in registers (f32 values, or 16-bit inputs as their raw words in the
 * 128-thread form up to 4096 elements and the 512-thread form up to
 * 16384), rows too long for registers; with a partial last chunk, a
 * negative scale, causal masks and mixed dtypes. */
START_TEST(row_paths) {
  static const int64_t lengths[] = {1000, 1031, 4096, 4100, 10000, 16384,
                                     40000};
  static const ke_dtype dts[] = {KE_F32, KE_F16, KE_BF16};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
      ke_softmax_params p;
      ke_softmax_params_init(&p);
      check_softmax(3, lengths[i], dts[d], dts[d], NULL, 0.0f, 2.0f);
      p.scale = -0.5f;
      check_softmax(2, lengths[i], dts[d], dts[d], &p, 0.0f, 2.0f);
      ke_softmax_params_init(&p);
      p.causal = 1;
      check_softmax(6, lengths[i], dts[d], dts[d], &p, 0.0f, 2.0f);
      p.causal_offset = 0; /* prefill: rows 0 .. 5 keep 1 .. 6 columns */
      check_softmax(6, lengths[i], dts[d], dts[d], &p, 0.0f, 2.0f);
    }
  check_softmax(3, 4100, KE_F16, KE_F32, NULL, 0.0f, 2.0f);
  check_softmax(3, 4100, KE_BF16, KE_F16, NULL, 0.0f, 2.0f);
  check_softmax(3, 4100, KE_F32, KE_BF16, NULL, 0.0f, 2.0f);
}
END_TEST

/* The special values of the tests above on every row path and dtype: one
 * NaN, one +inf, all -inf, some -inf, each in its own row. */
START_TEST(special_values_all_paths) {
  static const int64_t lengths[] = {33, 1000, 4096, 4100, 10000, 40000};
  static const ke_dtype dts[] = {KE_F32, KE_F16, KE_BF16};
  const int64_t rows = 5;
  for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
    const int64_t cols = lengths[i];
    double *v = random_rows(rows, cols);
    v[0 * cols + cols / 2] = NAN;
    v[1 * cols + cols - 1] = INFINITY;
    for (int64_t c = 0; c < cols; c++) v[2 * cols + c] = -INFINITY;
    v[3 * cols + 0] = -INFINITY;
    v[3 * cols + cols - 1] = -INFINITY;
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
      check_special_dt(rows, cols, v, dts[d], "special");
    free(v);
  }
}
END_TEST

/* Rows further apart than their length (a slice of a wider matrix). */
START_TEST(strided_rows) {
  const int64_t rows = 5, cols = 33, stride = 40;
  int64_t full[2] = {rows, stride};
  ke_tensor x, y, xv, yv;
  kt_alloc(&x, KE_F32, 2, full);
  kt_alloc(&y, KE_F32, 2, full);
  kt_fill_normal(&x, 0.0f, 2.0f);
  kt_fill_uniform(&y, -1.0f, 1.0f);
  double *xd = kt_to_doubles(&x);
  double *y_before = kt_to_doubles(&y);
  xv = x;
  yv = y;
  xv.shape[1] = yv.shape[1] = cols;
  kt_assert_ok(ke_softmax(kt_ctx(), &xv, &yv, NULL));

  double *packed = malloc((size_t)(rows * cols) * sizeof *packed);
  double *ref = malloc((size_t)(rows * stride) * sizeof *ref);
  ck_assert_ptr_nonnull(packed);
  ck_assert_ptr_nonnull(ref);
  for (int64_t r = 0; r < rows; r++)
    memcpy(packed + r * cols, xd + r * stride, (size_t)cols * sizeof *xd);
  /* Expected: softmax in the view, the gap columns untouched. */
  memcpy(ref, y_before, (size_t)(rows * stride) * sizeof *ref);
  double *row_ref = malloc((size_t)(rows * cols) * sizeof *row_ref);
  ck_assert_ptr_nonnull(row_ref);
  ke_softmax_ref(packed, row_ref, rows, cols, NULL, rows);
  for (int64_t r = 0; r < rows; r++)
    memcpy(ref + r * stride, row_ref + r * cols, (size_t)cols * sizeof *ref);
  kt_assert_close("strided_rows", &y, ref, softmax_tol(KE_F32));
  free(row_ref);
  free(ref);
  free(packed);
  free(y_before);
  free(xd);
  kt_free(&x);
  kt_free(&y);
}
END_TEST

START_TEST(refusals) {
  int64_t s1[2] = {3, 7}, s2[2] = {3, 8};
  ke_tensor x, y;
  kt_alloc(&x, KE_F32, 2, s1);
  kt_alloc(&y, KE_F32, 2, s2);
  kt_assert_status(ke_softmax(kt_ctx(), &x, &y, NULL), KE_ESHAPE);
  ke_tensor xt = x, yt = y;
  yt.shape[1] = 7;
  xt.stride[1] = 2;                 /* last dimension not contiguous */
  xt.shape[1] = 3;
  yt.shape[1] = 3;
  kt_assert_status(ke_softmax(kt_ctx(), &xt, &yt, NULL), KE_ESHAPE);
  xt = x;
  xt.dtype = (ke_dtype)7;
  yt = y;
  yt.shape[1] = 7;
  kt_assert_status(ke_softmax(kt_ctx(), &xt, &yt, NULL), KE_EDTYPE);
  ke_softmax_params p;
  ke_softmax_params_init(&p);
  p.scale = INFINITY;
  kt_assert_status(ke_softmax(kt_ctx(), &x, &yt, &p), KE_EINVAL);
  kt_assert_status(ke_softmax(kt_ctx(), &x, NULL, NULL), KE_EINVAL);
  kt_free(&x);
  kt_free(&y);
}
END_TEST

static const kt_test softmax_tests[] = {
    KT_TEST(sizes_f32),
    KT_TEST(sizes_f16),
    KT_TEST(sizes_bf16),
    KT_TEST(sizes_large_f32, .tags = "slow", .timeout_s = 600),
    KT_TEST(mixed_dtypes),
    KT_TEST(scaled),
    KT_TEST(large_offsets),
    KT_TEST(causal),
    KT_TEST(nan_propagates),
    KT_TEST(all_neg_inf_row),
    KT_TEST(pos_inf_row),
    KT_TEST(row_paths),
    KT_TEST(special_values_all_paths),
    KT_TEST(strided_rows),
    KT_TEST(refusals),
};

KT_SUITE(kt_suite_softmax, "softmax", "gpu,kernel", softmax_tests);
