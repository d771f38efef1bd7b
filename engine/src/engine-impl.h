/* Engine internals: the context, its ledger and its timing table. Only the
 * engine's own sources include this.
 */
#ifndef KILN_ENGINE_IMPL_H
#define KILN_ENGINE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/engine.h"
#include "clocks-impl.h"
#include "kiln/test-tuning.h"
#include "runtime.h"

/* Every live device allocation, oldest first. Frees are rare next to
 * kernel launches and tests hold few buffers, so a sorted array is enough. */
typedef struct ke__ledger {
  ke_allocation *items;
  size_t count;
  size_t capacity;
  size_t live_bytes;
  size_t peak_bytes;        /* most live bytes since the last reset */
  uint64_t next_serial;
} ke__ledger;

/* One launch bracketed by two events, not yet read back. */
typedef struct ke__pending_launch {
  const char *name;
  hipEvent_t start;
  hipEvent_t stop;
} ke__pending_launch;

typedef struct ke__kernel_times {
  const char *name;
  float *ms;
  size_t count;
  size_t capacity;
} ke__kernel_times;

typedef struct ke__timing {
  ke__pending_launch *pending;
  size_t npending;
  size_t pending_capacity;
  hipEvent_t *free_events;   /* recycled events */
  size_t nfree;
  size_t free_capacity;
  ke__kernel_times *kernels;
  size_t nkernels;
  size_t kernels_capacity;
} ke__timing;

/* The engine's own device scratch (scratch.c): a leading region of
 * counters that every kernel using them leaves zero, then room for partial
 * results. One allocation in the ledger, or none. */
typedef struct ke__scratch {
  void *ptr;
  size_t counter_bytes;
  size_t partial_bytes;
} ke__scratch;

struct ke_context {
  ke_device_info device;
  hipStream_t stream;
  int poison;
  double cap_fraction;
  size_t cap_bytes;
  size_t free_at_sizing;
  ke__ledger ledger;
  ke__timing timing;
  hiprandGenerator_t rng;
  int rng_ready;
  ke__scratch scratch;
  ke__decode_tuning decode_tuning;
  ke__attention_tuning attention_tuning;
  ke__clock_source clocks;
};

/* Formats this thread's last error (printf-style) and returns status. */
int ke__fail(int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Timing around one launch: begin records the start event, end records the
 * stop event and queues the pair under name (a string literal). */
int ke__launch_begin(ke_context *ctx, ke__pending_launch *slot);
int ke__launch_end(ke_context *ctx, ke__pending_launch *slot,
                   const char *name, hipError_t launch_err, const char *expr,
                   const char *file, int line);
void ke__timing_destroy(ke_context *ctx);

/* Runs LAUNCH (an int expression returning a hip error code) under timing,
 * checking both the launch and the runtime's last error. */
#define KE__TIMED_LAUNCH(ctx, name, launch)                                   \
  do {                                                                        \
    ke__pending_launch ke__slot;                                              \
    KE__TRY(ke__launch_begin((ctx), &ke__slot));                              \
    hipError_t ke__lerr = (hipError_t)(launch);                               \
    KE__TRY(ke__launch_end((ctx), &ke__slot, (name), ke__lerr, #launch,       \
                           __FILE__, __LINE__));                              \
  } while (0)

int ke__device_info_fill(int device, ke_device_info *out);

/* Every family's tuning knobs (kiln/test-tuning.h) at their defaults: the
 * one call the core context makes into them (tuning.c). */
void ke__tuning_defaults(ke_context *ctx);

/* Makes ctx's device the calling thread's current one before a runtime
 * call. A process with one context never switches; with one per device
 * (a test of several GPUs), every call that reaches the runtime selects
 * its context's device first. ke__device_changed says that something else
 * (a device query) switched it. */
int ke__use(ke_context *ctx);
void ke__device_changed(void);

/* A scratch with counter_bytes of zeroed counters at its start and
 * partial_bytes of 16-byte aligned room after them; reuses the context's
 * when it is large enough, else replaces it (synchronising the stream,
 * allocating through the ledger, zeroing it). */
int ke__scratch_get(ke_context *ctx, size_t counter_bytes,
                    size_t partial_bytes, unsigned **counters,
                    float **partials);

/* For row kernels: the tensor as rows of its last dimension. The last
 * dimension must be contiguous and the leading ones must collapse into one
 * row stride no shorter than a row (a slice of a wider matrix is fine);
 * otherwise KE_ESHAPE, with a message naming op and what ("x", "y"). */
int ke__tensor_rows(const ke_tensor *t, const char *op, const char *what,
                    int64_t *rows, int64_t *row_stride);
/* KE_ESHAPE (naming op, an and bn) unless a and b have one rank and shape. */
int ke__same_shape(const ke_tensor *a, const ke_tensor *b, const char *op,
                   const char *an, const char *bn);

#if defined(KE_PLANTED_SWITCH) && defined(KILN_BACKEND_HOST)
/* The one-element mutant's corruption of an output (faults.c), on only in
 * the runner that sets ke__planted_one_element_on (suites/planted.c). */
extern int ke__planted_one_element_on;
int ke__planted_one_element(ke_context *ctx, ke_tensor *t);
#define KE__PLANTED_ONE_ELEMENT(ctx, t)                                        \
  do {                                                                         \
    if (ke__planted_one_element_on) KE__TRY(ke__planted_one_element(ctx, t)); \
  } while (0)
#else
#define KE__PLANTED_ONE_ELEMENT(ctx, t) ((void)0)
#endif

#endif
