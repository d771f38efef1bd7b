/* Fused attention (prefill) on the Hopper path (arch/sm90.h),
 * FlashAttention-3's structure, for f16 and bf16: the TILED kernel of
 * kernels/attention.hip on a compute capability 9.0 device with an sm_90a
 * build, unless KILN_HOPPER_ATTN=0 turns it off (kernels/attention_sm90.hip).
 *
 * A block is three warpgroups and owns BM = 128 rows of one (batch, kv
 * head), as tile/attn.h defines rows (query major: a GQA group's heads share
 * every K/V tile):
 *   warpgroup 0, the producer: one thread brings each BN-key tile of K and
 *     of V into a ring of STAGES shared-memory slots with TMA (rank-4 maps
 *     over [B][Hkv][Sk][D], boxes of [BN keys][64 d], 128-byte swizzle),
 *     after waiting on the K or V half's own "empty" mbarrier; the copies
 *     complete its "full" mbarrier. It gives its registers away
 *     (setmaxnreg).
 *   warpgroups 1 and 2, the consumers: rows 0-63 and 64-127. Per tile t:
 *     S = Q K^T by wgmma from shared memory (SS; Q staged once, swizzled
 *     like TMA's tiles) and tile t - 1's O += P V by wgmma with P straight
 *     from registers (the RS form: the accumulator layout is the A
 *     fragment's, kd_wg_acc_to_a; V read MN-major from its tile) are
 *     issued together; once S lands, K is freed and the online softmax
 *     runs on S's accumulator registers (a row's four lanes reduce with
 *     two shuffles) while P V may still be in flight (PIPE); then V of
 *     tile t - 1 is freed, O rescaled and P of tile t formed.
 * P is one f16 term, its weights raised by 2^15 (f16; bf16 against an f16
 * copy of V made first with the engine's workspace: TV, kd_attn_sm90_v16_prep):
 * one RS multiply per 16 keys; or two T terms, hi + lo (bf16 without the
 * workspace; as tile/attn_mma.h and docs/kernels-attention.md explain): two. O
 * accumulates in the wgmma's f32 registers; the epilogue divides by l and
 * writes T pairs from registers.
 *
 * Masks, special values and edges are tile/attn_mma.h's: keys at or past Sk
 * come in as zeros (TMA's fill); keys a row must not see are masked to
 * -inf in tiles that cross a limit; a warpgroup skips the products of
 * tiles none of its rows sees (but still frees the slot); a NaN or Inf in
 * V at a key hidden from some of its rows sends that tile's P V lane by
 * lane over each row's visible keys (pv_exact), decided by every warp of
 * the warpgroup alike (a wgmma must be issued by all four or none).
 *
 * Requirements (attention_sm90.hip checks them): f16 or bf16, D a multiple
 * of 8 and at most DP, rows of Q and O 16-byte aligned, K and V bases and
 * strides multiples of 16 bytes that a tensor map holds, a finite nonzero
 * scale (kd_attn_sm90_run).
 */
#ifndef KILN_KERNELS_TILE_ATTN_SM90_H
#define KILN_KERNELS_TILE_ATTN_SM90_H

#include <float.h>

#include "tile/attn.h"
#include "arch/sm90.h"

/* DP padded head dimension (64, 128, 192, 256), BN keys per tile (64 or 128),
 * STAGES K/V slots; PTERMS the form of P: 0 the kernel's (one f16 term where
 * V is f16, else two terms: kd_attn_sm90::ONE16), 2 two terms (hi + lo) for
 * timing, 1 one term of T, P in [0, 1] (round_p; it misses the suite's default
 * tolerance in bf16: docs/kernels-attention.md); PIPE: the softmax overlaps
 * the previous tile's P V (false: both are waited for first); SPLIT_LOOP: the
 * tiles that need a mask run in a loop of their own (kd_attn_sm90_consume);
 * PINGPONG: the two consumer warpgroups take turns issuing their multiplies
 * (named barriers), so that one's softmax runs under the other's. */
template <int DP_, int BN_, int STAGES_, int PTERMS_ = 0, bool PIPE_ = true,
          bool SPLIT_LOOP_ = true, bool PINGPONG_ = false>
struct kd_attn_sm90_cfg {
  static constexpr int DP = DP_, BN = BN_, STAGES = STAGES_;
  static constexpr int PTERMS = PTERMS_;
  static constexpr bool PIPE = PIPE_, SPLIT_LOOP = SPLIT_LOOP_;
  static constexpr bool PINGPONG = PINGPONG_;
  static constexpr int BM = 128, THREADS = 384, DCH = DP / 64;
  /* O's wgmma width: whole 128 columns where D allows. */
  static constexpr int OW = DP % 128 == 0 ? 128 : 64, ON = DP / OW;
  static constexpr int Q_BYTES = BM * DP * 2, KV_BYTES = BN * DP * 2;
  static constexpr int STAGE_BYTES = 2 * KV_BYTES;
  /* Q, the slots, a V-sized tile of zeros (kd_attn_sm90_consume), then the
   * barriers: K and V have their own, full and empty, per slot. */
  static constexpr int SMEM = 1024 + Q_BYTES + STAGES * STAGE_BYTES +
                              KV_BYTES + 4 * STAGES * 8;
  static_assert(DP % 64 == 0 && DP <= 256, "whole 64-column chunks");
  static_assert(BN == 64 || BN == 128, "wgmma N of 64 or 128");
  static_assert(SMEM <= 227 * 1024, "shared memory of one block");
};

/* Stores of 16 and 4 bytes, loads of 2, at aligned addresses (memcpy on
 * the host keeps its compiler's aliasing rules; one access on the GPU). */
template <typename U>
__device__ __forceinline__ void kd_attn_sm90_put(void *p, const U &v) {
#if defined(KILN_BACKEND_HOST)
  memcpy(p, &v, sizeof v);
#else
  *(U *)p = v;
#endif
}
template <typename U>
__device__ __forceinline__ U kd_attn_sm90_get(const void *p) {
#if defined(KILN_BACKEND_HOST)
  U v;
  memcpy(&v, p, sizeof v);
  return v;
#else
  return *(const U *)p;
#endif
}

/* T: the type of Q, K and O. TV: the type of V's tiles and of P, T or,
 * for bf16 T, kd_half: V converted to f16 beforehand with a power-of-two
 * scale per (batch, kv head) (kd_attn_sm90_v16_prep, exact for every finite
 * bf16 value at or above 2^-38 of the head's largest). Where V is f16
 * (f16 T, or that copy) the kernel's form rounds P once to f16, 2^-11
 * relative (torch's rounding of P in f16, eight times finer than bf16's
 * single one): one RS multiply per 16 keys. */
template <typename T, class C, typename TV = T> struct kd_attn_sm90 {
  static constexpr int BN = C::BN, DP = C::DP, OW = C::OW, ON = C::ON;
  static constexpr bool V16 = !std::is_same<T, TV>::value;
  /* P once in f16, raised (below). */
  static constexpr bool ONE16 =
      C::PTERMS == 0 && std::is_same<TV, kd_half>::value;
  static_assert(!V16 || (std::is_same<T, kd_bf16>::value && ONE16),
                "V in f16 for bf16 inputs and the kernel's form only");
  /* P as hi + lo (two RS multiplies per 16 keys) or hi alone. */
  static constexpr bool SPLIT = C::PTERMS == 2 || (C::PTERMS == 0 && !ONE16);
  /* The exponent P's weights are raised by where P is one f16 term: the
   * largest is 2^15, so that f16's subnormal range (below 2^-14) starts
   * at 2^-29 of it; l and O carry the same factor, which O / l cancels. */
  static constexpr float P_SHIFT = ONE16 ? 15.0f : 0.0f;
  typedef kd_attn_block<T> geom;

  /* Q rows [0, 128) into [128][64] tiles, one per 64 columns, at the
   * swizzled addresses TMA would use; zeros past the rows and past D.
   * neg: Q negated (sign bits flipped, exact), so that the scores are
   * scaled by |scale| (kd_attn_sm90_consume). */
  static __device__ __forceinline__ void load_q(const ke__attention_desc &a,
                                                const geom &g, bool neg,
                                                unsigned char *qs) {
    constexpr int CH = DP / 8;
    for (int idx = threadIdx.x; idx < C::BM * CH; idx += C::THREADS) {
      const int r = idx / CH, c = idx % CH;
      const int64_t rr = g.row0 + r;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (rr < g.rows_total && 8 * c < a.d)
        v = kd_ld16(g.row(g.q, a.q_stride, rr) + 8 * c);
      if (neg) {
        v.x ^= 0x80008000u, v.y ^= 0x80008000u;
        v.z ^= 0x80008000u, v.w ^= 0x80008000u;
      }
      kd_attn_sm90_put(qs + (c / 8) * (C::BM * 128) + kd_sw128(r, 8 * (c % 8)),
                       v);
    }
  }

  /* V element (key j, column d) of a slot's V tiles. */
  static __device__ __forceinline__ float v_at(const unsigned char *vs, int j,
                                               int d) {
    TV x;
    x.bits = kd_attn_sm90_get<uint16_t>(vs + (d / 64) * (BN * 128) +
                                        kd_sw128(j, d % 64));
    return kd_to_float(x);
  }

  /* Whether any V element of keys [r0, r1) of the slot is NaN or Inf; every
   * warp scans them all, so the answer is the warpgroup's. */
  static __device__ __forceinline__ bool v_nonfinite(const unsigned char *vs,
                                                     int r0, int r1) {
    const unsigned expo =
        std::is_same<TV, kd_bf16>::value ? 0x7f80u : 0x7c00u;
    bool bad = false;
    const int per_row = C::DCH * 8; /* 16-byte chunks a key row holds */
    for (int idx = (int)threadIdx.x % 32 + r0 * per_row; idx < r1 * per_row;
         idx += 32) {
      const int j = idx / per_row, q = idx % per_row;
      const uint4 u = kd_attn_sm90_get<uint4>(vs + (q / 8) * (BN * 128) +
                                              128 * j + 16 * (q % 8));
      const uint32_t e[4] = {u.x, u.y, u.z, u.w};
      KD_UNROLL
      for (int i = 0; i < 8; i++)
        bad |= ((e[i / 2] >> (16 * (i % 2))) & expo) == expo;
    }
    return __any(bad) != 0;
  }
};

/* O += P V over each row's visible keys only, f32 weights, lane by lane,
 * for tiles whose hidden keys hold a NaN or Inf in V (rare): key j's
 * weight of row half h sits in lane 4 (l / 4) + (j % 8) / 2 at
 * s[4 (j / 8) + 2 h + j % 2]. Out of line on copies of s and O, indexed at
 * run time, so that the main loop keeps its arrays in registers. */
#if defined(KILN_BACKEND_HOST)
#define KD_ATTN_SM90_NOINLINE __attribute__((noinline))
#else
#define KD_ATTN_SM90_NOINLINE __noinline__
#endif
template <typename T, class C, typename TV>
__device__ KD_ATTN_SM90_NOINLINE void
kd_attn_sm90_pv_exact(const unsigned char *vs, int k0, const float *s, float *o,
                      int lim0, int lim1) {
  constexpr int BN = C::BN, OW = C::OW;
  const int l = (int)threadIdx.x % 32;
  for (int j = 0; j < BN; j++) {
    const int src = 4 * (l / 4) + (j % 8) / 2;
    const float p0 = __shfl(s[4 * (j / 8) + j % 2], src);
    const float p1 = __shfl(s[4 * (j / 8) + 2 + j % 2], src);
    for (int e = 0; e < C::ON * OW / 2; e++) {
      const int n = e / (OW / 2), i = e % (OW / 2), h = (i / 2) % 2;
      if (j >= (h ? lim1 : lim0) - k0) continue;
      const int d = OW * n + 8 * (i / 4) + 2 * (l % 4) + i % 2;
      o[e] = fmaf(h ? p1 : p0, kd_attn_sm90<T, C, TV>::v_at(vs, j, d), o[e]);
    }
  }
}

/* The mbarriers of the K/V ring, S = C::STAGES each: K of a slot is freed
 * once S = Q K^T has read it, V once O += P V has. */
struct kd_attn_sm90_bars {
  uint64_t *full_k, *full_v, *empty_k, *empty_v;
};

/* The producer thread: each K and V tile into the next slot, after the
 * consumers freed it. */
template <typename T, class C>
__device__ __forceinline__ void
kd_attn_sm90_produce(const kd_tmap *tk, const kd_tmap *tv, unsigned char *slots,
                     kd_attn_sm90_bars b, int ntiles, int hk, int bz) {
  constexpr int BN = C::BN, S = C::STAGES;
  for (int t = 0; t < ntiles; t++) {
    const int s = t % S, ph = (t / S) & 1;
    unsigned char *ks = slots + s * C::STAGE_BYTES, *vs = ks + C::KV_BYTES;
    kd_mbar_wait(&b.empty_k[s], ph ^ 1);
    kd_mbar_arrive_tx(&b.full_k[s], C::KV_BYTES);
    KD_UNROLL
    for (int c = 0; c < C::DCH; c++)
      kd_tma_load4(ks + c * BN * 128, tk, 64 * c, t * BN, hk, bz, &b.full_k[s]);
    kd_mbar_wait(&b.empty_v[s], ph ^ 1);
    kd_mbar_arrive_tx(&b.full_v[s], C::KV_BYTES);
    KD_UNROLL
    for (int c = 0; c < C::DCH; c++)
      kd_tma_load4(vs + c * BN * 128, tv, 64 * c, t * BN, hk, bz, &b.full_v[s]);
  }
}

/* O += P V for one tile: P's A registers (hi, and lo where SPLIT) times V
 * read MN-major from its slot; issued, not committed or waited for. */
template <typename T, class C, typename TV>
__device__ __forceinline__ void
kd_attn_sm90_pv(float (&oacc)[C::ON][C::OW / 2],
                const uint32_t (&phi)[C::BN / 16][4],
                const uint32_t (&plo)[C::BN / 16][4], const unsigned char *vs) {
  constexpr int OW = C::OW;
  KD_UNROLL
  for (int kk = 0; kk < C::BN / 16; kk++)
    KD_UNROLL
    for (int n = 0; n < C::ON; n++) {
      const uint64_t db = kd_wg_desc_mn<C::BN>(vs, OW * n, kk);
      kd_wg_rs<TV, OW, 1>(oacc[n], phi[kk], db, 1);
      if constexpr (kd_attn_sm90<T, C, TV>::SPLIT)
        kd_wg_rs<TV, OW, 1>(oacc[n], plo[kk], db, 1);
    }
}

/* The ping-pong's named barriers (kd_bar_sync / kd_bar_arrive): warpgroup
 * cw issues its multiplies after a sync on barrier 1 + cw and then
 * arrives on the other's, 2 - cw; 128 threads of each warpgroup make the
 * 256. Ids 1 and 2: 0 is __syncthreads's. */
enum { KD_ATTN_SM90_BAR = 1, KD_ATTN_SM90_BAR_COUNT = 256 };

/* The tiles consumer warpgroup cw sees (kd_attn_sm90_consume): a prefix of the
 * ntiles, up to the last row's limit. */
template <typename T>
__device__ __forceinline__ int kd_attn_sm90_nvis(const ke__attention_desc &a,
                                                 const kd_attn_block<T> &g,
                                                 int cw, int bn, int ntiles) {
  const int64_t row0 = g.row0 + 64 * cw;
  if (row0 >= g.rows_total) return 0;
  const int64_t last =
      (row0 + 64 < g.rows_total ? row0 + 64 : g.rows_total) - 1;
  const int lim = g.lim(a, last);
  if (lim <= 0) return 0;
  const int64_t n = ((int64_t)lim + bn - 1) / bn;
  return n < ntiles ? (int)n : ntiles;
}

/* A consumer warpgroup (cw 0 or 1): rows 64 cw .. 64 cw + 63 of the
 * block, from S = Q K^T to the written O. Pipelined: tile t's S = Q K^T
 * and tile t - 1's O += P V are issued together, the softmax of tile t
 * runs while P V is in flight (wait_group 1), and O is rescaled after it
 * lands (wait_group 0). No wgmma sits in a branch (ptxas serialises every
 * wgmma of a kernel where one does): where there is no previous P V (the
 * first tile, or one done lane by lane) the P V is issued anyway, against
 * the zero tile zv, adding nothing.
 *
 * PINGPONG: the two warpgroups issue their multiplies in turns, turn t
 * being tile t: warpgroup cw waits on its barrier before issuing, then
 * arrives on the other's, and warpgroup 1 opens warpgroup 0's first turn.
 * The tensor core runs each turn's multiplies in issue order, so while
 * one warpgroup's softmax runs the other's multiplies do. Both take the
 * same number of turns (the larger of the two warpgroups' tiles: one that
 * sees fewer takes its last turns without multiplies), and warpgroup 1
 * does not arrive after the last, so every phase of both barriers
 * completes.
 *
 * c = |scale| log2(e) > 0 (Q was negated for a negative scale): a weight
 * is exp2(c s - m), m the row's scaled max so far. */
template <typename T, class C, typename TV>
__device__ __forceinline__ void
kd_attn_sm90_consume(const ke__attention_desc &a, const kd_attn_block<T> &g,
                     const unsigned char *qs, const unsigned char *slots,
                     const unsigned char *zv, kd_attn_sm90_bars b, int ntiles,
                     int cw, float c, float vscale) {
  typedef kd_attn_sm90<T, C, TV> K;
  constexpr int BN = C::BN, DP = C::DP, S = C::STAGES, OW = C::OW,
                ON = C::ON, NP = BN / 16;
  const int t128 = (int)threadIdx.x % 128;
  const int w = t128 / 32, l = t128 % 32;
  /* This warpgroup's rows, and this thread's two (row halves h). */
  const int64_t wg_row0 = g.row0 + 64 * cw;
  const bool wg_rows = wg_row0 < g.rows_total;
  const int64_t wg_last =
      (wg_row0 + 64 < g.rows_total ? wg_row0 + 64 : g.rows_total) - 1;
  const int wg_min_lim = wg_rows ? g.lim(a, wg_row0) : 0;
  const int wg_max_lim = wg_rows ? g.lim(a, wg_last) : 0;
  int lim[2];
  KD_UNROLL
  for (int h = 0; h < 2; h++) {
    const int64_t rr = wg_row0 + 16 * w + l / 4 + 8 * h;
    lim[h] = rr < g.rows_total ? g.lim(a, rr) : wg_max_lim;
  }
  /* The tiles this warpgroup sees are a prefix: the rest it only frees. */
  const int nvis = kd_attn_sm90_nvis(a, g, cw, BN, ntiles);
  /* Ping-pong turns: as many as the other warpgroup takes. */
  const int other =
      C::PINGPONG ? kd_attn_sm90_nvis(a, g, 1 - cw, BN, ntiles) : 0;
  const int turns = nvis > other ? nvis : other;
  /* Planted bug (arch/kd.h, KD_PLANT_PINGPONG): each warpgroup arrives on its
   * own barrier, so warpgroup 0's never completes. */
  const int bar_mine = KD_ATTN_SM90_BAR + cw,
            bar_other = KD_PLANTED_AT(KD_PLANT_PINGPONG)
                            ? bar_mine
                            : KD_ATTN_SM90_BAR + 1 - cw;
  if (C::PINGPONG && cw == 1 && turns > 0)
    kd_bar_arrive(bar_other, KD_ATTN_SM90_BAR_COUNT);

  float oacc[ON][OW / 2], m[2] = {-INFINITY, -INFINITY}, lsum[2] = {0, 0};
  KD_UNROLL
  for (int n = 0; n < ON; n++)
    KD_UNROLL
    for (int i = 0; i < OW / 2; i++) oacc[n][i] = 0.0f;
  /* P of tile pv (its P V still to do); -1: none, and P (finite: zeros
   * or an earlier tile's weights) is multiplied by the zero tile. */
  uint32_t phi[NP][4], plo[NP][4];
  KD_UNROLL
  for (int kk = 0; kk < NP; kk++)
    KD_UNROLL
    for (int r = 0; r < 4; r++) phi[kk][r] = plo[kk][r] = 0;
  int pv = -1;

  /* One tile; MASK 1: it crosses a row's limit, 0: it does not, 2: test
   * it. The tiles that do are a suffix; with SPLIT_LOOP they run in a loop
   * of their own, so that no branch (which ptxas takes as divergent)
   * separates wgmma.wait_group 1 from 0: across one, ptxas waits for
   * everything at the branch and the overlap is lost. */
  auto tile = [&](const int t, auto mask) {
    constexpr int MASK = decltype(mask)::value;
    const int k0 = t * BN, s = t % S, ph = (t / S) & 1;
    const unsigned char *ks = slots + s * C::STAGE_BYTES;
    const unsigned char *vs = ks + C::KV_BYTES;
    kd_mbar_wait(&b.full_k[s], ph);
    /* The V the previous tile's P multiplies (every wait before the
     * wgmma.fence: a divergent spin between it and a wgmma makes ptxas
     * serialise them). */
    const unsigned char *vp = zv;
    if (pv >= 0) {
      kd_mbar_wait(&b.full_v[pv % S], (pv / S) & 1);
      vp = slots + (pv % S) * C::STAGE_BYTES + C::KV_BYTES;
    }
    /* S = Q K^T: Q K-major [64 rows][64 d] slices, K K-major [BN][64]. */
    float sacc[BN / 2];
#if KD_WG__EMU
    memset(sacc, 0, sizeof sacc); /* scale_d 0 below: never read */
#endif
    if constexpr (C::PINGPONG) kd_bar_sync(bar_mine, KD_ATTN_SM90_BAR_COUNT);
    kd_wg_fence_regs(sacc);
    kd_wg_fence();
    KD_UNROLL
    for (int kd = 0; kd < DP / 16; kd++) {
      const uint64_t da =
          kd_wg_desc_k(qs + (kd / 4) * (C::BM * 128), 64 * cw, kd % 4);
      const uint64_t db = kd_wg_desc_k(ks + (kd / 4) * (BN * 128), 0, kd % 4);
      kd_wg_ss<T, BN, 0, 0>(sacc, da, db, kd);
    }
    kd_wg_commit();
    /* The previous tile's O += P V, in flight during the softmax. */
    kd_attn_sm90_pv<T, C, TV>(oacc, phi, plo, vp);
    kd_wg_commit();
    if constexpr (C::PINGPONG)
      if (!(cw == 1 && t == turns - 1))
        kd_bar_arrive(bar_other, KD_ATTN_SM90_BAR_COUNT);
    if constexpr (C::PIPE)
      kd_wg_wait<1>();
    else
      kd_wg_wait<0>();
    kd_wg_fence_regs(sacc);
    if (l == 0) kd_mbar_arrive(&b.empty_k[s]); /* K read */

    /* Scores masked where the tile crosses a limit (key positions
     * relative to k0: no int overflow near 2^31). They stay unscaled: c > 0
     * keeps their order, so a row's max is taken first and scaled once, and
     * each weight is one fma and one exp2 from its score. */
    if (MASK == 1 || (MASK == 2 && BN > wg_min_lim - k0)) {
      KD_UNROLL
      for (int i = 0; i < BN / 2; i++)
        if (8 * (i / 4) + 2 * (l % 4) + i % 2 >= lim[(i / 2) % 2] - k0)
          sacc[i] = -INFINITY;
    }
    /* Running max; a row with nothing visible yet subtracts 0. */
    float sub[2], alpha[2];
    KD_UNROLL
    for (int h = 0; h < 2; h++) {
      float mx = -INFINITY;
      KD_UNROLL
      for (int i = 0; i < BN / 2; i++)
        if ((i / 2) % 2 == h) mx = fmaxf(mx, sacc[i]);
      mx = fmaxf(mx, __shfl_xor(mx, 1));
      mx = fmaxf(mx, __shfl_xor(mx, 2));
      /* m in the log2 domain, as rounded: alpha is exactly 1 while the
       * max holds, and the weights telescope over the rescalings. */
      const float mn = fmaxf(m[h], mx * c);
      sub[h] = mn == -INFINITY ? 0.0f : mn;
      alpha[h] = kd_exp2_weight(m[h] - sub[h]);
      m[h] = mn;
      lsum[h] *= alpha[h];
    }
    KD_UNROLL
    for (int i = 0; i < BN / 2; i++) {
      const int h = (i / 2) % 2;
      sacc[i] = kd_exp2_weight(fmaf(sacc[i], c, K::P_SHIFT - sub[h]));
      lsum[h] += sacc[i];
    }

    /* The softmax is register arithmetic the compiler could sink below
     * the wait (no memory access orders it): pin it here, so that it runs
     * while P V is in flight. */
    kd_wg_fence_regs(sacc);
    kd_wg_fence_regs(lsum);
    kd_wg_fence_regs(alpha);
    if (KD_PLANTED_AT(KD_PLANT_WAIT)) {
      /* Planted bug (arch/kd.h, KD_PLANT_WAIT): O rescaled before the wait,
       * while the previous tile's P V may still land. */
      KD_UNROLL
      for (int n = 0; n < ON; n++)
        KD_UNROLL
        for (int i = 0; i < OW / 2; i++) oacc[n][i] *= alpha[(i / 2) % 2];
    }
    /* The previous tile's P V has landed: free its V, rescale O. */
    kd_wg_wait<0>();
    KD_UNROLL
    for (int n = 0; n < ON; n++) kd_wg_fence_regs(oacc[n]);
    if (t > 0) {
#if !defined(KILN_BACKEND_HIP) /* (never launched on AMD) */
      __syncwarp(); /* every lane is done with the slot (pv_exact reads it) */
#endif
      if (l == 0) kd_mbar_arrive(&b.empty_v[(t - 1) % S]);
    }
    if (!KD_PLANTED_AT(KD_PLANT_WAIT)) {
      KD_UNROLL
      for (int n = 0; n < ON; n++)
        KD_UNROLL
        for (int i = 0; i < OW / 2; i++) oacc[n][i] *= alpha[(i / 2) % 2];
    }

    /* Causal tiles: keys in [wg_min_lim, min(Sk, k0 + BN)) are loaded
     * but hidden from some rows of the warpgroup. */
    const int hid0 = wg_min_lim - k0 > 0 ? wg_min_lim - k0 : 0;
    const int hid1 = a.sk - k0 < BN ? (int)(a.sk - k0) : BN;
    bool exact = false;
    if (a.causal && hid0 < hid1) {
      kd_mbar_wait(&b.full_v[s], ph);
      exact = K::v_nonfinite(vs, hid0, hid1);
    }
    if (exact) {
      float st[BN / 2], ot[ON * OW / 2];
      KD_UNROLL
      for (int i = 0; i < BN / 2; i++) st[i] = sacc[i];
      KD_UNROLL
      for (int e = 0; e < ON * OW / 2; e++) ot[e] = oacc[e / (OW / 2)][e % (OW / 2)];
      kd_attn_sm90_pv_exact<T, C, TV>(vs, k0, st, ot, lim[0], lim[1]);
      KD_UNROLL
      for (int e = 0; e < ON * OW / 2; e++) oacc[e / (OW / 2)][e % (OW / 2)] = ot[e];
      pv = -1;
    } else {
      /* P to A registers: hi (and lo) per 16 keys, for the next round. */
      KD_UNROLL
      for (int kk = 0; kk < NP; kk++) {
        if constexpr (K::SPLIT)
          kd_wg_acc_to_a2<T>(phi[kk], plo[kk], sacc + 8 * kk);
        else
          kd_wg_acc_to_a<TV>(phi[kk], sacc + 8 * kk);
        kd_wg_fence_a(phi[kk]);
        if constexpr (K::SPLIT) kd_wg_fence_a(plo[kk]);
      }
      KD_UNROLL
      for (int n = 0; n < ON; n++) kd_wg_fence_regs(oacc[n]);
      pv = t;
    }
  };
  /* Tiles whose every key every row of the warpgroup sees, then the rest. */
  const int nfull = wg_min_lim <= 0 ? 0 : (wg_min_lim / BN < nvis ? wg_min_lim / BN : nvis);
  if constexpr (C::SPLIT_LOOP) {
    for (int t = 0; t < nfull; t++) tile(t, std::integral_constant<int, 0>());
    for (int t = nfull; t < nvis; t++)
      tile(t, std::integral_constant<int, 1>());
  } else {
    for (int t = 0; t < nvis; t++) tile(t, std::integral_constant<int, 2>());
  }
  /* The last seen tile's P V, then its V freed. */
  {
    const unsigned char *vp = zv;
    if (pv >= 0) {
      kd_mbar_wait(&b.full_v[pv % S], (pv / S) & 1);
      vp = slots + (pv % S) * C::STAGE_BYTES + C::KV_BYTES;
    }
    kd_wg_fence();
    kd_attn_sm90_pv<T, C, TV>(oacc, phi, plo, vp);
  }
  kd_wg_commit();
  kd_wg_wait<0>();
  KD_UNROLL
  for (int n = 0; n < ON; n++) kd_wg_fence_regs(oacc[n]);
  if (nvis > 0) {
#if !defined(KILN_BACKEND_HIP)
    __syncwarp();
#endif
    if (l == 0) kd_mbar_arrive(&b.empty_v[(nvis - 1) % S]);
  }
  /* Tiles none of this warpgroup's rows sees: only freed (after they
   * arrived, so that each release counts for its own tile); with ping-pong
   * the turns the other warpgroup still takes are taken here, empty. */
  for (int t = nvis; t < ntiles; t++) {
    if (C::PINGPONG && t < turns) {
      kd_bar_sync(bar_mine, KD_ATTN_SM90_BAR_COUNT);
      if (!(cw == 1 && t == turns - 1))
        kd_bar_arrive(bar_other, KD_ATTN_SM90_BAR_COUNT);
    }
    const int s = t % S, ph = (t / S) & 1;
    kd_mbar_wait(&b.full_k[s], ph);
    kd_mbar_wait(&b.full_v[s], ph);
    if (l == 0) {
      kd_mbar_arrive(&b.empty_k[s]);
      kd_mbar_arrive(&b.empty_v[s]);
    }
  }

  /* O / l (times V's scale where V was converted), rounded to T, written
   * in element pairs from registers. */
  KD_UNROLL
  for (int h = 0; h < 2; h++) {
    lsum[h] += __shfl_xor(lsum[h], 1);
    lsum[h] += __shfl_xor(lsum[h], 2);
  }
  KD_UNROLL
  for (int h = 0; h < 2; h++) {
    const int64_t rr = wg_row0 + 16 * w + l / 4 + 8 * h;
    if (rr >= g.rows_total) continue;
    /* l == 0: no visible key (or only -inf scores): zeros. */
    const float inv = lsum[h] == 0.0f ? 0.0f : 1.0f / lsum[h];
    T *orow = g.row(g.o, a.o_stride, rr);
    KD_UNROLL
    for (int n = 0; n < ON; n++)
      KD_UNROLL
      for (int i = 2 * h; i < OW / 2; i += 4) {
        const int d = OW * n + 8 * (i / 4) + 2 * (l % 4);
        if (d >= a.d) continue;
        float o0 = oacc[n][i] * inv, o1 = oacc[n][i + 1] * inv;
        if constexpr (K::V16) o0 *= vscale, o1 *= vscale;
        const T v0 = kd_from_float<T>(inv == 0.0f ? 0.0f : o0);
        const T v1 = kd_from_float<T>(inv == 0.0f ? 0.0f : o1);
        const uint32_t pair = (uint32_t)v0.bits | (uint32_t)v1.bits << 16;
        kd_attn_sm90_put(orow + d, pair);
      }
  }
}

/* vscale: where TV is not T, the factor O takes back per (batch, kv head)
 * (kd_attn_sm90_v16_prep), else unused. */
template <typename T, class C, typename TV>
__global__ void __launch_bounds__(384, 1)
    kd_attn_sm90_fwd(const __grid_constant__ kd_tmap tk,
                     const __grid_constant__ kd_tmap tv,
                     const T *__restrict__ q, const T *__restrict__ k,
                     const T *__restrict__ v, T *__restrict__ o,
                     ke__attention_desc a, float scale_log2,
                     const float *__restrict__ vscale) {
  typedef kd_attn_sm90<T, C, TV> K;
  constexpr int BN = C::BN, S = C::STAGES;
  HIP_DYNAMIC_SHARED(uint4, kd_attn_sm90_smem);
  unsigned char *const raw = (unsigned char *)kd_attn_sm90_smem;
  unsigned char *const qs = raw + ((1024 - kd_smem_addr(raw) % 1024) % 1024);
  unsigned char *const slots = qs + C::Q_BYTES;
  unsigned char *const zv = slots + S * C::STAGE_BYTES;
  uint64_t *const bar = (uint64_t *)(zv + C::KV_BYTES);
  const kd_attn_sm90_bars b = {bar, bar + S, bar + 2 * S, bar + 3 * S};

  typename K::geom g;
  g.init(a, q, k, v, o, C::BM); /* k, v: only the rows' geometry */
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; s++) {
      kd_mbar_init(&b.full_k[s], 1);
      kd_mbar_init(&b.full_v[s], 1);
      kd_mbar_init(&b.empty_k[s], 8); /* each consumer warp */
      kd_mbar_init(&b.empty_v[s], 8);
    }
    kd_mbar_init_fence();
  }
  K::load_q(a, g, scale_log2 < 0.0f, qs);
  for (int i = (int)threadIdx.x; i < C::KV_BYTES / 16; i += C::THREADS)
    kd_attn_sm90_put(zv + 16 * i, make_uint4(0, 0, 0, 0));
  kd_fence_proxy_async(); /* Q's and the zeros' stores are read by wgmma */
  __syncthreads();

  const int ntiles = (int)(((int64_t)g.kv_end + BN - 1) / BN);
  const int wg = (int)threadIdx.x / 128;
  /* One if/else, a role per branch: what setmaxnreg needs to take. */
  if (wg == 0) {
    kd_wg_regs_dec<24>();
    if (threadIdx.x == 0)
      kd_attn_sm90_produce<T, C>(&tk, &tv, slots, b, ntiles, (int)g.hk,
                                 (int)g.bz);
  } else {
    kd_wg_regs_inc<240>();
    kd_attn_sm90_consume<T, C, TV>(a, g, qs, slots, zv, b, ntiles, wg - 1,
                                   fabsf(scale_log2),
                                   K::V16 ? vscale[g.bz * a.hkv + g.hk] : 1.0f);
  }
}

#endif
