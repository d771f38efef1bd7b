/* HIP device code on CUDA: what kiln's kernels use, mapped for nvcc.
 *
 * kernels/<family>.hip are compiled by nvcc as CUDA (-x cu) with this header in
 * place of <hip/hip_runtime.h>. HIP's warp operations have no mask argument
 * and a warp of warpSize lanes; on NVIDIA the warp is 32 lanes and every
 * kiln kernel calls them with the whole warp converged, so the full mask is
 * right. Extend this file when a kernel needs something new; never include
 * the ROCm HIP headers here (they do not compile against CUDA 13).
 */
#ifndef KILN_HIP_ON_CUDA_H
#define KILN_HIP_ON_CUDA_H

#include <cuda_runtime.h>
#include <stdint.h>

#include "hip-on-cuda-api.h"

#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) \
  kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)

#define HIP_DYNAMIC_SHARED(type, name) extern __shared__ type name[];

#define KEMU__FULL_MASK 0xffffffffu

template <typename T>
__device__ __forceinline__ T __shfl(T v, int src, int width = 32) {
  return __shfl_sync(KEMU__FULL_MASK, v, src, width);
}
template <typename T>
__device__ __forceinline__ T __shfl_xor(T v, int mask, int width = 32) {
  return __shfl_xor_sync(KEMU__FULL_MASK, v, mask, width);
}
template <typename T>
__device__ __forceinline__ T __shfl_down(T v, unsigned delta,
                                         int width = 32) {
  return __shfl_down_sync(KEMU__FULL_MASK, v, delta, width);
}
template <typename T>
__device__ __forceinline__ T __shfl_up(T v, unsigned delta, int width = 32) {
  return __shfl_up_sync(KEMU__FULL_MASK, v, delta, width);
}
/* CUDA still declares deprecated mask-less __ballot/__any/__all with other
 * return types, so these are macros rather than overloads. */
#define __ballot(pred) \
  ((unsigned long long)__ballot_sync(KEMU__FULL_MASK, (pred)))
#define __any(pred) __any_sync(KEMU__FULL_MASK, (pred))
#define __all(pred) __all_sync(KEMU__FULL_MASK, (pred))
__device__ __forceinline__ unsigned __lane_id() {
  return (threadIdx.x + threadIdx.y * blockDim.x +
          threadIdx.z * blockDim.x * blockDim.y) & 31u;
}

#endif
