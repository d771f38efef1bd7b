/* The perf suite's compute-bound benchmarks: square GEMM, the MX linear
 * layer and fused attention. Each records FLOP/s and, where the device is
 * known, the fraction of its dense peak; the check compares sampled output
 * rows with the double reference under the accumulation bound of its
 * family (gemm_tol, perf_attn_tol).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention-check.h"
#include "gemm/gemm-check.h"
#include "perf/perf.h"

/* ---- GEMM ----------------------------------------------------------------------- */

typedef struct gemm_bench {
  perf_set a, b, c;
} gemm_bench;

static void gemm_launch(void *p, int s) {
  gemm_bench *g = p;
  kt_assert_ok(ke_gemm(kt_ctx(), &g->a.t[s], &g->b.t[s], &g->c.t[s], NULL));
}

/* Square C[S, S] = A[S, S] B[S, S], no transposes, all of one dtype (f16
 * and bf16 on the matrix units, f32 on the SIMT kernel): 2 S^3 FLOP. */
void perf_gemm_case(const perf_cfg *c, perf_run *r) {
  const int64_t S = r->seq, es = (int64_t)ke_dtype_size(r->dt);
  int64_t shape[2] = {S, S};
  r->set_bytes = 3 * S * S * es;
  perf_sets(c, r);
  gemm_bench g;
  perf_set_alloc(&g.a, r->nsets, r->dt, 2, shape, 1);
  perf_set_alloc(&g.b, r->nsets, r->dt, 2, shape, 1);
  perf_set_alloc(&g.c, r->nsets, r->dt, 2, shape, 0);

  double ms = perf_time(c, "gemm", gemm_launch, &g, r->nsets);
  snprintf(r->shape, sizeof r->shape, "%lldx%lldx%lld", (long long)S,
           (long long)S, (long long)S);
  r->flop = 2.0 * (double)S * (double)S * (double)S;
  perf_record(r, ms);

  /* Sampled rows of C from the same rows of A and all of B. */
  int n = c->host ? c->samples : 8;
  int64_t idx[64];
  perf_sample(S, n, idx);
  double *ad = perf_rows_doubles(&g.a.t[0], S, idx, n);
  double *bd = kt_to_doubles(&g.b.t[0]);
  double *ref = perf_doubles((size_t)n * (size_t)S);
  ke_gemm_params p;
  ke_gemm_params_init(&p);
  ke_gemm_ref(&p, 1, n, S, S, ad, S, 0, bd, S, 0, ref, S, 0);
  kt_tol tol = gemm_tol(r->dt, &p, 1, n, S, S, ad, S, 0, bd, S, 0, NULL, S, 0);
  gemm_launch(&g, 0);
  perf_check(r, &g.c.t[0], S, idx, n, ref, tol);
  free(ref);
  free(bd);
  free(ad);
  perf_set_free(&g.a);
  perf_set_free(&g.b);
  perf_set_free(&g.c);
}

/* ---- MX GEMM -------------------------------------------------------------------- */

typedef struct mxgemm_bench {
  perf_set x, y;
  perf_mx_sets w;
} mxgemm_bench;

static void mxgemm_launch(void *p, int s) {
  mxgemm_bench *b = p;
  kt_assert_ok(ke_mxfp_gemm(kt_ctx(), &b->x.t[s], &b->w.w[s], &b->y.t[s]));
}

/* The linear layer Y[S, S] = X[S, S] dequant(W)^T with W MX [S, S] (random
 * codes, scales 2^-10 .. 2^10), X and Y of the row's dtype: the
 * matrix-core kernel decoding W as it stages it. 2 S^3 FLOP. */
void perf_mx_gemm_case(const perf_cfg *c, perf_run *r) {
  const ke_mxfp_format fmt = perf_mx_format(r->pc);
  const int64_t S = r->seq, es = (int64_t)ke_dtype_size(r->dt);
  const size_t nd = ke_mxfp_data_bytes(fmt, S, S);
  const size_t ns = ke_mxfp_scale_bytes(S, S);
  r->set_bytes = 2 * S * S * es + (int64_t)(nd + ns);
  perf_sets(c, r);
  int64_t shape[2] = {S, S};
  mxgemm_bench b;
  memset(&b, 0, sizeof b);
  perf_set_alloc(&b.x, r->nsets, r->dt, 2, shape, 1);
  perf_set_alloc(&b.y, r->nsets, r->dt, 2, shape, 0);
  unsigned char *hd = malloc(nd), *hs = malloc(ns);
  ck_assert_msg(hd && hs, "out of host memory for %zu MX bytes", nd);
  perf_mx_alloc(&b.w, r->nsets, fmt, S, S, hd, hs);

  double ms = perf_time(c, "mxfp_gemm", mxgemm_launch, &b, r->nsets);
  snprintf(r->shape, sizeof r->shape, "%lldx%lldx%lld", (long long)S,
           (long long)S, (long long)S);
  r->flop = 2.0 * (double)S * (double)S * (double)S;
  perf_record(r, ms);

  /* Sampled rows of Y against the decoded W of the last set (hd, hs). */
  const int n = c->host ? c->samples : 8, last = r->nsets - 1;
  int64_t idx[64];
  perf_sample(S, n, idx);
  const ke_mxfp_matrix wh = {fmt, S, S, hd, hs};
  double *wd = perf_doubles((size_t)S * (size_t)S);
  kt_assert_ok(ke_mxfp_dequant_ref(&wh, wd));
  double *xd = perf_rows_doubles(&b.x.t[last], S, idx, n);
  double *ref = perf_doubles((size_t)n * (size_t)S);
  ke_gemm_params p;
  ke_gemm_params_init(&p);
  p.trans_b = 1;
  ke_gemm_ref(&p, 1, n, S, S, xd, S, 0, wd, S, 0, ref, S, 0);
  kt_tol tol = gemm_tol(r->dt, &p, 1, n, S, S, xd, S, 0, wd, S, 0, NULL, S, 0);
  mxgemm_launch(&b, last);
  perf_check(r, &b.y.t[last], S, idx, n, ref, tol);
  free(ref);
  free(xd);
  free(wd);
  free(hd);
  free(hs);
  perf_mx_free(&b.w);
  perf_set_free(&b.x);
  perf_set_free(&b.y);
}

/* ---- Fused attention ------------------------------------------------------------- */

static double perf_max_norm(const double *x, int64_t rows, int64_t d) {
  double m = 0.0;
  for (int64_t r = 0; r < rows; r++) {
    double s = 0.0;
    for (int64_t j = 0; j < d; j++) s += x[r * d + j] * x[r * d + j];
    if (sqrt(s) > m) m = sqrt(s);
  }
  return m;
}

/* The bound of docs/kernels-attention.md (fused attention, Tolerances):
 * attn_tol_f32 for these rows, no NMSE limit (a few sampled rows); f16/bf16
 * are their output rounding, plus 2 u_T max|v| with round_p
 * (suites/attention/attention-check.c says why). */
kt_tol perf_attn_tol(ke_dtype dt, const double *q, int nq, const double *k,
                     const double *v, int64_t sk, int64_t d, int round_p) {
  double scale = 1.0 / sqrt((double)d);
  double s_max = scale * perf_max_norm(q, nq, d) * perf_max_norm(k, sk, d);
  double v_max = 0.0;
  for (int64_t i = 0; i < sk * d; i++)
    if (fabs(v[i]) > v_max) v_max = fabs(v[i]);
  kt_tol t = attn_tol_f32(s_max, v_max, d, sk);
  if (dt != KE_F32) t = attn_tol_16(t, dt, round_p, v_max);
  t.max_nmse = 0.0;
  return t;
}

typedef struct attn_bench {
  perf_set q, k, v, o;
  ke_attention_params p;
} attn_bench;

static void attn_launch(void *p, int s) {
  attn_bench *a = p;
  kt_assert_ok(ke_attention(kt_ctx(), &a->q.t[s], &a->k.t[s], &a->v.t[s],
                            &a->o.t[s], &a->p));
}

/* B = 1, H heads, Sq = Sk = S. FLOP = 4 D per visible (query, key) pair
 * per head (Q K^T and P V): H S^2 pairs, H S (S + 1) / 2 when causal, so a
 * causal figure counts only the work the mask leaves. */
void perf_attention_case(const perf_cfg *c, perf_run *r) {
  const int64_t H = r->heads, D = r->pc->head_dim, S = r->seq;
  const int causal = r->pc->causal;
  const int64_t es = (int64_t)ke_dtype_size(r->dt);
  int64_t shape[4] = {1, H, S, D};
  r->set_bytes = 4 * H * S * D * es;
  perf_sets(c, r);
  attn_bench a;
  perf_set_alloc(&a.q, r->nsets, r->dt, 4, shape, 1);
  perf_set_alloc(&a.k, r->nsets, r->dt, 4, shape, 1);
  perf_set_alloc(&a.v, r->nsets, r->dt, 4, shape, 1);
  perf_set_alloc(&a.o, r->nsets, r->dt, 4, shape, 0);
  ke_attention_params_init(&a.p);
  a.p.causal = causal;
  a.p.round_p = r->pc->round_p;

  double ms = perf_time(c, "attention", attn_launch, &a, r->nsets);
  snprintf(r->shape, sizeof r->shape, "1x%lldx%lldx%lld", (long long)H,
           (long long)S, (long long)D);
  const double pairs = causal ? (double)S * (double)(S + 1) / 2.0
                              : (double)S * (double)S;
  r->flop = 4.0 * (double)H * pairs * (double)D;
  perf_record(r, ms);

  /* Sampled query rows (h, s), each against the keys it sees (all, or
   * 0..s when causal) of its head. */
  int n = c->host ? c->samples : 8;
  int64_t idx[64];
  perf_sample(H * S, n, idx);
  double *qd = perf_rows_doubles(&a.q.t[0], D, idx, n);
  double *kd = kt_to_doubles(&a.k.t[0]);
  double *vd = kt_to_doubles(&a.v.t[0]);
  double *ref = perf_doubles((size_t)n * (size_t)D);
  kt_tol tol = {0, 0, 0, 0};
  ke_attention_params p;
  ke_attention_params_init(&p);
  for (int i = 0; i < n; i++) {
    int64_t h = idx[i] / S, sk = causal ? idx[i] % S + 1 : S;
    const double *kh = kd + (size_t)(h * S * D), *vh = vd + (size_t)(h * S * D);
    ke_attention_ref(qd + (size_t)i * D, kh, vh, ref + (size_t)i * D, 1, 1, 1,
                     1, sk, D, &p);
    kt_tol t = perf_attn_tol(r->dt, qd + (size_t)i * D, 1, kh, vh, sk, D,
                             r->pc->round_p);
    if (t.atol > tol.atol) tol.atol = t.atol;
    if (t.rtol > tol.rtol) tol.rtol = t.rtol;
  }
  attn_launch(&a, 0);
  perf_check(r, &a.o.t[0], D, idx, n, ref, tol);
  free(ref);
  free(vd);
  free(kd);
  free(qd);
  perf_set_free(&a.q);
  perf_set_free(&a.k);
  perf_set_free(&a.v);
  perf_set_free(&a.o);
}
