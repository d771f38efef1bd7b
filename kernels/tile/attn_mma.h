/* Fused attention on the matrix units, FlashAttention-2 style, for f16 and
 * bf16: the prefill kernel of kernels/attention.hip on GPUs with matrix
 * units, written once against the matrix-core layer (arch/mma.h). It sits in
 * a header so that dev/attn-tune.cu builds other configurations of the
 * very same code.
 *
 * A block takes BM = WARPS * MU * 16 consecutive rows of one (batch, kv
 * head), as tile/attn.h defines rows (query major: the heads of a GQA group
 * share every K/V tile). Each warp owns MU units of 16 rows. Q is staged
 * once and kept as A fragments in registers (QREG) or re-read from shared
 * memory; K and V stream through STAGES shared tiles
 * (kd_mma_tile, swizzled) filled with kd_cp_async16 (cp.async on NVIDIA),
 * BN keys each. Per tile a warp computes S = Q K^T on the matrix unit,
 * scales it into the log2 domain, masks it where the tile needs it, updates
 * its rows' running max m and sum l (row_reduce; l is kept per lane and
 * reduced once at the end), turns S into P = exp2(S - m), rescales its O
 * accumulators, and adds P V on the matrix unit, P moved register to
 * register into A fragments (c_to_a). P is two T terms, hi = round(p) and
 * lo = round(p - hi) (PSPLIT), added as hi V + lo V: a single rounding
 * moves outputs near zero by up to half an ulp of T times max|v|, past
 * kiln's tolerance (docs/kernels-attention.md); the second term costs one more
 * product per P V unit and no shared-memory traffic. Everything
 * accumulates in f32; O is divided by l at the end, rounded, staged in
 * shared memory and written in 16-byte chunks.
 *
 * Masks and edges. Keys at or past kv_end (the block's last visible key + 1,
 * at most Sk) are never loaded: their tile rows are zero-filled. A warp
 * skips the products of tiles none of its rows sees, and masks S only in
 * tiles that cross one of its rows' limits (the causal diagonal, the last
 * tile). D is padded to DP with zeros (any D
 * that is a multiple of 8, at most DP); rows past the end are computed on
 * zeros and not written.
 *
 * Special values, as kiln/attention.h promises. A NaN or +inf score at a
 * visible key makes p NaN, and with it l and the row; -inf scores weigh 0;
 * a row with no visible key has l = 0 and is written as zeros. In P V a
 * masked key's weight is 0, but 0 * NaN is NaN on the matrix unit as
 * anywhere: so on tiles that cross a row's causal limit, the warp first
 * checks the V rows that some of its rows must not see, and when one holds
 * a NaN or Inf it does that tile's P V lane by lane over the visible keys
 * only (row_get), in f32. Masked keys are thus never read into a row.
 *
 * Requirements (the launcher checks them; kernels/attention.hip falls back
 * to the SIMT kernels otherwise): T f16 or bf16, D a multiple of 8 and at
 * most DP, every row of Q, K, V and O 16-byte aligned (pointers aligned,
 * B/H/S strides multiples of 8 elements), a device with the Arch's unit.
 */
#ifndef KILN_KERNELS_TILE_ATTN_MMA_H
#define KILN_KERNELS_TILE_ATTN_MMA_H

#include "tile/attn.h"
#include "arch/mma.h"

/* A configuration: DP the padded head dimension (a multiple of 16), BN
 * keys per tile (a multiple of 16), WARPS warps of MU units of 16 rows,
 * STAGES K/V tiles in shared memory (1: load, then compute), QREG Q
 * fragments in registers, MINB blocks per multiprocessor for the register
 * budget (__launch_bounds__), PSPLIT P as two 16-bit terms (above). */
template <int DP_, int BN_, int WARPS_, int MU_, int STAGES_, bool QREG_,
          int MINB_, bool PSPLIT_ = true>
struct kd_attn_mma_cfg {
  static constexpr int DP = DP_, BN = BN_, WARPS = WARPS_, MU = MU_;
  static constexpr int STAGES = STAGES_, MINB = MINB_;
  static constexpr bool QREG = QREG_, PSPLIT = PSPLIT_;
  static_assert(DP % 16 == 0 && DP <= 256 && BN % 16 == 0, "bad tile");
  static_assert(STAGES >= 1 && WARPS >= 1 && MU >= 1, "bad config");
};

/* The configurations kiln launches, per padded D (dev/attn-tune.cu
 * times these against others). NVIDIA: eight warps of 16 rows (BM = 128),
 * so that each K/V byte brought from L2 feeds 128 FLOP: at 330 TFLOP/s
 * that is 2.6 TB/s of L2 reads, twice that with BM = 64; 64-key tiles in
 * three stages up to D = 128, 32-key tiles in two above; Q in registers up
 * to D = 160 (no spills, 114-240 registers a thread on sm_90), re-read
 * from shared memory above. CDNA: LDS is 64 KiB and copies are
 * synchronous, so four waves, one stage and Q in registers. */
template <class Arch, int DP> struct kd_attn_mma_default {
  static constexpr bool NV = Arch::WARP == 32;
  typedef kd_attn_mma_cfg<DP, (DP <= 128 ? 64 : 32), (NV ? 8 : 4), 1,
                          (NV ? (DP <= 128 ? 3 : 2) : 1),
                          (NV ? DP <= 160 : true), 1>
      type;
};

template <class Arch, typename T, class C> struct kd_attn_mma {
  typedef kd_mma_tile<C::DP / 8> Tile;
  typedef typename Arch::frag_a FA;
  typedef typename Arch::frag_b FB;
  typedef typename Arch::frag_c FC;
  static constexpr int CH = C::DP / 8, KD = C::DP / 16, NB = C::BN / 16;
  static constexpr int MU = C::MU, BN = C::BN;
  static constexpr int THREADS = C::WARPS * Arch::WARP;
  static constexpr int BM = C::WARPS * C::MU * 16;
  static constexpr int SLOTS = Arch::ROW_SLOTS, CE = Arch::C_ELEMS;
  /* Shared memory in 16-bit elements: Q (BM rows), each stage's K and V
   * (BN rows each). With QREG, Q shares the stages' space (its fragments
   * are in registers before the first tile lands); O is staged at the
   * start once every warp is done. */
  static constexpr int Q_ELEMS = BM * Tile::STRIDE * 8;
  static constexpr int KV_ELEMS = BN * Tile::STRIDE * 8;
  static constexpr int KV_START = C::QREG ? 0 : Q_ELEMS;
  static constexpr int ALL_KV = KV_START + 2 * C::STAGES * KV_ELEMS;
  static constexpr size_t SMEM_BYTES =
      2 * (size_t)(ALL_KV > Q_ELEMS ? ALL_KV : Q_ELEMS);

  typedef kd_attn_block<T> geom;

  static __device__ __forceinline__ void load_q(const ke__attention_desc &a,
                                                const geom &g, Tile qt) {
    KD_UNROLL
    for (int n = 0; n < (BM * CH + THREADS - 1) / THREADS; n++) {
      const int idx = threadIdx.x + n * THREADS;
      if (BM * CH % THREADS != 0 && idx >= BM * CH) break;
      const int r = idx / CH, c = idx % CH;
      const int64_t rr = g.row0 + r;
      const bool ok = rr < g.rows_total && 8 * c < a.d;
      const T *src = ok ? g.row(g.q, a.q_stride, rr) + 8 * c : g.q;
      kd_cp_async16(qt.chunk(r, c), src, ok ? 16 : 0);
    }
  }

  /* Issues the copies of K/V tile t into stage st. */
  static __device__ __forceinline__ void load_kv(const ke__attention_desc &a,
                                                 const geom &g, uint16_t *kv,
                                                 int t, int st) {
    const Tile kt = {kv + 2 * st * KV_ELEMS}, vt = {kt.base + KV_ELEMS};
    KD_UNROLL
    for (int n = 0; n < (BN * CH + THREADS - 1) / THREADS; n++) {
      const int idx = threadIdx.x + n * THREADS;
      if (BN * CH % THREADS != 0 && idx >= BN * CH) break;
      const int r = idx / CH, c = idx % CH;
      const int64_t key = (int64_t)t * BN + r;
      const bool ok = key < g.kv_end && 8 * c < a.d;
      const int64_t off = ok ? key * a.k_stride[2] + 8 * c : 0;
      const int64_t voff = ok ? key * a.v_stride[2] + 8 * c : 0;
      kd_cp_async16(kt.chunk(r, c), g.k + off, ok ? 16 : 0);
      kd_cp_async16(vt.chunk(r, c), g.v + voff, ok ? 16 : 0);
    }
  }

  /* Whether any V element of local keys [r0, r1) of tile vt is NaN or Inf
   * (warp-uniform). */
  static __device__ __forceinline__ bool v_nonfinite(Tile vt, int r0,
                                                     int r1) {
    const unsigned expo =
        std::is_same<T, kd_bf16>::value ? 0x7f80u : 0x7c00u;
    bool bad = false;
    for (int idx = Arch::lane() + r0 * CH; idx < r1 * CH; idx += Arch::WARP) {
      const uint16_t *p = vt.chunk(idx / CH, idx % CH);
      KD_UNROLL
      for (int e = 0; e < 8; e++) bad |= (p[e] & expo) == expo;
    }
    return __any(bad) != 0;
  }

  static __device__ __forceinline__ float v_at(Tile vt, int r, int d) {
    T x;
    x.bits = vt.chunk(r, d / 8)[d % 8];
    return kd_to_float(x);
  }

  /* One K/V tile for this warp: S, softmax update, O += P V. */
  static __device__ __forceinline__ void
  tile(const ke__attention_desc &a, const geom &g, Tile qt, Tile kt, Tile vt,
       int k0, int w, const FA (&qf)[MU][KD], FC (&o)[MU][KD],
       float (&m)[MU][SLOTS], float (&l)[MU][SLOTS],
       const int (&lim_r)[MU][SLOTS], int w_min_lim, float scale_log2) {
    FC s[MU][NB];
    KD_UNROLL
    for (int mu = 0; mu < MU; mu++)
      KD_UNROLL
      for (int n = 0; n < NB; n++)
        KD_UNROLL
        for (int e = 0; e < CE; e++) s[mu][n].v[e] = 0.0f;
    KD_UNROLL
    for (int kd = 0; kd < KD; kd++) {
      FA qa[MU];
      KD_UNROLL
      for (int mu = 0; mu < MU; mu++) {
        if constexpr (C::QREG) qa[mu] = qf[mu][kd];
        else Arch::load_a(qa[mu], qt, 16 * (w * MU + mu), 2 * kd);
      }
      KD_UNROLL
      for (int n = 0; n < NB; n++) {
        FB kb;
        Arch::load_b(kb, kt, 16 * n, 2 * kd);
        KD_UNROLL
        for (int mu = 0; mu < MU; mu++)
          Arch::template mma<T>(s[mu][n], qa[mu], kb);
      }
    }

    /* Scores in the log2 domain; masked where this tile crosses a limit.
     * Key positions are taken relative to k0 (no int overflow near 2^31). */
    KD_UNROLL
    for (int mu = 0; mu < MU; mu++)
      KD_UNROLL
      for (int n = 0; n < NB; n++)
        KD_UNROLL
        for (int e = 0; e < CE; e++) s[mu][n].v[e] *= scale_log2;
    if (BN > w_min_lim - k0) { /* a branch: most tiles skip it all */
      KD_UNROLL
      for (int mu = 0; mu < MU; mu++)
        KD_UNROLL
        for (int n = 0; n < NB; n++)
          KD_UNROLL
          for (int e = 0; e < CE; e++)
            if (16 * n + Arch::c_col(e) >= lim_r[mu][Arch::c_slot(e)] - k0)
              s[mu][n].v[e] = -INFINITY;
    }

    /* Running max: a row with nothing visible yet keeps m = -inf and
     * subtracts 0, so its weights are exp2(-inf) = 0, not NaN. */
    float sub[MU][SLOTS];
    KD_UNROLL
    for (int mu = 0; mu < MU; mu++)
      KD_UNROLL
      for (int sl = 0; sl < SLOTS; sl++) {
        float mx = -INFINITY;
        KD_UNROLL
        for (int n = 0; n < NB; n++)
          KD_UNROLL
          for (int e = 0; e < CE; e++)
            if (Arch::c_slot(e) == sl) mx = fmaxf(mx, s[mu][n].v[e]);
        mx = Arch::row_reduce(mx, kd_max_op());
        const float mn = fmaxf(m[mu][sl], mx);
        sub[mu][sl] = mn == -INFINITY ? 0.0f : mn;
        const float alpha = kd_exp2_weight(m[mu][sl] - sub[mu][sl]);
        m[mu][sl] = mn;
        l[mu][sl] *= alpha;
        KD_UNROLL
        for (int dn = 0; dn < KD; dn++)
          KD_UNROLL
          for (int e = 0; e < CE; e++)
            if (Arch::c_slot(e) == sl) o[mu][dn].v[e] *= alpha;
      }
    KD_UNROLL
    for (int mu = 0; mu < MU; mu++)
      KD_UNROLL
      for (int n = 0; n < NB; n++)
        KD_UNROLL
        for (int e = 0; e < CE; e++) {
          const int sl = Arch::c_slot(e);
          const float p = kd_exp2_weight(s[mu][n].v[e] - sub[mu][sl]);
          s[mu][n].v[e] = p;
          l[mu][sl] += p;
        }

    /* Causal tiles: keys in [w_min_lim, kv_end) are loaded but hidden from
     * some of this warp's rows. */
    const int hid0 = w_min_lim - k0 > 0 ? w_min_lim - k0 : 0;
    const int hid1 = g.kv_end - k0 < BN ? g.kv_end - k0 : BN;
    if (a.causal && hid0 < hid1 && v_nonfinite(vt, hid0, hid1)) {
      pv_exact(vt, k0, g.kv_end, s, o, lim_r);
      return;
    }
    KD_UNROLL
    for (int n = 0; n < NB; n++) {
      /* P = hi + lo, both rounded to T (PSPLIT): lo = p - hi is exact in
       * f32, so the weights carry about twice T's precision. */
      FA pa[MU], pl[MU];
      KD_UNROLL
      for (int mu = 0; mu < MU; mu++) {
        if constexpr (C::PSPLIT) {
          FC lo;
          KD_UNROLL
          for (int e = 0; e < CE; e++) {
            const float x = s[mu][n].v[e];
            lo.v[e] = x - kd_to_float(kd_from_float<T>(x));
          }
          Arch::template c_to_a<T>(pl[mu], lo);
        }
        Arch::template c_to_a<T>(pa[mu], s[mu][n]);
      }
      KD_UNROLL
      for (int dn = 0; dn < KD; dn++) {
        FB vb;
        Arch::load_b_t(vb, vt, 16 * n, 2 * dn);
        KD_UNROLL
        for (int mu = 0; mu < MU; mu++) {
          if constexpr (C::PSPLIT) Arch::template mma<T>(o[mu][dn], pl[mu], vb);
          Arch::template mma<T>(o[mu][dn], pa[mu], vb);
        }
      }
    }
  }

  /* O += P V over the visible keys only, f32 weights, lane by lane: each
   * lane takes its rows' weights from the lanes holding them (row_get) and
   * the V elements of its own O columns from shared memory. */
  static __device__ __forceinline__ void pv_exact(Tile vt, int k0, int kv_end,
                                  const FC (&s)[MU][NB], FC (&o)[MU][KD],
                                  const int (&lim_r)[MU][SLOTS]) {
    KD_UNROLL
    for (int n = 0; n < NB; n++)
      for (int col = 0; col < 16; col++) {
        const int j = 16 * n + col; /* key k0 + j */
        if (j >= kv_end - k0) break;
        KD_UNROLL
        for (int mu = 0; mu < MU; mu++)
          KD_UNROLL
          for (int sl = 0; sl < SLOTS; sl++) {
            const float p = Arch::row_get(s[mu][n], sl, col);
            if (j >= lim_r[mu][sl] - k0) continue;
            KD_UNROLL
            for (int dn = 0; dn < KD; dn++)
              KD_UNROLL
              for (int e = 0; e < CE; e++)
                if (Arch::c_slot(e) == sl)
                  o[mu][dn].v[e] = fmaf(
                      p, v_at(vt, j, 16 * dn + Arch::c_col(e)), o[mu][dn].v[e]);
          }
      }
  }

  /* O / l rounded to T into the shared O tile, then 16-byte stores. */
  static __device__ __forceinline__ void
  store(const ke__attention_desc &a, const geom &g, Tile ot, int w,
        const FC (&o)[MU][KD], const float (&l)[MU][SLOTS]) {
    float inv[MU][SLOTS];
    KD_UNROLL
    for (int mu = 0; mu < MU; mu++)
      KD_UNROLL
      for (int sl = 0; sl < SLOTS; sl++) {
        const float lt = Arch::row_reduce(l[mu][sl], kd_sum_op());
        /* l == 0: no visible key (or only -inf scores): zeros. */
        inv[mu][sl] = lt == 0.0f ? 0.0f : 1.0f / lt;
      }
    __syncthreads(); /* every warp is done with the K/V tiles */
    KD_UNROLL
    for (int mu = 0; mu < MU; mu++)
      KD_UNROLL
      for (int dn = 0; dn < KD; dn++)
        KD_UNROLL
        for (int e = 0; e < CE; e++) {
          const float x = inv[mu][Arch::c_slot(e)];
          const int r = 16 * (w * MU + mu) + Arch::c_row(e);
          const int d = 16 * dn + Arch::c_col(e);
          ot.chunk(r, d / 8)[d % 8] =
              kd_from_float<T>(x == 0.0f ? 0.0f : o[mu][dn].v[e] * x).bits;
        }
    __syncthreads();
    for (int idx = threadIdx.x; idx < BM * CH; idx += THREADS) {
      const int r = idx / CH, c = idx % CH;
      const int64_t rr = g.row0 + r;
      if (rr >= g.rows_total || 8 * c >= a.d) continue;
      T *dst = g.row(g.o, a.o_stride, rr) + 8 * c;
      kd_st16(dst, kd_ld16(ot.chunk(r, c)));
    }
  }
};

template <class Arch, typename T, class C>
__global__ void __launch_bounds__(C::WARPS *Arch::WARP, C::MINB)
kd_attn_mma_fwd(const T *__restrict__ q, const T *__restrict__ k,
                const T *__restrict__ v, T *__restrict__ o,
                ke__attention_desc a, float scale_log2) {
  typedef kd_attn_mma<Arch, T, C> K;
  typedef typename K::Tile Tile;
  constexpr int MU = C::MU, KD = K::KD, SLOTS = K::SLOTS, CE = K::CE;
  HIP_DYNAMIC_SHARED(uint4, smem_raw);
  uint16_t *smem = reinterpret_cast<uint16_t *>(smem_raw);
  uint16_t *kv = smem + K::KV_START;
  const Tile qt = {smem};

  const int w = threadIdx.x / Arch::WARP;
  typename K::geom g;
  g.init(a, q, k, v, o, K::BM);

  /* This warp's rows: their key limits, and the smallest and largest. */
  const int64_t w_row0 = g.row0 + (int64_t)w * MU * 16;
  const bool w_rows = w_row0 < g.rows_total;
  const int64_t w_last =
      (w_row0 + MU * 16 < g.rows_total ? w_row0 + MU * 16 : g.rows_total) - 1;
  const int w_min_lim = w_rows ? g.lim(a, w_row0) : 0;
  const int w_max_lim = w_rows ? g.lim(a, w_last) : 0;
  int lim_r[MU][SLOTS];
  KD_UNROLL
  for (int mu = 0; mu < MU; mu++)
    KD_UNROLL
    for (int sl = 0; sl < SLOTS; sl++) {
      const int64_t rr = w_row0 + 16 * mu + Arch::slot_row(sl);
      lim_r[mu][sl] = rr < g.rows_total ? g.lim(a, rr) : w_max_lim;
    }

  /* Q: staged once, then (QREG) held as A fragments. */
  K::load_q(a, g, qt);
  kd_cp_async_commit();
  kd_cp_async_wait<0>();
  __syncthreads();
  typename K::FA qf[MU][KD];
  if constexpr (C::QREG) {
    KD_UNROLL
    for (int mu = 0; mu < MU; mu++)
      KD_UNROLL
      for (int kd = 0; kd < KD; kd++)
        Arch::load_a(qf[mu][kd], qt, 16 * (w * MU + mu), 2 * kd);
    __syncthreads(); /* Q's space becomes the K/V stages */
  }

  typename K::FC o_acc[MU][KD];
  float m[MU][SLOTS], l[MU][SLOTS];
  KD_UNROLL
  for (int mu = 0; mu < MU; mu++) {
    KD_UNROLL
    for (int kd = 0; kd < KD; kd++)
      KD_UNROLL
      for (int e = 0; e < CE; e++) o_acc[mu][kd].v[e] = 0.0f;
    KD_UNROLL
    for (int sl = 0; sl < SLOTS; sl++) {
      m[mu][sl] = -INFINITY;
      l[mu][sl] = 0.0f;
    }
  }

  /* The pipeline: tile t lands in stage t % STAGES. With one stage the
   * block loads, waits, computes and waits again; with more, the copies of
   * tile t + STAGES - 1 are issued right after the barrier that ends every
   * warp's use of the stage they overwrite. */
  const int ntiles = (int)(((int64_t)g.kv_end + C::BN - 1) / C::BN);
  KD_UNROLL
  for (int s = 0; s < C::STAGES - 1; s++) {
    if (s < ntiles) K::load_kv(a, g, kv, s, s);
    kd_cp_async_commit();
  }
  for (int t = 0; t < ntiles; t++) {
    if constexpr (C::STAGES == 1) {
      if (t > 0) __syncthreads();
      K::load_kv(a, g, kv, t, 0);
      kd_cp_async_commit();
      kd_cp_async_wait<0>();
    } else {
      kd_cp_async_wait<(C::STAGES > 1 ? C::STAGES - 2 : 0)>();
    }
    __syncthreads();
    if constexpr (C::STAGES > 1) {
      if (t + C::STAGES - 1 < ntiles)
        K::load_kv(a, g, kv, t + C::STAGES - 1, (t + C::STAGES - 1) % C::STAGES);
      kd_cp_async_commit();
    }
    const int k0 = t * C::BN;
    if (k0 >= w_max_lim) continue; /* none of this warp's rows sees it */
    const int st = C::STAGES == 1 ? 0 : t % C::STAGES;
    const Tile kt = {kv + 2 * st * K::KV_ELEMS};
    const Tile vt = {kt.base + K::KV_ELEMS};
    K::tile(a, g, qt, kt, vt, k0, w, qf, o_acc, m, l, lim_r, w_min_lim,
            scale_log2);
  }
  K::store(a, g, qt, w, o_acc, l);
}

/* Launches kd_attn_mma_fwd<Arch, T, C> for a problem the caller has checked
 * (see the requirements above); grid (row tiles, Hkv, B). Returns the
 * runtime's error. */
template <class Arch, typename T, class C>
static int kd_attn_mma_launch(hipStream_t stream, const void *q,
                              const void *k, const void *v, void *o,
                              const ke__attention_desc *a) {
  typedef kd_attn_mma<Arch, T, C> K;
  const void *fn = (const void *)kd_attn_mma_fwd<Arch, T, C>;
  int err = (int)hipFuncSetAttribute(
      fn, hipFuncAttributeMaxDynamicSharedMemorySize, (int)K::SMEM_BYTES);
  if (err != 0) return err;
  /* exp2 of log2(e) * scale * s is exp(scale * s). */
  const float scale_log2 = a->scale * 1.4426950408889634f;
  hipLaunchKernelGGL((kd_attn_mma_fwd<Arch, T, C>), kd_attn_grid(a, K::BM),
                     dim3(K::THREADS),
                     K::SMEM_BYTES, stream, (const T *)q, (const T *)k,
                     (const T *)v, (T *)o, *a, scale_log2);
  return (int)hipGetLastError();
}

#endif
