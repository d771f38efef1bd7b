/* The attention suites' shared checks (attention-check.h): the tolerance
 * of fused attention, one case through ke_attention against the double
 * reference, and the views and host copies the layout tests build on.
 */
#include "attention-check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/test-tuning.h"

/* ---- Tolerances ----------------------------------------------------------
 *
 * Each output o = sum_j w_j v_j is a convex combination of visible V rows
 * (w_j = p_j / l, p_j = exp(s_j - m), l = sum p_j), computed with f32
 * accumulation in another order than the double reference. With
 * u = 2^-24 and the probabilistic bound for an n-term f32 sum, error about
 * lambda * sqrt(n) * u times the sum of the magnitudes (Higham and Mary,
 * 2019), lambda = 6:
 *
 *  - a score s = scale * q.k of D terms is off by at most
 *    e_s = lambda sqrt(D) u S, with S = |scale| max ||q|| max ||k|| bounding
 *    sum_d |scale q_d k_d| (Cauchy-Schwarz). The kernels take p_j as
 *    exp2(c s_j - m) with c = scale log2(e) rounded (u relative) and the
 *    product and the difference rounded (at most u/2 of log2(e) S and of
 *    2 log2(e) S), and exp2 is the hardware's (within 2^-22 = 4u): a
 *    relative error of p_j of at most e_p = e_s + 3uS + 4u (log2(e) ln 2
 *    = 1). Relative errors of at most e in the weights move a convex
 *    combination by at most 2 e max|v|;
 *  - the sums l and acc = sum p_j v_j over n visible keys carry about
 *    lambda sqrt(n) u relative to sum p_j |v_j| <= l max|v|, and the
 *    rescalings of the online softmax add a few u more (the decode
 *    kernel's split adds one more rescaled sum per key range, far inside
 *    them).
 *
 * So f32 atol = (2 e_p + lambda sqrt(n) u + 4u) max|v| and rtol =
 * lambda sqrt(n) u (the error of l scales o itself). These are bounds: the
 * NMSE limit, 1e-10 (an rms error of 1e-5 of the output's rms), is the
 * tight check on the typical error. For f16 and bf16 outputs the rounding
 * of the result dominates: rtol stays the dtype default (1e-3 and 1.6e-2,
 * above the half-ulp 4.9e-4 and 3.9e-3), atol is the f32 one or 1e-5,
 * and max_nmse is about 10x the u^2 / 3 that uniform rounding gives
 * (1e-6 for f16, 5e-5 for bf16). max|v| is over the finite values: a
 * planted NaN or Inf must not make the bound infinite.
 *
 * With round_p a kernel may round each p_j to the input dtype before P·V
 * (kiln/attention.h): a relative error of at most u_T (2^-11 for f16,
 * 2^-8 for bf16) in each weight of the numerator, and in l if it sums the
 * rounded weights, so at most 2 u_T max|v| more in atol. Without it, bf16
 * on the Hopper kernel rounds each p_j once to f16 and takes V's f16 copy,
 * off by at most 2^-16 max|v| per value (kernels/tile/attn_sm90.h):
 * (2 2^-11 + 2^-16) max|v| more.
 */
#define LAMBDA 6.0
#define U32 5.9604644775390625e-08

static double max_row_norm(const double *x, int64_t rows, int64_t d) {
  double best = 0.0;
  for (int64_t r = 0; r < rows; r++) {
    double s = 0.0;
    for (int64_t e = 0; e < d; e++) s += x[r * d + e] * x[r * d + e];
    if (s > best) best = s;
  }
  return sqrt(best);
}

static double max_finite_abs(const double *x, int64_t n) {
  double best = 0.0;
  for (int64_t i = 0; i < n; i++)
    if (isfinite(x[i]) && fabs(x[i]) > best) best = fabs(x[i]);
  return best;
}

kt_tol attn_tol_f32(double s_max, double v_max, int64_t d, int64_t n) {
  const double e_s = LAMBDA * sqrt((double)d) * U32 * s_max;
  const double sums = LAMBDA * sqrt((double)n) * U32;
  const double e_p = e_s + 3.0 * U32 * s_max + 4.0 * U32;
  kt_tol t = {(2.0 * e_p + sums + 4.0 * U32) * v_max, sums, 1e-10, 0};
  return t;
}

kt_tol attn_tol(const attn_case *c, const double *q, const double *k,
                const double *v) {
  const double scale =
      c->scale != 0.0f ? fabs(c->scale) : 1.0 / sqrt((double)c->d);
  const double s_max = scale * max_row_norm(q, c->b * c->hq * c->sq, c->d) *
                       max_row_norm(k, c->b * c->hkv * c->sk, c->d);
  const double v_max = max_finite_abs(v, c->b * c->hkv * c->sk * c->d);
  kt_tol t = attn_tol_f32(s_max, v_max, c->d, c->sk);
  return c->dtype == KE_F32 ? t : attn_tol_16(t, c->dtype, c->round_p, v_max);
}

kt_tol attn_tol_16(kt_tol t, ke_dtype dt, int round_p, double v_max) {
  t.atol = t.atol > 1e-5 ? t.atol : 1e-5;
  t.rtol = dt == KE_F16 ? 1e-3 : 1.6e-2;
  t.max_nmse = dt == KE_F16 ? 1e-6 : 5e-5;
  /* The relative error of each weight where P is rounded once (round_p:
   * to the input type; else to f16 on the Hopper kernel), and of V's f16
   * copy (bf16 on the Hopper kernel) per value. */
  const int v16 = !round_p && dt == KE_BF16;
  const double u_p = round_p && dt == KE_BF16 ? ldexp(1.0, -8) : ldexp(1.0, -11);
  const double e_v = v16 ? ldexp(1.0, -16) : 0.0;
  t.atol += (2.0 * u_p + e_v) * v_max;
  return t;
}

ke_attention_params attn_params(const attn_case *c) {
  ke_attention_params p;
  ke_attention_params_init(&p);
  p.scale = c->scale;
  p.causal = c->causal;
  p.causal_offset = c->offset;
  p.kernel = c->kernel;
  p.round_p = c->round_p;
  return p;
}

void attn_case_name(const attn_case *c, char *buf, size_t n) {
  snprintf(buf, n, "attn_%s_b%lld_h%lld/%lld_sq%lld_sk%lld_d%lld%s",
           ke_dtype_name(c->dtype), (long long)c->b, (long long)c->hq,
           (long long)c->hkv, (long long)c->sq, (long long)c->sk,
           (long long)c->d, c->causal ? "_causal" : "");
  size_t len = strlen(buf);
  if (c->causal && c->offset >= 0) {
    snprintf(buf + len, n - len, "_off%lld", (long long)c->offset);
    len = strlen(buf);
  }
  if (c->kernel != KE_ATTN_KERNEL_AUTO)
    snprintf(buf + len, n - len, "%s",
             c->kernel == KE_ATTN_KERNEL_TILED ? "_tiled" : "_rows");
  len = strlen(buf);
  if (c->round_p) snprintf(buf + len, n - len, "_round_p");
}

/* ---- Inputs ----------------------------------------------------------------- */

void attn_alloc_qkvo(ke_tensor *q, ke_tensor *k, ke_tensor *v, ke_tensor *o,
                     ke_dtype dt, const int64_t qs[4], const int64_t ks[4]) {
  kt_alloc(q, dt, 4, qs);
  kt_alloc(k, dt, 4, ks);
  kt_alloc(v, dt, 4, ks);
  kt_alloc(o, dt, 4, qs);
}

void attn_free_qkvo(ke_tensor *q, ke_tensor *k, ke_tensor *v, ke_tensor *o) {
  kt_free(o);
  kt_free(v);
  kt_free(k);
  kt_free(q);
}

void attn_fill_qkv(ke_tensor *q, ke_tensor *k, ke_tensor *v, float q_std) {
  kt_fill_normal(q, 0.0f, q_std > 0.0f ? q_std : 1.0f);
  kt_fill_normal(k, 0.0f, 1.0f);
  kt_fill_normal(v, 0.0f, 1.0f);
}

void attn_host_read(attn_host *h, const ke_tensor *q, const ke_tensor *k,
                    const ke_tensor *v) {
  h->q = kt_to_doubles(q);
  h->k = kt_to_doubles(k);
  h->v = kt_to_doubles(v);
}

static double *gather_one(const ke_tensor *buf, const ke_tensor *view) {
  double *all = kt_to_doubles(buf);
  double *packed = attn_gather(all, buf, view);
  free(all);
  return packed;
}

void attn_host_gather(attn_host *h, const ke_tensor *qbuf, const ke_tensor *q,
                      const ke_tensor *kbuf, const ke_tensor *k,
                      const ke_tensor *vbuf, const ke_tensor *v) {
  h->q = gather_one(qbuf, q);
  h->k = gather_one(kbuf, k);
  h->v = gather_one(vbuf, v);
}

void attn_host_write(const attn_host *h, ke_tensor *q, ke_tensor *k,
                     ke_tensor *v) {
  kt_from_doubles(q, h->q);
  kt_from_doubles(k, h->k);
  kt_from_doubles(v, h->v);
}

void attn_host_free(attn_host *h) {
  free(h->v);
  free(h->k);
  free(h->q);
  h->q = h->k = h->v = NULL;
}

/* ---- One case --------------------------------------------------------------- */

double *attn_ref(const attn_case *c, const attn_host *h,
                 const ke_attention_params *p) {
  double *ref = malloc((size_t)(c->b * c->hq * c->sq * c->d) * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  ke_attention_ref(h->q, h->k, h->v, ref, c->b, c->hq, c->hkv, c->sq, c->sk,
                   c->d, p);
  return ref;
}

void attn_force_splits(int64_t splits) {
  ke__decode_tuning t;
  kt_assert_ok(ke__decode_tuning_get(kt_ctx(), &t));
  t.force_splits = splits;
  kt_assert_ok(ke__decode_tuning_set(kt_ctx(), &t));
}

/* o's rows of the packed ref written into `fill`, obuf's content before
 * the call, in obuf's order. */
static void expected_in(double *fill, const ke_tensor *obuf,
                        const ke_tensor *o, const attn_case *c,
                        const double *ref) {
  const int64_t off = ((const char *)o->data - (const char *)obuf->data) /
                      (int64_t)ke_dtype_size(o->dtype);
  for (int64_t a = 0; a < c->b; a++)
    for (int64_t h = 0; h < c->hq; h++)
      for (int64_t i = 0; i < c->sq; i++)
        memcpy(fill + off + a * o->stride[0] + h * o->stride[1] +
                   i * o->stride[2],
               ref + ((a * c->hq + h) * c->sq + i) * c->d,
               (size_t)c->d * sizeof *ref);
}

double *attn_check_views(const attn_case *c, const char *name,
                         const ke_tensor *q, const ke_tensor *k,
                         const ke_tensor *v, ke_tensor *o,
                         const ke_tensor *obuf, const attn_host *h) {
  /* Read before the call, so that a write outside o shows. */
  double *want = obuf == o ? NULL : kt_to_doubles(obuf);
  ke_attention_params p = attn_params(c);
  if (c->splits) attn_force_splits(c->splits);
  kt_assert_ok(ke_attention(kt_ctx(), q, k, v, o, &p));
  if (c->splits) attn_force_splits(0);
  double *ref = attn_ref(c, h, &p);
  const kt_tol tol = attn_tol(c, h->q, h->k, h->v);
  if (want) {
    expected_in(want, obuf, o, c, ref);
    kt_assert_close(name, obuf, want, tol);
    free(want);
  } else {
    kt_assert_close(name, o, ref, tol);
  }
  return ref;
}

double *attn_run(const attn_case *c, int want_ref) {
  int64_t qs[4] = {c->b, c->hq, c->sq, c->d};
  int64_t ks[4] = {c->b, c->hkv, c->sk, c->d};
  ke_tensor q, k, v, o;
  attn_alloc_qkvo(&q, &k, &v, &o, c->dtype, qs, ks);
  attn_fill_qkv(&q, &k, &v, c->q_std);
  kt_fill_uniform(&o, 100.0f, 200.0f);  /* every output must be written */
  attn_host h;
  attn_host_read(&h, &q, &k, &v);
  char name[160];
  attn_case_name(c, name, sizeof name);
  double *ref = attn_check_views(c, name, &q, &k, &v, &o, &o, &h);
  attn_host_free(&h);
  attn_free_qkvo(&q, &k, &v, &o);
  if (want_ref) return ref;
  free(ref);
  return NULL;
}

/* ---- Views -------------------------------------------------------------------- */

double *attn_gather(const double *buf, const ke_tensor *base,
                    const ke_tensor *view) {
  const int64_t n = ke_tensor_numel(view);
  double *out = malloc((size_t)n * sizeof *out);
  ck_assert_ptr_nonnull(out);
  const int64_t start = ((const char *)view->data - (const char *)base->data) /
                        (int64_t)ke_dtype_size(view->dtype);
  int64_t x = 0;
  for (int64_t a = 0; a < view->shape[0]; a++)
    for (int64_t h = 0; h < view->shape[1]; h++)
      for (int64_t s = 0; s < view->shape[2]; s++)
        for (int64_t e = 0; e < view->shape[3]; e++)
          out[x++] = buf[start + a * view->stride[0] + h * view->stride[1] +
                         s * view->stride[2] + e];
  return out;
}

ke_tensor attn_bshd_view(const ke_tensor *buf, int64_t first, int64_t b,
                         int64_t h, int64_t s, int64_t d, int64_t s_step,
                         int64_t b_step) {
  ke_tensor t = *buf;
  t.rank = 4;
  t.data = (char *)buf->data + first * (int64_t)ke_dtype_size(buf->dtype);
  const int64_t shape[4] = {b, h, s, d};
  const int64_t stride[4] = {b_step, d, s_step, 1};
  memcpy(t.shape, shape, sizeof shape);
  memcpy(t.stride, stride, sizeof stride);
  return t;
}
