/* Row softmax: y = softmax(scale * x) over the last dimension.
 *
 * Vector kernel (row starts of x and y on 16-byte boundaries): a row goes to
 * one warp when it is short (at most KE_SOFTMAX_WARP_COLS: warp shuffles
 * only, several rows per 256-thread block) or to one block of 64 to 512
 * threads when longer. Each thread loads KD_VEC-element chunks with 16-byte
 * loads (up to KE_SOFTMAX_VPT of them, all in flight at once) plus at most
 * one element of the row's last partial chunk, and keeps them in registers:
 * the group reduces the max, each thread turns its values into
 * exp(v - max) in place and the group reduces their sum, then the same
 * registers are scaled by 1 / sum and stored. DRAM sees the row read once
 * and written once, and exp is evaluated once per element. Rows too long
 * for the registers (over 16384 elements) keep an online (max, sum of exp)
 * pair per thread over the whole row, then read it again (largely from L2)
 * to write.
 *
 * Scalar kernel (any other alignment): one block of 256 threads per row,
 * the online pass then a second read-and-write pass, elements strided over
 * the threads.
 *
 * Either way any row length works and accumulation is f32 whatever the
 * input dtype.
 *
 * Special values follow the reference (engine/src/softmax.c): a NaN or +inf
 * anywhere in the unmasked row makes the row NaN; an all -inf row gives 0.
 * Masked columns (causal) count as -inf and are never read.
 */
#include "arch/kd.h"

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
    /* Planted bug (arch/kd.h): the row's last partial warp never reaches the
     * sum. */
    if (KD_PLANTED) end = limit - limit % warpSize;
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

/* Stores as the compiler writes them, not kd_st16's one-instruction form:
 * on the H100 this kernel ran at 2521 GB/s (f32) with these and 2192 with
 * kd_st16's, while RMSNorm and RoPE gained from kd_st16. */
__device__ __forceinline__ void ke_softmax_st16(void *p, uint4 v) {
#if defined(KILN_BACKEND_HOST)
  kd_st16(p, v);
#else
  *(uint4 *)p = v;
#endif
}
__device__ __forceinline__ void ke_softmax_store_vec(float *p, const float *f) {
  ke_softmax_st16(p, make_uint4(kd_f32_bits(f[0]), kd_f32_bits(f[1]),
                                kd_f32_bits(f[2]), kd_f32_bits(f[3])));
  ke_softmax_st16(p + 4, make_uint4(kd_f32_bits(f[4]), kd_f32_bits(f[5]),
                                    kd_f32_bits(f[6]), kd_f32_bits(f[7])));
}
template <typename T>
__device__ __forceinline__ void ke_softmax_store_vec(T *p, const float *f) {
  ke_softmax_st16(p, make_uint4(kd_pack2<T>(f[0], f[1]), kd_pack2<T>(f[2], f[3]),
                                kd_pack2<T>(f[4], f[5]), kd_pack2<T>(f[6], f[7])));
}

/* Chunks per thread kept in registers, the longest row a warp takes, and
 * the vector kernel's block sizes (512 at most: beyond it the compiler
 * would get 64 registers per thread and spill the cached chunks). */
#define KE_SOFTMAX_VPT 4
#define KE_SOFTMAX_WARP_COLS 1024
#define KE_SOFTMAX_WARP_BLOCK 256
#define KE_SOFTMAX_VEC_BLOCK 512

template <typename Tin, typename Tout>
__global__ void __launch_bounds__(KE_SOFTMAX_VEC_BLOCK)
ke_softmax_vec(const Tin *__restrict__ x, int64_t x_stride,
               Tout *__restrict__ y, int64_t y_stride, int64_t rows,
               int64_t cols, float scale, int causal, int64_t sq,
               int64_t offset, bool per_warp) {
  __shared__ float scratch[KD_REDUCE_SCRATCH];
  __shared__ float scratch2[2 * KD_REDUCE_SCRATCH];
  const kd_row_group g = kd_row_group_make(per_warp);
  const int64_t nvec = cols / KD_VEC;
  const int64_t tail0 = nvec * KD_VEC;
  const int tail = (int)(cols - tail0);
  const int64_t sweep = (int64_t)KE_SOFTMAX_VPT * g.size; /* chunks/pass */
  const bool cached = nvec <= sweep;
  for (int64_t r = g.first; r < rows; r += g.step) {
    const Tin *xr = x + r * x_stride;
    Tout *yr = y + r * y_stride;
    int64_t limit = cols; /* columns at or past limit are masked */
    if (causal) {
      limit = r % sq + offset + 1;
      limit = limit < 0 ? 0 : (limit > cols ? cols : limit);
    }
    int64_t end = limit;
    /* Planted bug (arch/kd.h): the row's last partial warp never reaches the
     * sum. */
    if (KD_PLANTED) end = limit - limit % warpSize;
    float v[KE_SOFTMAX_VPT][KD_VEC];
    const bool has_tail = g.rank < tail && tail0 + g.rank < end;
    float tv = has_tail ? scale * kd_to_float(xr[tail0 + g.rank]) : -INFINITY;
    float m = -INFINITY, s = 0.0f;
    if (cached) {
      /* NaN-keeping max over the cached values: a NaN or +inf anywhere
       * makes the row's max NaN or +inf, which poisons the row. */
      m = tv;
      KD_UNROLL
      for (int k = 0; k < KE_SOFTMAX_VPT; k++) {
        const int64_t c = g.rank + (int64_t)k * g.size;
        if (c < nvec && c * KD_VEC < end) {
          kd_load_vec(xr + c * KD_VEC, v[k]);
        } else {
          KD_UNROLL
          for (int e = 0; e < KD_VEC; e++) v[k][e] = 0.0f;
        }
        KD_UNROLL
        for (int e = 0; e < KD_VEC; e++) {
          const float t = scale * v[k][e];
          v[k][e] = (c < nvec && c * KD_VEC + e < end) ? t : -INFINITY;
          m = kd_max_nan(m, v[k][e]);
        }
      }
      const float row_max =
          kd_group_allreduce(g, m, kd_max_nan_op(), -INFINITY, scratch2, 0);
      const bool poisoned = isnan(row_max) || row_max == INFINITY;
      /* An all -inf row subtracts 0, so exp(-inf - 0) = 0, never
       * -inf - -inf. */
      const float mu = row_max == -INFINITY ? 0.0f : row_max;
      tv = kd_exp_for<Tout>(tv - mu);
      s = tv;
      KD_UNROLL
      for (int k = 0; k < KE_SOFTMAX_VPT; k++)
        KD_UNROLL
        for (int e = 0; e < KD_VEC; e++) {
          v[k][e] = kd_exp_for<Tout>(v[k][e] - mu);
          s += v[k][e];
        }
      const float row_sum =
          kd_group_allreduce(g, s, kd_sum_op(), 0.0f, scratch2, 1);
      /* Poisoned rows come out NaN, all -inf rows 0 (their sum is 0). */
      const bool special = poisoned || row_max == -INFINITY;
      const float fill = poisoned ? NAN : 0.0f;
      const float inv = 1.0f / row_sum;
      KD_UNROLL
      for (int k = 0; k < KE_SOFTMAX_VPT; k++) {
        const int64_t c = g.rank + (int64_t)k * g.size;
        if (c < nvec) {
          KD_UNROLL
          for (int e = 0; e < KD_VEC; e++)
            v[k][e] = special ? fill : v[k][e] * inv;
          ke_softmax_store_vec(yr + c * KD_VEC, v[k]);
        }
      }
      if (g.rank < tail)
        yr[tail0 + g.rank] = kd_from_float<Tout>(special ? fill : tv * inv);
      continue;
    }

    /* Long row: online (max, sum) over every chunk, then a second pass. */
    ke_softmax_accumulate(tv, m, s);
    for (int64_t base = g.rank; base < nvec && base * KD_VEC < end;
         base += sweep) {
      KD_UNROLL
      for (int k = 0; k < KE_SOFTMAX_VPT; k++) {
        const int64_t c = base + (int64_t)k * g.size;
        if (c < nvec && c * KD_VEC < end) kd_load_vec(xr + c * KD_VEC, v[k]);
      }
      KD_UNROLL
      for (int k = 0; k < KE_SOFTMAX_VPT; k++) {
        const int64_t c = base + (int64_t)k * g.size;
        KD_UNROLL
        for (int e = 0; e < KD_VEC; e++)
          if (c < nvec && c * KD_VEC + e < end)
            ke_softmax_accumulate(scale * v[k][e], m, s);
      }
    }
    const float row_max =
        kd_group_reduce(g, m, kd_max_op(), -INFINITY, scratch);
    const float mine = m == -INFINITY ? s : s * expf(m - row_max);
    const float row_sum = kd_group_reduce(g, mine, kd_sum_op(), 0.0f, scratch);
    const bool poisoned = isnan(row_sum);
    const bool empty = row_max == -INFINITY;
    const float inv = 1.0f / row_sum;
    for (int64_t base = g.rank; base < nvec; base += sweep) {
      KD_UNROLL
      for (int k = 0; k < KE_SOFTMAX_VPT; k++) {
        const int64_t c = base + (int64_t)k * g.size;
        if (c < nvec && c * KD_VEC < limit && !poisoned && !empty)
          kd_load_vec(xr + c * KD_VEC, v[k]);
      }
      KD_UNROLL
      for (int k = 0; k < KE_SOFTMAX_VPT; k++) {
        const int64_t c = base + (int64_t)k * g.size;
        if (c < nvec) {
          KD_UNROLL
          for (int e = 0; e < KD_VEC; e++) {
            float out;
            if (poisoned) out = NAN;
            else if (empty || c * KD_VEC + e >= limit) out = 0.0f;
            else out = expf(scale * v[k][e] - row_max) * inv;
            v[k][e] = out;
          }
          ke_softmax_store_vec(yr + c * KD_VEC, v[k]);
        }
      }
    }
    if (g.rank < tail) {
      float out;
      if (poisoned) out = NAN;
      else if (empty || tail0 + g.rank >= limit) out = 0.0f;
      else out = expf(tv - row_max) * inv;
      yr[tail0 + g.rank] = kd_from_float<Tout>(out);
    }
  }
}

/* Rows of 16-bit inputs that fit a block (up to 16384 elements): the row
 * stays in registers as its raw 16-bit words, half the registers of f32
 * values, and each pass (max, sum of exp, scaled store) converts them and
 * takes exp again. With the launch bounds below the 128-thread form fits 48
 * registers, so ten rows are resident per multiprocessor instead of five: on
 * the H100, rows of 4096 went from 68 % (f16) and 78 % (bf16) of copy to 82 %
 * (40 registers spilled and ran slower, 32 slower still), and to 99 % with
 * Full (docs/decisions/memory-bound.md). Full: no element of any row is
 * masked (no causal mask, cols a multiple of KD_VEC), so no per-element
 * select. */
#define KE_SOFTMAX16_VPT 4 /* chunks of KD_VEC per thread */

/* Hides a register's value from the optimiser, so that each pass converts
 * the raw words again instead of keeping last pass's f32 values live. */
__device__ __forceinline__ uint4 ke_softmax_opaque(uint4 v) {
#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__)
  asm volatile("" : "+r"(v.x), "+r"(v.y), "+r"(v.z), "+r"(v.w));
#elif defined(KILN_BACKEND_HIP) && defined(__HIP_DEVICE_COMPILE__)
  asm volatile("" : "+v"(v.x), "+v"(v.y), "+v"(v.z), "+v"(v.w)); /* VGPRs */
#endif
  return v;
}

template <typename Tin>
__device__ __forceinline__ void ke_softmax_unpack16(uint4 raw, float *f) {
  const uint4 w = ke_softmax_opaque(raw);
  kd_unpack2(Tin(), w.x, f);
  kd_unpack2(Tin(), w.y, f + 2);
  kd_unpack2(Tin(), w.z, f + 4);
  kd_unpack2(Tin(), w.w, f + 6);
}

template <typename Tin, typename Tout, int MaxThreads, bool Full>
__global__ void __launch_bounds__(MaxThreads, 1280 / MaxThreads)
ke_softmax_vec16(const Tin *__restrict__ x, int64_t x_stride,
                 Tout *__restrict__ y, int64_t y_stride, int64_t rows,
                 int64_t cols, float scale, int causal, int64_t sq,
                 int64_t offset) {
  constexpr int VPT = KE_SOFTMAX16_VPT;
  __shared__ float scratch2[2 * KD_REDUCE_SCRATCH];
  const int64_t nvec = cols / KD_VEC;
  const int64_t tail0 = nvec * KD_VEC;
  const int tail = (int)(cols - tail0);
  const int rank = threadIdx.x, size = blockDim.x;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const Tin *xr = x + r * x_stride;
    Tout *yr = y + r * y_stride;
    int64_t limit = cols; /* columns at or past limit are masked */
    if (causal) {
      limit = r % sq + offset + 1;
      limit = limit < 0 ? 0 : (limit > cols ? cols : limit);
    }
    int64_t end = limit;
    /* Planted bug (arch/kd.h): the row's last partial warp never reaches the
     * sum. */
    if (KD_PLANTED) end = limit - limit % warpSize;
    uint4 raw[VPT];
    int live[VPT]; /* unmasked elements of chunk k: 0 .. KD_VEC */
    KD_UNROLL
    for (int k = 0; k < VPT; k++) {
      const int64_t c = rank + (int64_t)k * size;
      const int64_t left = c < nvec ? end - c * KD_VEC : 0;
      live[k] = left <= 0 ? 0 : (left >= KD_VEC ? KD_VEC : (int)left);
      raw[k] = live[k] ? kd_ld16(xr + c * KD_VEC) : make_uint4(0, 0, 0, 0);
    }
    const bool has_tail = rank < tail && tail0 + rank < end;
    const float tv =
        has_tail ? scale * kd_to_float(xr[tail0 + rank]) : -INFINITY;
    /* Pass 1: the NaN-keeping max (two chains, for latency). */
    float m0 = tv, m1 = -INFINITY;
    KD_UNROLL
    for (int k = 0; k < VPT; k++) {
      if (Full && !live[k]) continue;
      float f[KD_VEC];
      ke_softmax_unpack16<Tin>(raw[k], f);
      KD_UNROLL
      for (int e = 0; e < KD_VEC; e += 2) {
        m0 = kd_max_nan(m0, Full || e < live[k] ? scale * f[e] : -INFINITY);
        m1 = kd_max_nan(m1,
                        Full || e + 1 < live[k] ? scale * f[e + 1] : -INFINITY);
      }
    }
    const float row_max = kd_block_allreduce(
        kd_max_nan(m0, m1), kd_max_nan_op(), -INFINITY, scratch2, 0);
    const bool poisoned = isnan(row_max) || row_max == INFINITY;
    /* An all -inf row subtracts 0: exp(-inf - 0) = 0, never -inf - -inf. */
    const float mu = row_max == -INFINITY ? 0.0f : row_max;
    /* Pass 2: the sum of exp. */
    float s0 = kd_exp_for<Tout>(tv - mu), s1 = 0.0f;
    KD_UNROLL
    for (int k = 0; k < VPT; k++) {
      if (Full && !live[k]) continue;
      float f[KD_VEC];
      ke_softmax_unpack16<Tin>(raw[k], f);
      KD_UNROLL
      for (int e = 0; e < KD_VEC; e += 2) {
        const float a = kd_exp_for<Tout>(scale * f[e] - mu);
        const float b = kd_exp_for<Tout>(scale * f[e + 1] - mu);
        s0 += Full || e < live[k] ? a : 0.0f;
        s1 += Full || e + 1 < live[k] ? b : 0.0f;
      }
    }
    const float row_sum =
        kd_block_allreduce(s0 + s1, kd_sum_op(), 0.0f, scratch2, 1);
    /* Poisoned rows come out NaN, all -inf rows 0 (their sum is 0). */
    const bool special = poisoned || row_max == -INFINITY;
    const float fill = poisoned ? NAN : 0.0f;
    const float inv = 1.0f / row_sum;
    /* Pass 3: exp again, scaled, stored; masked columns get 0. */
    KD_UNROLL
    for (int k = 0; k < VPT; k++) {
      const int64_t c = rank + (int64_t)k * size;
      if (c < nvec) {
        float f[KD_VEC];
        ke_softmax_unpack16<Tin>(raw[k], f);
        KD_UNROLL
        for (int e = 0; e < KD_VEC; e++) {
          const float v = kd_exp_for<Tout>(scale * f[e] - mu) * inv;
          f[e] = special ? fill : (Full || e < live[k] ? v : 0.0f);
        }
        ke_softmax_store_vec(yr + c * KD_VEC, f);
      }
    }
    if (rank < tail)
      yr[tail0 + rank] = kd_from_float<Tout>(
          special ? fill : kd_exp_for<Tout>(tv - mu) * inv);
  }
}

/* Launches ke_softmax_vec16 in the smallest block form the row fits;
 * false when it fits none (longer rows take ke_softmax_vec). */
template <typename Tin, typename Tout>
static bool ke_softmax_vec16_launch(hipStream_t stream, const void *x,
                                    int64_t xs, void *y, int64_t ys,
                                    int64_t rows, int64_t cols, float scale,
                                    int causal, int64_t sq, int64_t offset,
                                    int *status) {
  const int64_t chunks =
      (cols / KD_VEC + KE_SOFTMAX16_VPT - 1) / KE_SOFTMAX16_VPT;
  const int64_t threads = (chunks + 63) / 64 * 64;
  if (threads > 512) return false;
  bool full = !causal && cols % KD_VEC == 0;
  if (KD_PLANTED) full = false; /* the planted bug lives in the masked form */
  const int64_t max_grid = (int64_t)1 << 20;
  const dim3 grid((unsigned)(rows < max_grid ? rows : max_grid));
  const dim3 block((unsigned)threads);
#define KE_SOFTMAX16_GO(B, F)                                                 \
  hipLaunchKernelGGL((ke_softmax_vec16<Tin, Tout, B, F>), grid, block, 0,      \
                     stream, (const Tin *)x, xs, (Tout *)y, ys, rows, cols,   \
                     scale, causal, sq, offset)
  if (threads <= 128) {
    if (full) KE_SOFTMAX16_GO(128, true);
    else KE_SOFTMAX16_GO(128, false);
  } else {
    if (full) KE_SOFTMAX16_GO(512, true);
    else KE_SOFTMAX16_GO(512, false);
  }
#undef KE_SOFTMAX16_GO
  *status = (int)hipGetLastError();
  return true;
}

template <typename Tin, typename Tout>
static int ke_softmax_launch_typed(hipStream_t stream, const void *x,
                                   int64_t xs, void *y, int64_t ys,
                                   int64_t rows, int64_t cols, float scale,
                                   int causal, int64_t sq, int64_t offset) {
  const int64_t max_grid = (int64_t)1 << 20;
  if (kd_rows_vec_ok(x, rows, xs, sizeof(Tin)) &&
      kd_rows_vec_ok(y, rows, ys, sizeof(Tout))) {
    /* Short rows: a warp each (sized for warps of 32; at 64 the warps
     * stride over more rows). Long rows: a block each, KE_SOFTMAX_VPT
     * chunks per thread. */
    const bool per_warp = cols <= KE_SOFTMAX_WARP_COLS;
    if constexpr (kd_is16<Tin>::v) {
      int status = 0;
      if (!per_warp &&
          ke_softmax_vec16_launch<Tin, Tout>(stream, x, xs, y, ys, rows, cols,
                                             scale, causal, sq, offset,
                                             &status))
        return status;
    }
    int64_t threads = KE_SOFTMAX_WARP_BLOCK, blocks;
    if (per_warp) {
      blocks = (rows + KE_SOFTMAX_WARP_BLOCK / 32 - 1) /
               (KE_SOFTMAX_WARP_BLOCK / 32);
    } else {
      const int64_t chunks =
          (cols / KD_VEC + KE_SOFTMAX_VPT - 1) / KE_SOFTMAX_VPT;
      threads = (chunks + 63) / 64 * 64;
      if (threads > KE_SOFTMAX_VEC_BLOCK) threads = KE_SOFTMAX_VEC_BLOCK;
      blocks = rows;
    }
    if (blocks > max_grid) blocks = max_grid;
    hipLaunchKernelGGL((ke_softmax_vec<Tin, Tout>), dim3((unsigned)blocks),
                       dim3((unsigned)threads), 0, stream, (const Tin *)x,
                       xs, (Tout *)y, ys, rows, cols, scale, causal, sq,
                       offset, per_warp);
    return (int)hipGetLastError();
  }
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
