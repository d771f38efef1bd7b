/* TEST ONLY: the entry points of kiln/test-faults.h, which launch the fault
 * kernels of kernels/faults.hip for the fault suite. Like every entry point
 * they launch through KE__TIMED_LAUNCH; unlike one they check nothing, since
 * going wrong is their purpose.
 */
#include "engine-impl.h"
#include "kiln/test-faults.h"
#include "contract/faults.h"

int ke__fault_store(ke_context *ctx, float *p, int64_t offset) {
  if (!ctx) return ke__fail(KE_EINVAL, "ke__fault_store: ctx is NULL");
  KE__TIMED_LAUNCH(ctx, "fault_store",
                   ke__fault_store_launch(ctx->stream, p, offset));
  return ke_context_sync(ctx);
}

int ke__fault_copy(ke_context *ctx, const float *x, float *y, int64_t n) {
  if (!ctx) return ke__fail(KE_EINVAL, "ke__fault_copy: ctx is NULL");
  KE__TIMED_LAUNCH(ctx, "fault_copy",
                   ke__fault_copy_launch(ctx->stream, x, y, n));
  return ke_context_sync(ctx);
}

int ke__fault_spin(ke_context *ctx, int *flag) {
  if (!ctx) return ke__fail(KE_EINVAL, "ke__fault_spin: ctx is NULL");
  KE__TIMED_LAUNCH(ctx, "fault_spin", ke__fault_spin_launch(ctx->stream, flag));
  return ke_context_sync(ctx);
}

int ke__fault_race(ke_context *ctx, float *out) {
  if (!ctx) return ke__fail(KE_EINVAL, "ke__fault_race: ctx is NULL");
  KE__TIMED_LAUNCH(ctx, "fault_race", ke__fault_race_launch(ctx->stream, out));
  return ke_context_sync(ctx);
}

int ke__fault_divergent_barrier(ke_context *ctx, float *out) {
  if (!ctx) return ke__fail(KE_EINVAL, "ke__fault_divergent_barrier: ctx is NULL");
  KE__TIMED_LAUNCH(ctx, "fault_divergent_barrier",
                   ke__fault_divergent_barrier_launch(ctx->stream, out));
  return ke_context_sync(ctx);
}

int ke__fault_lose_device(ke_context *ctx) {
  if (!ctx) return ke__fail(KE_EINVAL, "ke__fault_lose_device: ctx is NULL");
#if defined(KILN_BACKEND_HOST)
  KE__TRY(ke__use(ctx));
  KE__CHECK(kemu_lose_device());
  return KE_OK;
#else
  return ke__fail(KE_ENOSYS, "a %s device cannot be lost on purpose (only the host "
                  "emulation's can: kemu_lose_device)", KE__BACKEND_NAME);
#endif
}

#if defined(KE_PLANTED_SWITCH) && defined(KILN_BACKEND_HOST)
#include <stdlib.h>

int ke__planted_one_element_on;

/* The one-element mutant (tests/meson.build, planted-bug-one-element): a
 * large output (at least KE__ONE_ELEMENT_MIN elements, contiguous) gets
 * one element wrong by half its magnitude plus a half, at an index hashed
 * from its size, so that the checks must look at every output to see it. */
#define KE__ONE_ELEMENT_MIN 16384

int ke__planted_one_element(ke_context *ctx, ke_tensor *t) {
  const int64_t n = ke_tensor_numel(t);
  if (n < KE__ONE_ELEMENT_MIN || !ke_tensor_is_contiguous(t)) return KE_OK;
  double *v = malloc((size_t)n * sizeof *v);
  if (!v) return ke__fail(KE_ENOMEM, "one-element mutant: no host memory");
  int rc = ke_tensor_to_doubles(ctx, t, v);
  const int64_t i = (int64_t)(((uint64_t)n * 0x9E3779B97F4A7C15ull) >> 17) % n;
  v[i] += 0.5 * (1.0 + (v[i] < 0 ? -v[i] : v[i]));
  if (rc == KE_OK) rc = ke_tensor_from_doubles(ctx, t, v);
  free(v);
  return rc;
}
#endif
