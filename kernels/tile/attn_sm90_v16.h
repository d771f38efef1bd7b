/* V in f16 for bf16 attention on the Hopper path (tile/attn_sm90.h,
 * kd_attn_sm90<T, C, TV>): the copy the kernel reads instead of bf16 V, made by
 * two launches before it into the engine's workspace. Launched by
 * tile/attn_sm90_launch.h's kd_attn_sm90_run; it stores with tile/attn_sm90.h's
 * kd_attn_sm90_put.
 */
#ifndef KILN_KERNELS_TILE_ATTN_SM90_V16_H
#define KILN_KERNELS_TILE_ATTN_SM90_V16_H

#include <float.h>

#include "tile/attn_sm90.h"

/* ---- V in f16 for bf16 inputs (kd_attn_sm90<T, C, TV>) ----
 * Two launches over V before the kernel, into the caller's workspace,
 * contiguous [B][Hkv][Sk][D]:
 *   kd_attn_sm90_v16_copy: each CH-key chunk of each (batch, kv head) rounded
 * to f16 as it is, and its largest finite |v|; kd_attn_sm90_v16_rescale: per
 * (batch, kv head), from its largest finite |v| (in [2^(e-1), 2^e)), a power of
 * two 2^s: s = 0 where e is in
 *     [-8, 15] (the copy stands: every value below 2^15, so none
 *     overflows, and f16's subnormal step 2^-24 is under 2^-15 of the
 *     largest), else s = 15 - e and the head's chunks are written again
 *     scaled by 2^s (the largest in [2^14, 2^15)).
 * So each value's f16 copy is off by at most 2^-25 2^-s absolute: under
 * 2^-16 of the head's largest |v| (bf16 keeps 8 significant bits, f16 11
 * down to 2^-14, then a fixed step of 2^-24); Inf and NaN stay what they
 * are. The first block of each head leaves 2^-s, the factor O takes
 * back, in vscale. */
enum { KD_ATTN_SM90_V16_CH = 128, KD_ATTN_SM90_V16_THREADS = 256 };

/* The workspace for V in f16, in order: the f16 copy (its bytes rounded
 * up to 16), each head's chunk maxima (kd_attn_sm90_v16_chunks of them), each
 * head's factor. */
KD_HOSTDEV int64_t kd_attn_sm90_v16_chunks(int64_t sk) {
  return (sk + KD_ATTN_SM90_V16_CH - 1) / KD_ATTN_SM90_V16_CH;
}
static inline size_t kd_attn_sm90_v16_copy_bytes(const ke__attention_desc *a) {
  return ((size_t)(a->b * a->hkv) * (size_t)a->sk * (size_t)a->d * 2 + 15) /
         16 * 16;
}
static inline size_t kd_attn_sm90_v16_bytes(const ke__attention_desc *a) {
  const size_t heads = (size_t)(a->b * a->hkv);
  return kd_attn_sm90_v16_copy_bytes(a) +
         heads * ((size_t)kd_attn_sm90_v16_chunks(a->sk) + 1) * sizeof(float);
}

/* Key j of V's (batch blockIdx.z, kv head blockIdx.y). */
__device__ __forceinline__ const kd_bf16 *
kd_attn_sm90_v16_row(const kd_bf16 *v, const ke__attention_desc &a, int64_t j) {
  return v + (int64_t)blockIdx.z * a.v_stride[0] +
         (int64_t)blockIdx.y * a.v_stride[1] + j * a.v_stride[2];
}

/* This block's chunk (blockIdx.x) of its head, times f1 f2, into v16;
 * returns the largest finite |v| it read. */
__device__ __forceinline__ float
kd_attn_sm90_v16_chunk(const kd_bf16 *v, const ke__attention_desc &a,
                       kd_half *v16, float f1, float f2) {
  const int64_t head = (int64_t)blockIdx.z * a.hkv + blockIdx.y;
  const int per = (int)(a.d / 8); /* 16-byte chunks of a key */
  const int64_t j0 = (int64_t)blockIdx.x * KD_ATTN_SM90_V16_CH;
  const int rows =
      a.sk - j0 < KD_ATTN_SM90_V16_CH ? (int)(a.sk - j0) : KD_ATTN_SM90_V16_CH;
  float mx = 0.0f;
  for (int idx = (int)threadIdx.x; idx < rows * per;
       idx += KD_ATTN_SM90_V16_THREADS) {
    const int64_t j = j0 + idx / per;
    const uint4 u = kd_ld16(kd_attn_sm90_v16_row(v, a, j) + 8 * (idx % per));
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
    uint32_t r[4];
    KD_UNROLL
    for (int i = 0; i < 4; i++) {
      kd_bf16 x0, x1;
      x0.bits = (uint16_t)(w[i] & 0xffffu);
      x1.bits = (uint16_t)(w[i] >> 16);
      const float y0 = kd_to_float(x0), y1 = kd_to_float(x1);
      if (fabsf(y0) <= FLT_MAX) mx = fmaxf(mx, fabsf(y0)); /* finite only */
      if (fabsf(y1) <= FLT_MAX) mx = fmaxf(mx, fabsf(y1));
      r[i] = kd_pack2<kd_half>(y0 * f1 * f2, y1 * f1 * f2);
    }
    kd_attn_sm90_put(v16 + (head * a.sk + j) * a.d + 8 * (idx % per),
                     make_uint4(r[0], r[1], r[2], r[3]));
  }
  return mx;
}

__global__ void __launch_bounds__(KD_ATTN_SM90_V16_THREADS)
    kd_attn_sm90_v16_copy(const kd_bf16 *__restrict__ v, ke__attention_desc a,
                          kd_half *__restrict__ v16,
                          float *__restrict__ chunk_max) {
  __shared__ float red[KD_REDUCE_SCRATCH];
  float mx = kd_attn_sm90_v16_chunk(v, a, v16, 1.0f, 1.0f);
  mx = kd_block_reduce(mx, kd_max_op(), 0.0f, red);
  const int64_t nch = kd_attn_sm90_v16_chunks(a.sk);
  if (threadIdx.x == 0)
    chunk_max[((int64_t)blockIdx.z * a.hkv + blockIdx.y) * nch + blockIdx.x] = mx;
}

__global__ void __launch_bounds__(KD_ATTN_SM90_V16_THREADS)
    kd_attn_sm90_v16_rescale(const kd_bf16 *__restrict__ v,
                             ke__attention_desc a,
                             const float *__restrict__ chunk_max,
                             kd_half *__restrict__ v16,
                             float *__restrict__ vscale) {
  __shared__ float red[KD_REDUCE_SCRATCH];
  const int64_t head = (int64_t)blockIdx.z * a.hkv + blockIdx.y;
  const int64_t nch = kd_attn_sm90_v16_chunks(a.sk);
  float mx = 0.0f;
  for (int64_t i = threadIdx.x; i < nch; i += KD_ATTN_SM90_V16_THREADS)
    mx = fmaxf(mx, chunk_max[head * nch + i]);
  mx = kd_block_reduce(mx, kd_max_op(), 0.0f, red);
  int e = 0;
  if (mx > 0.0f) frexpf(mx, &e);
  const int s = mx > 0.0f && (e < -8 || e > 15) ? 15 - e : 0;
  if (blockIdx.x == 0 && threadIdx.x == 0) vscale[head] = ldexpf(1.0f, -s);
  if (s == 0) return;
  /* The factor in two halves, each a normal f32 (|s| reaches 148). */
  kd_attn_sm90_v16_chunk(v, a, v16, ldexpf(1.0f, s / 2),
                         ldexpf(1.0f, s - s / 2));
}

/* Fills the workspace work (kd_attn_sm90_v16_bytes) from bf16 V; *v16 and
 * *vscale point into it. */
static inline int kd_attn_sm90_v16_prep(hipStream_t stream, const void *v,
                                        const ke__attention_desc *a, void *work,
                                        kd_half **v16, float **vscale) {
  const int64_t nch = kd_attn_sm90_v16_chunks(a->sk);
  *v16 = (kd_half *)work;
  float *chunk_max = (float *)((char *)work + kd_attn_sm90_v16_copy_bytes(a));
  *vscale = chunk_max + (size_t)(a->b * a->hkv) * (size_t)nch;
  const dim3 grid((unsigned)nch, (unsigned)a->hkv, (unsigned)a->b);
  hipLaunchKernelGGL(kd_attn_sm90_v16_copy, grid,
                     dim3(KD_ATTN_SM90_V16_THREADS), 0, stream,
                     (const kd_bf16 *)v, *a, *v16, chunk_max);
  hipError_t e = hipGetLastError();
  if (e != hipSuccess) return (int)e;
  hipLaunchKernelGGL(
      kd_attn_sm90_v16_rescale, grid, dim3(KD_ATTN_SM90_V16_THREADS), 0, stream,
      (const kd_bf16 *)v, *a, (const float *)chunk_max, *v16, *vscale);
  return (int)hipGetLastError();
}

#endif
