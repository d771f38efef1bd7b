/* Paged attention for decode: one query token per sequence attends to that
 * sequence's keys and values, which live in fixed-size blocks of a shared
 * cache reached through the sequence's block table.
 *
 * Algorithm: the split-key decode core of tile/decode.h, with keys located
 * through the block table. One block of 256 threads per (sequence, KV
 * head, row tile of up to 4 of the query heads that share it, token range):
 * lanes of a group hold 8 dimensions of a key's K and V rows (16-byte
 * copies from the [num_blocks, num_kv_heads, block_size, head_dim] cache,
 * where each (block, KV head) is one contiguous run), a tile's query heads
 * share every read, and the next step's table entries are read before this
 * step's math. Sequences longer than a range are cut into ranges of
 * `chunk` tokens (planned by engine/src/paged_attention.c from the
 * multiprocessor count): each range leaves (max, sum, unnormalised p*V)
 * per query head, merged either by the block that finishes the sequence's
 * last range (partials in the engine's scratch, counters there) or by a
 * second kernel, one block per (sequence, query head) (partials in the
 * caller's workspace, which then needs no initialisation and the call
 * allocates nothing). A sequence that fits one range is written directly.
 *
 * Only the sequence's own tokens are read: a range ends at the sequence
 * length, and physical blocks come from the table entries the length needs,
 * so cache slots past the length and blocks outside the table are never
 * touched (they may hold NaN, or garbage). All arithmetic is f32; 16-bit
 * outputs use the approximate exp. Special values follow the formula
 * (kiln/paged_attention.h): an empty sum (every score -inf) is 0/0 = NaN.
 */
#include "tile/decode.h"
#include "tile/decode_dyn.h"
#include "tile/decode_mma.h"

/* Two blocks per multiprocessor, as dense decode. */
#define KE_PA_MIN_BLOCKS 2
#define KE_PA_COMBINE_THREADS 128
/* Most blocks along x in one launch; more are looped over. */
#define KE_PA_MAX_GRID_X 1048576

/* q and out are touched once per element, so their dtypes are switched at
 * run time rather than multiplying the kernel's instantiations. */
__device__ __forceinline__ float
ke_paged_attention_load(ke_dtype dt, const void *p, int64_t i) {
  switch (dt) {
  case KE_F16: return kd_to_float(static_cast<const kd_half *>(p)[i]);
  case KE_BF16: return kd_to_float(static_cast<const kd_bf16 *>(p)[i]);
  default: return static_cast<const float *>(p)[i];
  }
}

__device__ __forceinline__ void ke_paged_attention_store(ke_dtype dt, void *p,
                                                         int64_t i, float v) {
  switch (dt) {
  case KE_F16: static_cast<kd_half *>(p)[i] = kd_from_float<kd_half>(v); break;
  case KE_BF16: static_cast<kd_bf16 *>(p)[i] = kd_from_float<kd_bf16>(v); break;
  default: static_cast<float *>(p)[i] = v; break;
  }
}

/* Keys of one sequence and KV head: token t is slot t % block_size of
 * physical block table[t / block_size]. locate reads the table. */
template <typename Tkv> struct ke_paged_attention_src {
  const Tkv *k, *v;
  const int32_t *table;
  int64_t num_kv_heads, kv_head;
  int block_size, shift, dim;
  __device__ __forceinline__ int64_t locate(int64_t t) const {
    const int64_t blk = table[t >> shift];
    return ((blk * num_kv_heads + kv_head) * block_size +
            (t & (block_size - 1))) * dim;
  }
  __device__ __forceinline__ const Tkv *krow(int64_t loc) const {
    return k + loc;
  }
  __device__ __forceinline__ const Tkv *vrow(int64_t loc) const {
    return v + loc;
  }
};

/* Row r of a block is query head h0 + r of sequence seq (gc real rows). */
struct ke_paged_attention_rows {
  const ke__paged_attention_args *a;
  int64_t seq;
  int h0, gc;
  __device__ __forceinline__ int64_t id(int r) const {
    return r < gc ? seq * a->num_heads + h0 + r : -1;
  }
  __device__ __forceinline__ void store(int r, int d, float x) const {
    ke_paged_attention_store(a->out_dtype, a->out,
                             seq * a->out_seq_stride +
                                 (int64_t)(h0 + r) * a->out_head_stride + d,
                             x);
  }
};

template <typename Tkv, int L, int RT, int U, int S>
union ke_paged_attention_shared {
  kd_decode_stage<Tkv, U, S> stage;
  kd_decode_smem<L, RT> merge;
};

/* Grid: x = row tile + tiles * sequence (looped past the launch's x), y =
 * KV head, z = token range. */
template <typename Tkv, int L, int RT, int U, int S, bool FAST>
__global__ void __launch_bounds__(KD_DECODE_THREADS, KE_PA_MIN_BLOCKS)
    ke_paged_attention_kernel(ke__paged_attention_args a, unsigned *grabs) {
  /* Dynamic shared memory, as dense decode's. */
  HIP_DYNAMIC_SHARED(uint4, kd_decode_smem_raw);
  ke_paged_attention_shared<Tkv, L, RT, U, S> &sm =
      *reinterpret_cast<ke_paged_attention_shared<Tkv, L, RT, U, S> *>(
          kd_decode_smem_raw);
  kd_decode_ring<S> &ring = *reinterpret_cast<kd_decode_ring<S> *>(
      reinterpret_cast<char *>(kd_decode_smem_raw) +
      sizeof(ke_paged_attention_shared<Tkv, L, RT, U, S>));
  const int li = threadIdx.x % L;
  const int d0 = li * KD_DECODE_VEC;
  const int nd = a.head_dim - d0 < 0 ? 0
                 : (a.head_dim - d0 > 8 ? 8 : a.head_dim - d0);
  const int group = a.num_heads / a.num_kv_heads;
  const int tiles = (group + RT - 1) / RT;
  const int kv_head = blockIdx.y;
  const int64_t split = blockIdx.z;
  const int64_t nx = (int64_t)tiles * a.num_seqs;

  for (int64_t x = blockIdx.x; x < nx; x += gridDim.x) {
    const int rt = (int)(x % tiles);
    const int64_t seq = x / tiles;
    const int64_t len = a.seq_lens[seq];
    const int64_t parts = (len + a.chunk - 1) / a.chunk;
    if (split >= parts) continue;
    const int64_t kb = split * a.chunk;
    int64_t ke = kb + a.chunk < len ? kb + a.chunk : len;
    /* Planted bug (arch/kd.h): the last cache block is read whole, past the
     * length. */
    if (KD_PLANTED && ke == len)
      ke = (ke + a.block_size - 1) / a.block_size * a.block_size;
    const int n = (int)(ke - kb);
    const ke_paged_attention_rows rows = {&a, seq, kv_head * group + rt * RT,
                                          group - rt * RT < RT ? group - rt * RT
                                                               : RT};

    kd_decode_state<RT> st;
    st.clear();
    int lim[RT];
    KD_UNROLL
    for (int r = 0; r < RT; r++) {
      const bool active = r < rows.gc;
      lim[r] = active ? n : 0;
      const int64_t base = seq * a.q_seq_stride +
                           (int64_t)(rows.h0 + (active ? r : 0)) *
                               a.q_head_stride + d0;
      KD_UNROLL
      for (int e = 0; e < KD_DECODE_VEC; e++)
        st.q[r][e] =
            active && e < nd
                ? a.scale * ke_paged_attention_load(a.q_dtype, a.q, base + e)
                : 0.0f;
    }
    const ke_paged_attention_src<Tkv> src = {
        static_cast<const Tkv *>(a.k_cache),
        static_cast<const Tkv *>(a.v_cache),
        a.block_tables + seq * a.max_blocks_per_seq,
        a.num_kv_heads,
        kv_head,
        a.block_size,
        (int)__ffs(a.block_size) - 1,
        a.head_dim};
    __syncthreads(); /* the previous sequence's merge is read */
    const int64_t pair = (seq * a.num_kv_heads + kv_head) * tiles + rt;
    unsigned *grab =
        parts > 1 && grabs && a.counters && len <= KD_DECODE_DYN_MAX_KEYS
            ? grabs + pair
            : nullptr;
    if (grab) {
      /* The sequence's blocks take steps of all of [0, len) in turn. */
      int dn = (int)len;
      if (KD_PLANTED) /* the planted bug above */
        dn = (dn + a.block_size - 1) / a.block_size * a.block_size;
      int dlim[RT];
      KD_UNROLL
      for (int r = 0; r < RT; r++) dlim[r] = r < rows.gc ? dn : 0;
      kd_decode_scan_dyn<Tkv, L, RT, U, S, FAST, true>(
          src, st, sm.stage, ring, grab, parts, 0, dn, dlim, dn, d0, nd);
    } else {
      kd_decode_scan<Tkv, L, RT, U, S, FAST, true>(src, st, sm.stage, kb, n,
                                                   lim, n, d0, nd);
    }
    kd_decode_block_merge<L, RT, FAST>(st, sm.merge);
    const kd_decode_partials pt = {
        a.partials, a.cap, a.counters ? a.counters + pair : nullptr, grab};
    kd_decode_finish<L, RT, FAST, false>(st, sm.merge, rows, a.head_dim, split,
                                         parts, pt);
  }
}

/* The matrix-unit path (tile/decode_mma.h): q, caches and out all of one
 * 16-bit dtype, head_dim at most DP. Same grid, ranges and partials as
 * the SIMT kernel; fixed ranges only. */
template <class Arch, typename T, int RT, int DP, int S>
__global__ void __launch_bounds__(KD_DECODE_THREADS, 1)
    ke_paged_attention_mma_kernel(ke__paged_attention_args a) {
  HIP_DYNAMIC_SHARED(uint4, kd_decode_smem_raw);
  uint16_t *smem = reinterpret_cast<uint16_t *>(kd_decode_smem_raw);
  kd_decode_smem<Arch::WARP, RT> &mg =
      *reinterpret_cast<kd_decode_smem<Arch::WARP, RT> *>(kd_decode_smem_raw);
  const int group = a.num_heads / a.num_kv_heads;
  const int tiles = (group + RT - 1) / RT;
  const int kv_head = blockIdx.y;
  const int64_t split = blockIdx.z;
  const int64_t nx = (int64_t)tiles * a.num_seqs;
  const T *qp = static_cast<const T *>(a.q);

  for (int64_t x = blockIdx.x; x < nx; x += gridDim.x) {
    const int rt = (int)(x % tiles);
    const int64_t seq = x / tiles;
    const int64_t len = a.seq_lens[seq];
    const int64_t parts = (len + a.chunk - 1) / a.chunk;
    if (split >= parts) continue;
    const int64_t kb = split * a.chunk;
    int64_t ke = kb + a.chunk < len ? kb + a.chunk : len;
    /* The planted bug of the SIMT kernel above, here too. */
    if (KD_PLANTED && ke == len)
      ke = (ke + a.block_size - 1) / a.block_size * a.block_size;
    const int n = (int)(ke - kb);
    const ke_paged_attention_rows rows = {&a, seq, kv_head * group + rt * RT,
                                          group - rt * RT < RT ? group - rt * RT
                                                               : RT};
    const ke_paged_attention_src<T> src = {static_cast<const T *>(a.k_cache),
                                           static_cast<const T *>(a.v_cache),
                                           a.block_tables +
                                               seq * a.max_blocks_per_seq,
                                           a.num_kv_heads,
                                           kv_head,
                                           a.block_size,
                                           (int)__ffs(a.block_size) - 1,
                                           a.head_dim};
    auto qbits = [&](int r, int e) -> uint16_t {
      return r < rows.gc ? qp[seq * a.q_seq_stride +
                              (int64_t)(rows.h0 + r) * a.q_head_stride + e]
                               .bits
                         : (uint16_t)0;
    };
    __syncthreads(); /* the previous sequence's merge is read */
    kd_decode_mma_state<Arch, DP / 16> ws;
    kd_decode_mma_scan<Arch, T, DP, S, RT>(src, qbits, smem, kb, n, a.head_dim,
                                           a.scale, ws);
    kd_decode_state<RT> st;
    kd_decode_mma_block_merge<Arch, DP, RT>(ws, st, mg);
    const int64_t pair = (seq * a.num_kv_heads + kv_head) * tiles + rt;
    const kd_decode_partials pt = {
        a.partials, a.cap, a.counters ? a.counters + pair : nullptr, nullptr};
    kd_decode_finish<Arch::WARP, RT, true, false>(st, mg, rows, a.head_dim,
                                                  split, parts, pt);
  }
}

template <typename T, int RT, int DP, int S>
static int ke_paged_attention_launch_mma(hipStream_t s,
                                         const ke__paged_attention_args *a) {
  typedef kd_decode_mma<kd_mma_nv, T, DP, S> K;
  const int group = a->num_heads / a->num_kv_heads;
  const int64_t nx = (int64_t)((group + RT - 1) / RT) * a->num_seqs;
  const dim3 grid((unsigned)(nx < KE_PA_MAX_GRID_X ? nx : KE_PA_MAX_GRID_X),
                  (unsigned)a->num_kv_heads, (unsigned)a->splits);
  constexpr size_t mg = sizeof(kd_decode_smem<kd_mma_nv::WARP, RT>);
  constexpr size_t smem = K::BYTES > mg ? K::BYTES : mg;
  const void *fn =
      (const void *)ke_paged_attention_mma_kernel<kd_mma_nv, T, RT, DP, S>;
  static int raised[KD_DECODE_DEVICES];
  const int err = kd_decode_raise_smem(raised, fn, smem);
  if (err != 0) return err;
  hipLaunchKernelGGL((ke_paged_attention_mma_kernel<kd_mma_nv, T, RT, DP, S>),
                     grid, dim3(KD_DECODE_THREADS), smem, s, *a);
  return (int)hipGetLastError();
}

template <typename T, int RT>
static int ke_paged_attention_launch_mma_rt(hipStream_t s,
                                            const ke__paged_attention_args *a,
                                            int stages) {
  if (a->head_dim <= 64)
    return stages == 3 ? ke_paged_attention_launch_mma<T, RT, 64, 3>(s, a)
                       : ke_paged_attention_launch_mma<T, RT, 64, 2>(s, a);
  return stages == 3 ? ke_paged_attention_launch_mma<T, RT, 128, 3>(s, a)
                     : ke_paged_attention_launch_mma<T, RT, 128, 2>(s, a);
}

/* Whether the matrix-unit kernel takes this call (matrix is the knob: 2 or
 * 3 stages, 0 never). */
extern "C" int ke__paged_attention_takes_mma(const ke__paged_attention_args *a,
                                             int matrix) {
#if KD_MMA_HAS_NV
  return (matrix == 2 || matrix == 3) && a->head_dim <= 128 &&
         a->q_dtype == a->kv_dtype && a->out_dtype == a->kv_dtype &&
         (a->kv_dtype == KE_F16 || a->kv_dtype == KE_BF16) &&
         kd_mma_device_kind() == KD_MMA_NV;
#else
  (void)a, (void)matrix;
  return 0;
#endif
}

/* Launches the matrix-unit kernel when it takes the call. */
static bool ke_paged_attention_try_mma(hipStream_t s,
                                       const ke__paged_attention_args *a,
                                       const ke__decode_ext *x, int *ret) {
  if (!ke__paged_attention_takes_mma(a, x->mma)) return false;
  const int tr = (int)ke__decode_tile_rows(a->num_heads / a->num_kv_heads);
  if (a->kv_dtype == KE_F16)
    *ret = tr == 1 ? ke_paged_attention_launch_mma_rt<kd_half, 1>(s, a, x->mma)
           : tr == 2
               ? ke_paged_attention_launch_mma_rt<kd_half, 2>(s, a, x->mma)
               : ke_paged_attention_launch_mma_rt<kd_half, 4>(s, a, x->mma);
  else
    *ret = tr == 1 ? ke_paged_attention_launch_mma_rt<kd_bf16, 1>(s, a, x->mma)
           : tr == 2
               ? ke_paged_attention_launch_mma_rt<kd_bf16, 2>(s, a, x->mma)
               : ke_paged_attention_launch_mma_rt<kd_bf16, 4>(s, a, x->mma);
  return true;
}

/* The workspace path's merge: one block per (sequence, query head) that
 * was split; the attention pass finished the others. */
template <bool FAST>
__global__ void __launch_bounds__(KE_PA_COMBINE_THREADS)
ke_paged_attention_combine(ke__paged_attention_args a) {
  const int64_t seq = blockIdx.x;
  const int64_t h = blockIdx.y;
  const int64_t len = a.seq_lens[seq];
  const int64_t parts = (len + a.chunk - 1) / a.chunk;
  if (parts <= 1) return;
  const float *row = a.partials + (seq * a.num_heads + h) * a.cap *
                                      (a.head_dim + 2);
  for (int d = threadIdx.x; d < a.head_dim; d += KE_PA_COMBINE_THREADS)
    ke_paged_attention_store(
        a.out_dtype, a.out, seq * a.out_seq_stride + h * a.out_head_stride + d,
        kd_decode_merge_elem<FAST, false>(row, parts, a.head_dim, d));
}

template <typename Tkv, int L, int RT, int S, bool FAST>
static int ke_paged_attention_launch_stages(hipStream_t s,
                                            const ke__paged_attention_args *a,
                                            const ke__decode_ext *x) {
  constexpr int U = sizeof(Tkv) == 2 ? 2 : 1;
  const int group = a->num_heads / a->num_kv_heads;
  const int64_t nx = (int64_t)((group + RT - 1) / RT) * a->num_seqs;
  const dim3 grid((unsigned)(nx < KE_PA_MAX_GRID_X ? nx : KE_PA_MAX_GRID_X),
                  (unsigned)a->num_kv_heads, (unsigned)a->splits);
  const size_t smem = sizeof(ke_paged_attention_shared<Tkv, L, RT, U, S>) +
                      sizeof(kd_decode_ring<S>);
  const void *fn = (const void *)ke_paged_attention_kernel<Tkv, L, RT, U, S,
                                                           FAST>;
  static int raised[KD_DECODE_DEVICES];
  const int err = kd_decode_raise_smem(raised, fn, smem);
  if (err != 0) return err; /* also left as the last error */
  hipLaunchKernelGGL((ke_paged_attention_kernel<Tkv, L, RT, U, S, FAST>), grid,
                     dim3(KD_DECODE_THREADS), smem, s, *a, x->grabs);
  return 0;
}

/* 3 stages, or 4 for 16-bit caches when the plan asks for them and the
 * block may take their 64 KB of shared memory (not on 64 KB parts: then
 * 3). */
template <typename Tkv, int L, int RT, bool FAST>
static void ke_paged_attention_launch_geom(hipStream_t s,
                                           const ke__paged_attention_args *a,
                                           const ke__decode_ext *x) {
  if constexpr (sizeof(Tkv) == 2)
    if (x->stages == 4) {
      if (ke_paged_attention_launch_stages<Tkv, L, RT, 4, FAST>(s, a, x) !=
          (int)hipErrorInvalidValue)
        return;
      (void)hipGetLastError(); /* the refused shared memory size */
    }
  (void)ke_paged_attention_launch_stages<Tkv, L, RT, 3, FAST>(s, a, x);
}

template <typename Tkv, int RT, bool FAST>
static void ke_paged_attention_launch_rows(hipStream_t s,
                                           const ke__paged_attention_args *a,
                                           const ke__decode_ext *x) {
  if (a->head_dim <= 64)
    ke_paged_attention_launch_geom<Tkv, 8, RT, FAST>(s, a, x);
  else if (a->head_dim <= 128)
    ke_paged_attention_launch_geom<Tkv, 16, RT, FAST>(s, a, x);
  else
    ke_paged_attention_launch_geom<Tkv, 32, RT, FAST>(s, a, x);
}

template <typename Tkv, bool FAST>
static void ke_paged_attention_launch_typed(hipStream_t s,
                                            const ke__paged_attention_args *a,
                                            const ke__decode_ext *x) {
  switch (ke__decode_tile_rows(a->num_heads / a->num_kv_heads)) {
  case 1:
    ke_paged_attention_launch_rows<Tkv, 1, FAST>(s, a, x);
    break;
  case 2:
    ke_paged_attention_launch_rows<Tkv, 2, FAST>(s, a, x);
    break;
  default:
    ke_paged_attention_launch_rows<Tkv, 4, FAST>(s, a, x);
    break;
  }
}

template <bool FAST>
static int ke_paged_attention_launch_fast(hipStream_t s,
                                          const ke__paged_attention_args *a,
                                          const ke__decode_ext *x) {
  switch (a->kv_dtype) {
  case KE_F32:
    ke_paged_attention_launch_typed<float, FAST>(s, a, x);
    break;
  case KE_F16:
    ke_paged_attention_launch_typed<kd_half, FAST>(s, a, x);
    break;
  case KE_BF16:
    ke_paged_attention_launch_typed<kd_bf16, FAST>(s, a, x);
    break;
  default: return (int)hipErrorInvalidValue;
  }
  return (int)hipGetLastError();
}

extern "C" int ke__paged_attention_launch_ext(void *stream,
                                              const ke__paged_attention_args *a,
                                              const ke__decode_ext *ext) {
  hipStream_t s = (hipStream_t)stream;
  const ke__decode_ext plain = {nullptr, 3, 0};
  const ke__decode_ext *x = ext ? ext : &plain;
  if (a->splits < 1 || a->chunk < 1 || (a->splits > 1 && !a->partials))
    return (int)hipErrorInvalidValue;
  int ret = 0;
  if (ke_paged_attention_try_mma(s, a, x, &ret)) return ret;
  /* 16-bit outputs may take the approximate exp (kd_exp_for's rule). */
  return a->out_dtype == KE_F32 ? ke_paged_attention_launch_fast<false>(s, a, x)
                                : ke_paged_attention_launch_fast<true>(s, a, x);
}

extern "C" int ke__paged_attention_launch(void *stream,
                                          const ke__paged_attention_args *a) {
  return ke__paged_attention_launch_ext(stream, a, nullptr);
}

extern "C" int
ke__paged_attention_combine_launch(void *stream,
                                   const ke__paged_attention_args *a) {
  dim3 grid((unsigned)a->num_seqs, (unsigned)a->num_heads);
  dim3 block(KE_PA_COMBINE_THREADS);
  if (a->out_dtype == KE_F32)
    hipLaunchKernelGGL(ke_paged_attention_combine<false>, grid, block, 0,
                       (hipStream_t)stream, *a);
  else
    hipLaunchKernelGGL(ke_paged_attention_combine<true>, grid, block, 0,
                       (hipStream_t)stream, *a);
  return (int)hipGetLastError();
}
