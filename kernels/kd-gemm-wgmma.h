/* The Hopper GEMM (kernels/kd-wgmma.h): f16 or bf16 A and B, f32 sums,
 * C = alpha * op(A) op(B) + beta * C in C's dtype, over a batch.
 *
 * A block is three warpgroups and owns a BM x BN tile (128 x BN) at a time,
 * walking the tiles persistently (grid = multiprocessors, tiles in
 * kd_gemm_tile_of's order):
 *   warpgroup 0, the producer: one thread brings each BK-deep slab of A and
 *     B into a ring of STAGES shared-memory slots with TMA, after waiting
 *     for the slot's "empty" mbarrier; the copies complete the slot's
 *     "full" mbarrier. It gives its registers to the consumers (setmaxnreg).
 *   warpgroups 1 and 2, the consumers: rows 0-63 and 64-127 of the tile.
 *     Per slab, for each 128 columns: four wgmma m64n128k16 into a fresh
 *     f32 register accumulator, then that partial sum is added into the
 *     tile's f32 sum with an ordinary (round-to-nearest) f32 add; then each
 *     warp arrives on the slot's "empty" barrier. The epilogue writes
 *     alpha * sum (+ beta * C) from registers while the producer already
 *     loads the next tile's slabs.
 * The promotion every 64 k is what keeps the sums as accurate as an f32 sum:
 * the tensor core's own f32 accumulation truncates (docs/performance.md,
 * "Matrix-unit rounding at long K"); here it only ever adds 64 products.
 *
 * Layouts: each operand is loaded in its memory orientation, K-major (a
 * [rows][64 k] tile, one TMA box) or MN-major ([64 k][64 rows] tiles, one
 * box each, read by wgmma transposed). TMA needs 16-byte aligned bases and
 * row and batch strides; launchers check kd_wg_gemm_fits and otherwise use
 * the mma.sync kernel. Out-of-range rows, columns and k come in as zeros
 * (TMA's fill), so any M, N, K >= 1 works.
 */
#ifndef KILN_KD_GEMM_WGMMA_H
#define KILN_KD_GEMM_WGMMA_H

#include "kd-gemm-mma.h"
#include "kd-wgmma.h"

template <int BN_, int STAGES_> struct kd_wg_cfg {
  static constexpr int BM = 128, BN = BN_, BK = 64, STAGES = STAGES_;
  static constexpr int THREADS = 384, CHUNKS = BN / 128;
  static constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
  /* Slots, then the barriers; 1024 bytes to align the slots. */
  static constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + 2 * STAGES * 8;
  static_assert(BN % 128 == 0 && BN <= 256, "whole 128-column chunks");
};

/* The map of a dense operand for tiles of ROWS rows: K-major, boxes of
 * [ROWS][64 k]; else boxes of [64 k][64 rows]. */
static inline int kd_wg_map(kd_tmap *m, const kd_mm_dense &op, bool kc,
                            int64_t rows, int64_t k, int64_t batch,
                            int box_rows) {
  const uint64_t inner = (uint64_t)(kc ? k : rows);
  const uint64_t outer = (uint64_t)(kc ? rows : k);
  const bool batched = batch > 1 && op.batch_stride != 0;
  const uint64_t dims[3] = {inner, outer, batched ? (uint64_t)batch : 1};
  const uint64_t strides[2] = {
      (uint64_t)op.ld * 2,
      batched ? (uint64_t)op.batch_stride * 2 : (uint64_t)op.ld * 2 * outer};
  const uint32_t box[2] = {64, kc ? (uint32_t)box_rows : 64u};
  return kd_tmap_encode(m, op.data, dims, strides, box);
}

/* Whether TMA can read the operand: 16-byte aligned base, row stride and
 * batch stride, and sizes a map holds. */
static inline bool kd_wg_gemm_fits(const kd_mm_dense &op, int64_t rows,
                                   int64_t k) {
  return (uintptr_t)op.data % 16 == 0 && op.ld % 8 == 0 &&
         op.batch_stride % 8 == 0 && op.ld > 0 && op.batch_stride >= 0 &&
         op.ld < ((int64_t)1 << 36) && op.batch_stride < ((int64_t)1 << 36) &&
         rows < ((int64_t)1 << 31) && k < ((int64_t)1 << 31);
}

/* Writes alpha * v (+ beta * C) to the element pair (row, col), (row,
 * col + 1) where inside m x n. */
template <typename Tc>
__device__ __forceinline__ void kd_wg_store2(Tc *c, int64_t ldc, int64_t row,
                                             int64_t col, float v0, float v1,
                                             const kd_mm_dims &d) {
  if (row >= d.m) return;
  Tc *p = c + row * ldc + col;
  const float v[2] = {v0, v1};
  KD_UNROLL
  for (int h = 0; h < 2; h++)
    if (col + h < d.n) {
      float o = d.alpha * v[h];
      if (d.beta != 0.0f) o = fmaf(d.beta, kd_to_float(p[h]), o);
      p[h] = kd_from_float<Tc>(o);
    }
}

/* Consumer thread t's sum element i: row 16 w + l / 4 + 8 ((i / 2) % 2) of
 * its 64, column 128 (i / 64) + 8 ((i % 64) / 4) + 2 (l % 4) + i % 2. */
template <class Cfg, typename Tc>
__device__ __forceinline__ void
kd_wg_epilogue(Tc *c, int64_t ldc, const float (&sum)[Cfg::BN / 2],
               int64_t row0, int64_t col0, const kd_mm_dims &d) {
  const int t = (int)threadIdx.x % 128, w = t / 32, l = t % 32;
  KD_UNROLL
  for (int i = 0; i < Cfg::BN / 2; i += 2) {
    const int e = i % 64;
    const int64_t row = row0 + 16 * w + l / 4 + 8 * ((e / 2) % 2);
    const int64_t col = col0 + 128 * (i / 64) + 8 * (e / 4) + 2 * (l % 4);
    kd_wg_store2(c, ldc, row, col, sum[i], sum[i + 1], d);
  }
}

template <typename T, class Cfg, bool AKC, bool BKC>
__global__ void __launch_bounds__(384, 1)
kd_wg_gemm(const __grid_constant__ kd_tmap ta,
           const __grid_constant__ kd_tmap tb, kd_mm_out c, kd_mm_dims d,
           int a_batched, int b_batched) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::STAGES;
  HIP_DYNAMIC_SHARED(uint4, kd_wg_smem);
  /* Slots 1024-byte aligned in the shared window (the swizzle's period). */
  unsigned char *const raw = (unsigned char *)kd_wg_smem;
  unsigned char *const slots =
      raw + ((1024 - kd_smem_addr(raw) % 1024) % 1024);
  uint64_t *const full = (uint64_t *)(slots + S * Cfg::STAGE_BYTES);
  uint64_t *const empty = full + S;

  const int wg = (int)threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; s++) {
      kd_mbar_init(&full[s], 1);
      kd_mbar_init(&empty[s], 8); /* each consumer warp */
    }
    kd_mbar_init_fence();
  }
  __syncthreads();

  const int64_t m_tiles = (d.m + BM - 1) / BM, n_tiles = (d.n + BN - 1) / BN;
  const int64_t k_tiles = d.alpha != 0.0f ? (d.k + BK - 1) / BK : 0;
  const int64_t tiles = m_tiles * n_tiles * d.batch;

  if (wg == 0) {
    kd_wg_regs_dec<40>();
    if (threadIdx.x != 0) return;
    int s = 0, ph = 0;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      int64_t bi, mt, nt;
      kd_gemm_tile_of(t, m_tiles, n_tiles, &bi, &mt, &nt);
      const int m0 = (int)(mt * BM), n0 = (int)(nt * BN);
      const int za = a_batched ? (int)bi : 0, zb = b_batched ? (int)bi : 0;
      for (int64_t kt = 0; kt < k_tiles; kt++) {
        const int k0 = (int)(kt * BK);
        kd_mbar_wait(&empty[s], ph ^ 1);
        kd_mbar_arrive_tx(&full[s], Cfg::STAGE_BYTES);
        unsigned char *sa = slots + s * Cfg::STAGE_BYTES;
        unsigned char *sb = sa + Cfg::A_BYTES;
        if constexpr (AKC) kd_tma_load(sa, &ta, k0, m0, za, &full[s]);
        else
          for (int j = 0; j < BM / 64; j++)
            kd_tma_load(sa + j * BK * 128, &ta, m0 + 64 * j, k0, za, &full[s]);
        if constexpr (BKC) kd_tma_load(sb, &tb, k0, n0, zb, &full[s]);
        else
          for (int j = 0; j < BN / 64; j++)
            kd_tma_load(sb + j * BK * 128, &tb, n0 + 64 * j, k0, zb, &full[s]);
        if (++s == S) s = 0, ph ^= 1;
      }
    }
    return;
  }

  kd_wg_regs_inc<232>();
  const int cw = wg - 1; /* rows 64 cw .. 64 cw + 63 of the tile */
  int s = 0, ph = 0;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    int64_t bi, mt, nt;
    kd_gemm_tile_of(t, m_tiles, n_tiles, &bi, &mt, &nt);
    float sum[BN / 2];
    KD_UNROLL
    for (int i = 0; i < BN / 2; i++) sum[i] = 0.0f;
#if defined(KD_WG_EXPERIMENT_NO_PROMOTE)
    /* Measuring only (scripts/gemm-hopper.cu): the matrix unit accumulates
     * over all of K, one slab's multiplies in flight while the next are
     * issued; the cost of the promotion below, not a kiln kernel. */
    int prev = -1;
    for (int64_t kt = 0; kt < k_tiles; kt++) {
      kd_mbar_wait(&full[s], ph);
      const unsigned char *sa = slots + s * Cfg::STAGE_BYTES;
      const unsigned char *sb = sa + Cfg::A_BYTES;
      kd_wg_fence_regs(sum);
      kd_wg_fence();
      KD_UNROLL
      for (int j = 0; j < Cfg::CHUNKS; j++)
        KD_UNROLL
        for (int ks = 0; ks < BK / 16; ks++) {
          const uint64_t da = AKC ? kd_wg_desc_k(sa, 64 * cw, ks)
                                  : kd_wg_desc_mn<BK>(sa, 64 * cw, ks);
          const uint64_t db = BKC ? kd_wg_desc_k(sb, 128 * j, ks)
                                  : kd_wg_desc_mn<BK>(sb, 128 * j, ks);
          kd_wg_m64n128k16<T, AKC ? 0 : 1, BKC ? 0 : 1>(
              *reinterpret_cast<float(*)[64]>(sum + 64 * j), da, db, 1);
        }
      kd_wg_commit();
      kd_wg_wait<1>();
      kd_wg_fence_regs(sum);
      if (prev >= 0 && threadIdx.x % 32 == 0) kd_mbar_arrive(&empty[prev]);
      prev = s;
      if (++s == S) s = 0, ph ^= 1;
    }
    kd_wg_wait<0>();
    kd_wg_fence_regs(sum);
    if (prev >= 0 && threadIdx.x % 32 == 0) kd_mbar_arrive(&empty[prev]);
#else
    for (int64_t kt = 0; kt < k_tiles; kt++) {
      kd_mbar_wait(&full[s], ph);
      const unsigned char *sa = slots + s * Cfg::STAGE_BYTES;
      const unsigned char *sb = sa + Cfg::A_BYTES;
      KD_UNROLL
      for (int j = 0; j < Cfg::CHUNKS; j++) {
        float part[64];
#if KD_WG__EMU
        memset(part, 0, sizeof part); /* scale_d 0 below: never read */
#endif
        kd_wg_fence_regs(part);
        kd_wg_fence();
        KD_UNROLL
        for (int ks = 0; ks < BK / 16; ks++) {
          const uint64_t da = AKC ? kd_wg_desc_k(sa, 64 * cw, ks)
                                  : kd_wg_desc_mn<BK>(sa, 64 * cw, ks);
          const uint64_t db = BKC ? kd_wg_desc_k(sb, 128 * j, ks)
                                  : kd_wg_desc_mn<BK>(sb, 128 * j, ks);
          kd_wg_m64n128k16<T, AKC ? 0 : 1, BKC ? 0 : 1>(part, da, db, ks);
        }
        kd_wg_commit();
        kd_wg_wait<0>();
        kd_wg_fence_regs(part);
        KD_UNROLL
        for (int i = 0; i < 64; i++) sum[64 * j + i] += part[i];
      }
      if (threadIdx.x % 32 == 0) kd_mbar_arrive(&empty[s]);
      if (++s == S) s = 0, ph ^= 1;
    }
#endif
    const int64_t row0 = mt * BM + 64 * cw, col0 = nt * BN;
    const int64_t cb = bi * c.batch_stride;
    if (c.dtype == KE_F16)
      kd_wg_epilogue<Cfg>((kd_half *)c.data + cb, c.ld, sum, row0, col0, d);
    else if (c.dtype == KE_BF16)
      kd_wg_epilogue<Cfg>((kd_bf16 *)c.data + cb, c.ld, sum, row0, col0, d);
    else
      kd_wg_epilogue<Cfg>((float *)c.data + cb, c.ld, sum, row0, col0, d);
  }
}

/* Launches the kernel for one layout, its maps built (kd_wg_gemm_maps). */
template <typename T, class Cfg, bool AKC, bool BKC>
static int kd_wg_gemm_launch(hipStream_t stream, const kd_tmap &ta,
                             const kd_tmap &tb, const kd_mm_out &c,
                             const kd_mm_dims &d, int ab, int bb) {
  auto kernel = kd_wg_gemm<T, Cfg, AKC, BKC>;
  static int raised; /* per kernel and process; racing callers agree */
  if (!__atomic_load_n(&raised, __ATOMIC_RELAXED)) {
    const hipError_t e = hipFuncSetAttribute(
        (const void *)kernel, hipFuncAttributeMaxDynamicSharedMemorySize,
        Cfg::SMEM);
    if (e != hipSuccess) return (int)e;
    __atomic_store_n(&raised, 1, __ATOMIC_RELAXED);
  }
  const int64_t tiles = ((d.m + Cfg::BM - 1) / Cfg::BM) *
                        ((d.n + Cfg::BN - 1) / Cfg::BN) * d.batch;
  const int64_t sms = kd_mm_multiprocessors();
  const unsigned grid = (unsigned)(tiles < sms ? tiles : sms);
  hipLaunchKernelGGL((kd_wg_gemm<T, Cfg, AKC, BKC>), dim3(grid),
                     dim3(Cfg::THREADS), Cfg::SMEM, stream, ta, tb, c, d, ab,
                     bb);
  return (int)hipGetLastError();
}

/* The tensor maps of A and B and whether each has a matrix per batch; -1
 * when TMA cannot read an operand. */
template <class Cfg>
static int kd_wg_gemm_maps(const kd_mm_dense &a, bool akc,
                           const kd_mm_dense &b, bool bkc,
                           const kd_mm_dims &d, kd_tmap *ta, kd_tmap *tb,
                           int *ab, int *bb) {
  if (!kd_wg_gemm_fits(a, d.m, d.k) || !kd_wg_gemm_fits(b, d.n, d.k) ||
      kd_wg_map(ta, a, akc, d.m, d.k, d.batch, Cfg::BM) != 0 ||
      kd_wg_map(tb, b, bkc, d.n, d.k, d.batch, Cfg::BN) != 0)
    return -1;
  *ab = d.batch > 1 && a.batch_stride != 0;
  *bb = d.batch > 1 && b.batch_stride != 0;
  return 0;
}

/* Runs the GEMM with configuration Cfg; -1 when TMA cannot read an operand
 * (the caller uses the mma.sync kernel), else a hipError_t. */
template <typename T, class Cfg>
static int kd_wg_gemm_run(hipStream_t stream, const kd_mm_dense &a, bool akc,
                          const kd_mm_dense &b, bool bkc, const kd_mm_out &c,
                          const kd_mm_dims &d) {
  kd_tmap ta, tb;
  int ab, bb;
  if (kd_wg_gemm_maps<Cfg>(a, akc, b, bkc, d, &ta, &tb, &ab, &bb) != 0)
    return -1;
  if (akc)
    return bkc ? kd_wg_gemm_launch<T, Cfg, true, true>(stream, ta, tb, c, d,
                                                       ab, bb)
               : kd_wg_gemm_launch<T, Cfg, true, false>(stream, ta, tb, c,
                                                        d, ab, bb);
  return bkc ? kd_wg_gemm_launch<T, Cfg, false, true>(stream, ta, tb, c, d,
                                                      ab, bb)
             : kd_wg_gemm_launch<T, Cfg, false, false>(stream, ta, tb, c, d,
                                                       ab, bb);
}

#endif
