/* Decode attention suite: ke_attention with few query rows per KV head,
 * which takes the split-key kernel (kernels/attention_decode.hip), against
 * the double reference. Key splits are forced through the test-only tuning
 * knobs (kiln/test-tuning.h) so that every path runs whatever the device:
 * one range, ranges of uneven length, more ranges than keys, ranges past a
 * causal row tile's last key. Awkward sizes: Sk 1, 17, 3001, 5000; Sq 1..8;
 * GQA 1..8; D from 1 to 256 (72, 112, 200 among them); causal offsets;
 * strided and unaligned views; NaN/Inf as documented; the engine scratch.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention-check.h"
#include "kiln/kernels.h"
#include "kiln/test-tuning.h"
#include "kiln/test.h"

/* The tolerance is attention's (attention-check.c,
 * docs/kernels-attention.md), whose bound covers the split's extra
 * rescaled sum per key range. A case is an attn_case with its key ranges
 * forced (splits; 0: the engine's choice). */
typedef attn_case dec_case;

static void dec_name(const dec_case *c, const char *what, char *buf,
                     size_t n) {
  snprintf(buf, n, "%s_%s_b%lld_h%lld/%lld_sq%lld_sk%lld_d%lld%s_off%lld_x%lld",
           what, ke_dtype_name(c->dtype), (long long)c->b, (long long)c->hq,
           (long long)c->hkv, (long long)c->sq, (long long)c->sk,
           (long long)c->d, c->causal ? "_causal" : "", (long long)c->offset,
           (long long)c->splits);
}

/* Runs ke_attention on the given views and checks obuf (o inside it)
 * against the reference of the packed inputs h. */
static void dec_check_views(const dec_case *c, const char *what,
                            const ke_tensor *q, const ke_tensor *k,
                            const ke_tensor *v, ke_tensor *o,
                            const ke_tensor *obuf, const attn_host *h) {
  char name[192];
  dec_name(c, what, name, sizeof name);
  free(attn_check_views(c, name, q, k, v, o, obuf, h));
}

/* Fresh packed inputs; o starts as garbage that must all be overwritten. */
static void dec_check(dec_case c) {
  int64_t qs[4] = {c.b, c.hq, c.sq, c.d}, ks[4] = {c.b, c.hkv, c.sk, c.d};
  ke_tensor q, k, v, o;
  attn_alloc_qkvo(&q, &k, &v, &o, c.dtype, qs, ks);
  attn_fill_qkv(&q, &k, &v, c.q_std);
  kt_fill_uniform(&o, 100.0f, 200.0f);
  attn_host h;
  attn_host_read(&h, &q, &k, &v);
  dec_check_views(&c, "dec", &q, &k, &v, &o, &o, &h);
  attn_host_free(&h);
  attn_free_qkvo(&q, &k, &v, &o);
}

static dec_case mk(ke_dtype dt, int64_t b, int64_t hq, int64_t hkv,
                   int64_t sq, int64_t sk, int64_t d, int64_t splits) {
  dec_case c = {dt, b, hq, hkv, sq, sk, d, 0, -1, 0.0f, 1.0f,
                KE_ATTN_KERNEL_AUTO, splits, 0};
  return c;
}


/* ---- Sizes ----------------------------------------------------------------- */

/* Sk 1, 17, 3001 against Sq 1..8 (GQA 2: up to 16 rows, four tiles), each
 * with one range, a few, and more ranges than some tiles have keys. */
START_TEST(sizes) {
  static const int64_t sks[] = {1, 17, 3001};
  static const int64_t sqs[] = {1, 2, 3, 5, 8};
  static const int64_t splits[] = {1, 3, 40};
  for (int i = 0; i < NELEM(sks); i++)
    for (int j = 0; j < NELEM(sqs); j++)
      dec_check(mk(KE_F32, 1, 4, 2, sqs[j], sks[i], 64,
                   splits[(i + j) % NELEM(splits)]));
  dec_check(mk(KE_BF16, 2, 8, 4, 1, 3001, 128, 7));
  dec_check(mk(KE_F16, 2, 8, 4, 3, 17, 128, 2));
}
END_TEST

/* GQA ratios 1..8 (MHA to 8 query heads per KV head), one and two queries,
 * over 1000 keys cut in 5 ranges. */
START_TEST(gqa_ratios) {
  for (int64_t r = 1; r <= 8; r++) {
    dec_check(mk(KE_F32, 2, 2 * r, 2, 1, 1000, 64, 5));
    dec_check(mk(r % 2 ? KE_BF16 : KE_F16, 1, r, 1, 2, 1000, 128, 5));
  }
}
END_TEST

/* Every lane geometry (D up to 32, 64, 128, 256) and D values that are not
 * multiples of 8 (element loads) or of the group's 8 * L. */
START_TEST(head_dims) {
  static const int64_t dims[] = {1,  3,  17, 32, 64,  72,  80,
                                 96, 100, 112, 128, 200, 255, 256};
  static const ke_dtype dts[] = {KE_F32, KE_F16, KE_BF16};
  for (int i = 0; i < NELEM(dims); i++)
    dec_check(mk(dts[i % 3], 1, 8, 2, 1, 777, dims[i], 4));
}
END_TEST

/* Long contexts cut unevenly: 5000 keys in 2, 3, 7, 16 and 33 ranges (the
 * last range shorter, or a range of a few keys), every dtype, GQA 4. One
 * KV head of one batch: the ranges and their merge are per (batch, KV
 * head) row tile, and gqa_ratios splits two of each. */
START_TEST(uneven_splits) {
  static const int64_t splits[] = {2, 3, 7, 16, 33};
  static const ke_dtype dts[] = {KE_F32, KE_F16, KE_BF16};
  for (int i = 0; i < NELEM(splits); i++)
    dec_check(mk(dts[i % 3], 1, 4, 1, 1, 5000, 128, splits[i]));
  dec_check(mk(KE_BF16, 1, 8, 2, 1, 4099, 128, 33));
}
END_TEST

/* The engine's own split for this device, and sharp scores (a running max
 * that moves a lot, different in every range). */
START_TEST(default_split) {
  dec_check(mk(KE_F32, 1, 4, 1, 1, 4096, 128, 0));
  dec_check(mk(KE_BF16, 1, 32, 8, 1, 2048, 128, 0));
  dec_case c = mk(KE_F32, 1, 8, 2, 1, 3001, 64, 9);
  c.q_std = 20.0f;
  dec_check(c);
}
END_TEST

/* ---- Causal ------------------------------------------------------------------ */

/* Speculative decode (Sq 4, GQA 4: 16 rows in 4 tiles) with explicit
 * offsets: rows see different prefixes, some ranges lie past a tile's last
 * visible key, some rows see nothing (zeros); the default offset; Sq > Sk
 * with the default offset (the first Sq - Sk rows see nothing). */
START_TEST(causal_offsets) {
  static const int64_t offsets[] = {-1, 0, 5, 1000, 2999, 5000,
                                    (int64_t)1 << 40};
  for (int i = 0; i < NELEM(offsets); i++) {
    dec_case c = mk(KE_F32, 1, 8, 2, 4, 3001, 64, 1 + i % 4 * 3);
    c.causal = 1;
    c.offset = offsets[i];
    dec_check(c);
  }
  dec_case c = mk(KE_BF16, 2, 4, 2, 8, 5, 128, 3);
  c.causal = 1;                     /* default offset -3 */
  dec_check(c);
  c = mk(KE_F32, 1, 2, 1, 3, 3001, 72, 0);
  c.causal = 1;
  c.offset = 17;                    /* 18..20 keys of 3001 */
  dec_check(c);
}
END_TEST

/* ---- Layouts --------------------------------------------------------------- */

/* Q, K, V as views of one packed QKV projection [B, S, Hq + 2 Hkv, D]
 * (the queries are its last Sq positions), O a view of a wider [B, Sq,
 * Hq + 1, D] buffer whose other elements must keep their fill. With D = 128
 * every stride is a multiple of 8 (16-byte copies); with D = 100 none is;
 * the last case shifts the Q/K/V views by one element, so that no row is
 * 16-byte aligned (both take the element loads), and views one row less so
 * that they stay inside the buffer. */
START_TEST(strided_views) {
  static const struct { int64_t d, shift; ke_dtype dt; } cfg[] = {
      {128, 0, KE_BF16}, {100, 0, KE_F32}, {64, 1, KE_F16}};
  for (int n = 0; n < NELEM(cfg); n++) {
    const int64_t b = 2, hq = 8, hkv = 2, sk = 700, sq = 3, d = cfg[n].d;
    const int64_t heads = hq + 2 * hkv, step = heads * d;
    int64_t shape[4] = {b, sk, heads, d};
    int64_t oshape[4] = {b, sq, hq + 1, d};
    ke_tensor qkv, obuf;
    kt_alloc(&qkv, cfg[n].dt, 4, shape);
    kt_alloc(&obuf, cfg[n].dt, 4, oshape);
    kt_fill_normal(&qkv, 0.0f, 1.0f);
    kt_fill_uniform(&obuf, 100.0f, 200.0f);
    const int64_t sh = cfg[n].shift;
    ke_tensor q = attn_bshd_view(&qkv, (sk - sq) * step + sh, b, hq, sq, d, step,
                            sk * step);
    ke_tensor k = attn_bshd_view(&qkv, hq * d + sh, b, hkv, sk, d, step,
                            sk * step);
    ke_tensor v = attn_bshd_view(&qkv, (hq + hkv) * d + sh, b, hkv, sk, d, step,
                            sk * step);
    if (sh) {
      q.shape[2] = sq - 1;
      k.shape[2] = v.shape[2] = sk - 1;
    }
    ke_tensor o = attn_bshd_view(&obuf, d, b, hq, q.shape[2], d, (hq + 1) * d,
                            sq * (hq + 1) * d);
    dec_case c = mk(cfg[n].dt, b, hq, hkv, q.shape[2], k.shape[2], d, 5);
    attn_host h;
    attn_host_gather(&h, &qkv, &q, &qkv, &k, &qkv, &v);
    dec_check_views(&c, "strided", &q, &k, &v, &o, &obuf, &h);
    attn_host_free(&h);
    kt_free(&obuf);
    kt_free(&qkv);
  }
}
END_TEST

/* ---- Special values ---------------------------------------------------------- */

/* NaN and Inf planted in fresh inputs, keys cut into 4 ranges; the kernel
 * against the reference (NaN must meet NaN) and the reference against the
 * documented rules. Causal with offset 300: query i sees keys 0..300 + i.
 *   batch 0: V[200] element 5 NaN: element 5 of every row NaN, element 4
 *            not (rows 0, 1);
 *   batch 1: K[150] element 0 NaN: a NaN score, every row NaN;
 *   batch 2: K[100] all +inf: a score of +-inf or NaN (q's signs mixed);
 *   all:     K and V rows 302..399 NaN: never visible to queries 0 and 1
 *            (no effect), visible to 2 and 3 (NaN rows). */
START_TEST(nan_inf) {
  const int64_t nb = 3, hq = 2, hkv = 1, sq = 4, sk = 400, d = 64;
  int64_t qs[4] = {nb, hq, sq, d}, ks[4] = {nb, hkv, sk, d};
  ke_tensor q, k, v, o;
  attn_alloc_qkvo(&q, &k, &v, &o, KE_F32, qs, ks);
  attn_fill_qkv(&q, &k, &v, 1.0f);
  attn_host h;
  attn_host_read(&h, &q, &k, &v);
  double *kd = h.k, *vd = h.v;
  vd[(0 * sk + 200) * d + 5] = NAN;
  kd[(1 * sk + 150) * d + 0] = NAN;
  for (int64_t e = 0; e < d; e++) kd[(2 * sk + 100) * d + e] = INFINITY;
  for (int64_t a = 0; a < nb; a++)
    for (int64_t j = 302; j < sk; j++)
      for (int64_t e = 0; e < d; e++)
        kd[(a * sk + j) * d + e] = vd[(a * sk + j) * d + e] = NAN;
  attn_host_write(&h, &q, &k, &v);
  dec_case c = mk(KE_F32, nb, hq, hkv, sq, sk, d, 4);
  c.causal = 1;
  c.offset = 300;
  dec_check_views(&c, "nan_inf", &q, &k, &v, &o, &o, &h);
  double *got = kt_to_doubles(&o);
  for (int64_t h = 0; h < hq; h++)
    for (int64_t i = 0; i < sq; i++) {
      const double *r0 = got + ((0 * hq + h) * sq + i) * d;
      const double *r1 = got + ((1 * hq + h) * sq + i) * d;
      const int late = i >= 2; /* sees a NaN row past 301 */
      ck_assert_msg(isnan(r0[5]), "V NaN lost (h %lld i %lld)", (long long)h,
                    (long long)i);
      ck_assert_msg(late || !isnan(r0[4]), "V NaN spread to element 4");
      ck_assert_msg(isnan(r1[0]) && isnan(r1[d - 1]), "K NaN lost");
    }
  free(got);
  attn_host_free(&h);
  attn_free_qkvo(&q, &k, &v, &o);
}
END_TEST

/* Rows whose visible scores are all -inf (K rows of -inf, q positive) give
 * zeros, split or not, even though every V is NaN; and so do rows with no
 * visible key (offset -3 over 2 keys: query i sees keys j <= i - 3). */
START_TEST(empty_rows) {
  const int64_t sq = 3, sk = 600, d = 32;
  int64_t qs[4] = {1, 2, sq, d}, ks[4] = {1, 1, sk, d};
  ke_tensor q, k, v, o;
  attn_alloc_qkvo(&q, &k, &v, &o, KE_BF16, qs, ks);
  kt_fill_uniform(&q, 0.5f, 1.0f);
  double *kd = malloc((size_t)(sk * d) * sizeof *kd);
  double *vd = malloc((size_t)(sk * d) * sizeof *vd);
  ck_assert(kd && vd);
  for (int64_t i = 0; i < sk * d; i++) {
    kd[i] = -INFINITY;
    vd[i] = NAN;
  }
  kt_from_doubles(&k, kd);
  kt_from_doubles(&v, vd);
  ke_tensor k2 = k, v2 = v;
  k2.shape[2] = v2.shape[2] = 2;
  static const int64_t splits[] = {1, 5};
  static const int64_t offsets[] = {(int64_t)1 << 40, -3};
  for (int s = 0; s < 2; s++)
    for (int f = 0; f < 2; f++) {
      ke_attention_params p;
      ke_attention_params_init(&p);
      p.causal = 1;
      p.causal_offset = offsets[f];
      kt_fill_uniform(&o, 1.0f, 2.0f);
      attn_force_splits(splits[s]);
      kt_assert_ok(ke_attention(kt_ctx(), &q, f ? &k2 : &k, f ? &v2 : &v, &o,
                                &p));
      attn_force_splits(0);
      double *got = kt_to_doubles(&o);
      for (int64_t i = 0; i < 2 * sq * d; i++)
        ck_assert_msg(got[i] == 0.0, "%s, %lld ranges: out[%lld] = %g",
                      f ? "nothing visible" : "all -inf",
                      (long long)splits[s], (long long)i, got[i]);
      free(got);
    }
  free(vd);
  free(kd);
  attn_free_qkvo(&q, &k, &v, &o);
}
END_TEST

/* ---- The engine scratch ------------------------------------------------------ */

/* A split call leaves one scratch allocation in the ledger, with its call
 * site in engine/src/scratch.c; later calls reuse it (counters back at
 * zero: a second, different shape and a repeat are right), a larger need
 * replaces it, and ke_scratch_release gives it back. */
START_TEST(scratch) {
  ke_context *ctx = kt_ctx();
  const size_t before = ke_ledger_outstanding(ctx, NULL, 0);
  dec_check(mk(KE_F32, 1, 4, 2, 1, 1000, 64, 6));
  ke_allocation live[64];
  size_t n = ke_ledger_outstanding(ctx, live, 64);
  ck_assert_uint_eq(n, before + 1);
  ck_assert_msg(strstr(live[n - 1].file, "scratch.c"), "scratch from %s",
                live[n - 1].file);
  const uint64_t first = live[n - 1].serial;
  dec_check(mk(KE_F32, 1, 2, 2, 1, 999, 64, 3));   /* fits: reused */
  dec_check(mk(KE_F32, 1, 4, 2, 1, 1000, 64, 6));  /* the first again */
  n = ke_ledger_outstanding(ctx, live, 64);
  ck_assert_uint_eq(n, before + 1);
  ck_assert_uint_eq(live[n - 1].serial, first);
  dec_check(mk(KE_BF16, 3, 16, 2, 1, 2000, 256, 9)); /* needs more */
  n = ke_ledger_outstanding(ctx, live, 64);
  ck_assert_uint_eq(n, before + 1);
  ck_assert_uint_ne(live[n - 1].serial, first);
  kt_assert_ok(ke_scratch_release(ctx));
  ck_assert_uint_eq(ke_ledger_outstanding(ctx, NULL, 0), before);
  kt_assert_ok(ke_scratch_release(ctx));           /* none: fine */
  dec_check(mk(KE_F16, 1, 4, 2, 1, 1000, 64, 6));  /* allocated anew */
  ck_assert_uint_eq(ke_ledger_outstanding(ctx, NULL, 0), before + 1);
}
END_TEST

/* The knobs refuse values out of range and keep the old ones: the
 * defaults with one field out of range, a field at a time. */
START_TEST(tuning_refusals) {
  ke_context *ctx = kt_ctx();
  ke__decode_tuning t, got;
  const struct {
    const char *name;
    int64_t *field;
    int64_t value;
  } bad[] = {{"blocks_per_mp", &t.blocks_per_mp, 0},
             {"min_chunk", &t.min_chunk, 0},
             {"force_splits", &t.force_splits, -1},
             {"dynamic", &t.dynamic, 4},
             {"stages", &t.stages, 5},
             {"matrix", &t.matrix, 1}};
  for (int i = 0; i < NELEM(bad); i++) {
    ke__decode_tuning_defaults(&t);
    *bad[i].field = bad[i].value;
    const int st = ke__decode_tuning_set(ctx, &t);
    ck_assert_msg(st == KE_EINVAL, "%s %lld: %s, expected KE_EINVAL",
                  bad[i].name, (long long)bad[i].value, ke_status_name(st));
  }
  kt_assert_ok(ke__decode_tuning_get(ctx, &got));
  ke__decode_tuning_defaults(&t);
  ck_assert_int_eq(got.force_splits, t.force_splits);
  ck_assert_int_eq(got.blocks_per_mp, t.blocks_per_mp);
  /* max_rows 0: every shape takes the prefill kernel, same results. */
  t.max_rows = 0;
  kt_assert_ok(ke__decode_tuning_set(ctx, &t));
  dec_case c = mk(KE_F32, 1, 4, 2, 1, 300, 64, 0);
  dec_check(c);
  kt_assert_ok(ke__decode_tuning_set(ctx, NULL));
}
END_TEST

/* ---- Steps taken from a counter, four stages ------------------------------ */

/* The decode knobs' other paths (kiln/test-tuning.h): the blocks of a row
 * tile taking its keys a step at a time from a shared counter (dynamic),
 * with 3 and 4 pipeline stages, and fixed ranges with 4. Many ranges over
 * a few steps each, the same call twice (the counters must be back at 0),
 * an odd key count, fewer keys than one step, a single key, more ranges
 * than steps, causal rows whose limits end mid-step, every lane geometry
 * and f32 (which keeps 3 stages). The matrix-unit kernels are off (matrix
 * 0): they have no step counter and would take most 16-bit calls here at
 * warp 32; matrix_path below tests them. GQA 4 with one or two KV heads:
 * the counters are per row tile, and more heads would only repeat them. */
static void dec_mode(int dynamic, int stages) {
  ke__decode_tuning t;
  kt_assert_ok(ke__decode_tuning_get(kt_ctx(), &t));
  t.dynamic = dynamic;
  t.stages = stages;
  t.matrix = 0;
  kt_assert_ok(ke__decode_tuning_set(kt_ctx(), &t));
}

START_TEST(dynamic_steps) {
  static const int modes[][2] = {{1, 3}, {1, 4}, {0, 4}};
  for (int m = 0; m < NELEM(modes); m++) {
    dec_mode(modes[m][0], modes[m][1]);
    dec_check(mk(KE_BF16, 1, 8, 2, 1, 5000, 128, 40));
    dec_check(mk(KE_BF16, 1, 8, 2, 1, 5000, 128, 40));
    dec_check(mk(KE_F16, 2, 4, 1, 1, 3001, 128, 7));
    dec_check(mk(KE_F16, 1, 8, 2, 1, 17, 128, 3));
    dec_check(mk(KE_BF16, 1, 4, 2, 1, 1, 128, 3));
    dec_check(mk(KE_BF16, 1, 4, 1, 1, 100, 64, 50));
    dec_check(mk(KE_F16, 1, 4, 2, 1, 999, 32, 5));
    dec_check(mk(KE_BF16, 1, 4, 2, 1, 999, 256, 5));
    dec_check(mk(KE_F32, 2, 4, 1, 1, 2000, 128, 6));
    dec_case c = mk(KE_BF16, 1, 4, 1, 4, 3001, 128, 9);
    c.causal = 1;
    c.offset = 1500;
    dec_check(c);
    c.offset = 17;
    dec_check(c);
  }
  kt_assert_ok(ke__decode_tuning_set(kt_ctx(), NULL));
}
END_TEST

/* ---- The matrix-unit kernels ----------------------------------------------- */

static void dec_matrix(int matrix) {
  ke__decode_tuning t;
  kt_assert_ok(ke__decode_tuning_get(kt_ctx(), &t));
  t.matrix = matrix;
  kt_assert_ok(ke__decode_tuning_set(kt_ctx(), &t));
}

/* The calls the matrix-unit kernels take (tile/decode_mma.h: 16-bit, D up to
 * 128 padded to 64 or 128, every row of a tile seeing the same keys) with
 * 2 and 3 stages, then with the SIMT kernels in their place (matrix 0):
 * key counts that end mid-tile, fewer keys than one warp's tile, a single
 * key, ranges of a few tiles, every row tile (GQA 1 to 16, several query
 * rows without a causal limit), peaked scores that rescale across tiles, a
 * causal single query whose keys end mid-tile with NaN K/V past it, one
 * with nothing visible, and NaN/Inf at visible keys. The long calls keep
 * their GQA ratios on one or two KV heads (the tiles are per KV head). */
START_TEST(matrix_path) {
  static const int modes[] = {2, 3, 0};
  for (int m = 0; m < NELEM(modes); m++) {
    dec_matrix(modes[m]);
    dec_check(mk(KE_BF16, 1, 8, 2, 1, 5000, 128, 40));
    dec_check(mk(KE_F16, 2, 4, 1, 1, 3001, 128, 7));
    dec_check(mk(KE_F16, 1, 8, 8, 1, 17, 128, 3));
    dec_check(mk(KE_BF16, 1, 4, 2, 1, 1, 128, 1));
    dec_check(mk(KE_BF16, 1, 16, 1, 1, 300, 64, 0));
    dec_check(mk(KE_F16, 1, 4, 1, 3, 1000, 80, 5));
    dec_check(mk(KE_BF16, 1, 4, 2, 1, 999, 8, 5));
    dec_check(mk(KE_F16, 3, 2, 1, 1, 4097, 112, 0));
    dec_case c = mk(KE_BF16, 1, 8, 2, 1, 2000, 96, 3);
    c.q_std = 6.0f;
    dec_check(c);
    c = mk(KE_BF16, 2, 4, 1, 1, 3001, 128, 9);
    c.causal = 1;
    c.offset = 1500;
    dec_check(c);
    c.offset = -1 - c.sk; /* nothing visible: zeros */
    dec_check(c);

    const int64_t nb = 2, hq = 4, hkv = 1, sk = 400, d = 128;
    int64_t qs[4] = {nb, hq, 1, d}, ks[4] = {nb, hkv, sk, d};
    ke_tensor q, k, v, o;
    attn_alloc_qkvo(&q, &k, &v, &o, KE_BF16, qs, ks);
    attn_fill_qkv(&q, &k, &v, 1.0f);
    attn_host h;
    attn_host_read(&h, &q, &k, &v);
    h.v[(0 * sk + 200) * d + 5] = NAN;
    h.k[(1 * sk + 150) * d + 0] = NAN;
    for (int64_t a = 0; a < nb; a++)
      for (int64_t j = 301; j < sk; j++)
        for (int64_t e = 0; e < d; e++)
          h.k[(a * sk + j) * d + e] = h.v[(a * sk + j) * d + e] = NAN;
    attn_host_write(&h, &q, &k, &v);
    c = mk(KE_BF16, nb, hq, hkv, 1, sk, d, 4);
    c.causal = 1;
    c.offset = 300; /* keys 0 .. 300 */
    dec_check_views(&c, "matrix_nan", &q, &k, &v, &o, &o, &h);
    double *got = kt_to_doubles(&o);
    for (int64_t hh = 0; hh < hq; hh++) {
      const double *r0 = got + (0 * hq + hh) * d, *r1 = got + (1 * hq + hh) * d;
      ck_assert_msg(isnan(r0[5]), "V NaN lost (head %lld)", (long long)hh);
      ck_assert_msg(!isnan(r0[4]), "V NaN spread to element 4");
      ck_assert_msg(isnan(r1[0]) && isnan(r1[d - 1]), "K NaN lost");
    }
    free(got);
    attn_host_free(&h);
    attn_free_qkvo(&q, &k, &v, &o);
  }
  kt_assert_ok(ke__decode_tuning_set(kt_ctx(), NULL));
}
END_TEST

static const kt_test attention_decode_tests[] = {
    KT_TEST(sizes),
    KT_TEST(gqa_ratios),
    KT_TEST(head_dims),
    KT_TEST(uneven_splits),
    KT_TEST(default_split),
    KT_TEST(causal_offsets),
    KT_TEST(strided_views),
    KT_TEST(nan_inf),
    KT_TEST(empty_rows),
    KT_TEST(scratch),
    KT_TEST(tuning_refusals),
    KT_TEST(dynamic_steps),
    KT_TEST(matrix_path),
};

KT_SUITE(kt_suite_attention_decode, "attention_decode", "gpu,kernel",
         attention_decode_tests);
