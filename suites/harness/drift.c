/* The drift suite: real tests whose results change on request, so that the
 * report tools (kiln report diff, the nightly script) can be tested on real
 * runs with planted regressions. Tagged `fault`: run only when named.
 *
 * Environment the tests read (set by tests/harness/reports.sh and
 * scripts/gpu.sh nightly; KILN_DRIFT_SLOW by the nightly only: on a loaded
 * host a 2x kernel is not told apart every time, so reports.sh plants the
 * slowdown in a report instead):
 *   KILN_DRIFT_FAIL=1        drift/new_failure fails
 *   KILN_DRIFT_SLOW=F        drift/slow_kernel's softmax launches do F times
 *                            the work (default 1): a kernel F times slower
 *   KILN_DRIFT_ERROR=F       drift/error_growth's output carries F times the
 *                            error (default 1), still within its tolerance
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

static double drift_env(const char *name, double dflt) {
  const char *v = getenv(name);
  return v && *v ? atof(v) : dflt;
}

/* Passes unless KILN_DRIFT_FAIL=1: the "new failure" of a night. */
START_TEST(new_failure) {
  ck_assert_msg(drift_env("KILN_DRIFT_FAIL", 0) == 0,
                "planted failure (KILN_DRIFT_FAIL is set)");
}
END_TEST

/* Seven launches of softmax on [128 * F, 4096]: the kernel's median time
 * scales with F (softmax is linear in its rows). The inputs are made on the
 * host and copied, so that softmax is the only kernel this test launches
 * and the only one whose time changes. */
START_TEST(slow_kernel) {
  int64_t shape[2] = {(int64_t)(128 * drift_env("KILN_DRIFT_SLOW", 1)), 4096};
  size_t n = (size_t)(shape[0] * shape[1]);
  float *host = malloc(n * sizeof *host);
  ck_assert_ptr_nonnull(host);
  uint64_t s = kt_seed() | 1;
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;  /* xorshift64 */
    host[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 8.0 - 4.0);
  }
  ke_tensor x, y;
  kt_alloc(&x, KE_F32, 2, shape);
  kt_alloc(&y, KE_F32, 2, shape);
  kt_assert_ok(ke_copy_to_device(kt_ctx(), x.data, host, n * sizeof *host));
  for (int i = 0; i < 7; i++) kt_assert_ok(ke_softmax(kt_ctx(), &x, &y, NULL));
  free(host);
  kt_free(&x);
  kt_free(&y);
}
END_TEST

/* Softmax of [8, 1000] with 1e-8 * F added to every output before the
 * check: the max abs error is about 1e-8 * F (the kernel's own error is
 * near 1e-10), against a tolerance of 1e-6 + 1e-5 * |e|. */
START_TEST(error_growth) {
  int64_t shape[2] = {8, 1000};
  ke_tensor x, y;
  kt_alloc(&x, KE_F32, 2, shape);
  kt_alloc(&y, KE_F32, 2, shape);
  kt_fill_normal(&x, 0.0f, 1.0f);
  kt_assert_ok(ke_softmax(kt_ctx(), &x, &y, NULL));
  double *xd = kt_to_doubles(&x), *yd = kt_to_doubles(&y);
  double *ref = malloc(8000 * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  ke_softmax_ref(xd, ref, 8, 1000, NULL, 8);
  double delta = 1e-8 * drift_env("KILN_DRIFT_ERROR", 1);
  for (int i = 0; i < 8000; i++) yd[i] += delta;
  kt_from_doubles(&y, yd);
  kt_assert_close("softmax_8x1000_f32", &y, ref, ((kt_tol){1e-6, 1e-5, 0.0, 0}));
  free(ref), free(xd), free(yd);
  kt_free(&x);
  kt_free(&y);
}
END_TEST

/* Prints what a JUnit writer must survive, then fails: control characters,
 * "]]>", markup, invalid UTF-8. */
START_TEST(hostile_output) {
  printf("bell\a nul-free \x01\x02\x1b[31m escape ]]> <tag attr=\"x\"> & "
         "bad utf-8 \xff\xfe \xc3\x28 ok utf-8 \xc3\xa9 \xe2\x9c\x93\n");
  fflush(stdout);
  ck_abort_msg("hostile message: ]]> <b>&amp; \"quoted\" \x01");
}
END_TEST

static const kt_test drift_tests[] = {
    KT_TEST(new_failure, .host_only = 1),
    KT_TEST(slow_kernel),
    KT_TEST(error_growth),
    KT_TEST(hostile_output, .host_only = 1),
};

KT_SUITE(kt_suite_drift, "drift", "fault,drift", drift_tests);
