/* Split-key decode on the matrix units (prefix kd_decode_mma_): the scan and
 * the in-block merge of tile/decode.h's core for 16-bit K/V with 16-byte rows,
 * D a multiple of 8 up to 128, and rows that all see the same keys (dense
 * decode without a causal limit inside the range, paged attention). The
 * split, the partial rows and the last block's merge are tile/decode.h's
 * (kd_decode_finish), unchanged.
 *
 * Why. The SIMT core gives each key to a group of L lanes that hold 8
 * dimensions each: a key costs every lane 8 FMAs per row for the score, 4
 * shuffles per row to sum it, the softmax update and 8 FMAs per row for V,
 * about 65 warp instructions a key at D 128 and 4 rows; on the H100 that
 * instruction stream, not DRAM, bounded it (docs/decisions/decode.md). Here a
 * warp takes 16 keys at a time: the rows of the tile (padded to 16) are
 * the M of a 16 x 16 x 16 product, so S = Q K^T is D / 16 products and
 * O += P V is 2 D / 16 (P as two 16-bit terms, tile/attn_mma.h's PSPLIT:
 * one rounding of P moves outputs past the attention tolerance), with the
 * softmax on the 8 score elements a lane holds: about 7 warp instructions
 * a key.
 *
 * Work split. A block of KD_DECODE_THREADS threads is NW warps; a step is
 * 16 keys per warp (warp w: keys base + 16 w .. + 15), and each warp
 * streams its own K and V tiles (kd_mma_tile, swizzled) through S stages
 * of shared memory with 16-byte asynchronous copies, S - 1 steps ahead of
 * its math. A warp's tiles are read only by that warp, so the pipeline
 * needs warp barriers only. Keys at or past n are zero-filled (never read)
 * and their scores set to -inf. Q is staged once (element loads, any
 * alignment) and held as A fragments.
 *
 * Special values, as the SIMT core: a NaN or +inf score makes the row's
 * sum NaN, -inf scores weigh 0, a NaN in V at a key of the range reaches
 * the row at any weight (0 * NaN on the matrix unit), and zero-filled keys
 * hold zeros.
 */
#ifndef KILN_KERNELS_TILE_DECODE_MMA_H
#define KILN_KERNELS_TILE_DECODE_MMA_H

#include "tile/decode.h"
#include "arch/mma.h"

#define KD_DECODE_MMA_KEYS 16 /* keys per warp per step */

/* The warp's lanes meet, each seeing the others' shared-memory writes.
 * The launchers instantiate these kernels for kd_mma_nv only, and HIP's
 * toolchain has no __syncwarp: there it is never reached. */
__device__ __forceinline__ void kd_decode_mma_syncwarp() {
#if defined(KILN_BACKEND_HIP)
  KD_MMA__UNAVAILABLE();
#else
  __syncwarp();
#endif
}

template <class Arch, typename T, int DP, int S> struct kd_decode_mma {
  static constexpr int CH = DP / 8, KD = DP / 16;
  static constexpr int NW = KD_DECODE_THREADS / Arch::WARP;
  static constexpr int STEP = NW * KD_DECODE_MMA_KEYS;
  static constexpr int SLOTS = Arch::ROW_SLOTS, CE = Arch::C_ELEMS;
  /* Copies per lane of one 16-key tile. */
  static constexpr int NC =
      (KD_DECODE_MMA_KEYS * CH + Arch::WARP - 1) / Arch::WARP;
  typedef kd_mma_tile<CH> Tile;
  typedef typename Arch::frag_a FA;
  typedef typename Arch::frag_b FB;
  typedef typename Arch::frag_c FC;
  /* Shared memory in 16-bit elements: Q (16 rows), then per stage and
   * warp a K tile and a V tile. */
  static constexpr int TILE = KD_DECODE_MMA_KEYS * Tile::STRIDE * 8;
  static constexpr int Q_ELEMS = TILE;
  static constexpr size_t BYTES =
      2 * ((size_t)Q_ELEMS + (size_t)S * NW * 2 * TILE);
  static_assert(DP % 16 == 0 && DP <= 128 && S >= 2, "bad decode tile");

  static __device__ __forceinline__ Tile ktile(uint16_t *sm, int st, int w) {
    return {sm + Q_ELEMS + ((st * NW + w) * 2) * TILE};
  }
  static __device__ __forceinline__ Tile vtile(uint16_t *sm, int st, int w) {
    return {sm + Q_ELEMS + ((st * NW + w) * 2 + 1) * TILE};
  }
};

/* One warp's rows after the scan: running max and sum per row slot (the
 * sum reduced over the lanes holding the row) and O as C fragments. */
template <class Arch, int KD> struct kd_decode_mma_state {
  typename Arch::frag_c o[KD];
  float m[Arch::ROW_SLOTS], l[Arch::ROW_SLOTS];
};

/* Streams the n keys kb .. kb + n - 1 of src for the RT rows of the block,
 * whose Q elements qbits(r, e) gives (16-bit storage, 0 past D); d the
 * real head dimension (chunks past it are zero-filled); scores are
 * scale * q . k, in the natural domain as the SIMT core's (the partials
 * and the merges share its weights). sm: kd_decode_mma<...>::BYTES of shared
 * memory. */
template <class Arch, typename T, int DP, int S, int RT, class Src, class QB>
__device__ __forceinline__ void
kd_decode_mma_scan(const Src &src, const QB &qbits, uint16_t *sm, int64_t kb,
                   int n, int d, float scale,
                   kd_decode_mma_state<Arch, DP / 16> &ws) {
  typedef kd_decode_mma<Arch, T, DP, S> K;
  constexpr int CH = K::CH, KD = K::KD, CE = K::CE, SLOTS = K::SLOTS;
  constexpr int NC = K::NC, STEP = K::STEP;
  const int w = threadIdx.x / Arch::WARP, lane = Arch::lane();
  const typename K::Tile qt = {sm};

  /* Q: rows past RT are zero. */
  for (int x = threadIdx.x; x < 16 * DP; x += KD_DECODE_THREADS) {
    const int r = x / DP, e = x - r * DP;
    qt.chunk(r, e / 8)[e % 8] = r < RT && e < d ? qbits(r, e) : (uint16_t)0;
  }
  __syncthreads();
  typename K::FA qf[KD];
  KD_UNROLL
  for (int kd = 0; kd < KD; kd++) Arch::load_a(qf[kd], qt, 0, 2 * kd);
  KD_UNROLL
  for (int kd = 0; kd < KD; kd++)
    KD_UNROLL
    for (int e = 0; e < CE; e++) ws.o[kd].v[e] = 0.0f;
  KD_UNROLL
  for (int sl = 0; sl < SLOTS; sl++) {
    ws.m[sl] = -INFINITY;
    ws.l[sl] = 0.0f;
  }

  const int steps = (n + STEP - 1) / STEP;
  /* Copy i of a tile: key row (lane + WARP i) / CH, chunk ... % CH. */
  int64_t loc[NC];
  auto locate = [&](int j) {
    KD_UNROLL
    for (int i = 0; i < NC; i++) {
      const int key = j * STEP + 16 * w + (lane + Arch::WARP * i) / CH;
      loc[i] = key < n ? src.locate(kb + key) : 0;
    }
  };
  /* Copies step j's tiles into stage j % S, then locates step j + 1. */
  auto issue = [&](int j) {
    if (j >= steps) return;
    const typename K::Tile kt = K::ktile(sm, j % S, w),
                           vt = K::vtile(sm, j % S, w);
    KD_UNROLL
    for (int i = 0; i < NC; i++) {
      const int idx = lane + Arch::WARP * i;
      if (16 * CH % Arch::WARP != 0 && idx >= 16 * CH) break;
      const int r = idx / CH, c = idx % CH;
      const bool ok = j * STEP + 16 * w + r < n && 8 * c < d;
      kd_cp_async16(kt.chunk(r, c), src.krow(loc[i]) + (ok ? 8 * c : 0),
                    ok ? 16 : 0);
      kd_cp_async16(vt.chunk(r, c), src.vrow(loc[i]) + (ok ? 8 * c : 0),
                    ok ? 16 : 0);
    }
    locate(j + 1);
  };

  locate(0);
  KD_UNROLL
  for (int j = 0; j < S - 1; j++) {
    issue(j);
    kd_cp_async_commit();
  }
  for (int j = 0; j < steps; j++) {
    kd_cp_async_wait<S - 2>(); /* step j has landed (this lane's copies) */
    kd_decode_mma_syncwarp();  /* ... and the warp's; step j - 1 is read */
    issue(j + S - 1);
    kd_cp_async_commit();
    const int k0 = j * STEP + 16 * w; /* this warp's first key */
    if (k0 >= n) continue;
    const typename K::Tile kt = K::ktile(sm, j % S, w),
                           vt = K::vtile(sm, j % S, w);
    typename K::FC s;
    KD_UNROLL
    for (int e = 0; e < CE; e++) s.v[e] = 0.0f;
    KD_UNROLL
    for (int kd = 0; kd < KD; kd++) {
      typename K::FB kf;
      Arch::load_b(kf, kt, 0, 2 * kd);
      Arch::template mma<T>(s, qf[kd], kf);
    }
    KD_UNROLL
    for (int e = 0; e < CE; e++) {
      s.v[e] *= scale;
      if (k0 + 16 > n && k0 + Arch::c_col(e) >= n) s.v[e] = -INFINITY;
    }
    /* Online softmax per row slot; a row with nothing but -inf so far
     * subtracts 0, so its weights are 0, not NaN. */
    float sub[SLOTS];
    KD_UNROLL
    for (int sl = 0; sl < SLOTS; sl++) {
      float mx = -INFINITY;
      KD_UNROLL
      for (int e = 0; e < CE; e++)
        if (Arch::c_slot(e) == sl) mx = fmaxf(mx, s.v[e]);
      mx = Arch::row_reduce(mx, kd_max_op());
      const float mn = fmaxf(ws.m[sl], mx);
      sub[sl] = mn == -INFINITY ? 0.0f : mn;
      if (mn != ws.m[sl]) {
        const float alpha = kd_decode_exp<true>(ws.m[sl] - sub[sl]);
        ws.l[sl] *= alpha;
        KD_UNROLL
        for (int kd = 0; kd < KD; kd++)
          KD_UNROLL
          for (int e = 0; e < CE; e++)
            if (Arch::c_slot(e) == sl) ws.o[kd].v[e] *= alpha;
        ws.m[sl] = mn;
      }
    }
    typename K::FC lo;
    KD_UNROLL
    for (int e = 0; e < CE; e++) {
      const int sl = Arch::c_slot(e);
      const float p = kd_decode_exp<true>(s.v[e] - sub[sl]);
      ws.l[sl] += p;
      s.v[e] = p;
      lo.v[e] = p - kd_to_float(kd_from_float<T>(p));
    }
    typename K::FA pa, pl;
    Arch::template c_to_a<T>(pa, s);
    Arch::template c_to_a<T>(pl, lo);
    KD_UNROLL
    for (int kd = 0; kd < KD; kd++) {
      typename K::FB vf;
      Arch::load_b_t(vf, vt, 0, 2 * kd);
      Arch::template mma<T>(ws.o[kd], pl, vf);
      Arch::template mma<T>(ws.o[kd], pa, vf);
    }
  }
  kd_cp_async_wait<0>();
  KD_UNROLL
  for (int sl = 0; sl < SLOTS; sl++)
    ws.l[sl] = Arch::row_reduce(ws.l[sl], kd_sum_op());
}

/* The warps' merge, in kd_decode_block_merge's layout for groups of one warp
 * (kd_decode_smem<WARP, RT>: group = warp): afterwards st.m[r] is the
 * block's row maximum in every thread and sm.acc / sm.l hold each warp's
 * accumulator and sum rescaled to it, ready for kd_decode_finish. Begins and
 * ends with a barrier (the merge area overlays the pipeline). */
template <class Arch, int DP, int RT>
__device__ __forceinline__ void
kd_decode_mma_block_merge(const kd_decode_mma_state<Arch, DP / 16> &ws,
                          kd_decode_state<RT> &st,
                          kd_decode_smem<Arch::WARP, RT> &sm) {
  typedef kd_decode_smem<Arch::WARP, RT> M;
  constexpr int SLOTS = Arch::ROW_SLOTS, CE = Arch::C_ELEMS;
  const int w = threadIdx.x / Arch::WARP;
  __syncthreads(); /* every warp is done with the pipeline */
  KD_UNROLL
  for (int sl = 0; sl < SLOTS; sl++) {
    const int r = Arch::slot_row(sl);
    KD_UNROLL
    for (int e = 0; e < CE; e++)
      if (r < RT && Arch::c_slot(e) == sl && Arch::c_col(e) == 0)
        sm.m[w * RT + r] = ws.m[sl];
  }
  __syncthreads();
  KD_UNROLL
  for (int r = 0; r < RT; r++) {
    float big_m = -INFINITY;
    for (int g = 0; g < M::NG; g++) big_m = fmaxf(big_m, sm.m[g * RT + r]);
    st.m[r] = big_m;
  }
  KD_UNROLL
  for (int sl = 0; sl < SLOTS; sl++) {
    const int r = Arch::slot_row(sl);
    if (r >= RT) continue;
    float big_m = 0.0f;
    KD_UNROLL
    for (int rr = 0; rr < RT; rr++)
      if (rr == r) big_m = st.m[rr];
    const float wt = kd_decode_weight<true>(ws.m[sl], big_m);
    KD_UNROLL
    for (int kd = 0; kd < DP / 16; kd++)
      KD_UNROLL
      for (int e = 0; e < CE; e++)
        if (Arch::c_slot(e) == sl)
          sm.acc[(w * RT + r) * M::DP + 16 * kd + Arch::c_col(e)] =
              ws.o[kd].v[e] * wt;
    KD_UNROLL
    for (int e = 0; e < CE; e++)
      if (Arch::c_slot(e) == sl && Arch::c_col(e) == 0)
        sm.l[w * RT + r] = ws.l[sl] * wt;
  }
  __syncthreads();
}

#endif
