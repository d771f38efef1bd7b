/* Dense decode attention: ke_attention for a few query rows per KV head
 * (decode, speculative decode) over a long KV cache, split over the keys
 * across blocks ("flash-decoding") so that a batch of 1 still fills the GPU.
 *
 * Algorithm (tile/decode.h has the core). A query row is a (query head of a
 * KV head's group, query) pair, so one KV head's Hq / Hkv * Sq rows share
 * every K and V read; RT of them (1, 2 or 4) form a block's row tile, more
 * rows take more tiles (which read the same keys, adjacent in launch order
 * so that the second read comes from L2). Each (batch, KV head, row tile)
 * has its visible keys [0, kv_end) cut into `splits` ranges of at least
 * min_chunk keys (chosen by engine/src/attention_decode.c from the
 * multiprocessor count); one block per range streams it with 16-byte loads
 * (lanes of a group split D in chunks of 8), merges its lane groups, and
 * either writes the rows (one range) or leaves partial rows (max, sum,
 * accumulator) in the engine's scratch; the block that finishes last merges
 * them (a counter per row tile, set back to 0 by that block). Causal rows
 * see keys j <= offset + i; a block loads keys up to its rows' largest
 * limit and folds a key into a row only when the row sees it.
 *
 * Limits and values: D 1..256 (any value; L = 4, 8, 16, 32 lanes per key
 * for D up to 32, 64, 128, 256), any B/H/S strides with D contiguous
 * (16-byte copies when D and every K/V stride are multiples of 8 and the
 * bases are 16-byte aligned; element loads and tiles of one row otherwise),
 * f32/f16/bf16 with f32 arithmetic (16-bit outputs use the approximate
 * exp). Rows with no visible key, or only -inf scores, give zeros; NaN/+inf
 * scores make the row NaN; a NaN in V at a visible key makes that element
 * NaN. Grid (tiles * splits, Hkv, B): B and Hkv are at most 65535 (checked
 * by ke_attention), splits at most 2^20.
 */
#include "tile/decode.h"
#include "tile/decode_dyn.h"
#include "tile/decode_mma.h"

/* Two blocks per multiprocessor: 128 registers per thread, which hold a
 * row tile of 4 (query and accumulator: 64 registers) with 2 keys of K and
 * V loads in flight per lane. */
#define KE_DEC_MIN_BLOCKS 2
/* Keys of one (batch, KV head) of K and V. */
template <typename T> struct ke_attention_decode_dense_src {
  const T *k, *v;
  int64_t ks, vs; /* key strides */
  __device__ __forceinline__ int64_t locate(int64_t key) const { return key; }
  __device__ __forceinline__ const T *krow(int64_t key) const {
    return k + key * ks;
  }
  __device__ __forceinline__ const T *vrow(int64_t key) const {
    return v + key * vs;
  }
};

/* The block's rows: row r of tile rt is the kv head's row rt * RT + r,
 * query head hk * ratio + row / Sq, query row % Sq. */
template <typename T, int RT> struct ke_attention_decode_dense_rows {
  T *o;
  const ke__attention_desc *a;
  int64_t b, hk, row0;
  __device__ __forceinline__ bool head_query(int r, int64_t &h,
                                             int64_t &i) const {
    const int64_t ratio = a->hq / a->hkv, row = row0 + r;
    if (row >= ratio * a->sq) return false;
    h = hk * ratio + row / a->sq;
    i = row % a->sq;
    return true;
  }
  __device__ __forceinline__ int64_t id(int r) const {
    int64_t h = 0, i = 0;
    if (!head_query(r, h, i)) return -1;
    return (b * a->hq + h) * a->sq + i;
  }
  __device__ __forceinline__ void store(int r, int d, float x) const {
    int64_t h = 0, i = 0;
    head_query(r, h, i);
    o[b * a->o_stride[0] + h * a->o_stride[1] + i * a->o_stride[2] + d] =
        kd_from_float<T>(x);
  }
};

/* Shared memory: the copy pipeline while streaming, then the merge. */
template <typename T, int L, int RT, int U, int S>
union ke_attention_decode_shared {
  kd_decode_stage<T, U, S> stage;
  kd_decode_smem<L, RT> merge;
};

/* Grid: x = row tile + tiles * range, y = KV head, z = batch. */
template <typename T, int L, int RT, int U, int S, bool VEC>
__global__ void __launch_bounds__(KD_DECODE_THREADS, KE_DEC_MIN_BLOCKS)
    ke_attention_decode_kernel(const T *__restrict__ q, const T *__restrict__ k,
                               const T *__restrict__ v, T *__restrict__ o,
                               ke__attention_desc a, ke__decode_split sp,
                               unsigned *grabs) {
  constexpr bool FAST = kd_is16<T>::v;
  /* Dynamic shared memory: the pipeline of 4 stages is past the 48 KB a
   * static array may take. */
  HIP_DYNAMIC_SHARED(uint4, kd_decode_smem_raw);
  ke_attention_decode_shared<T, L, RT, U, S> &sm =
      *reinterpret_cast<ke_attention_decode_shared<T, L, RT, U, S> *>(
          kd_decode_smem_raw);
  kd_decode_ring<S> &ring = *reinterpret_cast<kd_decode_ring<S> *>(
      reinterpret_cast<char *>(kd_decode_smem_raw) +
      sizeof(ke_attention_decode_shared<T, L, RT, U, S>));
  const int li = threadIdx.x % L;
  const int d0 = li * KD_DECODE_VEC;
  const int nd = a.d - d0 < 0 ? 0 : (a.d - d0 > 8 ? 8 : (int)(a.d - d0));
  const int64_t tiles = (a.hq / a.hkv * a.sq + RT - 1) / RT;
  const int64_t rt = blockIdx.x % tiles, split = blockIdx.x / tiles;
  const int64_t hk = blockIdx.y, b = blockIdx.z;
  const ke_attention_decode_dense_rows<T, RT> rows = {o, &a, b, hk, rt * RT};

  /* Keys j < lim[r] are visible to row r; the tile's keys end at the
   * largest limit, kv_end. */
  kd_decode_state<RT> st;
  st.clear();
  int64_t lim[RT], kv_end = 0, lim_min = a.sk;
  KD_UNROLL
  for (int r = 0; r < RT; r++) {
    int64_t h = 0, i = 0;
    const bool active = rows.head_query(r, h, i);
    lim[r] = a.sk;
    if (a.causal) {
      lim[r] = a.offset + i + 1;
      lim[r] = lim[r] < 0 ? 0 : (lim[r] > a.sk ? a.sk : lim[r]);
    }
    if (!active) lim[r] = 0;
    else lim_min = lim[r] < lim_min ? lim[r] : lim_min;
    kv_end = lim[r] > kv_end ? lim[r] : kv_end;
    const T *qrow = q + b * a.q_stride[0] + h * a.q_stride[1] +
                    i * a.q_stride[2];
    KD_UNROLL
    for (int e = 0; e < KD_DECODE_VEC; e++)
      st.q[r][e] =
          active && e < nd ? a.scale * kd_to_float(qrow[d0 + e]) : 0.0f;
  }

  /* This block's range of the tile's [0, kv_end): ranges of
   * max(ceil(kv_end / splits), min_chunk) keys; the ones past kv_end do not
   * exist (and are not counted), and a tile with no visible key has one
   * empty range, which writes zeros. */
  int64_t chunk = (kv_end + sp.splits - 1) / sp.splits;
  if (chunk < sp.min_chunk) chunk = sp.min_chunk;
  const int64_t parts = kv_end == 0 ? 1 : (kv_end + chunk - 1) / chunk;
  if (split >= parts) return;
  const int64_t kb = split * chunk;
  const int n = (int)(kb + chunk < kv_end ? chunk : kv_end - kb);
  /* Limits relative to the range; a row past the end may fold every key
   * (it is never written), which keeps the common case check-free. */
  int rlim[RT];
  KD_UNROLL
  for (int r = 0; r < RT; r++)
    rlim[r] = rows.id(r) < 0 ? n
              : (int)(lim[r] - kb < 0 ? 0
                      : (lim[r] - kb > n ? n : lim[r] - kb));
  const int rlim_min =
      (int)(lim_min - kb < 0 ? 0 : (lim_min - kb > n ? n : lim_min - kb));

  const ke_attention_decode_dense_src<T> src = {
      k + b * a.k_stride[0] + hk * a.k_stride[1],
      v + b * a.v_stride[0] + hk * a.v_stride[1], a.k_stride[2], a.v_stride[2]};
  const int64_t pair = (hk + a.hkv * b) * tiles + rt;
  unsigned *grab = parts > 1 && grabs && kv_end <= KD_DECODE_DYN_MAX_KEYS
                       ? grabs + pair
                       : nullptr;
  if (grab) {
    /* The tile's blocks take steps of all of [0, kv_end) in turn. */
    int dlim[RT];
    KD_UNROLL
    for (int r = 0; r < RT; r++)
      dlim[r] = rows.id(r) < 0 ? (int)kv_end : (int)lim[r];
    kd_decode_scan_dyn<T, L, RT, U, S, FAST, VEC>(src, st, sm.stage, ring, grab,
                                                  parts, 0, (int)kv_end, dlim,
                                                  (int)lim_min, d0, nd);
  } else {
    kd_decode_scan<T, L, RT, U, S, FAST, VEC>(src, st, sm.stage, kb, n, rlim,
                                              rlim_min, d0, nd);
  }
  kd_decode_block_merge<L, RT, FAST>(st, sm.merge);
  const kd_decode_partials pt = {
      sp.partials, sp.splits, sp.counters ? sp.counters + pair : nullptr, grab};
  kd_decode_finish<L, RT, FAST, true>(st, sm.merge, rows, (int)a.d, split,
                                      parts, pt);
}

/* The matrix-unit path (tile/decode_mma.h): 16-bit K/V with 16-byte rows,
 * D a multiple of 8 up to DP, every row of the tile seeing the same keys
 * (no causal limit, or one query per head). Same grid, split and partials
 * as the SIMT kernel; fixed ranges only. */
template <class Arch, typename T, int RT, int DP, int S>
__global__ void __launch_bounds__(KD_DECODE_THREADS, 1)
    ke_attention_decode_mma_kernel(const T *__restrict__ q,
                                   const T *__restrict__ k,
                                   const T *__restrict__ v, T *__restrict__ o,
                                   ke__attention_desc a, ke__decode_split sp) {
  HIP_DYNAMIC_SHARED(uint4, kd_decode_smem_raw);
  const int64_t tiles = (a.hq / a.hkv * a.sq + RT - 1) / RT;
  const int64_t rt = blockIdx.x % tiles, split = blockIdx.x / tiles;
  const int64_t hk = blockIdx.y, b = blockIdx.z;
  const ke_attention_decode_dense_rows<T, RT> rows = {o, &a, b, hk, rt * RT};
  /* Every row has the same limit (the launcher's condition). */
  int64_t kv_end = a.sk;
  if (a.causal) {
    kv_end = a.offset + 1;
    kv_end = kv_end < 0 ? 0 : (kv_end > a.sk ? a.sk : kv_end);
  }
  int64_t chunk = (kv_end + sp.splits - 1) / sp.splits;
  if (chunk < sp.min_chunk) chunk = sp.min_chunk;
  const int64_t parts = kv_end == 0 ? 1 : (kv_end + chunk - 1) / chunk;
  if (split >= parts) return;
  const int64_t kb = split * chunk;
  const int n = (int)(kb + chunk < kv_end ? chunk : kv_end - kb);
  const ke_attention_decode_dense_src<T> src = {
      k + b * a.k_stride[0] + hk * a.k_stride[1],
      v + b * a.v_stride[0] + hk * a.v_stride[1], a.k_stride[2], a.v_stride[2]};
  auto qbits = [&](int r, int e) -> uint16_t {
    int64_t h = 0, i = 0;
    if (!rows.head_query(r, h, i)) return 0;
    return q[b * a.q_stride[0] + h * a.q_stride[1] + i * a.q_stride[2] + e]
        .bits;
  };
  kd_decode_mma_state<Arch, DP / 16> ws;
  kd_decode_mma_scan<Arch, T, DP, S, RT>(
      src, qbits, reinterpret_cast<uint16_t *>(kd_decode_smem_raw), kb, n,
      (int)a.d, a.scale, ws);
  kd_decode_smem<Arch::WARP, RT> &mg =
      *reinterpret_cast<kd_decode_smem<Arch::WARP, RT> *>(kd_decode_smem_raw);
  kd_decode_state<RT> st;
  kd_decode_mma_block_merge<Arch, DP, RT>(ws, st, mg);
  const int64_t pair = (hk + a.hkv * b) * tiles + rt;
  const kd_decode_partials pt = {sp.partials, sp.splits,
                                 sp.counters ? sp.counters + pair : nullptr,
                                 nullptr};
  kd_decode_finish<Arch::WARP, RT, true, true>(st, mg, rows, (int)a.d, split,
                                               parts, pt);
}

template <typename T, int RT, int DP, int S>
static int ke_attention_decode_launch_mma(hipStream_t s, const void *q,
                                          const void *k, const void *v, void *o,
                                          const ke__attention_desc *a,
                                          const ke__decode_split *sp) {
  typedef kd_decode_mma<kd_mma_nv, T, DP, S> K;
  const int64_t tiles = (a->hq / a->hkv * a->sq + RT - 1) / RT;
  const dim3 grid((unsigned)(tiles * sp->splits), (unsigned)a->hkv,
                  (unsigned)a->b);
  constexpr size_t mg = sizeof(kd_decode_smem<kd_mma_nv::WARP, RT>);
  constexpr size_t smem = K::BYTES > mg ? K::BYTES : mg;
  const void *fn =
      (const void *)ke_attention_decode_mma_kernel<kd_mma_nv, T, RT, DP, S>;
  static int raised[KD_DECODE_DEVICES];
  const int err = kd_decode_raise_smem(raised, fn, smem);
  if (err != 0) return err;
  hipLaunchKernelGGL((ke_attention_decode_mma_kernel<kd_mma_nv, T, RT, DP, S>),
                     grid, dim3(KD_DECODE_THREADS), smem, s, (const T *)q,
                     (const T *)k, (const T *)v, (T *)o, *a, *sp);
  return (int)hipGetLastError();
}

template <typename T, int RT, int S>
static int ke_attention_decode_launch_mma_dp(hipStream_t s, const void *q,
                                             const void *k, const void *v,
                                             void *o,
                                             const ke__attention_desc *a,
                                             const ke__decode_split *sp) {
  if (a->d <= 64)
    return ke_attention_decode_launch_mma<T, RT, 64, S>(s, q, k, v, o, a, sp);
  return ke_attention_decode_launch_mma<T, RT, 128, S>(s, q, k, v, o, a, sp);
}

/* Whether the matrix-unit kernel takes this call (its conditions above;
 * matrix is the knob: 2 or 3 stages, 0 never). */
static bool ke_attention_decode_vec_ok(const void *k, const void *v,
                                       const ke__attention_desc *a);
static bool ke_attention_decode_mma_ok(ke_dtype dtype, const void *k,
                                       const void *v,
                                       const ke__attention_desc *a,
                                       int matrix) {
#if KD_MMA_HAS_NV
  return (dtype == KE_F16 || dtype == KE_BF16) &&
         (matrix == 2 || matrix == 3) && a->d <= 128 &&
         (!a->causal || a->sq == 1) && ke_attention_decode_vec_ok(k, v, a) &&
         kd_mma_device_kind() == KD_MMA_NV;
#else
  (void)dtype, (void)k, (void)v, (void)a, (void)matrix;
  return false;
#endif
}

extern "C" int ke__attention_decode_takes_mma(ke_dtype dtype, const void *k,
                                              const void *v,
                                              const ke__attention_desc *a,
                                              int matrix) {
  return ke_attention_decode_mma_ok(dtype, k, v, a, matrix);
}

/* Launches the matrix-unit kernel when it takes the call. */
template <typename T>
static bool ke_attention_decode_try_mma(hipStream_t s, const void *q,
                                        const void *k, const void *v, void *o,
                                        const ke__attention_desc *a,
                                        const ke__decode_split *sp,
                                        const ke__decode_ext *x, int *ret) {
  if constexpr (sizeof(T) == 2) {
    if (!ke_attention_decode_mma_ok(std::is_same<T, kd_half>::value ? KE_F16
                                                                    : KE_BF16,
                                    k, v, a, x->mma))
      return false;
    const int tr = (int)ke__decode_tile_rows(a->hq / a->hkv * a->sq);
    const bool s3 = x->mma == 3;
    if (tr == 1)
      *ret =
          s3 ? ke_attention_decode_launch_mma_dp<T, 1, 3>(s, q, k, v, o, a, sp)
             : ke_attention_decode_launch_mma_dp<T, 1, 2>(s, q, k, v, o, a, sp);
    else if (tr == 2)
      *ret =
          s3 ? ke_attention_decode_launch_mma_dp<T, 2, 3>(s, q, k, v, o, a, sp)
             : ke_attention_decode_launch_mma_dp<T, 2, 2>(s, q, k, v, o, a, sp);
    else
      *ret =
          s3 ? ke_attention_decode_launch_mma_dp<T, 4, 3>(s, q, k, v, o, a, sp)
             : ke_attention_decode_launch_mma_dp<T, 4, 2>(s, q, k, v, o, a, sp);
    return true;
  } else {
    (void)s, (void)q, (void)k, (void)v, (void)o, (void)a, (void)sp, (void)x,
        (void)ret;
    return false;
  }
}

/* 16-byte copies need D and every K/V stride to be multiples of 8
 * elements and both bases 16-byte aligned. */
static bool ke_attention_decode_vec_ok(const void *k, const void *v,
                                       const ke__attention_desc *a) {
  bool vec = a->d % KD_DECODE_VEC == 0 && (uintptr_t)k % 16 == 0 &&
             (uintptr_t)v % 16 == 0;
  for (int d = 0; d < 3; d++)
    vec = vec && a->k_stride[d] % KD_DECODE_VEC == 0 &&
          a->v_stride[d] % KD_DECODE_VEC == 0;
  return vec;
}

template <typename T, int L, int RT, int S, bool VEC>
static int ke_attention_decode_launch_stages(hipStream_t s, const void *q,
                                             const void *k, const void *v,
                                             void *o,
                                             const ke__attention_desc *a,
                                             const ke__decode_split *sp,
                                             const ke__decode_ext *x) {
  /* Keys per group per step: 2 (16-bit) or 1 (f32), 16 or 32 bytes of K
   * and of V per lane; S stages: S - 1 steps in flight while one is
   * folded. */
  constexpr int U = sizeof(T) == 2 ? 2 : 1;
  const int64_t tiles = (a->hq / a->hkv * a->sq + RT - 1) / RT;
  const dim3 grid((unsigned)(tiles * sp->splits), (unsigned)a->hkv,
                  (unsigned)a->b);
  const size_t smem = sizeof(ke_attention_decode_shared<T, L, RT, U, S>) +
                      sizeof(kd_decode_ring<S>);
  const void *fn = (const void *)ke_attention_decode_kernel<T, L, RT, U, S, VEC>;
  static int raised[KD_DECODE_DEVICES];
  const int err = kd_decode_raise_smem(raised, fn, smem);
  if (err != 0) return err;
  hipLaunchKernelGGL((ke_attention_decode_kernel<T, L, RT, U, S, VEC>), grid,
                     dim3(KD_DECODE_THREADS), smem, s, (const T *)q,
                     (const T *)k, (const T *)v, (T *)o, *a, *sp, x->grabs);
  return (int)hipGetLastError();
}

/* 3 stages, or 4 (more bytes in flight) for 16-bit 16-byte copies when the
 * split asks for them and the block may take their 64 KB of shared memory
 * (not on 64 KB parts: then 3). */
template <typename T, int L, int RT, bool VEC>
static int ke_attention_decode_launch_geom(hipStream_t s, const void *q,
                                           const void *k, const void *v,
                                           void *o, const ke__attention_desc *a,
                                           const ke__decode_split *sp,
                                           const ke__decode_ext *x) {
  if constexpr (sizeof(T) == 2 && VEC)
    if (x->stages == 4) {
      const int err = ke_attention_decode_launch_stages<T, L, RT, 4, VEC>(
          s, q, k, v, o, a, sp, x);
      if (err != (int)hipErrorInvalidValue) return err;
      (void)hipGetLastError(); /* the refused shared memory size */
    }
  return ke_attention_decode_launch_stages<T, L, RT, 3, VEC>(s, q, k, v, o, a,
                                                             sp, x);
}

template <typename T, int RT, bool VEC>
static int ke_attention_decode_launch_rows(hipStream_t s, const void *q,
                                           const void *k, const void *v,
                                           void *o, const ke__attention_desc *a,
                                           const ke__decode_split *sp,
                                           const ke__decode_ext *x) {
  if (a->d <= 32)
    return ke_attention_decode_launch_geom<T, 4, RT, VEC>(s, q, k, v, o, a, sp,
                                                          x);
  if (a->d <= 64)
    return ke_attention_decode_launch_geom<T, 8, RT, VEC>(s, q, k, v, o, a, sp,
                                                          x);
  if (a->d <= 128)
    return ke_attention_decode_launch_geom<T, 16, RT, VEC>(s, q, k, v, o, a, sp,
                                                           x);
  return ke_attention_decode_launch_geom<T, 32, RT, VEC>(s, q, k, v, o, a, sp,
                                                         x);
}

/* Element loads (unaligned views, D not a multiple of 8) take tiles of one
 * row: the slow path stays small. */
template <typename T>
static int ke_attention_decode_launch_typed(hipStream_t s, const void *q,
                                            const void *k, const void *v,
                                            void *o,
                                            const ke__attention_desc *a,
                                            const ke__decode_split *sp,
                                            const ke__decode_ext *x) {
  if (!ke_attention_decode_vec_ok(k, v, a))
    return ke_attention_decode_launch_rows<T, 1, false>(s, q, k, v, o, a, sp,
                                                        x);
  int ret = 0;
  if (ke_attention_decode_try_mma<T>(s, q, k, v, o, a, sp, x, &ret)) return ret;
  switch (ke__decode_tile_rows(a->hq / a->hkv * a->sq)) {
  case 1:
    return ke_attention_decode_launch_rows<T, 1, true>(s, q, k, v, o, a, sp, x);
  case 2:
    return ke_attention_decode_launch_rows<T, 2, true>(s, q, k, v, o, a, sp, x);
  default:
    return ke_attention_decode_launch_rows<T, 4, true>(s, q, k, v, o, a, sp, x);
  }
}

extern "C" int ke__attention_decode_launch_ext(
    void *stream, ke_dtype dtype, const void *q, const void *k, const void *v,
    void *o, const ke__attention_desc *desc, const ke__decode_split *sp,
    const ke__decode_ext *ext) {
  const ke__decode_ext plain = {nullptr, 3, 0};
  const ke__decode_ext *x = ext ? ext : &plain;
  if (desc->d < 1 || desc->d > 256 || sp->splits < 1 ||
      (sp->splits > 1 && (!sp->partials || !sp->counters)))
    return (int)hipErrorInvalidValue;
  hipStream_t s = (hipStream_t)stream;
  KD_DISPATCH_IN(
      dtype, T,
      return ke_attention_decode_launch_typed<T>(s, q, k, v, o, desc, sp, x))
  return (int)hipErrorInvalidValue;
}

extern "C" int ke__attention_decode_launch(void *stream, ke_dtype dtype,
                                           const void *q, const void *k,
                                           const void *v, void *o,
                                           const ke__attention_desc *desc,
                                           const ke__decode_split *sp) {
  return ke__attention_decode_launch_ext(stream, dtype, q, k, v, o, desc, sp,
                                         nullptr);
}
