/* Score masks: sets the masked entries of [.., Sq, Sk] scores to -inf in
 * place (causal, local window, global + local, and their compositions; see
 * kiln/attention.h for the predicate).
 *
 * Algorithm: one block of 256 threads per score row (grid-stride over rows).
 * The block turns the row's query position into the visible key ranges once
 * (the causal limit, the window [p - w, p + w], the leading global keys) and
 * its threads stride over the row, writing -inf where a key is outside them.
 * Visible entries are neither read nor written, so any value there (NaN
 * included) stays bit for bit. Any rank up to 6 and any non-overlapping
 * strides: the leading dimensions are decomposed per row.
 */
#include "arch/kd.h"

#define KE_MASK_BLOCK 256

template <typename T>
__global__ void __launch_bounds__(KE_MASK_BLOCK)
ke_mask_rows(T *__restrict__ scores, ke__mask_desc m) {
  const int64_t rows = m.matrices * m.sq;
  const T neg_inf = kd_from_float<T>(-INFINITY);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t i = r % m.sq;
    int64_t rest = r / m.sq, base = i * m.row_stride;
    for (int d = m.nlead - 1; d >= 0; d--) {
      base += rest % m.lead_shape[d] * m.lead_stride[d];
      rest /= m.lead_shape[d];
    }
    T *row = scores + base;
    const int64_t p = m.offset + i;
    /* Keys past causal_end are masked; inside, a key is visible when the
     * band is open for this query (no window, or a global query), in the
     * window, or global. */
    const int64_t causal_end = m.causal ? p + 1 : m.sk;
    const bool open = m.window < 0 || p < m.n_global;
    const int64_t lo = p - m.window, hi = p + m.window;
    for (int64_t j = threadIdx.x; j < m.sk; j += blockDim.x) {
      const bool band = open || (j >= lo && j <= hi) || j < m.n_global;
      if (j >= causal_end || !band) row[j * m.col_stride] = neg_inf;
    }
  }
}

extern "C" int ke__mask_launch(void *stream, ke_dtype dtype, void *scores,
                               const ke__mask_desc *desc) {
  const int64_t rows = desc->matrices * desc->sq;
  const int64_t max_grid = (int64_t)1 << 20;
  dim3 grid((unsigned)(rows < max_grid ? rows : max_grid));
  KD_DISPATCH_IN(dtype, T,
    hipLaunchKernelGGL(ke_mask_rows<T>, grid, dim3(KE_MASK_BLOCK), 0,
                       (hipStream_t)stream, (T *)scores, *desc);
    return (int)hipGetLastError())
  return (int)hipErrorInvalidValue;
}
