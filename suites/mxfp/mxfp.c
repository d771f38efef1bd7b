/* MXFP suite: the OCP MX v1.0 element formats and E8M0 scales, decoded on
 * the device exhaustively (every code under scales from 2^-127 to 2^127 and
 * NaN) and from random packed bytes at odd offsets; the reference encoder's
 * round trips (nearest value, ties to even, subnormals, saturation, special
 * blocks) and error bounds; the documented packing, byte by byte; reads that
 * stay inside the data (guard bytes); and the fused MX GEMM against the
 * double reference and against dequantise-then-ke_gemm.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/gemm-check.h"
#include "kiln/kernels.h"
#include "kiln/test.h"
#include "mxfp-check.h"

/* ---- The formats ------------------------------------------------------------- */

/* The reference decoder against the spec's tables: every code, both signs,
 * the extreme scales, and NaN for scale 0xFF. */
START_TEST(format_tables) {
  for (size_t fi = 0; fi < 3; fi++) {
    ke_mxfp_format f = mx_formats[fi];
    format_facts ff = facts(f);
    unsigned half = 1u << (ff.bits - 1);
    ck_assert_int_eq(ke_mxfp_element_bits(f), ff.bits);
    ck_assert_double_eq(ff.positive[half - 1], ff.max_normal);
    for (unsigned code = 0; code < 2 * half; code++) {
      double mag = ff.positive[code % half];
      double want = code >= half ? -mag : mag;
      static const unsigned scales[] = {0, 1, 100, 127, 128, 200, 254};
      for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
        double got = ke_mxfp_value_ref(f, code, scales[s]);
        double expect = ldexp(want, (int)scales[s] - 127);
        ck_assert_msg(got == expect && signbit(got) == signbit(expect),
                      "%s code 0x%x scale %u: %g, spec says %g",
                      ke_mxfp_format_name(f), code, scales[s], got, expect);
      }
      ck_assert_msg(isnan(ke_mxfp_value_ref(f, code, KE_MX_SCALE_NAN)),
                    "%s code 0x%x: scale 0xFF must be NaN",
                    ke_mxfp_format_name(f), code);
    }
  }
}
END_TEST

/* Every code of a format under scales 2^-127 .. 2^127 and NaN, decoded on
 * the device to f32, f16 and bf16, exactly as the reference rounded once to
 * the dtype (so 2^128 and beyond is Inf in f32, and E3M2's 2^-131 an f32
 * subnormal). Row r's three blocks take scales r, r + 5 and r + 10 of the
 * list, so each code meets every scale; three blocks is an odd count. */
static void check_decode_all(ke_mxfp_format f) {
  static const unsigned kScales[] = {0,   1,   2,   100, 126, 127,
                                     128, 150, 200, 253, 254, 255};
  const int64_t rows = 12, cols = 96;
  const int bits = ke_mxfp_element_bits(f);
  const unsigned ncodes = 1u << bits;
  ke_mxfp_matrix w = mx_host(f, rows, cols);
  uint8_t *data = w.data, *scales = w.scales;
  const int64_t row_bytes = cols * bits / 8;
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t i = 0; i < cols; i++)
      pack_code(data + r * row_bytes, bits, i, (unsigned)i % ncodes);
    for (int64_t j = 0; j < 3; j++)
      scales[r * 3 + j] = (uint8_t)kScales[(r + 5 * j) % rows];
  }
  mx_device d;
  mx_upload(&d, &w, 0, 0, 0);
  check_dequant("all_codes", &d, &w, KE_F32, 0);
  check_dequant("all_codes", &d, &w, KE_F16, 0);
  check_dequant("all_codes", &d, &w, KE_BF16, 0);
  mx_device_free(&d);
  mx_host_free(&w);
}

START_TEST(decode_e2m1) { check_decode_all(KE_MXFP4_E2M1); }
END_TEST

START_TEST(decode_e2m3) { check_decode_all(KE_MXFP6_E2M3); }
END_TEST

START_TEST(decode_e3m2) { check_decode_all(KE_MXFP6_E3M2); }
END_TEST

/* ---- Round trips --------------------------------------------------------------- */

/* Random normal blocks, each shifted by its own power of two from 2^-140
 * (the scale clamps at 2^-127, so small elements go subnormal or to zero)
 * to 2^120, some with an outlier that pushes the rest into the element
 * subnormals: quantised by the reference, dequantised on the device
 * (exactly the reference decode), and each element the nearest value. */
static void check_roundtrip(ke_mxfp_format f) {
  const int64_t rows = 7, cols = 160; /* 5 blocks per row */
  double *x = mx_normal_doubles(rows, cols);
  uint64_t rng = kt_seed();
  for (int64_t b = 0; b < rows * cols / KE_MX_BLOCK; b++) {
    double *xb = x + b * KE_MX_BLOCK;
    const int shift = -140 + (int)(rng_next(&rng) % 261);
    if (b % 3 == 1) xb[rng_next(&rng) % KE_MX_BLOCK] *= 64.0;
    for (int i = 0; i < KE_MX_BLOCK; i++) xb[i] = ldexp(xb[i], shift);
  }
  ke_mxfp_matrix w = mx_host(f, rows, cols);
  kt_assert_ok(ke_mxfp_quantize_ref(x, &w));
  double *dec = malloc((size_t)(rows * cols) * sizeof *dec);
  ck_assert_ptr_nonnull(dec);
  kt_assert_ok(ke_mxfp_dequant_ref(&w, dec));
  const double worst = check_nearest(f, x, &w, dec);
  char note[64];
  snprintf(note, sizeof note, "%.3f", worst);
  kt_note("worst_error_over_bound", note);

  mx_device d;
  mx_upload(&d, &w, 0, 0, 0);
  check_dequant("roundtrip", &d, &w, KE_F32, 0);
  check_dequant("roundtrip", &d, &w, KE_BF16, 3);
  mx_device_free(&d);
  free(dec);
  free(x);
  mx_host_free(&w);
}

START_TEST(roundtrip_e2m1) { check_roundtrip(KE_MXFP4_E2M1); }
END_TEST

START_TEST(roundtrip_e2m3) { check_roundtrip(KE_MXFP6_E2M3); }
END_TEST

START_TEST(roundtrip_e3m2) { check_roundtrip(KE_MXFP6_E3M2); }
END_TEST

/* Blocks the spec singles out: all zero (scale byte 0, the minimum), NaN
 * and +-Inf (scale 0xFF: no element format here has Inf), values so small
 * that the shared exponent clamps at -127, doubles so large that it passes
 * 127 (NaN, as the spec's reference code does), and the f32 maximum. */
START_TEST(roundtrip_special_blocks) {
  for (size_t fi = 0; fi < 3; fi++) {
    ke_mxfp_format f = mx_formats[fi];
    const format_facts ff = facts(f);
    const char *name = ke_mxfp_format_name(f);
    double x[KE_MX_BLOCK];
    unsigned codes[KE_MX_BLOCK];
    const unsigned sign = 1u << (ff.bits - 1);

    for (int i = 0; i < KE_MX_BLOCK; i++) x[i] = 0.0;
    x[3] = -0.0;
    ck_assert_uint_eq(quantize_block(f, x, codes), 0);
    for (int i = 0; i < KE_MX_BLOCK; i++)
      ck_assert_msg(codes[i] == (i == 3 ? sign : 0u),
                    "%s zero block: code[%d] = 0x%x", name, i, codes[i]);

    const double specials[] = {NAN, INFINITY, -INFINITY};
    for (size_t k = 0; k < 3; k++) {
      for (int i = 0; i < KE_MX_BLOCK; i++) x[i] = 1.0 + i;
      x[17] = specials[k];
      ck_assert_msg(quantize_block(f, x, codes) == KE_MX_SCALE_NAN,
                    "%s: a block holding %g must get scale 0xFF", name,
                    specials[k]);
    }

    /* 2^-140 * (1 .. 32): shared exponent clamps at -127 (byte 0) and
     * each element is x * 2^127 rounded, so 2^-140 * 32 = 2^-8 (E3M2:
     * below 0.0625 / 2, so 0; E2M1/E2M3 too: below their half subnormal).*/
    for (int i = 0; i < KE_MX_BLOCK; i++) x[i] = ldexp(1.0 + i, -140);
    ck_assert_uint_eq(quantize_block(f, x, codes), 0);
    for (int i = 0; i < KE_MX_BLOCK; i++)
      ck_assert_msg(codes[i] == 0, "%s: 2^-140 * %d must round to 0, code "
                                   "0x%x", name, 1 + i, codes[i]);
    /* At the clamp, with the value big enough to be the min subnormal. */
    x[0] = ldexp(ff.positive[1], -127);
    ck_assert_uint_eq(quantize_block(f, x, codes), 0);
    ck_assert_uint_eq(codes[0], 1);

    for (int i = 0; i < KE_MX_BLOCK; i++) x[i] = ldexp(1.0, 200);
    ck_assert_msg(quantize_block(f, x, codes) == KE_MX_SCALE_NAN,
                  "%s: shared exponent above 127 must give a NaN block",
                  name);

    for (int i = 0; i < KE_MX_BLOCK; i++) x[i] = i % 2 ? FLT_MAX : -1.0;
    const unsigned s = quantize_block(f, x, codes);
    ck_assert_uint_eq(s, (unsigned)(127 - ff.emax + 127));
    ck_assert_uint_eq(codes[1], sign - 1); /* saturated to max normal */
  }
}
END_TEST

/* Element subnormals: a block whose max normal fixes the scale at 2^0, with
 * every subnormal value, the midpoints between them (ties: to the even
 * code) and half the smallest (a tie with zero: to zero). Then the same
 * codes under scale byte 0, decoded on the device: 2^-127 times a
 * subnormal is an f32 subnormal (down to 2^-131) and must come out exact. */
START_TEST(subnormals) {
  for (size_t fi = 0; fi < 3; fi++) {
    ke_mxfp_format f = mx_formats[fi];
    const format_facts ff = facts(f);
    const char *name = ke_mxfp_format_name(f);
    const double q = ldexp(1.0, ff.emin - ff.mbits); /* subnormal step */
    const unsigned nsub = 1u << ff.mbits;            /* codes 0 .. nsub-1 */
    double x[KE_MX_BLOCK];
    unsigned want[KE_MX_BLOCK], codes[KE_MX_BLOCK];
    int n = 0;
    x[n] = ff.max_normal;
    want[n++] = (1u << (ff.bits - 1)) - 1u;
    for (unsigned m = 1; m < nsub; m++) {
      x[n] = m * q; /* exactly representable */
      want[n++] = m;
      x[n] = -(m * q);
      want[n++] = m | 1u << (ff.bits - 1);
      x[n] = (m + 0.5) * q; /* midpoint: to the even of m, m + 1 */
      want[n++] = m % 2 ? m + 1 : m;
    }
    x[n] = 0.5 * q; /* tie between 0 and the smallest: 0 */
    want[n++] = 0;
    x[n] = 0.49 * q;
    want[n++] = 0;
    x[n] = 0.51 * q;
    want[n++] = 1;
    while (n < KE_MX_BLOCK) {
      x[n] = q;
      want[n++] = 1;
    }
    ck_assert_uint_eq(quantize_block(f, x, codes), 127);
    for (int i = 0; i < KE_MX_BLOCK; i++)
      ck_assert_msg(codes[i] == want[i], "%s: x = %g gave code 0x%x, want "
                                         "0x%x", name, x[i], codes[i],
                    want[i]);

    /* The same codes at scale byte 0 (2^-127), and at 127, on the device. */
    ke_mxfp_matrix w = mx_host(f, 2, KE_MX_BLOCK);
    const int64_t row_bytes = KE_MX_BLOCK * ff.bits / 8;
    for (int r = 0; r < 2; r++)
      for (int i = 0; i < KE_MX_BLOCK; i++)
        pack_code((uint8_t *)w.data + r * row_bytes, ff.bits, i, want[i]);
    ((uint8_t *)w.scales)[0] = 0;
    ((uint8_t *)w.scales)[1] = 127;
    mx_device d;
    mx_upload(&d, &w, 0, 0, 0);
    check_dequant("subnormals", &d, &w, KE_F32, 0);
    check_dequant("subnormals", &d, &w, KE_BF16, 0);
    check_dequant("subnormals", &d, &w, KE_F16, 0);
    mx_device_free(&d);
    mx_host_free(&w);
  }
}
END_TEST

/* Saturation and ties in the normal range, scale fixed at 2^0 by a value in
 * the top binade: beyond the max normal goes to +-max, never past it;
 * halfway cases go to the even code. */
START_TEST(saturation) {
  typedef struct { double x; double want; } pair;
  static const pair e2m1[] = {{6.0, 6.0},   {6.5, 6.0},  {7.99, 6.0},
                              {-7.99, -6.0}, {5.0, 4.0}, {3.5, 4.0},
                              {2.5, 2.0},   {1.25, 1.0}, {0.75, 1.0},
                              {0.25, 0.0},  {5.01, 6.0}, {-4.99, -4.0}};
  static const pair e2m3[] = {{7.5, 7.5},   {7.6, 7.5},   {7.99, 7.5},
                              {-7.99, -7.5}, {7.25, 7.0}, {6.75, 7.0},
                              {4.25, 4.0},  {1.0625, 1.0}, {0.0625, 0.0},
                              {0.1875, 0.25}};
  static const pair e3m2[] = {{28.0, 28.0}, {29.0, 28.0}, {31.99, 28.0},
                              {-31.99, -28.0}, {26.0, 24.0}, {22.0, 24.0},
                              {18.0, 16.0}, {0.03125, 0.0}, {0.09375, 0.125},
                              {17.0, 16.0}};
  const pair *tables[] = {e2m1, e2m3, e3m2};
  const size_t sizes[] = {sizeof e2m1 / sizeof *e2m1,
                          sizeof e2m3 / sizeof *e2m3,
                          sizeof e3m2 / sizeof *e3m2};
  for (size_t fi = 0; fi < 3; fi++) {
    ke_mxfp_format f = mx_formats[fi];
    double x[KE_MX_BLOCK], dec[KE_MX_BLOCK];
    for (int i = 0; i < KE_MX_BLOCK; i++)
      x[i] = i < (int)sizes[fi] ? tables[fi][i].x : 0.0;
    ke_mxfp_matrix w = mx_host(f, 1, KE_MX_BLOCK);
    kt_assert_ok(ke_mxfp_quantize_ref(x, &w));
    ck_assert_uint_eq(((uint8_t *)w.scales)[0], 127);
    kt_assert_ok(ke_mxfp_dequant_ref(&w, dec));
    for (size_t i = 0; i < sizes[fi]; i++)
      ck_assert_msg(dec[i] == tables[fi][i].want,
                    "%s: %g quantised to %g, want %g", ke_mxfp_format_name(f),
                    tables[fi][i].x, dec[i], tables[fi][i].want);
    mx_host_free(&w);
  }
}
END_TEST

/* ---- Packing -------------------------------------------------------------------- */

/* The documented layout, byte by byte, from the reference encoder: MXFP4
 * byte i = code(2i) | code(2i + 1) << 4; MXFP6 bytes 3g .. 3g + 2 hold
 * codes c0 .. c3 of elements 4g .. 4g + 3 as the little-endian word
 * c0 | c1 << 6 | c2 << 12 | c3 << 18; rows back to back; a scale per
 * block, row-major. */
START_TEST(packing_layout) {
  for (size_t fi = 0; fi < 3; fi++) {
    ke_mxfp_format f = mx_formats[fi];
    const format_facts ff = facts(f);
    const int64_t rows = 2, cols = 64;
    const unsigned ncodes = 1u << ff.bits;
    unsigned code[2 * 64];
    double x[2 * 64];
    for (int i = 0; i < rows * cols; i++) {
      /* Element 0 of each block is the max normal, so the scale is 2^0
       * and every code's value is exactly representable. */
      code[i] = i % 32 == 0 ? ncodes / 2 - 1 : (unsigned)(i * 7 + 3) % ncodes;
      x[i] = ke_mxfp_value_ref(f, code[i], 127);
    }
    ke_mxfp_matrix w = mx_host(f, rows, cols);
    kt_assert_ok(ke_mxfp_quantize_ref(x, &w));
    const uint8_t *b = w.data, *s = w.scales;
    for (int j = 0; j < 4; j++) ck_assert_uint_eq(s[j], 127);
    ck_assert_uint_eq(ke_mxfp_data_bytes(f, rows, cols),
                      (size_t)(rows * cols * ff.bits / 8));
    ck_assert_uint_eq(ke_mxfp_scale_bytes(rows, cols), 4);
    if (ff.bits == 4) {
      for (int i = 0; i < rows * cols / 2; i++)
        ck_assert_msg(b[i] == (code[2 * i] | code[2 * i + 1] << 4),
                      "e2m1 byte %d is 0x%02x, want 0x%02x", i, b[i],
                      code[2 * i] | code[2 * i + 1] << 4);
    } else {
      for (int g = 0; g < rows * cols / 4; g++) {
        const unsigned *c = code + 4 * g;
        const unsigned want[3] = {(c[0] | c[1] << 6) & 0xFFu,
                                  (c[1] >> 2 | c[2] << 4) & 0xFFu,
                                  (c[2] >> 4 | c[3] << 2) & 0xFFu};
        for (int t = 0; t < 3; t++)
          ck_assert_msg(b[3 * g + t] == want[t],
                        "%s group %d byte %d is 0x%02x, want 0x%02x",
                        ke_mxfp_format_name(f), g, t, b[3 * g + t], want[t]);
      }
    }
    mx_host_free(&w);
  }
}
END_TEST

/* Random bytes are valid MX data (every code is a value, every scale byte
 * a scale or NaN): device decode against the reference for odd block
 * counts, odd row counts, data and scales at odd byte offsets, and output
 * rows wider than the matrix. */
START_TEST(packing_offsets) {
  static const int64_t kCols[] = {32, 96, 160, 224};
  static const int64_t kRows[] = {1, 3, 7};
  uint64_t rng = kt_seed();
  for (size_t fi = 0; fi < 3; fi++)
    for (size_t ci = 0; ci < 4; ci++)
      for (size_t ri = 0; ri < 3; ri++) {
        ke_mxfp_format f = mx_formats[fi];
        ke_mxfp_matrix w = mx_host(f, kRows[ri], kCols[ci]);
        const size_t nd = ke_mxfp_data_bytes(f, w.rows, w.cols);
        const size_t ns = ke_mxfp_scale_bytes(w.rows, w.cols);
        for (size_t i = 0; i < nd; i++)
          ((uint8_t *)w.data)[i] = (uint8_t)rng_next(&rng);
        for (size_t i = 0; i < ns; i++) /* scales near 127, a few NaN */
          ((uint8_t *)w.scales)[i] =
              i % 7 == 3 ? 0xFF : (uint8_t)(107 + rng_next(&rng) % 41);
        const size_t offset = 1 + (2 * (ci + ri)) % 5; /* 1 .. 5 bytes */
        mx_device d;
        mx_upload(&d, &w, offset, offset + 1, 0x5a);
        check_dequant("offsets", &d, &w, ri == 1 ? KE_F16 : KE_F32,
                      (int64_t)ci);
        mx_device_free(&d);
        mx_host_free(&w);
      }
}
END_TEST

/* The kernels read only the matrix's own bytes. Each format's data and
 * scales sit between guard bytes of 0x00, then 0xFF, then random: a kernel
 * that read a byte past its block (the original 6-bit kernel did) and let
 * it reach a value would change the results, which must equal the
 * reference each time. Then with no guard at all, the last block ending at
 * the end of its allocation: on the host build under ASan (CI) and under
 * compute-sanitizer a read past it is reported as an error. */
/* One X dtype of guard_bytes: f32 X reads W through the SIMT kernel's
 * loads, bf16 X through the matrix-core staging. */
static void guard_run(const ke_mxfp_matrix *w, ke_dtype xt, uint64_t *rng) {
  int64_t xs[2] = {3, w->cols};
  ke_tensor x;
  kt_alloc(&x, xt, 2, xs);
  kt_fill_normal(&x, 0.0f, 1.0f);
  double *first = NULL;
  const int guards[] = {0x00, 0xFF, (int)(rng_next(rng) & 0xFF), -1};
  for (size_t g = 0; g < 4; g++) {
    mx_device d;
    if (guards[g] < 0) mx_upload(&d, w, 0, 0, 0);
    else mx_upload(&d, w, 64, 64, guards[g]);
    check_dequant("guarded", &d, w, KE_F32, 0);
    double *y = mx_gemm_doubles(&x, &d, KE_F32);
    if (!first) {
      first = y;
    } else {
      for (int64_t i = 0; i < 3 * w->rows; i++)
        ck_assert_msg(memcmp(&y[i], &first[i], sizeof y[i]) == 0,
                      "%s gemm, %s X: Y[%lld] is %.9g with guard 0x%02x but "
                      "%.9g with guard 0x00: it read outside W",
                      ke_mxfp_format_name(w->format), ke_dtype_name(xt),
                      (long long)i, y[i], guards[g] & 0xFF, first[i]);
      free(y);
    }
    mx_device_free(&d);
  }
  free(first);
  kt_free(&x);
}

START_TEST(guard_bytes) {
  uint64_t rng = kt_seed();
  for (size_t fi = 0; fi < 3; fi++) {
    ke_mxfp_format f = mx_formats[fi];
    const int64_t rows = 5, cols = 96;
    ke_mxfp_matrix w = mx_host(f, rows, cols);
    mx_random_fill(&w, &rng, 117, 21);
    guard_run(&w, KE_F32, &rng);
    guard_run(&w, KE_BF16, &rng);
    mx_host_free(&w);
  }
}
END_TEST

/* ---- The fused GEMM -------------------------------------------------------------- */

/* M x K x N across the tiles, batches, the dtypes; bf16 X runs on the
 * matrix units (each tile configuration of the host emulation: 130 x 386
 * reaches the largest at both warp sizes), with X's base off by one
 * element (element loads) and W's bytes at odd addresses (byte loads). */
static const mx_gemm_case kSweep[] = {
    {1, 1, 32, 1, KE_F32, KE_F32, 0, 0},
    {1, 7, 96, 33, KE_F16, KE_F32, 0, 0},
    {1, 65, 160, 70, KE_BF16, KE_BF16, 0, 0},
    {3, 5, 64, 66, KE_F32, KE_F16, 0, 0},
    {2, 70, 32, 129, KE_F16, KE_F16, 0, 0},
    {1, 1, 32, 1, KE_BF16, KE_F32, 0, 0},
    {1, 130, 64, 386, KE_BF16, KE_F32, 0, 0},
    {3, 17, 96, 33, KE_BF16, KE_F16, 0, 0},
    {2, 33, 64, 40, KE_BF16, KE_BF16, 1, 0},
    {1, 40, 96, 130, KE_BF16, KE_F32, 0, 3},
    {1, 9, 32, 17, KE_F16, KE_F32, 1, 5},
};

static void sweep_mx_gemm(ke_mxfp_format f) {
  for (size_t i = 0; i < sizeof kSweep / sizeof kSweep[0]; i++)
    check_mx_gemm(f, &kSweep[i]);
}

START_TEST(gemm_e2m1) { sweep_mx_gemm(KE_MXFP4_E2M1); }
END_TEST

START_TEST(gemm_e2m3) { sweep_mx_gemm(KE_MXFP6_E2M3); }
END_TEST

START_TEST(gemm_e3m2) { sweep_mx_gemm(KE_MXFP6_E3M2); }
END_TEST

/* The fused kernel equals dequantising W then ke_gemm, bit for bit: with
 * bf16 X dequantised to bf16 (the same exact values in the same order on
 * the same kernel: the Hopper GEMM where ke_gemm takes it, W decoded by
 * its producer warpgroup, else the matrix-core kernel), with f16 and f32 X
 * dequantised to f32 (the SIMT kernel either way). */
START_TEST(gemm_matches_dequant_gemm) {
  const int64_t m = 33, k = 224, n = 70;
  static const ke_dtype xts[] = {KE_BF16, KE_F16, KE_F32};
  uint64_t rng = kt_seed();
  for (size_t fi = 0; fi < 3; fi++)
    for (size_t xi = 0; xi < 3; xi++) {
      ke_mxfp_format f = mx_formats[fi];
      const ke_dtype tx = xts[xi], tw = tx == KE_BF16 ? KE_BF16 : KE_F32;
      ke_mxfp_matrix w = mx_host(f, n, k);
      mx_random_fill(&w, &rng, 120, 15);
      mx_device d;
      mx_upload(&d, &w, 0, 0, 0);
      int64_t xs[2] = {m, k}, ws[2] = {n, k}, ys[2] = {m, n};
      ke_tensor x, wf, y;
      kt_alloc(&x, tx, 2, xs);
      kt_alloc(&wf, tw, 2, ws);
      kt_alloc(&y, KE_F32, 2, ys);
      kt_fill_normal(&x, 0.0f, 1.0f);
      kt_assert_ok(ke_mxfp_dequant(kt_ctx(), &d.w, &wf));
      ke_gemm_params p;
      ke_gemm_params_init(&p);
      p.trans_b = 1;
      kt_assert_ok(ke_gemm(kt_ctx(), &x, &wf, &y, &p));
      double *two_step = kt_to_doubles(&y);
      double *fused = mx_gemm_doubles(&x, &d, KE_F32);
      for (int64_t i = 0; i < m * n; i++)
        ck_assert_msg(memcmp(&fused[i], &two_step[i], sizeof fused[i]) == 0,
                      "%s, %s X: fused Y[%lld] = %.9g, dequant to %s + gemm "
                      "%.9g (bit for bit)",
                      ke_mxfp_format_name(f), ke_dtype_name(tx),
                      (long long)i, fused[i], ke_dtype_name(tw), two_step[i]);
      free(fused);
      free(two_step);
      kt_free(&x);
      kt_free(&wf);
      kt_free(&y);
      mx_device_free(&d);
      mx_host_free(&w);
    }
}
END_TEST

/* A NaN scale poisons exactly the outputs that use its block: W row 5's
 * second block is NaN, so Y column 5 is NaN and nothing else (f32 X on the
 * SIMT kernel, bf16 X on the matrix units). */
static void nan_scale_case(ke_dtype xt) {
  const int64_t m = 9, k = 96, n = 12;
  ke_mxfp_matrix w = mx_host(KE_MXFP6_E3M2, n, k);
  uint64_t rng = kt_seed();
  mx_random_fill(&w, &rng, 127, 1); /* every scale 2^0 */
  ((uint8_t *)w.scales)[5 * 3 + 1] = KE_MX_SCALE_NAN;
  double *wd = malloc((size_t)(n * k) * sizeof *wd);
  ck_assert_ptr_nonnull(wd);
  kt_assert_ok(ke_mxfp_dequant_ref(&w, wd));
  mx_device d;
  mx_upload(&d, &w, 0, 0, 0);
  int64_t xs[2] = {m, k};
  ke_tensor x;
  kt_alloc(&x, xt, 2, xs);
  kt_fill_normal(&x, 0.0f, 1.0f);
  double *xd = kt_to_doubles(&x);
  int64_t ys[2] = {m, n};
  ke_tensor y;
  kt_alloc(&y, KE_F32, 2, ys);
  kt_assert_ok(ke_mxfp_gemm(kt_ctx(), &x, &d.w, &y));
  double ref[9 * 12];
  ke_gemm_params p;
  ke_gemm_params_init(&p);
  p.trans_b = 1;
  ke_gemm_ref(&p, 1, m, n, k, xd, k, 0, wd, k, 0, ref, n, 0);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++)
      ck_assert_msg(!isnan(ref[i * n + j]) == (j != 5),
                    "reference: Y[%lld, %lld] = %g", (long long)i,
                    (long long)j, ref[i * n + j]);
  char name[64];
  snprintf(name, sizeof name, "nan_scale_column_%s", ke_dtype_name(xt));
  kt_assert_close(name, &y, ref,
                  gemm_tol(KE_F32, &p, 1, m, n, k, xd, k, 0, wd, k, 0, ref,
                           n, 0));
  free(xd);
  free(wd);
  kt_free(&x);
  kt_free(&y);
  mx_device_free(&d);
  mx_host_free(&w);
}

START_TEST(gemm_nan_scale) {
  nan_scale_case(KE_F32);
  nan_scale_case(KE_BF16);
}
END_TEST

/* A linear layer's size: 1000-odd tokens against 1024 x 4096 weights. */
START_TEST(gemm_large) {
  static const mx_gemm_case cases[] = {
      {1, 1000, 4096, 1024, KE_BF16, KE_BF16, 0, 0},
      {1, 1000, 1024, 1000, KE_F16, KE_F32, 0, 0},
      {1, 999, 1024, 1001, KE_F32, KE_F32, 0, 0},
  };
  for (int i = 0; i < 3; i++) check_mx_gemm(mx_formats[i], &cases[i]);
}
END_TEST

/* ---- Refusals ------------------------------------------------------------------- */

START_TEST(refusals) {
  ke_context *ctx = kt_ctx();
  ke_mxfp_matrix host = mx_host(KE_MXFP6_E3M2, 4, 64);
  mx_device d;
  mx_upload(&d, &host, 0, 0, 0);
  int64_t os[2] = {4, 64}, o3[3] = {1, 4, 64};
  ke_tensor out, out3;
  kt_alloc(&out, KE_F32, 2, os);
  kt_alloc(&out3, KE_F32, 3, o3);
  kt_assert_ok(ke_mxfp_dequant(ctx, &d.w, &out));

  ke_mxfp_matrix w = d.w;
  ke_tensor o = out;
  w.cols = o.shape[1] = 48; /* not whole blocks */
  kt_assert_status(ke_mxfp_dequant(ctx, &w, &o), KE_ESHAPE);
  ck_assert_msg(strstr(ke_last_error(), "multiple of the MX block size 32"),
                "unclear message: %s", ke_last_error());
  w = d.w;
  w.cols = 0;
  kt_assert_status(ke_mxfp_dequant(ctx, &w, &out), KE_ESHAPE);
  w = d.w;
  w.rows = 0;
  kt_assert_status(ke_mxfp_dequant(ctx, &w, &out), KE_ESHAPE);
  w = d.w;
  w.format = (ke_mxfp_format)3;
  kt_assert_status(ke_mxfp_dequant(ctx, &w, &out), KE_EDTYPE);
  w = d.w;
  w.scales = NULL;
  kt_assert_status(ke_mxfp_dequant(ctx, &w, &out), KE_EINVAL);
  o = out;
  o.shape[0] = 3; /* shape mismatch */
  kt_assert_status(ke_mxfp_dequant(ctx, &d.w, &o), KE_ESHAPE);
  kt_assert_status(ke_mxfp_dequant(ctx, &d.w, &out3), KE_ESHAPE);
  o = out;
  o.dtype = (ke_dtype)5;
  kt_assert_status(ke_mxfp_dequant(ctx, &d.w, &o), KE_EDTYPE);
  kt_assert_status(ke_mxfp_dequant(ctx, NULL, &out), KE_EINVAL);

  /* GEMM: X [3, 64] against W [4, 64] gives Y [3, 4]. */
  int64_t xs[2] = {3, 64}, ys[2] = {3, 4}, y3[3] = {2, 3, 4};
  ke_tensor x, y, yb;
  kt_alloc(&x, KE_F16, 2, xs);
  kt_alloc(&y, KE_F32, 2, ys);
  kt_alloc(&yb, KE_F32, 3, y3);
  kt_fill_normal(&x, 0.0f, 1.0f);
  kt_assert_ok(ke_mxfp_gemm(ctx, &x, &d.w, &y));
  ke_tensor t = x;
  t.shape[1] = 32; /* K differs from W's cols */
  kt_assert_status(ke_mxfp_gemm(ctx, &t, &d.w, &y), KE_ESHAPE);
  t = y;
  t.shape[1] = 5; /* N differs from W's rows */
  kt_assert_status(ke_mxfp_gemm(ctx, &x, &d.w, &t), KE_ESHAPE);
  t = yb;
  t.stride[0] = 0; /* Y batches would overlap */
  kt_assert_status(ke_mxfp_gemm(ctx, &x, &d.w, &t), KE_ESHAPE);
  t = y; /* Y on top of X */
  t.data = x.data;
  t.dtype = KE_F16;
  kt_assert_status(ke_mxfp_gemm(ctx, &x, &d.w, &t), KE_EINVAL);
  w = d.w;
  w.cols = 40;
  kt_assert_status(ke_mxfp_gemm(ctx, &x, &w, &y), KE_ESHAPE);

  /* The references and the size helpers refuse the same shapes. */
  double xv[33] = {0};
  ke_mxfp_matrix bad = host;
  bad.cols = 33;
  kt_assert_status(ke_mxfp_quantize_ref(xv, &bad), KE_ESHAPE);
  kt_assert_status(ke_mxfp_dequant_ref(&bad, xv), KE_ESHAPE);
  kt_assert_status(ke_mxfp_quantize_ref(NULL, &host), KE_EINVAL);
  ck_assert_uint_eq(ke_mxfp_data_bytes(KE_MXFP4_E2M1, 2, 33), 0);
  ck_assert_uint_eq(ke_mxfp_data_bytes((ke_mxfp_format)9, 2, 32), 0);
  ck_assert_uint_eq(ke_mxfp_scale_bytes(0, 32), 0);
  ck_assert_uint_eq(ke_mxfp_data_bytes(KE_MXFP6_E2M3, 3, 64), 3 * 48);
  ck_assert_str_eq(ke_mxfp_format_name((ke_mxfp_format)9), "invalid");

  kt_free(&x);
  kt_free(&y);
  kt_free(&yb);
  kt_free(&out);
  kt_free(&out3);
  mx_device_free(&d);
  mx_host_free(&host);
}
END_TEST

static const kt_test mxfp_tests[] = {
    KT_TEST(format_tables, .host_only = 1),
    KT_TEST(decode_e2m1),
    KT_TEST(decode_e2m3),
    KT_TEST(decode_e3m2),
    KT_TEST(roundtrip_e2m1),
    KT_TEST(roundtrip_e2m3),
    KT_TEST(roundtrip_e3m2),
    KT_TEST(roundtrip_special_blocks, .host_only = 1),
    KT_TEST(subnormals),
    KT_TEST(saturation, .host_only = 1),
    KT_TEST(packing_layout, .host_only = 1),
    KT_TEST(packing_offsets),
    KT_TEST(guard_bytes),
    KT_TEST(gemm_e2m1),
    KT_TEST(gemm_e2m3),
    KT_TEST(gemm_e3m2),
    KT_TEST(gemm_matches_dequant_gemm),
    KT_TEST(gemm_nan_scale),
    KT_TEST(gemm_large, .tags = "slow", .timeout_s = 600),
    KT_TEST(refusals),
};

KT_SUITE(kt_suite_mxfp, "mxfp", "gpu,kernel", mxfp_tests);
