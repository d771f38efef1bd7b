/* The GEMM kernel on the matrix units (kernels/arch/mma.h), shared by
 * kernels/gemm.hip (dense f16/bf16 A and B) and kernels/mxfp.hip (bf16 X
 * times MX weights decoded while they are staged).
 *
 * A block computes a BM x BN tile of C for one batch index, its warps a
 * grid of WM x WN warp tiles, each a grid of 16 x 16 units of the layer.
 * K is walked in BK-deep slabs through a ring of STAGES shared-memory
 * slots: while the warps multiply slab k out of one slot, the copies of
 * slab k + STAGES - 1 are in flight into another (cp.async on NVIDIA; an
 * ordinary copy elsewhere). Each operand keeps its memory orientation in
 * shared memory, so a k-contiguous operand is a tile of [rows][k] and the
 * other a tile of [k][rows], read with the layer's plain or transposed
 * fragment loads; the four combinations cover every transpose. Out-of-range
 * rows, columns and k are staged as zeros, so any M, N, K >= 1 works.
 * Operands whose rows or base are not 16-byte aligned are staged with
 * element loads instead of 16-byte copies (same tiles, same order).
 * The epilogue computes alpha * sum + beta * C (C read only when beta != 0,
 * A and B only when alpha != 0) and rounds once to C's dtype.
 *
 * Tiles are visited grid-stride in a 1-D grid in kd_gemm_tile_of's order
 * (tile/gemm.h), so that the blocks running at once share A and B in L2.
 *
 * The sum: each output is accumulated in f32 by the matrix unit, 16 k at
 * a time, k ascending. The unit's own accumulation truncates on NVIDIA, so
 * past KD_GEMM_MMA_PROMOTE_K the configurations promote (Cfg::PROMOTE): each
 * product of 16 k starts from zero in the unit and is added to the f32 sum
 * with a round-to-nearest add (Arch::mma_promote; docs/kernels-gemm.md,
 * GEMM, Tolerances).
 */
#ifndef KILN_KERNELS_TILE_GEMM_MMA_H
#define KILN_KERNELS_TILE_GEMM_MMA_H

#include "tile/gemm.h"
#include "arch/mma.h"

/* A block tile BM x BN x BK, warp tiles WM x WN, STAGES slots. */
template <int BM_, int BN_, int BK_, int WM_, int WN_, int STAGES_>
struct kd_gemm_mma_cfg {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_;
  static constexpr int STAGES = STAGES_;
  static constexpr int WARPS_M = BM / WM, WARPS_N = BN / WN;
  static constexpr int WARPS = WARPS_M * WARPS_N;
  static_assert(BM % WM == 0 && BN % WN == 0, "warp tiles must tile the block");
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0,
                "whole 16 x 16 x 16 units");
  static_assert(STAGES >= 2, "a pipeline needs two slots");
  static constexpr bool PROMOTE = false;
};

/* Cfg with the unit's sums promoted into the f32 sum every 16 k. */
template <class Cfg> struct kd_gemm_mma_promoted : Cfg {
  static constexpr bool PROMOTE = true;
};

/* K past which the sums are promoted. Promoting costs 4 adds per mma.sync,
 * which made the 64 x 64 warp tiles issue-bound on the H100 (4096^3 bf16
 * 335 -> 252 TFLOP/s), and a longer interval needs a second set of
 * accumulators that those tiles have no registers for. Up to this K the
 * unit's truncation keeps the error within a third of the f32-sum bound
 * (0.22 measured at K = 4096, 0.49 at 16384; docs/decisions/gemm.md); past
 * it, it would grow to the bound and beyond. */
#define KD_GEMM_MMA_PROMOTE_K 8192

/* One operand's shared tile: ROWS x K_LEN slabs, k along the chunks when
 * the operand is k-contiguous (KC), else along the rows. */
template <int ROWS, int K_LEN, bool KC> struct kd_gemm_mma_side {
  static constexpr int TROWS = KC ? ROWS : K_LEN; /* tile rows */
  static constexpr int CH = (KC ? K_LEN : ROWS) / 8; /* chunks per row */
  typedef kd_mma_tile<CH> tile;
  static constexpr int ELEMS = TROWS * tile::STRIDE * 8; /* per slot */
};

/* ---- Operands --------------------------------------------------------- */

/* A dense f16/bf16 matrix: element (b, r, k) of op() at
 * data[b * batch_stride + r * ld + k] when k-contiguous, else
 * data[b * batch_stride + k * ld + r] (the layout is a template argument
 * of the kernel). */
struct kd_gemm_mma_dense {
  const uint16_t *data;
  int64_t ld;
  int64_t batch_stride;
};

/* 16-byte copies need every row start 16-byte aligned. */
static inline bool kd_gemm_mma_aligned(const void *data, int64_t ld,
                                       int64_t batch_stride) {
  return (uintptr_t)data % 16 == 0 && ld % 8 == 0 && batch_stride % 8 == 0;
}

/* C: element (b, m, n) at data[b * batch_stride + m * ld + n]. */
struct kd_gemm_mma_out {
  void *data;
  int dtype; /* ke_dtype */
  int64_t ld;
  int64_t batch_stride;
};

struct kd_gemm_mma_dims {
  int64_t m, n, k, batch;
  float alpha, beta;
};

/* A 16-byte store to shared memory (dst 16-byte aligned); memcpy on the
 * host keeps its compiler's aliasing rules intact. */
__device__ __forceinline__ void kd_gemm_mma_sts16(void *dst, uint4 v) {
#if defined(KILN_BACKEND_HOST)
  memcpy(dst, &v, 16);
#else
  *(uint4 *)dst = v;
#endif
}

/* Stages a dense operand's slabs, one slab per fetch, k ascending:
 * 16-byte copies (cp.async on NVIDIA) when VEC, else element loads for
 * operands whose rows are not 16-byte aligned. Thread t copies chunks t,
 * t + THREADS, ...: with THREADS a multiple of 8 CH, all of its chunks
 * share one chunk column c and the same swizzle, and sit every
 * THREADS / CH tile rows, so a pointer, a stride and a few integers
 * describe them all. */
template <int THREADS, int ROWS, int BK, bool KC, bool VEC>
struct kd_gemm_mma_dense_stager {
  typedef kd_gemm_mma_side<ROWS, BK, KC> S;
  static constexpr int CH = S::CH, PER = S::TROWS * CH / THREADS;
  static constexpr int DR = THREADS / CH; /* tile rows between chunks */
  static_assert(S::TROWS * CH % THREADS == 0 && THREADS % (8 * CH) == 0,
                "the staging layout assumes whole passes of the threads");
  const uint16_t *p;   /* this thread's first chunk in the next slab */
  const uint16_t *any; /* a readable address for empty copies */
  int64_t step;        /* p's advance per slab */
  int64_t row_step;    /* pointer distance between this thread's chunks */
  int64_t klen, k0;
  int off;      /* first chunk's offset in a slot, elements */
  int kpos;     /* KC: the chunk's first k in the slab; else its tile row */
  int fixed;    /* KC: bit j = chunk j's row exists; else valid elements */

  static __device__ __forceinline__ void setup() {}

  /* Rows r0 .. r0 + ROWS - 1 of op (of `rows`), batch bi. */
  __device__ __forceinline__ void init(const kd_gemm_mma_dense &op, int64_t bi,
                                       int64_t r0, int64_t rows,
                                       int64_t k_len) {
    const uint16_t *base = op.data + bi * op.batch_stride;
    const int t = (int)threadIdx.x, c = t % CH, tr = t / CH;
    any = base;
    klen = k_len;
    k0 = 0;
    off = (tr * S::tile::STRIDE + S::tile::slot(tr, c)) * 8;
    if constexpr (KC) {
      kpos = 8 * c;
      fixed = 0;
      KD_UNROLL
      for (int j = 0; j < PER; j++)
        if (r0 + tr + j * DR < rows) fixed |= 1 << j;
      p = base + (r0 + tr) * op.ld + kpos;
      step = BK;
      row_step = DR * op.ld;
    } else {
      kpos = tr;
      const int64_t left = rows - (r0 + 8 * c);
      fixed = left <= 0 ? 0 : (left < 8 ? (int)left : 8);
      p = base + tr * op.ld + (fixed ? r0 + 8 * c : 0);
      step = BK * op.ld;
      row_step = DR * op.ld;
    }
  }

  /* Starts copying the next slab into slot. */
  __device__ __forceinline__ void fetch(uint16_t *slot) {
    KD_UNROLL
    for (int j = 0; j < PER; j++) {
      int n;
      if constexpr (KC) {
        const int64_t left = klen - (k0 + kpos);
        n = !(fixed >> j & 1) || left <= 0 ? 0 : (left < 8 ? (int)left : 8);
      } else {
        n = k0 + kpos + j * DR < klen ? fixed : 0;
      }
      const uint16_t *src = n ? p + j * row_step : any;
      uint16_t *dst = slot + off + j * DR * S::tile::STRIDE * 8;
      if constexpr (VEC) {
        kd_cp_async16(dst, src, 2 * n);
      } else {
        uint32_t w[4];
        KD_UNROLL
        for (int i = 0; i < 4; i++)
          w[i] = (2 * i < n ? (uint32_t)src[2 * i] : 0u) |
                 (2 * i + 1 < n ? (uint32_t)src[2 * i + 1] << 16 : 0u);
        kd_gemm_mma_sts16(dst, make_uint4(w[0], w[1], w[2], w[3]));
      }
    }
    p += step;
    k0 += BK;
  }
  /* Register-staged operands write their slab here; this one is done. */
  __device__ __forceinline__ void land(uint16_t *) {}
};

/* ---- The kernel ------------------------------------------------------- */

/* Writes alpha * acc (+ beta * C) for one warp tile whose unit (0, 0)
 * starts at C element (row0, col0); elements past m or n are skipped. One
 * instantiation per C dtype, so that the loops unroll and acc stays in
 * registers. */
template <class Arch, typename Tc, int UM, int UN>
__device__ __forceinline__ void
kd_gemm_mma_epilogue(Tc *c, int64_t ldc,
                     const typename Arch::frag_c (&acc)[UM][UN], int64_t row0,
                     int64_t col0, const kd_gemm_mma_dims &d) {
  KD_UNROLL
  for (int i = 0; i < UM; i++)
    KD_UNROLL
    for (int j = 0; j < UN; j++)
      KD_UNROLL
      for (int e = 0; e < Arch::C_ELEMS; e++) {
        const int64_t row = row0 + 16 * i + Arch::c_row(e);
        const int64_t col = col0 + 16 * j + Arch::c_col(e);
        if (row < d.m && col < d.n) {
          Tc *p = c + row * ldc + col;
          float v = d.alpha * acc[i][j].v[e];
          if (d.beta != 0.0f) v = fmaf(d.beta, kd_to_float(*p), v);
          *p = kd_from_float<Tc>(v);
        }
      }
}

/* StA and StB stage OpA and OpB (kd_gemm_mma_dense_stager, or tile/mx.h's
 * kd_mx_stager): setup() once per block, then per tile init(operand,
 * batch, r0, rows, K) and, per slab, fetch(slot) when the slab's copies
 * start and land(slot) after the current slab's multiply (where a
 * register-staged operand writes its slab). */
template <class Arch, typename T, class Cfg, bool AKC, bool BKC, class StA,
          class StB, class OpA, class OpB>
__global__ void __launch_bounds__(Cfg::WARPS *Arch::WARP)
    kd_gemm_mma_gemm(OpA a, OpB b, kd_gemm_mma_out c, kd_gemm_mma_dims d) {
  constexpr int UM = Cfg::WM / 16, UN = Cfg::WN / 16;
  typedef kd_gemm_mma_side<Cfg::BM, Cfg::BK, AKC> SA;
  typedef kd_gemm_mma_side<Cfg::BN, Cfg::BK, BKC> SB;
  HIP_DYNAMIC_SHARED(uint4, kd_gemm_mma_smem);
  uint16_t *const slots_a = (uint16_t *)kd_gemm_mma_smem;
  uint16_t *const slots_b = slots_a + Cfg::STAGES * SA::ELEMS;

  const int warp = (int)threadIdx.x / Arch::WARP;
  const int wm = warp / Cfg::WARPS_N * Cfg::WM;
  const int wn = warp % Cfg::WARPS_N * Cfg::WN;
  const int64_t m_tiles = (d.m + Cfg::BM - 1) / Cfg::BM;
  const int64_t n_tiles = (d.n + Cfg::BN - 1) / Cfg::BN;
  const int64_t k_tiles = (d.k + Cfg::BK - 1) / Cfg::BK;
  const int64_t tiles = m_tiles * n_tiles * d.batch;
  StA::setup();
  StB::setup();
  __syncthreads();

  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t bi, mt, nt;
    kd_gemm_tile_of(t, m_tiles, n_tiles, &bi, &mt, &nt);
    const int64_t m0 = mt * Cfg::BM, n0 = nt * Cfg::BN;
    typename Arch::frag_c acc[UM][UN];
    KD_UNROLL
    for (int i = 0; i < UM; i++)
      KD_UNROLL
      for (int j = 0; j < UN; j++)
        KD_UNROLL
        for (int e = 0; e < Arch::C_ELEMS; e++) acc[i][j].v[e] = 0.0f;

    /* alpha is uniform over the grid: every thread takes the same branch,
     * so the barriers inside stay matched. */
    if (d.alpha != 0.0f) {
      StA sa;
      StB sb;
      sa.init(a, bi, m0, d.m, d.k);
      sb.init(b, bi, n0, d.n, d.k);
      KD_UNROLL
      for (int s = 0; s < Cfg::STAGES - 1; s++) {
        if (s < k_tiles) {
          sa.fetch(slots_a + s * SA::ELEMS);
          sb.fetch(slots_b + s * SB::ELEMS);
          sa.land(slots_a + s * SA::ELEMS);
          sb.land(slots_b + s * SB::ELEMS);
        }
        kd_cp_async_commit();
      }
      int cur = 0, nxt = Cfg::STAGES - 1;
      for (int64_t kt = 0; kt < k_tiles; kt++) {
        /* Slab kt has landed (this thread's copies), and after the
         * barrier everyone's; every warp is also done with slot nxt,
         * which held slab kt - 1. */
        kd_cp_async_wait<Cfg::STAGES - 2>();
        __syncthreads();
        const bool more = kt + Cfg::STAGES - 1 < k_tiles;
        if (more) {
          sa.fetch(slots_a + nxt * SA::ELEMS);
          sb.fetch(slots_b + nxt * SB::ELEMS);
        }
        kd_cp_async_commit();

        const typename SA::tile ta = {slots_a + cur * SA::ELEMS};
        const typename SB::tile tb = {slots_b + cur * SB::ELEMS};
        KD_UNROLL
        for (int ks = 0; ks < Cfg::BK / 16; ks++) {
          typename Arch::frag_a fa[UM];
          typename Arch::frag_b fb[UN];
          KD_UNROLL
          for (int i = 0; i < UM; i++) {
            if constexpr (AKC) Arch::load_a(fa[i], ta, wm + 16 * i, 2 * ks);
            else Arch::load_a_t(fa[i], ta, 16 * ks, (wm + 16 * i) / 8);
          }
          KD_UNROLL
          for (int j = 0; j < UN; j++) {
            if constexpr (BKC) Arch::load_b(fb[j], tb, wn + 16 * j, 2 * ks);
            else Arch::load_b_t(fb[j], tb, 16 * ks, (wn + 16 * j) / 8);
          }
          KD_UNROLL
          for (int i = 0; i < UM; i++)
            KD_UNROLL
            for (int j = 0; j < UN; j++)
              if constexpr (Cfg::PROMOTE)
                Arch::template mma_promote<T>(acc[i][j], fa[i], fb[j]);
              else
                Arch::template mma<T>(acc[i][j], fa[i], fb[j]);
        }
        if (more) {
          sa.land(slots_a + nxt * SA::ELEMS);
          sb.land(slots_b + nxt * SB::ELEMS);
        }
        cur = cur + 1 == Cfg::STAGES ? 0 : cur + 1;
        nxt = nxt + 1 == Cfg::STAGES ? 0 : nxt + 1;
      }
      /* The next tile's first copies must not overwrite a slot that a
       * slower warp is still reading. */
      __syncthreads();
    }

    const int64_t cb = bi * c.batch_stride;
    if (c.dtype == KE_F16)
      kd_gemm_mma_epilogue<Arch>((kd_half *)c.data + cb, c.ld, acc, m0 + wm,
                                 n0 + wn, d);
    else if (c.dtype == KE_BF16)
      kd_gemm_mma_epilogue<Arch>((kd_bf16 *)c.data + cb, c.ld, acc, m0 + wm,
                                 n0 + wn, d);
    else
      kd_gemm_mma_epilogue<Arch>((float *)c.data + cb, c.ld, acc, m0 + wm,
                                 n0 + wn, d);
  }
}

/* Shared memory of one block of the kernel above. */
template <class Cfg, bool AKC, bool BKC>
constexpr int kd_gemm_mma_smem_bytes() {
  return Cfg::STAGES *
         (kd_gemm_mma_side<Cfg::BM, Cfg::BK, AKC>::ELEMS +
          kd_gemm_mma_side<Cfg::BN, Cfg::BK, BKC>::ELEMS) *
         2;
}

/* Launches kd_gemm_mma_gemm over the whole problem: grid-stride over the tiles,
 * the dynamic shared memory limit raised once per kernel. Always, not only
 * above the default 48 KiB: the default bounds static plus dynamic memory,
 * and a stager's own static tables (the MX decode table) on top of slots
 * of exactly 48 KiB made the launch fail on the H100. */
template <class Arch, typename T, class Cfg, bool AKC, bool BKC, class StA,
          class StB, class OpA, class OpB>
static int kd_gemm_mma_launch(hipStream_t stream, const OpA &a, const OpB &b,
                              const kd_gemm_mma_out &c,
                              const kd_gemm_mma_dims &d) {
  constexpr int smem = kd_gemm_mma_smem_bytes<Cfg, AKC, BKC>();
  constexpr int threads = Cfg::WARPS * Arch::WARP;
  {
    auto kernel = kd_gemm_mma_gemm<Arch, T, Cfg, AKC, BKC, StA, StB, OpA, OpB>;
    static int raised; /* per kernel and process; racing callers agree */
    if (!__atomic_load_n(&raised, __ATOMIC_RELAXED)) {
      const hipError_t e = hipFuncSetAttribute(
          (const void *)kernel, hipFuncAttributeMaxDynamicSharedMemorySize,
          smem);
      if (e != hipSuccess) return (int)e;
      __atomic_store_n(&raised, 1, __ATOMIC_RELAXED);
    }
  }
  const int64_t tiles = ((d.m + Cfg::BM - 1) / Cfg::BM) *
                        ((d.n + Cfg::BN - 1) / Cfg::BN) * d.batch;
  const int64_t cap = (int64_t)1 << 30;
  hipLaunchKernelGGL(
      (kd_gemm_mma_gemm<Arch, T, Cfg, AKC, BKC, StA, StB, OpA, OpB>),
      dim3((unsigned)(tiles < cap ? tiles : cap)), dim3(threads), smem, stream,
      a, b, c, d);
  return (int)hipGetLastError();
}

/* ---- Tile configurations ------------------------------------------------ */

/* Per matrix unit, the configurations the launchers choose from, largest
 * first (docs/kernels-gemm.md, GEMM; dev/gemm-tune.cu measures others).
 * NVIDIA: 64 x 64 warp tiles where the grid is large (4 ldmatrix.x4 of A
 * and 4 of B per 32 mma.sync), smaller blocks to fill the GPU otherwise.
 * Large is 128 x 128 x 64 in 3 stages: on the H100 it ran 4096^3 bf16 at
 * 334 TFLOP/s against 274 for 128 x 256 x 32 (gemm-tune, 2026-11-23); a
 * 64-deep slab halves the barriers per FLOP.
 * CDNA: the 64 KiB LDS of gfx90a holds two slots of 128 x 128 x 32. */
struct kd_gemm_mma_nv_large : kd_gemm_mma_cfg<128, 128, 64, 64, 64, 3> {};
struct kd_gemm_mma_nv_medium : kd_gemm_mma_cfg<128, 128, 32, 64, 64, 4> {};
struct kd_gemm_mma_nv_small : kd_gemm_mma_cfg<64, 128, 32, 32, 64, 4> {};
struct kd_gemm_mma_cdna_large : kd_gemm_mma_cfg<128, 128, 32, 64, 64, 2> {};
struct kd_gemm_mma_cdna_small : kd_gemm_mma_cfg<64, 64, 32, 32, 32, 2> {};

enum kd_gemm_mma_size {
  KD_GEMM_MMA_LARGE,
  KD_GEMM_MMA_MEDIUM,
  KD_GEMM_MMA_SMALL
};

/* Multiprocessors the configuration choice aims to fill. The host
 * emulation answers 4 whatever the CPU, so that every configuration is
 * reached by small test shapes and the choice never depends on the
 * machine running CI. */
static inline int64_t kd_gemm_mma_multiprocessors() {
#if defined(KILN_BACKEND_HOST)
  return 4;
#else
  static int known;
  int n = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (n == 0) {
    int dev = 0;
    if (hipGetDevice(&dev) != hipSuccess ||
        hipDeviceGetAttribute(&n, hipDeviceAttributeMultiprocessorCount,
                              dev) != hipSuccess ||
        n < 1)
      n = 1;
    __atomic_store_n(&known, n, __ATOMIC_RELAXED);
  }
  return n;
#endif
}

/* NVIDIA: the deep-slab configuration where its tiles fill every
 * multiprocessor twice, the 32-deep one where they fill it once, the
 * smallest otherwise. */
static inline kd_gemm_mma_size kd_gemm_mma_choose(kd_mma_kind kind, int64_t m,
                                                  int64_t n, int64_t batch) {
  const int64_t sms = kd_gemm_mma_multiprocessors();
  auto tiles = [&](int64_t bm, int64_t bn) {
    return ((m + bm - 1) / bm) * ((n + bn - 1) / bn) * batch;
  };
  if (kind == KD_MMA_CDNA)
    return tiles(128, 128) >= sms ? KD_GEMM_MMA_LARGE : KD_GEMM_MMA_SMALL;
  if (tiles(128, 128) >= 2 * sms) return KD_GEMM_MMA_LARGE;
  if (tiles(128, 128) >= sms) return KD_GEMM_MMA_MEDIUM;
  return KD_GEMM_MMA_SMALL;
}

/* The configurations of each matrix unit, by kd_gemm_mma_size. */
template <class Arch> struct kd_gemm_mma_configs;
template <> struct kd_gemm_mma_configs<kd_mma_nv> {
  typedef kd_gemm_mma_nv_large large;
  typedef kd_gemm_mma_nv_medium medium;
  typedef kd_gemm_mma_nv_small small;
};
template <> struct kd_gemm_mma_configs<kd_mma_cdna> {
  typedef kd_gemm_mma_cdna_large large;
  typedef kd_gemm_mma_cdna_large medium; /* not chosen */
  typedef kd_gemm_mma_cdna_small small;
};

/* Calls f(Cfg()), or f(kd_gemm_mma_promoted<Cfg>()) when k is past
 * KD_GEMM_MMA_PROMOTE_K on a unit whose accumulation truncates
 * (Arch::TRUNCATES: NVIDIA's). */
template <class Arch, class Cfg, class F>
static int kd_gemm_mma_with_promotion(int64_t k, F &&f) {
  if constexpr (Arch::TRUNCATES)
    if (k > KD_GEMM_MMA_PROMOTE_K) return f(kd_gemm_mma_promoted<Cfg>());
  return f(Cfg());
}

/* Calls f(Cfg()) with the configuration chosen for the problem (promoted
 * past KD_GEMM_MMA_PROMOTE_K). */
template <class Arch, class F>
static int kd_gemm_mma_with_config(int64_t m, int64_t n, int64_t k,
                                   int64_t batch, F &&f) {
  typedef kd_gemm_mma_configs<Arch> C;
  switch (kd_gemm_mma_choose(Arch::WARP == 64 ? KD_MMA_CDNA : KD_MMA_NV, m, n,
                             batch)) {
  case KD_GEMM_MMA_LARGE:
    return kd_gemm_mma_with_promotion<Arch, typename C::large>(k, f);
  case KD_GEMM_MMA_MEDIUM:
    return kd_gemm_mma_with_promotion<Arch, typename C::medium>(k, f);
  default:
    return kd_gemm_mma_with_promotion<Arch, typename C::small>(k, f);
  }
}

#endif
