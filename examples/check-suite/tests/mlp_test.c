/* GPU tests of the MLP activation, each in its own process under kiln: a
 * fresh engine context, inputs drawn fresh for every check, the result
 * compared with the double reference (the report keeps each check's worst
 * element), and every device allocation checked for leaks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/test.h"
#include "mlp.h"

static void check_activation(int64_t rows, int64_t cols) {
  int64_t shape[2] = {rows, cols};
  ke_tensor gate, up, act, probs;
  kt_alloc(&gate, KE_F32, 2, shape);
  kt_alloc(&up, KE_F32, 2, shape);
  kt_alloc(&act, KE_F32, 2, shape);
  kt_alloc(&probs, KE_F32, 2, shape);
  kt_fill_normal(&gate, 0.0f, 1.0f);
  kt_fill_normal(&up, 0.0f, 1.0f);
  kt_assert_ok(mlp_activate(kt_ctx(), &gate, &up, &act, &probs));

  double *g = kt_to_doubles(&gate), *u = kt_to_doubles(&up);
  double *ref = malloc((size_t)(rows * cols) * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  mlp_activate_ref(g, u, ref, rows, cols);
  char name[64];
  snprintf(name, sizeof name, "probs_%lldx%lld", (long long)rows, (long long)cols);
  /* Two f32 kernels in a row: a few ulp of error in every output. */
  kt_assert_close(name, &probs, ref, ((kt_tol){.atol = 1e-9, .rtol = 1e-5}));
  free(ref), free(g), free(u);
  kt_free(&gate), kt_free(&up), kt_free(&act), kt_free(&probs);
}

START_TEST(small_rows) { check_activation(4, 33); }
END_TEST

START_TEST(wide_rows) { check_activation(3, 4096); }
END_TEST

/* The engine refuses shapes that do not agree, with a status. */
START_TEST(mismatched_shapes) {
  int64_t a[2] = {2, 8}, b[2] = {2, 9};
  ke_tensor gate, up, act, probs;
  kt_alloc(&gate, KE_F32, 2, a);
  kt_alloc(&up, KE_F32, 2, b);
  kt_alloc(&act, KE_F32, 2, a);
  kt_alloc(&probs, KE_F32, 2, a);
  ck_assert_int_ne(mlp_activate(kt_ctx(), &gate, &up, &act, &probs), KE_OK);
  kt_free(&gate), kt_free(&up), kt_free(&act), kt_free(&probs);
}
END_TEST

/* Timings mean something on a GPU only. */
START_TEST(throughput) {
  if (strcmp(ke_backend_name(), "host") == 0)
    KT_SKIP("timings mean nothing in host emulation");
  check_activation(64, 4096);
  kt_note("what", "see kernels: in the report for each kernel's time");
}
END_TEST

static const kt_test mlp_tests[] = {
    KT_TEST(small_rows),
    KT_TEST(wide_rows),
    KT_TEST(mismatched_shapes),
    KT_TEST(throughput, .tags = "perf-lite", .timeout_s = 60),
};
KT_SUITE(example_mlp_suite, "mlp", "gpu", mlp_tests);
