/* The bench suite: the cheapest tests kiln can run, for measuring kiln
 * itself (`kiln bench`, docs/measuring.md) rather than kernels. Tagged
 * `bench`: held back from a default `kiln run` like the fault suite, and
 * run when named (`bench`, `@bench`, or an id).
 *
 *   trivial  allocate a small tensor, fill it, one tiny kernel launch
 *            (swiglu on 64 elements), stream sync, one check against the
 *            double reference: the smallest real GPU test.
 *   noop     no kernel: asserts only that the context has a device, so
 *            what it costs is kiln's process, context and bookkeeping.
 */
#include <stdlib.h>
#include <string.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

START_TEST(trivial) {
  const int64_t shape[1] = {64};
  ke_tensor gate, up, out;
  kt_alloc(&gate, KE_F32, 1, shape);
  kt_alloc(&up, KE_F32, 1, shape);
  kt_alloc(&out, KE_F32, 1, shape);
  kt_fill_normal(&gate, 0.0f, 2.0f);
  kt_fill_normal(&up, 0.0f, 2.0f);
  kt_assert_ok(ke_swiglu(kt_ctx(), &gate, &up, &out));
  kt_assert_ok(ke_context_sync(kt_ctx()));

  double *g = kt_to_doubles(&gate), *u = kt_to_doubles(&up);
  double ref[64];
  ke_swiglu_ref(g, u, ref, 64);
  kt_assert_close("swiglu_64_f32", &out, ref, kt_tol_default(KE_F32));
  free(g);
  free(u);
  kt_free(&gate);
  kt_free(&up);
  kt_free(&out);
}
END_TEST

START_TEST(noop) {
  const ke_device_info *d = ke_context_device(kt_ctx());
  ck_assert_ptr_nonnull(d);
  ck_assert_msg(d->name[0] != '\0', "the context's device has no name");
  ck_assert_uint_gt(d->total_bytes, 0);
}
END_TEST

static const kt_test bench_tests[] = {
    KT_TEST(trivial),
    KT_TEST(noop),
};

KT_SUITE(kt_suite_bench, "bench", "bench", bench_tests);
