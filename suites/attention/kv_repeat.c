/* kv_repeat suite: K/V heads expanded to the query heads for every GQA
 * ratio and MQA, every dtype, head dimensions of the attention suite,
 * strided views, NaN payloads kept bit for bit, each refusal.
 *
 * A copy has no rounding, so every check is exact (atol = rtol = 0).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

static const kt_tol kExact = {0.0, 0.0, 0.0, 0};

static void check_repeat(ke_dtype dt, int64_t b, int64_t hkv, int64_t hq,
                         int64_t s, int64_t d) {
  int64_t in_shape[4] = {b, hkv, s, d}, out_shape[4] = {b, hq, s, d};
  ke_tensor in, out;
  kt_alloc(&in, dt, 4, in_shape);
  kt_alloc(&out, dt, 4, out_shape);
  kt_fill_normal(&in, 0.0f, 1.0f);
  kt_fill_uniform(&out, -1.0f, 1.0f);  /* no stale zeros to hide behind */
  kt_assert_ok(ke_kv_repeat(kt_ctx(), &in, &out));
  double *x = kt_to_doubles(&in);
  double *ref = malloc((size_t)ke_tensor_numel(&out) * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  ke_kv_repeat_ref(x, ref, b, hkv, hq, s, d);
  char name[128];
  snprintf(name, sizeof name, "kv_repeat_%s_b%lld_%lldto%lld_s%lld_d%lld",
           ke_dtype_name(dt), (long long)b, (long long)hkv, (long long)hq,
           (long long)s, (long long)d);
  kt_assert_close(name, &out, ref, kExact);
  free(ref);
  free(x);
  kt_free(&out);
  kt_free(&in);
}

/* GQA ratios 1, 4, 8, 32 over two kv heads, and MQA (one kv head). */
static const int64_t kHeads[][2] = {{2, 2}, {2, 8}, {2, 16}, {2, 64},
                                    {1, 8}, {1, 32}};

static void sweep(ke_dtype dt) {
  const int64_t seqs[] = {1, 7, 113};
  const int64_t dims[] = {64, 80, 96, 128, 256};
  for (size_t h = 0; h < 6; h++)
    for (size_t s = 0; s < 3; s++)
      check_repeat(dt, 2, kHeads[h][0], kHeads[h][1], seqs[s], dims[s + 1]);
  for (size_t d = 0; d < 5; d++) check_repeat(dt, 1, 2, 8, 33, dims[d]);
  check_repeat(dt, 3, 1, 1, 7, 1);  /* nothing to repeat: a copy */
}

START_TEST(ratios_f32) { sweep(KE_F32); }
END_TEST

START_TEST(ratios_f16) { sweep(KE_F16); }
END_TEST

START_TEST(ratios_bf16) { sweep(KE_BF16); }
END_TEST

/* [B, S, H, D] buffers through [B, H, S, D] views, on both sides. */
START_TEST(strided_views) {
  const int64_t b = 2, hkv = 2, hq = 8, s = 33, d = 80;
  int64_t in_buf_shape[4] = {b, s, hkv, d}, out_buf_shape[4] = {b, s, hq, d};
  ke_tensor in, out;
  kt_alloc(&in, KE_BF16, 4, in_buf_shape);
  kt_alloc(&out, KE_BF16, 4, out_buf_shape);
  kt_fill_normal(&in, 0.0f, 1.0f);
  kt_fill_uniform(&out, -1.0f, 1.0f);
  ke_tensor iv = in, ov = out;
  const int64_t is[4] = {s * hkv * d, d, hkv * d, 1};
  const int64_t os[4] = {s * hq * d, d, hq * d, 1};
  const int64_t ishape[4] = {b, hkv, s, d}, oshape[4] = {b, hq, s, d};
  memcpy(iv.shape, ishape, sizeof ishape);
  memcpy(iv.stride, is, sizeof is);
  memcpy(ov.shape, oshape, sizeof oshape);
  memcpy(ov.stride, os, sizeof os);
  kt_assert_ok(ke_kv_repeat(kt_ctx(), &iv, &ov));
  double *x = kt_to_doubles(&in);
  double *want = malloc((size_t)ke_tensor_numel(&out) * sizeof *want);
  ck_assert_ptr_nonnull(want);
  for (int64_t bb = 0; bb < b; bb++)
    for (int64_t h = 0; h < hq; h++)
      for (int64_t t = 0; t < s; t++)
        for (int64_t e = 0; e < d; e++)
          want[bb * os[0] + h * os[1] + t * os[2] + e] =
              x[bb * is[0] + h / (hq / hkv) * is[1] + t * is[2] + e];
  kt_assert_close("kv_repeat_bshd", &out, want, kExact);
  free(want);
  free(x);
  kt_free(&out);
  kt_free(&in);
}
END_TEST

/* A copy keeps every bit: NaN payloads, signed zeros, infinities. */
START_TEST(bits_kept) {
  const int64_t b = 1, hkv = 1, hq = 4, s = 3, d = 4;
  int64_t in_shape[4] = {b, hkv, s, d}, out_shape[4] = {b, hq, s, d};
  ke_tensor in, out;
  kt_alloc(&in, KE_F16, 4, in_shape);
  kt_alloc(&out, KE_F16, 4, out_shape);
  const uint16_t bits[12] = {0x7e01, 0xfe55, 0x7c01, 0x8000, 0x0000, 0x7c00,
                             0xfc00, 0x0001, 0x3c00, 0x7bff, 0xffff, 0x7fff};
  kt_assert_ok(ke_copy_to_device(kt_ctx(), in.data, bits, sizeof bits));
  kt_assert_ok(ke_kv_repeat(kt_ctx(), &in, &out));
  uint16_t got[48];
  kt_assert_ok(ke_copy_to_host(kt_ctx(), got, out.data, sizeof got));
  for (int h = 0; h < 4; h++)
    for (int e = 0; e < 12; e++)
      ck_assert_msg(got[h * 12 + e] == bits[e],
                    "head %d element %d: 0x%04x, expected 0x%04x", h, e,
                    got[h * 12 + e], bits[e]);
  kt_free(&out);
  kt_free(&in);
}
END_TEST

/* GPU-sized: 8 kv heads to 64 query heads of 4096 x 128. */
START_TEST(large) {
  check_repeat(KE_BF16, 1, 8, 64, 4096, 128);
  check_repeat(KE_F32, 2, 1, 32, 16384, 64);
}
END_TEST

START_TEST(refusals) {
  int64_t in_shape[4] = {1, 2, 7, 64}, out_shape[4] = {1, 6, 7, 64};
  int64_t odd_shape[4] = {1, 3, 7, 64};
  ke_tensor in, out, odd;
  kt_alloc(&in, KE_F32, 4, in_shape);
  kt_alloc(&out, KE_F32, 4, out_shape);
  kt_alloc(&odd, KE_F32, 4, odd_shape);
  kt_assert_status(ke_kv_repeat(kt_ctx(), &in, &odd), KE_ESHAPE); /* 3 % 2 */
  ke_tensor t = out;
  t.shape[2] = 8;  /* S differs */
  kt_assert_status(ke_kv_repeat(kt_ctx(), &in, &t), KE_ESHAPE);
  t = out;
  t.shape[3] = 32;  /* D differs */
  kt_assert_status(ke_kv_repeat(kt_ctx(), &in, &t), KE_ESHAPE);
  t = out;
  t.dtype = KE_F16;  /* dtypes differ */
  kt_assert_status(ke_kv_repeat(kt_ctx(), &in, &t), KE_EDTYPE);
  t = out;
  t.dtype = (ke_dtype)9;
  kt_assert_status(ke_kv_repeat(kt_ctx(), &in, &t), KE_EDTYPE);
  t = out;
  t.rank = 3;
  kt_assert_status(ke_kv_repeat(kt_ctx(), &in, &t), KE_ESHAPE);
  t = out;
  t.stride[1] = 0;  /* every head on the same memory */
  kt_assert_status(ke_kv_repeat(kt_ctx(), &in, &t), KE_ESHAPE);
  t = in;
  t.shape[1] = 1;   /* out aliases in */
  kt_assert_status(ke_kv_repeat(kt_ctx(), &t, &in), KE_ESHAPE);
  kt_assert_status(ke_kv_repeat(kt_ctx(), &in, NULL), KE_EINVAL);
  kt_free(&odd);
  kt_free(&out);
  kt_free(&in);
}
END_TEST

static const kt_test kv_repeat_tests[] = {
    KT_TEST(ratios_f32),
    KT_TEST(ratios_f16),
    KT_TEST(ratios_bf16),
    KT_TEST(strided_views),
    KT_TEST(bits_kept),
    KT_TEST(large, .tags = "slow", .timeout_s = 600),
    KT_TEST(refusals),
};

KT_SUITE(kt_suite_kv_repeat, "kv_repeat", "gpu,kernel", kv_repeat_tests);
