/* Matrix instructions of the GPUs, executed lane by lane on the host.
 *
 * kernels/arch/mma.h (the matrix-core layer) calls the real instructions on a
 * GPU (NVIDIA's ldmatrix and mma.sync, AMD's MFMA) and these functions on
 * the host. Each one has the instruction's own contract: it is executed by
 * every lane of a whole warp of the instruction's width, each lane passes
 * its own registers, and each lane gets back exactly the elements that the
 * vendor's fragment tables give that lane. So a kernel whose fragment
 * indexing is wrong computes the wrong result here as it would on the GPU.
 * The lanes' registers meet through kemu__warp_gather (launch.cc); the
 * first lane to read them converts the warp's whole a and b to floating
 * point once, into the warp's scratch (kemu__warp_scratch), and every lane
 * then takes its rows and columns from there: the same values as each
 * lane converting its own, at an eighth of the work.
 *
 * 16-bit elements travel as raw patterns, two to a 32-bit register, the
 * lower-numbered element in the low half (as on both vendors); Cvt turns a
 * pattern into a float (the caller's f16 or bf16 conversion). Products of
 * 16-bit values are exact in f32. How they meet the accumulator is each
 * vendor's: NVIDIA's mma.sync adds its 16 products and the accumulator in
 * one step whose result is truncated to f32 (kemu__nv_step, the published
 * models of the tensor cores; docs/kernels-gemm.md, GEMM, Tolerances), so the
 * error of a long sum into one accumulator shows here as on the GPU; the
 * MFMA sums in k order with fused multiply-add (AMD's rounding is not
 * modelled).
 */
#ifndef KILN_MATRIX_ON_HOST_H
#define KILN_MATRIX_ON_HOST_H

#include <math.h>
#include <stdint.h>
#include <string.h>

[[noreturn]] void kemu__bad_warp(const char *op, int needs);

inline void kemu__require_warp(const char *op, int width) {
  if (warpSize != width) kemu__bad_warp(op, width);
}

/* Whether every product of two of these values is exact in f32 and normal
 * (or zero): then acc + a * b rounds once, exactly as fmaf(a, b, acc), and
 * needs no call. Products of 16-bit values have at most 22 significant bits,
 * so only the range can fail (bf16's); NaN fails the test too. */
inline bool kemu__plain_products(const float *x, int n) {
  for (int i = 0; i < n; i++) {
    const float m = fabsf(x[i]);
    if (!(m <= 0x1p62f && (m >= 0x1p-62f || m == 0.0f))) return false;
  }
  return true;
}

/* d[i] += sum over k of a_i[k] * b_i[k] in k order, one rounding per term
 * (fused multiply-add). */
inline float kemu__dot16(float acc, const float *a, const float *b,
                         bool plain) {
  if (plain)
    for (int k = 0; k < 16; k++) acc = acc + a[k] * b[k];
  else
    for (int k = 0; k < 16; k++) acc = fmaf(a[k], b[k], acc);
  return acc;
}

/* One mma.sync step of an f32 accumulator: acc plus 16 exact products,
 * summed exactly (double holds any such sum of values within 2^29 of each
 * other's magnitude; smaller terms fall below f32's precision as the unit
 * drops them), rounded to f32 toward zero. An overflow stays infinite and
 * NaN stays NaN. */
inline float kemu__toward_zero(double s) {
  float f = (float)s;
  if (isfinite(f) && fabs((double)f) > fabs(s)) {
    /* One step toward zero, as nextafterf(f, 0) (f is not zero here). */
    uint32_t u;
    memcpy(&u, &f, 4);
    u--;
    memcpy(&f, &u, 4);
  }
  return f;
}
inline float kemu__nv_step(float acc, const float *a, const float *b) {
  double s = acc;
  for (int k = 0; k < 16; k++) s += (double)a[k] * (double)b[k];
  return kemu__toward_zero(s);
}

/* Element e (0 or 1) of a register holding two 16-bit patterns. */
inline uint16_t kemu__half_of(uint32_t reg, int e) {
  return (uint16_t)(e ? reg >> 16 : reg & 0xffffu);
}
inline uint32_t kemu__pack_halves(uint16_t lo, uint16_t hi) {
  return (uint32_t)lo | (uint32_t)hi << 16;
}

/* ---- NVIDIA (warp of 32) ------------------------------------------------- */

/* ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16. Lane l supplies the
 * address of row l % 8 of matrix l / 8 (eight contiguous 16-bit elements).
 * Without trans, lane l receives in out[q] the elements (l / 4, 2 (l % 4))
 * and (l / 4, 2 (l % 4) + 1) of matrix q; with trans, the elements
 * (2 (l % 4), l / 4) and (2 (l % 4) + 1, l / 4). */
inline void kemu_ldmatrix_x4(uint32_t out[4], const void *row, bool trans) {
  kemu__require_warp("ldmatrix", 32);
  const unsigned char *t = kemu__warp_gather("ldmatrix", &row, sizeof row);
  const unsigned int l = kemu__lane;
  for (int q = 0; q < 4; q++) {
    uint16_t e[2];
    for (int h = 0; h < 2; h++) {
      const unsigned int r = trans ? 2 * (l % 4) + h : l / 4;
      const unsigned int c = trans ? l / 4 : 2 * (l % 4) + h;
      const void *addr;
      memcpy(&addr, t + (8 * q + r) * KEMU__GATHER_BYTES, sizeof addr);
      memcpy(&e[h], (const unsigned char *)addr + 2 * c, 2);
    }
    out[q] = kemu__pack_halves(e[0], e[1]);
  }
}

/* mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32:
 * d[16 x 8] += a[16 x 16] * b[16 x 8]. With g = l / 4 and t = l % 4, lane l
 * holds a (row g + 8 (r % 2), columns 2t + 8 (r / 2) + {0, 1}) in a[r],
 * b (rows 2t + 8 r + {0, 1}, column g) in b[r], and d (row g + 8 (i / 2),
 * column 2t + i % 2) in d[i]. */
template <class Cvt>
inline void kemu_mma_m16n8k16(float d[4], const uint32_t a[4],
                              const uint32_t b[2]) {
  kemu__require_warp("mma.m16n8k16", 32);
  uint32_t mine[6];
  memcpy(mine, a, 16);
  memcpy(mine + 4, b, 8);
  const unsigned char *t =
      kemu__warp_gather("mma.m16n8k16", mine, sizeof mine);
  /* The scratch: a's 16 rows, then b's 8 columns, 16 doubles each. */
  bool fill;
  double *m = static_cast<double *>(kemu__warp_scratch(&fill));
  if (fill) {
    auto half = [&](unsigned int lane, int r, int k) {
      uint32_t v;
      memcpy(&v, t + lane * KEMU__GATHER_BYTES + 4 * r, 4);
      return (double)Cvt::f32(kemu__half_of(v, k % 2));
    };
    for (int row = 0; row < 16; row++)
      for (int k = 0; k < 16; k++)
        m[16 * row + k] =
            half(4 * (row % 8) + (k % 8) / 2, (row / 8) + 2 * (k / 8), k);
    for (int col = 0; col < 8; col++)
      for (int k = 0; k < 16; k++)
        m[256 + 16 * col + k] = half(4 * col + (k % 8) / 2, 4 + k / 8, k);
  }
  /* This lane's two rows of a and two columns of b; the four sums run side
   * by side, each in k order as kemu__nv_step adds them. */
  const int g = (int)kemu__lane / 4, tq = (int)kemu__lane % 4;
  const double *r0 = m + 16 * g, *r1 = m + 16 * (g + 8);
  const double *c0 = m + 256 + 16 * (2 * tq), *c1 = c0 + 16;
  double s0 = d[0], s1 = d[1], s2 = d[2], s3 = d[3];
  for (int k = 0; k < 16; k++) {
    s0 += r0[k] * c0[k];
    s1 += r0[k] * c1[k];
    s2 += r1[k] * c0[k];
    s3 += r1[k] * c1[k];
  }
  d[0] = kemu__toward_zero(s0);
  d[1] = kemu__toward_zero(s1);
  d[2] = kemu__toward_zero(s2);
  d[3] = kemu__toward_zero(s3);
}

/* ---- AMD CDNA (wave of 64) ----------------------------------------------- */

/* v_mfma_f32_16x16x16f16 / v_mfma_f32_16x16x16bf16_1k: d[16 x 16] +=
 * a[16 x 16] * b[16 x 16]. Lane l holds a (row l % 16, columns
 * 4 (l / 16) + {0..3}) in a[0..1], b (rows 4 (l / 16) + {0..3}, column
 * l % 16) in b[0..1], and d (row 4 (l / 16) + i, column l % 16) in d[i]. */
template <class Cvt>
inline void kemu_mfma_16x16x16(float d[4], const uint32_t a[2],
                               const uint32_t b[2]) {
  kemu__require_warp("mfma.16x16x16", 64);
  uint32_t mine[4];
  memcpy(mine, a, 8);
  memcpy(mine + 2, b, 8);
  const unsigned char *t =
      kemu__warp_gather("mfma.16x16x16", mine, sizeof mine);
  /* The scratch: a's 16 rows, b's 16 columns, 16 floats each, then whether
   * every product is plain (the same answer for each lane's part, as a
   * plain product rounds as the fused one does). */
  bool fill;
  float *m = static_cast<float *>(kemu__warp_scratch(&fill));
  if (fill) {
    auto elem = [&](unsigned int lane, int r, int k) {
      uint32_t v;
      memcpy(&v, t + lane * KEMU__GATHER_BYTES + 4 * r, 4);
      return Cvt::f32(kemu__half_of(v, k % 2));
    };
    for (int i = 0; i < 16; i++)
      for (int k = 0; k < 16; k++) {
        m[16 * i + k] = elem((unsigned int)(i + 16 * (k / 4)), (k % 4) / 2, k);
        m[256 + 16 * i + k] =
            elem((unsigned int)(i + 16 * (k / 4)), 2 + (k % 4) / 2, k);
      }
    m[512] = kemu__plain_products(m, 512) ? 1.0f : 0.0f;
  }
  /* This lane's four rows of a and its column of b. */
  const int l = (int)kemu__lane;
  const float *bc = m + 256 + 16 * (l % 16);
  const bool plain = m[512] != 0.0f;
  for (int i = 0; i < 4; i++)
    d[i] = kemu__dot16(d[i], m + 16 * (4 * (l / 16) + i), bc, plain);
}

#endif
