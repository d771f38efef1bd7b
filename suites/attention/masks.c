/* Masks suite: causal, local window, global + local and their compositions
 * on [B, H, Sq, Sk] scores of every dtype, with the decode offset and
 * explicit offsets; hand-written patterns that pin the predicate itself;
 * visible entries left bit for bit; strided views; each refusal.
 *
 * The mask writes -inf or leaves a value alone, so every check is exact
 * (atol = rtol = 0): an entry is either the input, read back, or -inf.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

static const kt_tol kExact = {0.0, 0.0, 0.0, 0};
static const int64_t kSeqs[] = {1, 7, 33, 113, 1000};
#define NSEQS (sizeof kSeqs / sizeof kSeqs[0])

static ke_mask_params mask(int causal, int64_t window, int64_t n_global,
                           int64_t offset) {
  ke_mask_params p;
  ke_mask_params_init(&p);
  p.causal = causal;
  p.window = window;
  p.n_global = n_global;
  p.offset = offset;
  return p;
}

/* Masks fresh normal scores of `shape` (rank 2..6) and compares every
 * element with the reference on the values read back. */
static void check_mask_shape(ke_dtype dt, int rank, const int64_t *shape,
                             const ke_mask_params *p) {
  ke_tensor s;
  kt_alloc(&s, dt, rank, shape);
  kt_fill_normal(&s, 0.0f, 3.0f);
  double *ref = kt_to_doubles(&s);
  kt_assert_ok(ke_mask_apply(kt_ctx(), &s, p));
  const int64_t sq = shape[rank - 2], sk = shape[rank - 1];
  ke_mask_apply_ref(ref, ke_tensor_numel(&s) / (sq * sk), sq, sk, p);
  char name[160];
  snprintf(name, sizeof name,
           "mask_%s_r%d_%lldx%lld_c%d_w%lld_g%lld_off%lld", ke_dtype_name(dt),
           rank, (long long)sq, (long long)sk, p->causal,
           (long long)p->window, (long long)p->n_global,
           (long long)p->offset);
  kt_assert_close(name, &s, ref, kExact);
  free(ref);
  kt_free(&s);
}

static void check_mask(ke_dtype dt, int64_t b, int64_t h, int64_t sq,
                       int64_t sk, ke_mask_params p) {
  int64_t shape[4] = {b, h, sq, sk};
  check_mask_shape(dt, 4, shape, &p);
}

/* Every (Sq, Sk) of kSeqs under one mask with the default offset. */
static void sweep(ke_dtype dt, ke_mask_params p) {
  for (size_t a = 0; a < NSEQS; a++)
    for (size_t c = 0; c < NSEQS; c++)
      check_mask(dt, 1, 2, kSeqs[a], kSeqs[c], p);
}

START_TEST(causal_f32) { sweep(KE_F32, mask(1, -1, 0, -1)); }
END_TEST

START_TEST(causal_f16) { sweep(KE_F16, mask(1, -1, 0, -1)); }
END_TEST

START_TEST(causal_bf16) { sweep(KE_BF16, mask(1, -1, 0, -1)); }
END_TEST

/* Symmetric windows from 0 (the diagonal only) to wider than the rows. */
START_TEST(local_window) {
  const int64_t windows[] = {0, 1, 5, 64, 5000};
  for (size_t w = 0; w < 5; w++) {
    check_mask(KE_F32, 2, 3, 113, 113, mask(0, windows[w], 0, -1));
    check_mask(KE_F16, 1, 2, 33, 1000, mask(0, windows[w], 0, -1));
    check_mask(KE_BF16, 1, 2, 7, 33, mask(0, windows[w], 0, -1));
  }
  sweep(KE_F32, mask(0, 3, 0, -1));
}
END_TEST

/* A pair is visible when either position is among the first n_global. */
START_TEST(global_local) {
  const int64_t globals[] = {1, 4, 40};
  for (size_t g = 0; g < 3; g++) {
    check_mask(KE_F32, 1, 2, 113, 113, mask(0, 2, globals[g], -1));
    check_mask(KE_F16, 2, 1, 33, 1000, mask(0, 7, globals[g], -1));
    check_mask(KE_BF16, 1, 3, 1000, 113, mask(0, 0, globals[g], -1));
  }
  sweep(KE_F32, mask(0, 4, 3, -1));
  /* More global positions than keys: everything visible. */
  check_mask(KE_F32, 1, 1, 33, 33, mask(0, 1, 100, -1));
  /* n_global without a window changes nothing. */
  check_mask(KE_F32, 1, 1, 33, 33, mask(0, -1, 5, -1));
}
END_TEST

/* Causal combined with a window (sliding window) and with global sinks. */
START_TEST(causal_compositions) {
  check_mask(KE_F32, 1, 2, 113, 113, mask(1, 16, 0, -1));
  check_mask(KE_F32, 1, 2, 113, 113, mask(1, 16, 4, -1));
  check_mask(KE_F16, 1, 2, 7, 1000, mask(1, 100, 4, -1));
  check_mask(KE_BF16, 2, 2, 1000, 1000, mask(1, 64, 1, -1));
  sweep(KE_F32, mask(1, 5, 2, -1));
}
END_TEST

/* Explicit offsets, including ones that place queries past every key or
 * (through the default with Sq > Sk) before every key. */
START_TEST(offsets) {
  const int64_t offsets[] = {0, 1, 6, 100, 999, (int64_t)1 << 40};
  for (size_t o = 0; o < 6; o++) {
    check_mask(KE_F32, 1, 2, 33, 113, mask(1, -1, 0, offsets[o]));
    check_mask(KE_F32, 1, 2, 33, 113, mask(0, 4, 0, offsets[o]));
    check_mask(KE_F16, 1, 2, 7, 1000, mask(1, 10, 2, offsets[o]));
  }
  check_mask(KE_F32, 1, 2, 1000, 33, mask(1, -1, 0, -1)); /* Sk - Sq < 0 */
  check_mask(KE_F32, 1, 2, 1000, 33, mask(0, 3, 1, -1));
}
END_TEST

/* Decode: one query against long rows of keys. */
START_TEST(decode) {
  const int64_t sks[] = {1, 1000, 4096, 16384};
  for (size_t i = 0; i < 4; i++) {
    check_mask(KE_F32, 2, 4, 1, sks[i], mask(1, -1, 0, -1));
    check_mask(KE_BF16, 2, 4, 1, sks[i], mask(0, 256, 4, -1));
    check_mask(KE_F16, 1, 4, 1, sks[i], mask(1, 128, 0, sks[i] / 2));
  }
}
END_TEST

/* Literal patterns ('x' visible, '.' masked) for Sq = 3, Sk = 6, default
 * offset 3 (queries at positions 3, 4, 5): they pin the predicate itself,
 * so a misreading shared by the kernel and the reference still fails. */
static void check_pattern(ke_mask_params p, const char *rows[3],
                          const char *what) {
  const int64_t sq = 3, sk = 6;
  for (int64_t i = 0; i < sq; i++)
    for (int64_t j = 0; j < sk; j++)
      ck_assert_msg(ke_mask_allows(&p, sq, sk, i, j) == (rows[i][j] == 'x'),
                    "%s: ke_mask_allows(%lld, %lld) disagrees with the "
                    "pattern %s", what, (long long)i, (long long)j, rows[i]);
  int64_t shape[2] = {sq, sk};
  ke_tensor s;
  kt_alloc(&s, KE_F32, 2, shape);
  kt_fill_normal(&s, 0.0f, 1.0f);
  double *v = kt_to_doubles(&s);
  kt_assert_ok(ke_mask_apply(kt_ctx(), &s, &p));
  for (int64_t i = 0; i < sq; i++)
    for (int64_t j = 0; j < sk; j++)
      if (rows[i][j] == '.') v[i * sk + j] = -INFINITY;
  kt_assert_close(what, &s, v, kExact);
  free(v);
  kt_free(&s);
}

START_TEST(literal_patterns) {
  const char *causal[3] = {"xxxx..", "xxxxx.", "xxxxxx"};
  check_pattern(mask(1, -1, 0, -1), causal, "pattern_causal");
  const char *local1[3] = {"..xxx.", "...xxx", "....xx"};
  check_pattern(mask(0, 1, 0, -1), local1, "pattern_local1");
  const char *global[3] = {"x.xxx.", "x..xxx", "x...xx"};
  check_pattern(mask(0, 1, 1, -1), global, "pattern_global1_local1");
  const char *sinks[3] = {"xxxx..", "xx.xx.", "xx..xx"};
  check_pattern(mask(1, 1, 2, -1), sinks, "pattern_causal_window1_sinks2");
  const char *off0[3] = {"x.....", "xx....", "xxx..."};
  check_pattern(mask(1, -1, 0, 0), off0, "pattern_causal_offset0");
  /* Global queries: offset 0 puts query 0 at position 0, a global one. */
  const char *gq[3] = {"xxxxxx", "xxx...", "xxxx.."};
  check_pattern(mask(0, 1, 1, 0), gq, "pattern_global_query");
}
END_TEST

/* Visible entries are not touched: a NaN there stays NaN; a NaN in a masked
 * entry becomes -inf; +-inf and huge values pass through. */
START_TEST(visible_untouched) {
  const int64_t sq = 7, sk = 33;
  int64_t shape[2] = {sq, sk};
  ke_tensor s;
  kt_alloc(&s, KE_F32, 2, shape);
  kt_fill_normal(&s, 0.0f, 1.0f);
  double *v = kt_to_doubles(&s);
  v[6 * sk + 0] = NAN;         /* visible under causal (default offset) */
  v[0 * sk + 32] = NAN;        /* masked */
  v[3 * sk + 1] = INFINITY;    /* visible */
  v[2 * sk + 2] = -INFINITY;   /* visible, already -inf */
  v[1 * sk + 5] = 3e38;        /* visible */
  kt_from_doubles(&s, v);
  double *want = kt_to_doubles(&s);  /* as stored (3e38 rounds to f32) */
  ke_mask_params p = mask(1, -1, 0, -1);
  kt_assert_ok(ke_mask_apply(kt_ctx(), &s, &p));
  ke_mask_apply_ref(want, 1, sq, sk, &p);
  ck_assert(isnan(want[6 * sk + 0]) && want[0 * sk + 32] == -INFINITY);
  kt_assert_close("visible_untouched", &s, want, kExact);
  free(want);
  free(v);
  kt_free(&s);
}
END_TEST

/* A [B, Sq, H, Sk] buffer masked through its [B, H, Sq, Sk] view, and a
 * slice of a wider matrix: the view is masked, the gaps stay as they were. */
START_TEST(strided_views) {
  const int64_t b = 2, h = 3, sq = 33, sk = 40, wide = 47;
  int64_t full[4] = {b, sq, h, wide};
  ke_tensor buf;
  kt_alloc(&buf, KE_F16, 4, full);
  kt_fill_normal(&buf, 0.0f, 2.0f);
  double *want = kt_to_doubles(&buf);
  ke_tensor view = buf;
  const int64_t shape[4] = {b, h, sq, sk};
  const int64_t stride[4] = {sq * h * wide, wide, h * wide, 1};
  memcpy(view.shape, shape, sizeof shape);
  memcpy(view.stride, stride, sizeof stride);
  ke_mask_params p = mask(1, 8, 2, -1);
  kt_assert_ok(ke_mask_apply(kt_ctx(), &view, &p));
  for (int64_t bb = 0; bb < b; bb++)
    for (int64_t hh = 0; hh < h; hh++)
      for (int64_t i = 0; i < sq; i++)
        for (int64_t j = 0; j < sk; j++)
          if (!ke_mask_allows(&p, sq, sk, i, j))
            want[bb * stride[0] + hh * stride[1] + i * stride[2] + j] =
                -INFINITY;
  kt_assert_close("strided_bshk", &buf, want, kExact);

  /* Column stride 2: every other element of each row. */
  kt_fill_normal(&buf, 0.0f, 2.0f);
  double *want2 = kt_to_doubles(&buf);
  ke_tensor cols = buf;
  cols.rank = 2;
  cols.shape[0] = b * sq * h;
  cols.shape[1] = wide / 2;
  cols.stride[0] = wide;
  cols.stride[1] = 2;
  ke_mask_params pl = mask(0, 3, 0, 0);
  kt_assert_ok(ke_mask_apply(kt_ctx(), &cols, &pl));
  for (int64_t i = 0; i < cols.shape[0]; i++)
    for (int64_t j = 0; j < cols.shape[1]; j++)
      if (!ke_mask_allows(&pl, cols.shape[0], cols.shape[1], i, j))
        want2[i * wide + 2 * j] = -INFINITY;
  kt_assert_close("strided_columns", &buf, want2, kExact);
  free(want2);
  free(want);
  kt_free(&buf);
}
END_TEST

/* Rank 2 (one matrix) and rank 6 (four leading dimensions). */
START_TEST(ranks) {
  int64_t s2[2] = {113, 33};
  ke_mask_params p = mask(1, 9, 1, -1);
  check_mask_shape(KE_F32, 2, s2, &p);
  int64_t s6[6] = {2, 1, 3, 2, 33, 7};
  check_mask_shape(KE_BF16, 6, s6, &p);
  int64_t s3[3] = {5, 1, 1};
  check_mask_shape(KE_F16, 3, s3, &p);
}
END_TEST

/* GPU-sized: 4096 queries over 16384 keys with a causal sliding window,
 * and a [1, 4, 4096, 4096] causal prefill. */
START_TEST(large) {
  check_mask(KE_BF16, 1, 1, 4096, 16384, mask(1, 1024, 4, -1));
  check_mask(KE_F32, 1, 4, 4096, 4096, mask(1, -1, 0, -1));
}
END_TEST

START_TEST(refusals) {
  int64_t shape[4] = {1, 2, 7, 33};
  ke_tensor s;
  kt_alloc(&s, KE_F32, 4, shape);
  ke_mask_params p = mask(1, -1, 0, -1);
  ke_tensor t = s;
  t.rank = 1;
  t.shape[0] = 33;
  t.stride[0] = 1;
  kt_assert_status(ke_mask_apply(kt_ctx(), &t, &p), KE_ESHAPE);
  t = s;
  t.dtype = (ke_dtype)7;
  kt_assert_status(ke_mask_apply(kt_ctx(), &t, &p), KE_EDTYPE);
  t = s;
  t.stride[2] = 0;  /* every query row on the same memory */
  kt_assert_status(ke_mask_apply(kt_ctx(), &t, &p), KE_ESHAPE);
  t = s;
  t.stride[3] = -1;
  kt_assert_status(ke_mask_apply(kt_ctx(), &t, &p), KE_ESHAPE);
  t = s;
  t.shape[2] = 0;
  kt_assert_status(ke_mask_apply(kt_ctx(), &t, &p), KE_ESHAPE);
  ke_mask_params bad = mask(0, 4, -1, -1);
  kt_assert_status(ke_mask_apply(kt_ctx(), &s, &bad), KE_EINVAL);
  bad = mask(1, -1, 0, (int64_t)1 << 62);
  kt_assert_status(ke_mask_apply(kt_ctx(), &s, &bad), KE_EINVAL);
  kt_assert_status(ke_mask_apply(kt_ctx(), NULL, &p), KE_EINVAL);
  kt_free(&s);
}
END_TEST

static const kt_test mask_tests[] = {
    KT_TEST(causal_f32),
    KT_TEST(causal_f16),
    KT_TEST(causal_bf16),
    KT_TEST(local_window),
    KT_TEST(global_local),
    KT_TEST(causal_compositions),
    KT_TEST(offsets),
    KT_TEST(decode),
    KT_TEST(literal_patterns),
    KT_TEST(visible_untouched),
    KT_TEST(strided_views),
    KT_TEST(ranks),
    KT_TEST(large, .tags = "slow", .timeout_s = 600),
    KT_TEST(refusals),
};

KT_SUITE(kt_suite_masks, "masks", "gpu,kernel", mask_tests);
