/* The Hopper GEMM (kernels/arch/sm90.h): f16 or bf16 A and B, f32 sums,
 * C = alpha * op(A) op(B) + beta * C in C's dtype, over a batch.
 *
 * A block is three warpgroups and owns a BM x BN tile (128 x BN) at a time,
 * walking the tiles persistently (grid = multiprocessors, tiles in
 * kd_gemm_tile_of_g's order, in L2 groups of Cfg::GROUP tile rows):
 *   warpgroup 0, the producer: one thread brings each BK-deep slab of A and
 *     B into a ring of STAGES shared-memory slots with TMA, after waiting
 *     for the slot's "empty" mbarrier; the copies complete the slot's
 *     "full" mbarrier. It gives its registers to the consumers (setmaxnreg).
 *   warpgroups 1 and 2, the consumers: rows 0-63 and 64-127 of the tile.
 *     Per group of EVERY slabs, for each chunk of CW columns: the group's
 *     wgmma m64nCWk16 into an f32 register partial, then that partial is
 *     added into the tile's f32 sum with an ordinary (round-to-nearest) f32
 *     add (kd_gemm_sm90_group: serially, or overlapped with the next chunk's
 *     multiplies); once the group's last multiplies are complete each
 *     warp arrives on the group's slots' "empty" barriers. Staggered, the
 *     second consumer's groups start half a group later. The epilogue
 *     writes alpha * sum (+ beta * C) from registers while the producer
 *     already loads the next tile's slabs.
 * The promotion (every 128 k in the engine, gemm_sm90.hip) is what keeps
 * the sums as accurate as an f32 sum: the tensor core's own f32
 * accumulation truncates (docs/decisions/gemm.md, "Promoted f32 sums past
 * K = 8192"); here it only ever adds EVERY x 64 products.
 *
 * Layouts: each operand is loaded in its memory orientation, K-major (a
 * [rows][64 k] tile, one TMA box) or MN-major ([64 k][64 rows] tiles, one
 * box each, read by wgmma transposed). TMA needs 16-byte aligned bases and
 * row and batch strides; launchers check kd_gemm_sm90_fits
 * (tile/gemm_sm90_launch.h: the maps and the launch) and otherwise use the
 * mma.sync kernel. Out-of-range rows, columns and k come in as zeros
 * (TMA's fill), so any M, N, K >= 1 works.
 */
#ifndef KILN_KERNELS_TILE_GEMM_SM90_H
#define KILN_KERNELS_TILE_GEMM_SM90_H

#include "tile/gemm_mma.h"
#include "arch/sm90.h"

/* How a consumer turns the matrix unit's partial sums into its f32 sum:
 *   SERIAL   per 128-column chunk, the multiplies of a promotion interval
 *            into one partial, wait for them, add it into the sum;
 *   OVERLAP  two partials: the next chunk's (or interval's) multiplies
 *            are issued into one while the other is added
 *            (wgmma.wait_group 1), so the adds hide behind the multiplies;
 *   UNPROMOTED  no partials: the unit accumulates over all of K. For
 *            measuring the promotion's cost only (dev/gemm-hopper.cu);
 *            its sums truncate like mma.sync's, so the engine never uses it. */
enum { KD_GEMM_SM90_SERIAL, KD_GEMM_SM90_OVERLAP, KD_GEMM_SM90_UNPROMOTED };

/* Flags of a configuration:
 *   STAGGER   (SERIAL, EVERY even) the second consumer's promotion groups
 *             shifted by EVERY / 2 slabs (its first group is half long),
 *             so that the two warpgroups do not wait for their partials
 *             and add them at the same moments;
 *   NO_STORE  the epilogue skipped (it stores only a NaN sum): for
 *             measuring the epilogue's cost only; the engine never uses it;
 *   VEC_STORE the epilogue writes each in-range, aligned element pair with
 *             one 4-byte (16-bit C) or 8-byte (f32) store, not two;
 *   PINGPONG  (SERIAL) the consumers take turns issuing their multiplies
 *             (named barriers), so that one waits for and adds its partial
 *             while the other's multiplies keep the tensor cores busy;
 *   TMA_STORE where C is 16-bit, beta 0, N a multiple of 8 and TMA can
 *             write it, the
 *             epilogue goes through shared memory and TMA stores
 *             (kd_gemm_sm90_epilogue_tma), and the consumers go on to the next
 *             tile while the stores drain; elsewhere the register
 *             epilogue (VEC_STORE's where that flag is set too). */
enum {
  KD_GEMM_SM90_STAGGER = 1,
  KD_GEMM_SM90_NO_STORE = 2,
  KD_GEMM_SM90_VEC_STORE = 4,
  KD_GEMM_SM90_PINGPONG = 8,
  KD_GEMM_SM90_TMA_STORE = 16
};
/* Named barriers: the ping-pong's turns (consumer cw syncs on 1 + cw and
 * arrives on 2 - cw) and each consumer's epilogue buffers (3 + cw). */
enum { KD_GEMM_SM90_BAR_TURN = 1, KD_GEMM_SM90_BAR_EPI = 3 };

/* BN columns a tile, STAGES slots, chunks of CW columns per multiply
 * (wgmma N), MODE as above, a promotion every EVERY slabs of BK, tiles
 * walked in groups of GROUP tile rows (kd_gemm_tile_of_g), FLAGS as
 * above. A
 * consumer holds BN / 2 sum registers and one (SERIAL) or two (OVERLAP)
 * partials of CW / 2, and keeps an interval's slabs until its partials are
 * added (OVERLAP: two intervals' slabs). EVERY is a constant: a loop over
 * a run-time count of slabs makes ptxas spill the accumulators. */
template <int BN_, int STAGES_, int CW_ = 128, int MODE_ = KD_GEMM_SM90_SERIAL,
          int EVERY_ = 1, int GROUP_ = KD_GEMM_GROUP_M, int FLAGS_ = 0>
struct kd_gemm_sm90_cfg {
  static constexpr int BM = 128, BN = BN_, BK = 64, STAGES = STAGES_;
  static constexpr int CW = CW_, MODE = MODE_, EVERY = EVERY_;
  static constexpr int GROUP = GROUP_, FLAGS = FLAGS_;
  static constexpr int THREADS = 384, CHUNKS = BN / CW;
  static constexpr int A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;
  static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
  /* TMA_STORE: two 8 KiB buffers ([64 rows][64 columns] of C) a consumer. */
  static constexpr int EPI_BYTES =
      (FLAGS & KD_GEMM_SM90_TMA_STORE) ? 2 * 2 * 8192 : 0;
  /* Slots, the epilogue's buffers, then the barriers; 1024 bytes to align
   * the slots. */
  static constexpr int SMEM =
      1024 + STAGES * STAGE_BYTES + EPI_BYTES + 2 * STAGES * 8;
  static_assert(SMEM <= 227 * 1024, "an sm_90 block's shared memory");
  static_assert(BN % 64 == 0 && BN <= 256 && (CW == 64 || CW == 128) &&
                    BN % CW == 0,
                "whole chunks of 64 or 128 columns");
  static_assert(BN / 2 + (MODE == KD_GEMM_SM90_OVERLAP ? 2 : 1) * CW / 2 <= 192,
                "sum and partials within the consumers' registers");
  static_assert(EVERY >= 1 &&
                    EVERY * (MODE == KD_GEMM_SM90_OVERLAP ? 2 : 1) <= STAGES,
                "the slabs a consumer holds fit the ring");
  /* Staggered, the two consumers together hold up to 3 EVERY / 2 slabs. */
  static_assert(!(FLAGS & KD_GEMM_SM90_STAGGER) ||
                    (MODE == KD_GEMM_SM90_SERIAL && EVERY % 2 == 0 &&
                     EVERY + EVERY / 2 <= STAGES),
                "a staggered promotion: serial, EVERY even, in the ring");
  static_assert(GROUP >= 1, "tile rows per L2 group");
  static_assert(!(FLAGS & KD_GEMM_SM90_PINGPONG) ||
                    (MODE == KD_GEMM_SM90_SERIAL &&
                     !(FLAGS & KD_GEMM_SM90_STAGGER)),
                "ping-pong turns: the serial promotion, not staggered");
};

/* Writes alpha * v (+ beta * C) to the element pair (row, col), (row,
 * col + 1) where inside m x n; VEC: both with one store where both are
 * inside and the pair is aligned to its size. */
template <bool VEC, typename Tc>
__device__ __forceinline__ void
kd_gemm_sm90_store2(Tc *c, int64_t ldc, int64_t row, int64_t col, float v0,
                    float v1, const kd_gemm_mma_dims &d) {
  if (row >= d.m) return;
  Tc *p = c + row * ldc + col;
  const float v[2] = {v0, v1};
  if (VEC && col + 1 < d.n && (uintptr_t)p % (2 * sizeof(Tc)) == 0) {
    float o[2];
    KD_UNROLL
    for (int h = 0; h < 2; h++) {
      o[h] = d.alpha * v[h];
      if (d.beta != 0.0f) o[h] = fmaf(d.beta, kd_to_float(p[h]), o[h]);
    }
    if constexpr (sizeof(Tc) == 2) {
      *(uint32_t *)(void *)p = (uint32_t)kd_from_float<Tc>(o[0]).bits |
                               (uint32_t)kd_from_float<Tc>(o[1]).bits << 16;
    } else {
      struct alignas(8) pair { float x, y; };
      *(pair *)(void *)p = pair{o[0], o[1]};
    }
    return;
  }
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
kd_gemm_sm90_epilogue(Tc *c, int64_t ldc, const float (&sum)[Cfg::BN / 2],
                      int64_t row0, int64_t col0, const kd_gemm_mma_dims &d) {
  const int t = (int)threadIdx.x % 128, w = t / 32, l = t % 32;
  KD_UNROLL
  for (int i = 0; i < Cfg::BN / 2; i += 2) {
    const int e = i % 64;
    const int64_t row = row0 + 16 * w + l / 4 + 8 * ((e / 2) % 2);
    const int64_t col = col0 + 128 * (i / 64) + 8 * (e / 4) + 2 * (l % 4);
    kd_gemm_sm90_store2<(Cfg::FLAGS & KD_GEMM_SM90_VEC_STORE) != 0>(
        c, ldc, row, col, sum[i], sum[i + 1], d);
  }
}

/* The epilogue through shared memory (TMA_STORE): alpha * sum in C's
 * 16-bit dtype, 64 columns at a time into one of the consumer's two
 * buffers (buf, 16 KiB; [64 rows][64 columns] each, the 128-byte
 * swizzle), each written to C at (col0 + 64 q, row0, z) by one TMA store
 * while the next is filled; a buffer is filled again once the store two
 * quarters back is done reading it. TMA leaves out the rows and columns
 * past C's edges. */
template <class Cfg, typename Tc>
__device__ __forceinline__ void
kd_gemm_sm90_epilogue_tma(const kd_tmap *tc, unsigned char *buf,
                          const float (&sum)[Cfg::BN / 2], int row0, int col0,
                          int z, float alpha, int cw) {
  const int t = (int)threadIdx.x % 128, w = t / 32, l = t % 32;
  KD_UNROLL
  for (int q = 0; q < Cfg::BN / 64; q++) {
    unsigned char *b = buf + (q % 2) * 8192;
    /* Planted bug (arch/kd.h, KD_PLANT_EPI): b written while the store two
     * quarters back may still be reading it. */
    if (t == 0 && KD_PLANTED_AT(KD_PLANT_EPI))
      kd_bulk_wait_read<2>();
    else if (t == 0)
      kd_bulk_wait_read<1>();
    kd_bar_sync(KD_GEMM_SM90_BAR_EPI + cw, 128); /* b is free */
    /* Quarter q: sum elements 32 q .. 32 q + 31 (kd_gemm_sm90_epilogue's map).
     */
    KD_UNROLL
    for (int i = 32 * q; i < 32 * q + 32; i += 2) {
      const int r = 16 * w + l / 4 + 8 * ((i / 2) % 2);
      const int c = 8 * ((i % 32) / 4) + 2 * (l % 4);
      const uint32_t v = (uint32_t)kd_from_float<Tc>(alpha * sum[i]).bits |
                         (uint32_t)kd_from_float<Tc>(alpha * sum[i + 1]).bits
                             << 16;
      *(uint32_t *)(void *)(b + kd_sw128(r, c)) = v;
    }
    kd_fence_proxy_async();
    kd_bar_sync(KD_GEMM_SM90_BAR_EPI + cw, 128); /* b is written */
    if (t == 0) {
      kd_tma_store(tc, col0 + 64 * q, row0, z, b);
      kd_bulk_commit();
    }
  }
}

/* The four k16 multiplies of one BK slab (at sa) into acc, for this
 * consumer's 64 rows (cw) and the tile's chunk j of CW columns; scale 0
 * starts acc from zero. Every descriptor is the slab's two plus a
 * constant offset: computed per (j, k16) they would be hoisted out of a
 * loop over slabs and crowd out the accumulators. */
template <typename T, class Cfg, bool AKC, bool BKC>
__device__ __forceinline__ void kd_gemm_sm90_chunk(float (&acc)[Cfg::CW / 2],
                                                   const unsigned char *sa,
                                                   int cw, int j, int scale) {
  constexpr int BK = Cfg::BK;
  const unsigned char *sb = sa + Cfg::A_BYTES;
  const uint64_t da0 = AKC ? kd_wg_desc_k(sa, 64 * cw, 0)
                           : kd_wg_desc_mn<BK>(sa, 64 * cw, 0);
  const uint64_t db0 = BKC ? kd_wg_desc_k(sb, 0, 0)
                           : kd_wg_desc_mn<BK>(sb, 0, 0);
  KD_UNROLL
  for (int ks = 0; ks < BK / 16; ks++) {
    /* kd_wg_desc_k: 128 bytes a row, 32 per k16; kd_wg_desc_mn: a
     * [BK][64] tile per 64 rows, 2048 bytes per k16. */
    const uint64_t da = kd_wg_desc_add(da0, AKC ? 32 * ks : 2048 * ks);
    const uint64_t db = kd_wg_desc_add(
        db0, BKC ? 128 * Cfg::CW * j + 32 * ks
                 : (Cfg::CW * j / 64) * BK * 128 + 2048 * ks);
    kd_wg_ss<T, Cfg::CW, AKC ? 0 : 1, BKC ? 0 : 1>(acc, da, db,
                                                   scale || ks > 0);
  }
}

/* Gives n consecutive ring slots from s0 back to the producer (each
 * consumer warp arrives once). */
template <int S, int NMAX>
__device__ __forceinline__ void kd_gemm_sm90_release(uint64_t *empty, int s0,
                                                     int n) {
  KD_UNROLL
  for (int i = 0; i < NMAX; i++)
    if (i < n && threadIdx.x % 32 == 0)
      kd_mbar_arrive(&empty[s0 + i < S ? s0 + i : s0 + i - S]);
}

/* The multiplies of interval group g (n slabs from ring slot s0, phase
 * ph0) for chunk j into partial p, waiting for each slab's data when
 * `acquire` (chunk 0 comes first). */
template <typename T, class Cfg, bool AKC, bool BKC>
__device__ __forceinline__ void
kd_gemm_sm90_interval(float (&p)[Cfg::CW / 2], const unsigned char *slots,
                      uint64_t *full, int s0, int ph0, int n, int cw, int j,
                      bool acquire) {
  constexpr int S = Cfg::STAGES;
#if KD_WG__EMU
  memset(p, 0, sizeof p); /* the first multiply's scale 0: never read */
#endif
  /* Slab 0 unconditionally (n >= 1): were the multiplies skippable, p's
   * old values would stay live and crowd out the accumulators. The
   * fences come after the barrier wait: a wait loop between them and the
   * multiplies makes ptxas serialize the multiplies. */
  KD_UNROLL
  for (int i = 0; i < Cfg::EVERY; i++) {
    if (i > 0 && i >= n) break;
    const int si = s0 + i < S ? s0 + i : s0 + i - S;
    if (acquire) kd_mbar_wait(&full[si], s0 + i < S ? ph0 : ph0 ^ 1);
    kd_wg_fence();
    kd_gemm_sm90_chunk<T, Cfg, AKC, BKC>(p, slots + si * Cfg::STAGE_BYTES, cw,
                                         j, i > 0);
  }
}

/* sum[chunk j] += p, once p's multiplies are complete. */
template <class Cfg>
__device__ __forceinline__ void
kd_gemm_sm90_add(float (&sum)[Cfg::BN / 2], float (&p)[Cfg::CW / 2], int j) {
  kd_wg_fence_regs(p);
  KD_UNROLL
  for (int i = 0; i < Cfg::CW / 2; i++) sum[Cfg::CW / 2 * j + i] += p[i];
}

/* A consumer's running state over one tile's promotion groups. */
struct kd_gemm_sm90_ring {
  int s, ph;   /* the next slab's slot and phase */
  int ps0, pn; /* the previous group's slots (OVERLAP) */
};

/* One promotion group: the next n slabs, for each chunk j the
 * unit's partial sum over the group, added into the f32 sum in
 * round-to-nearest. SERIAL waits for each partial before adding it;
 * OVERLAP alternates two partials, unit u = (group, j) in part[u % 2]
 * (B0: the group's first unit's), issuing a unit before it waits for and
 * adds the previous one; FIRST: the tile's first group. Partials indexed
 * and waits placed by constants only: where ptxas cannot prove a partial
 * complete before an instruction reads it, it serializes the multiplies. */
template <int B0, bool FIRST, typename T, class Cfg, bool AKC, bool BKC>
__device__ __forceinline__ void kd_gemm_sm90_group(
    float (&sum)[Cfg::BN / 2],
    float (&part)[Cfg::MODE == KD_GEMM_SM90_OVERLAP ? 2 : 1][Cfg::CW / 2],
    const unsigned char *slots, uint64_t *full, uint64_t *empty,
    kd_gemm_sm90_ring &r, int n, int cw) {
  constexpr int S = Cfg::STAGES, CH = Cfg::CHUNKS;
  const int s0 = r.s, ph0 = r.ph;
  r.s += n;
  if (r.s >= S) r.s -= S, r.ph ^= 1;
  KD_UNROLL
  for (int j = 0; j < CH; j++) {
    if constexpr (Cfg::MODE != KD_GEMM_SM90_OVERLAP) {
      constexpr bool PP = (Cfg::FLAGS & KD_GEMM_SM90_PINGPONG) != 0;
      if constexpr (PP) kd_bar_sync(KD_GEMM_SM90_BAR_TURN + cw, 256);
      kd_gemm_sm90_interval<T, Cfg, AKC, BKC>(part[0], slots, full, s0, ph0, n,
                                              cw, j, j == 0);
      kd_wg_commit();
      if constexpr (PP) kd_bar_arrive(KD_GEMM_SM90_BAR_TURN + 1 - cw, 256);
      kd_wg_wait<0>();
      /* The slabs' last multiplies are complete: the producer may refill
       * them while this warpgroup adds. */
      if (j == CH - 1) kd_gemm_sm90_release<S, Cfg::EVERY>(empty, s0, n);
      kd_gemm_sm90_add<Cfg>(sum, part[0], j);
    } else {
      const int b = (B0 + j) & 1, jp = (j + CH - 1) % CH;
      kd_gemm_sm90_interval<T, Cfg, AKC, BKC>(part[b], slots, full, s0, ph0, n,
                                              cw, j, j == 0);
      kd_wg_commit();
      if (!FIRST || j > 0) {
        /* The previous unit: chunk j - 1 of this group, or the last chunk
         * of the previous one. */
        /* Planted bug (arch/kd.h, KD_PLANT_WAIT): the previous unit's partial
         * read while it may still be in flight. */
        if (KD_PLANTED_AT(KD_PLANT_WAIT))
          kd_wg_wait<2>();
        else
          kd_wg_wait<1>();
        kd_gemm_sm90_add<Cfg>(sum, part[b ^ 1], jp);
        if (jp == CH - 1)
          kd_gemm_sm90_release<S, Cfg::EVERY>(empty, r.ps0, r.pn);
      }
    }
  }
  if constexpr (Cfg::MODE == KD_GEMM_SM90_OVERLAP) r.ps0 = s0, r.pn = n;
}

/* A consumer's main loop for one tile with promotion: K in groups of
 * EVERY slabs (kd_gemm_sm90_group), SERIAL's first of FIRST (the staggered
 * consumer's: EVERY / 2). With an odd number of chunks, groups go in
 * pairs so that each group's partials are constants. */
template <typename T, class Cfg, bool AKC, bool BKC, int FIRST>
__device__ __forceinline__ void
kd_gemm_sm90_promoted(float (&sum)[Cfg::BN / 2], const unsigned char *slots,
                      uint64_t *full, uint64_t *empty, int &s, int &ph,
                      int k_tiles, int cw) {
  constexpr int E = Cfg::EVERY, S = Cfg::STAGES;
  float part[Cfg::MODE == KD_GEMM_SM90_OVERLAP ? 2 : 1][Cfg::CW / 2];
  kd_gemm_sm90_ring r = {s, ph, 0, 0};
  constexpr bool OVL = Cfg::MODE == KD_GEMM_SM90_OVERLAP;
  constexpr bool ODD = OVL && Cfg::CHUNKS % 2 == 1;
  if (k_tiles <= 0) return;
  /* Defined before the first multiply: an undefined partial may be given
   * any register, one in flight too, and ptxas then serializes. */
  KD_UNROLL
  for (int b = 0; b < (OVL ? 2 : 1); b++) {
    KD_UNROLL
    for (int i = 0; i < Cfg::CW / 2; i++) part[b][i] = 0.0f;
  }
  if constexpr (!OVL) {
    int n = FIRST;
    for (int k0 = 0; k0 < k_tiles; k0 += n, n = E) {
      if (n > k_tiles - k0) n = k_tiles - k0;
      kd_gemm_sm90_group<0, true, T, Cfg, AKC, BKC>(sum, part, slots, full,
                                                    empty, r, n, cw);
    }
  } else {
    int k0 = 0, b_last = 0; /* b_last: the last group's B0 */
    bool last = E >= k_tiles;
    kd_gemm_sm90_group<0, true, T, Cfg, AKC, BKC>(sum, part, slots, full, empty,
                                                  r, last ? k_tiles : E, cw);
    while (!last) {
      k0 += E;
      last = k0 + E >= k_tiles;
      kd_gemm_sm90_group<ODD ? 1 : 0, false, T, Cfg, AKC, BKC>(
          sum, part, slots, full, empty, r, last ? k_tiles - k0 : E, cw);
      b_last = ODD ? 1 : 0;
      if (ODD && !last) {
        k0 += E;
        last = k0 + E >= k_tiles;
        kd_gemm_sm90_group<0, false, T, Cfg, AKC, BKC>(
            sum, part, slots, full, empty, r, last ? k_tiles - k0 : E, cw);
        b_last = 0;
      }
    }
    /* The tile's last unit, after the loop: every path leaves it alone in
     * flight (a wait inside the loop's last group would give ptxas two
     * states to merge, and it serializes). */
    constexpr int CH = Cfg::CHUNKS;
    kd_wg_wait<0>();
    if (((b_last + CH - 1) & 1) == 0)
      kd_gemm_sm90_add<Cfg>(sum, part[0], CH - 1);
    else
      kd_gemm_sm90_add<Cfg>(sum, part[1], CH - 1);
    kd_gemm_sm90_release<S, E>(empty, r.ps0, r.pn);
  }
  s = r.s, ph = r.ph;
}

/* The tiles of one GEMM as every warpgroup of a block walks them
 * (persistent: tiles blockIdx.x, + gridDim.x, ...): their counts, and
 * tile t's batch, tile row and tile column in the L2-grouped order. */
template <class Cfg> struct kd_gemm_sm90_walk {
  int64_t m_tiles, n_tiles, k_tiles, tiles;
  __device__
      __forceinline__ explicit kd_gemm_sm90_walk(const kd_gemm_mma_dims &d)
      : m_tiles((d.m + Cfg::BM - 1) / Cfg::BM),
        n_tiles((d.n + Cfg::BN - 1) / Cfg::BN),
        k_tiles(d.alpha != 0.0f ? (d.k + Cfg::BK - 1) / Cfg::BK : 0),
        tiles(m_tiles * n_tiles * d.batch) {}
  __device__ __forceinline__ void at(int64_t t, int64_t *bi, int64_t *mt,
                                     int64_t *nt) const {
    kd_gemm_tile_of_g(t, m_tiles, n_tiles, Cfg::GROUP, bi, mt, nt);
  }
};

/* A consumer warpgroup's walk over its block's tiles: rows 64 cw .. 64 cw
 * + 63 of each, the promotion's first group FIRST slabs long, then the
 * epilogue. */
template <typename T, class Cfg, bool AKC, bool BKC, int FIRST>
__device__ __forceinline__ void
kd_gemm_sm90_consume(const unsigned char *slots, uint64_t *full,
                     uint64_t *empty, unsigned char *epi, const kd_tmap *tc,
                     const kd_gemm_mma_out &c, const kd_gemm_mma_dims &d,
                     int cw) {
  constexpr int BM = Cfg::BM, BN = Cfg::BN, S = Cfg::STAGES;
  constexpr bool PP = (Cfg::FLAGS & KD_GEMM_SM90_PINGPONG) != 0;
  const kd_gemm_sm90_walk<Cfg> walk(d);
  const int64_t k_tiles = walk.k_tiles;
  int s = 0, ph = 0;
  /* Ping-pong: consumer 0 takes the first turn (consumer 1 hands it over
   * up front), and takes consumer 1's last hand-over at the end, so both
   * barriers end their last phase complete. */
  if constexpr (PP)
    if (cw == 1) kd_bar_arrive(KD_GEMM_SM90_BAR_TURN, 256);
  for (int64_t t = blockIdx.x; t < walk.tiles; t += gridDim.x) {
    int64_t bi, mt, nt;
    walk.at(t, &bi, &mt, &nt);
    float sum[BN / 2];
    KD_UNROLL
    for (int i = 0; i < BN / 2; i++) sum[i] = 0.0f;
    if constexpr (Cfg::MODE == KD_GEMM_SM90_UNPROMOTED) {
      int prev = -1;
      for (int64_t kt = 0; kt < k_tiles; kt++) {
        kd_mbar_wait(&full[s], ph);
        const unsigned char *sa = slots + s * Cfg::STAGE_BYTES;
        kd_wg_fence_regs(sum);
        kd_wg_fence();
        KD_UNROLL
        for (int j = 0; j < Cfg::CHUNKS; j++)
          kd_gemm_sm90_chunk<T, Cfg, AKC, BKC>(
              *reinterpret_cast<float(*)[Cfg::CW / 2]>(sum + Cfg::CW / 2 * j),
              sa, cw, j, 1);
        kd_wg_commit();
        kd_wg_wait<1>();
        kd_wg_fence_regs(sum);
        if (prev >= 0) kd_gemm_sm90_release<S, 1>(empty, prev, 1);
        prev = s;
        if (++s == S) s = 0, ph ^= 1;
      }
      kd_wg_wait<0>();
      kd_wg_fence_regs(sum);
      if (prev >= 0) kd_gemm_sm90_release<S, 1>(empty, prev, 1);
    } else {
      kd_gemm_sm90_promoted<T, Cfg, AKC, BKC, FIRST>(sum, slots, full, empty, s,
                                                     ph, (int)k_tiles, cw);
    }
    /* NO_STORE (measuring only): a NaN sum still stores, so the sums
     * stay live. */
    if ((Cfg::FLAGS & KD_GEMM_SM90_NO_STORE) && !(sum[0] != sum[0])) continue;
    const int64_t row0 = mt * BM + 64 * cw, col0 = nt * BN;
    if constexpr ((Cfg::FLAGS & KD_GEMM_SM90_TMA_STORE) != 0) {
      if (epi) {
        unsigned char *buf = epi + 16384 * cw;
        if (c.dtype == KE_F16)
          kd_gemm_sm90_epilogue_tma<Cfg, kd_half>(
              tc, buf, sum, (int)row0, (int)col0, (int)bi, d.alpha, cw);
        else
          kd_gemm_sm90_epilogue_tma<Cfg, kd_bf16>(
              tc, buf, sum, (int)row0, (int)col0, (int)bi, d.alpha, cw);
        continue;
      }
    }
    const int64_t cb = bi * c.batch_stride;
    if (c.dtype == KE_F16)
      kd_gemm_sm90_epilogue<Cfg>((kd_half *)c.data + cb, c.ld, sum, row0, col0,
                                 d);
    else if (c.dtype == KE_BF16)
      kd_gemm_sm90_epilogue<Cfg>((kd_bf16 *)c.data + cb, c.ld, sum, row0, col0,
                                 d);
    else
      kd_gemm_sm90_epilogue<Cfg>((float *)c.data + cb, c.ld, sum, row0, col0,
                                 d);
  }
  if constexpr (PP)
    if (cw == 0) kd_bar_sync(KD_GEMM_SM90_BAR_TURN, 256);
  /* The block's shared memory must outlive the stores' reads of it. */
  if (epi && threadIdx.x % 128 == 0) kd_bulk_wait_read<0>();
}

/* Where B's slabs come from (the kernel's BS): its parameter, the
 * producer warpgroup's loop, the arrivals that complete a slot's "full"
 * barrier, and the register budgets of the producer and the consumers
 * (setmaxnreg; 128 x P + 256 x C within the 64 K registers). This one:
 * B by TMA beside A, one thread of the producer at work. The MX GEMM's
 * (B decoded from MX elements by the whole producer warpgroup) is in
 * tile/mx_sm90.h. */
struct kd_gemm_sm90_b_tma {
  typedef kd_tmap param;
  static constexpr int FULL_ARRIVALS = 1, PRODUCER_REGS = 24,
                       CONSUMER_REGS = 240;

  template <class Cfg, bool AKC, bool BKC>
  static __device__ __forceinline__ void
  produce(const kd_tmap *ta, const kd_tmap *tb, unsigned char *slots,
          uint64_t *full, uint64_t *empty, const kd_gemm_mma_dims &d,
          int a_batched, int b_batched) {
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::STAGES;
    if (threadIdx.x != 0) return;
    const kd_gemm_sm90_walk<Cfg> walk(d);
    const int64_t k_tiles = walk.k_tiles;
    int s = 0, ph = 0;
    for (int64_t t = blockIdx.x; t < walk.tiles; t += gridDim.x) {
      int64_t bi, mt, nt;
      walk.at(t, &bi, &mt, &nt);
      const int m0 = (int)(mt * BM), n0 = (int)(nt * BN);
      const int za = a_batched ? (int)bi : 0, zb = b_batched ? (int)bi : 0;
      for (int64_t kt = 0; kt < k_tiles; kt++) {
        const int k0 = (int)(kt * BK);
        kd_mbar_wait(&empty[s], ph ^ 1);
        kd_mbar_arrive_tx(&full[s], Cfg::STAGE_BYTES);
        unsigned char *sa = slots + s * Cfg::STAGE_BYTES;
        unsigned char *sb = sa + Cfg::A_BYTES;
        if constexpr (AKC) kd_tma_load(sa, ta, k0, m0, za, &full[s]);
        else
          for (int j = 0; j < BM / 64; j++)
            kd_tma_load(sa + j * BK * 128, ta, m0 + 64 * j, k0, za, &full[s]);
        if constexpr (BKC) kd_tma_load(sb, tb, k0, n0, zb, &full[s]);
        else
          for (int j = 0; j < BN / 64; j++)
            kd_tma_load(sb + j * BK * 128, tb, n0 + 64 * j, k0, zb, &full[s]);
        if (++s == S) s = 0, ph ^= 1;
      }
    }
  }
};

template <typename T, class Cfg, bool AKC, bool BKC,
          class BS = kd_gemm_sm90_b_tma>
__global__ void __launch_bounds__(384, 1)
    kd_gemm_sm90(const __grid_constant__ kd_tmap ta,
                 const __grid_constant__ typename BS::param tb,
                 const __grid_constant__ kd_tmap tc, kd_gemm_mma_out c,
                 kd_gemm_mma_dims d, int a_batched, int b_batched, int c_tma) {
  constexpr int S = Cfg::STAGES;
  HIP_DYNAMIC_SHARED(uint4, kd_gemm_sm90_smem);
  /* Slots 1024-byte aligned in the shared window (the swizzle's period). */
  unsigned char *const raw = (unsigned char *)kd_gemm_sm90_smem;
  unsigned char *const slots =
      raw + ((1024 - kd_smem_addr(raw) % 1024) % 1024);
  /* c_tma: C written through the epilogue's buffers and tc (TMA_STORE). */
  unsigned char *const epi = c_tma ? slots + S * Cfg::STAGE_BYTES : nullptr;
  uint64_t *const full =
      (uint64_t *)(slots + S * Cfg::STAGE_BYTES + Cfg::EPI_BYTES);
  uint64_t *const empty = full + S;

  const int wg = (int)threadIdx.x / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; s++) {
      kd_mbar_init(&full[s], BS::FULL_ARRIVALS);
      kd_mbar_init(&empty[s], 8); /* each consumer warp */
    }
    kd_mbar_init_fence();
  }
  __syncthreads();

  if (wg == 0) {
    kd_wg_regs_dec<BS::PRODUCER_REGS>();
    BS::template produce<Cfg, AKC, BKC>(&ta, &tb, slots, full, empty, d,
                                        a_batched, b_batched);
    return;
  }

  kd_wg_regs_inc<BS::CONSUMER_REGS>();
  const int cw = wg - 1; /* rows 64 cw .. 64 cw + 63 of the tile */
  /* Staggered, each consumer its own copy of the loop: a group length
   * that depends on cw inside one loop is a divergent path to ptxas, and
   * it serializes the multiplies there (C7520). */
  if constexpr ((Cfg::FLAGS & KD_GEMM_SM90_STAGGER) != 0) {
    if (cw == 1) {
      kd_gemm_sm90_consume<T, Cfg, AKC, BKC, Cfg::EVERY / 2>(
          slots, full, empty, epi, &tc, c, d, cw);
      return;
    }
  }
  kd_gemm_sm90_consume<T, Cfg, AKC, BKC, Cfg::EVERY>(slots, full, empty, epi,
                                                     &tc, c, d, cw);
}

#endif
