/* Device-side common header for every kernel family (prefix kd_).
 *
 * Picks the HIP implementation for the backend being built (ROCm, kiln's
 * CUDA mapping, or host emulation), then gives the kernels what they share:
 * storage types for f16/bf16, loads and stores that convert to f32, and
 * warp/block reductions written against warpSize (32 or 64), never 32.
 */
#ifndef KILN_KD_H
#define KILN_KD_H

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

#include "kd-convert.h"
#include "launch.h"

/* Storage types. f16 and bf16 travel as raw 16-bit patterns so that the
 * same source builds where the vendors' half types differ. */
struct kd_half { uint16_t bits; };
struct kd_bf16 { uint16_t bits; };

__device__ __forceinline__ float kd_to_float(float v) { return v; }
__device__ __forceinline__ float kd_to_float(kd_half v) {
  return kd_f16_bits_to_f32(v.bits);
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
  h.bits = kd_f32_to_f16_bits(v);
  return h;
}
template <> __device__ __forceinline__ kd_bf16 kd_from_float<kd_bf16>(float v) {
  kd_bf16 b;
  b.bits = kd_f32_to_bf16_bits(v);
  return b;
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

#endif
