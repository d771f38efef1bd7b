/* OCP MX elements on the device: the format constants, the exact decoder
 * (kernels/mxfp.hip's dequantisation uses them), and W as an operand of
 * both GEMM kernels, decoded while it is loaded: the SIMT kernel's loader
 * (tile/gemm.h, values as f32) and the matrix-core kernel's stager
 * (tile/gemm_mma.h, values as bf16, which holds every MX value exactly).
 * Layout: kiln/mxfp.h.
 */
#ifndef KILN_KERNELS_TILE_MX_H
#define KILN_KERNELS_TILE_MX_H

#include "tile/gemm_mma.h"
#include "kiln/mxfp.h"

/* Element format constants, by ke_mxfp_format. */
template <int F> struct kd_mx_traits;
template <> struct kd_mx_traits<KE_MXFP4_E2M1> {
  enum { bits = 4, ebits = 2, mbits = 1, bias = 1 };
};
template <> struct kd_mx_traits<KE_MXFP6_E2M3> {
  enum { bits = 6, ebits = 2, mbits = 3, bias = 1 };
};
template <> struct kd_mx_traits<KE_MXFP6_E3M2> {
  enum { bits = 6, ebits = 3, mbits = 2, bias = 3 };
};

/* Code of element i of a packed row. 4-bit: nibble i & 1 of byte i / 2.
 * 6-bit: element 4g + j is bits 6j .. 6j + 5 of the little-endian 24-bit
 * word in bytes 3g .. 3g + 2; only the bytes holding those bits are read. */
template <int Bits>
__device__ __forceinline__ unsigned kd_mx_code(const uint8_t *row, int64_t i) {
  if constexpr (Bits == 4) {
    const unsigned byte = row[i >> 1];
    return (i & 1) ? byte >> 4 : byte & 0xFu;
  } else {
    const uint8_t *group = row + 3 * (i >> 2);
    const int bit = 6 * (int)(i & 3);
    const int lo = bit >> 3, hi = (bit + 5) >> 3; /* both in 0 .. 2 */
    unsigned w = group[lo];
    if (hi != lo) w |= (unsigned)group[hi] << 8;
    return (w >> (bit & 7)) & 0x3Fu;
  }
}

/* Exact value of code under E8M0 scale as f32 (Inf above the f32 range). */
template <int F>
__device__ __forceinline__ float kd_mx_decode(unsigned code, unsigned scale) {
  typedef kd_mx_traits<F> T;
  if (scale == KE_MX_SCALE_NAN) return kd_bits_f32(0x7fc00000u);
  const uint32_t sign = (code >> (T::ebits + T::mbits)) & 1u;
  const unsigned e = (code >> T::mbits) & ((1u << T::ebits) - 1u);
  const unsigned man = code & ((1u << T::mbits) - 1u);
  const uint32_t sig = e ? man | (1u << T::mbits) : man;
  uint32_t bits = 0;
  if (sig != 0) {
    /* value = sig * 2^exp2; top = exponent of its leading bit. */
    const int exp2 = (e ? (int)e : 1) - T::bias - T::mbits + (int)scale - 127;
    /* sig < 16 (at most 3 mantissa bits and the hidden one). */
    const int lead = sig >= 8u ? 3 : sig >= 4u ? 2 : sig >= 2u ? 1 : 0;
    const int top = exp2 + lead;
    if (top > 127)
      bits = 0x7f800000u;
    else if (top >= -126)
      bits = ((uint32_t)(top + 127) << 23) | ((sig << (23 - lead)) & 0x7fffffu);
    else
      bits = sig << (exp2 + 149); /* subnormal; exp2 >= -131 */
  }
  return kd_bits_f32(bits | sign << 31);
}

/* The value of code at unit scale (s = 127), without the loop of
 * kd_mx_decode: normal codes assemble their f32 bits, subnormal ones are
 * a small integer times a power of two. Exact. */
template <int F> __device__ __forceinline__ float kd_mx_unit(unsigned code) {
  typedef kd_mx_traits<F> T;
  const unsigned e = (code >> T::mbits) & ((1u << T::ebits) - 1u);
  const unsigned man = code & ((1u << T::mbits) - 1u);
  const float mag =
      e ? kd_bits_f32((e - T::bias + 127u) << 23 | man << (23 - T::mbits))
        : (float)man * kd_bits_f32((uint32_t)(128 - T::bias - T::mbits) << 23);
  return (code >> (T::ebits + T::mbits)) & 1u ? -mag : mag;
}

/* ---- W as an operand of the SIMT kernel (tile/gemm.h) ------------------- */

/* Element (n, k) of an [N, K] MX matrix, as f32 (exact). */
template <int F> struct kd_mx_operand {
  static constexpr int k_contiguous = 1; /* k walks each row's bytes */
  const uint8_t *data;
  const uint8_t *scales;
  int64_t row_bytes;
  int64_t row_blocks;

  /* kd_gemm_dense's cursor for W: group g is row i / (BK / 4), codes
   * 4 (i % (BK / 4)) .. + 3 of the slab (i = threadIdx.x + 256 g), all
   * four in one block and, K being a multiple of 32, all present when the
   * first is. next() keeps the four codes packed (16 or 24 bits) with
   * their scale; values() decodes them. */
  template <int ROWS, int BK> struct cursor {
    static constexpr int L = ROWS * BK / (4 * 256);
    static constexpr int BITS = kd_mx_traits<F>::bits;
    const uint8_t *row[L]; /* NULL: past N */
    const uint8_t *scale[L];
    int kpos[L];
    uint32_t codes[L]; /* code e in bits BITS e .. */
    unsigned sc[L];

    __device__ __forceinline__ void init(const kd_mx_operand &w, int64_t,
                                         int64_t r0, int64_t rows, int64_t) {
      KD_UNROLL
      for (int g = 0; g < L; g++) {
        const int i = (int)threadIdx.x + 256 * g;
        const int64_t r = r0 + i / (BK / 4);
        kpos[g] = 4 * (i % (BK / 4));
        row[g] = r < rows ? w.data + r * w.row_bytes : nullptr;
        scale[g] = w.scales + (r < rows ? r : 0) * w.row_blocks;
      }
    }
    __device__ __forceinline__ void next(int64_t k0, int64_t klen) {
      KD_UNROLL
      for (int g = 0; g < L; g++) {
        const int64_t k = k0 + kpos[g];
        codes[g] = 0u;
        sc[g] = 127u; /* code 0 at unit scale: +0 */
        if (!row[g] || k >= klen) continue;
        sc[g] = scale[g][k / KE_MX_BLOCK];
        KD_UNROLL
        for (int e = 0; e < 4; e++)
          codes[g] |= kd_mx_code<BITS>(row[g], k + e) << (BITS * e);
      }
    }
    /* Scales 5 .. 254 scale the unit value exactly (normal, zero or Inf);
     * the others (f32 subnormals, NaN) decode in integers. */
    __device__ __forceinline__ void values(float (*v)[4]) const {
      KD_UNROLL
      for (int g = 0; g < L; g++) {
        const unsigned s = sc[g];
        const bool fast = s >= 5u && s <= 254u;
        const float mul = kd_bits_f32((fast ? s : 127u) << 23);
        KD_UNROLL
        for (int e = 0; e < 4; e++) {
          const unsigned code = codes[g] >> (BITS * e) & ((1u << BITS) - 1u);
          v[g][e] = fast ? kd_mx_unit<F>(code) * mul : kd_mx_decode<F>(code, s);
        }
      }
    }
  };
};

/* ---- W as an operand of the matrix-core kernel (tile/gemm_mma.h) --------- */

/* aligned: data is 4-byte aligned (MXFP4) or 2-byte aligned (MXFP6), so a
 * chunk's 8 codes load as one 4-byte or three 2-byte words. */
struct kd_mx_mm {
  const uint8_t *data;
  const uint8_t *scales;
  int64_t row_bytes;
  int64_t row_blocks;
  int aligned;
};

/* Stages W's slabs as bf16 tiles [n][k] (k-contiguous): each thread loads
 * the packed bytes and scale of its chunks (8 codes each) into registers
 * when the slab is fetched, and decodes and stores them after the warps
 * have multiplied the current slab, so the loads' latency hides behind
 * the multiply. Chunks are assigned as in kd_gemm_mma_dense_stager. A code's
 * value comes from a per-block table of the format's values at unit scale
 * times 2^(s - 127), exact in f32 and in bf16 whenever the result is
 * normal, zero or overflows (scales 5 .. 254); other scales (subnormal
 * results, NaN) take kd_mx_decode's integer path. Rows past N and k past
 * K stage as zeros. */
template <int F, int THREADS, int ROWS, int BK> struct kd_mx_stager {
  typedef kd_gemm_mma_side<ROWS, BK, true> S;
  static constexpr int BITS = kd_mx_traits<F>::bits;
  static constexpr int CH = S::CH, PER = ROWS * CH / THREADS;
  static constexpr int DR = THREADS / CH;
  static_assert(ROWS * CH % THREADS == 0 && THREADS % (8 * CH) == 0,
                "the staging layout assumes whole passes of the threads");
  static_assert(BK % KE_MX_BLOCK == 0, "a chunk's codes share one scale");
  const uint8_t *p;  /* this thread's first chunk's bytes, next slab */
  const uint8_t *sp; /* and its scale */
  int64_t data_step, scale_step; /* between this thread's chunks */
  int64_t klen, k0;
  int off, kpos, rows_ok, aligned;
  uint32_t raw[PER][2];
  unsigned sc[PER];

  static __device__ __forceinline__ float *lut() {
    __shared__ float table[1 << BITS];
    return table;
  }
  /* Once per block, before the first slab (the kernel's barrier follows). */
  static __device__ __forceinline__ void setup() {
    for (int i = (int)threadIdx.x; i < (1 << BITS); i += (int)blockDim.x)
      lut()[i] = kd_mx_decode<F>((unsigned)i, 127u);
  }

  __device__ __forceinline__ void init(const kd_mx_mm &w, int64_t,
                                       int64_t r0, int64_t rows,
                                       int64_t k_len) {
    const int t = (int)threadIdx.x, c = t % CH, tr = t / CH;
    kpos = 8 * c;
    off = (tr * S::tile::STRIDE + S::tile::slot(tr, c)) * 8;
    rows_ok = 0;
    KD_UNROLL
    for (int j = 0; j < PER; j++)
      if (r0 + tr + j * DR < rows) rows_ok |= 1 << j;
    const int64_t r = rows_ok ? r0 + tr : 0;
    p = w.data + r * w.row_bytes + kpos * BITS / 8;
    sp = w.scales + r * w.row_blocks + kpos / KE_MX_BLOCK;
    data_step = DR * w.row_bytes;
    scale_step = DR * w.row_blocks;
    klen = k_len;
    k0 = 0;
    aligned = w.aligned;
  }

  __device__ __forceinline__ void fetch(uint16_t *) {
    KD_UNROLL
    for (int j = 0; j < PER; j++) {
      raw[j][0] = raw[j][1] = 0u;
      sc[j] = 127u; /* code 0 at unit scale: +0 */
      if (!(rows_ok >> j & 1) || k0 + kpos >= klen) continue;
      const uint8_t *q = p + j * data_step;
      sc[j] = sp[j * scale_step];
      if constexpr (BITS == 4) {
        if (aligned) {
#if defined(KILN_BACKEND_HOST)
          memcpy(&raw[j][0], q, 4);
#else
          raw[j][0] = *(const uint32_t *)q;
#endif
        } else {
          KD_UNROLL
          for (int i = 0; i < 4; i++) raw[j][0] |= (uint32_t)q[i] << (8 * i);
        }
      } else if (aligned) {
        uint16_t h[3];
#if defined(KILN_BACKEND_HOST)
        memcpy(h, q, 6);
#else
        KD_UNROLL
        for (int i = 0; i < 3; i++) h[i] = ((const uint16_t *)q)[i];
#endif
        raw[j][0] = (uint32_t)h[0] | (uint32_t)h[1] << 16;
        raw[j][1] = h[2];
      } else {
        KD_UNROLL
        for (int i = 0; i < 6; i++)
          raw[j][i / 4] |= (uint32_t)q[i] << (8 * (i % 4));
      }
    }
    p += BK * BITS / 8;
    sp += BK / KE_MX_BLOCK;
    k0 += BK;
  }

  __device__ __forceinline__ void land(uint16_t *slot) {
    const float *table = lut();
    KD_UNROLL
    for (int j = 0; j < PER; j++) {
      const unsigned s = sc[j];
      const bool fast = s >= 5u && s <= 254u;
      const float mul = kd_bits_f32((fast ? s : 127u) << 23);
      uint32_t out[4];
      KD_UNROLL
      for (int e = 0; e < 8; e += 2) {
        uint32_t bits[2];
        KD_UNROLL
        for (int h = 0; h < 2; h++) {
          const int bit = (e + h) * BITS, word = bit / 32, sh = bit % 32;
          uint32_t u = raw[j][word] >> sh;
          if (sh + BITS > 32) u |= raw[j][word + 1] << (32 - sh);
          const unsigned code = u & ((1u << BITS) - 1u);
          const float v = fast ? table[code] * mul : kd_mx_decode<F>(code, s);
          bits[h] = kd_f32_bits(v) >> 16; /* exact: see above */
        }
        out[e / 2] = bits[0] | bits[1] << 16;
      }
      kd_gemm_mma_sts16(slot + off + j * DR * S::tile::STRIDE * 8,
                        make_uint4(out[0], out[1], out[2], out[3]));
    }
  }
};

#endif
