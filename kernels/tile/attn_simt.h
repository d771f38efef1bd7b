/* Fused attention on the SIMT units with register tiles: the TILED kernel
 * for f32 (exact f32 arithmetic, no TF32), and for f16/bf16 where the
 * matrix-core kernel (tile/attn_mma.h) cannot run (no matrix unit, rows not
 * 16-byte aligned, D not a multiple of 8). A header so that
 * dev/attn-tune.cu builds other configurations of the same code.
 *
 * A block of THREADS = 128 or 256 threads (TY x 16: ty = tid / 16, tx =
 * tid % 16) takes BM consecutive rows of one (batch, kv head), as
 * tile/attn.h defines rows. Q [BM][DP], K and V [BN][DP] and P [BM][BN] live
 * in shared memory as f32. Per tile of BN keys the block computes
 * S = Q K^T as a small GEMM: thread (ty, tx) owns rows ty + TY i
 * (i < BM / TY) and keys tx + 16 j (j < BN / 16) and reads one float4 of
 * Q per row and of K per key for every four dimensions; the 16 threads of
 * a row group reduce its max with shuffles, update the running max m and
 * sum l, rescale O and write P = exp(S - m) to shared memory; then
 * O += P V, the thread owning rows ty + TY i and dimensions
 * 4 (tx + 16 c) .. + 3 (c < DP / 64), reading P as float4 of four keys and
 * V as float4 of four dimensions. K_{t+1} is copied while P and O are
 * worked on, V_{t+1} while the next S is: one buffer each, FlashAttention-2's
 * order, with kd_cp_async16 when rows are 16-byte aligned f32 (cp.async on
 * NVIDIA), converting loads otherwise. K and Q are stored with their
 * float4 groups XOR-swizzled by row so that 16 keys (or a warp's two rows)
 * at one group hit distinct banks.
 *
 * Masks, edges and special values follow the matrix-core kernel: keys from
 * kv_end on are zero-filled and never loaded; S is masked, and P V skips a
 * row's hidden keys, only in tiles that cross a row's limit; exp(-inf) = 0
 * with m = -inf handled; l = 0 writes zeros; a NaN or +inf score poisons l.
 * Scores are scaled by scale log2(e) and the weights are exp2 of them less
 * the row's max (kd_exp2_weight, one instruction on NVIDIA, within 2^-22:
 * suites/attention/attention-check.c's bound counts it).
 * D is padded to DP (a multiple of 64) with zeros; any D <= DP works.
 */
#ifndef KILN_KERNELS_TILE_ATTN_SIMT_H
#define KILN_KERNELS_TILE_ATTN_SIMT_H

#include "tile/attn.h"
#include "arch/mma.h" /* kd_cp_async16 and its commit and wait */

#define KD_ATTN_SIMT_THREADS 256 /* the most threads a configuration has */

/* An unroll count from a constant in scope (none on the host). */
#if defined(KILN_BACKEND_HOST)
#define KD_ATTN_UNROLL(n) (void)(n);
#else
#define KD_ATTN_UNROLL_(x) _Pragma(#x)
#define KD_ATTN_UNROLL(n) KD_ATTN_UNROLL_(unroll n)
#endif

/* DP padded head dimension (multiple of 64), BM rows and BN keys per block
 * (BN a multiple of 16), MINB blocks per multiprocessor (__launch_bounds__),
 * THREADS 128 or 256 as TY = THREADS / 16 rows of 16 (BM a multiple of
 * TY): a thread owns BM / TY rows. UNROLL_: the inner loops' unroll count,
 * 0 for the rule below. */
template <int DP_, int BM_, int BN_, int MINB_, int THREADS_ = 256,
          int UNROLL_ = 0>
struct kd_attn_simt_cfg {
  static constexpr int DP = DP_, BM = BM_, BN = BN_, MINB = MINB_;
  static constexpr int THREADS = THREADS_, TY = THREADS_ / 16;
  /* Unroll counts: the inner loops and the copies' address arithmetic
   * unroll only where 192 or more registers per thread are allowed; at
   * 128 and 168 they spilled. */
  static constexpr int UNROLL =
      UNROLL_ ? UNROLL_ : (65536 / (THREADS * MINB) >= 192 ? 4 : 1);
  static constexpr int UNROLL_COPY = UNROLL > 1 ? 16 : 1;
  static_assert(DP % 64 == 0 && DP <= 256 && BN % 16 == 0 &&
                    (THREADS == 128 || THREADS == 256) && BM % TY == 0,
                "bad tile");
};

/* kiln's configurations: shared memory up to 227 KiB on NVIDIA, 64 KiB on
 * AMD. NVIDIA, from the H100 sweep of dev/attn-tune.cu
 * (docs/decisions/attention.md): D <= 64 two 128-thread blocks of 64 rows per
 * multiprocessor, D <= 128 one 256-thread block of 128 rows (8 x 4 scores
 * and 8 x 8 outputs per thread, 254 registers, inner loops unrolled by 2),
 * 64-row blocks above. */
template <int DP, bool BIG_SMEM> struct kd_attn_simt_default {
  typedef kd_attn_simt_cfg<
      DP,
      (BIG_SMEM ? (DP == 128 ? 128 : 64) : (DP <= 128 ? 32 : 16)),
      (BIG_SMEM ? (DP <= 128 ? 64 : 32) : (DP <= 128 ? 32 : 16)),
      (BIG_SMEM && DP == 64 ? 2 : 1), (BIG_SMEM && DP == 64 ? 128 : 256),
      (BIG_SMEM && DP == 128 ? 2 : 0)>
      type;
};

template <typename T, class C> struct kd_attn_simt {
  static constexpr int DP = C::DP, BM = C::BM, BN = C::BN;
  static constexpr int THREADS = C::THREADS, TY = C::TY;
  static constexpr int RM = BM / TY, RN = BN / 16, DG = DP / 64;
  static constexpr int G4 = DP / 4; /* float4 groups per row */
  /* Shared memory in floats. */
  static constexpr int Q_F = BM * DP, K_F = BN * DP, V_F = BN * DP;
  static constexpr int P_F = BM * BN;
  static constexpr size_t SMEM_BYTES = 4 * (size_t)(Q_F + K_F + V_F + P_F);

  typedef kd_attn_block<T> geom;

  /* Stages group gi (four elements from dimension 4 gi) of a row into dst:
   * src is the row, or NULL for a row past the end (zeros); any is a valid
   * global address for the copy that reads nothing. */
  static __device__ __forceinline__ void stage4(float *dst, const T *src,
                                                const T *any, int gi, int d,
                                                bool async) {
    const int left = src ? d - 4 * gi : 0;
    if constexpr (sizeof(T) == 4) {
      if (async) {
        kd_cp_async16(dst, left > 0 ? src + 4 * gi : any, left > 0 ? 16 : 0);
        return;
      }
    }
    float f[4];
    KD_UNROLL
    for (int e = 0; e < 4; e++)
      f[e] = e < left ? kd_to_float(src[4 * gi + e]) : 0.0f;
    *reinterpret_cast<float4 *>(dst) = make_float4(f[0], f[1], f[2], f[3]);
  }

  /* Q's rows, swizzled as K's (group gi of row r at slot gi ^ (r % 8)),
   * so that the two rows a warp reads at once hit distinct banks. */
  static __device__ __forceinline__ void load_q(const ke__attention_desc &a,
                                                const geom &g, bool async,
                                                float *qs) {
    constexpr int N = (BM * G4 + THREADS - 1) / THREADS;
    constexpr int U = C::UNROLL_COPY;
    KD_ATTN_UNROLL(U)
    for (int it = 0; it < N; it++) {
      const int idx = (int)threadIdx.x + THREADS * it;
      if (N * THREADS != BM * G4 && idx >= BM * G4) break;
      const int r = idx / G4, gi = idx % G4;
      const int64_t rr = g.row0 + r;
      const T *src = rr < g.rows_total ? g.row(g.q, a.q_stride, rr) : nullptr;
      stage4(qs + 4 * (r * G4 + (gi ^ (r & 7))), src, g.q, gi, (int)a.d,
             async);
    }
  }

  /* acc[i][c] += P[row ty + 16 i][j] V[j][4 (tx + 16 c) ..] over the
   * tile's keys j < kn (BN without MASK); with MASK, only j < vis[i] for
   * row i. */
  template <bool MASK>
  static __device__ __forceinline__ void pv(float4 (&acc)[RM][DG],
                                            const float *ps, const float *vs,
                                            int kn, int ty, int tx,
                                            const int (&vis)[RM]) {
    const float4 *p4 = reinterpret_cast<const float4 *>(ps);
    const int n4 = MASK ? (kn + 3) / 4 : BN / 4;
    constexpr int U = C::UNROLL;
    KD_ATTN_UNROLL(U)
    for (int j4 = 0; j4 < n4; j4++) {
      const int j = 4 * j4;
      float4 pq[RM];
      KD_UNROLL
      for (int i = 0; i < RM; i++) pq[i] = p4[(ty + TY * i) * (BN / 4) + j4];
      KD_UNROLL
      for (int jj = 0; jj < 4; jj++) {
        float4 vv[DG];
        KD_UNROLL
        for (int c = 0; c < DG; c++)
          vv[c] = reinterpret_cast<const float4 *>(vs)[(j + jj) * G4 + tx + 16 * c];
        KD_UNROLL
        for (int i = 0; i < RM; i++) {
          const float p = jj == 0 ? pq[i].x
                                  : (jj == 1 ? pq[i].y
                                             : (jj == 2 ? pq[i].z : pq[i].w));
          if (MASK && j + jj >= vis[i]) continue;
          KD_UNROLL
          for (int c = 0; c < DG; c++) {
            acc[i][c].x = fmaf(p, vv[c].x, acc[i][c].x);
            acc[i][c].y = fmaf(p, vv[c].y, acc[i][c].y);
            acc[i][c].z = fmaf(p, vv[c].z, acc[i][c].z);
            acc[i][c].w = fmaf(p, vv[c].w, acc[i][c].w);
          }
        }
      }
    }
  }

  /* Keys k0 .. k0 + BN - 1 of K (swizzled: group gi of key r at slot
   * gi ^ (r % 8)) or V (plain). */
  template <bool SWZ>
  static __device__ __forceinline__ void load_kv(const ke__attention_desc &a,
                                                 const geom &g, bool async,
                                                 const T *base, int64_t stride,
                                                 int k0, float *dst) {
    constexpr int N = (BN * G4 + THREADS - 1) / THREADS;
    constexpr int U = C::UNROLL_COPY;
    KD_ATTN_UNROLL(U)
    for (int it = 0; it < N; it++) {
      const int idx = (int)threadIdx.x + THREADS * it;
      if (N * THREADS != BN * G4 && idx >= BN * G4) break;
      const int r = idx / G4, gi = idx % G4;
      const int64_t key = (int64_t)k0 + r;
      const T *src = key < g.kv_end ? base + key * stride : nullptr;
      const int slot = SWZ ? (gi ^ (r & 7)) : gi;
      stage4(dst + 4 * (r * G4 + slot), src, base, gi, (int)a.d, async);
    }
  }
};

template <typename T, class C>
__global__ void __launch_bounds__(C::THREADS, C::MINB)
kd_attn_simt_fwd(const T *__restrict__ q, const T *__restrict__ k,
                 const T *__restrict__ v, T *__restrict__ o,
                 ke__attention_desc a, bool async) {
  typedef kd_attn_simt<T, C> K;
  constexpr int RM = K::RM, RN = K::RN, DG = K::DG, BN = C::BN, G4 = K::G4;
  constexpr int TY = C::TY;
  HIP_DYNAMIC_SHARED(uint4, smem_raw); /* one type for every kernel (CUDA) */
  float *qs = reinterpret_cast<float *>(smem_raw);
  float *ks = qs + K::Q_F, *vs = ks + K::K_F, *ps = vs + K::V_F;

  const int tid = threadIdx.x, ty = tid / 16, tx = tid % 16;
  typename K::geom g;
  g.init(a, q, k, v, o, C::BM);
  const int blk_min_lim = g.lim(a, g.row0);
  /* Planted bug (arch/kd.h): the original engine's attention, right for at
   * most 32 keys. */
  if (KD_PLANTED && g.kv_end > 32) g.kv_end = 32;
  int lim_r[RM];
  KD_UNROLL
  for (int i = 0; i < RM; i++) {
    const int64_t rr = g.row0 + ty + TY * i;
    lim_r[i] = rr < g.rows_total ? g.lim(a, rr) : g.kv_end;
  }

  float4 acc[RM][DG];
  float m[RM], l[RM];
  KD_UNROLL
  for (int i = 0; i < RM; i++) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
    KD_UNROLL
    for (int c = 0; c < DG; c++) acc[i][c] = make_float4(0.f, 0.f, 0.f, 0.f);
  }

  const int ntiles = (int)(((int64_t)g.kv_end + BN - 1) / BN);
  /* exp2 of log2(e) scale s is exp(scale s). */
  const float scale_log2 = a.scale * 1.4426950408889634f;
  K::load_q(a, g, async, qs);
  if (ntiles > 0)
    K::template load_kv<true>(a, g, async, g.k, a.k_stride[2], 0, ks);
  kd_cp_async_commit();
  if (ntiles > 0)
    K::template load_kv<false>(a, g, async, g.v, a.v_stride[2], 0, vs);
  kd_cp_async_commit();

  for (int t = 0; t < ntiles; t++) {
    const int k0 = t * BN;
    kd_cp_async_wait<1>(); /* Q and K_t; V_t may still be in flight */
    __syncthreads();

    /* S = Q K^T for rows ty + 16 i, keys tx + 16 j. */
    float s[RM][RN];
    KD_UNROLL
    for (int i = 0; i < RM; i++)
      KD_UNROLL
      for (int j = 0; j < RN; j++) s[i][j] = 0.0f;
    /* Every group of DP: past D both Q and K hold zeros. */
    constexpr int U = C::UNROLL;
    KD_ATTN_UNROLL(U)
    for (int gi = 0; gi < G4; gi++) {
      float4 qv[RM], kv[RN];
      KD_UNROLL
      for (int i = 0; i < RM; i++) {
        const int r = ty + TY * i;
        qv[i] = reinterpret_cast<const float4 *>(qs)[r * G4 + (gi ^ (r & 7))];
      }
      KD_UNROLL
      for (int j = 0; j < RN; j++) {
        const int r = tx + 16 * j;
        kv[j] = reinterpret_cast<const float4 *>(ks)[r * G4 + (gi ^ (r & 7))];
      }
      KD_UNROLL
      for (int i = 0; i < RM; i++)
        KD_UNROLL
        for (int j = 0; j < RN; j++) {
          s[i][j] = fmaf(qv[i].x, kv[j].x, s[i][j]);
          s[i][j] = fmaf(qv[i].y, kv[j].y, s[i][j]);
          s[i][j] = fmaf(qv[i].z, kv[j].z, s[i][j]);
          s[i][j] = fmaf(qv[i].w, kv[j].w, s[i][j]);
        }
    }
    __syncthreads(); /* every thread is done with K_t */
    if (t + 1 < ntiles)
      K::template load_kv<true>(a, g, async, g.k, a.k_stride[2], k0 + BN, ks);
    kd_cp_async_commit();

    /* Softmax update; P to shared memory. Keys relative to k0 (no int
     * overflow near 2^31). */
    const bool masked = BN > blk_min_lim - k0;
    KD_UNROLL
    for (int i = 0; i < RM; i++) {
      float mx = -INFINITY;
      KD_UNROLL
      for (int j = 0; j < RN; j++) {
        float x = s[i][j] * scale_log2;
        if (masked && tx + 16 * j >= lim_r[i] - k0) x = -INFINITY;
        s[i][j] = x;
        mx = fmaxf(mx, x); /* a NaN is caught by its weight */
      }
      KD_UNROLL
      for (int off = 1; off < 16; off *= 2) mx = fmaxf(mx, __shfl_xor(mx, off));
      const float mn = fmaxf(m[i], mx);
      const float sub = mn == -INFINITY ? 0.0f : mn;
      const float alpha = kd_exp2_weight(m[i] - sub); /* 0 while m is -inf */
      m[i] = mn;
      l[i] *= alpha;
      KD_UNROLL
      for (int c = 0; c < DG; c++) {
        acc[i][c].x *= alpha;
        acc[i][c].y *= alpha;
        acc[i][c].z *= alpha;
        acc[i][c].w *= alpha;
      }
      KD_UNROLL
      for (int j = 0; j < RN; j++) {
        const float p = kd_exp2_weight(s[i][j] - sub);
        l[i] += p;
        ps[(ty + TY * i) * BN + tx + 16 * j] = p;
      }
    }
    kd_cp_async_wait<1>(); /* V_t; K_{t+1} may still be in flight */
    __syncthreads();

    /* O += P V; on tiles that cross a row's limit, each row skips its
     * hidden keys (their weight is 0, but 0 * NaN would not be). */
    const int kn = g.kv_end - k0 < BN ? g.kv_end - k0 : BN;
    if (masked) {
      int vis[RM]; /* keys of this tile each row sees */
      KD_UNROLL
      for (int i = 0; i < RM; i++) vis[i] = lim_r[i] - k0;
      K::template pv<true>(acc, ps, vs, kn, ty, tx, vis);
    } else {
      K::template pv<false>(acc, ps, vs, kn, ty, tx, lim_r);
    }
    __syncthreads(); /* every thread is done with V_t and P */
    if (t + 1 < ntiles)
      K::template load_kv<false>(a, g, async, g.v, a.v_stride[2], k0 + BN,
                                 vs);
    kd_cp_async_commit();
  }

  /* l over the row's 16 threads; l == 0 (nothing visible) writes zeros. */
  KD_UNROLL
  for (int i = 0; i < RM; i++) {
    float lt = l[i];
    KD_UNROLL
    for (int off = 1; off < 16; off *= 2) lt += __shfl_xor(lt, off);
    const int64_t rr = g.row0 + ty + TY * i;
    if (rr >= g.rows_total) continue;
    T *orow = g.row(g.o, a.o_stride, rr);
    KD_UNROLL
    for (int c = 0; c < DG; c++) {
      const int d0 = 4 * (tx + 16 * c);
      const float f[4] = {acc[i][c].x, acc[i][c].y, acc[i][c].z, acc[i][c].w};
      KD_UNROLL
      for (int e = 0; e < 4; e++)
        if (d0 + e < a.d)
          orow[d0 + e] = kd_from_float<T>(lt == 0.0f ? 0.0f : f[e] / lt);
    }
  }
  (void)G4;
}

/* Launches kd_attn_simt_fwd<T, C>; grid (row tiles, Hkv, B). */
template <typename T, class C>
static int kd_attn_simt_launch(hipStream_t stream, const void *q,
                               const void *k, const void *v, void *o,
                               const ke__attention_desc *a) {
  typedef kd_attn_simt<T, C> K;
  bool async = sizeof(T) == 4 && a->d % 4 == 0;
  const void *ptr[3] = {q, k, v};
  const int64_t *st[3] = {a->q_stride, a->k_stride, a->v_stride};
  for (int t = 0; t < 3; t++) {
    async = async && (uintptr_t)ptr[t] % 16 == 0;
    for (int d = 0; d < 3; d++) async = async && st[t][d] % 4 == 0;
  }
  const void *fn = (const void *)kd_attn_simt_fwd<T, C>;
  int err = (int)hipFuncSetAttribute(
      fn, hipFuncAttributeMaxDynamicSharedMemorySize, (int)K::SMEM_BYTES);
  if (err != 0) return err;
  hipLaunchKernelGGL((kd_attn_simt_fwd<T, C>), kd_attn_grid(a, C::BM),
                     dim3(C::THREADS), K::SMEM_BYTES, stream,
                     (const T *)q, (const T *)k, (const T *)v, (T *)o, *a,
                     async);
  return (int)hipGetLastError();
}

#endif
