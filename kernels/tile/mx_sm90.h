/* The MX GEMM on the Hopper GEMM (tile/gemm_sm90.h): Y = X W^T with X bf16
 * [M, K] (k contiguous, a batch of them or one) and W an [N, K] MX matrix
 * (kiln/mxfp.h) shared by the batch, f32 sums, Y f32/f16/bf16.
 *
 * The consumers are the GEMM's, unchanged; only the producer warpgroup
 * differs (kd_mx_sm90_b, the kernel's B source). Per slab of 64 k:
 *   thread 0 waits for the slot, counts A's bytes on its "full" barrier
 *     and brings A in by TMA, as the GEMM's producer does;
 *   every thread of the warpgroup owns BN / 128 rows of W: it loads their
 *     packed codes (32 or 48 bytes a row) and two scales into registers
 *     one slab ahead, decodes the current slab's to bf16 (a table of bf16
 *     pairs at unit scale, by byte for 4-bit codes, then one bf16x2
 *     multiply by the scale per pair) and writes each row's 64 values into
 *     the slot as TMA would have (the 128-byte swizzle, kd_sw128), then
 *     makes its stores visible to wgmma (the async proxy); each warp
 *     arrives on the "full" barrier once its lanes are done.
 * bf16 holds every MX value exactly (tile/mx.h), so the product is the dense
 * GEMM's on the dequantised W, bit for bit: the same slots, the same
 * multiplies and promotion. Rows past N and k past K are zeros, as TMA's
 * fill. W's rows must be 16-byte (4-bit codes) or 8-byte (6-bit) aligned;
 * K is a multiple of 32 (kiln/mxfp.h), so each row's slab is too.
 */
#ifndef KILN_KERNELS_TILE_MX_SM90_H
#define KILN_KERNELS_TILE_MX_SM90_H

#include "tile/gemm_sm90_launch.h"
#include "tile/mx.h"

/* The producer's named barrier: its four warps, after the value table. */
enum { KD_MX_SM90_BAR_PRODUCER = 5 };

/* PROBE (measuring only, dev/gemm-hopper.cu --mx; the engine never
 * sets it): 1 no loads of W (the codes of the first slab again), 2 no
 * decode (each chunk stores its raw words), 3 no fence.proxy.async; the
 * results are then wrong. */
template <int F, int PROBE = 0> struct kd_mx_sm90_b {
  typedef kd_mx_mm param;
  /* A's copy (thread 0's arrive with its bytes) and each producer warp's. */
  static constexpr int FULL_ARRIVALS = 1 + 4, PRODUCER_REGS = 64,
                       CONSUMER_REGS = 216;
  static constexpr int BITS = kd_mx_traits<F>::bits;
  static constexpr int WORDS = 64 * BITS / 32; /* a row's slab: 8 or 12 */

  /* Whether the kernel can read W: rows aligned for its loads. */
  static bool fits(const kd_mx_mm &w) {
    const uintptr_t need = BITS == 4 ? 16 : 8;
    return (uintptr_t)w.data % need == 0 && w.row_bytes % (int64_t)need == 0;
  }

  /* One thread's rows of a slab: codes as little-endian words (code i at
   * bits BITS i of the row's slab) and the two blocks' scales (bytes 0, 1). */
  template <int ROWS> struct slab {
    uint32_t raw[ROWS][WORDS];
    uint32_t sc[ROWS];
  };

  template <int ROWS>
  static __device__ __forceinline__ void load(slab<ROWS> &v, const kd_mx_mm &w,
                                              int64_t r0, int64_t k0,
                                              const kd_gemm_mma_dims &d) {
    KD_UNROLL
    for (int j = 0; j < ROWS; j++) {
      const int64_t r = r0 + 128 * j;
      KD_UNROLL
      for (int i = 0; i < WORDS; i++) v.raw[j][i] = 0u;
      v.sc[j] = 127u | 127u << 8; /* code 0 at unit scale: +0 */
      if (r >= d.n) continue;
      const uint8_t *p = w.data + r * w.row_bytes + k0 * BITS / 8;
      const uint8_t *q = w.scales + r * w.row_blocks + k0 / KE_MX_BLOCK;
      /* K a multiple of 32: the slab's second block is there or not. */
      const int halves = k0 + KE_MX_BLOCK < d.k ? 2 : 1;
      KD_UNROLL
      for (int h = 0; h < 2; h++) {
        if (h >= halves) break;
        /* A block's codes: 16 bytes (4-bit) or 24 (6-bit, three words of
         * 8 bytes: W's rows are 8-byte aligned only). */
        uint32_t *o = v.raw[j] + h * WORDS / 2;
        const uint8_t *b = p + h * 4 * BITS;
#if defined(KILN_BACKEND_HOST)
        memcpy(o, b, 4 * BITS);
#else
        if constexpr (BITS == 4) {
          const uint4 x = *(const uint4 *)(const void *)b;
          o[0] = x.x, o[1] = x.y, o[2] = x.z, o[3] = x.w;
        } else {
          KD_UNROLL
          for (int e = 0; e < 3; e++) {
            const uint2 x = ((const uint2 *)(const void *)b)[e];
            o[2 * e] = x.x, o[2 * e + 1] = x.y;
          }
        }
#endif
      }
      v.sc[j] = (uint32_t)q[0] | (uint32_t)(halves == 2 ? q[1] : 127u) << 8;
    }
  }

  /* The table: bf16 bit pairs at unit scale, code c0 in the low half and
   * c1 in the high one; indexed by a byte (c0 | c1 << 4: two 4-bit codes,
   * 256 entries) for 4-bit codes, by one code (c0 only, 64 entries) for
   * 6-bit ones. */
  static constexpr int TABLE = BITS == 4 ? 256 : 64;
  static __device__ __forceinline__ uint32_t table_entry(int i) {
    auto h = [](unsigned c) {
      return kd_f32_bits(kd_mx_decode<F>(c, 127u)) >> 16; /* exact */
    };
    return BITS == 4 ? h((unsigned)i & 15u) | h((unsigned)i >> 4) << 16
                     : h((unsigned)i);
  }

  /* Two bf16 values (a pair) times 2^(s - 127), s in 5 .. 254: the
   * products are normal, zero or overflow to Inf (tile/mx.h), so the bf16
   * multiply is exact, as the f32 one is. */
  static __device__ __forceinline__ uint32_t scale2(uint32_t v, uint32_t s) {
#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const uint32_t m = (s << 7) | (s << 23); /* 2^(s - 127), both halves */
    uint32_t o;
    asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(o) : "r"(v), "r"(m));
    return o;
#else
    const float m = kd_bits_f32(s << 23);
    return kd_f32_bits(kd_bits_f32(v << 16) * m) >> 16 |
           (kd_f32_bits(kd_bits_f32(v & 0xffff0000u) * m) & 0xffff0000u);
#endif
  }

  /* Decodes one thread's rows into the slot's B tile ([BN][64 k], rows r0
   * + 128 j of it). Chunk c (codes 8 c .. 8 c + 7, one scale) is one
   * 16-byte store. */
  template <int ROWS>
  static __device__ __forceinline__ void store(const slab<ROWS> &v,
                                               unsigned char *sb, int r0,
                                               const uint32_t *table) {
    KD_UNROLL
    for (int j = 0; j < ROWS; j++) {
      const int r = r0 + 128 * j;
      const uint32_t s0 = v.sc[j] & 0xffu, s1 = v.sc[j] >> 8 & 0xffu;
      /* Both blocks' scales in 5 .. 254 (the common case): the table path
       * for all eight chunks, no branch between them, so their lookups
       * and multiplies interleave. */
      const bool fast = s0 - 5u <= 249u && s1 - 5u <= 249u;
      KD_UNROLL
      for (int c = 0; c < 8; c++) {
        const unsigned s = c < 4 ? s0 : s1;
        uint32_t code[8];
        KD_UNROLL
        for (int e = 0; e < 8; e++) {
          const int bit = (8 * c + e) * BITS, word = bit / 32, sh = bit % 32;
          uint32_t u = v.raw[j][word] >> sh;
          if (sh + BITS > 32) u |= v.raw[j][word + 1] << (32 - sh);
          code[e] = u & ((1u << BITS) - 1u);
        }
        uint32_t pair[4];
        if (fast) {
          KD_UNROLL
          for (int e = 0; e < 4; e++) {
            /* 4-bit: codes 2e, 2e + 1 are byte e of the chunk's word. */
            const uint32_t t =
                BITS == 4 ? table[v.raw[j][c] >> (8 * e) & 0xffu]
                          : table[code[2 * e]] | table[code[2 * e + 1]] << 16;
            pair[e] = scale2(t, s);
          }
        } else {
          /* A scale of 0 .. 4 or 255 in the row's slab: per chunk, the
           * table or the integer decoding (subnormal results, NaN). */
          const bool cf = s - 5u <= 249u;
          KD_UNROLL
          for (int e = 0; e < 4; e++) {
            auto one = [&](unsigned x) {
              return cf ? kd_f32_bits(kd_bits_f32(table1(table, x) << 16) *
                                      kd_bits_f32(s << 23)) >> 16
                        : kd_f32_bits(kd_mx_decode<F>(x, s)) >> 16;
            };
            pair[e] = one(code[2 * e]) | one(code[2 * e + 1]) << 16;
          }
        }
        /* Planted bug (arch/kd.h, KD_PLANT_MX): the chunk written where the
         * tile would be without the swizzle. */
        const uint32_t at = KD_PLANTED_AT(KD_PLANT_MX)
                                ? 128u * (uint32_t)r + 16u * (uint32_t)c
                                : kd_sw128(r, 8 * c);
        *(uint4 *)(void *)(sb + at) =
            make_uint4(pair[0], pair[1], pair[2], pair[3]);
      }
    }
  }

  /* One code's bf16 bits at unit scale from the table. */
  static __device__ __forceinline__ uint32_t table1(const uint32_t *table,
                                                    unsigned x) {
    return BITS == 4 ? table[x] & 0xffffu : table[x];
  }

  template <class Cfg, bool AKC, bool BKC>
  static __device__ __forceinline__ void
  produce(const kd_tmap *ta, const kd_mx_mm *w, unsigned char *slots,
          uint64_t *full, uint64_t *empty, const kd_gemm_mma_dims &d,
          int a_batched, int) {
    static_assert(AKC && BKC, "X and W both k-contiguous");
    constexpr int BM = Cfg::BM, BN = Cfg::BN, BK = Cfg::BK, S = Cfg::STAGES;
    constexpr int ROWS = BN / 128;
    static_assert(BK == 64 && BN % 128 == 0, "whole rows a thread");
    __shared__ uint32_t table[TABLE];
    const int t = (int)threadIdx.x; /* 0 .. 127 */
    for (int i = t; i < TABLE; i += 128) table[i] = table_entry(i);
    kd_bar_sync(KD_MX_SM90_BAR_PRODUCER, 128);

    const kd_gemm_sm90_walk<Cfg> walk(d);
    const int64_t k_tiles = walk.k_tiles;
    int s = 0, ph = 0;
    for (int64_t tile = blockIdx.x; tile < walk.tiles; tile += gridDim.x) {
      int64_t bi, mt, nt;
      walk.at(tile, &bi, &mt, &nt);
      const int m0 = (int)(mt * BM);
      const int64_t r0 = nt * BN + t;
      const int za = a_batched ? (int)bi : 0;
      /* Slab kt from `cur` while slab kt + 1's codes load into `nxt`: two
       * buffers taking turns (a copy between them would wait for the
       * loads). */
      auto step = [&](slab<ROWS> &cur, slab<ROWS> &nxt, int64_t kt) {
        kd_mbar_wait(&empty[s], ph ^ 1);
        unsigned char *sa = slots + s * Cfg::STAGE_BYTES;
        if (t == 0) {
          kd_mbar_arrive_tx(&full[s], Cfg::A_BYTES);
          kd_tma_load(sa, ta, (int)(kt * BK), m0, za, &full[s]);
        }
        if (PROBE != 1 && kt + 1 < k_tiles) load(nxt, *w, r0, (kt + 1) * BK, d);
        if constexpr (PROBE == 2) {
          KD_UNROLL
          for (int c = 0; c < 8; c++)
            *(uint4 *)(void *)(sa + Cfg::A_BYTES + kd_sw128(t, 8 * c)) =
                make_uint4(cur.raw[0][c % WORDS], cur.raw[0][(c + 1) % WORDS],
                           cur.sc[0], cur.raw[0][(c + 2) % WORDS]);
        } else {
          store(cur, sa + Cfg::A_BYTES, t, table);
        }
        if constexpr (PROBE != 3) kd_fence_proxy_async();
#if !defined(KILN_BACKEND_HIP) /* (never launched on AMD) */
        __syncwarp();
#endif
        if (t % 32 == 0) kd_mbar_arrive(&full[s]);
        if (++s == S) s = 0, ph ^= 1;
      };
      slab<ROWS> b0, b1;
      if (k_tiles > 0) load(b0, *w, r0, 0, d);
      if (PROBE == 1) b1 = b0;
      for (int64_t kt = 0; kt < k_tiles; kt += 2) {
        step(b0, b1, kt);
        if (kt + 1 < k_tiles) step(b1, b0, kt + 1);
      }
    }
  }
};

/* Y = X W^T on the Hopper GEMM with configuration Cfg; -1 where it does
 * not apply (X or W not readable as it needs: the caller uses another
 * kernel), else a hipError_t. */
template <int F, class Cfg, int PROBE = 0>
static int kd_mx_sm90_run(hipStream_t stream, const kd_gemm_mma_dense &x,
                          const kd_mx_mm &w, const kd_gemm_mma_out &y,
                          const kd_gemm_mma_dims &d) {
  kd_tmap ta, tc;
  if (!kd_mx_sm90_b<F, PROBE>::fits(w) || !kd_gemm_sm90_fits(x, d.m, d.k) ||
      kd_gemm_sm90_map(&ta, x, true, d.m, d.k, d.batch, Cfg::BM) != 0)
    return -1;
  const int ab = d.batch > 1 && x.batch_stride != 0;
  const int ct = kd_gemm_sm90_c_map<Cfg>(&tc, y, d);
  return kd_gemm_sm90_launch<kd_bf16, Cfg, true, true, kd_mx_sm90_b<F, PROBE>>(
      stream, ta, w, tc, y, d, ab, 0, ct);
}

#endif
