/* HIP-on-CPU hiprand subset: seeded uniform and normal floats from
 * Philox4x32-10, for the engine's random test inputs.
 *
 * The stream for a seed is fixed: 32-bit word w is word w % 4 of the
 * Philox block for the 128-bit counter w / 4 under the key `seed`. A
 * uniform takes one word, a normal two (output e of a call: the words of
 * block e / 2). Each generate call continues where the previous one
 * stopped (rounded up to a whole block), as in hiprand and cuRAND, so two
 * buffers filled one after the other differ; setting the seed starts the
 * stream over. The numbers are not bit-identical to hiprand's or cuRAND's
 * (they lay out counters and draw normals differently), only equally good
 * and deterministic.
 *
 * Normals come from Marsaglia and Tsang's ziggurat with 256 layers: the 64
 * bits of a draw pick a layer (8 bits), a sign (1) and a point of the
 * layer (53 bits, a double's precision); in 98.5 % of draws the point lies
 * under the curve and is the result, a table look-up and a multiply where
 * Box-Muller takes a logarithm, a square root and a sine and cosine. The
 * other draws (the layers' edges and the tail beyond 3.654) take more
 * words from Philox blocks of their own counters {output, attempt, tag},
 * so every output is a function of the seed and its position alone. The
 * method is exact: the results are N(mean, stddev) rounded to float, the
 * tail unbounded (Box-Muller on 32-bit uniforms ends at 6.7 sigma).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <new>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KEMU__PHILOX_AVX2 1
#endif

#include "hip-on-host-impl.h"

struct kemu_rand_generator {
  unsigned long long seed;
  unsigned long long offset; /* next 32-bit word; a multiple of 4 */
  hipStream_t stream;        /* kept for the API; work is synchronous */
};

/* Random123's Philox4x32 with its standard constants, 10 rounds. */
void kemu__philox4x32_10(uint32_t ctr[4], const uint32_t key[2]) {
  const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  const uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  uint32_t k0 = key[0], k1 = key[1];
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  for (int round = 0; round < 10; round++) {
    if (round > 0) {
      k0 += W0;
      k1 += W1;
    }
    uint64_t p0 = (uint64_t)M0 * c0;
    uint64_t p1 = (uint64_t)M1 * c2;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
    c0 = n0;
    c1 = (uint32_t)p1;
    c2 = n2;
    c3 = (uint32_t)p0;
  }
  ctr[0] = c0;
  ctr[1] = c1;
  ctr[2] = c2;
  ctr[3] = c3;
}

void kemu__philox_batch_scalar(unsigned long long first,
                               const uint32_t key[2],
                               uint32_t out[4 * KEMU__PHILOX_BATCH]) {
  for (int j = 0; j < KEMU__PHILOX_BATCH; j++) {
    const unsigned long long block = first + (unsigned)j;
    uint32_t *c = out + 4 * j;
    c[0] = (uint32_t)block;
    c[1] = (uint32_t)(block >> 32);
    c[2] = 0;
    c[3] = 0;
    kemu__philox4x32_10(c, key);
  }
}

#if KEMU__PHILOX_AVX2
/* Eight blocks side by side, four to a vector: each 32-bit counter word in
 * the low half of a 64-bit lane, so that one vpmuludq makes four of the
 * rounds' 64-bit products. Two vectors per word keep the multiplier busy. */
__attribute__((target("avx2"))) static void
philox_batch_avx2(unsigned long long first, const uint32_t key[2],
                  uint32_t out[4 * KEMU__PHILOX_BATCH]) {
  const __m256i m0 = _mm256_set1_epi64x(0xD2511F53u);
  const __m256i m1 = _mm256_set1_epi64x(0xCD9E8D57u);
  const __m256i low = _mm256_set1_epi64x(0xffffffffu);
  __m256i c0[2], c1[2], c2[2], c3[2];
  for (int h = 0; h < 2; h++) {
    const __m256i block =
        _mm256_add_epi64(_mm256_set1_epi64x((long long)(first + 4u * h)),
                         _mm256_set_epi64x(3, 2, 1, 0));
    c0[h] = _mm256_and_si256(block, low);
    c1[h] = _mm256_srli_epi64(block, 32);
    c2[h] = _mm256_setzero_si256();
    c3[h] = _mm256_setzero_si256();
  }
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    const __m256i kk0 = _mm256_set1_epi64x(k0), kk1 = _mm256_set1_epi64x(k1);
    for (int h = 0; h < 2; h++) {
      const __m256i p0 = _mm256_mul_epu32(c0[h], m0);
      const __m256i p1 = _mm256_mul_epu32(c2[h], m1);
      c0[h] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p1, 32),
                                                c1[h]),
                               kk0);
      c2[h] = _mm256_xor_si256(_mm256_xor_si256(_mm256_srli_epi64(p0, 32),
                                                c3[h]),
                               kk1);
      c1[h] = _mm256_and_si256(p1, low);
      c3[h] = _mm256_and_si256(p0, low);
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int h = 0; h < 2; h++) {
    /* Per block the words as c0 | c1 << 32 and c2 | c3 << 32, then blocks
     * 0 and 1, 2 and 3 of the vector into place. */
    const __m256i a = _mm256_or_si256(c0[h], _mm256_slli_epi64(c1[h], 32));
    const __m256i b = _mm256_or_si256(c2[h], _mm256_slli_epi64(c3[h], 32));
    const __m256i even = _mm256_unpacklo_epi64(a, b); /* blocks 0, 2 */
    const __m256i odd = _mm256_unpackhi_epi64(a, b);  /* blocks 1, 3 */
    _mm256_storeu_si256((__m256i *)(out + 16 * h),
                        _mm256_permute2x128_si256(even, odd, 0x20));
    _mm256_storeu_si256((__m256i *)(out + 16 * h + 8),
                        _mm256_permute2x128_si256(even, odd, 0x31));
  }
}
#endif

void kemu__philox_batch(unsigned long long first, const uint32_t key[2],
                        uint32_t out[4 * KEMU__PHILOX_BATCH]) {
#if KEMU__PHILOX_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    philox_batch_avx2(first, key, out);
    return;
  }
#endif
  kemu__philox_batch_scalar(first, key, out);
}

namespace {

/* The ziggurat's layers (Marsaglia and Tsang, 2000, with 256 layers): x[i]
 * the right edge of layer i, f[i] = exp(-x[i]^2 / 2). Layer 0 is the base,
 * [0, x[0]) x [0, f(R)) with x[0] = V / f(R), holding the tail beyond
 * x[1] = R; layer i > 0 is [0, x[i]) x [f[i], f[i + 1]), and x[256] = 0.
 * Every layer has the area V, so a uniform layer and a uniform point of it
 * give a uniform point under the curve. */
enum { LAYERS = 256 };
const double ZIG_R = 3.6541528853610088, ZIG_V = 4.92867323399e-3;

struct zig_tables {
  double x[LAYERS + 1], f[LAYERS + 1];
  zig_tables() {
    x[1] = ZIG_R;
    f[1] = exp(-0.5 * ZIG_R * ZIG_R);
    x[0] = ZIG_V / f[1];
    f[0] = exp(-0.5 * x[0] * x[0]);
    for (int i = 1; i < LAYERS - 1; i++) {
      x[i + 1] = sqrt(-2.0 * log(ZIG_V / x[i] + f[i]));
      f[i + 1] = exp(-0.5 * x[i + 1] * x[i + 1]);
    }
    x[LAYERS] = 0.0;
    f[LAYERS] = 1.0;
  }
};

const zig_tables &zig() {
  static const zig_tables t;
  return t;
}

/* The point of a draw's layer: (0, 1) from 53 of its bits, times the
 * layer's width. */
inline double zig_abs(const zig_tables &z, uint64_t bits) {
  return ((double)(int64_t)(bits >> 11) + 0.5) * 0x1p-53 * z.x[bits & 0xff];
}

/* x with the draw's sign bit. */
inline double zig_signed(uint64_t bits, double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  u ^= (bits & 0x100) << 55;
  memcpy(&x, &u, sizeof u);
  return x;
}

/* (0, 1) from a word, for the rejection tests. */
inline double unit(uint32_t w) { return ((double)w + 0.5) * 0x1p-32; }

/* The draws whose first point was not inside its layer's rectangle: the
 * wedge test, the tail, and new attempts, on the words of Philox blocks
 * {output, attempt, tag} (never a counter of the main stream, whose last
 * two words are 0). */
__attribute__((noinline)) double zig_slow(const uint32_t key[2],
                                          unsigned long long output,
                                          uint64_t bits) {
  const zig_tables &z = zig();
  uint32_t attempt = 0;
  auto words = [&](uint32_t w[4]) {
    w[0] = (uint32_t)output;
    w[1] = (uint32_t)(output >> 32);
    w[2] = ++attempt;
    w[3] = 0x6e6f726du; /* "norm" */
    kemu__philox4x32_10(w, key);
  };
  for (;;) {
    const unsigned i = (unsigned)(bits & 0xff);
    const double x = zig_abs(z, bits);
    if (x < z.x[i + 1]) return zig_signed(bits, x);
    uint32_t w[4];
    words(w);
    if (i == 0) {
      /* Beyond R: Marsaglia's tail, R + t with t exponential of rate R
       * kept with probability exp(-t^2 / 2); two tries per block. */
      for (;;) {
        for (int p = 0; p < 4; p += 2) {
          const double t = -log(unit(w[p])) / ZIG_R, y = -log(unit(w[p + 1]));
          if (y + y >= t * t) return zig_signed(bits, ZIG_R + t);
        }
        words(w);
      }
    }
    /* The wedge between the rectangle and the curve. */
    if (z.f[i] + unit(w[0]) * (z.f[i + 1] - z.f[i]) < exp(-0.5 * x * x))
      return zig_signed(bits, x);
    bits = (uint64_t)w[2] << 32 | w[3];
  }
}

/* cuRAND's mapping to (0, 1]: never 0, so log() of it is finite. */
float to_uniform(uint32_t x) {
  const float two_m32 = 2.3283064365386963e-10f; /* 2^-32 */
  return (float)x * two_m32 + two_m32 * 0.5f;
}

hiprandStatus_t check_output(const kemu_rand_generator *g, const float *out,
                             size_t n) {
  if (!g || !kemu__generator_live(g)) return HIPRAND_STATUS_NOT_INITIALIZED;
  if (n > SIZE_MAX / sizeof(float) ||
      !kemu__device_range(out, n * sizeof(float)))
    return HIPRAND_STATUS_LAUNCH_FAILURE;
  return HIPRAND_STATUS_SUCCESS;
}

} // namespace

hiprandStatus_t hiprandCreateGenerator(hiprandGenerator_t *gen,
                                       hiprandRngType_t type) {
  if (!gen) return HIPRAND_STATUS_NOT_INITIALIZED;
  if (type != HIPRAND_RNG_PSEUDO_PHILOX4_32_10)
    return HIPRAND_STATUS_TYPE_ERROR;
  kemu_rand_generator *g =
      new (std::nothrow) kemu_rand_generator{0, 0, nullptr};
  if (!g || !kemu__generator_register(g, true)) {
    delete g;
    return HIPRAND_STATUS_ALLOCATION_FAILED;
  }
  *gen = g;
  return HIPRAND_STATUS_SUCCESS;
}

hiprandStatus_t hiprandDestroyGenerator(hiprandGenerator_t gen) {
  if (!gen || !kemu__generator_register(gen, false))
    return HIPRAND_STATUS_NOT_INITIALIZED;
  delete gen;
  return HIPRAND_STATUS_SUCCESS;
}

hiprandStatus_t hiprandSetStream(hiprandGenerator_t gen, hipStream_t stream) {
  if (!gen || !kemu__generator_live(gen)) return HIPRAND_STATUS_NOT_INITIALIZED;
  gen->stream = stream;
  return HIPRAND_STATUS_SUCCESS;
}

hiprandStatus_t hiprandSetPseudoRandomGeneratorSeed(hiprandGenerator_t gen,
                                                    unsigned long long seed) {
  if (!gen || !kemu__generator_live(gen)) return HIPRAND_STATUS_NOT_INITIALIZED;
  gen->seed = seed;
  gen->offset = 0;
  return HIPRAND_STATUS_SUCCESS;
}

hiprandStatus_t hiprandSetGeneratorOffset(hiprandGenerator_t gen,
                                          unsigned long long offset) {
  if (!gen || !kemu__generator_live(gen)) return HIPRAND_STATUS_NOT_INITIALIZED;
  /* Draws come four per Philox block; start at the block holding offset. */
  gen->offset = offset & ~3ull;
  return HIPRAND_STATUS_SUCCESS;
}

hiprandStatus_t hiprandGenerateUniform(hiprandGenerator_t gen, float *out,
                                       size_t n) {
  if (n == 0) return gen && kemu__generator_live(gen)
                         ? HIPRAND_STATUS_SUCCESS
                         : HIPRAND_STATUS_NOT_INITIALIZED;
  hiprandStatus_t st = check_output(gen, out, n);
  if (st != HIPRAND_STATUS_SUCCESS) return st;
  const uint32_t key[2] = {(uint32_t)gen->seed, (uint32_t)(gen->seed >> 32)};
  const unsigned long long first = gen->offset / 4;
  const size_t per_batch = 4 * KEMU__PHILOX_BATCH;
  for (size_t i = 0; i < n; i += per_batch) {
    uint32_t r[4 * KEMU__PHILOX_BATCH];
    kemu__philox_batch(first + i / 4, key, r);
    const size_t m = n - i < per_batch ? n - i : per_batch;
    for (size_t k = 0; k < m; k++) out[i + k] = to_uniform(r[k]);
  }
  gen->offset += (n + 3) & ~(size_t)3;
  return HIPRAND_STATUS_SUCCESS;
}

hiprandStatus_t hiprandGenerateNormal(hiprandGenerator_t gen, float *out,
                                      size_t n, float mean, float stddev) {
  if (n % 2 != 0) return HIPRAND_STATUS_LENGTH_NOT_MULTIPLE;
  if (n == 0) return gen && kemu__generator_live(gen)
                         ? HIPRAND_STATUS_SUCCESS
                         : HIPRAND_STATUS_NOT_INITIALIZED;
  hiprandStatus_t st = check_output(gen, out, n);
  if (st != HIPRAND_STATUS_SUCCESS) return st;
  const zig_tables &z = zig();
  const uint32_t key[2] = {(uint32_t)gen->seed, (uint32_t)(gen->seed >> 32)};
  /* Two words per output: output e of this call takes block first + e / 2,
   * and is output offset / 2 + e of the stream. */
  const unsigned long long first = gen->offset / 4, base = gen->offset / 2;
  const size_t per_batch = 2 * KEMU__PHILOX_BATCH;
  for (size_t i = 0; i < n; i += per_batch) {
    uint32_t r[4 * KEMU__PHILOX_BATCH];
    kemu__philox_batch(first + i / 2, key, r);
    const size_t m = n - i < per_batch ? n - i : per_batch;
    for (size_t k = 0; k < m; k++) {
      const uint64_t bits = (uint64_t)r[2 * k] << 32 | r[2 * k + 1];
      const double x = zig_abs(z, bits);
      const double v = __builtin_expect(x < z.x[(bits & 0xff) + 1], 1)
                           ? zig_signed(bits, x)
                           : zig_slow(key, base + i + k, bits);
      out[i + k] = (float)((double)mean + (double)stddev * v);
    }
  }
  gen->offset += 2 * n;
  return HIPRAND_STATUS_SUCCESS;
}
