/* HIP-on-CPU: the device side of kiln's host emulation backend.
 *
 * Kernel sources (kernels/<family>.hip) are compiled by the system g++ as
 * plain C++ with -DKILN_BACKEND_HOST and this header included (through
 * kernels/arch/kd.h). Every GPU thread of a block becomes a cooperative fiber
 * on the launching OS thread; barriers and warp operations switch between
 * fibers (launch.cc, fiber.cc). This header maps the HIP device vocabulary
 * onto that engine and provides only what kiln's kernels use: anything else
 * fails to compile, or aborts with a message naming the feature, rather
 * than half-working. See README.md beside this file for the model and its
 * limits.
 */
#ifndef KILN_HIP_ON_HOST_H
#define KILN_HIP_ON_HOST_H

#ifndef __cplusplus
#error "hip-on-host.h is the device-side header: compile kernels as C++"
#endif

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmath>
#include <cstddef>
#include <type_traits>

#include "hip-on-host-api.h"

/* ==== Qualifiers ========================================================= */

/* A kernel is an ordinary function; hipLaunchKernelGGL runs it once per
 * emulated thread. __device__ globals are ordinary globals, visible to all
 * blocks as device memory is. */
#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
/* __restrict__ is a g++ keyword already. */

/* Static shared memory: one copy per process. Launches are serialised
 * process-wide (kemu__launch holds one lock for the whole grid) and a grid
 * runs one block at a time, so every fiber of the running block sees the
 * one copy and no other block touches it meanwhile. It is neither zeroed
 * nor poisoned between blocks (it keeps the previous block's contents;
 * undefined on a GPU as well). Not thread_local: the kernels' shared
 * arrays add up to megabytes, and static TLS is allocated and cleared for
 * every thread at its start, the main thread included, which cost every
 * runner process about a millisecond before main()
 * (docs/decisions/harness-speed.md).
 * `extern __shared__` (CUDA's dynamic shared memory) does not compile: use
 * HIP_DYNAMIC_SHARED. */
#define __shared__ static

/* ==== Built-in variables ================================================= */

struct uint3 {
  unsigned int x, y, z;
};

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

/* The scheduler rewrites threadIdx and kemu__lane at every fiber switch and
 * the block variables at every block start. They are plain __thread (not
 * thread_local) so that g++ reads them directly instead of through a TLS
 * wrapper call; kernels must not assign to them. */
extern __thread uint3 threadIdx;
extern __thread uint3 blockIdx;
extern __thread dim3 blockDim;
extern __thread dim3 gridDim;
extern __thread unsigned int kemu__lane;
/* Counts the blocks this OS thread has started (per-block emulation state
 * in hopper-on-host.h knows a new block by it). */
extern __thread unsigned long kemu__block_seq;

/* warpSize is a run-time value (KILN_WARP_SIZE or kemu_set_warp_size), read
 * through a const reference so that kernels cannot assign to it. */
extern "C" int kemu__warp_size_value;
inline constexpr const int &warpSize = kemu__warp_size_value;

/* ==== Engine entry points (launch.cc) ==================================== */

void kemu__syncthreads();
void kemu__syncwarp();
/* Publishes `bits` for this lane, waits for the warp, and returns the value
 * lane `src` published (a poison pattern if that lane has exited or does
 * not exist in a partial warp). */
uint64_t kemu__warp_exchange(uint64_t bits, unsigned int src);
/* Publishes `bytes` (at most KEMU__GATHER_BYTES) of this lane's data, waits
 * for the warp, and returns every lane's record: lane l's starts at
 * table + l * KEMU__GATHER_BYTES. The table stays valid until this lane's
 * next warp operation. The emulated matrix instructions (matrix-on-host.h)
 * are built on it; `op` names the instruction in the abort message when
 * the warp is not whole. */
#define KEMU__GATHER_BYTES 32
const unsigned char *kemu__warp_gather(const char *op, const void *mine,
                                       unsigned int bytes);
/* Right after kemu__warp_gather: the warp's scratch of KEMU__SCRATCH_BYTES
 * (16-byte aligned) for what every lane derives from the same table, so
 * that it is derived once per warp instead of once per lane (the matrices
 * converted to floating point). *fill is true for the first lane of the
 * warp to ask after this gather, which must fill it before its next warp
 * operation; the others read it. It stays valid as long as the table. */
#define KEMU__SCRATCH_BYTES 4096
void *kemu__warp_scratch(bool *fill);
/* Ballot over the lanes of this warp that took part. */
uint64_t kemu__warp_ballot(int pred, uint64_t *participants);
void *kemu__dynamic_shared();
[[noreturn]] void kemu__trap();
[[noreturn]] void kemu__bad_width(const char *op, int width);

struct kemu__launch_desc {
  const char *kernel;          /* name as written at the launch site */
  const void *func;            /* the kernel's address (its attributes) */
  dim3 grid, block;
  size_t shared_bytes;
  hipStream_t stream;
  void (*body)(void *ctx);     /* runs the kernel for the current thread */
  void *ctx;
};
void kemu__launch(const kemu__launch_desc *desc);

/* ==== Synchronisation ==================================================== */

inline void __syncthreads() { kemu__syncthreads(); }
inline void __syncwarp() { kemu__syncwarp(); }
/* One OS thread runs a launch, so fences only need to stop the compiler from
 * moving memory accesses; a real fence keeps atomics honest if several OS
 * threads launch at once. */
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

/* ==== Warp operations ==================================================== */

inline unsigned int __lane_id() { return kemu__lane; }

template <class T>
inline T kemu__shfl_from(T var, unsigned int src) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "shuffle of a wide type");
  uint64_t bits = 0;
  memcpy(&bits, &var, sizeof var);
  bits = kemu__warp_exchange(bits, src);
  T out;
  memcpy(&out, &bits, sizeof out);
  return out;
}

/* width subdivides the warp into segments, as in HIP; it must be a power of
 * two no larger than warpSize (undefined on a GPU; refused here). */
inline void kemu__check_width(const char *op, int width) {
  if (width <= 0 || width > warpSize || (width & (width - 1)) != 0)
    kemu__bad_width(op, width);
}

/* The source-lane rules below are HIP's and CUDA's: __shfl takes the source
 * lane modulo width within the caller's segment; an up/down/xor partner past
 * the segment reads the caller's own value (an xor partner in an earlier
 * segment is read, as in HIP). */
inline unsigned int kemu__src_idx(int src_lane, int width) {
  kemu__check_width("__shfl", width);
  int self = (int)kemu__lane;
  return (unsigned int)((src_lane & (width - 1)) + (self & ~(width - 1)));
}
inline unsigned int kemu__src_up(unsigned int delta, int width) {
  kemu__check_width("__shfl_up", width);
  int self = (int)kemu__lane;
  long index = (long)self - (long)delta;
  return index < (self & ~(width - 1)) ? (unsigned int)self
                                       : (unsigned int)index;
}
inline unsigned int kemu__src_down(unsigned int delta, int width) {
  kemu__check_width("__shfl_down", width);
  int self = (int)kemu__lane;
  long index = (long)self + (long)delta;
  return (long)(self & (width - 1)) + (long)delta >= width
             ? (unsigned int)self
             : (unsigned int)index;
}
inline unsigned int kemu__src_xor(int lane_mask, int width) {
  kemu__check_width("__shfl_xor", width);
  int self = (int)kemu__lane;
  int index = self ^ lane_mask;
  return index >= ((self + width) & ~(width - 1)) || index < 0
             ? (unsigned int)self
             : (unsigned int)index;
}

/* One overload per type HIP provides, so that an unsupported type (a struct,
 * a half) fails to compile instead of being shuffled bytewise. */
#define KEMU__SHFL_FOR(T)                                                    \
  inline T __shfl(T var, int src_lane, int width = warpSize) {               \
    return kemu__shfl_from(var, kemu__src_idx(src_lane, width));             \
  }                                                                          \
  inline T __shfl_up(T var, unsigned int delta, int width = warpSize) {      \
    return kemu__shfl_from(var, kemu__src_up(delta, width));                 \
  }                                                                          \
  inline T __shfl_down(T var, unsigned int delta, int width = warpSize) {    \
    return kemu__shfl_from(var, kemu__src_down(delta, width));               \
  }                                                                          \
  inline T __shfl_xor(T var, int lane_mask, int width = warpSize) {          \
    return kemu__shfl_from(var, kemu__src_xor(lane_mask, width));            \
  }
KEMU__SHFL_FOR(int)
KEMU__SHFL_FOR(unsigned int)
KEMU__SHFL_FOR(long)
KEMU__SHFL_FOR(unsigned long)
KEMU__SHFL_FOR(long long)
KEMU__SHFL_FOR(unsigned long long)
KEMU__SHFL_FOR(float)
KEMU__SHFL_FOR(double)
#undef KEMU__SHFL_FOR

inline unsigned long long __ballot(int pred) {
  return kemu__warp_ballot(pred, nullptr);
}
inline int __any(int pred) { return kemu__warp_ballot(pred, nullptr) != 0; }
inline int __all(int pred) {
  uint64_t participants = 0;
  return kemu__warp_ballot(pred, &participants) == participants;
}

/* ==== Dynamic shared memory ============================================== */

/* A pointer to this launch's dynamic shared memory (the launch's shmem
 * bytes, 16-byte aligned, filled with 0xFF at every block start so a read
 * before a write sees NaN). Use it inside a function; at namespace scope
 * the trailing statement does not compile. */
#define HIP_DYNAMIC_SHARED(type, name)                                      \
  type *const name = static_cast<type *>(kemu__dynamic_shared());           \
  (void)name
#define HIP_DYNAMIC_SHARED_ATTRIBUTE

/* ==== Atomics ============================================================ */

/* Real atomics, so that kernels stay correct if several OS threads launch at
 * once. GPU atomics are relaxed; so are these. */
#define KEMU__ATOMIC_INT(T)                                                  \
  inline T atomicAdd(T *p, T v) {                                            \
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);                       \
  }                                                                          \
  inline T atomicSub(T *p, T v) {                                            \
    return __atomic_fetch_sub(p, v, __ATOMIC_RELAXED);                       \
  }                                                                          \
  inline T atomicOr(T *p, T v) {                                             \
    return __atomic_fetch_or(p, v, __ATOMIC_RELAXED);                        \
  }                                                                          \
  inline T atomicAnd(T *p, T v) {                                            \
    return __atomic_fetch_and(p, v, __ATOMIC_RELAXED);                       \
  }                                                                          \
  inline T atomicXor(T *p, T v) {                                            \
    return __atomic_fetch_xor(p, v, __ATOMIC_RELAXED);                       \
  }                                                                          \
  inline T atomicExch(T *p, T v) {                                           \
    return __atomic_exchange_n(p, v, __ATOMIC_RELAXED);                      \
  }                                                                          \
  inline T atomicCAS(T *p, T compare, T v) {                                 \
    __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED,     \
                                __ATOMIC_RELAXED);                           \
    return compare;                                                          \
  }                                                                          \
  inline T atomicMax(T *p, T v) {                                            \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                            \
    while (old < v && !__atomic_compare_exchange_n(                          \
                          p, &old, v, true, __ATOMIC_RELAXED,                \
                          __ATOMIC_RELAXED)) {                               \
    }                                                                        \
    return old;                                                              \
  }                                                                          \
  inline T atomicMin(T *p, T v) {                                            \
    T old = __atomic_load_n(p, __ATOMIC_RELAXED);                            \
    while (old > v && !__atomic_compare_exchange_n(                          \
                          p, &old, v, true, __ATOMIC_RELAXED,                \
                          __ATOMIC_RELAXED)) {                               \
    }                                                                        \
    return old;                                                              \
  }
KEMU__ATOMIC_INT(int)
KEMU__ATOMIC_INT(unsigned int)
#undef KEMU__ATOMIC_INT

inline unsigned long long atomicAdd(unsigned long long *p,
                                    unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
inline unsigned long long atomicCAS(unsigned long long *p,
                                    unsigned long long compare,
                                    unsigned long long v) {
  __atomic_compare_exchange_n(p, &compare, v, false, __ATOMIC_RELAXED,
                              __ATOMIC_RELAXED);
  return compare;
}

/* Floating-point read-modify-write through a compare-and-swap loop, as a GPU
 * without native float atomics does it. */
template <class T>
inline T kemu__atomic_fadd(T *p, T v) {
  T old;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  T want = old + v;
  while (!__atomic_compare_exchange(p, &old, &want, true, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
    want = old + v;
  return old;
}
inline float atomicAdd(float *p, float v) { return kemu__atomic_fadd(p, v); }
inline double atomicAdd(double *p, double v) {
  return kemu__atomic_fadd(p, v);
}
inline float atomicExch(float *p, float v) {
  float old;
  __atomic_exchange(p, &v, &old, __ATOMIC_RELAXED);
  return old;
}

/* ==== Math and bit intrinsics ============================================ */

/* The libm functions (expf, logf, sqrtf, fmaxf, tanhf, isnan, ...) come from
 * <math.h>/<cmath> unchanged. The fast-math intrinsics are computed exactly
 * here: results may differ from a GPU's by the intrinsic's documented error,
 * which kernel tolerances must cover anyway. */
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }

inline float __int_as_float(int v) {
  float f;
  memcpy(&f, &v, sizeof f);
  return f;
}
inline float __uint_as_float(unsigned int v) {
  float f;
  memcpy(&f, &v, sizeof f);
  return f;
}
inline int __float_as_int(float f) {
  int v;
  memcpy(&v, &f, sizeof v);
  return v;
}
inline unsigned int __float_as_uint(float f) {
  unsigned int v;
  memcpy(&v, &f, sizeof v);
  return v;
}

/* Bit counts, mostly for ballot masks. */
inline int __popc(unsigned int v) { return __builtin_popcount(v); }
inline int __popcll(unsigned long long v) { return __builtin_popcountll(v); }
inline int __ffs(int v) { return __builtin_ffs(v); }
inline int __ffsll(long long v) { return __builtin_ffsll(v); }
inline int __clz(int v) { return v ? __builtin_clz((unsigned)v) : 32; }
inline int __clzll(long long v) {
  return v ? __builtin_clzll((unsigned long long)v) : 64;
}

/* HIP and CUDA give device code same-type min/max overloads. Mixed types
 * are ambiguous here, which also makes mixed signed/unsigned comparisons a
 * compile error on the host backend. */
#define KEMU__MINMAX(T)                                                     \
  inline T min(T a, T b) { return b < a ? b : a; }                          \
  inline T max(T a, T b) { return a < b ? b : a; }
KEMU__MINMAX(int)
KEMU__MINMAX(unsigned int)
KEMU__MINMAX(long)
KEMU__MINMAX(unsigned long)
KEMU__MINMAX(long long)
KEMU__MINMAX(unsigned long long)
KEMU__MINMAX(float)
KEMU__MINMAX(double)
#undef KEMU__MINMAX

/* Aborts the process with a message naming the kernel, block and thread. */
[[noreturn]] inline void __trap() { kemu__trap(); }

/* ==== Vector types (plain aggregates, aligned as in HIP; no operators) === */

struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(8) uint2 { unsigned int x, y; };
struct alignas(16) uint4 { unsigned int x, y, z, w; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}
inline int2 make_int2(int x, int y) { return {x, y}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned int x, unsigned int y) { return {x, y}; }
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) {
  return {x, y, z};
}
inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z,
                        unsigned int w) {
  return {x, y, z, w};
}

/* ==== Launch ============================================================= */

template <class F>
void kemu__run_body(void *ctx) {
  (*static_cast<F *>(ctx))();
}

template <class... P, class... A>
void kemu__launch_kernel(const char *name, void (*kernel)(P...), dim3 grid,
                         dim3 block, size_t shared_bytes, hipStream_t stream,
                         A &&...args) {
  static_assert(sizeof...(P) == sizeof...(A),
                "hipLaunchKernelGGL: argument count differs from the "
                "kernel's parameter count");
  static_assert(!(std::is_reference<P>::value || ...),
                "a kernel cannot take reference parameters");
  /* Each emulated thread gets its own copies of the arguments, converted to
   * the parameter types exactly as a call would convert them. The launch is
   * synchronous, so capturing the caller's values by reference is safe. */
  auto body = [&]() { kernel(args...); };
  kemu__launch_desc desc = {name, (const void *)kernel, grid, block,
                            shared_bytes, stream,
                            &kemu__run_body<decltype(body)>, &body};
  kemu__launch(&desc);
}

/* hipLaunchKernelGGL(kernel, grid, block, shared_bytes, stream, args...).
 * Runs the whole grid before returning; a bad configuration sets the last
 * error (hipGetLastError) and runs nothing. Wrap a template kernel whose
 * name contains commas in parentheses or HIP_KERNEL_NAME(...). Triple
 * chevrons are not supported. */
#define hipLaunchKernelGGL(kernel, ...) \
  kemu__launch_kernel(#kernel, kernel, __VA_ARGS__)
#define HIP_KERNEL_NAME(...) __VA_ARGS__

/* ==== Matrix instructions (NVIDIA mma/ldmatrix, AMD MFMA) ================ */

#include "matrix-on-host.h"
#include "hopper-on-host.h"

#endif
