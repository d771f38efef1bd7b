/* Fused attention, flash-style: O = softmax(scale * Q K^T + causal) V in one
 * pass over K and V; the Sq x Sk scores never exist in memory.
 *
 * Kernels (docs/kernels-attention.md). The launcher at the end runs the
 * family the engine resolved: TILED is the matrix-core kernel (tile/attn_mma.h)
 * for f16/bf16 where the device has matrix units and rows are 16-byte aligned
 * with D a multiple of 8, the register-tiled SIMT kernel (tile/attn_simt.h)
 * otherwise; ROWS is this file's kernel, below.
 *
 * ROWS algorithm. A block of 256 threads takes one (batch, kv head) and a tile of
 * R query rows. Rows are (query head of the kv head's group, query) pairs,
 * so with GQA/MQA a decode step packs the group's heads into one block and
 * every query head reads its kv head directly. Each row belongs to G
 * consecutive lanes (G = 4 for D <= 128, 8 above); each lane holds 4 * CPT
 * of the row's dimensions (dimension 4 * (g + G * c) + e for chunk c) of the
 * pre-scaled query and of the f32 accumulator, plus the row's running max m
 * and sum l. The block walks K/V in tiles of BN keys staged in shared memory
 * as f32 (zero-filled past Sk and past D); scores are partial dot products
 * reduced over the G lanes with shuffles, folded into (m, l, acc) eight keys
 * at a time. When the tile holds fewer than R rows (decode), the 256 threads
 * are split into KS groups that take interleaved keys of each tile, each
 * with its own (m, l, acc), merged through shared memory at the end (an
 * in-block flash-decoding). Causal tiles past the block's last visible key
 * are never loaded; every other edge (partial row tiles, partial key tiles,
 * D not a multiple of 4 * G) is handled by predicates, never by reading out
 * of bounds.
 *
 * Limits: D <= 256 (any value), 256 threads, about 34 KB of static shared
 * memory per block, grid (row tiles, Hkv, B). One block never splits the
 * keys with another, so a decode step runs B * Hkv blocks: few for small
 * batches (a cross-block split needs a workspace; not done). Masked keys
 * are never read into the sums, so a NaN there does nothing; a NaN or +inf
 * score makes the row NaN, a NaN in V at a visible key makes that element
 * NaN; a row with no visible key (or only -inf scores) gives zeros. All
 * arithmetic is f32 whatever the storage type.
 */
#include "tile/attn_mma.h"
#include "tile/attn_simt.h"
#include "arch/kd.h"
#include "kiln/attention.h"

/* g++ (host emulation) has no unroll pragma; the GPU compilers do. */
#if defined(KILN_BACKEND_HOST)
#define KE_ATTN_UNROLL
#else
#define KE_ATTN_UNROLL _Pragma("unroll")
#endif

#define KE_ATTN_THREADS 256
/* Two blocks per multiprocessor on CUDA caps registers at 128 (a few spills
 * for D > 96), which measured faster on an H100 than one block without
 * spills (HIP reads the hint as waves per SIMD, a milder one). */
#define KE_ATTN_MIN_BLOCKS 2
#define KE_ATTN_CHUNK 8 /* keys per online-softmax update */

/* Compile-time geometry for G lanes per row and CPT 4-float chunks per lane.
 * BN keeps the two staged tiles near 32 KB whatever D is; LD4 pads each
 * staged row by one float4 so that lanes of different key splits reading
 * the same dimensions of different keys hit different banks. */
template <int G, int CPT> struct ke_attention_geom {
  static constexpr int DPT = 4 * CPT;        /* dimensions per lane */
  static constexpr int DMAX = G * DPT;       /* dimensions per row */
  static constexpr int Q4 = DMAX / 4;        /* float4 per staged row */
  static constexpr int LD4 = Q4 + 1;
  static constexpr int BN = DMAX <= 64 ? 64 : (DMAX <= 128 ? 32 : 16);
  static constexpr int RMAX = KE_ATTN_THREADS / G;
  /* The key-split merge reuses the tiles: up to 128 lanes park CPT float4
   * of accumulator in the K tile and (m, l) in the V tile. */
  static_assert(128 * CPT <= BN * LD4, "merge area does not fit");
};

/* Four consecutive elements of K or V held raw in registers (f32 as a
 * float4, f16/bf16 as a uint2 of bit patterns), loaded with one vector
 * access when aligned, element by element otherwise; missing elements
 * (past D, or past the last key) are +0. */
template <typename T> struct ke_attention_raw;

template <> struct ke_attention_raw<float> {
  float4 r;
  __device__ __forceinline__ void load(const float *p, int n, bool vec) {
    if (vec && n == 4) {
#if defined(KILN_BACKEND_HOST)
      memcpy(&r, p, sizeof r);
#else
      r = *reinterpret_cast<const float4 *>(p);
#endif
    } else {
      r.x = n > 0 ? p[0] : 0.0f;
      r.y = n > 1 ? p[1] : 0.0f;
      r.z = n > 2 ? p[2] : 0.0f;
      r.w = n > 3 ? p[3] : 0.0f;
    }
  }
  __device__ __forceinline__ float4 get() const { return r; }
};

template <typename H> struct ke_attention_raw16 {
  uint2 r;
  __device__ __forceinline__ void load(const H *p, int n, bool vec) {
    if (vec && n == 4) {
#if defined(KILN_BACKEND_HOST)
      memcpy(&r, p, sizeof r);
#else
      r = *reinterpret_cast<const uint2 *>(p);
#endif
    } else {
      const unsigned e0 = n > 0 ? p[0].bits : 0u, e1 = n > 1 ? p[1].bits : 0u;
      const unsigned e2 = n > 2 ? p[2].bits : 0u, e3 = n > 3 ? p[3].bits : 0u;
      r.x = e0 | e1 << 16;
      r.y = e2 | e3 << 16;
    }
  }
  static __device__ __forceinline__ float half_of(unsigned w, int hi) {
    H h;
    h.bits = (uint16_t)(hi ? w >> 16 : w & 0xffffu);
    return kd_to_float(h);
  }
  __device__ __forceinline__ float4 get() const {
    return make_float4(half_of(r.x, 0), half_of(r.x, 1), half_of(r.y, 0),
                       half_of(r.y, 1));
  }
};
template <> struct ke_attention_raw<kd_half> : ke_attention_raw16<kd_half> {};
template <> struct ke_attention_raw<kd_bf16> : ke_attention_raw16<kd_bf16> {};

/* Issues this thread's loads of the key tile starting at k0: group idx =
 * tid + n * 256 of the tile is key idx / Q4, dimensions 4 * (idx % Q4) on. */
template <typename T, int Q4, int TILE4, int NSLOT>
__device__ __forceinline__ void
ke_attention_fetch(ke_attention_raw<T> *kreg, ke_attention_raw<T> *vreg,
                   const T *kbase, const T *vbase, const ke__attention_desc &a,
                   int64_t k0, int64_t kv_end, bool vec) {
  KE_ATTN_UNROLL
  for (int n = 0; n < NSLOT; n++) {
    const int idx = threadIdx.x + n * KE_ATTN_THREADS;
    const int t = idx / Q4, d0 = 4 * (idx % Q4);
    const int64_t left = a.d - d0;
    int cnt = left < 0 ? 0 : (left > 4 ? 4 : (int)left);
    if (idx >= TILE4 || k0 + t >= kv_end) cnt = 0;
    const int64_t key = cnt > 0 ? k0 + t : 0;
    kreg[n].load(kbase + key * a.k_stride[2] + d0, cnt, vec);
    vreg[n].load(vbase + key * a.v_stride[2] + d0, cnt, vec);
  }
}

/* Folds the (m2, l2, acc2) state of another key split into (m, l, acc). */
template <int DPT>
__device__ __forceinline__ void
ke_attention_merge(float &m, float &l, float *acc, float m2, float l2,
                   const float *acc2) {
  const float mn = fmaxf(m, m2);
  /* Equal maxima (both -inf included) keep their scale of 1: exp(-inf -
   * -inf) would be NaN. */
  const float a1 = m == mn ? 1.0f : expf(m - mn);
  const float a2 = m2 == mn ? 1.0f : expf(m2 - mn);
  l = l * a1 + l2 * a2;
KE_ATTN_UNROLL
  for (int e = 0; e < DPT; e++) acc[e] = acc[e] * a1 + acc2[e] * a2;
  m = mn;
}

template <typename T, int G, int CPT>
__global__ void __launch_bounds__(KE_ATTN_THREADS, KE_ATTN_MIN_BLOCKS)
ke_attention_fwd(const T *__restrict__ q, const T *__restrict__ k,
                 const T *__restrict__ v, T *__restrict__ o,
                 ke__attention_desc a, int rows_per_block, int splits,
                 bool vec) {
  typedef ke_attention_geom<G, CPT> S;
  constexpr int DPT = S::DPT;
  __shared__ float4 sk[S::BN * S::LD4];
  __shared__ float4 sv[S::BN * S::LD4];

  const int tid = threadIdx.x;
  const int g = tid % G;
  const int r = (tid / G) % rows_per_block;
  const int split = tid / (G * rows_per_block);

  const int64_t ratio = a.hq / a.hkv;
  const int64_t rows_total = ratio * a.sq;
  const int64_t b = blockIdx.z, hk = blockIdx.y;
  const int64_t row0 = (int64_t)blockIdx.x * rows_per_block;
  const int64_t row = row0 + r;
  const bool active = row < rows_total;
  const int64_t h = hk * ratio + (active ? row / a.sq : 0);
  const int64_t i = active ? row % a.sq : 0;

  /* Keys j < lim are visible to this row; the block loads keys up to the
   * largest limit of its rows, kv_end. Rows of one head are consecutive, so
   * the largest query index is the last row's unless the tile spans two
   * heads. */
  int64_t lim = a.sk, kv_end = a.sk;
  if (a.causal) {
    lim = i + a.offset + 1;
    lim = lim < 0 ? 0 : (lim > a.sk ? a.sk : lim);
    const int64_t last_row =
        (row0 + rows_per_block < rows_total ? row0 + rows_per_block
                                            : rows_total) - 1;
    const int64_t imax =
        row0 / a.sq == last_row / a.sq ? last_row % a.sq : a.sq - 1;
    kv_end = imax + a.offset + 1;
    kv_end = kv_end < 0 ? 0 : (kv_end > a.sk ? a.sk : kv_end);
  }
  if (!active) lim = 0;
  /* Planted bug (arch/kd.h): the original engine's attention, right for at
   * most 32 keys. */
  if (KD_PLANTED && kv_end > 32) kv_end = 32;

  float qr[DPT], acc[DPT];
  {
    const T *qrow = q + b * a.q_stride[0] + h * a.q_stride[1] +
                    i * a.q_stride[2];
KE_ATTN_UNROLL
    for (int c = 0; c < CPT; c++)
KE_ATTN_UNROLL
      for (int e = 0; e < 4; e++) {
        const int d = 4 * (g + G * c) + e;
        qr[4 * c + e] =
            active && d < a.d ? a.scale * kd_to_float(qrow[d]) : 0.0f;
        acc[4 * c + e] = 0.0f;
      }
  }
  float m = -INFINITY, l = 0.0f;

  /* Staging: each thread first issues the loads of its NSLOT groups of four
   * K and V elements into registers, raw (one vector access per group when
   * aligned), and only then waits at the barrier and converts them into
   * shared memory, so a tile costs one memory latency, not NSLOT. */
  constexpr int TILE4 = S::BN * S::Q4;
  constexpr int NSLOT = (TILE4 + KE_ATTN_THREADS - 1) / KE_ATTN_THREADS;
  ke_attention_raw<T> kreg[NSLOT], vreg[NSLOT];
  const T *kbase = k + b * a.k_stride[0] + hk * a.k_stride[1];
  const T *vbase = v + b * a.v_stride[0] + hk * a.v_stride[1];
  for (int64_t k0 = 0; k0 < kv_end; k0 += S::BN) {
    const int nk = (int)(kv_end - k0 < S::BN ? kv_end - k0 : S::BN);
    ke_attention_fetch<T, S::Q4, TILE4, NSLOT>(kreg, vreg, kbase, vbase, a, k0,
                                               kv_end, vec);
    __syncthreads(); /* the previous tile is no longer read */
KE_ATTN_UNROLL
    for (int n = 0; n < NSLOT; n++) {
      const int idx = tid + n * KE_ATTN_THREADS;
      if (TILE4 % KE_ATTN_THREADS == 0 || idx < TILE4) {
        const int t = idx / S::Q4, c4 = idx % S::Q4;
        sk[t * S::LD4 + c4] = kreg[n].get();
        sv[t * S::LD4 + c4] = vreg[n].get();
      }
    }
    __syncthreads();

    /* This split's keys of the tile are split + splits * n. The loop and
     * the guard around each dot product depend only on the tile, never on
     * the lane, so every lane of a warp reaches every shuffle. */
    for (int base = 0; base < nk; base += KE_ATTN_CHUNK * splits) {
      float s[KE_ATTN_CHUNK];
      bool vis[KE_ATTN_CHUNK];
      float cmax = -INFINITY;
KE_ATTN_UNROLL
      for (int c = 0; c < KE_ATTN_CHUNK; c++) {
        const int t = base + c * splits + split;
        vis[c] = false;
        s[c] = -INFINITY;
        if (base + c * splits < nk) {
          const float4 *kr = &sk[(t < nk ? t : 0) * S::LD4];
          float dot = 0.0f;
KE_ATTN_UNROLL
          for (int cc = 0; cc < CPT; cc++) {
            const float4 kk = kr[g + G * cc];
            dot = fmaf(qr[4 * cc + 0], kk.x, dot);
            dot = fmaf(qr[4 * cc + 1], kk.y, dot);
            dot = fmaf(qr[4 * cc + 2], kk.z, dot);
            dot = fmaf(qr[4 * cc + 3], kk.w, dot);
          }
KE_ATTN_UNROLL
          for (int off = 1; off < G; off *= 2) dot += __shfl_xor(dot, off);
          vis[c] = t < nk && k0 + t < lim;
          if (vis[c]) {
            s[c] = dot;
            cmax = fmaxf(cmax, dot); /* a NaN is caught by its weight */
          }
        }
      }
      const float mn = fmaxf(m, cmax);
      if (mn != m) {
        const float alpha = expf(m - mn); /* 0 while m is -inf */
        l *= alpha;
KE_ATTN_UNROLL
        for (int e = 0; e < DPT; e++) acc[e] *= alpha;
        m = mn;
      }
KE_ATTN_UNROLL
      for (int c = 0; c < KE_ATTN_CHUNK; c++) {
        if (!vis[c]) continue;
        /* A -inf score weighs 0 (exp(-inf - -inf) would be NaN); a NaN or
         * +inf score gives a NaN weight, and the row goes NaN. */
        const float p = s[c] == -INFINITY ? 0.0f : expf(s[c] - m);
        l += p;
        const float4 *vr = &sv[(base + c * splits + split) * S::LD4];
KE_ATTN_UNROLL
        for (int cc = 0; cc < CPT; cc++) {
          const float4 vv = vr[g + G * cc];
          acc[4 * cc + 0] = fmaf(p, vv.x, acc[4 * cc + 0]);
          acc[4 * cc + 1] = fmaf(p, vv.y, acc[4 * cc + 1]);
          acc[4 * cc + 2] = fmaf(p, vv.z, acc[4 * cc + 2]);
          acc[4 * cc + 3] = fmaf(p, vv.w, acc[4 * cc + 3]);
        }
      }
    }
  }

  /* Merge the key splits pairwise: splits [half, 2 * half) park their state
   * in the (now free) tiles, splits [0, half) fold it in. */
  for (int half = splits / 2; half >= 1; half /= 2) {
    __syncthreads();
    if (split >= half && split < 2 * half) {
      const int slot = ((split - half) * rows_per_block + r) * G + g;
      sv[slot] = make_float4(m, l, 0.0f, 0.0f);
KE_ATTN_UNROLL
      for (int c = 0; c < CPT; c++)
        sk[slot * CPT + c] = make_float4(acc[4 * c], acc[4 * c + 1],
                                         acc[4 * c + 2], acc[4 * c + 3]);
    }
    __syncthreads();
    if (split < half) {
      const int slot = (split * rows_per_block + r) * G + g;
      const float4 ml = sv[slot];
      float other[DPT];
KE_ATTN_UNROLL
      for (int c = 0; c < CPT; c++) {
        const float4 x = sk[slot * CPT + c];
        other[4 * c] = x.x;
        other[4 * c + 1] = x.y;
        other[4 * c + 2] = x.z;
        other[4 * c + 3] = x.w;
      }
      ke_attention_merge<DPT>(m, l, acc, ml.x, ml.y, other);
    }
  }

  if (split != 0 || !active) return;
  T *orow = o + b * a.o_stride[0] + h * a.o_stride[1] + i * a.o_stride[2];
  /* l == 0: no visible key, or only -inf scores: the row is zeros. */
KE_ATTN_UNROLL
  for (int c = 0; c < CPT; c++)
KE_ATTN_UNROLL
    for (int e = 0; e < 4; e++) {
      const int d = 4 * (g + G * c) + e;
      if (d < a.d)
        orow[d] = kd_from_float<T>(l == 0.0f ? 0.0f : acc[4 * c + e] / l);
    }
}

/* Picks the row tile: the smallest R (a power of two) that holds all rows of
 * a kv head, at least 1, and KS = 256 / (G * R) key splits, capped so that
 * every split has a key in each full tile. */
template <typename T, int G, int CPT>
static int ke_attention_launch_geom(hipStream_t stream, const void *q,
                                    const void *k, const void *v, void *o,
                                    const ke__attention_desc *a) {
  typedef ke_attention_geom<G, CPT> S;
  const int64_t rows_total = a->hq / a->hkv * a->sq;
  int rows = S::RMAX, splits = 1;
  while (rows > 1 && rows / 2 >= rows_total && splits * 2 <= S::BN) {
    rows /= 2;
    splits *= 2;
  }
  const int64_t tiles = (rows_total + rows - 1) / rows;
  /* Whole groups of four K/V elements load as one vector when D and every
   * K/V stride are multiples of 4 and both bases are aligned to a group. */
  const uintptr_t group = 4 * sizeof(T);
  bool vec = a->d % 4 == 0 && (uintptr_t)k % group == 0 &&
             (uintptr_t)v % group == 0;
  for (int d = 0; d < 3; d++)
    vec = vec && a->k_stride[d] % 4 == 0 && a->v_stride[d] % 4 == 0;
  dim3 grid((unsigned)tiles, (unsigned)a->hkv, (unsigned)a->b);
  hipLaunchKernelGGL((ke_attention_fwd<T, G, CPT>), grid,
                     dim3(KE_ATTN_THREADS), 0, stream, (const T *)q,
                     (const T *)k, (const T *)v, (T *)o, *a, rows, splits,
                     vec);
  return (int)hipGetLastError();
}

template <typename T>
static int ke_attention_launch_typed(hipStream_t s, const void *q,
                                     const void *k, const void *v, void *o,
                                     const ke__attention_desc *a) {
  /* G = 4 lanes per row up to D = 128, in steps of 16 dimensions; G = 8
   * above, in steps of 32. Every D of 1..256 has a geometry. */
  switch (a->d <= 128 ? (a->d + 15) / 16 : 8 + (a->d + 31) / 32) {
  case 1: return ke_attention_launch_geom<T, 4, 1>(s, q, k, v, o, a);
  case 2: return ke_attention_launch_geom<T, 4, 2>(s, q, k, v, o, a);
  case 3: return ke_attention_launch_geom<T, 4, 3>(s, q, k, v, o, a);
  case 4: return ke_attention_launch_geom<T, 4, 4>(s, q, k, v, o, a);
  case 5: return ke_attention_launch_geom<T, 4, 5>(s, q, k, v, o, a);
  case 6: return ke_attention_launch_geom<T, 4, 6>(s, q, k, v, o, a);
  case 7: return ke_attention_launch_geom<T, 4, 7>(s, q, k, v, o, a);
  case 8: return ke_attention_launch_geom<T, 4, 8>(s, q, k, v, o, a);
  case 13: return ke_attention_launch_geom<T, 8, 5>(s, q, k, v, o, a);
  case 14: return ke_attention_launch_geom<T, 8, 6>(s, q, k, v, o, a);
  case 15: return ke_attention_launch_geom<T, 8, 7>(s, q, k, v, o, a);
  case 16: return ke_attention_launch_geom<T, 8, 8>(s, q, k, v, o, a);
  }
  return (int)hipErrorInvalidValue;
}

/* ---- Tiled kernels ---------------------------------------------------------- */

/* Every row of q, k, v and o starts on 16 bytes, and D is whole 16-byte
 * chunks: the matrix-core kernel's cp.async and 16-byte stores. */
static bool ke_attention_rows16(const void *q, const void *k, const void *v,
                                const void *o, const ke__attention_desc *a) {
  if (a->d % 8 != 0) return false;
  const void *ptr[4] = {q, k, v, o};
  const int64_t *st[4] = {a->q_stride, a->k_stride, a->v_stride, a->o_stride};
  for (int t = 0; t < 4; t++) {
    if ((uintptr_t)ptr[t] % 16 != 0) return false;
    for (int d = 0; d < 3; d++)
      if (st[t][d] % 8 != 0) return false;
  }
  return true;
}

/* The matrix-core kernel for D padded to 32, 64, 80, 96, 128, 160, 192 or
 * 256 (the fast paths are the D they name; any other multiple of 8 pads). */
template <class Arch, typename T>
static int ke_attention_mma_by_d(hipStream_t s, const void *q, const void *k,
                                 const void *v, void *o,
                                 const ke__attention_desc *a) {
#define KE_ATTN_MMA(DP)                                                     \
  return kd_attn_mma_launch<Arch, T,                                       \
                            typename kd_attn_mma_default<Arch, DP>::type>( \
      s, q, k, v, o, a)
  switch ((a->d + 15) / 16) {
  case 1: case 2: KE_ATTN_MMA(32);
  case 3: case 4: KE_ATTN_MMA(64);
  case 5: KE_ATTN_MMA(80);
  case 6: KE_ATTN_MMA(96);
  case 7: case 8: KE_ATTN_MMA(128);
  case 9: case 10: KE_ATTN_MMA(160);
  case 11: case 12: KE_ATTN_MMA(192);
  default: KE_ATTN_MMA(256);
  }
#undef KE_ATTN_MMA
}

/* Whether a tiled grid of bm-row tiles keeps its 256-thread total within
 * HIP's 32-bit limit: 16-row tiles (the AMD configurations for D > 128)
 * would not at the largest row counts the engine accepts (2^28), and such
 * a launch takes the ROWS kernel. */
static bool ke_attention_grid_fits(const ke__attention_desc *a, int bm) {
  const int64_t rows = a->hq / a->hkv * a->sq;
  return (rows + bm - 1) / bm * KD_ATTN_SIMT_THREADS <= (int64_t)UINT32_MAX;
}

/* The SIMT tiled kernel for D padded to 64, 128, 192 or 256, in the
 * configurations for 227 KiB of shared memory (NVIDIA) or 64 KiB (AMD). */
template <typename T, bool BIG>
static int ke_attention_simt_by_d(hipStream_t s, const void *q, const void *k,
                                  const void *v, void *o,
                                  const ke__attention_desc *a) {
#define KE_ATTN_SIMT(DP)                                                       \
  {                                                                            \
    typedef typename kd_attn_simt_default<DP, BIG>::type C;                    \
    if (!ke_attention_grid_fits(a, C::BM))                                     \
      return ke_attention_launch_typed<T>(s, q, k, v, o, a);                   \
    return kd_attn_simt_launch<T, C>(s, q, k, v, o, a);                        \
  }
  switch ((a->d + 63) / 64) {
  case 1: KE_ATTN_SIMT(64);
  case 2: KE_ATTN_SIMT(128);
  case 3: KE_ATTN_SIMT(192);
  default: KE_ATTN_SIMT(256);
  }
#undef KE_ATTN_SIMT
}

/* The host emulation budgets shared memory as the GPU it emulates. */
template <typename T>
static int ke_attention_simt(hipStream_t s, const void *q, const void *k,
                             const void *v, void *o,
                             const ke__attention_desc *a) {
#if defined(KILN_BACKEND_CUDA)
  return ke_attention_simt_by_d<T, true>(s, q, k, v, o, a);
#elif defined(KILN_BACKEND_HOST)
  return kemu_warp_size() == 32
             ? ke_attention_simt_by_d<T, true>(s, q, k, v, o, a)
             : ke_attention_simt_by_d<T, false>(s, q, k, v, o, a);
#else
  return ke_attention_simt_by_d<T, false>(s, q, k, v, o, a);
#endif
}

/* kernels/attention_sm90.hip: the Hopper kernel, the default on compute
 * capability 9.0 (KILN_HOPPER_ATTN=0 turns it off); -1 where it does not
 * apply. */
extern "C" int ke__attention_sm90_launch(void *stream, ke_dtype dtype,
                                         const void *q, const void *k,
                                         const void *v, void *o,
                                         const ke__attention_desc *a);

template <typename T>
static int ke_attention_tiled(hipStream_t s, const void *q, const void *k,
                              const void *v, void *o,
                              const ke__attention_desc *a) {
  if constexpr (kd_is16<T>::v) {
    if (ke_attention_rows16(q, k, v, o, a)) {
      const kd_mma_kind kind = kd_mma_device_kind();
#if KD_MMA_HAS_NV
      if (kind == KD_MMA_NV) {
        const int rc = ke__attention_sm90_launch(
            s, std::is_same<T, kd_half>::value ? KE_F16 : KE_BF16, q, k, v,
            o, a);
        if (rc >= 0) return rc;
        return ke_attention_mma_by_d<kd_mma_nv, T>(s, q, k, v, o, a);
      }
#endif
#if KD_MMA_HAS_CDNA
      if (kind == KD_MMA_CDNA)
        return ke_attention_mma_by_d<kd_mma_cdna, T>(s, q, k, v, o, a);
#endif
      (void)kind;
    }
  }
  return ke_attention_simt<T>(s, q, k, v, o, a);
}

extern "C" size_t ke__attention_sm90_work_bytes(ke_dtype dtype,
                                               const ke__attention_desc *a);

extern "C" size_t ke__attention_work_bytes(ke_dtype dtype,
                                           const ke__attention_desc *desc) {
#if KD_MMA_HAS_NV
  if (desc->kernel == KE_ATTN_KERNEL_TILED &&
      kd_mma_device_kind() == KD_MMA_NV)
    return ke__attention_sm90_work_bytes(dtype, desc);
#endif
  (void)dtype, (void)desc;
  return 0;
}

extern "C" int ke__attention_launch(void *stream, ke_dtype dtype,
                                    const void *q, const void *k,
                                    const void *v, void *o,
                                    const ke__attention_desc *desc) {
  hipStream_t s = (hipStream_t)stream;
  if (desc->kernel == KE_ATTN_KERNEL_TILED) {
    KD_DISPATCH_IN(dtype, T, return ke_attention_tiled<T>(s, q, k, v, o, desc))
  } else {
    KD_DISPATCH_IN(dtype, T,
                   return ke_attention_launch_typed<T>(s, q, k, v, o, desc))
  }
  return (int)hipErrorInvalidValue;
}
