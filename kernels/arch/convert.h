/* f16 and bf16 bit-pattern conversions, shared by device code and the
 * engine's C sources so the references and the kernels round identically.
 *
 * Round to nearest, ties to even; NaN stays NaN (quiet), overflow goes to
 * infinity, f16 subnormals are exact. Written on integers so the same code
 * compiles as C11, as host-emulated C++, and for both GPU vendors.
 */
#ifndef KILN_KERNELS_ARCH_CONVERT_H
#define KILN_KERNELS_ARCH_CONVERT_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define KD_HOSTDEV __host__ __device__ __forceinline__
#else
#define KD_HOSTDEV static inline
#endif

KD_HOSTDEV uint32_t kd_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}
KD_HOSTDEV float kd_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

KD_HOSTDEV float kd_bf16_bits_to_f32(uint16_t b) {
  return kd_bits_f32((uint32_t)b << 16);
}

KD_HOSTDEV uint16_t kd_f32_to_bf16_bits(float f) {
  uint32_t u = kd_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

KD_HOSTDEV float kd_f16_bits_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1fu) return kd_bits_f32(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    /* Subnormal (or zero): value = man * 2^-24, exact in f32. */
    float v = (float)man * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return kd_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

KD_HOSTDEV uint16_t kd_f32_to_f16_bits(float f) {
  uint32_t u = kd_f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t au = u & 0x7fffffffu;
  if (au > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);      /* NaN */
  if (au >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);     /* >= 65520 */
  if (au < 0x38800000u) {
    /* Result is an f16 subnormal or zero: round au * 2^24 to an integer. */
    uint32_t e = au >> 23;
    if (e < 102u) return sign;               /* below half the smallest */
    uint32_t m = (au & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e;               /* 14 .. 24 */
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
  }
  /* Normal: rebias the exponent, round the 13 dropped mantissa bits. */
  uint32_t r = au - 0x38000000u;
  r += 0xfffu + ((r >> 13) & 1u);
  return (uint16_t)(sign | (r >> 13));
}

#endif
