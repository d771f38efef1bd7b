/* HIP-on-CPU internals shared by the emulation's own sources (fiber.cc,
 * launch.cc, runtime.cc, attributes.cc, hiprand.cc) and its test. Kernels and the engine
 * never include this: they see hip-on-host.h and hip-on-host-api.h.
 */
#ifndef KILN_HIP_ON_HOST_IMPL_H
#define KILN_HIP_ON_HOST_IMPL_H

#include <stddef.h>
#include <stdint.h>

/* The hand-written switch is x86-64 only; elsewhere (or when forced, to
 * test the fallback) fibers use ucontext. */
#if defined(__x86_64__) && !defined(KEMU_USE_UCONTEXT)
#define KEMU__X86_SWITCH 1
#else
#define KEMU__X86_SWITCH 0
#include <ucontext.h>
#endif

#include "hip-on-host-api.h"

#if defined(__SANITIZE_ADDRESS__)
#define KEMU__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KEMU__ASAN 1
#endif
#endif
#ifndef KEMU__ASAN
#define KEMU__ASAN 0
#endif

/* For frames that never return (a finished fiber's last frames): without
 * instrumentation they leave no poisoned redzones behind on a stack that the
 * next block reuses. */
#if KEMU__ASAN
#define KEMU__NO_ASAN __attribute__((no_sanitize_address))
#else
#define KEMU__NO_ASAN
#endif

/* ==== Fibers (fiber.cc) ================================================== */

/* A saved execution context plus the stack it runs on. The stack bounds are
 * what AddressSanitizer needs to follow a switch; for the OS thread's own
 * context they are learnt on the first switch away from it. */
struct kemu__ctx {
#if KEMU__X86_SWITCH
  void *sp;
#else
  ucontext_t uc;
#endif
  const void *stack_lo;
  size_t stack_size;
  void *asan_fake_stack;
};

/* Prepares `c` to start `entry` on the given stack at its first switch-in.
 * `entry` must never return: a finished fiber leaves via kemu__ctx_exit. */
void kemu__ctx_make(kemu__ctx *c, void *stack_lo, size_t stack_size,
                    void (*entry)(void));
/* Saves the running context into `from` and resumes `to`; returns when
 * something switches back to `from`. */
void kemu__ctx_switch(kemu__ctx *from, kemu__ctx *to);
/* Leaves the running fiber for good (its stack may be reused at once). */
[[noreturn]] void kemu__ctx_exit(kemu__ctx *from, kemu__ctx *to);
/* Must be the first call in a fiber's entry function. */
void kemu__ctx_entered(kemu__ctx *self);
/* Copies the calling thread's MXCSR and x87 control word into the initial
 * frames made from now on, so kernels inherit the launcher's FP settings. */
void kemu__ctx_capture_fpenv(void);

/* Fiber stacks of one OS thread, reused across blocks and launches: a
 * reserved region of 1024 slots, each a 64 KiB guard below a stack that is
 * made accessible the first time a block needs that many threads. */
enum { KEMU__MAX_FIBERS = 1024 };
struct kemu__stack_pool {
  char *region;
  size_t stack_bytes;   /* usable bytes per stack */
  size_t stride;        /* guard + stack */
  unsigned ready;       /* slots made accessible so far */
  unsigned valgrind_id[KEMU__MAX_FIBERS]; /* stack ids when under Valgrind */
};
/* Makes the first `count` stacks usable; false (errno set) if the system
 * refuses the memory. */
bool kemu__stack_pool_reserve(kemu__stack_pool *pool, unsigned count);
void kemu__stack_pool_release(kemu__stack_pool *pool);
/* The lowest usable address of stack i (its guard is just below). */
static inline void *kemu__stack_lo(const kemu__stack_pool *pool, unsigned i) {
  char *slot = pool->region + (size_t)i * pool->stride;
  return slot + (pool->stride - pool->stack_bytes);
}

/* ==== Launches (launch.cc) =============================================== */

/* The kernel whose emulated thread is running on this OS thread, or null
 * outside one (for the messages of aborts.cc). */
const char *kemu__running_kernel(void);

/* ==== Runtime (runtime.cc) =============================================== */

/* Reads the environment once; hipSuccess, hipErrorNotInitialized (a bad
 * setting, already reported on stderr) or hipErrorNoDevice. */
hipError_t kemu__runtime_ready(void);
/* Records `error` as this thread's last error unless it is hipSuccess. */
hipError_t kemu__record_error(hipError_t error);
bool kemu__stream_valid(hipStream_t stream);
/* True when [ptr, ptr + bytes) lies inside one live hipMalloc block. */
bool kemu__device_range(const void *ptr, size_t bytes);
/* Usable bytes per fiber stack (KILN_EMU_STACK_KB). */
size_t kemu__stack_bytes(void);
/* The registry of live hiprand generators (add or remove one). */
bool kemu__generator_register(const void *gen, bool add);
bool kemu__generator_live(const void *gen);

/* ==== Kernel attributes (attributes.cc) ================================= */

/* The emulated GPU's warp size (set in runtime.cc; warpSize in
 * hip-on-host.h): the shared memory limits follow it. */
extern "C" int kemu__warp_size_value;

/* The most dynamic shared memory a launch of kernel `func` may ask for:
 * the emulated GPU's default, or what hipFuncSetAttribute raised it to. */
size_t kemu__dyn_shared_limit(const void *func);

/* ==== Devices shared across processes (devices.cc) ======================= */

/* With KILN_EMU_STATE_DIR, physical device phys's memory is shared by
 * every process: what is free given that this process holds mine and
 * every other live process what it declared; taking want more bytes if
 * they fit (declaring mine + want at once); declaring what this process
 * holds now (after a free, or a failed allocation). Without it, only this
 * process counts. */
size_t kemu__shared_free(int phys, size_t mine, size_t total);
bool kemu__shared_take(int phys, size_t mine, size_t want, size_t total);
void kemu__shared_memory_set(int phys, size_t mine);
/* Whether phys was lost by some process (KILN_EMU_STATE_DIR), and marking
 * it so. */
bool kemu__device_lost(int phys);
void kemu__device_mark_lost(int phys);

/* ==== Random numbers (hiprand.cc) ======================================== */

/* One Philox4x32-10 block: encrypts the 128-bit counter under the 64-bit
 * key in place. Exposed for the known-answer test. */
void kemu__philox4x32_10(uint32_t ctr[4], const uint32_t key[2]);
/* The blocks of counters {b, 0} for b = first .. first + KEMU__PHILOX_BATCH
 * - 1, block j's four words at out[4 j]: the same words as that many
 * kemu__philox4x32_10 calls, eight blocks at a time in AVX2 where the CPU
 * has it. Exposed so that the test holds the two paths to each other. */
enum { KEMU__PHILOX_BATCH = 8 };
void kemu__philox_batch(unsigned long long first, const uint32_t key[2],
                        uint32_t out[4 * KEMU__PHILOX_BATCH]);
/* The scalar form of kemu__philox_batch (the fallback without AVX2). */
void kemu__philox_batch_scalar(unsigned long long first, const uint32_t key[2],
                               uint32_t out[4 * KEMU__PHILOX_BATCH]);

#endif
