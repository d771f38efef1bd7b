/* Elementwise affine map with dtype conversion: out = convert(a * in + b).
 * The random-input path draws f32 in (0, 1] (or N(mean, std)) and uses this
 * to reach the requested range and dtype. Grid-stride, any length.
 */
#include "arch/kd.h"

template <typename Tout>
__global__ void ke_affine_convert(const float *__restrict__ in,
                                  Tout *__restrict__ out, int64_t n, float a,
                                  float b) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += step)
    out[i] = kd_from_float<Tout>(a * in[i] + b);
}

extern "C" int ke__affine_convert_launch(void *stream, const float *in,
                                         ke_dtype out_dtype, void *out,
                                         int64_t n, float a, float b) {
#if defined(KILN_BACKEND_HOST)
  /* The emulation runs a block's threads one after another, each starting
   * a fiber that costs more than its element, and a thread of a large grid
   * would sweep the whole array a stride apart, a cache miss per element:
   * one thread walks it in order and writes the same values (the loop is
   * grid-stride). Every test's random inputs come through here. */
  const int threads = 1;
  int64_t blocks = 1;
#else
  const int threads = 256;
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > 65536) blocks = 65536;
#endif
  if (blocks < 1) blocks = 1;
  KD_DISPATCH_IN(out_dtype, Tout,
    hipLaunchKernelGGL(ke_affine_convert<Tout>, dim3((unsigned)blocks),
                       dim3(threads), 0, (hipStream_t)stream, in,
                       (Tout *)out, n, a, b);
    return (int)hipGetLastError())
  return (int)hipErrorInvalidValue;
}
