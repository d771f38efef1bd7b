/* RMSNorm: y = x * rsqrt(mean(x^2) + eps) * w over the last dimension, with
 * an optional fused residual add written back into x.
 *
 * Algorithm: one block per row (grid-stride over rows), 64 to 1024 threads
 * chosen so each thread takes about 8 elements. Pass 1 reads the row (adding
 * the residual, rounding the sum to x's dtype and storing it back into x
 * when fused) and each thread sums the squares of its strided elements in
 * f32; kd_block_reduce combines them. Pass 2 reads the row again (the sum as
 * stored, by the same thread that stored it) and writes y. Any row length:
 * threads stride over the row, nothing is held in registers or shared
 * memory per element.
 *
 * Pointers are not __restrict__: y may be x (in place), and pass 2 reads
 * back x as pass 1 wrote it.
 */
#include "kd.h"

template <typename Tx, typename Tw, typename Ty>
__global__ void __launch_bounds__(KD_MAX_BLOCK)
ke_rmsnorm_rows(Tx *x, int64_t x_stride, const Tx *res, int64_t res_stride,
                const Tw *w, Ty *y, int64_t y_stride, int64_t rows,
                int64_t cols, float eps) {
  __shared__ float scratch[KD_REDUCE_SCRATCH];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    Tx *xr = x + r * x_stride;
    Ty *yr = y + r * y_stride;
    float ss = 0.0f;
    if (res) {
      const Tx *rr = res + r * res_stride;
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const Tx sum = kd_from_float<Tx>(kd_to_float(xr[c]) +
                                         kd_to_float(rr[c]));
        xr[c] = sum;
        const float v = kd_to_float(sum);
        ss += v * v;
      }
    } else {
      for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kd_to_float(xr[c]);
        ss += v * v;
      }
    }
    const float total = kd_block_reduce(ss, kd_sum_op(), 0.0f, scratch);
#if defined(KE_PLANTED_BUG)
    /* Planted bug (mutant build only): eps added after the square root, a
     * classic slip that only shows on rows of small values. */
    const float inv = 1.0f / (sqrtf(total / (float)cols) + eps);
#else
    const float inv = 1.0f / sqrtf(total / (float)cols + eps);
#endif
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float wv = w ? kd_to_float(w[c]) : 1.0f;
      yr[c] = kd_from_float<Ty>(kd_to_float(xr[c]) * inv * wv);
    }
  }
}

extern "C" int ke__rmsnorm_launch(void *stream, ke_dtype x_dtype, void *x,
                                  int64_t x_stride, const void *residual,
                                  int64_t residual_stride, ke_dtype w_dtype,
                                  const void *weight, ke_dtype y_dtype,
                                  void *y, int64_t y_stride, int64_t rows,
                                  int64_t cols, float eps) {
  int64_t threads = ((cols + 7) / 8 + 63) / 64 * 64;
  if (threads > KD_MAX_BLOCK) threads = KD_MAX_BLOCK;
  const int64_t max_grid = (int64_t)1 << 20;
  dim3 grid((unsigned)(rows < max_grid ? rows : max_grid));
  dim3 block((unsigned)threads);
  hipStream_t s = (hipStream_t)stream;
  KD_DISPATCH_IN(x_dtype, Tx,
    KD_DISPATCH_IN(w_dtype, Tw,
      KD_DISPATCH_IN(y_dtype, Ty,
        hipLaunchKernelGGL((ke_rmsnorm_rows<Tx, Tw, Ty>), grid, block, 0, s,
                           (Tx *)x, x_stride, (const Tx *)residual,
                           residual_stride, (const Tw *)weight, (Ty *)y,
                           y_stride, rows, cols, eps);
        return (int)hipGetLastError())))
  return (int)hipErrorInvalidValue;
}
