/* SwiGLU: out = silu(gate) * up, elementwise over rows of F.
 *
 * Algorithm: a flat grid-stride loop over rows * F elements. Each thread
 * derives its (row, column) once with a division and then advances it by
 * the grid stride with one add and a carry, so there is no division per
 * element; rows may have different strides in gate, up and out (the fused
 * [.., 2F] input is gate and up at an offset of F with the same stride).
 * Any F, any number of rows; math in f32.
 *
 * Sigmoid never lets exp overflow: exp is only ever taken of -|v|.
 */
#include "kd.h"

#define KE_SWIGLU_BLOCK 256

__device__ __forceinline__ float ke_silu(float v) {
  if (v >= 0.0f) return v / (1.0f + expf(-v)); /* +inf / 1 = +inf */
  const float e = expf(v);                     /* in [0, 1): no overflow */
  /* e == 0 covers v = -inf, whose limit is -0 (v * 0 would be NaN). */
  return e == 0.0f ? -0.0f : v * (e / (1.0f + e));
  /* NaN fails both tests above and comes out of expf(v) as NaN. */
}

template <typename Tin, typename Tout>
__global__ void __launch_bounds__(KE_SWIGLU_BLOCK)
ke_swiglu_rows(const Tin *gate, int64_t gate_stride, const Tin *up,
               int64_t up_stride, Tout *out, int64_t out_stride,
               int64_t rows, int64_t cols) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t step_rows = step / cols, step_cols = step - step_rows * cols;
  int64_t r = i / cols, c = i - r * cols;
  while (r < rows) {
    const float g = kd_to_float(gate[r * gate_stride + c]);
    const float u = kd_to_float(up[r * up_stride + c]);
#if defined(KE_PLANTED_BUG)
    /* Planted bug (mutant build only): the original engine's form, the
     * swish on up instead of gate. */
    out[r * out_stride + c] = kd_from_float<Tout>(g * ke_silu(u));
#else
    out[r * out_stride + c] = kd_from_float<Tout>(ke_silu(g) * u);
#endif
    r += step_rows;
    c += step_cols;
    if (c >= cols) {
      c -= cols;
      r++;
    }
  }
}

extern "C" int ke__swiglu_launch(void *stream, ke_dtype in_dtype,
                                 const void *gate, int64_t gate_stride,
                                 const void *up, int64_t up_stride,
                                 ke_dtype out_dtype, void *out,
                                 int64_t out_stride, int64_t rows,
                                 int64_t cols) {
  const int64_t n = rows * cols;
  const int64_t max_grid = (int64_t)1 << 16;
  int64_t blocks = (n + KE_SWIGLU_BLOCK - 1) / KE_SWIGLU_BLOCK;
  if (blocks > max_grid) blocks = max_grid;
  dim3 grid((unsigned)blocks), block(KE_SWIGLU_BLOCK);
  hipStream_t s = (hipStream_t)stream;
  KD_DISPATCH_IN(in_dtype, Tin,
    KD_DISPATCH_IN(out_dtype, Tout,
      hipLaunchKernelGGL((ke_swiglu_rows<Tin, Tout>), grid, block, 0, s,
                         (const Tin *)gate, gate_stride, (const Tin *)up,
                         up_stride, (Tout *)out, out_stride, rows, cols);
      return (int)hipGetLastError()))
  return (int)hipErrorInvalidValue;
}
