/* MX (OCP Microscaling v1.0) weights: the C entry points for dequantisation
 * and the fused GEMM, and the host references: the decoder (double) and the
 * encoder (the spec's section 6.3 algorithm). The kernels are in
 * kernels/mxfp.hip and kernels/tile/mx.h. The references unpack and pack with their own code,
 * written from the layout in kiln/mxfp.h, not shared with the kernels, so
 * that a packing mistake in either shows as a mismatch.
 */
#include <math.h>
#include <string.h>

#include "engine-impl.h"
#include "gemm-impl.h"
#include "kiln/kernels.h"
#include "contract/launch.h"

/* Element format: field widths and exponent bias (the rest is derived). */
typedef struct ke__mx_spec {
  const char *name;
  int bits;
  int ebits;
  int mbits;
  int bias;
} ke__mx_spec;

static const ke__mx_spec ke__mx_specs[] = {
    [KE_MXFP4_E2M1] = {"e2m1", 4, 2, 1, 1},
    [KE_MXFP6_E2M3] = {"e2m3", 6, 2, 3, 1},
    [KE_MXFP6_E3M2] = {"e3m2", 6, 3, 2, 3},
};

static const ke__mx_spec *ke__mx_spec_of(ke_mxfp_format format) {
  if ((unsigned)format >= sizeof ke__mx_specs / sizeof ke__mx_specs[0])
    return NULL;
  return &ke__mx_specs[format];
}

/* Exponent of the largest binade: all exponent bits set is a normal number
 * (no Inf/NaN codes), so emax = 2^ebits - 1 - bias. */
static int ke__mx_emax(const ke__mx_spec *f) {
  return (1 << f->ebits) - 1 - f->bias;
}

const char *ke_mxfp_format_name(ke_mxfp_format format) {
  const ke__mx_spec *f = ke__mx_spec_of(format);
  return f ? f->name : "invalid";
}

int ke_mxfp_element_bits(ke_mxfp_format format) {
  const ke__mx_spec *f = ke__mx_spec_of(format);
  return f ? f->bits : 0;
}

/* 1 when rows x cols is a valid MX shape whose byte counts fit. */
static int ke__mx_shape_ok(int64_t rows, int64_t cols) {
  return rows >= 1 && cols >= KE_MX_BLOCK && cols % KE_MX_BLOCK == 0 &&
         rows <= INT64_MAX / 8 / cols;
}

size_t ke_mxfp_data_bytes(ke_mxfp_format format, int64_t rows, int64_t cols) {
  const ke__mx_spec *f = ke__mx_spec_of(format);
  if (!f || !ke__mx_shape_ok(rows, cols)) return 0;
  return (size_t)(rows * (cols / KE_MX_BLOCK)) * (size_t)(f->bits * 4);
}

size_t ke_mxfp_scale_bytes(int64_t rows, int64_t cols) {
  if (!ke__mx_shape_ok(rows, cols)) return 0;
  return (size_t)(rows * (cols / KE_MX_BLOCK));
}

/* Refuses what no MX kernel or reference takes, naming `who`. */
static int ke__mx_check(const ke_mxfp_matrix *w, const char *who) {
  if (!w || !w->data || !w->scales)
    return ke__fail(KE_EINVAL, "%s: NULL MX matrix, data or scales", who);
  if (!ke__mx_spec_of(w->format))
    return ke__fail(KE_EDTYPE, "%s: MX format %d is not e2m1, e2m3 or e3m2",
                    who, (int)w->format);
  if (w->cols < KE_MX_BLOCK || w->cols % KE_MX_BLOCK != 0)
    return ke__fail(KE_ESHAPE, "%s: cols %lld is not a positive multiple of "
                               "the MX block size %d; pad rows to whole "
                               "blocks", who, (long long)w->cols,
                    KE_MX_BLOCK);
  if (!ke__mx_shape_ok(w->rows, w->cols))
    return ke__fail(KE_ESHAPE, "%s: MX matrix of %lld x %lld: rows must be "
                               ">= 1 and the size must fit 64-bit offsets",
                    who, (long long)w->rows, (long long)w->cols);
  return KE_OK;
}

/* ---- References ----------------------------------------------------------- */

double ke_mxfp_value_ref(ke_mxfp_format format, unsigned code,
                         unsigned scale) {
  const ke__mx_spec *f = ke__mx_spec_of(format);
  if (!f || scale >= KE_MX_SCALE_NAN) return NAN;
  const unsigned e = (code >> f->mbits) & ((1u << f->ebits) - 1u);
  const unsigned m = code & ((1u << f->mbits) - 1u);
  const double mag = e == 0
      ? ldexp((double)m, 1 - f->bias - f->mbits)
      : ldexp(1.0 + ldexp((double)m, -f->mbits), (int)e - f->bias);
  const double v = ldexp(mag, (int)scale - 127);
  return (code >> (f->bits - 1)) & 1u ? -v : v;
}

/* Element i of a packed row, by the kiln/mxfp.h layout. */
static unsigned ke__mx_get(const uint8_t *row, int bits, int64_t i) {
  if (bits == 4) return (row[i / 2] >> (4 * (i % 2))) & 0xFu;
  const uint8_t *g = row + 3 * (i / 4);
  const uint32_t word = g[0] | (uint32_t)g[1] << 8 | (uint32_t)g[2] << 16;
  return (word >> (6 * (i % 4))) & 0x3Fu;
}

/* Stores code as element i of a packed row (other elements kept). */
static void ke__mx_put(uint8_t *row, int bits, int64_t i, unsigned code) {
  if (bits == 4) {
    const int shift = 4 * (int)(i % 2);
    row[i / 2] = (uint8_t)((row[i / 2] & ~(0xFu << shift)) | code << shift);
    return;
  }
  uint8_t *g = row + 3 * (i / 4);
  uint32_t word = g[0] | (uint32_t)g[1] << 8 | (uint32_t)g[2] << 16;
  const int shift = 6 * (int)(i % 4);
  word = (word & ~(0x3Fu << shift)) | (uint32_t)code << shift;
  g[0] = (uint8_t)word;
  g[1] = (uint8_t)(word >> 8);
  g[2] = (uint8_t)(word >> 16);
}

static int mxfp_dequant_ref_body(const ke_mxfp_matrix *w, double *out) {
  KE__TRY(ke__mx_check(w, "mxfp_dequant_ref"));
  if (!out) return ke__fail(KE_EINVAL, "mxfp_dequant_ref: out is NULL");
  const ke__mx_spec *f = ke__mx_spec_of(w->format);
  const int64_t row_bytes = w->cols / 8 * f->bits;
  const int64_t blocks = w->cols / KE_MX_BLOCK;
  const uint8_t *data = w->data, *scales = w->scales;
  for (int64_t r = 0; r < w->rows; r++)
    for (int64_t c = 0; c < w->cols; c++)
      out[r * w->cols + c] = ke_mxfp_value_ref(
          w->format, ke__mx_get(data + r * row_bytes, f->bits, c),
          scales[r * blocks + c / KE_MX_BLOCK]);
  return KE_OK;
}

/* The reference, timed (ke_ref_ms). */
int ke_mxfp_dequant_ref(const ke_mxfp_matrix *w, double *out) {
  ke_ref_begin();
  int rc = mxfp_dequant_ref_body(w, out);
  ke_ref_end();
  return rc;
}

/* Rounds v (already divided by the block scale) to the nearest element
 * code, ties to even, saturating at the max normal; returns the code. */
static unsigned ke__mx_encode(const ke__mx_spec *f, double v) {
  const unsigned sign = signbit(v) ? 1u << (f->bits - 1) : 0u;
  const unsigned max_code = (1u << (f->bits - 1)) - 1u;
  const int emin = 1 - f->bias;
  const double a = fabs(v);
  /* Binade of a: [2^e, 2^(e+1)), or the subnormal range for e = emin. */
  int e = emin;
  if (a >= ldexp(1.0, emin)) {
    (void)frexp(a, &e);
    e -= 1;
  }
  if (e > ke__mx_emax(f)) return sign | max_code;
  /* a = q * 2^(e - mbits), q < 2^(mbits + 1); round q to an integer. */
  const double q = ldexp(a, f->mbits - e);
  double r = floor(q);
  const double frac = q - r;
  if (frac > 0.5 || (frac == 0.5 && fmod(r, 2.0) == 1.0)) r += 1.0;
  /* The magnitude code is the biased exponent above the mantissa bits; a
   * subnormal's is q itself, and a q that rounds up to 2^(mbits + 1) (or,
   * in the subnormal range, to 2^mbits) carries into the exponent field. */
  const unsigned mag = (unsigned)(e - emin) * (1u << f->mbits) + (unsigned)r;
  return sign | (mag > max_code ? max_code : mag);
}

static int mxfp_quantize_ref_body(const double *x, const ke_mxfp_matrix *w) {
  KE__TRY(ke__mx_check(w, "mxfp_quantize_ref"));
  if (!x) return ke__fail(KE_EINVAL, "mxfp_quantize_ref: x is NULL");
  const ke__mx_spec *f = ke__mx_spec_of(w->format);
  const int64_t row_bytes = w->cols / 8 * f->bits;
  const int64_t blocks = w->cols / KE_MX_BLOCK;
  uint8_t *data = w->data, *scales = w->scales;
  for (int64_t r = 0; r < w->rows; r++) {
    uint8_t *row = data + r * row_bytes;
    memset(row, 0, (size_t)row_bytes);
    for (int64_t j = 0; j < blocks; j++) {
      const double *xb = x + r * w->cols + j * KE_MX_BLOCK;
      double amax = 0.0;
      int nan_block = 0;
      for (int i = 0; i < KE_MX_BLOCK; i++) {
        if (!isfinite(xb[i])) nan_block = 1;
        else if (fabs(xb[i]) > amax) amax = fabs(xb[i]);
      }
      int shared = -127;
      if (!nan_block && amax > 0.0) {
        int e;
        (void)frexp(amax, &e); /* amax in [2^(e-1), 2^e) */
        shared = e - 1 - ke__mx_emax(f);
        if (shared < -127) shared = -127;
        if (shared > 127) nan_block = 1;
      }
      scales[r * blocks + j] =
          nan_block ? KE_MX_SCALE_NAN : (uint8_t)(shared + 127);
      if (nan_block) continue; /* element codes stay 0 */
      for (int i = 0; i < KE_MX_BLOCK; i++)
        ke__mx_put(row, f->bits, j * KE_MX_BLOCK + i,
                   ke__mx_encode(f, ldexp(xb[i], -shared)));
    }
  }
  return KE_OK;
}

/* The reference, timed (ke_ref_ms). */
int ke_mxfp_quantize_ref(const double *x, const ke_mxfp_matrix *w) {
  ke_ref_begin();
  int rc = mxfp_quantize_ref_body(x, w);
  ke_ref_end();
  return rc;
}

/* ---- Entry points ----------------------------------------------------------- */

int ke_mxfp_dequant(ke_context *ctx, const ke_mxfp_matrix *w,
                    ke_tensor *out) {
  if (!ctx || !out || !out->data)
    return ke__fail(KE_EINVAL, "mxfp_dequant: NULL context or output");
  KE__TRY(ke__mx_check(w, "mxfp_dequant"));
  ke__matrix_view v;
  KE__TRY(ke__matrix_view_of(out, "mxfp_dequant", "out", &v));
  if (out->rank != 2 || v.rows != w->rows || v.cols != w->cols)
    return ke__fail(KE_ESHAPE, "mxfp_dequant: out must be [%lld, %lld] "
                               "(rank 2), got rank %d [.., %lld, %lld]",
                    (long long)w->rows, (long long)w->cols, out->rank,
                    (long long)v.rows, (long long)v.cols);
  KE__TIMED_LAUNCH(ctx, "mxfp_dequant",
                   ke__mxfp_dequant_launch(ctx->stream, (int)w->format,
                                           w->data, w->scales, w->rows,
                                           w->cols, out->dtype, out->data,
                                           v.ld));
  return KE_OK;
}

int ke_mxfp_gemm(ke_context *ctx, const ke_tensor *x, const ke_mxfp_matrix *w,
                 ke_tensor *y) {
  if (!ctx || !x || !y || !x->data || !y->data)
    return ke__fail(KE_EINVAL, "mxfp_gemm: NULL context, tensor or data");
  KE__TRY(ke__mx_check(w, "mxfp_gemm"));
  ke__matrix_view vx, vy;
  KE__TRY(ke__matrix_view_of(x, "mxfp_gemm", "X", &vx));
  KE__TRY(ke__matrix_view_of(y, "mxfp_gemm", "Y", &vy));
  if (vx.cols != w->cols || vy.cols != w->rows || vy.rows != vx.rows)
    return ke__fail(KE_ESHAPE, "mxfp_gemm: X is [.., %lld, %lld], W is "
                               "[%lld, %lld] (N x K), Y is [.., %lld, %lld]: "
                               "need [M, K] x [N, K]^T -> [M, N]",
                    (long long)vx.rows, (long long)vx.cols,
                    (long long)w->rows, (long long)w->cols,
                    (long long)vy.rows, (long long)vy.cols);
  if (w->rows > KE__GEMM_MAX_DIM)
    return ke__fail(KE_ESHAPE, "mxfp_gemm: W has %lld rows; N is limited to "
                               "%lld", (long long)w->rows,
                    (long long)KE__GEMM_MAX_DIM);
  if (vx.batch != 1 && vx.batch != vy.batch)
    return ke__fail(KE_ESHAPE, "mxfp_gemm: X has batch %lld, Y %lld: X's "
                               "must be 1 (shared) or Y's",
                    (long long)vx.batch, (long long)vy.batch);
  KE__TRY(ke__matrix_view_writable(&vy, "mxfp_gemm", "Y"));
  if (ke__views_overlap(y->data, &vy, y->dtype, x->data, &vx, x->dtype))
    return ke__fail(KE_EINVAL, "mxfp_gemm: Y's memory overlaps X's");

  const ke__gemm_operand gx = {x->dtype, x->data, vx.ld, vx.batch_stride, 1};
  KE__TIMED_LAUNCH(ctx, "mxfp_gemm",
                   ke__mxfp_gemm_launch(ctx->stream, &gx, (int)w->format,
                                        w->data, w->scales, y->dtype, y->data,
                                        vy.ld, vy.batch_stride, vy.rows,
                                        w->rows, w->cols, vy.batch));
  return KE_OK;
}
