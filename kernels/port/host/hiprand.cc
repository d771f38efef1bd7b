/* HIP-on-CPU hiprand subset: seeded uniform and normal floats from
 * Philox4x32-10, for the engine's random test inputs.
 *
 * The stream for a seed is fixed: 32-bit output e is word e % 4 of the
 * Philox block for the 128-bit counter e / 4 under the key `seed`. Each
 * generate call continues where the previous one stopped (rounded up to a
 * whole block), as in hiprand and cuRAND, so two buffers filled one after
 * the other differ; setting the seed starts the stream over. The numbers are
 * not bit-identical to hiprand's or cuRAND's (they lay out counters
 * differently), only equally good and deterministic.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <new>

#include "hip-on-host-impl.h"

struct kemu_rand_generator {
  unsigned long long seed;
  unsigned long long offset; /* next 32-bit output; a multiple of 4 */
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

namespace {

void philox_block(unsigned long long seed, unsigned long long block,
                  uint32_t out[4]) {
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  out[0] = (uint32_t)block;
  out[1] = (uint32_t)(block >> 32);
  out[2] = 0;
  out[3] = 0;
  kemu__philox4x32_10(out, key);
}

/* cuRAND's mapping to (0, 1]: never 0, so log() of it is finite. */
float to_uniform(uint32_t x) {
  const float two_m32 = 2.3283064365386963e-10f; /* 2^-32 */
  return (float)x * two_m32 + two_m32 * 0.5f;
}

/* The same mapping in double precision for Box-Muller, in (0, 1). */
double to_uniform_d(uint32_t x) {
  const double two_m32 = 2.3283064365386963e-10;
  return (double)x * two_m32 + two_m32 * 0.5;
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
  const unsigned long long first = gen->offset / 4;
  for (size_t i = 0; i < n; i += 4) {
    uint32_t r[4];
    philox_block(gen->seed, first + i / 4, r);
    for (size_t k = 0; k < 4 && i + k < n; k++) out[i + k] = to_uniform(r[k]);
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
  const double two_pi = 6.283185307179586476925286766559;
  const unsigned long long first = gen->offset / 4;
  for (size_t i = 0; i < n; i += 4) {
    uint32_t r[4];
    philox_block(gen->seed, first + i / 4, r);
    /* Box-Muller: each pair of uniforms gives two independent normals.
     * The radius in double keeps the tails (u near 0 and 1) exact; the
     * angle's sine and cosine in float are within an ulp of the float
     * results, at a third of the cost of double sincos, which was most of
     * the time a test spent drawing its inputs. */
    for (size_t k = 0; k < 4 && i + k < n; k += 2) {
      const double radius = sqrt(-2.0 * log(to_uniform_d(r[k])));
      float sin_a, cos_a;
      sincosf((float)(two_pi * to_uniform_d(r[k + 1])), &sin_a, &cos_a);
      out[i + k] = (float)(mean + stddev * radius * cos_a);
      out[i + k + 1] = (float)(mean + stddev * radius * sin_a);
    }
  }
  gen->offset += (n + 3) & ~(size_t)3;
  return HIPRAND_STATUS_SUCCESS;
}
