/* Paged attention for decode: one query token per sequence attends to that
 * sequence's keys and values, which live in fixed-size blocks of a shared
 * cache reached through the sequence's block table.
 *
 * Algorithm: one block of 256 threads per (sequence, KV head, group of up to
 * 8 query heads sharing that KV head, partition). The block walks its tokens
 * in tiles of T = 128, 64 or 32 tokens (head_dim <= 64, <= 128, 256; always
 * a whole number of cache blocks). Per tile: the keys are staged in shared
 * memory as f32 (16-byte loads; each (physical block, KV head) is one
 * contiguous block_size x head_dim run, see the layout note in
 * engine/include/kiln/paged_attention.h); each thread scores one token
 * against its share of the query heads (a K row read once serves them all);
 * the values are staged in the same buffer while one warp per head updates
 * that head's online softmax (running max, running sum, rescale factor);
 * then each thread accumulates p * V for 4 dimensions of every head over
 * its slice of the tile's tokens (a V read serves every head). The slices
 * are summed in shared memory when the partition ends. Global loads for the
 * next stage are issued before the current stage computes: the values
 * while the scores are computed, the next tile's keys during p * V. All
 * arithmetic is f32.
 *
 * Only the sequence's own tokens are read: a tile ends at the sequence
 * length, and physical blocks come from the table entries the length needs,
 * so cache slots past the length and blocks outside the table are never
 * touched (they may hold NaN, or garbage).
 *
 * Without a workspace a block covers the whole sequence, so a long sequence
 * on a small batch runs on few blocks (slow, but any length works). With a
 * workspace, sequences are cut into KE__PAGED_PARTITION-token partitions
 * ("flash-decoding"): each partition leaves its (max, sum, unnormalised
 * p*V) in the workspace and a second kernel, one block per (sequence, query
 * head), rescales and merges them. A sequence that fits one partition is
 * finished by the first kernel and skipped by the second.
 */
#include "kd.h"

#define KE_PA_THREADS 256
#define KE_PA_HEADS 8       /* query heads per block (one KV head's group) */
#define KE_PA_MAX_D 256
#define KE_PA_MAX_TILE 128
#define KE_PA_MIN_BLOCK 8   /* smallest cache block size */
/* Elements of a tile (T * head_dim) at most: 128 x 64, 64 x 128, 32 x 256. */
#define KE_PA_TILE_ELEMS 8192
/* The staged tile has rows of head_dim + 4 floats: 16-byte aligned, and
 * threads reading 16 bytes of consecutive rows hit different banks. The
 * largest is 128 rows of 68 floats (head_dim 64); the same buffer holds
 * the slices' partial sums (at most 8192 floats) at a partition's end. */
#define KE_PA_TILE_FLOATS (KE_PA_MAX_TILE * (64 + 4))
#define KE_PA_COMBINE_THREADS 128

/* Loops over a thread's fixed-size register arrays must unroll on a GPU, or
 * the arrays go to local memory; g++ (host emulation) has no such need. */
#if defined(KILN_BACKEND_HOST)
#define KE_PA_UNROLL
#else
#define KE_PA_UNROLL _Pragma("unroll")
#endif

/* Tokens per tile: a power of two with T * head_dim <= KE_PA_TILE_ELEMS, so
 * a tile is whole cache blocks and a partition is whole tiles. */
__device__ __forceinline__ int ke_pa_tile_tokens(int head_dim) {
  return head_dim <= 64 ? 128 : (head_dim <= 128 ? 64 : 32);
}

/* q and out are touched once per element, so their dtypes are switched at
 * run time rather than multiplying the kernel's instantiations. */
__device__ __forceinline__ float ke_pa_load(ke_dtype dt, const void *p,
                                            int64_t i) {
  switch (dt) {
  case KE_F16: return kd_to_float(static_cast<const kd_half *>(p)[i]);
  case KE_BF16: return kd_to_float(static_cast<const kd_bf16 *>(p)[i]);
  default: return static_cast<const float *>(p)[i];
  }
}

__device__ __forceinline__ void ke_pa_store(ke_dtype dt, void *p, int64_t i,
                                            float v) {
  switch (dt) {
  case KE_F16: static_cast<kd_half *>(p)[i] = kd_from_float<kd_half>(v); break;
  case KE_BF16: static_cast<kd_bf16 *>(p)[i] = kd_from_float<kd_bf16>(v); break;
  default: static_cast<float *>(p)[i] = v; break;
  }
}

/* Cache elements to f32. f16 uses the hardware conversion on GPUs (kd.h's
 * portable bit-twiddling costs a dozen instructions per element, and this
 * kernel converts every cache element it reads); the host emulation keeps
 * kd.h's, which is exact and agrees for every non-NaN input. */
template <typename T> __device__ __forceinline__ float ke_pa_to_float(T v) {
  return kd_to_float(v);
}
__device__ __forceinline__ float ke_pa_to_float(kd_half v) {
#if defined(KILN_BACKEND_CUDA)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
#elif defined(KILN_BACKEND_HIP)
  _Float16 h;
  __builtin_memcpy(&h, &v.bits, sizeof h);
  return (float)h;
#else
  return kd_to_float(v);
#endif
}

/* A tile of K or V moving from the cache to shared memory: each thread
 * owns the 16-byte pieces tid, tid + 256, ... of the tile's rows, located
 * once per kernel as (row << 16) | column, -1 past the largest tile. */
template <typename Tkv> struct ke_pa_tile_io {
  static constexpr int kVec = 16 / sizeof(Tkv);
  static constexpr int kLoads = KE_PA_TILE_ELEMS / kVec / KE_PA_THREADS;
  int piece[kLoads];
  uint4 r[kLoads];

  __device__ __forceinline__ void locate(int head_dim, int tile) {
    const int row_vecs = head_dim / kVec;
    KE_PA_UNROLL
    for (int j = 0; j < kLoads; j++) {
      const int i = threadIdx.x + j * KE_PA_THREADS;
      const int t = i / row_vecs;
      piece[j] = t < tile ? (t << 16) | (i - t * row_vecs) * kVec : -1;
    }
  }

  /* Issues every load of rows [0, n) (cache blocks phys[]) before any is
   * used. head_dim * sizeof(Tkv) is a multiple of 16 for every supported
   * head_dim and the cache is 16-byte aligned: all loads align. */
  __device__ __forceinline__ void fetch(const Tkv *__restrict__ cache,
                                        const int64_t *phys, int64_t kv_head,
                                        int64_t num_kv_heads, int block_size,
                                        int block_shift, int head_dim, int n) {
    KE_PA_UNROLL
    for (int j = 0; j < kLoads; j++) {
      const int t = piece[j] >> 16;
      if (piece[j] >= 0 && t < n) {
        const int64_t blk = phys[t >> block_shift];
        const Tkv *src = cache +
            ((blk * num_kv_heads + kv_head) * block_size +
             (t & (block_size - 1))) * head_dim + (piece[j] & 0xffff);
        r[j] = *reinterpret_cast<const uint4 *>(src);
      }
    }
  }

  /* Converts the fetched rows to f32 rows of head_dim + 4 floats. */
  __device__ __forceinline__ void put(int head_dim, int n, float *dst) const {
    KE_PA_UNROLL
    for (int j = 0; j < kLoads; j++) {
      const int t = piece[j] >> 16;
      if (piece[j] >= 0 && t < n) {
        Tkv v[kVec];
        memcpy(v, &r[j], sizeof r[j]);
        float4 *row = reinterpret_cast<float4 *>(dst + t * (head_dim + 4) +
                                                 (piece[j] & 0xffff));
        KE_PA_UNROLL
        for (int e = 0; e < kVec / 4; e++)
          row[e] = make_float4(
              ke_pa_to_float(v[4 * e]), ke_pa_to_float(v[4 * e + 1]),
              ke_pa_to_float(v[4 * e + 2]), ke_pa_to_float(v[4 * e + 3]));
      }
    }
  }
};

/* kHeads: a power of two >= the query heads a block serves (gc), so that a
 * thread's p * V accumulators are exactly as many as a GQA group needs.
 * Blocks per multiprocessor: 4 for 16-bit caches (64 registers; measured on
 * an H100 at 1.3 TB/s against 1.1 at 2 blocks: the loads in flight matter
 * more than the few spills), 2 for f32, whose staging needs twice the
 * registers and spills heavily at 4. */
#define KE_PA_MIN_BLOCKS(Tkv) (sizeof(Tkv) == 4 ? 2 : 4)

template <typename Tkv, int kHeads>
__global__ void __launch_bounds__(KE_PA_THREADS, KE_PA_MIN_BLOCKS(Tkv))
ke_paged_attention_kernel(ke__paged_attention_args a) {
  /* float4 arrays so that rows can be read 16 bytes at a time. */
  __shared__ float4 q_s4[KE_PA_HEADS * KE_PA_MAX_D / 4];   /* scale * q */
  __shared__ float4 kv_s4[KE_PA_TILE_FLOATS / 4];          /* K, V, sums */
  __shared__ float p_s[KE_PA_HEADS * KE_PA_MAX_TILE];      /* scores, p */
  __shared__ float m_s[KE_PA_HEADS], l_s[KE_PA_HEADS], c_s[KE_PA_HEADS];
  __shared__ int64_t phys_s[2][KE_PA_MAX_TILE / KE_PA_MIN_BLOCK];
  float *q_s = reinterpret_cast<float *>(q_s4);
  float *kv_s = reinterpret_cast<float *>(kv_s4);

  const int tid = threadIdx.x;
  const int lane = tid % warpSize, warp = tid / warpSize;
  const int nwarps = KE_PA_THREADS / warpSize;
  const int D = a.head_dim, D4 = D / 4, ld4 = D4 + 1, T = ke_pa_tile_tokens(D);
  const int bs = a.block_size, bs_shift = __ffs(bs) - 1;
  const int group = a.num_heads / a.num_kv_heads;
  const int chunks = (group + KE_PA_HEADS - 1) / KE_PA_HEADS;
  const int64_t seq = blockIdx.x;
  const int kv_head = (int)blockIdx.y / chunks;
  const int chunk = (int)blockIdx.y % chunks;
  const int h0 = kv_head * group + chunk * KE_PA_HEADS;
  const int gc = group - chunk * KE_PA_HEADS < KE_PA_HEADS
                     ? group - chunk * KE_PA_HEADS : KE_PA_HEADS;
  const int64_t len = a.seq_lens[seq];
  const bool split = a.splits > 1;
  const int64_t parts =
      split ? (len + KE__PAGED_PARTITION - 1) / KE__PAGED_PARTITION : 1;
  const int32_t *table = a.block_tables + seq * a.max_blocks_per_seq;
  const Tkv *k_cache = static_cast<const Tkv *>(a.k_cache);
  const Tkv *v_cache = static_cast<const Tkv *>(a.v_cache);
  /* Scoring: token st of the tile against heads sset, sset + ssets, ... */
  const int ssets = KE_PA_THREADS / T;
  const int st = tid % T, sset = tid / T;
  /* p * V: dimensions 4 * vq .. 4 * vq + 3 of every head, over the tile's
   * tokens vslice, vslice + vslices, ...; threads past the last whole
   * slice idle (16 of 256 at head_dim 80, 16 at 96). */
  const int vslices = KE_PA_THREADS / D4;
  const int vq = tid % D4, vslice = tid / D4;

  for (int i = tid; i < gc * D; i += KE_PA_THREADS) {
    const int g = i / D, d = i - g * D;
    q_s[i] = a.scale * ke_pa_load(a.q_dtype, a.q,
                                  seq * a.q_seq_stride +
                                      (int64_t)(h0 + g) * a.q_head_stride + d);
  }
  /* Heads gc .. kHeads-1 have no query: weight 0 and factor 0 let p * V
   * run over all kHeads without a test (their sums are never used). */
  for (int i = tid; i < (kHeads - gc) * T; i += KE_PA_THREADS)
    p_s[gc * T + i] = 0.0f;
  if (tid >= gc && tid < kHeads) c_s[tid] = 0.0f;
  ke_pa_tile_io<Tkv> io;
  io.locate(D, T);

  for (int64_t part = blockIdx.z; part < parts; part += gridDim.z) {
    const int64_t begin = split ? part * KE__PAGED_PARTITION : 0;
    int64_t end = len;
    if (split && begin + KE__PAGED_PARTITION < len)
      end = begin + KE__PAGED_PARTITION;
#if defined(KE_PLANTED_BUG)
    /* Planted bug, built only into the mutant library that proves the tests
     * can fail: the last cache block is read whole, past the length. */
    end = (end + bs - 1) / bs * bs;
#endif
    float acc[kHeads][4];
    KE_PA_UNROLL
    for (int k = 0; k < kHeads; k++)
      acc[k][0] = acc[k][1] = acc[k][2] = acc[k][3] = 0.0f;
    if (tid < gc) {
      m_s[tid] = -INFINITY;
      l_s[tid] = 0.0f;
    }
    int n = end - begin < T ? (int)(end - begin) : T;
    if (tid < (n + bs - 1) / bs) phys_s[0][tid] = table[begin / bs + tid];
    __syncthreads(); /* phys_s, q_s, and the previous partition's sums */
    io.fetch(k_cache, phys_s[0], kv_head, a.num_kv_heads, bs, bs_shift, D, n);

    int cur = 0;
    for (int64_t t0 = begin; t0 < end; t0 += T, cur ^= 1) {
      n = end - t0 < T ? (int)(end - t0) : T;
      const int64_t t1 = t0 + T;
      const int n_next = end - t1 < T ? (int)(end - t1) : T; /* if t1 < end */
      io.put(D, n, kv_s); /* keys; the last p * V is done */
      __syncthreads();
      io.fetch(v_cache, phys_s[cur], kv_head, a.num_kv_heads, bs, bs_shift, D,
               n);
      if (t1 < end && tid < (n_next + bs - 1) / bs)
        phys_s[cur ^ 1][tid] = table[t1 / bs + tid];

      /* Scores: thread (st, sset) scores token st for its heads. */
      if (st < n) {
        const float4 *kr = kv_s4 + st * ld4;
        for (int g = sset; g < gc; g += ssets) {
          const float4 *qr = q_s4 + g * D4;
          float s0 = 0.0f, s1 = 0.0f;
          for (int d4 = 0; d4 < D4; d4 += 2) {
            const float4 k0 = kr[d4], q0 = qr[d4];
            const float4 k1 = kr[d4 + 1], q1 = qr[d4 + 1];
            s0 += q0.x * k0.x + q0.y * k0.y + q0.z * k0.z + q0.w * k0.w;
            s1 += q1.x * k1.x + q1.y * k1.y + q1.z * k1.z + q1.w * k1.w;
          }
          p_s[g * T + st] = s0 + s1;
        }
      }
      __syncthreads();

      io.put(D, n, kv_s); /* values */
      /* Online softmax, one warp per head. fmaxf skips NaN in the max, but
       * a NaN score still turns its p, the sum and so the output NaN. While
       * the max is -inf (every score so far -inf) exponents are taken
       * against 0, so that exp(-inf - -inf) never invents a NaN. Only lane
       * 0 touches m_s, l_s and c_s; the other lanes get the max by a
       * shuffle. */
      for (int g = warp; g < gc; g += nwarps) {
        float *pr = p_s + g * T;
        float mx = -INFINITY;
        for (int t = lane; t < n; t += warpSize) mx = fmaxf(mx, pr[t]);
        mx = kd_warp_reduce(mx, kd_max_op());
        const float m_old = __shfl(lane == 0 ? m_s[g] : 0.0f, 0);
        const float m_new = fmaxf(m_old, mx);
        const float m_ref = m_new == -INFINITY ? 0.0f : m_new;
        float sum = 0.0f;
        for (int t = lane; t < n; t += warpSize) {
          const float p = expf(pr[t] - m_ref);
          pr[t] = p;
          sum += p;
        }
        sum = kd_warp_reduce(sum, kd_sum_op());
        if (lane == 0) {
          const float c = expf(m_old - m_ref);
          c_s[g] = c;
          l_s[g] = l_s[g] * c + sum;
          m_s[g] = m_new;
        }
      }
      __syncthreads();

      if (t1 < end)
        io.fetch(k_cache, phys_s[cur ^ 1], kv_head, a.num_kv_heads, bs,
                 bs_shift, D, n_next);
      /* p * V: one V read (4 dimensions) serves every head. */
      if (vslice < vslices) {
        KE_PA_UNROLL
        for (int k = 0; k < kHeads; k++) {
          const float c = c_s[k];
          acc[k][0] *= c;
          acc[k][1] *= c;
          acc[k][2] *= c;
          acc[k][3] *= c;
        }
        for (int t = vslice; t < n; t += vslices) {
          const float4 v = kv_s4[t * ld4 + vq];
          KE_PA_UNROLL
          for (int k = 0; k < kHeads; k++) {
            const float p = p_s[k * T + t];
            acc[k][0] += p * v.x;
            acc[k][1] += p * v.y;
            acc[k][2] += p * v.z;
            acc[k][3] += p * v.w;
          }
        }
      }
      __syncthreads(); /* kv_s and p_s are free for the next tile */
    }

    /* Sum the slices: slice-major partial sums in kv_s, then each output
     * adds its slices in order. m_s and l_s are final. */
    if (vslice < vslices) {
      KE_PA_UNROLL
      for (int k = 0; k < kHeads; k++)
        if (k < gc)
          kv_s4[(vslice * gc + k) * D4 + vq] =
              make_float4(acc[k][0], acc[k][1], acc[k][2], acc[k][3]);
    }
    __syncthreads();
    for (int o = tid; o < gc * D; o += KE_PA_THREADS) {
      const int g = o / D, d = o - g * D;
      float v = 0.0f;
      for (int sl = 0; sl < vslices; sl++) v += kv_s[sl * gc * D + o];
      const int64_t h = h0 + g;
      if (parts == 1) {
        ke_pa_store(a.out_dtype, a.out,
                    seq * a.out_seq_stride + h * a.out_head_stride + d,
                    v / l_s[g]);
      } else {
        float *row = a.workspace +
                     ((seq * a.num_heads + h) * a.splits + part) * (D + 2);
        row[2 + d] = v;
        if (d == 0) {
          row[0] = m_s[g];
          row[1] = l_s[g];
        }
      }
    }
    /* Everyone has read kv_s, m_s and l_s before the next partition. */
    __syncthreads();
  }
}

/* Merges a (sequence, head)'s partitions: with M the largest partition max,
 * out = sum_p exp(m_p - M) acc_p / sum_p exp(m_p - M) l_p. */
__global__ void __launch_bounds__(KE_PA_COMBINE_THREADS)
ke_paged_attention_combine(ke__paged_attention_args a) {
  const int64_t seq = blockIdx.x;
  const int64_t h = blockIdx.y;
  const int64_t len = a.seq_lens[seq];
  const int64_t parts = (len + KE__PAGED_PARTITION - 1) / KE__PAGED_PARTITION;
  if (parts <= 1) return; /* finished by the attention pass */
  const int D = a.head_dim;
  const float *rows = a.workspace + (seq * a.num_heads + h) * a.splits * (D + 2);
  float m = -INFINITY;
  for (int64_t p = 0; p < parts; p++) m = fmaxf(m, rows[p * (D + 2)]);
  const float m_ref = m == -INFINITY ? 0.0f : m;
  float l = 0.0f;
  for (int64_t p = 0; p < parts; p++)
    l += expf(rows[p * (D + 2)] - m_ref) * rows[p * (D + 2) + 1];
  for (int d = threadIdx.x; d < D; d += KE_PA_COMBINE_THREADS) {
    float o = 0.0f;
    for (int64_t p = 0; p < parts; p++)
      o += expf(rows[p * (D + 2)] - m_ref) * rows[p * (D + 2) + 2 + d];
    ke_pa_store(a.out_dtype, a.out,
                seq * a.out_seq_stride + h * a.out_head_stride + d, o / l);
  }
}

template <typename Tkv>
static void ke_pa_launch_typed(hipStream_t s, dim3 grid,
                               const ke__paged_attention_args *a, int heads) {
  dim3 block(KE_PA_THREADS);
  if (heads <= 1)
    hipLaunchKernelGGL((ke_paged_attention_kernel<Tkv, 1>), grid, block, 0, s,
                       *a);
  else if (heads <= 2)
    hipLaunchKernelGGL((ke_paged_attention_kernel<Tkv, 2>), grid, block, 0, s,
                       *a);
  else if (heads <= 4)
    hipLaunchKernelGGL((ke_paged_attention_kernel<Tkv, 4>), grid, block, 0, s,
                       *a);
  else
    hipLaunchKernelGGL((ke_paged_attention_kernel<Tkv, 8>), grid, block, 0, s,
                       *a);
}

extern "C" int ke__paged_attention_launch(void *stream,
                                          const ke__paged_attention_args *a) {
  const int group = a->num_heads / a->num_kv_heads;
  const int chunks = (group + KE_PA_HEADS - 1) / KE_PA_HEADS;
  const int heads = group < KE_PA_HEADS ? group : KE_PA_HEADS;
  const int64_t z = a->splits < KE__PAGED_MAX_GRID_Z ? a->splits
                                                      : KE__PAGED_MAX_GRID_Z;
  dim3 grid((unsigned)a->num_seqs, (unsigned)(a->num_kv_heads * chunks),
            (unsigned)z);
  hipStream_t s = (hipStream_t)stream;
  switch (a->kv_dtype) {
  case KE_F32: ke_pa_launch_typed<float>(s, grid, a, heads); break;
  case KE_F16: ke_pa_launch_typed<kd_half>(s, grid, a, heads); break;
  case KE_BF16: ke_pa_launch_typed<kd_bf16>(s, grid, a, heads); break;
  default: return (int)hipErrorInvalidValue;
  }
  return (int)hipGetLastError();
}

extern "C" int
ke__paged_attention_combine_launch(void *stream,
                                   const ke__paged_attention_args *a) {
  dim3 grid((unsigned)a->num_seqs, (unsigned)a->num_heads);
  dim3 block(KE_PA_COMBINE_THREADS);
  hipLaunchKernelGGL(ke_paged_attention_combine, grid, block, 0,
                     (hipStream_t)stream, *a);
  return (int)hipGetLastError();
}
