/* kiln engine: the runtime half of the public API.
 *
 * Device discovery, the per-process context (one device, one stream), device
 * buffers with an allocation ledger and cap, tensors, copies, per-kernel event
 * timing and seeded random inputs. Kernel entry points live in kiln/kernels.h.
 * The same API is built three times: on the ROCm HIP runtime, on CUDA, and on
 * kiln's host emulation; ke_backend_name() says which one is linked in.
 */
#ifndef KILN_ENGINE_H
#define KILN_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Backend and devices ------------------------------------------------ */

/* "host", "hip" or "cuda". */
const char *ke_backend_name(void);

typedef struct ke_device_info {
  int index;
  char name[256];
  char arch[64];          /* "gfx90a", "sm_90", "host-wave64", ... */
  int warp_size;
  int multiprocessors;
  size_t l2_bytes;        /* last-level (L2) cache; 4 MiB in host emulation */
  size_t total_bytes;
  size_t free_bytes;
} ke_device_info;

/* Number of usable devices. Returns KE_ENODEV (and *count = 0) when the
 * runtime finds none or cannot start; never crashes for lack of a GPU. */
int ke_device_count(int *count);
int ke_device_query(int device, ke_device_info *out);

/* Whether this process saw a device fault: a runtime error after which a
 * context on that device cannot be trusted (an illegal address, a failed
 * launch, a device-side assert, a lost device; KE_EDEVICE). 1 with the
 * visible device and the error's detail for the first one, else 0. kiln
 * probes such a device before it gives it another test. */
int ke_device_fault(int *device, const char **detail);

/* ---- Context ------------------------------------------------------------ */

/* A context is a device and a stream on it. All work the engine does goes
 * to that stream, and every synchronisation is stream-scoped. A process has
 * at most one context per device: a test of one GPU opens one, a test of
 * several opens one on each visible device, and each context's calls go to
 * its own device. */
typedef struct ke_context ke_context;

typedef struct ke_context_options {
  int device;              /* default 0 */
  double cap_fraction;     /* allocation cap, fraction of free memory at open
                              (or at ke_ledger_cap_resize); default 0.7;
                              0 < f <= 1 */
  int poison;              /* fill new allocations with 0xFF bytes (NaN in
                              f32, f16 and bf16) so unwritten reads show */
} ke_context_options;

void ke_context_options_init(ke_context_options *opts);
/* Opens a context on opts->device (a visible device index). Fails with
 * KE_EBUSY when this process already has a context open on that device. */
int ke_context_open(const ke_context_options *opts, ke_context **out);
/* How many contexts this process has open. */
int ke_context_count(void);
/* Synchronises the stream, releases the stream and events. Outstanding
 * allocations stay in the ledger's report and are freed. */
int ke_context_close(ke_context *ctx);
/* Waits for the context's stream (never the whole device). */
int ke_context_sync(ke_context *ctx);
const ke_device_info *ke_context_device(const ke_context *ctx);
/* Free and total device memory now, as the runtime reports them. */
int ke_mem_info(ke_context *ctx, size_t *free_bytes, size_t *total_bytes);

/* ---- Clocks and throttling ----------------------------------------------- */

/* What the device runs at now: SM and memory clocks, temperature, power and
 * why it slows down, read from NVIDIA's NVML (loaded at run time with
 * dlopen, so nothing requires it) or AMD's sysfs. Fields the source lacks
 * are -1 (NAN for doubles). */
typedef struct ke_clocks {
  const char *source;       /* "nvml", "sysfs"; NULL when there is none */
  int sm_mhz, mem_mhz;
  int sm_max_mhz, mem_max_mhz;
  double temp_c, power_w;
  int64_t reasons;          /* NVML's clock-event reason bits; -1 unknown */
  char error[256];          /* why there is no source, or what failed */
} ke_clocks;

/* Loads and opens the source for ctx's device (once per context; slow:
 * NVML's init), so that ke_device_clocks is quick later. KE_OK, or
 * KE_ENOSYS with out->error saying why this device has no clocks (the host
 * emulation, no NVML library, no sysfs entry): a reason, not a failure. */
int ke_clocks_open(ke_context *ctx, ke_clocks *out);
/* Reads the clocks now (after ke_clocks_open; it opens them if not). */
int ke_device_clocks(ke_context *ctx, ke_clocks *out);

/* ---- Device memory and the allocation ledger ---------------------------- */

typedef struct ke_allocation {
  uint64_t serial;         /* order of allocation within the context */
  void *ptr;
  size_t bytes;
  const char *file;        /* call site */
  int line;
} ke_allocation;

/* Allocates device memory and records it with its call site. Refused with
 * KE_ECAP when the context's live bytes would exceed the cap; the message in
 * ke_last_error() names requested, in use, cap, free and total bytes. */
int ke_malloc_at(ke_context *ctx, void **ptr, size_t bytes, const char *file,
                 int line);
#define ke_malloc(ctx, ptr, bytes) \
  ke_malloc_at((ctx), (ptr), (bytes), __FILE__, __LINE__)
/* Frees a pointer from ke_malloc; KE_EINVAL for one the ledger never saw. */
int ke_free(ke_context *ctx, void *ptr);

/* Copies up to max outstanding allocations (oldest first) into out and
 * returns how many are outstanding in all. */
size_t ke_ledger_outstanding(const ke_context *ctx, ke_allocation *out,
                             size_t max);
size_t ke_ledger_outstanding_bytes(const ke_context *ctx);
/* The most bytes the ledger held at once since the context opened or the
 * last ke_ledger_peak_reset (which starts it again from the bytes live
 * now): a test's peak device memory through the engine. */
size_t ke_ledger_peak_bytes(const ke_context *ctx);
void ke_ledger_peak_reset(ke_context *ctx);
/* Cap in bytes, and the free/total memory it was computed from. */
void ke_ledger_cap(const ke_context *ctx, size_t *cap, size_t *free_at_sizing,
                   size_t *total);
/* Sizes the cap again from the device's free memory now (what this
 * context holds counts as free, as at its open). For a context opened
 * before its process had its share of the device: a warm runner opens its
 * context while other tests may hold memory, then takes its slots. */
int ke_ledger_cap_resize(ke_context *ctx);

/* The engine's scratch. Decode attention split over the keys (ke_attention
 * with few query rows per KV head, ke_paged_attention without a workspace)
 * keeps its partial results in one device buffer that the context owns:
 * allocated through the ledger when first needed (its call site is in
 * engine/src/scratch.c; it counts against the cap), replaced by a larger
 * one when a call needs more (which synchronises the stream), and reused
 * by later calls; at most a few MB, about (multiprocessors x 2) partial
 * rows of D + 2 floats. When the cap refuses it, the call runs unsplit
 * instead. ke_context_close frees it, and so does this call, which a test
 * harness makes before it counts leaks (the scratch is the engine's, not
 * the test's). Waits for the stream when there is a scratch to free. */
int ke_scratch_release(ke_context *ctx);

/* ---- Tensors ------------------------------------------------------------ */

typedef enum { KE_F32 = 0, KE_F16 = 1, KE_BF16 = 2 } ke_dtype;

#define KE_MAX_RANK 6

/* A view of device memory: dtype, shape and strides in elements. A tensor
 * does not own its memory; ke_tensor_alloc makes one that does via the
 * ledger, and ke_tensor_free releases it. */
typedef struct ke_tensor {
  ke_dtype dtype;
  int rank;
  int64_t shape[KE_MAX_RANK];
  int64_t stride[KE_MAX_RANK];
  void *data;
} ke_tensor;

size_t ke_dtype_size(ke_dtype dtype);
const char *ke_dtype_name(ke_dtype dtype);
int64_t ke_tensor_numel(const ke_tensor *t);
/* 1 when strides are the packed row-major ones for the shape. */
int ke_tensor_is_contiguous(const ke_tensor *t);
/* Fills shape and packed strides; data left NULL. */
int ke_tensor_init(ke_tensor *t, ke_dtype dtype, int rank,
                   const int64_t *shape);
int ke_tensor_alloc_at(ke_context *ctx, ke_tensor *t, ke_dtype dtype,
                       int rank, const int64_t *shape, const char *file,
                       int line);
#define ke_tensor_alloc(ctx, t, dtype, rank, shape) \
  ke_tensor_alloc_at((ctx), (t), (dtype), (rank), (shape), __FILE__, __LINE__)
int ke_tensor_free(ke_context *ctx, ke_tensor *t);

/* Host <-> device copies on the context stream; they return once the copy
 * is complete (stream-synchronised). */
int ke_copy_to_device(ke_context *ctx, void *dst, const void *src,
                      size_t bytes);
int ke_copy_to_host(ke_context *ctx, void *dst, const void *src,
                    size_t bytes);
int ke_copy_device(ke_context *ctx, void *dst, const void *src, size_t bytes);
/* A device-to-device copy queued on the context stream and not waited for,
 * timed like a kernel launch under the name "copy" (ke_timing_collect): the
 * bandwidth reference that kernel speeds are measured against. */
int ke_copy_device_async(ke_context *ctx, void *dst, const void *src,
                         size_t bytes);
/* Sets bytes of dst to byte on the context stream, not waited for, timed
 * under the name "fill": the write-only bandwidth, for kernels that write
 * much more than they read (KV replication, dequantisation). */
int ke_fill_device_async(ke_context *ctx, void *dst, int byte, size_t bytes);
/* Packed tensor <-> host arrays of doubles, converting dtype on the host. */
int ke_tensor_from_doubles(ke_context *ctx, ke_tensor *t, const double *src);
int ke_tensor_to_doubles(ke_context *ctx, const ke_tensor *t, double *dst);

/* Scalar conversions used by references and tests (round to nearest even). */
float ke_f16_to_f32(uint16_t h);
uint16_t ke_f32_to_f16(float f);
float ke_bf16_to_f32(uint16_t b);
uint16_t ke_f32_to_bf16(float f);

/* ---- Kernel timing ------------------------------------------------------ */

/* Every kernel launch the engine makes is bracketed by events on the
 * context stream. Stats are per kernel name. */
typedef struct ke_kernel_stats {
  char name[64];
  uint64_t launches;
  double total_ms;
  double min_ms;
  double median_ms;
  double max_ms;
} ke_kernel_stats;

/* Resolves pending events (synchronising the stream) and copies up to max
 * entries; returns the number of distinct kernels. */
int ke_timing_collect(ke_context *ctx, ke_kernel_stats *out, size_t max,
                      size_t *count);
void ke_timing_reset(ke_context *ctx);

/* ---- References: host threads and their time ---------------------------- */

/* The double-precision references (ke_*_ref) run on the host. Large ones
 * split their work over the host's cores: ke_ref_parallel calls fn(arg, i)
 * for every i in [0, n), handing items out to threads as they finish (so
 * rows of unequal cost balance). `work` estimates the scalar operations in
 * all; below about a million it runs on the calling thread alone. Threads:
 * the CPUs this process may run on, or KILN_REF_THREADS when set (>= 1).
 * fn must only write what item i owns. */
void ke_ref_parallel(int64_t n, double work, void (*fn)(void *arg, int64_t i),
                     void *arg);
int ke_ref_threads(void);
/* A panel for a tiled reference: rows first .. first + width - 1 of op(X),
 * each k long, into out[q * width + t] = op(X)[first + t][q], where op(X)
 * is X (row-major, leading dimension ld) or, with trans, X transposed;
 * rows at or past `rows` are 0. */
void ke_ref_pack_rows(const double *x, int64_t ld, int trans, int64_t rows, int64_t first,
                      int64_t k, int width, double *out);

/* Wall milliseconds this process spent in references: each ke_*_ref and
 * each ke_ref_parallel counts, nested calls once. A test's own reference
 * work (a tolerance derived from the inputs, say) brackets itself with
 * ke_ref_begin and ke_ref_end to count too. */
double ke_ref_ms(void);
void ke_ref_begin(void);
void ke_ref_end(void);

/* ---- Random inputs ------------------------------------------------------ */

/* Philox4x32-10 through hiprand (cuRAND on CUDA, kiln's own on host). The
 * tensor must be contiguous; f16 and bf16 are rounded from f32 draws. */
int ke_rand_uniform(ke_context *ctx, ke_tensor *t, uint64_t seed, float lo,
                    float hi);
int ke_rand_normal(ke_context *ctx, ke_tensor *t, uint64_t seed, float mean,
                   float stddev);

#ifdef __cplusplus
}
#endif
#endif
