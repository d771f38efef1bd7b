/* Attention suite: the fused kernel against the double reference over
 * Sq, Sk in {1, 7, 33, 113, 1000} for f32, {1, 7, 33, 113, 300} for the
 * 16-bit matrix-unit kernels (and 4096, 16384 tagged slow), decode with
 * long Sk, every head dimension the API names and odd ones, GQA ratios 1, 4,
 * 8, 32 and MQA, causal and not, explicit and default offsets (rows with no
 * visible key give zeros), NaN propagation, strided [B, S, H, D] views and
 * packed QKV, agreement with kv_repeat + MHA, and each refusal. The original
 * engine's attention was right only up to 32 keys: most checks here run far
 * beyond one key tile. The kernel is AUTO's choice (tiled for prefill,
 * ROWS for decode shapes) except in rows_kernel_prefill;
 * attention_tiled.c pins the tiled kernels.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention-check.h"
#include "kiln/kernels.h"
#include "kiln/test.h"

static void check(attn_case c) { (void)attn_run(&c, 0); }

static attn_case mk(ke_dtype dt, int64_t b, int64_t hq, int64_t hkv,
                    int64_t sq, int64_t sk, int64_t d, int causal) {
  attn_case c = {dt, b, hq, hkv, sq, sk, d, causal, -1, 0.0f, 1.0f,
                 KE_ATTN_KERNEL_AUTO, 0, 0};
  return c;
}

/* ---- Sizes ---------------------------------------------------------------- */

static const int64_t kSeqs[] = {1, 7, 33, 113};
#define NSEQS (sizeof kSeqs / sizeof kSeqs[0] + 1)

/* Every (Sq, Sk) pair of {1, 7, 33, 113, top}, causal and not, GQA 2:1 so
 * that rows of two heads share a tile. The 16-bit sweeps end at 300: on
 * the matrix-unit kernel (128-row, 64-key tiles, 3 stages) that is 5 row
 * tiles and 5 key tiles, each sequence ending mid-tile, the causal
 * diagonal crossing every row tile and the pipeline wrapping, for a sixth
 * of the emulated work of 1000 (the (1000, 1000) pairs were three
 * quarters of it). The same kernel still sees 3001 keys against 130
 * queries in attention_tiled.c's key_lengths and 1000 keys in its
 * decode_shapes. */
static void sweep(ke_dtype dt, int64_t d, int64_t top) {
  for (size_t a = 0; a < NSEQS; a++)
    for (size_t s = 0; s < NSEQS; s++)
      for (int causal = 0; causal < 2; causal++)
        check(mk(dt, 1, 2, 1, a < NSEQS - 1 ? kSeqs[a] : top,
                 s < NSEQS - 1 ? kSeqs[s] : top, d, causal));
}

START_TEST(sizes_f32) { sweep(KE_F32, 64, 1000); }
END_TEST

START_TEST(sizes_f16) { sweep(KE_F16, 128, 300); }
END_TEST

START_TEST(sizes_bf16) { sweep(KE_BF16, 96, 300); }
END_TEST

/* The head dimensions the API names, in every dtype, and odd ones (any D of
 * 1..256 is supported), on a prefill and a decode shape. */
START_TEST(head_dims) {
  const int64_t named[] = {64, 80, 96, 128, 256};
  const ke_dtype dts[] = {KE_F32, KE_F16, KE_BF16};
  for (size_t t = 0; t < 3; t++)
    for (size_t i = 0; i < 5; i++) {
      check(mk(dts[t], 1, 2, 1, 33, 113, named[i], 1));
      check(mk(dts[t], 2, 4, 2, 1, 113, named[i], 0));
    }
  const int64_t odd[] = {1, 3, 17, 100, 129, 200, 255};
  for (size_t i = 0; i < 7; i++) {
    check(mk(KE_F32, 1, 2, 1, 33, 113, odd[i], 0));
    check(mk(KE_F32, 1, 2, 1, 7, 33, odd[i], 1));
  }
}
END_TEST

/* GQA ratios 1, 4, 8, 32 over two kv heads, MQA (one kv head) with 1, 8
 * and 32 query heads; prefill and decode. */
START_TEST(gqa_ratios) {
  const int64_t ratios[] = {1, 4, 8, 32};
  for (size_t r = 0; r < 4; r++) {
    check(mk(KE_F32, 2, 2 * ratios[r], 2, 33, 113, 64, 1));
    check(mk(KE_F32, 2, 2 * ratios[r], 2, 1, 1000, 128, 0));
    check(mk(KE_BF16, 1, 2 * ratios[r], 2, 7, 113, 128, 1));
  }
  const int64_t mqa[] = {1, 8, 32};
  for (size_t i = 0; i < 3; i++) {
    check(mk(KE_F32, 2, mqa[i], 1, 113, 113, 80, 1));
    check(mk(KE_F16, 1, mqa[i], 1, 1, 1000, 128, 0));
  }
}
END_TEST

/* Decode: one query (and a few) against many keys, across key-tile edges;
 * the default offset puts the query last, so causal changes nothing, and
 * an explicit offset lets it see only a prefix. */
START_TEST(decode) {
  const int64_t sks[] = {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1000,
                         2048};
  for (size_t i = 0; i < sizeof sks / sizeof sks[0]; i++) {
    check(mk(KE_F32, 2, 8, 2, 1, sks[i], 128, 1));
    check(mk(KE_F32, 1, 4, 4, 1, sks[i], 256, 0));
  }
  attn_case c = mk(KE_F32, 1, 8, 1, 1, 1000, 64, 1);
  c.offset = 500;  /* sees keys 0..500 */
  check(c);
  c.sq = 4;        /* speculative decode: four queries */
  c.offset = -1;
  check(c);
  check(mk(KE_BF16, 4, 32, 8, 1, 2048, 128, 0));
}
END_TEST

/* GPU-sized decode: 4096 and 16384 keys. */
START_TEST(decode_long) {
  const int64_t sks[] = {4096, 16384};
  for (size_t i = 0; i < 2; i++) {
    check(mk(KE_F32, 2, 32, 8, 1, sks[i], 128, 1));
    check(mk(KE_F32, 1, 8, 1, 1, sks[i], 256, 0));
    check(mk(KE_BF16, 2, 32, 4, 1, sks[i], 128, 0));
    check(mk(KE_F16, 1, 16, 16, 1, sks[i], 64, 0));
  }
}
END_TEST

/* GPU-sized prefill: 4096 and 16384 positions, and long keys for a short
 * chunk of queries. Heads and D are kept small where the double reference
 * would take minutes. */
START_TEST(long_sequences) {
  check(mk(KE_F32, 1, 2, 1, 4096, 4096, 128, 1));
  check(mk(KE_F32, 1, 2, 2, 4096, 4096, 64, 0));
  check(mk(KE_BF16, 1, 4, 1, 4096, 4096, 128, 1));
  check(mk(KE_F32, 1, 1, 1, 16384, 16384, 64, 1));
  check(mk(KE_F16, 1, 2, 1, 113, 16384, 128, 0));
  check(mk(KE_F32, 1, 4, 2, 1000, 16384, 80, 1));
}
END_TEST

/* The ROWS kernel pinned on prefill shapes, which AUTO now sends to the
 * tiled kernels (kiln/attention.h): it must stay right for every shape. */
START_TEST(rows_kernel_prefill) {
  const ke_dtype dts[] = {KE_F32, KE_F16, KE_BF16};
  for (size_t t = 0; t < 3; t++) {
    attn_case c = mk(dts[t], 1, 2, 1, 300, 300, 128, 1);
    c.kernel = KE_ATTN_KERNEL_ROWS;
    check(c);
    c = mk(dts[t], 2, 8, 2, 113, 500, 64, 0);
    c.kernel = KE_ATTN_KERNEL_ROWS;
    check(c);
  }
}
END_TEST

/* ---- Masking and offsets ---------------------------------------------------- */

/* Explicit offsets, and the default with Sq > Sk, whose first Sq - Sk
 * queries precede every key: those rows must be exactly zero. */
START_TEST(causal_offsets) {
  const int64_t offsets[] = {0, 5, 80, 112, (int64_t)1 << 40};
  for (size_t i = 0; i < 5; i++) {
    attn_case c = mk(KE_F32, 1, 4, 2, 33, 113, 64, 1);
    c.offset = offsets[i];
    check(c);
  }
  attn_case c = mk(KE_F32, 1, 2, 1, 113, 33, 64, 1);  /* offset -80 */
  double *ref = attn_run(&c, 1);
  for (int64_t h = 0; h < 2; h++)
    for (int64_t i = 0; i < 113; i++)
      for (int64_t e = 0; e < 64; e++) {
        const double x = ref[(h * 113 + i) * 64 + e];
        if (i < 80) ck_assert_msg(x == 0.0, "row %lld not zero", (long long)i);
        else ck_assert_msg(x != 0.0 && isfinite(x), "row %lld", (long long)i);
      }
  free(ref);
  check(mk(KE_BF16, 2, 8, 2, 1000, 7, 128, 1));
  check(mk(KE_F16, 1, 2, 2, 1000, 1, 256, 1));
}
END_TEST

/* Scales other than 1/sqrt(D), and sharp softmaxes (large scores), where
 * the running max changes often and most weights underflow. */
START_TEST(scales_and_sharp_scores) {
  const float scales[] = {0.5f, -1.0f, 2.0f};
  for (size_t i = 0; i < 3; i++) {
    attn_case c = mk(KE_F32, 1, 4, 1, 33, 1000, 64, i != 1);
    c.scale = scales[i];
    check(c);
  }
  attn_case c = mk(KE_F32, 1, 2, 1, 113, 1000, 128, 1);
  c.q_std = 8.0f;  /* score spread ~ 8: nearly one-hot rows */
  check(c);
  c.dtype = KE_BF16;
  check(c);
  c = mk(KE_F32, 1, 2, 2, 1, 2048, 64, 0);
  c.q_std = 20.0f;
  check(c);
}
END_TEST

/* ---- Special values --------------------------------------------------------- */

/* NaN planted in fresh inputs; the kernel against the reference (NaN must
 * meet NaN), and the reference against what the API promises. Causal with
 * offset 0: query i sees keys 0..i, and keys >= Sq are never visible.
 *   batch 0: Q row 5 NaN (row 5's scores); K[20] one element NaN (scores
 *            of rows >= 20); V[10] element 7 NaN (element 7 of rows >= 10);
 *   batch 1: V[20] all NaN (rows >= 20);
 *   both:    V[70] and K[71] all NaN, never visible: no effect.
 * Without the mask every row sees keys 70 and 71 and is NaN. */
static int nan_expected(int64_t b, int64_t i, int64_t e) {
  if (b == 0) return i == 5 || i >= 20 || (i >= 10 && e == 7);
  return i >= 20;
}

START_TEST(nan_propagation) {
  const int64_t nb = 2, sq = 40, sk = 100, d = 64;
  int64_t qs[4] = {nb, 1, sq, d}, ks[4] = {nb, 1, sk, d};
  ke_tensor q, k, v, o;
  attn_alloc_qkvo(&q, &k, &v, &o, KE_F32, qs, ks);
  attn_fill_qkv(&q, &k, &v, 1.0f);
  attn_host h;
  attn_host_read(&h, &q, &k, &v);
  double *qd = h.q, *kd = h.k, *vd = h.v;
  double *k1 = kd + sk * d, *v1 = vd + sk * d;  /* batch 1 */
  qd[5 * d + 0] = NAN;
  kd[20 * d + 3] = NAN;
  vd[10 * d + 7] = NAN;
  for (int64_t e = 0; e < d; e++) {
    v1[20 * d + e] = NAN;
    vd[70 * d + e] = kd[71 * d + e] = NAN;
    v1[70 * d + e] = k1[71 * d + e] = NAN;
  }
  attn_host_write(&h, &q, &k, &v);
  ke_attention_params p;
  ke_attention_params_init(&p);
  p.causal = 1;
  p.causal_offset = 0;
  kt_assert_ok(ke_attention(kt_ctx(), &q, &k, &v, &o, &p));
  /* The finite entries: short rows of N(0, 1) data, well inside f32's
   * tolerance above; the NaN entries must match exactly. */
  const kt_tol nan_tol = {1e-5, 1e-4, 1e-10, 0};
  double *ref = malloc((size_t)(nb * sq * d) * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  ke_attention_ref(qd, kd, vd, ref, nb, 1, 1, sq, sk, d, &p);
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < sq; i++)
      for (int64_t e = 0; e < d; e++)
        ck_assert_msg((isnan(ref[(b * sq + i) * d + e]) != 0) ==
                          nan_expected(b, i, e),
                      "reference batch %lld row %lld element %lld",
                      (long long)b, (long long)i, (long long)e);
  kt_assert_close("nan_causal", &o, ref, nan_tol);

  p.causal = 0;
  kt_assert_ok(ke_attention(kt_ctx(), &q, &k, &v, &o, &p));
  ke_attention_ref(qd, kd, vd, ref, nb, 1, 1, sq, sk, d, &p);
  for (int64_t i = 0; i < nb * sq * d; i++) ck_assert(isnan(ref[i]));
  kt_assert_close("nan_unmasked", &o, ref, nan_tol);
  free(ref);
  attn_host_free(&h);
  attn_free_qkvo(&q, &k, &v, &o);
}
END_TEST

/* Rows with no visible key are zeros even when every masked V is NaN. */
START_TEST(fully_masked_rows) {
  const int64_t sq = 113, sk = 33, d = 128;
  int64_t qs[4] = {1, 2, sq, d}, ks[4] = {1, 1, sk, d};
  ke_tensor q, k, v, o;
  attn_alloc_qkvo(&q, &k, &v, &o, KE_BF16, qs, ks);
  kt_fill_normal(&q, 0.0f, 1.0f);
  kt_fill_normal(&k, 0.0f, 1.0f);
  kt_fill_uniform(&o, 1.0f, 2.0f);
  double *vd = malloc((size_t)(sk * d) * sizeof *vd);
  ck_assert_ptr_nonnull(vd);
  for (int64_t i = 0; i < sk * d; i++) vd[i] = NAN;
  kt_from_doubles(&v, vd);
  ke_attention_params p;
  ke_attention_params_init(&p);
  p.causal = 1;  /* default offset Sk - Sq = -80: rows 0..79 see nothing */
  kt_assert_ok(ke_attention(kt_ctx(), &q, &k, &v, &o, &p));
  double *got = kt_to_doubles(&o);
  for (int64_t h = 0; h < 2; h++)
    for (int64_t i = 0; i < sq; i++)
      for (int64_t e = 0; e < d; e++) {
        const double x = got[(h * sq + i) * d + e];
        if (i < 80) ck_assert_msg(x == 0.0, "masked row %lld: %g",
                                  (long long)i, x);
        else ck_assert_msg(isnan(x), "visible row %lld: %g", (long long)i,
                           x);
      }
  free(got);
  free(vd);
  attn_free_qkvo(&q, &k, &v, &o);
}
END_TEST

/* ---- Layouts ---------------------------------------------------------------- */

/* Q, K, V and O as [B, S, H, D] buffers; then Q, K, V as interleaved views
 * of one packed QKV projection [B, S, Hq + 2 Hkv, D]. */
START_TEST(strided_layouts) {
  const int64_t b = 2, hq = 8, hkv = 2, sq = 33, sk = 113, d = 80;
  attn_case c = mk(KE_F32, b, hq, hkv, sq, sk, d, 1);
  int64_t qb[4] = {b, sq, hq, d}, kb[4] = {b, sk, hkv, d};
  ke_tensor qbuf, kbuf, vbuf, obuf;
  kt_alloc(&qbuf, KE_F32, 4, qb);
  kt_alloc(&kbuf, KE_F32, 4, kb);
  kt_alloc(&vbuf, KE_F32, 4, kb);
  kt_alloc(&obuf, KE_F32, 4, qb);
  attn_fill_qkv(&qbuf, &kbuf, &vbuf, 1.0f);
  kt_fill_uniform(&obuf, 100.0f, 200.0f);
  ke_tensor q = attn_bshd_view(&qbuf, 0, b, hq, sq, d, hq * d, sq * hq * d);
  ke_tensor k = attn_bshd_view(&kbuf, 0, b, hkv, sk, d, hkv * d, sk * hkv * d);
  ke_tensor v = attn_bshd_view(&vbuf, 0, b, hkv, sk, d, hkv * d, sk * hkv * d);
  ke_tensor o = attn_bshd_view(&obuf, 0, b, hq, sq, d, hq * d, sq * hq * d);
  attn_host h;
  attn_host_gather(&h, &qbuf, &q, &kbuf, &k, &vbuf, &v);
  free(attn_check_views(&c, "attn_bshd", &q, &k, &v, &o, &obuf, &h));
  attn_host_free(&h);

  /* Packed QKV: one [B, Sq, Hq + 2 Hkv, D] buffer (self-attention, so
   * Sk = Sq here), Q/K/V views of its head ranges. */
  const int64_t heads = hq + 2 * hkv, s2 = 113;
  int64_t qkv_shape[4] = {b, s2, heads, d};
  ke_tensor qkv, obuf2;
  kt_alloc(&qkv, KE_BF16, 4, qkv_shape);
  int64_t o2_shape[4] = {b, hq, s2, d};
  kt_alloc(&obuf2, KE_BF16, 4, o2_shape);
  kt_fill_normal(&qkv, 0.0f, 1.0f);
  const int64_t step = heads * d, bstep = s2 * heads * d;
  ke_tensor q2 = attn_bshd_view(&qkv, 0, b, hq, s2, d, step, bstep);
  ke_tensor k2 = attn_bshd_view(&qkv, hq * d, b, hkv, s2, d, step, bstep);
  ke_tensor v2 = attn_bshd_view(&qkv, (hq + hkv) * d, b, hkv, s2, d, step, bstep);
  attn_case c2 = mk(KE_BF16, b, hq, hkv, s2, s2, d, 1);
  attn_host_gather(&h, &qkv, &q2, &qkv, &k2, &qkv, &v2);
  free(attn_check_views(&c2, "attn_packed_qkv", &q2, &k2, &v2, &obuf2,
                        &obuf2, &h));
  attn_host_free(&h);
  kt_free(&obuf2);
  kt_free(&qkv);
  kt_free(&obuf);
  kt_free(&vbuf);
  kt_free(&kbuf);
  kt_free(&qbuf);
}
END_TEST

/* GQA read directly agrees with MHA over K/V materialised by kv_repeat. */
START_TEST(matches_kv_repeat) {
  const int64_t b = 2, hq = 16, hkv = 2, sq = 33, sk = 1000, d = 128;
  int64_t qs[4] = {b, hq, sq, d}, ks[4] = {b, hkv, sk, d};
  int64_t rs[4] = {b, hq, sk, d};
  ke_tensor q, k, v, kr, vr, o1, o2;
  kt_alloc(&q, KE_F32, 4, qs);
  kt_alloc(&k, KE_F32, 4, ks);
  kt_alloc(&v, KE_F32, 4, ks);
  kt_alloc(&kr, KE_F32, 4, rs);
  kt_alloc(&vr, KE_F32, 4, rs);
  kt_alloc(&o1, KE_F32, 4, qs);
  kt_alloc(&o2, KE_F32, 4, qs);
  attn_fill_qkv(&q, &k, &v, 1.0f);
  ke_attention_params p;
  ke_attention_params_init(&p);
  p.causal = 1;
  kt_assert_ok(ke_attention(kt_ctx(), &q, &k, &v, &o1, &p));
  kt_assert_ok(ke_kv_repeat(kt_ctx(), &k, &kr));
  kt_assert_ok(ke_kv_repeat(kt_ctx(), &v, &vr));
  kt_assert_ok(ke_attention(kt_ctx(), &q, &kr, &vr, &o2, &p));
  double *a = kt_to_doubles(&o1);
  /* Same f32 arithmetic per row, possibly another tile shape: within the
   * f32 tolerance of the suite, not bit for bit. */
  attn_case c = mk(KE_F32, b, hq, hkv, sq, sk, d, 1);
  attn_host h;
  attn_host_read(&h, &q, &k, &v);
  kt_assert_close("gqa_vs_repeated_mha", &o2, a, attn_tol(&c, h.q, h.k, h.v));
  attn_host_free(&h);
  free(a);
  kt_free(&o2);
  kt_free(&o1);
  kt_free(&vr);
  kt_free(&kr);
  kt_free(&v);
  kt_free(&k);
  kt_free(&q);
}
END_TEST

/* ---- Throughput ------------------------------------------------------------ */

/* GPU-sized shapes timed with the engine's launch events (tag perf, slow;
 * skipped on the host backend): one warm-up, then five launches; notes
 * give the median time and TFLOP/s counting 4 D flops per visible
 * (query, key) pair. Each output must be finite. */
START_TEST(throughput) {
  if (strcmp(ke_backend_name(), "host") == 0)
    KT_SKIP("throughput needs a GPU");
  const attn_case shapes[] = {
      mk(KE_BF16, 1, 32, 8, 4096, 4096, 128, 1),
      mk(KE_F16, 4, 32, 32, 1024, 1024, 64, 0),
      mk(KE_F32, 1, 32, 32, 4096, 4096, 128, 0),
      mk(KE_BF16, 1, 16, 16, 16384, 16384, 64, 1),
      mk(KE_BF16, 8, 32, 8, 1, 16384, 128, 0),
      mk(KE_F32, 8, 32, 8, 1, 4096, 128, 0),
  };
  ke_context *ctx = kt_ctx();
  for (size_t n = 0; n < sizeof shapes / sizeof shapes[0]; n++) {
    const attn_case *c = &shapes[n];
    int64_t qs[4] = {c->b, c->hq, c->sq, c->d};
    int64_t ks[4] = {c->b, c->hkv, c->sk, c->d};
    ke_tensor q, k, v, o;
    attn_alloc_qkvo(&q, &k, &v, &o, c->dtype, qs, ks);
    attn_fill_qkv(&q, &k, &v, 1.0f);
    ke_attention_params p = attn_params(c);
    kt_assert_ok(ke_attention(ctx, &q, &k, &v, &o, &p));
    ke_kernel_stats st[8];
    size_t nst = 0;
    kt_assert_ok(ke_timing_collect(ctx, st, 8, &nst));
    ke_timing_reset(ctx);
    for (int r = 0; r < 5; r++)
      kt_assert_ok(ke_attention(ctx, &q, &k, &v, &o, &p));
    kt_assert_ok(ke_timing_collect(ctx, st, 8, &nst));
    ck_assert_uint_eq(nst, 1);
    ck_assert_uint_eq(st[0].launches, 5);
    double pairs = 0.0;  /* visible (query, key) pairs per head */
    for (int64_t i = 0; i < c->sq; i++) {
      int64_t vis = c->causal ? c->sk - c->sq + i + 1 : c->sk;
      pairs += (double)(vis < 0 ? 0 : (vis > c->sk ? c->sk : vis));
    }
    const double flops = 4.0 * (double)c->d * pairs * (double)(c->b * c->hq);
    char key[96], value[128];
    attn_case_name(c, key, sizeof key);
    snprintf(value, sizeof value, "median %.3f ms, %.2f TFLOP/s",
             st[0].median_ms, flops / (st[0].median_ms * 1e-3) / 1e12);
    kt_note(key, value);
    /* One assertion for the whole output: each ck_assert records its
     * location through Check's pipe, millions of writes at these sizes. */
    double *out = kt_to_doubles(&o);
    int64_t bad = -1;
    for (int64_t i = 0; i < ke_tensor_numel(&o) && bad < 0; i++)
      if (!isfinite(out[i])) bad = i;
    ck_assert_msg(bad < 0, "%s: output %lld is %g", key, (long long)bad,
                  bad < 0 ? 0.0 : out[bad]);
    free(out);
    attn_free_qkvo(&q, &k, &v, &o);
  }
}
END_TEST

/* ---- Refusals ----------------------------------------------------------------- */

START_TEST(refusals) {
  int64_t qs[4] = {1, 6, 7, 64}, ks[4] = {1, 4, 33, 64};
  int64_t ks2[4] = {1, 2, 33, 64};
  ke_tensor q, k, v, o, k2, v2;
  kt_alloc(&q, KE_F32, 4, qs);
  kt_alloc(&o, KE_F32, 4, qs);
  kt_alloc(&k, KE_F32, 4, ks);
  kt_alloc(&v, KE_F32, 4, ks);
  kt_alloc(&k2, KE_F32, 4, ks2);
  kt_alloc(&v2, KE_F32, 4, ks2);
  ke_context *ctx = kt_ctx();
  /* Hq 6 is not a multiple of Hkv 4. */
  kt_assert_status(ke_attention(ctx, &q, &k, &v, &o, NULL), KE_ESHAPE);
  kt_assert_ok(ke_attention(ctx, &q, &k2, &v2, &o, NULL));  /* 6 / 2 is */

  /* Unsupported D: 257 (views of the same buffers, shapes agreeing). */
  ke_tensor qd = q, od = o, kd = k2, vd = v2;
  qd.shape[3] = od.shape[3] = kd.shape[3] = vd.shape[3] = 257;
  qd.shape[2] = od.shape[2] = 1;
  kd.shape[2] = vd.shape[2] = 1;
  qd.shape[1] = od.shape[1] = 1;
  kd.shape[1] = vd.shape[1] = 1;
  kt_assert_status(ke_attention(ctx, &qd, &kd, &vd, &od, NULL), KE_ESHAPE);

  /* Mismatched shapes: o vs q, v vs k, B, D. */
  ke_tensor t = o;
  t.shape[2] = 6;
  kt_assert_status(ke_attention(ctx, &q, &k2, &v2, &t, NULL), KE_ESHAPE);
  t = v2;
  t.shape[2] = 32;
  kt_assert_status(ke_attention(ctx, &q, &k2, &t, &o, NULL), KE_ESHAPE);
  ke_tensor tk = k2, tv = v2;
  tk.shape[3] = tv.shape[3] = 32;  /* D of K/V differs from Q's */
  kt_assert_status(ke_attention(ctx, &q, &tk, &tv, &o, NULL), KE_ESHAPE);
  ke_tensor tq = q, to = o;
  tq.shape[0] = to.shape[0] = 2;   /* B differs */
  tq.stride[0] = to.stride[0] = 6 * 7 * 64 / 2;
  kt_assert_status(ke_attention(ctx, &tq, &k2, &v2, &to, NULL), KE_ESHAPE);
  t = q;
  t.rank = 3;
  kt_assert_status(ke_attention(ctx, &t, &k2, &v2, &o, NULL), KE_ESHAPE);

  /* Layouts: D not contiguous, negative stride, o overlapping itself or an
   * input. */
  t = q;
  t.shape[3] = 32;
  t.stride[3] = 2;
  to = o;
  to.shape[3] = 32;
  tk = k2;
  tk.shape[3] = 32;
  tv = v2;
  tv.shape[3] = 32;
  kt_assert_status(ke_attention(ctx, &t, &tk, &tv, &to, NULL), KE_ESHAPE);
  t = k2;
  t.stride[2] = -64;
  kt_assert_status(ke_attention(ctx, &q, &t, &v2, &o, NULL), KE_ESHAPE);
  t = o;
  t.stride[1] = 0;
  kt_assert_status(ke_attention(ctx, &q, &k2, &v2, &t, NULL), KE_ESHAPE);
  kt_assert_status(ke_attention(ctx, &q, &k2, &v2, &q, NULL), KE_ESHAPE);

  /* Sizes past the limits: refused before any launch, so views of the
   * small buffers serve. */
  tq = q;
  to = o;
  tq.shape[2] = to.shape[2] = (int64_t)1 << 27;  /* 3 * 2^27 rows per kv */
  kt_assert_status(ke_attention(ctx, &tq, &k2, &v2, &to, NULL), KE_ESHAPE);
  ck_assert_msg(strstr(ke_last_error(), "2^28"), "%s", ke_last_error());
  tq = q;
  to = o;
  tk = k2;
  tv = v2;
  tq.shape[0] = to.shape[0] = tk.shape[0] = tv.shape[0] = 65536;
  kt_assert_status(ke_attention(ctx, &tq, &tk, &tv, &to, NULL), KE_ESHAPE);
  ck_assert_msg(strstr(ke_last_error(), "65535"), "%s", ke_last_error());

  /* Dtypes: invalid, and mixed. */
  t = q;
  t.dtype = (ke_dtype)5;
  kt_assert_status(ke_attention(ctx, &t, &k2, &v2, &o, NULL), KE_EDTYPE);
  t = o;
  t.dtype = KE_F16;
  kt_assert_status(ke_attention(ctx, &q, &k2, &v2, &t, NULL), KE_EDTYPE);
  t = v2;
  t.dtype = KE_BF16;
  kt_assert_status(ke_attention(ctx, &q, &k2, &t, &o, NULL), KE_EDTYPE);

  /* Parameters and NULLs. */
  ke_attention_params p;
  ke_attention_params_init(&p);
  p.scale = NAN;
  kt_assert_status(ke_attention(ctx, &q, &k2, &v2, &o, &p), KE_EINVAL);
  ke_attention_params_init(&p);
  p.causal = 1;
  p.causal_offset = (int64_t)1 << 62;
  kt_assert_status(ke_attention(ctx, &q, &k2, &v2, &o, &p), KE_EINVAL);
  ke_attention_params_init(&p);
  p.kernel = (ke_attention_kernel)7;
  kt_assert_status(ke_attention(ctx, &q, &k2, &v2, &o, &p), KE_EINVAL);
  ck_assert_msg(strstr(ke_last_error(), "kernel 7"), "%s", ke_last_error());
  ke_attention_params_init(&p);
  p.round_p = 2;
  kt_assert_status(ke_attention(ctx, &q, &k2, &v2, &o, &p), KE_EINVAL);
  ck_assert_msg(strstr(ke_last_error(), "round_p 2"), "%s", ke_last_error());
  kt_assert_status(ke_attention(ctx, &q, NULL, &v2, &o, NULL), KE_EINVAL);
  kt_assert_status(ke_attention(NULL, &q, &k2, &v2, &o, NULL), KE_EINVAL);
  kt_free(&v2);
  kt_free(&k2);
  kt_free(&v);
  kt_free(&k);
  kt_free(&o);
  kt_free(&q);
}
END_TEST

static const kt_test attention_tests[] = {
    KT_TEST(sizes_f32),
    KT_TEST(sizes_f16),
    KT_TEST(sizes_bf16),
    KT_TEST(head_dims),
    KT_TEST(gqa_ratios),
    KT_TEST(decode),
    KT_TEST(rows_kernel_prefill),
    KT_TEST(decode_long, .tags = "slow", .timeout_s = 600),
    KT_TEST(long_sequences, .tags = "slow", .timeout_s = 900),
    KT_TEST(causal_offsets),
    KT_TEST(scales_and_sharp_scores),
    KT_TEST(nan_propagation),
    KT_TEST(fully_masked_rows),
    KT_TEST(strided_layouts),
    KT_TEST(matches_kv_repeat),
    KT_TEST(refusals),
    KT_TEST(throughput, .tags = "slow,perf", .timeout_s = 300),
};

KT_SUITE(kt_suite_attention, "attention", "gpu,kernel", attention_tests);
