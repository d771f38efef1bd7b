/* RMSNorm: y = x * rsqrt(mean(x^2) + eps) * w over the last dimension, with
 * an optional fused residual add written back into x.
 *
 * Algorithm (vector kernel, every row start of x, residual, y and w on a
 * 16-byte boundary): a row goes to one warp when it is short (at most
 * KE_RMS_WARP_COLS elements: warp shuffles only, no block barrier, a block
 * of 256 threads serves several rows) or to one block of 64 to 512 threads
 * when it is longer. Each thread takes KD_VEC-element chunks (16-byte loads,
 * several outstanding per thread) plus at most one element of the row's
 * last partial chunk, keeps up to KE_RMS_VPT chunks in registers and sums
 * their squares in f32; the group reduces; the same registers are then
 * scaled and stored. So DRAM sees x (and residual) read once and y (and x,
 * when fused) written once. With the residual, x + residual is rounded to
 * x's dtype, stored, and that rounded value is what is normalised. Rows too
 * long for the registers (over KE_RMS_VPT * 512 chunks: 16384 elements) are
 * read twice, the second time mostly from L2.
 *
 * Scalar kernel (any other alignment, e.g. odd row strides): one block per
 * row, threads striding over elements, two passes over the row.
 *
 * Pointers are not __restrict__: y may be x (in place), and pass 2 reads
 * back x as pass 1 wrote it.
 */
#include "arch/kd.h"

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
    /* Planted bug (arch/kd.h): eps added after the square root, a classic slip
     * that only shows on rows of small values. */
    const float inv = KD_PLANTED ? 1.0f / (sqrtf(total / (float)cols) + eps)
                                 : 1.0f / sqrtf(total / (float)cols + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float wv = w ? kd_to_float(w[c]) : 1.0f;
      yr[c] = kd_from_float<Ty>(kd_to_float(xr[c]) * inv * wv);
    }
  }
}

/* Chunks per thread kept in registers, and the longest row a warp takes. */
#define KE_RMS_VPT 4
#define KE_RMS_WARP_COLS 1024
#define KE_RMS_WARP_BLOCK 256
/* Largest block of the vector kernel: at 1024 threads the compiler would
 * have 64 registers per thread and spill the cached chunks. */
#define KE_RMS_VEC_BLOCK 512

template <typename Tx, typename Tw, typename Ty>
__global__ void __launch_bounds__(KE_RMS_VEC_BLOCK)
ke_rmsnorm_vec(Tx *x, int64_t x_stride, const Tx *res, int64_t res_stride,
               const Tw *w, Ty *y, int64_t y_stride, int64_t rows,
               int64_t cols, float eps, bool per_warp) {
  __shared__ float scratch[KD_REDUCE_SCRATCH];
  const kd_row_group g = kd_row_group_make(per_warp);
  const int64_t nvec = cols / KD_VEC;
  const int64_t tail0 = nvec * KD_VEC; /* first element of the tail */
  const int tail = (int)(cols - tail0);
  const bool cached = nvec <= (int64_t)KE_RMS_VPT * g.size;
  for (int64_t r = g.first; r < rows; r += g.step) {
    Tx *xr = x + r * x_stride;
    const Tx *rr = res ? res + r * res_stride : nullptr;
    Ty *yr = y + r * y_stride;
    float v[KE_RMS_VPT][KD_VEC];
    float tv = 0.0f; /* this thread's tail element, if any */
    float ss = 0.0f;
    /* Pass 1: load (add and store the residual sum), sum squares. In the
     * cached case each thread's chunks are g.rank + k * g.size, k < VPT;
     * otherwise the same loop runs over the whole row unrolled by VPT. */
    for (int64_t base = 0; base < nvec; base += (int64_t)KE_RMS_VPT * g.size) {
KD_UNROLL
      for (int k = 0; k < KE_RMS_VPT; k++) {
        const int64_t c = base + g.rank + (int64_t)k * g.size;
        if (c < nvec) kd_load_vec(xr + c * KD_VEC, v[k]);
      }
      if (rr) {
KD_UNROLL
        for (int k = 0; k < KE_RMS_VPT; k++) {
          const int64_t c = base + g.rank + (int64_t)k * g.size;
          if (c < nvec) {
            float rv[KD_VEC];
            kd_load_vec(rr + c * KD_VEC, rv);
KD_UNROLL
            for (int e = 0; e < KD_VEC; e++)
              v[k][e] = kd_round<Tx>(v[k][e] + rv[e]);
            kd_store_vec(xr + c * KD_VEC, v[k]);
          }
        }
      }
KD_UNROLL
      for (int k = 0; k < KE_RMS_VPT; k++) {
        const int64_t c = base + g.rank + (int64_t)k * g.size;
        if (c < nvec) {
KD_UNROLL
          for (int e = 0; e < KD_VEC; e++) ss += v[k][e] * v[k][e];
        }
      }
    }
    if (g.rank < tail) {
      tv = kd_to_float(xr[tail0 + g.rank]);
      if (rr) {
        const Tx sum = kd_from_float<Tx>(tv + kd_to_float(rr[tail0 + g.rank]));
        xr[tail0 + g.rank] = sum;
        tv = kd_to_float(sum);
      }
      ss += tv * tv;
    }
    const float total = kd_group_reduce(g, ss, kd_sum_op(), 0.0f, scratch);
    const float inv = KD_PLANTED ? 1.0f / (sqrtf(total / (float)cols) + eps)
                                 : 1.0f / sqrtf(total / (float)cols + eps);
    /* Pass 2: scale and store; re-read x only when it did not fit. */
    for (int64_t base = 0; base < nvec; base += (int64_t)KE_RMS_VPT * g.size) {
KD_UNROLL
      for (int k = 0; k < KE_RMS_VPT; k++) {
        const int64_t c = base + g.rank + (int64_t)k * g.size;
        if (c < nvec) {
          if (!cached) kd_load_vec(xr + c * KD_VEC, v[k]);
          float wv[KD_VEC];
          if (w) kd_load_vec(w + c * KD_VEC, wv);
KD_UNROLL
          for (int e = 0; e < KD_VEC; e++)
            v[k][e] = v[k][e] * inv * (w ? wv[e] : 1.0f);
          kd_store_vec(yr + c * KD_VEC, v[k]);
        }
      }
    }
    if (g.rank < tail) {
      const float wv = w ? kd_to_float(w[tail0 + g.rank]) : 1.0f;
      yr[tail0 + g.rank] = kd_from_float<Ty>(tv * inv * wv);
    }
  }
}

/* f16/bf16 x: the same kernel, but each thread keeps its chunks of x packed
 * as loaded (one uint4: 4 registers per 8 elements where f32 values take 8)
 * and converts them again for the sum of squares and for the normalising
 * pass. With the residual, the packed chunk is the rounded sum exactly as
 * stored into x. Same math and rounding as above, bit for bit. */
template <typename T> struct ke_rmsnorm_chunk {
  uint4 u;
  __device__ __forceinline__ void get(float *f) const {
    kd_unpack2(T(), u.x, f);
    kd_unpack2(T(), u.y, f + 2);
    kd_unpack2(T(), u.z, f + 4);
    kd_unpack2(T(), u.w, f + 6);
  }
  /* Between passes: keeps the compiler from holding the converted values
   * across the reduction in place of the packed ones. */
  __device__ __forceinline__ void opaque() {
#if defined(KILN_BACKEND_HIP) && defined(__HIP_DEVICE_COMPILE__)
    asm volatile("" : "+v"(u.x), "+v"(u.y), "+v"(u.z), "+v"(u.w));
#elif defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__)
    asm volatile("" : "+r"(u.x), "+r"(u.y), "+r"(u.z), "+r"(u.w));
#endif
  }
};

template <typename Tx, typename Tw, typename Ty>
__global__ void __launch_bounds__(KE_RMS_VEC_BLOCK)
ke_rmsnorm_vec16(Tx *x, int64_t x_stride, const Tx *res, int64_t res_stride,
                 const Tw *w, Ty *y, int64_t y_stride, int64_t rows,
                 int64_t cols, float eps, bool per_warp) {
  __shared__ float scratch[KD_REDUCE_SCRATCH];
  const kd_row_group g = kd_row_group_make(per_warp);
  const int64_t nvec = cols / KD_VEC;
  const int64_t tail0 = nvec * KD_VEC; /* first element of the tail */
  const int tail = (int)(cols - tail0);
  const bool cached = nvec <= (int64_t)KE_RMS_VPT * g.size;
  for (int64_t r = g.first; r < rows; r += g.step) {
    Tx *xr = x + r * x_stride;
    const Tx *rr = res ? res + r * res_stride : nullptr;
    Ty *yr = y + r * y_stride;
    ke_rmsnorm_chunk<Tx> ch[KE_RMS_VPT];
    float tv = 0.0f; /* this thread's tail element, if any */
    float ss = 0.0f;
    /* Pass 1: load (add and store the residual sum), sum squares. */
    for (int64_t base = 0; base < nvec; base += (int64_t)KE_RMS_VPT * g.size) {
KD_UNROLL
      for (int k = 0; k < KE_RMS_VPT; k++) {
        const int64_t c = base + g.rank + (int64_t)k * g.size;
        if (c < nvec) ch[k].u = kd_ld16(xr + c * KD_VEC);
      }
      if (rr) {
KD_UNROLL
        for (int k = 0; k < KE_RMS_VPT; k++) {
          const int64_t c = base + g.rank + (int64_t)k * g.size;
          if (c < nvec) {
            float v[KD_VEC], rv[KD_VEC];
            ch[k].get(v);
            kd_load_vec(rr + c * KD_VEC, rv);
            /* kd_pack2 rounds to Tx: the packed words are the rounded sum,
             * stored and kept. */
            ch[k].u = make_uint4(kd_pack2<Tx>(v[0] + rv[0], v[1] + rv[1]),
                                 kd_pack2<Tx>(v[2] + rv[2], v[3] + rv[3]),
                                 kd_pack2<Tx>(v[4] + rv[4], v[5] + rv[5]),
                                 kd_pack2<Tx>(v[6] + rv[6], v[7] + rv[7]));
            kd_st16(xr + c * KD_VEC, ch[k].u);
          }
        }
      }
KD_UNROLL
      for (int k = 0; k < KE_RMS_VPT; k++) {
        const int64_t c = base + g.rank + (int64_t)k * g.size;
        if (c < nvec) {
          float v[KD_VEC];
          ch[k].get(v);
KD_UNROLL
          for (int e = 0; e < KD_VEC; e++) ss += v[e] * v[e];
        }
      }
    }
    if (g.rank < tail) {
      tv = kd_to_float(xr[tail0 + g.rank]);
      if (rr) {
        const Tx sum = kd_from_float<Tx>(tv + kd_to_float(rr[tail0 + g.rank]));
        xr[tail0 + g.rank] = sum;
        tv = kd_to_float(sum);
      }
      ss += tv * tv;
    }
    const float total = kd_group_reduce(g, ss, kd_sum_op(), 0.0f, scratch);
    const float inv = KD_PLANTED ? 1.0f / (sqrtf(total / (float)cols) + eps)
                                 : 1.0f / sqrtf(total / (float)cols + eps);
    /* Pass 2: convert again, scale and store; re-read x only when it did
     * not fit. */
    for (int64_t base = 0; base < nvec; base += (int64_t)KE_RMS_VPT * g.size) {
KD_UNROLL
      for (int k = 0; k < KE_RMS_VPT; k++) {
        const int64_t c = base + g.rank + (int64_t)k * g.size;
        if (c < nvec) {
          if (!cached) ch[k].u = kd_ld16(xr + c * KD_VEC);
          ch[k].opaque();
          float v[KD_VEC], wv[KD_VEC];
          ch[k].get(v);
          if (w) kd_load_vec(w + c * KD_VEC, wv);
KD_UNROLL
          for (int e = 0; e < KD_VEC; e++)
            v[e] = v[e] * inv * (w ? wv[e] : 1.0f);
          kd_store_vec(yr + c * KD_VEC, v);
        }
      }
    }
    if (g.rank < tail) {
      const float wv = w ? kd_to_float(w[tail0 + g.rank]) : 1.0f;
      yr[tail0 + g.rank] = kd_from_float<Ty>(tv * inv * wv);
    }
  }
}

template <typename Tx, typename Tw, typename Ty>
static int ke_rmsnorm_launch_typed(hipStream_t s, void *x, int64_t x_stride,
                                   const void *residual,
                                   int64_t residual_stride,
                                   const void *weight, void *y,
                                   int64_t y_stride, int64_t rows,
                                   int64_t cols, float eps) {
  const int64_t max_grid = (int64_t)1 << 20;
  const bool vec = kd_rows_vec_ok(x, rows, x_stride, sizeof(Tx)) &&
                   kd_rows_vec_ok(residual, rows, residual_stride,
                                  sizeof(Tx)) &&
                   kd_rows_vec_ok(y, rows, y_stride, sizeof(Ty)) &&
                   kd_rows_vec_ok(weight, 1, 0, sizeof(Tw));
  if (vec) {
    /* Short rows: a warp each, 256-thread blocks (4 or 8 rows). Long rows:
     * a block each, sized so each thread holds up to KE_RMS_VPT chunks. */
    const bool per_warp = cols <= KE_RMS_WARP_COLS;
    int64_t threads = KE_RMS_WARP_BLOCK, blocks;
    if (per_warp) {
      blocks = (rows + KE_RMS_WARP_BLOCK / 32 - 1) / (KE_RMS_WARP_BLOCK / 32);
    } else {
      const int64_t chunks = (cols / KD_VEC + KE_RMS_VPT - 1) / KE_RMS_VPT;
      threads = (chunks + 63) / 64 * 64;
      if (threads > KE_RMS_VEC_BLOCK) threads = KE_RMS_VEC_BLOCK;
      blocks = rows;
    }
    if (blocks > max_grid) blocks = max_grid;
    if constexpr (sizeof(Tx) == 2) /* x packed in registers */
      hipLaunchKernelGGL((ke_rmsnorm_vec16<Tx, Tw, Ty>),
                         dim3((unsigned)blocks), dim3((unsigned)threads), 0,
                         s, (Tx *)x, x_stride, (const Tx *)residual,
                         residual_stride, (const Tw *)weight, (Ty *)y,
                         y_stride, rows, cols, eps, per_warp);
    else
      hipLaunchKernelGGL((ke_rmsnorm_vec<Tx, Tw, Ty>),
                         dim3((unsigned)blocks), dim3((unsigned)threads), 0,
                         s, (Tx *)x, x_stride, (const Tx *)residual,
                         residual_stride, (const Tw *)weight, (Ty *)y,
                         y_stride, rows, cols, eps, per_warp);
    return (int)hipGetLastError();
  }
  int64_t threads = ((cols + 7) / 8 + 63) / 64 * 64;
  if (threads > KD_MAX_BLOCK) threads = KD_MAX_BLOCK;
  dim3 grid((unsigned)(rows < max_grid ? rows : max_grid));
  hipLaunchKernelGGL((ke_rmsnorm_rows<Tx, Tw, Ty>), grid,
                     dim3((unsigned)threads), 0, s, (Tx *)x, x_stride,
                     (const Tx *)residual, residual_stride,
                     (const Tw *)weight, (Ty *)y, y_stride, rows, cols, eps);
  return (int)hipGetLastError();
}

extern "C" int ke__rmsnorm_launch(void *stream, ke_dtype x_dtype, void *x,
                                  int64_t x_stride, const void *residual,
                                  int64_t residual_stride, ke_dtype w_dtype,
                                  const void *weight, ke_dtype y_dtype,
                                  void *y, int64_t y_stride, int64_t rows,
                                  int64_t cols, float eps) {
  hipStream_t s = (hipStream_t)stream;
  KD_DISPATCH_IN(x_dtype, Tx,
    KD_DISPATCH_IN(w_dtype, Tw,
      KD_DISPATCH_IN(y_dtype, Ty,
        return ke_rmsnorm_launch_typed<Tx, Tw, Ty>(
            s, x, x_stride, residual, residual_stride, weight, y, y_stride,
            rows, cols, eps))))
  return (int)hipErrorInvalidValue;
}
