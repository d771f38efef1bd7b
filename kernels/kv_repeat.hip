/* K/V head replication: out[b, h, s, :] = in[b, h / (Hq / Hkv), s, :].
 *
 * A copy of storage values (no conversion, so every bit, NaN payloads
 * included, is kept). Vector kernel, when D is contiguous in both tensors,
 * D * size is a multiple of 16 bytes and every (b, h, s) row starts on a
 * 16-byte boundary (the usual layouts): 16-byte chunks, 4 per thread in
 * flight, grid-stride over the output's chunks with the innermost
 * dimension fastest. A chunk index is split into its (b, h) plane and the
 * offset inside it with 32-bit divisions when the chunk count allows; when
 * a plane's [S, D] is contiguous in both tensors (the common case) the
 * offset needs no further division. The source head is derived per chunk
 * from the output head.
 *
 * Scalar kernel (anything else): one thread per output element,
 * grid-stride, the index decomposed over [B, Hq, S, D]. Any size and any
 * strides; 64-bit indexing.
 */
#include "arch/kd.h"

#define KE_KV_REPEAT_BLOCK 256

template <typename T>
__global__ void __launch_bounds__(KE_KV_REPEAT_BLOCK)
ke_kv_repeat_copy(const T *__restrict__ in, T *__restrict__ out,
                  ke__kv_repeat_desc r) {
  const int64_t n = r.shape[0] * r.shape[1] * r.shape[2] * r.shape[3];
  const int64_t ratio = r.shape[1] / r.hkv;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; idx < n;
       idx += step) {
    int64_t rest = idx;
    const int64_t d = rest % r.shape[3];
    rest /= r.shape[3];
    const int64_t s = rest % r.shape[2];
    rest /= r.shape[2];
    const int64_t h = rest % r.shape[1];
    const int64_t b = rest / r.shape[1];
    out[b * r.out_stride[0] + h * r.out_stride[1] + s * r.out_stride[2] +
        d * r.out_stride[3]] =
        in[b * r.in_stride[0] + h / ratio * r.in_stride[1] +
           s * r.in_stride[2] + d * r.in_stride[3]];
  }
}

/* Input chunks in flight per thread in the vector kernel. */
#define KE_KV_REPEAT_UNROLL 4

/* I: the index type, uint32_t when every chunk index fits (cheaper
 * divisions), uint64_t otherwise. Strides here are in 16-byte chunks. */
template <typename I> struct ke_kv_repeat_chunks {
  I planes_hkv;              /* Hkv */
  I plane_chunks, row_chunks; /* S * D / V, D / V */
  I ratio;                   /* Hq / Hkv */
  int64_t in_stride[3], out_stride[3];
  bool flat;                 /* [S, D] contiguous in both */
  I n;                       /* input chunks */
};

/* Walks the *input's* chunks and writes each to its `ratio` output heads:
 * every input byte leaves DRAM once. Walking the output instead (one load
 * per output chunk) read each input plane `ratio` times; on the H100 those
 * re-reads missed L2 and the kernel moved 1.6x the bytes it had to
 * (docs/decisions/memory-bound.md). */
template <typename I>
__global__ void __launch_bounds__(KE_KV_REPEAT_BLOCK)
    ke_kv_repeat_vec(const uint4 *__restrict__ in, uint4 *__restrict__ out,
                     ke_kv_repeat_chunks<I> a) {
  const I step = (I)gridDim.x * blockDim.x;
  for (I i0 = (I)blockIdx.x * blockDim.x + threadIdx.x; i0 < a.n;
       i0 += KE_KV_REPEAT_UNROLL * step) {
    uint4 v[KE_KV_REPEAT_UNROLL];
    int64_t dst[KE_KV_REPEAT_UNROLL];
    KD_UNROLL
    for (int k = 0; k < KE_KV_REPEAT_UNROLL; k++) {
      const I i = i0 + (I)k * step;
      dst[k] = -1;
      if (i < a.n) {
        const I p = i / a.plane_chunks, q = i - p * a.plane_chunks;
        const I b = p / a.planes_hkv, h = p - b * a.planes_hkv;
        int64_t src = (int64_t)b * a.in_stride[0] + (int64_t)h * a.in_stride[1];
        int64_t d = (int64_t)b * a.out_stride[0] +
                    (int64_t)(h * a.ratio) * a.out_stride[1];
        if (a.flat) {
          src += q;
          d += q;
        } else {
          const I s = q / a.row_chunks, c = q - s * a.row_chunks;
          src += (int64_t)s * a.in_stride[2] + c;
          d += (int64_t)s * a.out_stride[2] + c;
        }
        v[k] = kd_ld16(in + src);
        dst[k] = d;
      }
    }
    for (I j = 0; j < a.ratio; j++) {
      const int64_t head = (int64_t)j * a.out_stride[1];
      KD_UNROLL
      for (int k = 0; k < KE_KV_REPEAT_UNROLL; k++)
        if (dst[k] >= 0) kd_st16(out + dst[k] + head, v[k]);
    }
  }
}

template <typename I>
static int ke_kv_repeat_vec_launch(hipStream_t stream, const void *in,
                                   void *out, const ke__kv_repeat_desc *d,
                                   int64_t chunk_elems) {
  ke_kv_repeat_chunks<I> a;
  const int64_t row_chunks = d->shape[3] / chunk_elems;
  a.planes_hkv = (I)d->hkv;
  a.row_chunks = (I)row_chunks;
  a.plane_chunks = (I)(d->shape[2] * row_chunks);
  a.ratio = (I)(d->shape[1] / d->hkv);
  for (int k = 0; k < 3; k++) {
    a.in_stride[k] = d->in_stride[k] / chunk_elems;
    a.out_stride[k] = d->out_stride[k] / chunk_elems;
  }
  a.flat = (d->shape[2] == 1 ||
            (d->in_stride[2] == d->shape[3] && d->out_stride[2] == d->shape[3]));
  a.n = (I)(d->shape[0] * d->hkv * d->shape[2] * row_chunks);
  const int64_t per_block = (int64_t)KE_KV_REPEAT_BLOCK * KE_KV_REPEAT_UNROLL;
  int64_t blocks = ((int64_t)a.n + per_block - 1) / per_block;
  if (blocks > 65536) blocks = 65536;
  hipLaunchKernelGGL(ke_kv_repeat_vec<I>, dim3((unsigned)blocks),
                     dim3(KE_KV_REPEAT_BLOCK), 0, stream, (const uint4 *)in,
                     (uint4 *)out, a);
  return (int)hipGetLastError();
}

/* The vector kernel applies: D contiguous, whole 16-byte chunks per row,
 * every row start aligned. */
static bool ke_kv_repeat_vec_ok(const void *in, const void *out,
                                const ke__kv_repeat_desc *d, size_t elem) {
  const int64_t v = 16 / (int64_t)elem;
  if ((uintptr_t)in % 16 || (uintptr_t)out % 16) return false;
  if (d->shape[3] % v != 0) return false;
  if (d->shape[3] > 1 && (d->in_stride[3] != 1 || d->out_stride[3] != 1))
    return false;
  for (int k = 0; k < 3; k++)
    if (d->in_stride[k] % v != 0 || d->out_stride[k] % v != 0) return false;
  return true;
}

extern "C" int ke__kv_repeat_launch(void *stream, ke_dtype dtype,
                                    const void *in, void *out,
                                    const ke__kv_repeat_desc *desc) {
  const int64_t n =
      desc->shape[0] * desc->shape[1] * desc->shape[2] * desc->shape[3];
  KD_DISPATCH_IN(dtype, T,
    if (ke_kv_repeat_vec_ok(in, out, desc, sizeof(T))) {
      const int64_t v = 16 / (int64_t)sizeof(T);
      if (n / v < ((int64_t)1 << 32) - KE_KV_REPEAT_UNROLL * 65536LL * 256)
        return ke_kv_repeat_vec_launch<uint32_t>((hipStream_t)stream, in,
                                                 out, desc, v);
      return ke_kv_repeat_vec_launch<uint64_t>((hipStream_t)stream, in, out,
                                               desc, v);
    })
  int64_t blocks = (n + KE_KV_REPEAT_BLOCK - 1) / KE_KV_REPEAT_BLOCK;
  if (blocks > 65536) blocks = 65536;
  KD_DISPATCH_IN(dtype, T,
    hipLaunchKernelGGL(ke_kv_repeat_copy<T>, dim3((unsigned)blocks),
                       dim3(KE_KV_REPEAT_BLOCK), 0, (hipStream_t)stream,
                       (const T *)in, (T *)out, *desc);
    return (int)hipGetLastError())
  return (int)hipErrorInvalidValue;
}
