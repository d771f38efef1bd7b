/* The per-process contexts, at most one per device: a device, a stream,
 * the allocation ledger and its cap, poison mode, and host<->device
 * copies.
 *
 * The ledger is what makes a leak report exact: every device allocation is
 * recorded with its size and call site, and whatever is still listed when a
 * test ends is a leak. The cap keeps a test from taking the whole device (a
 * desktop or a neighbour process may share it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine-impl.h"

/* At most one context per device and process: the runtime's state is per
 * device and process too, and a second context on a device would share it
 * behind the ledger's back. A test that needs several devices opens one on
 * each (kiln narrows its visible devices to exactly those). */
#define KE__MAX_DEVICES 64
static ke_context *ke__open_context[KE__MAX_DEVICES];
/* The device this thread's runtime calls go to, as ke__use last set it; -1
 * after anything else may have changed it (a device query). */
static _Thread_local int ke__current_device = -1;

int ke__use(ke_context *ctx) {
  if (ke__current_device == ctx->device.index) return KE_OK;
  KE__CHECK(hipSetDevice(ctx->device.index));
  ke__current_device = ctx->device.index;
  return KE_OK;
}

void ke__device_changed(void) { ke__current_device = -1; }

int ke_context_count(void) {
  int n = 0;
  for (int i = 0; i < KE__MAX_DEVICES; i++) n += ke__open_context[i] != NULL;
  return n;
}

void ke_context_options_init(ke_context_options *opts) {
  memset(opts, 0, sizeof *opts);
  opts->device = 0;
  opts->cap_fraction = 0.7;
  opts->poison = 0;
}

int ke_context_open(const ke_context_options *opts, ke_context **out) {
  ke_context_options defaults;
  if (!out) return ke__fail(KE_EINVAL, "ke_context_open: out is NULL");
  *out = NULL;
  if (!opts) {
    ke_context_options_init(&defaults);
    opts = &defaults;
  }
  if (opts->device < 0 || opts->device >= KE__MAX_DEVICES)
    return ke__fail(KE_EINVAL, "ke_context_open: device %d out of range (0..%d)",
                    opts->device, KE__MAX_DEVICES - 1);
  if (ke__open_context[opts->device])
    return ke__fail(KE_EBUSY, "ke_context_open: this process already has a "
                              "context open on device %d (one per device)",
                    opts->device);
  if (!(opts->cap_fraction > 0.0 && opts->cap_fraction <= 1.0))
    return ke__fail(KE_EINVAL,
                    "cap_fraction %g out of range: expected 0 < f <= 1",
                    opts->cap_fraction);

  ke_device_info info;
  KE__TRY(ke_device_query(opts->device, &info));
  /* The query left this device current: the stream is made on it. */
  ke__current_device = opts->device;

  ke_context *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return ke__fail(KE_ENOMEM, "ke_context_open: out of host memory");
  ctx->device = info;
  ctx->poison = opts->poison;
  ctx->cap_fraction = opts->cap_fraction;
  ctx->free_at_sizing = info.free_bytes;
  ctx->cap_bytes = (size_t)((double)info.free_bytes * opts->cap_fraction);
  ke__tuning_defaults(ctx);
  hipError_t err = hipStreamCreateWithFlags(&ctx->stream, hipStreamNonBlocking);
  if (err != hipSuccess) {
    int st = ke__runtime_error(err, "hipStreamCreateWithFlags", __func__,
                               __FILE__, __LINE__);
    free(ctx);
    return st;
  }
  ke__open_context[opts->device] = ctx;
  *out = ctx;
  return KE_OK;
}

int ke_context_close(ke_context *ctx) {
  if (!ctx) return ke__fail(KE_EINVAL, "ke_context_close: ctx is NULL");
  int status = ke__use(ctx);
  if (hipStreamSynchronize(ctx->stream) != hipSuccess)
    status = ke__fail(KE_ERUNTIME, "ke_context_close: stream sync failed: %s",
                      hipGetErrorString(hipGetLastError()));
  /* Free what the test left behind so the process can go on; the leak was
   * already readable through ke_ledger_outstanding() before the close. */
  for (size_t i = 0; i < ctx->ledger.count; i++)
    (void)hipFree(ctx->ledger.items[i].ptr);
  free(ctx->ledger.items);
  ke__timing_destroy(ctx);
  if (ctx->rng_ready) (void)hiprandDestroyGenerator(ctx->rng);
  (void)hipStreamDestroy(ctx->stream);
  if (ke__open_context[ctx->device.index] == ctx) ke__open_context[ctx->device.index] = NULL;
  free(ctx);
  return status;
}

int ke_context_sync(ke_context *ctx) {
  if (!ctx) return ke__fail(KE_EINVAL, "ke_context_sync: ctx is NULL");
  KE__TRY(ke__use(ctx));
  KE__CHECK(hipStreamSynchronize(ctx->stream));
  return KE_OK;
}

const ke_device_info *ke_context_device(const ke_context *ctx) {
  return ctx ? &ctx->device : NULL;
}

int ke_mem_info(ke_context *ctx, size_t *free_bytes, size_t *total_bytes) {
  size_t f = 0, t = 0;
  if (!ctx) return ke__fail(KE_EINVAL, "ke_mem_info: ctx is NULL");
  KE__TRY(ke__use(ctx));
  KE__CHECK(hipMemGetInfo(&f, &t));
  if (free_bytes) *free_bytes = f;
  if (total_bytes) *total_bytes = t;
  return KE_OK;
}

/* ---- Ledger -------------------------------------------------------------- */

static int ke__ledger_add(ke__ledger *l, void *ptr, size_t bytes,
                          const char *file, int line) {
  if (l->count == l->capacity) {
    size_t cap = l->capacity ? l->capacity * 2 : 64;
    ke_allocation *items = realloc(l->items, cap * sizeof *items);
    if (!items) return ke__fail(KE_ENOMEM, "ledger: out of host memory");
    l->items = items;
    l->capacity = cap;
  }
  ke_allocation *a = &l->items[l->count++];
  a->serial = l->next_serial++;
  a->ptr = ptr;
  a->bytes = bytes;
  a->file = file ? file : "?";
  a->line = line;
  l->live_bytes += bytes;
  if (l->live_bytes > l->peak_bytes) l->peak_bytes = l->live_bytes;
  return KE_OK;
}

int ke_malloc_at(ke_context *ctx, void **ptr, size_t bytes, const char *file,
                 int line) {
  if (!ctx || !ptr)
    return ke__fail(KE_EINVAL, "ke_malloc at %s:%d: NULL argument",
                    file ? file : "?", line);
  *ptr = NULL;
  if (bytes == 0)
    return ke__fail(KE_EINVAL, "ke_malloc at %s:%d: zero bytes requested",
                    file ? file : "?", line);
  size_t in_use = ctx->ledger.live_bytes;
  if (bytes > ctx->cap_bytes || in_use > ctx->cap_bytes - bytes)
    return ke__fail(KE_ECAP,
                    "allocation of %zu bytes at %s:%d refused: %zu bytes "
                    "already in use, cap %zu bytes (%.2f of %zu bytes free "
                    "when it was sized; device total %zu bytes)",
                    bytes, file ? file : "?", line, in_use, ctx->cap_bytes,
                    ctx->cap_fraction, ctx->free_at_sizing,
                    ctx->device.total_bytes);
  void *p = NULL;
  KE__TRY(ke__use(ctx));
  hipError_t err = hipMalloc(&p, bytes);
  if (err != hipSuccess) {
    (void)hipGetLastError();
    return ke__fail(err == hipErrorOutOfMemory ? KE_ENOMEM : KE_ERUNTIME,
                    "hipMalloc of %zu bytes at %s:%d failed: %s", bytes,
                    file ? file : "?", line, hipGetErrorString(err));
  }
  int st = ke__ledger_add(&ctx->ledger, p, bytes, file, line);
  if (st != KE_OK) {
    (void)hipFree(p);
    return st;
  }
  if (ctx->poison) {
    /* 0xFF bytes are NaN in f32, f16 and bf16: reading memory nobody wrote
     * poisons the result instead of passing by luck. */
    KE__CHECK(hipMemsetAsync(p, 0xFF, bytes, ctx->stream));
  }
  *ptr = p;
  return KE_OK;
}

int ke_free(ke_context *ctx, void *ptr) {
  if (!ctx) return ke__fail(KE_EINVAL, "ke_free: ctx is NULL");
  if (!ptr) return KE_OK;
  ke__ledger *l = &ctx->ledger;
  for (size_t i = 0; i < l->count; i++) {
    if (l->items[i].ptr != ptr) continue;
    KE__TRY(ke__use(ctx));
    /* The memory may still be in use by queued work on our stream. */
    KE__CHECK(hipStreamSynchronize(ctx->stream));
    KE__CHECK(hipFree(ptr));
    l->live_bytes -= l->items[i].bytes;
    memmove(&l->items[i], &l->items[i + 1],
            (l->count - i - 1) * sizeof *l->items);
    l->count--;
    return KE_OK;
  }
  return ke__fail(KE_EINVAL, "ke_free: %p was not allocated by this context",
                  ptr);
}

size_t ke_ledger_outstanding(const ke_context *ctx, ke_allocation *out,
                             size_t max) {
  if (!ctx) return 0;
  for (size_t i = 0; out && i < max && i < ctx->ledger.count; i++)
    out[i] = ctx->ledger.items[i];
  return ctx->ledger.count;
}

size_t ke_ledger_outstanding_bytes(const ke_context *ctx) {
  return ctx ? ctx->ledger.live_bytes : 0;
}

size_t ke_ledger_peak_bytes(const ke_context *ctx) {
  return ctx ? ctx->ledger.peak_bytes : 0;
}

void ke_ledger_peak_reset(ke_context *ctx) {
  if (ctx) ctx->ledger.peak_bytes = ctx->ledger.live_bytes;
}

void ke_ledger_cap(const ke_context *ctx, size_t *cap, size_t *free_at_sizing,
                   size_t *total) {
  if (cap) *cap = ctx ? ctx->cap_bytes : 0;
  if (free_at_sizing) *free_at_sizing = ctx ? ctx->free_at_sizing : 0;
  if (total) *total = ctx ? ctx->device.total_bytes : 0;
}

int ke_ledger_cap_resize(ke_context *ctx) {
  if (!ctx) return ke__fail(KE_EINVAL, "ke_ledger_cap_resize: ctx is NULL");
  size_t free_now = 0, total = 0;
  KE__TRY(ke_mem_info(ctx, &free_now, &total));
  ctx->free_at_sizing = free_now + ctx->ledger.live_bytes;
  ctx->cap_bytes = (size_t)((double)ctx->free_at_sizing * ctx->cap_fraction);
  return KE_OK;
}

/* ---- Copies -------------------------------------------------------------- */

static int ke__copy(ke_context *ctx, void *dst, const void *src, size_t bytes,
                    hipMemcpyKind kind) {
  if (!ctx || (bytes && (!dst || !src)))
    return ke__fail(KE_EINVAL, "copy of %zu bytes: NULL argument", bytes);
  if (bytes == 0) return KE_OK;
  KE__TRY(ke__use(ctx));
  KE__CHECK(hipMemcpyAsync(dst, src, bytes, kind, ctx->stream));
  KE__CHECK(hipStreamSynchronize(ctx->stream));
  return KE_OK;
}

int ke_copy_to_device(ke_context *ctx, void *dst, const void *src,
                      size_t bytes) {
  return ke__copy(ctx, dst, src, bytes, hipMemcpyHostToDevice);
}

int ke_copy_to_host(ke_context *ctx, void *dst, const void *src,
                    size_t bytes) {
  return ke__copy(ctx, dst, src, bytes, hipMemcpyDeviceToHost);
}

int ke_copy_device(ke_context *ctx, void *dst, const void *src, size_t bytes) {
  return ke__copy(ctx, dst, src, bytes, hipMemcpyDeviceToDevice);
}

int ke_copy_device_async(ke_context *ctx, void *dst, const void *src,
                         size_t bytes) {
  if (!ctx || (bytes && (!dst || !src)))
    return ke__fail(KE_EINVAL, "device copy of %zu bytes: NULL argument",
                    bytes);
  if (bytes == 0) return KE_OK;
  KE__TIMED_LAUNCH(ctx, "copy",
                   hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice,
                                  ctx->stream));
  return KE_OK;
}

int ke_fill_device_async(ke_context *ctx, void *dst, int byte, size_t bytes) {
  if (!ctx || (bytes && !dst))
    return ke__fail(KE_EINVAL, "device fill of %zu bytes: NULL argument",
                    bytes);
  if (byte < 0 || byte > 255)
    return ke__fail(KE_EINVAL, "device fill: byte %d is not in 0..255", byte);
  if (bytes == 0) return KE_OK;
  KE__TIMED_LAUNCH(ctx, "fill", hipMemsetAsync(dst, byte, bytes, ctx->stream));
  return KE_OK;
}
