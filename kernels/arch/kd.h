/* Device-side common header for every kernel family (prefix kd_).
 *
 * Picks the HIP implementation for the backend being built (ROCm, kiln's
 * CUDA mapping, or host emulation), then gives the kernels what they share:
 * storage types for f16/bf16, loads and stores that convert to f32, and
 * warp/block reductions written against warpSize (32 or 64), never 32.
 */
#ifndef KILN_KERNELS_ARCH_KD_H
#define KILN_KERNELS_ARCH_KD_H

#if defined(KILN_BACKEND_HIP)
#include <hip/hip_runtime.h>
#elif defined(KILN_BACKEND_CUDA)
#include "port/cuda/hip-on-cuda.h"
#elif defined(KILN_BACKEND_HOST)
#include "port/host/hip-on-host.h"
#else
#error "define KILN_BACKEND_HIP, KILN_BACKEND_CUDA or KILN_BACKEND_HOST"
#endif

#include <stdint.h>
#include <string.h>

#include "arch/convert.h"
#include "contract/launch.h"

/* Planted bugs: deliberately wrong forms of a kernel that prove its tests
 * can fail (tests/planted-bug.sh, tests/kernels). They are compiled in only
 * where a run-time switch selects them, so that no test needs a second
 * build of a kernel:
 * - the host library of a build with planted bugs (KD_PLANTED_SWITCH)
 *   carries the families' bugs (KD_PLANTED) behind kd_planted_bug, which
 *   only the mutant runners set (suites/planted.c);
 * - the layer tests of tests/kernels (KD_PLANTED_NAMED) carry every bug,
 *   each behind its bit of kd_planted_named, which `--planted NAME` sets
 *   (tests/kernels/planted.h); KD_PLANT_LAYER is the one KD_PLANTED means.
 * Elsewhere both are 0 and the compiler drops them: the GPU builds' code is
 * the same as without them. */
enum {
  KD_PLANT_LAYER = 1 << 0,     /* KD_PLANTED: the layers' own (arch/mma.h, arch/sm90.h) */
  KD_PLANT_RS = 1 << 1,        /* P's A registers 1 and 2 swapped (arch/sm90.h) */
  KD_PLANT_WAIT = 1 << 2,      /* a result used before its wgmma group is waited for */
  KD_PLANT_PINGPONG = 1 << 3,  /* each consumer warpgroup on its own barrier */
  KD_PLANT_EPI = 1 << 4,       /* an epilogue buffer refilled while a store reads it */
  KD_PLANT_MX = 1 << 5,        /* MX W chunks written without the swizzle */
};
#if defined(KD_PLANTED_NAMED) && defined(KILN_BACKEND_HOST)
extern "C" unsigned kd_planted_named;   /* tests/kernels/planted.h */
#define KD_PLANTED_AT(bit) ((kd_planted_named & (unsigned)(bit)) != 0)
#define KD_PLANTED KD_PLANTED_AT(KD_PLANT_LAYER)
#define KD_PLANTED_RUNTIME 1
#elif defined(KD_PLANTED_SWITCH) && defined(KILN_BACKEND_HOST)
extern "C" int kd_planted_bug;   /* kernels/faults.hip */
#define KD_PLANTED (kd_planted_bug != 0)
#define KD_PLANTED_AT(bit) 0
#define KD_PLANTED_RUNTIME 1
#else
#define KD_PLANTED 0
#define KD_PLANTED_AT(bit) 0
#endif

/* Storage types. f16 and bf16 travel as raw 16-bit patterns so that the
 * same source builds where the vendors' half types differ. */
struct kd_half { uint16_t bits; };
struct kd_bf16 { uint16_t bits; };

/* f16 conversions in one hardware instruction on the GPUs (both round to
 * nearest even and keep subnormals, as arch/convert.h does; a NaN comes out
 * as the hardware's quiet NaN), arch/convert.h's integer code on the host. */
__device__ __forceinline__ float kd_f16_to_f32_dev(uint16_t h) {
#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#elif defined(KILN_BACKEND_HIP) && defined(__HIP_DEVICE_COMPILE__)
  return (float)__builtin_bit_cast(_Float16, h);
#else
  return kd_f16_bits_to_f32(h);
#endif
}
__device__ __forceinline__ uint16_t kd_f32_to_f16_dev(float f) {
#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__)
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#elif defined(KILN_BACKEND_HIP) && defined(__HIP_DEVICE_COMPILE__)
  return __builtin_bit_cast(uint16_t, (_Float16)f);
#else
  return kd_f32_to_f16_bits(f);
#endif
}

__device__ __forceinline__ float kd_to_float(float v) { return v; }
__device__ __forceinline__ float kd_to_float(kd_half v) {
  return kd_f16_to_f32_dev(v.bits);
}
__device__ __forceinline__ float kd_to_float(kd_bf16 v) {
  return kd_bf16_bits_to_f32(v.bits);
}

template <typename T> __device__ __forceinline__ T kd_from_float(float v);
template <> __device__ __forceinline__ float kd_from_float<float>(float v) {
  return v;
}
template <> __device__ __forceinline__ kd_half kd_from_float<kd_half>(float v) {
  kd_half h;
  h.bits = kd_f32_to_f16_dev(v);
  return h;
}
/* bf16 rounding in one instruction on NVIDIA (sm_80 and later: round to
 * nearest even, as arch/convert.h; a NaN comes out as the canonical quiet
 * NaN); the integer code elsewhere (AMD's gfx90a and gfx1030 have no bf16
 * convert instruction). */
__device__ __forceinline__ uint16_t kd_f32_to_bf16_dev(float f) {
#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint16_t b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  return b;
#else
  return kd_f32_to_bf16_bits(f);
#endif
}
template <> __device__ __forceinline__ kd_bf16 kd_from_float<kd_bf16>(float v) {
  kd_bf16 b;
  b.bits = kd_f32_to_bf16_dev(v);
  return b;
}

/* Math whose result is rounded to a 16-bit type (f16: 2^-11 relative,
 * bf16: 2^-8) may use the hardware's approximate exp, divide, sin and cos
 * (a few f32 ulps); f32 results keep libm's IEEE-accurate forms. The
 * accurate sequences cost more instructions than a 16-bit element's memory
 * time allows in SwiGLU, softmax and RoPE (docs/decisions/memory-bound.md).
 */
template <typename T> struct kd_is16 { enum { v = sizeof(T) == 2 }; };

template <typename Tout> __device__ __forceinline__ float kd_exp_for(float x) {
  if constexpr (kd_is16<Tout>::v) return __expf(x);
  else return expf(x);
}

/* 2^x for the weights of a softmax, x <= 0 after its max is taken out:
 * one MUFU.EX2 on NVIDIA (ex2.approx.ftz: within 2^-22 relative; a result
 * under 2^-126 comes out 0, which beside a row sum of at least 1 is far
 * below any tolerance). The plain ex2.approx that exp2f compiles to keeps
 * such results, at four instructions per call. exp2f elsewhere. */
__device__ __forceinline__ float kd_exp2_weight(float x) {
#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__)
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}

/* Calls F<Tin, Tout>::run(args...) for the dtype pair chosen at run time.
 * Returns KE_EDTYPE for a dtype outside f32/f16/bf16. */
#define KD_DISPATCH_IN(dt, T, ...)                                            \
  switch (dt) {                                                               \
  case KE_F32: { typedef float T; __VA_ARGS__; break; }                       \
  case KE_F16: { typedef kd_half T; __VA_ARGS__; break; }                     \
  case KE_BF16: { typedef kd_bf16 T; __VA_ARGS__; break; }                    \
  default: return KE_EDTYPE;                                                  \
  }

/* ---- Reductions ---------------------------------------------------------- */

struct kd_max_op {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return fmaxf(a, b);
  }
};
struct kd_sum_op {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return a + b;
  }
};

/* max that returns NaN when either side is NaN (fmaxf drops it): one
 * instruction on NVIDIA sm_80 and later. */
__device__ __forceinline__ float kd_max_nan(float a, float b) {
#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return (a > b || a != a) ? a : b;
#endif
}
struct kd_max_nan_op {
  __device__ __forceinline__ float operator()(float a, float b) const {
    return kd_max_nan(a, b);
  }
};

/* Butterfly over the whole warp: every lane ends with the result. The
 * block must be a whole number of warps (launchers use multiples of 64). */
template <typename Op>
__device__ __forceinline__ float kd_warp_reduce(float v, Op op) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    v = op(v, __shfl_xor(v, offset));
  return v;
}

/* Largest block the launchers use, and the scratch a block reduction needs:
 * one float per warp at the smallest warp size. */
#define KD_MAX_BLOCK 1024
#define KD_REDUCE_SCRATCH (KD_MAX_BLOCK / 32)

/* Block-wide reduction; every thread gets the result. scratch holds
 * KD_REDUCE_SCRATCH floats of __shared__ memory and may be reused right
 * after the call returns (the trailing barrier protects it). */
template <typename Op>
__device__ __forceinline__ float kd_block_reduce(float v, Op op,
                                                 float identity,
                                                 float *scratch) {
  const int lane = threadIdx.x % warpSize;
  const int warp = threadIdx.x / warpSize;
  const int nwarps = blockDim.x / warpSize;
  v = kd_warp_reduce(v, op);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < nwarps ? scratch[lane] : identity;
    w = kd_warp_reduce(w, op);
    if (lane == 0) scratch[0] = w;
  }
  __syncthreads();
  float r = scratch[0];
  __syncthreads();
  return r;
}

/* Block-wide reduction with one barrier instead of three: each warp
 * leaves its partial in scratch[slot][warp] and every thread folds all of
 * them. Calls must alternate slot 0 and 1: a slot is written again only
 * two calls later, after every thread has passed the barrier of the call
 * in between, so after every thread has read it. scratch holds
 * 2 * KD_REDUCE_SCRATCH floats of __shared__ memory. */
template <typename Op>
__device__ __forceinline__ float kd_block_allreduce(float v, Op op,
                                                    float identity,
                                                    float *scratch, int slot) {
  const int lane = threadIdx.x % warpSize;
  const int warp = threadIdx.x / warpSize;
  const int nwarps = blockDim.x / warpSize;
  float *part = scratch + slot * KD_REDUCE_SCRATCH;
  v = kd_warp_reduce(v, op);
  if (lane == 0) part[warp] = v;
  __syncthreads();
  float r = identity;
  for (int w = 0; w < nwarps; w++) r = op(r, part[w]);
  return r;
}

/* Loops over a thread's fixed-size register arrays must unroll on a GPU (or
 * the arrays go to local memory); g++ (host emulation) has no such pragma. */
#if defined(KILN_BACKEND_HOST)
#define KD_UNROLL
#else
#define KD_UNROLL _Pragma("unroll")
#endif

/* ---- 16-byte vectors ----------------------------------------------------- */

/* The vectorised kernels move rows in chunks of KD_VEC elements: one 16-byte
 * access for f16/bf16, two for f32, converted to f32 in registers. A chunk
 * pointer must be 16-byte aligned; launchers check that with kd_rows_vec_ok
 * and otherwise launch their scalar kernel. */
#define KD_VEC 8

__device__ __forceinline__ uint4 kd_ld16(const void *p) {
#if defined(KILN_BACKEND_HOST)
  uint4 v; /* memcpy: the host compiler's aliasing rules stay intact */
  memcpy(&v, p, sizeof v);
  return v;
#else
  return *(const uint4 *)p;
#endif
}

/* On NVIDIA the store is written out as one 16-byte global-memory
 * instruction (p must point to global memory): nvcc 13 split
 * `*(uint4 *)p = v` into four 4-byte stores in several row kernels (seen in
 * their PTX), which quadruples the store instructions of a bandwidth-bound
 * kernel. RMSNorm's 16-bit cases went from 77-83 % to 97 % of copy with
 * it; softmax keeps the compiler's stores (it measured slower with these). */
__device__ __forceinline__ void kd_st16(void *p, uint4 v) {
#if defined(KILN_BACKEND_HOST)
  memcpy(p, &v, sizeof v);
#elif defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__)
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};"
               :
               : "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
#else
  *(uint4 *)p = v;
#endif
}

__device__ __forceinline__ void kd_unpack4(uint4 u, float *f) {
  f[0] = kd_bits_f32(u.x);
  f[1] = kd_bits_f32(u.y);
  f[2] = kd_bits_f32(u.z);
  f[3] = kd_bits_f32(u.w);
}

/* Two 16-bit values of one 32-bit word (little-endian: low half first). */
__device__ __forceinline__ void kd_unpack2(kd_half, uint32_t w, float *f) {
  f[0] = kd_f16_to_f32_dev((uint16_t)(w & 0xffffu));
  f[1] = kd_f16_to_f32_dev((uint16_t)(w >> 16));
}
__device__ __forceinline__ void kd_unpack2(kd_bf16, uint32_t w, float *f) {
  f[0] = kd_bits_f32(w << 16);
  f[1] = kd_bits_f32(w & 0xffff0000u);
}
template <typename T>
__device__ __forceinline__ uint32_t kd_pack2(float a, float b) {
  return (uint32_t)kd_from_float<T>(a).bits |
         (uint32_t)kd_from_float<T>(b).bits << 16;
}
/* On NVIDIA sm_80 and later one instruction rounds and packs both halves
 * (same rounding and NaN as the single conversions above); cvt's x2 form
 * puts its first source in the upper half. */
#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
template <>
__device__ __forceinline__ uint32_t kd_pack2<kd_half>(float a, float b) {
  uint32_t w;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(b), "f"(a));
  return w;
}
template <>
__device__ __forceinline__ uint32_t kd_pack2<kd_bf16>(float a, float b) {
  uint32_t w;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(b), "f"(a));
  return w;
}
#endif

/* f[0..KD_VEC) = p[0..KD_VEC) as f32; p 16-byte aligned. */
__device__ __forceinline__ void kd_load_vec(const float *p, float *f) {
  kd_unpack4(kd_ld16(p), f);
  kd_unpack4(kd_ld16(p + 4), f + 4);
}
template <typename T>
__device__ __forceinline__ void kd_load_vec(const T *p, float *f) {
  const uint4 u = kd_ld16(p);
  kd_unpack2(T(), u.x, f);
  kd_unpack2(T(), u.y, f + 2);
  kd_unpack2(T(), u.z, f + 4);
  kd_unpack2(T(), u.w, f + 6);
}

/* p[0..KD_VEC) = f[0..KD_VEC) rounded to p's dtype; p 16-byte aligned. */
__device__ __forceinline__ void kd_store_vec(float *p, const float *f) {
  kd_st16(p, make_uint4(kd_f32_bits(f[0]), kd_f32_bits(f[1]),
                        kd_f32_bits(f[2]), kd_f32_bits(f[3])));
  kd_st16(p + 4, make_uint4(kd_f32_bits(f[4]), kd_f32_bits(f[5]),
                            kd_f32_bits(f[6]), kd_f32_bits(f[7])));
}
template <typename T>
__device__ __forceinline__ void kd_store_vec(T *p, const float *f) {
  kd_st16(p, make_uint4(kd_pack2<T>(f[0], f[1]), kd_pack2<T>(f[2], f[3]),
                        kd_pack2<T>(f[4], f[5]), kd_pack2<T>(f[6], f[7])));
}

/* v rounded to T and back: what a store then a load of v would give. */
template <typename T> __device__ __forceinline__ float kd_round(float v) {
  return kd_to_float(kd_from_float<T>(v));
}

/* Host side, for launchers: rows of a tensor (base p, row stride in
 * elements of elem bytes) all start on a 16-byte boundary. A NULL tensor
 * (an absent optional input) does not constrain. */
static inline bool kd_rows_vec_ok(const void *p, int64_t rows, int64_t stride,
                                  size_t elem) {
  if (!p) return true;
  if ((uintptr_t)p % 16 != 0) return false;
  return rows <= 1 || (stride * (int64_t)elem) % 16 == 0;
}

/* ---- Row groups ---------------------------------------------------------- */

/* Row kernels hand each row to a group of threads: a warp for short rows
 * (rows go to warps grid-wide; reductions are warp shuffles only, no block
 * barrier) or the whole block for long ones. Launchers pick per launch;
 * per_warp is uniform over the grid. */
struct kd_row_group {
  int64_t first, step; /* rows first, first + step, ... */
  int rank, size;      /* this thread's place in the group, group size */
  bool per_warp;
};

__device__ __forceinline__ kd_row_group kd_row_group_make(bool per_warp) {
  kd_row_group g;
  g.per_warp = per_warp;
  if (per_warp) {
    const int warps = blockDim.x / warpSize;
    g.first = (int64_t)blockIdx.x * warps + threadIdx.x / warpSize;
    g.step = (int64_t)gridDim.x * warps;
    g.rank = threadIdx.x % warpSize;
    g.size = warpSize;
  } else {
    g.first = blockIdx.x;
    g.step = gridDim.x;
    g.rank = threadIdx.x;
    g.size = blockDim.x;
  }
  return g;
}

/* Reduction over the group with kd_block_allreduce's single barrier
 * (slot alternating 0, 1 between calls); scratch as there, unused by warp
 * groups. */
template <typename Op>
__device__ __forceinline__ float kd_group_allreduce(const kd_row_group &g,
                                                    float v, Op op,
                                                    float identity,
                                                    float *scratch, int slot) {
  if (g.per_warp) return kd_warp_reduce(v, op);
  return kd_block_allreduce(v, op, identity, scratch, slot);
}

/* Reduction over the group; every thread of it gets the result. scratch
 * as for kd_block_reduce (unused by warp groups). */
template <typename Op>
__device__ __forceinline__ float kd_group_reduce(const kd_row_group &g,
                                                 float v, Op op,
                                                 float identity,
                                                 float *scratch) {
  if (g.per_warp) return kd_warp_reduce(v, op);
  return kd_block_reduce(v, op, identity, scratch);
}

#endif
