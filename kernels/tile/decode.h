/* Split-key decode core (prefix kd_decode_), shared by dense decode
 * (kernels/attention_decode.hip) and paged attention
 * (kernels/paged_attention.hip): a block streams one key range of one KV
 * head for a few query rows, merges its lane groups, and either writes the
 * rows or leaves a partial result that is merged across blocks.
 *
 * Work split. A block of 256 threads takes RT query rows that read the same
 * KV head and a contiguous range of its keys [kb, ke). Its threads form
 * 256 / L groups of L lanes; a group takes one key at a time (keys kb + g,
 * kb + g + NG, ... for group g of NG), and lane j of a group holds
 * dimensions 8j .. 8j + 7 of that key's K and V rows (one 16-byte load for
 * a 16-bit cache, two for f32), and of each row's pre-scaled query and f32
 * accumulator. A score is 8 FMAs per lane and log2(L) butterfly shuffles;
 * every lane of the group then has it and folds it into its rows' online
 * softmax (running max m, sum l, accumulator). K and V reach the lanes
 * through a pipeline of S stages in shared memory (U keys per group per
 * stage, asynchronous 16-byte copies on NVIDIA), S - 1 steps ahead of the
 * math; where the key source needs an indirection (paged attention's block
 * table) the next step's lookups are issued before this step's math.
 *
 * Merging. Groups merge in shared memory (rescaled to the block's row
 * maxima). A block that covers all of its rows' keys writes the output
 * rows. Otherwise it writes a partial row (m, l, acc) per output row, then
 * either a second kernel merges them (kd_decode_merge_elem, when the caller
 * gave a workspace and no counters) or the last block of the key ranges
 * merges them itself: each block bumps a per-(rows, KV head) counter after
 * a fence; the one that brings it to the number of ranges reads every
 * partial back from L2 (past any stale L1 line; kd_decode_merge_block),
 * writes the output and sets the counter back to 0 (and the dynamic
 * scan's step counter, kd_decode_scan_dyn), so counters are zero between
 * launches.
 *
 * Special values. Scores that are NaN or +inf turn the row's sum NaN, -inf
 * scores weigh 0, keys a row does not see are never folded in, and a NaN in
 * V at a folded key reaches the accumulator even at weight 0; what an empty
 * sum gives (0 for ke_attention, 0/0 = NaN for paged attention) is the
 * caller's choice (ZERO_EMPTY).
 */
#ifndef KILN_KERNELS_TILE_DECODE_H
#define KILN_KERNELS_TILE_DECODE_H

#include "contract/decode.h"
#include "arch/kd.h"

#define KD_DECODE_THREADS 256
#define KD_DECODE_VEC 8 /* elements of a K/V row per lane */

/* Raises a kernel's dynamic shared memory limit to bytes once per device
 * (raised: the launcher's own array, one per kernel instantiation) rather
 * than before every launch, where the runtime call sat between the timing
 * events (measured neutral on the H100, docs/decisions/decode.md). A refusal
 * is not remembered: the 4-stage launchers fall back on it. Racing
 * callers agree. */
#define KD_DECODE_DEVICES 64
static inline int kd_decode_raise_smem(int (&raised)[KD_DECODE_DEVICES],
                                       const void *fn, size_t bytes) {
  int dev = 0;
  if (hipGetDevice(&dev) != hipSuccess || dev < 0 || dev >= KD_DECODE_DEVICES)
    dev = -1;
  if (dev >= 0 && __atomic_load_n(&raised[dev], __ATOMIC_RELAXED)) return 0;
  const int err = (int)hipFuncSetAttribute(
      fn, hipFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  if (err == 0 && dev >= 0) __atomic_store_n(&raised[dev], 1, __ATOMIC_RELAXED);
  return err;
}

/* Eight consecutive elements of a K or V row held raw: two 16-byte words
 * for f32, one for f16/bf16. */
template <typename T> struct kd_decode_raw {
  static constexpr int W = sizeof(T) / 2;
  uint4 w[W];

  static __device__ __forceinline__ uint32_t bits(const float *p, int e,
                                                  int n) {
    return e < n ? kd_f32_bits(p[e]) : 0u;
  }
  template <typename H>
  static __device__ __forceinline__ uint32_t bits(const H *p, int e, int n) {
    return e < n ? p[e].bits : 0u;
  }
  /* Element by element (unaligned rows, D not a multiple of 8); elements
   * at n and past are +0. */
  __device__ __forceinline__ void load_elems(const T *p, int n) {
    if constexpr (W == 2) {
      w[0] = make_uint4(bits(p, 0, n), bits(p, 1, n), bits(p, 2, n),
                        bits(p, 3, n));
      w[W - 1] = make_uint4(bits(p, 4, n), bits(p, 5, n), bits(p, 6, n),
                            bits(p, 7, n));
    } else {
      w[0] = make_uint4(bits(p, 0, n) | bits(p, 1, n) << 16,
                        bits(p, 2, n) | bits(p, 3, n) << 16,
                        bits(p, 4, n) | bits(p, 5, n) << 16,
                        bits(p, 6, n) | bits(p, 7, n) << 16);
    }
  }

  __device__ __forceinline__ void get(float *f) const {
    if constexpr (W == 2) {
      kd_unpack4(w[0], f);
      kd_unpack4(w[W - 1], f + 4);
    } else {
      kd_unpack2(T(), w[0].x, f);
      kd_unpack2(T(), w[0].y, f + 2);
      kd_unpack2(T(), w[0].z, f + 4);
      kd_unpack2(T(), w[0].w, f + 6);
    }
  }
};

/* ---- Asynchronous global-to-shared copies ------------------------------ */

/* 16 bytes from global src to shared dst, or 16 zero bytes when !valid
 * (src is then not read). On NVIDIA sm_80 and later an asynchronous copy
 * (cp.async: no register holds the data while it is in flight, and it
 * completes at kd_decode_wait); elsewhere a load and a store. Only the thread
 * that copied reads dst, so no barrier is needed. */
__device__ __forceinline__ void kd_decode_copy16(uint4 *dst, const void *src,
                                                 bool valid) {
#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s),
               "l"(src), "r"(valid ? 16 : 0)
               : "memory");
#else
  *dst = valid ? kd_ld16(src) : make_uint4(0u, 0u, 0u, 0u);
#endif
}

/* Closes this thread's group of copies issued since the last commit. */
__device__ __forceinline__ void kd_decode_commit() {
#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

/* Waits until at most N of this thread's groups are still in flight. */
template <int N> __device__ __forceinline__ void kd_decode_wait() {
#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

/* The pipeline's shared buffers: S stages of U keys' K and V chunks per
 * thread, each thread's words at [...][threadIdx.x] (consecutive lanes,
 * consecutive 16-byte words: no bank conflicts). */
template <typename T, int U, int S> struct kd_decode_stage {
  static constexpr int W = sizeof(T) / 2;
  uint4 buf[S][U][2][W][KD_DECODE_THREADS];
};

/* exp for the softmax weights: the hardware's approximate one when the
 * result is rounded to 16 bits (kd_exp_for's rule), libm's otherwise. */
template <bool FAST> __device__ __forceinline__ float kd_decode_exp(float x) {
  if constexpr (FAST) return __expf(x);
  else return expf(x);
}

/* The factor that brings a partial with maximum m to the common maximum M
 * (M >= m). Equal maxima, both -inf or both +inf included, keep 1:
 * exp(-inf - -inf) would be NaN. */
template <bool FAST>
__device__ __forceinline__ float kd_decode_weight(float m, float big_m) {
  /* Planted bug (arch/kd.h): partials added without rescaling to the common
   * maximum. */
  if (KD_PLANTED) return 1.0f;
  return m == big_m ? 1.0f : kd_decode_exp<FAST>(m - big_m);
}

/* One lane's rows: scale * q, the running max, sum and accumulator. */
template <int RT> struct kd_decode_state {
  float q[RT][KD_DECODE_VEC];
  float acc[RT][KD_DECODE_VEC];
  float m[RT], l[RT];

  __device__ __forceinline__ void clear() {
    KD_UNROLL
    for (int r = 0; r < RT; r++) {
      m[r] = -INFINITY;
      l[r] = 0.0f;
      KD_UNROLL
      for (int e = 0; e < KD_DECODE_VEC; e++) acc[r][e] = 0.0f;
    }
  }
};

/* Shared memory of the in-block merge: each group's rescaled accumulators
 * (2048 * RT floats whatever L is), maxima and sums. */
template <int L, int RT> struct kd_decode_smem {
  static constexpr int NG = KD_DECODE_THREADS / L;
  static constexpr int DP = KD_DECODE_VEC * L; /* dimensions a group holds */
  float acc[NG * RT * DP];
  float m[NG * RT];
  float l[NG * RT];
  int last;
};

/* Folds U keys per group into the rows. key0 is this group's first key of
 * the step (relative to the range), ng the distance between its keys. With
 * CHECK, a key counts for row r only when key < n and key < lim[r];
 * without, every key counts. */
template <typename T, int L, int RT, int U, bool FAST, bool CHECK>
__device__ __forceinline__ void
kd_decode_fold(kd_decode_state<RT> &st, const kd_decode_raw<T> *kr,
               const kd_decode_raw<T> *vr, int key0, int ng, int n,
               const int *lim) {
  float s[RT][U];
  KD_UNROLL
  for (int u = 0; u < U; u++) {
    float kf[KD_DECODE_VEC];
    kr[u].get(kf);
    KD_UNROLL
    for (int r = 0; r < RT; r++) {
      float dot = 0.0f;
      KD_UNROLL
      for (int e = 0; e < KD_DECODE_VEC; e++)
        dot = fmaf(st.q[r][e], kf[e], dot);
      s[r][u] = dot;
    }
  }
  /* The loop bounds are compile-time: every lane of the warp reaches every
   * shuffle. */
  KD_UNROLL
  for (int off = L / 2; off >= 1; off /= 2)
    KD_UNROLL
    for (int r = 0; r < RT; r++)
      KD_UNROLL
      for (int u = 0; u < U; u++) s[r][u] += __shfl_xor(s[r][u], off);

  bool vis[RT][U];
  KD_UNROLL
  for (int r = 0; r < RT; r++) {
    float cmax = -INFINITY;
    KD_UNROLL
    for (int u = 0; u < U; u++) {
      const int key = key0 + u * ng;
      vis[r][u] = !CHECK || (key < n && key < lim[r]);
      if (vis[r][u]) cmax = fmaxf(cmax, s[r][u]); /* a NaN is caught by l */
    }
    const float mn = fmaxf(st.m[r], cmax);
    if (mn != st.m[r]) {
      const float alpha = kd_decode_exp<FAST>(st.m[r] - mn); /* 0 from -inf */
      st.l[r] *= alpha;
      KD_UNROLL
      for (int e = 0; e < KD_DECODE_VEC; e++) st.acc[r][e] *= alpha;
      st.m[r] = mn;
    }
    /* A -inf score weighs 0 (exp(-inf - -inf) would be NaN); NaN and +inf
     * scores give a NaN weight. */
    KD_UNROLL
    for (int u = 0; u < U; u++)
      s[r][u] = s[r][u] == -INFINITY ? 0.0f : kd_decode_exp<FAST>(s[r][u] - mn);
  }
  KD_UNROLL
  for (int u = 0; u < U; u++) {
    float vf[KD_DECODE_VEC];
    vr[u].get(vf);
    KD_UNROLL
    for (int r = 0; r < RT; r++) {
      if (!vis[r][u]) continue;
      st.l[r] += s[r][u];
      KD_UNROLL
      for (int e = 0; e < KD_DECODE_VEC; e++)
        st.acc[r][e] = fmaf(s[r][u], vf[e], st.acc[r][e]);
    }
  }
}

/* Copies one step's keys into stage `stage`: U keys per group, key u of
 * this group at loc[u], real when valid[u] (16 zero bytes otherwise). */
template <typename T, int U, int S, bool VEC, class Src>
__device__ __forceinline__ void
kd_decode_issue(const Src &src, kd_decode_stage<T, U, S> &sg, int stage,
                const int64_t *loc, const bool *valid, int d0, int nd) {
  constexpr int W = kd_decode_stage<T, U, S>::W;
  const int tid = threadIdx.x;
  KD_UNROLL
  for (int u = 0; u < U; u++) {
    const T *rows[2] = {src.krow(loc[u]) + d0, src.vrow(loc[u]) + d0};
    KD_UNROLL
    for (int kv = 0; kv < 2; kv++) {
      if constexpr (VEC) {
        KD_UNROLL
        for (int w = 0; w < W; w++)
          kd_decode_copy16(&sg.buf[stage][u][kv][w][tid],
                           reinterpret_cast<const char *>(rows[kv]) + 16 * w,
                           valid[u] && nd > 0);
      } else {
        kd_decode_raw<T> r;
        r.load_elems(rows[kv], valid[u] ? nd : 0);
        KD_UNROLL
        for (int w = 0; w < W; w++) sg.buf[stage][u][kv][w][tid] = r.w[w];
      }
    }
  }
}

/* Folds the step in stage `stage` (keys base + u * NG + g of the range)
 * into st: without checks when the whole step is below n and lim_min. */
template <typename T, int L, int RT, int U, int S, bool FAST>
__device__ __forceinline__ void
kd_decode_fold_stage(kd_decode_state<RT> &st, kd_decode_stage<T, U, S> &sg,
                     int stage, int base, int n, const int *lim, int lim_min) {
  constexpr int NG = KD_DECODE_THREADS / L;
  constexpr int W = kd_decode_stage<T, U, S>::W;
  const int g = threadIdx.x / L, tid = threadIdx.x;
  kd_decode_raw<T> kr[U], vr[U];
  KD_UNROLL
  for (int u = 0; u < U; u++)
    KD_UNROLL
    for (int w = 0; w < W; w++) {
      kr[u].w[w] = sg.buf[stage][u][0][w][tid];
      vr[u].w[w] = sg.buf[stage][u][1][w][tid];
    }
  const int end = base + U * NG;
  if (end <= n && end <= lim_min)
    kd_decode_fold<T, L, RT, U, FAST, false>(st, kr, vr, base + g, NG, n, lim);
  else
    kd_decode_fold<T, L, RT, U, FAST, true>(st, kr, vr, base + g, NG, n, lim);
}

/* Streams the n keys kb .. kb + n - 1 of src into st, S - 1 steps of
 * copies ahead of the math. lim[r] (relative to kb, at most n) is row r's
 * first invisible key and lim_min the smallest (block-uniform); lane
 * dimensions d0 .. d0 + nd - 1 (nd <= 8) are real; VEC: every row chunk
 * of 8 elements is 16-byte aligned (16-byte copies), else element loads. Src gives, per key, a location
 * (locate, which may read memory: issued a step before it is needed) and
 * the K and V rows there. */
template <typename T, int L, int RT, int U, int S, bool FAST, bool VEC,
          class Src>
__device__ __forceinline__ void
kd_decode_scan(const Src &src, kd_decode_state<RT> &st,
               kd_decode_stage<T, U, S> &sg, int64_t kb, int n, const int *lim,
               int lim_min, int d0, int nd) {
  constexpr int NG = KD_DECODE_THREADS / L;
  constexpr int STEP = U * NG;
  const int g = threadIdx.x / L;
  const int steps = (n + STEP - 1) / STEP;
  int64_t loc[U];
  KD_UNROLL
  for (int u = 0; u < U; u++)
    loc[u] = u * NG + g < n ? src.locate(kb + u * NG + g) : 0;

  /* Copies step j's keys into stage j % S, then locates step j + 1's. */
  auto issue = [&](int j) {
    if (j >= steps) return;
    bool valid[U];
    KD_UNROLL
    for (int u = 0; u < U; u++) valid[u] = j * STEP + u * NG + g < n;
    kd_decode_issue<T, U, S, VEC>(src, sg, j % S, loc, valid, d0, nd);
    KD_UNROLL
    for (int u = 0; u < U; u++) {
      const int key = (j + 1) * STEP + u * NG + g;
      loc[u] = key < n ? src.locate(kb + key) : 0;
    }
  };

  for (int j = 0; j < S - 1; j++) {
    issue(j);
    kd_decode_commit();
  }
  for (int j = 0; j < steps; j++) {
    issue(j + S - 1);
    kd_decode_commit();
    kd_decode_wait<S - 1>(); /* step j's group has landed */
    kd_decode_fold_stage<T, L, RT, U, S, FAST>(st, sg, j % S, j * STEP, n, lim,
                                               lim_min);
  }
}

/* Merges the groups of the block: afterwards st.m[r] is the block's row
 * maximum in every thread, and sm.acc / sm.l hold each group's accumulator
 * and sum rescaled to it. Begins and ends with a barrier. */
template <int L, int RT, bool FAST>
__device__ __forceinline__ void
kd_decode_block_merge(kd_decode_state<RT> &st, kd_decode_smem<L, RT> &sm) {
  typedef kd_decode_smem<L, RT> S;
  const int g = threadIdx.x / L, li = threadIdx.x % L;
  __syncthreads(); /* sm is free (a previous block's merge is read) */
  if (li == 0)
    KD_UNROLL
    for (int r = 0; r < RT; r++) sm.m[g * RT + r] = st.m[r];
  __syncthreads();
  KD_UNROLL
  for (int r = 0; r < RT; r++) {
    float big_m = -INFINITY;
    for (int gg = 0; gg < S::NG; gg++) big_m = fmaxf(big_m, sm.m[gg * RT + r]);
    const float w = kd_decode_weight<FAST>(st.m[r], big_m);
    float *dst = &sm.acc[(g * RT + r) * S::DP + li * KD_DECODE_VEC];
    KD_UNROLL
    for (int e = 0; e < KD_DECODE_VEC; e++) dst[e] = st.acc[r][e] * w;
    if (li == 0) sm.l[g * RT + r] = st.l[r] * w;
    st.m[r] = big_m;
  }
  __syncthreads();
}

/* Row r's sum and element d of its accumulator over the block's groups,
 * after kd_decode_block_merge. */
template <int L, int RT>
__device__ __forceinline__ float
kd_decode_block_acc(const kd_decode_smem<L, RT> &sm, int r, int d) {
  typedef kd_decode_smem<L, RT> S;
  float a = 0.0f;
  for (int g = 0; g < S::NG; g++) a += sm.acc[(g * RT + r) * S::DP + d];
  return a;
}
template <int L, int RT>
__device__ __forceinline__ float
kd_decode_block_sum(const kd_decode_smem<L, RT> &sm, int r) {
  typedef kd_decode_smem<L, RT> S;
  float l = 0.0f;
  for (int g = 0; g < S::NG; g++) l += sm.l[g * RT + r];
  return l;
}

/* acc / l, or 0 for an empty sum when ZERO_EMPTY (a NaN l stays NaN). */
template <bool ZERO_EMPTY>
__device__ __forceinline__ float kd_decode_out(float acc, float l) {
  return ZERO_EMPTY && l == 0.0f ? 0.0f : acc / l;
}

/* Element d of an output row from its `parts` partial rows, consecutive at
 * row[p * (dim + 2)]: (m, l, acc[dim]). volatile: the rows were written by
 * other blocks of this launch. One pass in batches of KD_DECODE_MERGE_BATCH
 * partials whose loads are all issued before any is used, the running sums
 * rescaled when a batch raises the maximum: the merge is on the critical
 * path of the launch (the last block does it), and a loop that waits for
 * each partial's loads in turn cost two L2 round trips per partial (tens
 * of microseconds at 33 ranges). */
#define KD_DECODE_MERGE_BATCH 8
template <bool FAST, bool ZERO_EMPTY>
__device__ __forceinline__ float
kd_decode_merge_elem(const float *row, int64_t parts, int dim, int d) {
  const volatile float *p = row;
  const int64_t step = dim + 2;
  float big_m = -INFINITY, l = 0.0f, a = 0.0f;
  for (int64_t s0 = 0; s0 < parts; s0 += KD_DECODE_MERGE_BATCH) {
    float pm[KD_DECODE_MERGE_BATCH], pl[KD_DECODE_MERGE_BATCH],
        pa[KD_DECODE_MERGE_BATCH];
    KD_UNROLL
    for (int j = 0; j < KD_DECODE_MERGE_BATCH; j++) {
      const bool in = s0 + j < parts;
      const volatile float *q = p + (in ? (s0 + j) * step : 0);
      pm[j] = in ? q[0] : -INFINITY;
      pl[j] = in ? q[1] : 0.0f;
      pa[j] = in ? q[2 + d] : 0.0f;
    }
    float bm = big_m;
    KD_UNROLL
    for (int j = 0; j < KD_DECODE_MERGE_BATCH; j++) bm = fmaxf(bm, pm[j]);
    const float w0 = kd_decode_weight<FAST>(big_m, bm);
    l *= w0;
    a *= w0;
    KD_UNROLL
    for (int j = 0; j < KD_DECODE_MERGE_BATCH; j++) {
      if (s0 + j >= parts) break;
      const float w = kd_decode_weight<FAST>(pm[j], bm);
      l = fmaf(w, pl[j], l);
      a = fmaf(w, pa[j], a);
    }
    big_m = bm;
  }
  return kd_decode_out<ZERO_EMPTY>(a, l);
}

/* A float another block of this launch wrote, read after the fence that
 * follows the done counter: from L2 (no stale L1 line) on NVIDIA, through
 * a volatile load elsewhere. */
__device__ __forceinline__ float kd_decode_ld_shared_row(const float *p) {
#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__)
  return __ldcg(p);
#else
  return *(const volatile float *)p;
#endif
}

/* Most partials per row that the last block merges through shared memory
 * (kd_decode_merge_block: maxima and sums of RT rows, 2 RT parts floats, in
 * the merge area's 2048 RT). */
#define KD_DECODE_MERGE_BLOCK_MAX 1024
/* Partials per batch of kd_decode_merge_block's loads (two elements each). */
#define KD_DECODE_MERGE_BLOCK_BATCH 16

/* Where a split block's partial rows go: output row `id` (the caller's row
 * numbering) and range `split` at ws[(id * cap + split) * (dim + 2)].
 * counter (may be NULL: a second kernel merges) counts the block's key
 * ranges that are done. */
struct kd_decode_partials {
  float *ws;
  int64_t cap;
  unsigned *counter;
  unsigned *grab; /* the dynamic scan's step counter, or NULL */
};

/* The last block's merge of `parts` (<= KD_DECODE_MERGE_BLOCK_MAX) partial
 * rows per output row, on the critical path of the launch: the whole block
 * reads every partial's maximum and sum at once into shared memory, one
 * warp per row turns them into weights (kd_decode_weight) and the row's sum,
 * then each thread sums its elements over the partials with the loads of
 * KD_DECODE_MERGE_BLOCK_BATCH partials of two elements in flight together.
 * About three round trips to L2 for 33 partials, against ten for
 * kd_decode_merge_elem's per-element batches. */
template <int L, int RT, bool FAST, bool ZERO_EMPTY, class Rows>
__device__ __forceinline__ void
kd_decode_merge_block(kd_decode_smem<L, RT> &sm, const Rows &rows, int dim,
                      int parts, const kd_decode_partials &pt) {
  constexpr int B = KD_DECODE_MERGE_BLOCK_BATCH;
  const int tid = threadIdx.x;
  const int64_t stride = dim + 2;
  float *pm = sm.acc;              /* [RT][parts]: maxima, then weights */
  float *pl = sm.acc + RT * parts; /* [RT][parts]: sums */
  for (int x = tid; x < RT * parts; x += KD_DECODE_THREADS) {
    const int r = x / parts, p = x - r * parts;
    const int64_t id = rows.id(r);
    const float *row = pt.ws + (id < 0 ? 0 : (id * pt.cap + p) * stride);
    pm[x] = id < 0 ? -INFINITY : kd_decode_ld_shared_row(row);
    pl[x] = id < 0 ? 0.0f : kd_decode_ld_shared_row(row + 1);
  }
  __syncthreads();
  const int lane = tid % warpSize, warp = tid / warpSize;
  if (warp < RT) {
    float big_m = -INFINITY;
    for (int p = lane; p < parts; p += warpSize)
      big_m = fmaxf(big_m, pm[warp * parts + p]);
    big_m = kd_warp_reduce(big_m, kd_max_op());
    float l = 0.0f;
    for (int p = lane; p < parts; p += warpSize) {
      const float w = kd_decode_weight<FAST>(pm[warp * parts + p], big_m);
      l = fmaf(w, pl[warp * parts + p], l);
      pm[warp * parts + p] = w;
    }
    l = kd_warp_reduce(l, kd_sum_op());
    if (lane == 0) sm.l[warp] = l;
  }
  __syncthreads();
  const int n = RT * dim;
  for (int x0 = tid; x0 < n; x0 += 2 * KD_DECODE_THREADS) {
    int rr[2], dd[2];
    const float *base[2];
    bool in[2];
    KD_UNROLL
    for (int e = 0; e < 2; e++) {
      const int x = x0 + e * KD_DECODE_THREADS;
      rr[e] = x < n ? x / dim : 0;
      dd[e] = x < n ? x - rr[e] * dim : 0;
      const int64_t id = rows.id(rr[e]);
      in[e] = x < n && id >= 0;
      base[e] = pt.ws + (in[e] ? id * pt.cap * stride : 0) + 2 + dd[e];
    }
    float a[2] = {0.0f, 0.0f};
    for (int p0 = 0; p0 < parts; p0 += B) {
      float v[2][B];
      KD_UNROLL
      for (int e = 0; e < 2; e++)
        KD_UNROLL
        for (int j = 0; j < B; j++)
          v[e][j] = in[e] && p0 + j < parts
                        ? kd_decode_ld_shared_row(base[e] + (p0 + j) * stride)
                        : 0.0f;
      KD_UNROLL
      for (int e = 0; e < 2; e++)
        KD_UNROLL
        for (int j = 0; j < B; j++)
          if (p0 + j < parts)
            a[e] = fmaf(pm[rr[e] * parts + p0 + j], v[e][j], a[e]);
    }
    KD_UNROLL
    for (int e = 0; e < 2; e++)
      if (in[e])
        rows.store(rr[e], dd[e], kd_decode_out<ZERO_EMPTY>(a[e], sm.l[rr[e]]));
  }
}

/* After kd_decode_block_merge: writes the block's rows through rows.store(r,
 * d, value) when parts == 1; otherwise leaves the partial rows, and the
 * block that completes the counter merges them all. rows.id(r) is row r's
 * number, or -1 for a row past the end. */
template <int L, int RT, bool FAST, bool ZERO_EMPTY, class Rows>
__device__ __forceinline__ void
kd_decode_finish(const kd_decode_state<RT> &st, kd_decode_smem<L, RT> &sm,
                 const Rows &rows, int dim, int64_t split, int64_t parts,
                 const kd_decode_partials &pt) {
  const int tid = threadIdx.x;
  const int n = RT * dim;
  if (parts == 1) {
    for (int x = tid; x < n; x += KD_DECODE_THREADS) {
      const int r = x / dim, d = x - r * dim;
      if (rows.id(r) < 0) continue;
      rows.store(r, d,
                 kd_decode_out<ZERO_EMPTY>(kd_decode_block_acc(sm, r, d),
                                           kd_decode_block_sum(sm, r)));
    }
    return;
  }
  for (int x = tid; x < n; x += KD_DECODE_THREADS) {
    const int r = x / dim, d = x - r * dim;
    const int64_t id = rows.id(r);
    if (id < 0) continue;
    float *row = pt.ws + (id * pt.cap + split) * (dim + 2);
    row[2 + d] = kd_decode_block_acc(sm, r, d);
    if (d == 0) {
      KD_UNROLL
      for (int rr = 0; rr < RT; rr++)
        if (rr == r) row[0] = st.m[rr];
      row[1] = kd_decode_block_sum(sm, r);
    }
  }
  if (!pt.counter) return;
  __threadfence();
  __syncthreads();
  if (tid == 0) sm.last = atomicAdd(pt.counter, 1u) == (unsigned)(parts - 1);
  __syncthreads();
  if (!sm.last) return;
  __threadfence();
  if (parts <= KD_DECODE_MERGE_BLOCK_MAX) {
    kd_decode_merge_block<L, RT, FAST, ZERO_EMPTY>(sm, rows, dim, (int)parts,
                                                   pt);
  } else {
    for (int x = tid; x < n; x += KD_DECODE_THREADS) {
      const int r = x / dim, d = x - r * dim;
      const int64_t id = rows.id(r);
      if (id < 0) continue;
      rows.store(r, d,
                 kd_decode_merge_elem<FAST, ZERO_EMPTY>(
                     pt.ws + id * pt.cap * (dim + 2), parts, dim, d));
    }
  }
  if (tid == 0) {
    atomicExch(pt.counter, 0u);
    if (pt.grab) atomicExch(pt.grab, 0u);
  }
}

#endif
