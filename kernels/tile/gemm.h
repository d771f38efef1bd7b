/* The SIMT GEMM kernel shared by kernels/gemm.hip (f32, mixed dtypes, and
 * 16-bit inputs on a device without matrix units) and kernels/mxfp.hip
 * (f32 and f16 X against MX weights decoded as they are loaded).
 *
 * A block of 256 threads computes a BM x BN tile of C for one batch index
 * (128 x 128 by default), each thread an 8 x 8 block of it: rows
 * 4 ty + i and BM / 2 + 4 ty + i, columns 4 tx + j and BN / 2 + 4 tx + j
 * (i, j < 4; tx, ty < 16), so that every thread reads its operands from
 * shared memory as 16-byte vectors and a warp's reads are broadcasts or
 * consecutive. K is walked in slabs of BK: the block stages op(A)
 * [BM x BK] and op(B) [BK x BN] in shared memory as f32, [k][row], in one
 * of two buffers; while it multiplies one slab, each thread holds its
 * share of the next in registers as loaded (four consecutive elements at a
 * time, one vector where aligned; 16-bit values and MX codes still
 * packed), then converts it and writes it to the other buffer, so one
 * barrier per slab suffices. Out-of-range elements stage as
 * zeros and stores past M or N are skipped, so any M, N, K >= 1 works.
 *
 * Each output is one thread's in-order f32 sum over K with fused
 * multiply-add, then alpha * sum + beta * C, rounded once to C's dtype; C
 * is read only when beta != 0 and A and B only when alpha != 0. Tiles are
 * walked grid-stride in a 1-D grid (kd_gemm_tile_of), so no size limit
 * comes from the grid.
 *
 * An operand has `k_contiguous` and a `cursor<ROWS, BK>` that a thread
 * points at a tile (init), steps slab by slab (next: load) and reads as
 * f32 (values): its groups of four consecutive elements along the
 * operand's contiguous index (k when k_contiguous, else the row), zero
 * past the edges.
 */
#ifndef KILN_KERNELS_TILE_GEMM_H
#define KILN_KERNELS_TILE_GEMM_H

#include "arch/kd.h"

#define KD_GEMM_GROUP_M 8 /* tile rows per L2 group */

/* Tile t of a grid-stride walk over batch x m_tiles x n_tiles tiles, as
 * (batch, tile row, tile column): batch-major, and inside a batch in
 * groups of `group` tile rows, column by column, so that the blocks
 * running at once share their A and B tiles in L2. */
__device__ __forceinline__ void kd_gemm_tile_of_g(int64_t t, int64_t m_tiles,
                                                  int64_t n_tiles,
                                                  int64_t group, int64_t *bi,
                                                  int64_t *mt, int64_t *nt) {
  const int64_t per_batch = m_tiles * n_tiles;
  *bi = t / per_batch;
  const int64_t r = t - *bi * per_batch;
  const int64_t span = group * n_tiles;
  const int64_t first = r / span * group;
  const int64_t rows = m_tiles - first < group ? m_tiles - first : group;
  const int64_t in = r - r / span * span;
  *mt = first + in % rows;
  *nt = in / rows;
}

/* kd_gemm_tile_of_g in groups of KD_GEMM_GROUP_M tile rows. */
__device__ __forceinline__ void kd_gemm_tile_of(int64_t t, int64_t m_tiles,
                                                int64_t n_tiles, int64_t *bi,
                                                int64_t *mt, int64_t *nt) {
  kd_gemm_tile_of_g(t, m_tiles, n_tiles, KD_GEMM_GROUP_M, bi, mt, nt);
}

/* ---- Four consecutive elements ---------------------------------------- */

/* Four elements of T as raw bits: W = 4 words for f32, 2 for 16-bit
 * types (two to a word, the first in the low half). Held in registers
 * between a slab's loads and its store to shared memory, 16-bit operands
 * take half the registers of f32. */
template <typename T> struct kd_gemm_raw4 {
  static constexpr int W = sizeof(T) == 4 ? 4 : 2;
  uint32_t w[W];
};

/* raw = p[0 .. n) (0 <= n <= 4), zero bits after (+0 in every dtype); one
 * vector load when n == 4 and vec (p then 4-element aligned). */
template <typename T>
__device__ __forceinline__ void kd_gemm_ld4(const T *p, int n, bool vec,
                                            kd_gemm_raw4<T> &raw) {
  if (vec && n == 4) {
    if constexpr (sizeof(T) == 4) {
      const uint4 v = kd_ld16(p);
      raw.w[0] = v.x;
      raw.w[1] = v.y;
      raw.w[2] = v.z;
      raw.w[3] = v.w;
    } else {
#if defined(KILN_BACKEND_HOST)
      memcpy(raw.w, p, 8);
#else
      const uint2 v = *(const uint2 *)p;
      raw.w[0] = v.x;
      raw.w[1] = v.y;
#endif
    }
    return;
  }
  if constexpr (sizeof(T) == 4) {
    KD_UNROLL
    for (int i = 0; i < 4; i++) raw.w[i] = i < n ? kd_f32_bits(p[i]) : 0u;
  } else {
    KD_UNROLL
    for (int i = 0; i < 2; i++)
      raw.w[i] = (2 * i < n ? (uint32_t)p[2 * i].bits : 0u) |
                 (2 * i + 1 < n ? (uint32_t)p[2 * i + 1].bits << 16 : 0u);
  }
}

template <typename T>
__device__ __forceinline__ void kd_gemm_cvt4(const kd_gemm_raw4<T> &raw,
                                             float out[4]) {
  if constexpr (sizeof(T) == 4) {
    KD_UNROLL
    for (int i = 0; i < 4; i++) out[i] = kd_bits_f32(raw.w[i]);
  } else {
    KD_UNROLL
    for (int i = 0; i < 4; i++) {
      T e;
      e.bits = (uint16_t)(raw.w[i / 2] >> (16 * (i % 2)));
      out[i] = kd_to_float(e);
    }
  }
}

/* p[i] = v[i] (+ beta * p[i]) for i < n, rounded to T; one 16-byte
 * store for four f32 when vec and beta == 0. */
template <typename T>
__device__ __forceinline__ void kd_gemm_store4(T *p, int n, bool vec,
                                               const float v[4], float beta) {
  if (sizeof(T) == 4 && vec && n == 4 && beta == 0.0f) {
    kd_st16(p, make_uint4(kd_f32_bits(v[0]), kd_f32_bits(v[1]),
                          kd_f32_bits(v[2]), kd_f32_bits(v[3])));
    return;
  }
  KD_UNROLL
  for (int i = 0; i < 4; i++)
    if (i < n) {
      float o = v[i];
      if (beta != 0.0f) o = fmaf(beta, kd_to_float(p[i]), o);
      p[i] = kd_from_float<T>(o);
    }
}

/* Four floats of shared memory at p (16-byte aligned) as one access;
 * memcpy on the host keeps its compiler's aliasing rules intact. */
__device__ __forceinline__ float4 kd_gemm_lds4(const float *p) {
#if defined(KILN_BACKEND_HOST)
  float4 v;
  memcpy(&v, p, sizeof v);
  return v;
#else
  return *(const float4 *)p;
#endif
}
__device__ __forceinline__ void kd_gemm_sts4(float *p, const float v[4]) {
#if defined(KILN_BACKEND_HOST)
  memcpy(p, v, 16);
#else
  *(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
#endif
}

/* ---- Operands ----------------------------------------------------------- */

/* A dense f32/f16/bf16 matrix (ke__gemm_operand with its storage type):
 * element (b, r, k) at data[b * batch_stride + r * ld + k] when
 * k_contiguous, else at data[b * batch_stride + k * ld + r]. vec: base,
 * ld and batch_stride keep every group of four 4-element aligned. */
template <typename T> struct kd_gemm_dense {
  const T *data;
  int64_t ld;
  int64_t batch_stride;
  int k_contiguous;
  int vec;

  /* A thread's groups of one tile's ROWS x BK slabs, slab after slab.
   * Group g is element i = threadIdx.x + 256 g of the slab's
   * ROWS * BK / 4 groups: k-contiguous, row i / (BK / 4) at k
   * 4 (i % (BK / 4)); otherwise rows 4 (i % (ROWS / 4)) at k
   * i / (ROWS / 4). */
  template <int ROWS, int BK> struct cursor {
    static constexpr int L = ROWS * BK / (4 * 256);
    const T *p[L];
    int fixed[L]; /* k-contiguous: 1 if the row exists; else rows left */
    int kpos[L];  /* the group's k in the slab */
    int64_t step;
    int kc, vec;
    kd_gemm_raw4<T> raw[L];

    __device__ __forceinline__ void init(const kd_gemm_dense &op, int64_t b,
                                         int64_t r0, int64_t rows, int64_t) {
      const T *base = op.data + b * op.batch_stride;
      kc = op.k_contiguous;
      vec = op.vec;
      step = kc ? BK : BK * op.ld;
      KD_UNROLL
      for (int g = 0; g < L; g++) {
        const int i = (int)threadIdx.x + 256 * g;
        if (kc) {
          const int64_t r = r0 + i / (BK / 4);
          kpos[g] = 4 * (i % (BK / 4));
          fixed[g] = r < rows;
          p[g] = base + (fixed[g] ? r * op.ld : 0) + kpos[g];
        } else {
          const int64_t r = r0 + 4 * (i % (ROWS / 4)), left = rows - r;
          kpos[g] = i / (ROWS / 4);
          fixed[g] = left <= 0 ? 0 : (left < 4 ? (int)left : 4);
          p[g] = base + kpos[g] * op.ld + (fixed[g] ? r : 0);
        }
      }
    }
    /* Loads the groups of the slab at k0 (the slab after the last one),
     * zero past the edges. */
    __device__ __forceinline__ void next(int64_t k0, int64_t klen) {
      KD_UNROLL
      for (int g = 0; g < L; g++) {
        int n;
        if (kc) {
          const int64_t left = klen - (k0 + kpos[g]);
          n = !fixed[g] || left <= 0 ? 0 : (left < 4 ? (int)left : 4);
        } else {
          n = k0 + kpos[g] < klen ? fixed[g] : 0;
        }
        kd_gemm_ld4(p[g], n, vec != 0, raw[g]);
        p[g] += step;
      }
    }
    /* The loaded groups as f32. */
    __device__ __forceinline__ void values(float (*v)[4]) const {
      KD_UNROLL
      for (int g = 0; g < L; g++) kd_gemm_cvt4(raw[g], v[g]);
    }
  };
};

template <typename T>
static kd_gemm_dense<T> kd_gemm_dense_of(const void *data, int64_t ld,
                                        int64_t batch_stride,
                                        int k_contiguous) {
  const int64_t w = 4 * (int64_t)sizeof(T);
  return {(const T *)data, ld, batch_stride, k_contiguous,
          (uintptr_t)data % (uintptr_t)w == 0 && ld % 4 == 0 &&
              batch_stride % 4 == 0};
}

/* The C view of the kernels. */
template <typename Tc> struct kd_gemm_out {
  Tc *data;
  int64_t ld;
  int64_t batch_stride;
  int vec; /* base, ld, batch_stride: 16-byte stores of four f32 */
};

/* ---- The kernel ------------------------------------------------------- */

/* MIN_BLOCKS: blocks per multiprocessor the registers must allow (2 caps
 * a thread at 128 registers). A thread owns a TM x TN block (TM = BM / 16,
 * TN = BN / 16, each 8 or 16) as (TM / 4) x (TN / 4) blocks of 4 x 4 that
 * lie 64 rows or columns apart. WARP4X8: a warp's 32 threads are 4 ty x 8
 * tx (a 32 x 64 corner of the tile for 8 x 8 blocks) instead of 2 ty x 16
 * tx, so its shared-memory reads of A and B take one wavefront each. */
template <int BM_, int BN_, int BK_, int MIN_BLOCKS_ = 2, bool WARP4X8_ = false>
struct kd_gemm_cfg {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, MIN_BLOCKS = MIN_BLOCKS_;
  static constexpr bool WARP4X8 = WARP4X8_;
  static constexpr int THREADS = 256, TM = BM / 16, TN = BN / 16;
  static constexpr int PAD = 4; /* keeps rows 16-byte aligned, spreads banks */
  static_assert((TM == 8 || TM == 16) && (TN == 8 || TN == 16) &&
                    TM * TN <= 128,
                "an 8 x 8, 8 x 16 or 16 x 8 block per thread");
  static_assert(BM * BK % (4 * THREADS) == 0 && BN * BK % (4 * THREADS) == 0,
                "four elements per thread and load");
};
typedef kd_gemm_cfg<128, 128, 8> kd_gemm_default;
/* f32 x f32 on large problems (kd_gemm_run_f32): the best of the H100
 * sweep of dev/gemm-tune.cu (docs/decisions/gemm.md), 4096^3 42.4
 * TFLOP/s against the default's 40.2. */
typedef kd_gemm_cfg<256, 128, 8, 1, true> kd_gemm_f32_large;

/* Writes a fetched share into the [BK][ROWS + PAD] buffer s. */
template <int ROWS, int BK, int PAD>
__device__ __forceinline__ void kd_gemm_put(int k_contiguous,
                                            const float (*v)[4],
                                            float (*s)[ROWS + PAD]) {
  constexpr int L = ROWS * BK / (4 * 256);
  KD_UNROLL
  for (int g = 0; g < L; g++) {
    const int i = (int)threadIdx.x + 256 * g;
    if (k_contiguous) {
      const int r = i / (BK / 4), k = 4 * (i % (BK / 4));
      KD_UNROLL
      for (int j = 0; j < 4; j++) s[k + j][r] = v[g][j];
    } else {
      const int r = 4 * (i % (ROWS / 4)), k = i / (ROWS / 4);
      kd_gemm_sts4(&s[k][r], v[g]);
    }
  }
}

/* This thread's (tx, ty) in the 16 x 16 grid of its block. */
template <class Cfg> __device__ __forceinline__ void kd_gemm_thread(int *tx,
                                                                   int *ty) {
  const int tid = (int)threadIdx.x, w = tid / 32, lane = tid % 32;
  *tx = Cfg::WARP4X8 ? (w % 2) * 8 + lane % 8 : tid % 16;
  *ty = Cfg::WARP4X8 ? (w / 2) * 4 + lane / 8 : tid / 16;
}

/* acc += one staged slab: per k a TM x TN outer product from 16-byte
 * reads of A's rows 64 s + 4 ty .. + 3 and B's columns 64 s + 4 tx .. + 3. */
template <class Cfg>
__device__ __forceinline__ void kd_gemm_slab(
    float (&acc)[Cfg::TM][Cfg::TN], const float (*as)[Cfg::BM + Cfg::PAD],
    const float (*bs)[Cfg::BN + Cfg::PAD], int tx, int ty) {
  constexpr int TM = Cfg::TM, TN = Cfg::TN;
  KD_UNROLL
  for (int kk = 0; kk < Cfg::BK; kk++) {
    float av[TM], bv[TN];
    KD_UNROLL
    for (int s = 0; s < TM / 4; s++) {
      const float4 x = kd_gemm_lds4(&as[kk][64 * s + 4 * ty]);
      av[4 * s] = x.x, av[4 * s + 1] = x.y;
      av[4 * s + 2] = x.z, av[4 * s + 3] = x.w;
    }
    KD_UNROLL
    for (int s = 0; s < TN / 4; s++) {
      const float4 x = kd_gemm_lds4(&bs[kk][64 * s + 4 * tx]);
      bv[4 * s] = x.x, bv[4 * s + 1] = x.y;
      bv[4 * s + 2] = x.z, bv[4 * s + 3] = x.w;
    }
    KD_UNROLL
    for (int i = 0; i < TM; i++)
      KD_UNROLL
      for (int j = 0; j < TN; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
  }
}

/* C's tile at (bi, m0, n0) = alpha * acc (+ beta * C): row by row, each a
 * pointer and TN / 4 groups of four. */
template <class Cfg, typename Tc>
__device__ __forceinline__ void kd_gemm_epilogue(
    const float (&acc)[Cfg::TM][Cfg::TN], const kd_gemm_out<Tc> &c,
    int64_t bi, int64_t m0, int64_t n0, int64_t m, int64_t n, int tx,
    int ty, float alpha, float beta) {
  constexpr int TM = Cfg::TM, TN = Cfg::TN;
  int nlim[TN / 4];
  KD_UNROLL
  for (int s = 0; s < TN / 4; s++) {
    const int64_t lim = n - (n0 + 64 * s + 4 * tx);
    nlim[s] = lim <= 0 ? 0 : (lim < 4 ? (int)lim : 4);
  }
  Tc *cb = c.data + bi * c.batch_stride + n0 + 4 * tx;
  KD_UNROLL
  for (int i = 0; i < TM; i++) {
    const int64_t row = m0 + 64 * (i / 4) + 4 * ty + i % 4;
    if (row >= m) continue;
    Tc *p = cb + row * c.ld;
    KD_UNROLL
    for (int s = 0; s < TN / 4; s++) {
      float v[4];
      KD_UNROLL
      for (int j = 0; j < 4; j++) v[j] = alpha * acc[i][4 * s + j];
      kd_gemm_store4(p + 64 * s, nlim[s], c.vec != 0, v, beta);
    }
  }
}

template <class Cfg, class OpA, class OpB, typename Tc>
__global__ void __launch_bounds__(256, Cfg::MIN_BLOCKS)
kd_gemm_tiles(OpA a, OpB b, kd_gemm_out<Tc> c, int64_t m, int64_t n,
              int64_t k, int64_t batch, float alpha, float beta) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, PAD = Cfg::PAD;
  constexpr int TM = Cfg::TM, TN = Cfg::TN;
  constexpr int LA = BM * BK / (4 * 256), LB = BN * BK / (4 * 256);
  __shared__ float as[2][BK][BM + PAD];
  __shared__ float bs[2][BK][BN + PAD];
  int tx, ty;
  kd_gemm_thread<Cfg>(&tx, &ty);
  const int64_t m_tiles = (m + BM - 1) / BM, n_tiles = (n + BN - 1) / BN;
  const int64_t tiles = m_tiles * n_tiles * batch;

  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t bi, mt, nt;
    kd_gemm_tile_of(t, m_tiles, n_tiles, &bi, &mt, &nt);
    const int64_t m0 = mt * BM, n0 = nt * BN;
    float acc[TM][TN];
    KD_UNROLL
    for (int i = 0; i < TM; i++)
      KD_UNROLL
      for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;

    /* alpha is uniform over the grid, so every thread of the block takes
     * the same branch and the barriers stay matched. */
    if (alpha != 0.0f) {
      typename OpA::template cursor<BM, BK> ga;
      typename OpB::template cursor<BN, BK> gb;
      ga.init(a, bi, m0, m, k);
      gb.init(b, bi, n0, n, k);
      ga.next(0, k);
      gb.next(0, k);
      {
        float va[LA][4], vb[LB][4];
        ga.values(va);
        gb.values(vb);
        kd_gemm_put<BM, BK, PAD>(a.k_contiguous, va, as[0]);
        kd_gemm_put<BN, BK, PAD>(b.k_contiguous, vb, bs[0]);
      }
      __syncthreads();
      int cur = 0;
      for (int64_t k0 = 0; k0 < k; k0 += BK) {
        /* The next slab's loads are in flight during this one's multiply;
         * they wait in registers as loaded (raw 16-bit, or packed codes)
         * and are converted after it. */
        const bool more = k0 + BK < k;
        if (more) {
          ga.next(k0 + BK, k);
          gb.next(k0 + BK, k);
        }
        kd_gemm_slab<Cfg>(acc, as[cur], bs[cur], tx, ty);
        if (more) {
          /* The other buffer was last read before the previous barrier. */
          float va[LA][4], vb[LB][4];
          ga.values(va);
          gb.values(vb);
          kd_gemm_put<BM, BK, PAD>(a.k_contiguous, va, as[cur ^ 1]);
          kd_gemm_put<BN, BK, PAD>(b.k_contiguous, vb, bs[cur ^ 1]);
        }
        __syncthreads();
        cur ^= 1;
      }
    }
    kd_gemm_epilogue<Cfg, Tc>(acc, c, bi, m0, n0, m, n, tx, ty, alpha, beta);
  }
}

/* Launches kd_gemm_tiles over the whole problem on stream. */
template <class OpA, class OpB, typename Tc, class Cfg = kd_gemm_default>
static int kd_gemm_run(hipStream_t stream, OpA a, OpB b, void *c, int64_t ldc,
                       int64_t c_batch_stride, int64_t m, int64_t n,
                       int64_t k, int64_t batch, float alpha, float beta) {
  const kd_gemm_out<Tc> out = {
      (Tc *)c, ldc, c_batch_stride,
      (uintptr_t)c % 16 == 0 && ldc % 4 == 0 && c_batch_stride % 4 == 0};
  const int64_t tiles = ((m + Cfg::BM - 1) / Cfg::BM) *
                        ((n + Cfg::BN - 1) / Cfg::BN) * batch;
  const int64_t cap = (int64_t)1 << 30;
  hipLaunchKernelGGL((kd_gemm_tiles<Cfg, OpA, OpB, Tc>),
                     dim3((unsigned)(tiles < cap ? tiles : cap)), dim3(256),
                     0, stream, a, b, out, m, n, k, batch, alpha, beta);
  return (int)hipGetLastError();
}

/* kd_gemm_run for f32 x f32: the 16 x 8 blocks at one block per
 * multiprocessor where their tiles give every multiprocessor half a tile or
 * more (sms: the device's multiprocessors), else the 8 x 8 ones at two. */
template <typename Tc>
static int kd_gemm_run_f32(hipStream_t stream, kd_gemm_dense<float> a,
                           kd_gemm_dense<float> b, void *c, int64_t ldc,
                           int64_t c_batch_stride, int64_t m, int64_t n,
                           int64_t k, int64_t batch, float alpha, float beta,
                           int64_t sms) {
  typedef kd_gemm_dense<float> D;
  const int64_t large_tiles = ((m + kd_gemm_f32_large::BM - 1) /
                               kd_gemm_f32_large::BM) *
                              ((n + kd_gemm_f32_large::BN - 1) /
                               kd_gemm_f32_large::BN) *
                              batch;
  if (2 * large_tiles >= sms)
    return kd_gemm_run<D, D, Tc, kd_gemm_f32_large>(
        stream, a, b, c, ldc, c_batch_stride, m, n, k, batch, alpha, beta);
  return kd_gemm_run<D, D, Tc, kd_gemm_default>(
      stream, a, b, c, ldc, c_batch_stride, m, n, k, batch, alpha, beta);
}

#endif
