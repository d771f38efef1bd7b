/* Attention suite for the TILED kernels (kiln/attention.h), pinned with
 * kernel = KE_ATTN_KERNEL_TILED: the matrix-core kernel for f16/bf16 (in
 * host emulation kd_mma_nv at warp 32 and kd_mma_cdna at warp 64, the
 * vendors' fragment tables) and the register-tiled SIMT kernel for f32 and
 * for 16-bit inputs the matrix path does not take (D not a multiple of 8,
 * rows not 16-byte aligned). Sizes are multiples of no tile: D = 72, 112,
 * 200 besides 64, 80, 96, 128, 256; Sk = 1, 17, 3001; Sq = 1 (decode
 * shapes, which AUTO sends elsewhere today), 37, 77, 130; GQA ratios 1..8;
 * causal offsets negative, zero, positive and past the keys; packed QKV;
 * NaN and Inf in Q, K and V where the special-value rules say what happens.
 * Every check is against the double reference with the tolerances of
 * attention-check.c (docs/kernels-attention.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention-check.h"
#include "kiln/kernels.h"
#include "kiln/test-tuning.h"
#include "kiln/test.h"

/* A case pinned to the tiled kernels. */
static attn_case tiled(ke_dtype dt, int64_t b, int64_t hq, int64_t hkv,
                       int64_t sq, int64_t sk, int64_t d, int causal) {
  attn_case c = {dt, b, hq, hkv, sq, sk, d, causal, -1, 0.0f, 1.0f,
                 KE_ATTN_KERNEL_TILED, 0, 0};
  return c;
}

static void run(attn_case c) { free(attn_run(&c, 0)); }

static const ke_dtype kAll[] = {KE_F16, KE_BF16, KE_F32};

/* ---- Head dimensions ------------------------------------------------------- */

/* The named fast paths and padded ones (72 -> 80, 112 -> 128, 200 -> 256 on
 * the matrix path), causal and not, 77 queries of two heads sharing a kv
 * head against 150 keys. */
static void head_dims(ke_dtype dt) {
  static const int64_t ds[] = {64, 80, 96, 128, 256, 72, 112, 200};
  for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++)
    for (int causal = 0; causal < 2; causal++)
      run(tiled(dt, 1, 2, 1, 77, 150, ds[i], causal));
}

START_TEST(head_dims_f16) { head_dims(KE_F16); }
END_TEST
START_TEST(head_dims_bf16) { head_dims(KE_BF16); }
END_TEST
START_TEST(head_dims_f32) { head_dims(KE_F32); }
END_TEST

/* 16-bit D that is not a multiple of 8: the tiled SIMT kernel. */
START_TEST(head_dims_odd_16bit) {
  static const int64_t ds[] = {1, 3, 17, 100, 129, 255};
  for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
    run(tiled(KE_BF16, 1, 2, 1, 37, 113, ds[i], 1));
    run(tiled(KE_F16, 1, 2, 1, 37, 113, ds[i], 0));
  }
}
END_TEST

/* ---- Lengths ------------------------------------------------------------------ */

/* Sk = 1, 17, 3001 against Sq = 1, 37, 130, causal and not. */
static void key_lengths(ke_dtype dt) {
  static const int64_t sks[] = {1, 17, 3001}, sqs[] = {1, 37, 130};
  for (size_t i = 0; i < 3; i++)
    for (size_t j = 0; j < 3; j++)
      for (int causal = 0; causal < 2; causal++)
        run(tiled(dt, 1, 2, 1, sqs[j], sks[i], 64, causal));
}

START_TEST(key_lengths_f16) { key_lengths(KE_F16); }
END_TEST
START_TEST(key_lengths_bf16) { key_lengths(KE_BF16); }
END_TEST
START_TEST(key_lengths_f32) { key_lengths(KE_F32); }
END_TEST

/* Decode-like shapes on the tiled kernels: one and a few queries, GQA
 * groups packed into one row tile, long keys. */
START_TEST(decode_shapes) {
  for (size_t t = 0; t < 3; t++) {
    run(tiled(kAll[t], 2, 8, 2, 1, 1000, 128, 0));
    run(tiled(kAll[t], 1, 32, 4, 1, 777, 128, 1));
    run(tiled(kAll[t], 1, 16, 2, 4, 513, 64, 1));
  }
}
END_TEST

/* ---- Heads and masks ----------------------------------------------------------- */

/* GQA ratios 1..8 over two kv heads and two batches, and MQA. D 64: the
 * heads' rows share tiles the same way at every D (head_dims has the
 * others). */
START_TEST(gqa_ratios) {
  for (size_t t = 0; t < 3; t++) {
    for (int64_t r = 1; r <= 8; r++)
      run(tiled(kAll[t], 2, 2 * r, 2, 37, 150, 64, (int)(r % 2)));
    run(tiled(kAll[t], 1, 8, 1, 50, 90, 96, 1));
  }
}
END_TEST

/* A causal grid in launch order (kernels/tile/attn.h, global_order): each
 * block's row tile, kv head and batch come from its place in the launch,
 * longest row tiles first over every head and batch. Batch and kv-head
 * counts that differ and several row tiles per head (400 rows of GQA 2:
 * four 128-row tiles, the last of 16), so that a mapping that mixes them
 * up or repeats a block misses rows. */
START_TEST(causal_grid_order) {
  for (size_t t = 0; t < 3; t++) {
    run(tiled(kAll[t], 3, 4, 2, 200, 200, 128, 1));
    run(tiled(kAll[t], 2, 3, 3, 200, 260, 64, 1));
  }
}
END_TEST

/* Causal offsets: the default with Sq > Sk (negative: the first 90 queries
 * see nothing and must be zeros) and Sq < Sk, zero, small, and beyond the
 * keys (nothing masked). */
START_TEST(causal_offsets) {
  static const struct { int64_t sq, sk, offset; } cs[] = {
      {150, 60, -1}, {60, 150, -1}, {100, 100, 0},
      {70, 200, 5},  {70, 200, (int64_t)1 << 40}, {130, 130, -1},
  };
  for (size_t t = 0; t < 3; t++)
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
      attn_case c = tiled(kAll[t], 1, 4, 2, cs[i].sq, cs[i].sk, 64, 1);
      c.offset = cs[i].offset;
      double *ref = attn_run(&c, 1);
      if (cs[i].sq > cs[i].sk && cs[i].offset < 0)
        for (int64_t e = 0; e < 90 * 64; e++)
          ck_assert_msg(ref[e] == 0.0, "reference row %lld is not zero",
                        (long long)(e / 64));
      free(ref);
    }
}
END_TEST

/* Scales, and sharp softmaxes whose running max changes often. */
START_TEST(scales_and_sharp_scores) {
  for (size_t t = 0; t < 3; t++) {
    attn_case c = tiled(kAll[t], 1, 2, 1, 130, 700, 128, 1);
    c.scale = -0.7f;
    run(c);
    c.scale = 0.0f;
    c.q_std = 8.0f;
    run(c);
  }
}
END_TEST

/* P rounded once to the input dtype where a kernel takes round_p (the
 * Hopper kernel; kiln/attention.h), at the awkward sizes above: keys 17
 * and 3001, D 40 to 256, GQA, causal offsets negative and positive, sharp
 * scores; held to the bound with round_p's 2 u max|v| (attention-check.c).
 * f32 ignores round_p. */
START_TEST(rounded_p) {
  static const struct { int64_t b, hq, hkv, sq, sk, d; int causal; float scale, q_std; } cs[] = {
      {1, 2, 1, 130, 17, 64, 0, 0.0f, 1.0f},   {1, 2, 1, 37, 3001, 64, 1, 0.0f, 1.0f},
      {2, 4, 1, 37, 37, 40, 1, 0.2f, 1.0f},    {1, 2, 1, 77, 150, 200, 1, 0.0f, 1.0f},
      {2, 8, 2, 37, 150, 128, 0, 0.0f, 1.0f},  {1, 4, 2, 150, 60, 64, 1, 0.0f, 1.0f},
      {1, 2, 1, 130, 700, 128, 1, 0.0f, 8.0f}, {1, 2, 1, 77, 150, 256, 0, 0.0f, 1.0f},
  };
  for (size_t t = 0; t < 3; t++)
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
      attn_case c = tiled(kAll[t], cs[i].b, cs[i].hq, cs[i].hkv, cs[i].sq, cs[i].sk,
                          cs[i].d, cs[i].causal);
      c.scale = cs[i].scale;
      c.q_std = cs[i].q_std;
      c.round_p = 1;
      run(c);
    }
}
END_TEST

/* ---- Layouts ----------------------------------------------------------------------- */

/* Q, K, V as views of one packed [B, S, Hq + 2 Hkv, D] buffer and O a
 * [B, S, Hq, D] view; `first` elements into the buffers (1 misaligns
 * every row: the 16-bit inputs then take the SIMT kernel). */
static void packed_qkv(ke_dtype dt, int64_t first) {
  const int64_t b = 2, hq = 6, hkv = 2, s = 77, d = 64, heads = hq + 2 * hkv;
  const int64_t qkv_n = b * s * heads * d + first, o_n = b * s * hq * d + first;
  ke_tensor qkv, obuf;
  kt_alloc(&qkv, dt, 1, &qkv_n);
  kt_alloc(&obuf, dt, 1, &o_n);
  kt_fill_normal(&qkv, 0.0f, 1.0f);
  kt_fill_uniform(&obuf, 100.0f, 200.0f);
  const int64_t step = heads * d, bstep = s * heads * d;
  ke_tensor q = attn_bshd_view(&qkv, first, b, hq, s, d, step, bstep);
  ke_tensor k = attn_bshd_view(&qkv, first + hq * d, b, hkv, s, d, step, bstep);
  ke_tensor v =
      attn_bshd_view(&qkv, first + (hq + hkv) * d, b, hkv, s, d, step, bstep);
  ke_tensor o = attn_bshd_view(&obuf, first, b, hq, s, d, hq * d, s * hq * d);
  attn_case c = tiled(dt, b, hq, hkv, s, s, d, 1);
  attn_host h;
  attn_host_gather(&h, &qkv, &q, &qkv, &k, &qkv, &v);
  /* The whole O buffer: the view's elements against the reference, the
   * element before the view untouched. */
  char name[64];
  snprintf(name, sizeof name, "packed_qkv_%s_at%lld", ke_dtype_name(dt),
           (long long)first);
  free(attn_check_views(&c, name, &q, &k, &v, &o, &obuf, &h));
  attn_host_free(&h);
  kt_free(&obuf);
  kt_free(&qkv);
}

START_TEST(packed_qkv_views) {
  for (size_t t = 0; t < 3; t++) {
    packed_qkv(kAll[t], 0);
    packed_qkv(kAll[t], 1);
  }
}
END_TEST

/* ---- Special values ----------------------------------------------------------- */

/* Values planted into fresh N(0, 1) inputs of B = 3, one head, Sq = 150,
 * Sk = 200, D = 64, causal with offset 0 (query i sees keys 0..i, so keys
 * from 150 on are never visible) or not causal:
 *   batch 0: Q[5][0] NaN (row 5's scores); K[20][3] NaN (the scores of the
 *            rows that see key 20);
 *   batch 1: V[10][7] and V[100][30] NaN (element 7, 30 of the rows that
 *            see them: row tiles where some rows see them and others must
 *            not); V[160] and K[170] all NaN, never visible under the mask;
 *   batch 2: K[120][9] +inf (scores +inf or -inf by the sign of q[9]: +inf
 *            poisons the row, -inf weighs 0); Q[15] zeros but Q[15][2]
 *            -inf (row 15's scores +-inf or NaN).
 * The reference (IEEE arithmetic over the visible keys) is checked against
 * the documented rules where they decide, then the kernel against the
 * reference: NaN must meet NaN, and Inf must match in sign. */
typedef struct special {
  int tensor; /* 0 Q, 1 K, 2 V */
  int64_t batch, row, elem; /* elem -1: the whole row */
  double value;
} special;

#define SV_B 3
#define SV_SQ 150
#define SV_SK 200
#define SV_D 64

static const special kSpecials[] = {
    {0, 0, 5, 0, NAN},      {1, 0, 20, 3, NAN},   {2, 1, 10, 7, NAN},
    {2, 1, 100, 30, NAN},   {2, 1, 160, -1, NAN}, {1, 1, 170, -1, NAN},
    {1, 2, 120, 9, INFINITY}, {0, 2, 15, -1, 0.0}, {0, 2, 15, 2, -INFINITY},
};

/* What kiln/attention.h promises for element e of row i of batch b: 1 NaN,
 * 0 finite, -1 decided by an infinite score (NaN or not by its sign). */
static int promised_nan(int causal, int64_t b, int64_t i, int64_t e) {
  if (b == 2) return i == 15 || (i >= 120 || !causal) ? -1 : 0;
  if (!causal) return 1; /* K[20] (batch 0) and V[160] (batch 1) are seen */
  if (b == 0) return i == 5 || i >= 20;
  return (i >= 10 && e == 7) || (i >= 100 && e == 30);
}

static void plant(double *x, int64_t rows, const special *s, int tensor) {
  if (s->tensor != tensor) return;
  double *row = x + (s->batch * rows + s->row) * SV_D;
  for (int64_t e = 0; e < SV_D; e++)
    if (s->elem < 0 || s->elem == e) row[e] = s->value;
}

static void check_specials(ke_dtype dt, int causal) {
  int64_t qs[4] = {SV_B, 1, SV_SQ, SV_D}, ks[4] = {SV_B, 1, SV_SK, SV_D};
  ke_tensor q, k, v, o;
  attn_alloc_qkvo(&q, &k, &v, &o, dt, qs, ks);
  attn_fill_qkv(&q, &k, &v, 1.0f);
  attn_host h;
  attn_host_read(&h, &q, &k, &v);
  attn_case c = tiled(dt, SV_B, 1, 1, SV_SQ, SV_SK, SV_D, causal);
  c.offset = causal ? 0 : -1;
  /* The tolerance of the finite data (with the planted values it would be
   * infinite, and no finite error could fail). */
  const kt_tol tol = attn_tol(&c, h.q, h.k, h.v);
  for (size_t i = 0; i < sizeof kSpecials / sizeof kSpecials[0]; i++) {
    plant(h.q, SV_SQ, &kSpecials[i], 0);
    plant(h.k, SV_SK, &kSpecials[i], 1);
    plant(h.v, SV_SK, &kSpecials[i], 2);
  }
  attn_host_write(&h, &q, &k, &v);
  ke_attention_params p = attn_params(&c);
  kt_assert_ok(ke_attention(kt_ctx(), &q, &k, &v, &o, &p));

  double *ref = attn_ref(&c, &h, &p);
  for (int64_t b = 0; b < SV_B; b++)
    for (int64_t i = 0; i < SV_SQ; i++)
      for (int64_t e = 0; e < SV_D; e++) {
        const int want = promised_nan(causal, b, i, e);
        const double r = ref[(b * SV_SQ + i) * SV_D + e];
        ck_assert_msg(want < 0 || (isnan(r) != 0) == want,
                      "reference batch %lld row %lld element %lld: %g",
                      (long long)b, (long long)i, (long long)e, r);
      }
  char name[64];
  snprintf(name, sizeof name, "specials_%s%s", ke_dtype_name(dt),
           causal ? "_causal" : "");
  kt_assert_close(name, &o, ref, tol);
  free(ref);
  attn_host_free(&h);
  attn_free_qkvo(&q, &k, &v, &o);
}

START_TEST(special_values) {
  for (size_t t = 0; t < 3; t++)
    for (int causal = 0; causal < 2; causal++)
      check_specials(kAll[t], causal);
}
END_TEST

/* ---- V's range --------------------------------------------------------------------- */

/* V far outside f16's range: a power-of-two factor per (batch, kv head),
 * 2^40, 2^-100, 2^100 and 2^-60, and a third of each head's keys 2^-20
 * smaller still (bf16 on the Hopper kernel takes V to f16 with a scale per
 * (batch, kv head): a scale missing or taken from another head fails).
 * Each kv head's rows are held against the tolerance of its own inputs. */
static void wide_v_range(ke_dtype dt, int causal) {
  enum { B = 2, HQ = 4, HKV = 2, SQ = 77, SK = 150, D = 128, R = HQ / HKV };
  static const int kExp[B][HKV] = {{40, -100}, {100, -60}};
  int64_t qs[4] = {B, HQ, SQ, D}, ks[4] = {B, HKV, SK, D};
  ke_tensor q, k, v, o;
  attn_alloc_qkvo(&q, &k, &v, &o, dt, qs, ks);
  attn_fill_qkv(&q, &k, &v, 1.0f);
  attn_host h;
  attn_host_read(&h, &q, &k, &v);
  for (int64_t a = 0; a < B; a++)
    for (int64_t hk = 0; hk < HKV; hk++)
      for (int64_t j = 0; j < SK; j++)
        for (int64_t e = 0; e < D; e++) {
          double *x = &h.v[((a * HKV + hk) * SK + j) * D + e];
          *x = ldexp(*x, kExp[a][hk] - (j % 3 == 0 ? 20 : 0));
        }
  attn_host_write(&h, &q, &k, &v);
  attn_case c = tiled(dt, B, HQ, HKV, SQ, SK, D, causal);
  ke_attention_params p = attn_params(&c);
  kt_assert_ok(ke_attention(kt_ctx(), &q, &k, &v, &o, &p));
  double *ref = attn_ref(&c, &h, &p);
  for (int64_t a = 0; a < B; a++)
    for (int64_t hk = 0; hk < HKV; hk++) {
      const attn_case one = tiled(dt, 1, R, 1, SQ, SK, D, causal);
      const int64_t q0 = (a * HQ + hk * R) * SQ * D, k0 = (a * HKV + hk) * SK * D;
      const kt_tol tol = attn_tol(&one, h.q + q0, h.k + k0, h.v + k0);
      ke_tensor ov = o; /* this kv head's query heads, packed */
      ov.shape[0] = 1;
      ov.shape[1] = R;
      ov.data = (char *)o.data +
                (a * o.stride[0] + hk * R * o.stride[1]) * (int64_t)ke_dtype_size(dt);
      char name[80];
      snprintf(name, sizeof name, "wide_v_%s%s_b%lld_kvh%lld", ke_dtype_name(dt),
               causal ? "_causal" : "", (long long)a, (long long)hk);
      kt_assert_close(name, &ov, ref + q0, tol);
    }
  free(ref);
  attn_host_free(&h);
  attn_free_qkvo(&q, &k, &v, &o);
}

START_TEST(wide_v_range_bf16_f32) {
  for (int causal = 0; causal < 2; causal++) {
    wide_v_range(KE_BF16, causal);
    wide_v_range(KE_F32, causal);
  }
}
END_TEST

/* ---- Tuning ------------------------------------------------------------------------ */

/* The attention knobs (kiln/test-tuning.h): the values the runner set from
 * the environment (KILN_HOPPER_ATTN, KILN_FA3_V16) kept as a note, which
 * tests/harness/tuning-env.sh reads; values out of range refused with the
 * old ones kept; NULL the defaults; then the runner's values back for the
 * tests after this one in the same process. */
START_TEST(tuning_knobs) {
  ke_context *ctx = kt_ctx();
  ke__attention_tuning given, t, got;
  kt_assert_ok(ke__attention_tuning_get(ctx, &given));
  char note[64];
  snprintf(note, sizeof note, "hopper=%lld v16=%lld", (long long)given.hopper,
           (long long)given.v16);
  kt_note("attention_tuning", note);
  const struct {
    int64_t hopper, v16;
  } bad[] = {{2, -1}, {-1, -1}, {1, 2}, {1, -2}};
  for (int64_t i = 0; i < NELEM(bad); i++) {
    t.hopper = bad[i].hopper, t.v16 = bad[i].v16;
    const int st = ke__attention_tuning_set(ctx, &t);
    ck_assert_msg(st == KE_EINVAL, "hopper %lld v16 %lld: %s, expected "
                  "KE_EINVAL", (long long)t.hopper, (long long)t.v16,
                  ke_status_name(st));
    kt_assert_ok(ke__attention_tuning_get(ctx, &got));
    ck_assert(got.hopper == given.hopper && got.v16 == given.v16);
  }
  kt_assert_ok(ke__attention_tuning_set(ctx, NULL));
  kt_assert_ok(ke__attention_tuning_get(ctx, &got));
  ke__attention_tuning_defaults(&t);
  ck_assert(got.hopper == t.hopper && got.v16 == t.v16);
  ck_assert(t.hopper == 1 && t.v16 == -1);
  /* hopper 0 gives the same results (the mma.sync kernel, or no change
   * where there is no Hopper path). */
  t.hopper = 0;
  kt_assert_ok(ke__attention_tuning_set(ctx, &t));
  run(tiled(KE_F16, 1, 2, 1, 77, 130, 64, 1));
  kt_assert_ok(ke__attention_tuning_set(ctx, &given));
}
END_TEST

/* ---- GPU sizes (slow) -------------------------------------------------------------- */

START_TEST(long_sequences) {
  for (size_t t = 0; t < 2; t++) {
    run(tiled(kAll[t], 1, 2, 1, 4096, 4096, 128, 1));
    run(tiled(kAll[t], 1, 2, 2, 2048, 2048, 128, 0));
  }
  run(tiled(KE_BF16, 1, 2, 1, 2048, 2048, 64, 1));
  run(tiled(KE_BF16, 1, 2, 1, 2048, 2048, 256, 1));
  run(tiled(KE_BF16, 1, 4, 1, 256, 16384, 128, 0));
  run(tiled(KE_F32, 1, 2, 1, 2048, 2048, 128, 1));
  run(tiled(KE_F32, 1, 2, 2, 1024, 1024, 256, 0));
}
END_TEST

static const kt_test attention_tiled_tests[] = {
    KT_TEST(head_dims_f16),
    KT_TEST(head_dims_bf16),
    KT_TEST(head_dims_f32),
    KT_TEST(head_dims_odd_16bit),
    KT_TEST(key_lengths_f16),
    KT_TEST(key_lengths_bf16),
    KT_TEST(key_lengths_f32),
    KT_TEST(decode_shapes),
    KT_TEST(gqa_ratios),
    KT_TEST(causal_grid_order),
    KT_TEST(causal_offsets),
    KT_TEST(scales_and_sharp_scores),
    KT_TEST(rounded_p),
    KT_TEST(packed_qkv_views),
    KT_TEST(special_values),
    KT_TEST(wide_v_range_bf16_f32),
    KT_TEST(tuning_knobs),
    KT_TEST(long_sequences, .tags = "slow", .timeout_s = 1800),
};

KT_SUITE(kt_suite_attention_tiled, "attention_tiled", "gpu,kernel",
         attention_tiled_tests);
