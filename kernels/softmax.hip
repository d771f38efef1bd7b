/* Row softmax: y = softmax(scale * x) over the last dimension.
 *
 * Algorithm: one block per row (grid-stride over rows). Pass 1 reads the row
 * once, each thread keeping an online (max, sum of exp) pair over its strided
 * elements; the pairs are combined across the block with warp shuffles and
 * shared memory (block max first, then the rescaled sums). Pass 2 reads the
 * row again and writes exp(v - max) / sum. Any row length works: threads
 * stride over the row, so there is no per-thread or per-block size limit;
 * accumulation is f32 whatever the input dtype.
 *
 * Special values follow the reference (engine/src/softmax.c): a NaN or +inf
 * anywhere in the unmasked row makes the row NaN; an all -inf row gives 0.
 * Masked columns (causal) count as -inf and are never read.
 */
#include "kd.h"

#define KE_SOFTMAX_BLOCK 256

/* One element into a thread's running (max, sum). */
__device__ __forceinline__ void ke_softmax_accumulate(float v, float &m,
                                                      float &s) {
  if (v > m) {
    /* While m is -inf, s is 0 or NaN and exp(-inf) = 0 keeps it so: a NaN
     * seen before the first finite value must survive. */
    s = s * expf(m - v) + 1.0f;
    m = v;
    if (v == INFINITY) s = NAN; /* the row's result is NaN, as in PyTorch */
  } else if (v != -INFINITY) {
    s += expf(v - m); /* a NaN v makes s NaN */
  }
}

template <typename Tin, typename Tout>
__global__ void __launch_bounds__(KE_SOFTMAX_BLOCK)
ke_softmax_rows(const Tin *__restrict__ x, int64_t x_stride,
                Tout *__restrict__ y, int64_t y_stride, int64_t rows,
                int64_t cols, float scale, int causal, int64_t sq,
                int64_t offset) {
  __shared__ float scratch[KD_REDUCE_SCRATCH];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Tin *xr = x + r * x_stride;
    Tout *yr = y + r * y_stride;
    int64_t limit = cols; /* columns at or past limit are masked */
    if (causal) {
      limit = r % sq + offset + 1;
      limit = limit < 0 ? 0 : (limit > cols ? cols : limit);
    }
    int64_t end = limit;
#if defined(KE_PLANTED_BUG)
    /* Planted bug, built only into the mutant library that proves the
     * tests can fail: the row's last partial warp never reaches the sum. */
    end = limit - limit % warpSize;
#endif
    float m = -INFINITY, s = 0.0f;
    for (int64_t c = threadIdx.x; c < end; c += blockDim.x)
      ke_softmax_accumulate(scale * kd_to_float(xr[c]), m, s);

    const float row_max = kd_block_reduce(m, kd_max_op(), -INFINITY, scratch);
    /* Rescale each thread's sum to the row max. A thread that saw only -inf
     * (or only NaN) keeps its 0 (or NaN) as is: exp(-inf - -inf) is NaN. */
    const float mine = m == -INFINITY ? s : s * expf(m - row_max);
    const float row_sum = kd_block_reduce(mine, kd_sum_op(), 0.0f, scratch);

    const bool poisoned = isnan(row_sum);
    const bool empty = row_max == -INFINITY;
    const float inv = 1.0f / row_sum;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      float out;
      if (poisoned) out = NAN;
      else if (empty || c >= limit) out = 0.0f;
      else out = expf(scale * kd_to_float(xr[c]) - row_max) * inv;
      yr[c] = kd_from_float<Tout>(out);
    }
  }
}

template <typename Tin, typename Tout>
static int ke_softmax_launch_typed(hipStream_t stream, const void *x,
                                   int64_t xs, void *y, int64_t ys,
                                   int64_t rows, int64_t cols, float scale,
                                   int causal, int64_t sq, int64_t offset) {
  const int64_t max_grid = (int64_t)1 << 20;
  dim3 grid((unsigned)(rows < max_grid ? rows : max_grid));
  dim3 block(KE_SOFTMAX_BLOCK);
  hipLaunchKernelGGL((ke_softmax_rows<Tin, Tout>), grid, block, 0, stream,
                     (const Tin *)x, xs, (Tout *)y, ys, rows, cols, scale,
                     causal, sq, offset);
  return (int)hipGetLastError();
}

extern "C" int ke__softmax_launch(void *stream, ke_dtype in_dtype,
                                  const void *x, int64_t x_row_stride,
                                  ke_dtype out_dtype, void *y,
                                  int64_t y_row_stride, int64_t rows,
                                  int64_t cols, float scale, int causal,
                                  int64_t sq, int64_t causal_offset) {
  hipStream_t s = (hipStream_t)stream;
  KD_DISPATCH_IN(in_dtype, Tin,
    KD_DISPATCH_IN(out_dtype, Tout,
      return ke_softmax_launch_typed<Tin, Tout>(s, x, x_row_stride, y,
                                                y_row_stride, rows, cols,
                                                scale, causal, sq,
                                                causal_offset)))
  return (int)hipErrorInvalidValue;
}
