/* K/V head replication: out[b, h, s, :] = in[b, h / (Hq / Hkv), s, :].
 *
 * A strided copy of storage values (no conversion, so every bit, NaN
 * payloads included, is kept): one thread per output element, grid-stride,
 * the index decomposed over [B, Hq, S, D] with the innermost dimension
 * fastest so that neighbouring threads touch neighbouring elements of both
 * tensors in the usual layouts. Any size and any strides; 64-bit indexing.
 */
#include "kd.h"

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

extern "C" int ke__kv_repeat_launch(void *stream, ke_dtype dtype,
                                    const void *in, void *out,
                                    const ke__kv_repeat_desc *desc) {
  const int64_t n =
      desc->shape[0] * desc->shape[1] * desc->shape[2] * desc->shape[3];
  int64_t blocks = (n + KE_KV_REPEAT_BLOCK - 1) / KE_KV_REPEAT_BLOCK;
  if (blocks > 65536) blocks = 65536;
  KD_DISPATCH_IN(dtype, T,
    hipLaunchKernelGGL(ke_kv_repeat_copy<T>, dim3((unsigned)blocks),
                       dim3(KE_KV_REPEAT_BLOCK), 0, (hipStream_t)stream,
                       (const T *)in, (T *)out, *desc);
    return (int)hipGetLastError())
  return (int)hipErrorInvalidValue;
}
