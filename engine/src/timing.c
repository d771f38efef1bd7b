/* Event timing for every kernel launch the engine makes.
 *
 * Each launch is bracketed by two events on the context stream. Reading an
 * elapsed time needs the stop event to have completed, so pairs wait in a
 * pending list and are resolved in bulk by ke_timing_collect (one stream
 * synchronisation, never a device-wide one). Events are recycled.
 */
#include <stdlib.h>
#include <string.h>

#include "engine-impl.h"

/* Resolve automatically past this many pending pairs so that long loops do
 * not hold thousands of events. */
#define KE__MAX_PENDING 4096

static int ke__grow(void **items, size_t *capacity, size_t need,
                    size_t item_size) {
  if (need <= *capacity) return KE_OK;
  size_t cap = *capacity ? *capacity * 2 : 32;
  while (cap < need) cap *= 2;
  void *p = realloc(*items, cap * item_size);
  if (!p) return ke__fail(KE_ENOMEM, "timing: out of host memory");
  *items = p;
  *capacity = cap;
  return KE_OK;
}

static int ke__event_get(ke_context *ctx, hipEvent_t *ev) {
  ke__timing *t = &ctx->timing;
  if (t->nfree > 0) {
    *ev = t->free_events[--t->nfree];
    return KE_OK;
  }
  KE__CHECK(hipEventCreate(ev));
  return KE_OK;
}

static int ke__event_put(ke_context *ctx, hipEvent_t ev) {
  ke__timing *t = &ctx->timing;
  KE__TRY(ke__grow((void **)&t->free_events, &t->free_capacity, t->nfree + 1,
                   sizeof *t->free_events));
  t->free_events[t->nfree++] = ev;
  return KE_OK;
}

static ke__kernel_times *ke__kernel_slot(ke__timing *t, const char *name) {
  for (size_t i = 0; i < t->nkernels; i++)
    if (strcmp(t->kernels[i].name, name) == 0) return &t->kernels[i];
  if (ke__grow((void **)&t->kernels, &t->kernels_capacity, t->nkernels + 1,
               sizeof *t->kernels) != KE_OK)
    return NULL;
  ke__kernel_times *k = &t->kernels[t->nkernels++];
  memset(k, 0, sizeof *k);
  k->name = name;
  return k;
}

static int ke__timing_resolve(ke_context *ctx) {
  ke__timing *t = &ctx->timing;
  if (t->npending == 0) return KE_OK;
  KE__TRY(ke__use(ctx));
  KE__CHECK(hipStreamSynchronize(ctx->stream));
  for (size_t i = 0; i < t->npending; i++) {
    ke__pending_launch *p = &t->pending[i];
    float ms = 0.0f;
    KE__CHECK(hipEventElapsedTime(&ms, p->start, p->stop));
    ke__kernel_times *k = ke__kernel_slot(t, p->name);
    if (!k) return KE_ENOMEM;
    KE__TRY(ke__grow((void **)&k->ms, &k->capacity, k->count + 1,
                     sizeof *k->ms));
    k->ms[k->count++] = ms;
    KE__TRY(ke__event_put(ctx, p->start));
    KE__TRY(ke__event_put(ctx, p->stop));
  }
  t->npending = 0;
  return KE_OK;
}

int ke__launch_begin(ke_context *ctx, ke__pending_launch *slot) {
  if (!ctx) return ke__fail(KE_ESTATE, "kernel launch without a context");
  KE__TRY(ke__use(ctx));
  if (ctx->timing.npending >= KE__MAX_PENDING)
    KE__TRY(ke__timing_resolve(ctx));
  KE__TRY(ke__event_get(ctx, &slot->start));
  KE__TRY(ke__event_get(ctx, &slot->stop));
  KE__CHECK(hipEventRecord(slot->start, ctx->stream));
  return KE_OK;
}

int ke__launch_end(ke_context *ctx, ke__pending_launch *slot,
                   const char *name, hipError_t launch_err, const char *expr,
                   const char *file, int line) {
  ke__timing *t = &ctx->timing;
  /* A launch error may be returned or only left as the last error. */
  hipError_t err = launch_err != hipSuccess ? launch_err : hipGetLastError();
  if (err != hipSuccess) {
    (void)hipGetLastError();
    (void)ke__event_put(ctx, slot->start);
    (void)ke__event_put(ctx, slot->stop);
    return ke__runtime_error(err, expr, name, file, line);
  }
  KE__CHECK(hipEventRecord(slot->stop, ctx->stream));
  KE__TRY(ke__grow((void **)&t->pending, &t->pending_capacity,
                   t->npending + 1, sizeof *t->pending));
  slot->name = name;
  t->pending[t->npending++] = *slot;
  return KE_OK;
}

static int ke__cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

int ke_timing_collect(ke_context *ctx, ke_kernel_stats *out, size_t max,
                      size_t *count) {
  if (!ctx) return ke__fail(KE_EINVAL, "ke_timing_collect: ctx is NULL");
  KE__TRY(ke__timing_resolve(ctx));
  ke__timing *t = &ctx->timing;
  if (count) *count = t->nkernels;
  for (size_t i = 0; out && i < max && i < t->nkernels; i++) {
    ke__kernel_times *k = &t->kernels[i];
    ke_kernel_stats *s = &out[i];
    memset(s, 0, sizeof *s);
    strncpy(s->name, k->name, sizeof s->name - 1);
    s->launches = k->count;
    if (k->count == 0) continue;
    float *sorted = malloc(k->count * sizeof *sorted);
    if (!sorted) return ke__fail(KE_ENOMEM, "timing: out of host memory");
    memcpy(sorted, k->ms, k->count * sizeof *sorted);
    qsort(sorted, k->count, sizeof *sorted, ke__cmp_float);
    for (size_t j = 0; j < k->count; j++) s->total_ms += sorted[j];
    s->min_ms = sorted[0];
    s->max_ms = sorted[k->count - 1];
    s->median_ms = k->count % 2
                       ? sorted[k->count / 2]
                       : 0.5 * (sorted[k->count / 2 - 1] + sorted[k->count / 2]);
    free(sorted);
  }
  return KE_OK;
}

void ke_timing_reset(ke_context *ctx) {
  if (!ctx) return;
  (void)ke__timing_resolve(ctx);
  for (size_t i = 0; i < ctx->timing.nkernels; i++)
    free(ctx->timing.kernels[i].ms);
  ctx->timing.nkernels = 0;
}

void ke__timing_destroy(ke_context *ctx) {
  ke__timing *t = &ctx->timing;
  for (size_t i = 0; i < t->npending; i++) {
    (void)hipEventDestroy(t->pending[i].start);
    (void)hipEventDestroy(t->pending[i].stop);
  }
  for (size_t i = 0; i < t->nfree; i++) (void)hipEventDestroy(t->free_events[i]);
  for (size_t i = 0; i < t->nkernels; i++) free(t->kernels[i].ms);
  free(t->pending);
  free(t->free_events);
  free(t->kernels);
  memset(t, 0, sizeof *t);
}
