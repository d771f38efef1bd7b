/* SwiGLU: out = silu(gate) * up, elementwise over rows of F.
 *
 * Vector kernel (every row start of gate, up and out on a 16-byte
 * boundary, the usual case): the row-major [rows, F / KD_VEC] grid of
 * KD_VEC-element chunks is walked grid-stride, each thread loading
 * KE_SWIGLU_UNROLL chunks of gate and up (16-byte loads, all issued before
 * any math) per step. A thread divides its starting chunk indices into
 * (row, chunk) once and then advances them by the grid stride with an add
 * and a carry. The last F % KD_VEC elements of each row go through a small
 * scalar loop at the end. So every byte is moved once, in 16-byte accesses.
 *
 * Scalar kernel (any other alignment): a flat grid-stride loop over rows * F
 * elements with the same (row, column) carry trick. Rows may have different
 * strides in gate, up and out (the fused [.., 2F] input is gate and up at
 * an offset of F with the same stride). Any F, any number of rows; math in
 * f32.
 *
 * Sigmoid never lets exp overflow: exp is only ever taken of -|v|.
 */
#include "arch/kd.h"

#define KE_SWIGLU_BLOCK 256

__device__ __forceinline__ float ke_silu(float v) {
  if (v >= 0.0f) return v / (1.0f + expf(-v)); /* +inf / 1 = +inf */
  const float e = expf(v);                     /* in [0, 1): no overflow */
  /* e == 0 covers v = -inf, whose limit is -0 (v * 0 would be NaN). */
  return e == 0.0f ? -0.0f : v * (e / (1.0f + e));
  /* NaN fails both tests above and comes out of expf(v) as NaN. */
}

/* silu for 16-bit outputs (kd_is16): the hardware's approximate exp and
 * divide. With ke_silu's exact ones the 16-bit kernel ran at 68 % of copy
 * on the H100 while its memory pattern alone runs at copy speed. Same
 * special values as ke_silu: +inf gives +inf, -inf and very negative v
 * give -0 (v / inf), NaN stays NaN. */
__device__ __forceinline__ float ke_silu_fast(float v) {
  const float r = __fdividef(v, 1.0f + __expf(-v));
  return v == -INFINITY ? -0.0f : r;
}

template <typename Tout> __device__ __forceinline__ float ke_silu_for(float v) {
  if constexpr (kd_is16<Tout>::v) return ke_silu_fast(v);
  else return ke_silu(v);
}

template <typename Tout>
__device__ __forceinline__ float ke_swiglu_f(float g, float u) {
  /* Planted bug (arch/kd.h): the original engine's form, the swish on up
   * instead of gate. */
  return KD_PLANTED ? g * ke_silu_for<Tout>(u) : ke_silu_for<Tout>(g) * u;
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
    out[r * out_stride + c] = kd_from_float<Tout>(ke_swiglu_f<Tout>(g, u));
    r += step_rows;
    c += step_cols;
    if (c >= cols) {
      c -= cols;
      r++;
    }
  }
}

/* Chunks per thread and step: 2 whatever the dtype, so each thread does the
 * same 16 elements of math (4 16-byte loads in flight for 16-bit inputs, 8
 * for f32). Four 16-bit chunks (32 elements per thread) ran at 1.2 TB/s on
 * the H100: twice the registers and math per thread, so fewer warps to
 * hide each thread's load -> math -> store sequence. */
template <typename Tin> struct ke_swiglu_unroll {
  enum { n = 2 };
};

template <typename Tin, typename Tout>
__global__ void __launch_bounds__(KE_SWIGLU_BLOCK)
ke_swiglu_vec(const Tin *gate, int64_t gate_stride, const Tin *up,
              int64_t up_stride, Tout *out, int64_t out_stride, int64_t rows,
              int64_t cols) {
  constexpr int U = ke_swiglu_unroll<Tin>::n;
  const int64_t nvec = cols / KD_VEC;
  if (nvec > 0) {
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    /* Chunk k of this thread's step is first + k * step (+ U * step per
     * step); kept as (row, chunk) pairs advanced by (dr, dc) with a carry. */
    const int64_t dr = U * step / nvec, dc = U * step - dr * nvec;
    int64_t r[U], c[U];
    KD_UNROLL
    for (int k = 0; k < U; k++) {
      const int64_t i = first + k * step;
      r[k] = i / nvec;
      c[k] = i - r[k] * nvec;
    }
    while (r[0] < rows) {
      float g[U][KD_VEC], u[U][KD_VEC];
      KD_UNROLL
      for (int k = 0; k < U; k++)
        if (r[k] < rows) {
          kd_load_vec(gate + r[k] * gate_stride + c[k] * KD_VEC, g[k]);
          kd_load_vec(up + r[k] * up_stride + c[k] * KD_VEC, u[k]);
        }
      KD_UNROLL
      for (int k = 0; k < U; k++) {
        if (r[k] < rows) {
          KD_UNROLL
          for (int e = 0; e < KD_VEC; e++) g[k][e] = ke_swiglu_f<Tout>(g[k][e], u[k][e]);
          kd_store_vec(out + r[k] * out_stride + c[k] * KD_VEC, g[k]);
        }
        r[k] += dr;
        c[k] += dc;
        if (c[k] >= nvec) {
          c[k] -= nvec;
          r[k]++;
        }
      }
    }
  }
  /* The rows' last cols % KD_VEC elements (none when F is a multiple). */
  const int64_t tail = cols - nvec * KD_VEC;
  if (tail == 0) return;
  const int64_t n = rows * tail;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t rr = i / tail, cc = nvec * KD_VEC + (i - rr * tail);
    out[rr * out_stride + cc] =
        kd_from_float<Tout>(ke_swiglu_f<Tout>(kd_to_float(gate[rr * gate_stride + cc]),
                                        kd_to_float(up[rr * up_stride + cc])));
  }
}

template <typename Tin, typename Tout>
static int ke_swiglu_launch_typed(hipStream_t s, const void *gate,
                                  int64_t gate_stride, const void *up,
                                  int64_t up_stride, void *out,
                                  int64_t out_stride, int64_t rows,
                                  int64_t cols) {
  const int64_t max_grid = (int64_t)1 << 16;
  const bool vec = kd_rows_vec_ok(gate, rows, gate_stride, sizeof(Tin)) &&
                   kd_rows_vec_ok(up, rows, up_stride, sizeof(Tin)) &&
                   kd_rows_vec_ok(out, rows, out_stride, sizeof(Tout));
  if (vec) {
    /* One step of the grid covers every chunk when it can (each thread
     * then issues all its loads at once); the tail loop fits in it too. */
    const int64_t per_block =
        (int64_t)KE_SWIGLU_BLOCK * ke_swiglu_unroll<Tin>::n;
    const int64_t nv = rows * (cols / KD_VEC);
    const int64_t nt = rows * (cols % KD_VEC);
    int64_t blocks = (nv + per_block - 1) / per_block;
    const int64_t tail_blocks = (nt + KE_SWIGLU_BLOCK - 1) / KE_SWIGLU_BLOCK;
    if (blocks < tail_blocks) blocks = tail_blocks;
    if (blocks > max_grid) blocks = max_grid;
    hipLaunchKernelGGL((ke_swiglu_vec<Tin, Tout>), dim3((unsigned)blocks),
                       dim3(KE_SWIGLU_BLOCK), 0, s, (const Tin *)gate,
                       gate_stride, (const Tin *)up, up_stride, (Tout *)out,
                       out_stride, rows, cols);
    return (int)hipGetLastError();
  }
  const int64_t n = rows * cols;
  int64_t blocks = (n + KE_SWIGLU_BLOCK - 1) / KE_SWIGLU_BLOCK;
  if (blocks > max_grid) blocks = max_grid;
  hipLaunchKernelGGL((ke_swiglu_rows<Tin, Tout>), dim3((unsigned)blocks),
                     dim3(KE_SWIGLU_BLOCK), 0, s, (const Tin *)gate,
                     gate_stride, (const Tin *)up, up_stride, (Tout *)out,
                     out_stride, rows, cols);
  return (int)hipGetLastError();
}

extern "C" int ke__swiglu_launch(void *stream, ke_dtype in_dtype,
                                 const void *gate, int64_t gate_stride,
                                 const void *up, int64_t up_stride,
                                 ke_dtype out_dtype, void *out,
                                 int64_t out_stride, int64_t rows,
                                 int64_t cols) {
  hipStream_t s = (hipStream_t)stream;
  KD_DISPATCH_IN(in_dtype, Tin,
    KD_DISPATCH_IN(out_dtype, Tout,
      return ke_swiglu_launch_typed<Tin, Tout>(s, gate, gate_stride, up,
                                               up_stride, out, out_stride,
                                               rows, cols)))
  return (int)hipErrorInvalidValue;
}
