/* The MXFP suite's shared checks (mxfp-check.h): the formats as the spec
 * tabulates them, host and device MX matrices, the exact dequantisation
 * check, the encoder's nearest-value check and the fused GEMM case.
 */
#include "mxfp-check.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/gemm-check.h"

const ke_mxfp_format mx_formats[3] = {KE_MXFP4_E2M1, KE_MXFP6_E2M3,
                                     KE_MXFP6_E3M2};


static const double kE2M1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
static const double kE2M3[32] = {
    0,   0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1,   1.125, 1.25,
    1.375, 1.5, 1.625, 1.75, 1.875, 2,   2.25, 2.5,  2.75, 3,   3.25,
    3.5, 3.75, 4,   4.5,  5,    5.5,  6,   6.5,  7,    7.5};
static const double kE3M2[32] = {
    0,    0.0625, 0.125, 0.1875, 0.25, 0.3125, 0.375, 0.4375,
    0.5,  0.625,  0.75,  0.875,  1,    1.25,   1.5,   1.75,
    2,    2.5,    3,     3.5,    4,    5,      6,     7,
    8,    10,     12,    14,     16,   20,     24,    28};

format_facts facts(ke_mxfp_format f) {
  switch (f) {
  case KE_MXFP4_E2M1: return (format_facts){4, 1, 0, 2, 6.0, kE2M1};
  case KE_MXFP6_E2M3: return (format_facts){6, 3, 0, 2, 7.5, kE2M3};
  default: return (format_facts){6, 2, -2, 4, 28.0, kE3M2};
  }
}

/* ---- Host helpers ------------------------------------------------------------ */

uint64_t rng_next(uint64_t *s) {
  uint64_t x = (*s += 0x9e3779b97f4a7c15ull);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* A host MX matrix with its own buffers. */
ke_mxfp_matrix mx_host(ke_mxfp_format f, int64_t rows, int64_t cols) {
  ke_mxfp_matrix w = {f, rows, cols, NULL, NULL};
  w.data = calloc(ke_mxfp_data_bytes(f, rows, cols), 1);
  w.scales = calloc(ke_mxfp_scale_bytes(rows, cols), 1);
  ck_assert(w.data && w.scales);
  return w;
}

void mx_host_free(ke_mxfp_matrix *w) {
  free(w->data);
  free(w->scales);
}

/* Packs code as element i of a zeroed row, bit by bit from the layout in
 * kiln/mxfp.h (a third implementation, beside the reference and kernel). */
void pack_code(uint8_t *row, int bits, int64_t i, unsigned code) {
  if (bits == 4) {
    row[i / 2] |= (uint8_t)(code << (i % 2 ? 4 : 0));
    return;
  }
  uint8_t *group = row + 3 * (i / 4);
  for (int t = 0; t < 6; t++) {
    int bit = 6 * (int)(i % 4) + t;
    if ((code >> t) & 1u) group[bit / 8] |= (uint8_t)(1u << (bit % 8));
  }
}


static void *upload_padded(const void *src, size_t bytes, size_t pad,
                           int guard_byte, void **base) {
  unsigned char *host = malloc(bytes + 2 * pad);
  ck_assert_ptr_nonnull(host);
  memset(host, guard_byte, bytes + 2 * pad);
  memcpy(host + pad, src, bytes);
  kt_assert_ok(ke_malloc(kt_ctx(), base, bytes + 2 * pad));
  kt_assert_ok(ke_copy_to_device(kt_ctx(), *base, host, bytes + 2 * pad));
  free(host);
  return (unsigned char *)*base + pad;
}

void mx_upload(mx_device *d, const ke_mxfp_matrix *host,
                      size_t data_pad, size_t scale_pad, int guard_byte) {
  d->w = *host;
  d->w.data = upload_padded(
      host->data, ke_mxfp_data_bytes(host->format, host->rows, host->cols),
      data_pad, guard_byte, &d->data_base);
  d->w.scales = upload_padded(host->scales,
                              ke_mxfp_scale_bytes(host->rows, host->cols),
                              scale_pad, guard_byte, &d->scale_base);
}

void mx_device_free(mx_device *d) {
  kt_assert_ok(ke_free(kt_ctx(), d->data_base));
  kt_assert_ok(ke_free(kt_ctx(), d->scale_base));
}

/* v as the output dtype stores it: the decoded values have at most four
 * significant bits and are at least 2^-131, so the only f32 rounding is
 * overflow to Inf; f16 and bf16 round the f32 once more. */
static double round_to(ke_dtype dt, double v) {
  float f = fabs(v) > FLT_MAX ? (float)copysign(INFINITY, v) : (float)v;
  switch (dt) {
  case KE_F16: return ke_f16_to_f32(ke_f32_to_f16(f));
  case KE_BF16: return ke_bf16_to_f32(ke_f32_to_bf16(f));
  default: return f;
  }
}

const kt_tol mx_exact = {0.0, 0.0, 0.0, 0};

/* Dequantises d on the device into [rows, cols + gap] (a view of width
 * cols) of dtype dt and checks it exactly against the reference decode of
 * host; the gap columns must keep their random contents. */
void check_dequant(const char *what, const mx_device *d,
                          const ke_mxfp_matrix *host, ke_dtype dt,
                          int64_t gap) {
  const int64_t rows = host->rows, cols = host->cols, width = cols + gap;
  int64_t shape[2] = {rows, width};
  ke_tensor out;
  kt_alloc(&out, dt, 2, shape);
  kt_fill_normal(&out, 0.0f, 1.0f);
  double *expect = kt_to_doubles(&out);
  double *dec = malloc((size_t)(rows * cols) * sizeof *dec);
  ck_assert_ptr_nonnull(dec);
  kt_assert_ok(ke_mxfp_dequant_ref(host, dec));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      expect[r * width + c] = round_to(dt, dec[r * cols + c]);
  ke_tensor view = out;
  view.shape[1] = cols;
  kt_assert_ok(ke_mxfp_dequant(kt_ctx(), &d->w, &view));
  char name[128];
  snprintf(name, sizeof name, "%s_%s_%lldx%lld_%s", what,
           ke_mxfp_format_name(host->format), (long long)rows,
           (long long)cols, ke_dtype_name(dt));
  kt_assert_close(name, &out, expect, mx_exact);
  free(dec);
  free(expect);
  kt_free(&out);
}

double *mx_normal_doubles(int64_t rows, int64_t cols) {
  int64_t shape[2] = {rows, cols};
  ke_tensor t;
  kt_alloc(&t, KE_F32, 2, shape);
  kt_fill_normal(&t, 0.0f, 1.0f);
  double *x = kt_to_doubles(&t);
  kt_free(&t);
  return x;
}

void mx_random_fill(ke_mxfp_matrix *w, uint64_t *rng, unsigned scale_lo,
                    unsigned scale_span) {
  const size_t nd = ke_mxfp_data_bytes(w->format, w->rows, w->cols);
  for (size_t i = 0; i < nd; i++)
    ((uint8_t *)w->data)[i] = (uint8_t)rng_next(rng);
  for (size_t i = 0; i < ke_mxfp_scale_bytes(w->rows, w->cols); i++)
    ((uint8_t *)w->scales)[i] = (uint8_t)(scale_lo + rng_next(rng) % scale_span);
}

/* ---- Round trips ------------------------------------------------------------ */

/* The error the encoder may make on x in a block of scale byte s: half the
 * spacing of x's binade (the subnormal spacing below the min normal), or,
 * beyond the max normal, the distance to it (saturation). */
double roundtrip_bound(const format_facts *ff, int s, double x) {
  const double v = ldexp(fabs(x), 127 - s);
  double err;
  if (v > ff->max_normal) {
    err = v - ff->max_normal;
  } else {
    int e = ff->emin;
    if (v >= ldexp(1.0, ff->emin)) {
      (void)frexp(v, &e);
      e -= 1;
    }
    err = ldexp(1.0, e - ff->mbits - 1);
  }
  return ldexp(err, s - 127);
}

/* Checks that every decoded element is a nearest representable value of
 * its input under the block's scale (brute force over all codes), that a
 * tie went to the even code, and that the error is within roundtrip_bound;
 * returns the largest error relative to the bound. */
double check_nearest(ke_mxfp_format f, const double *x,
                            const ke_mxfp_matrix *w, const double *dec) {
  const format_facts ff = facts(f);
  const int64_t blocks = w->cols / KE_MX_BLOCK;
  const uint8_t *scales = w->scales;
  double worst = 0.0;
  for (int64_t r = 0; r < w->rows; r++)
    for (int64_t c = 0; c < w->cols; c++) {
      const int64_t i = r * w->cols + c;
      const unsigned s = scales[r * blocks + c / KE_MX_BLOCK];
      if (s == KE_MX_SCALE_NAN) continue; /* checked by the callers */
      const double err = fabs(dec[i] - x[i]);
      int tie_odd = 0;
      for (unsigned code = 0; code < (1u << ff.bits); code++) {
        const double alt = ke_mxfp_value_ref(f, code, s);
        const double alt_err = fabs(alt - x[i]);
        ck_assert_msg(err <= alt_err,
                      "%s [%lld, %lld]: x = %.17g decoded to %.17g, but code "
                      "0x%x (%.17g) is nearer", ke_mxfp_format_name(f),
                      (long long)r, (long long)c, x[i], dec[i], code, alt);
        if (alt_err == err && alt != dec[i] && (code & 1u) == 0)
          tie_odd = 1; /* an even code was as near, yet another was taken */
      }
      ck_assert_msg(!tie_odd, "%s [%lld, %lld]: x = %.17g is a tie and was "
                              "not rounded to the even code (got %.17g)",
                    ke_mxfp_format_name(f), (long long)r, (long long)c, x[i],
                    dec[i]);
      const double bound = roundtrip_bound(&ff, (int)s, x[i]);
      ck_assert_msg(err <= bound, "%s [%lld, %lld]: |%.17g - %.17g| above "
                                  "the bound %.3g", ke_mxfp_format_name(f),
                    (long long)r, (long long)c, x[i], dec[i], bound);
      if (bound > 0.0 && err / bound > worst) worst = err / bound;
    }
  return worst;
}

/* Quantises one block of 32 values and returns its scale byte; codes[i]
 * receives element i's code. */
unsigned quantize_block(ke_mxfp_format f, const double *x,
                               unsigned *codes) {
  ke_mxfp_matrix w = mx_host(f, 1, KE_MX_BLOCK);
  kt_assert_ok(ke_mxfp_quantize_ref(x, &w));
  const int bits = ke_mxfp_element_bits(f);
  const uint8_t *data = w.data;
  for (int i = 0; i < KE_MX_BLOCK; i++) {
    if (bits == 4) {
      codes[i] = (data[i / 2] >> (i % 2 ? 4 : 0)) & 0xFu;
    } else {
      unsigned code = 0;
      for (int t = 0; t < 6; t++) {
        int bit = 6 * (i % 4) + t;
        code |= ((data[3 * (i / 4) + bit / 8] >> (bit % 8)) & 1u) << t;
      }
      codes[i] = code;
    }
  }
  unsigned s = ((uint8_t *)w.scales)[0];
  mx_host_free(&w);
  return s;
}

/* ---- The fused GEMM ---------------------------------------------------------- */

/* Runs the fused GEMM of x [m, k] against d and returns Y as doubles. */
double *mx_gemm_doubles(const ke_tensor *x, const mx_device *d,
                               ke_dtype ty) {
  int64_t shape[2] = {x->shape[0], d->w.rows};
  ke_tensor y;
  kt_alloc(&y, ty, 2, shape);
  kt_assert_ok(ke_mxfp_gemm(kt_ctx(), x, &d->w, &y));
  double *out = kt_to_doubles(&y);
  kt_free(&y); /* checks y's guard bytes */
  return out;
}

/* Y = X * dequant(W)^T with W quantised by the reference from fresh normal
 * weights; X [batch, m, k] (rank 2 when batch is 1) as a view whose base
 * is x_off elements into rows of k + 8 (x_off 0: packed rows of k); W's
 * data w_off bytes into its allocation (odd: no alignment at all); Y
 * starts as NaN, which must not matter (Y is not read). */
void check_mx_gemm(ke_mxfp_format f, const mx_gemm_case *c) {
  const int64_t batch = c->batch, m = c->m, k = c->k, n = c->n;
  const ke_dtype tx = c->tx, ty = c->ty;
  const int64_t x_off = c->x_off;
  const size_t w_off = c->w_off;
  const int rank = batch == 1 ? 2 : 3;
  double *wx = mx_normal_doubles(n, k);
  ke_mxfp_matrix w = mx_host(f, n, k);
  kt_assert_ok(ke_mxfp_quantize_ref(wx, &w));
  double *wd = malloc((size_t)(n * k) * sizeof *wd);
  ck_assert_ptr_nonnull(wd);
  kt_assert_ok(ke_mxfp_dequant_ref(&w, wd));
  mx_device d;
  mx_upload(&d, &w, w_off, w_off, 0x5a);

  const int64_t ldx = x_off ? k + 8 : k;
  int64_t xshape[3] = {batch, m, ldx}, yshape[3] = {batch, m, n};
  ke_tensor xfull, x, y;
  kt_alloc(&xfull, tx, rank, xshape + (3 - rank));
  kt_alloc(&y, ty, rank, yshape + (3 - rank));
  kt_fill_normal(&xfull, 0.0f, 1.0f);
  x = xfull;
  x.data = (char *)xfull.data + x_off * (int64_t)ke_dtype_size(tx);
  x.shape[rank - 1] = k;
  double *xd = kt_to_doubles(&xfull);
  double *ref = malloc((size_t)(batch * m * n) * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  for (int64_t i = 0; i < batch * m * n; i++) ref[i] = NAN;
  kt_from_doubles(&y, ref);
  kt_assert_ok(ke_mxfp_gemm(kt_ctx(), &x, &d.w, &y));

  ke_gemm_params p;
  ke_gemm_params_init(&p);
  p.trans_b = 1;
  ke_gemm_ref(&p, batch, m, n, k, xd + x_off, ldx, m * ldx, wd, k, 0, ref, n,
              m * n);
  kt_tol tol = gemm_tol(ty, &p, batch, m, n, k, xd + x_off, ldx, m * ldx, wd,
                        k, 0, ref, n, m * n);
  char name[128];
  snprintf(name, sizeof name, "mxgemm_%s_b%lld_%lldx%lldx%lld_%s_%s%s%s",
           ke_mxfp_format_name(f), (long long)batch, (long long)m,
           (long long)n, (long long)k, ke_dtype_name(tx), ke_dtype_name(ty),
           x_off ? "_xoff" : "", w_off ? "_woff" : "");
  kt_assert_close(name, &y, ref, tol);
  free(ref);
  free(xd);
  kt_free(&xfull);
  kt_free(&y);
  mx_device_free(&d);
  free(wd);
  free(wx);
  mx_host_free(&w);
}

