/* The engine's own device scratch: one ledger allocation per context, for
 * kernels whose blocks leave partial results for other blocks to merge
 * (split decode). Its leading counters are zero whenever no launch is in
 * flight: zeroed here when allocated, set back to zero by the kernels.
 */
#include "engine-impl.h"

static size_t ke__round16(size_t n) { return (n + 15) / 16 * 16; }

int ke__scratch_get(ke_context *ctx, size_t counter_bytes,
                    size_t partial_bytes, unsigned **counters,
                    float **partials) {
  ke__scratch *s = &ctx->scratch;
  counter_bytes = ke__round16(counter_bytes);
  if (!s->ptr || counter_bytes > s->counter_bytes ||
      partial_bytes > s->partial_bytes) {
    /* Grow to what this call and every earlier one needed, so shapes that
     * alternate do not reallocate each time. */
    ke__scratch grown = {NULL,
                         counter_bytes > s->counter_bytes ? counter_bytes
                                                          : s->counter_bytes,
                         partial_bytes > s->partial_bytes ? partial_bytes
                                                          : s->partial_bytes};
    KE__TRY(ke_scratch_release(ctx));
    KE__TRY(ke_malloc(ctx, &grown.ptr,
                      grown.counter_bytes + grown.partial_bytes));
    KE__CHECK(hipMemsetAsync(grown.ptr, 0,
                             grown.counter_bytes + grown.partial_bytes,
                             ctx->stream));
    *s = grown;
  }
  *counters = (unsigned *)s->ptr;
  *partials = (float *)((char *)s->ptr + s->counter_bytes);
  return KE_OK;
}

int ke_scratch_release(ke_context *ctx) {
  if (!ctx) return ke__fail(KE_EINVAL, "ke_scratch_release: ctx is NULL");
  if (!ctx->scratch.ptr) return KE_OK;
  void *p = ctx->scratch.ptr;
  ctx->scratch = (ke__scratch){NULL, 0, 0};
  return ke_free(ctx, p);
}
