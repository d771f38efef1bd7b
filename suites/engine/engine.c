/* Engine runtime suite: the ledger, the cap, poison, timing, random inputs,
 * dtype conversions and the one-context rule, through the public API.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

/* An allocation that is not freed shows in the ledger with its call site. */
START_TEST(ledger_reports_call_site) {
  ke_context *ctx = kt_ctx();
  size_t before = ke_ledger_outstanding(ctx, NULL, 0);
  void *p = NULL;
  const int line = __LINE__ + 1;
  kt_assert_ok(ke_malloc(ctx, &p, 12345));
  ke_allocation live[64];
  size_t n = ke_ledger_outstanding(ctx, live, 64);
  ck_assert_uint_eq(n, before + 1);
  const ke_allocation *a = &live[n - 1];
  ck_assert_ptr_eq(a->ptr, p);
  ck_assert_uint_eq(a->bytes, 12345);
  ck_assert_int_eq(a->line, line);
  ck_assert_msg(strstr(a->file, "engine.c") != NULL, "file is %s", a->file);
  ck_assert_uint_ge(ke_ledger_outstanding_bytes(ctx), 12345);
  kt_assert_ok(ke_free(ctx, p));
  ck_assert_uint_eq(ke_ledger_outstanding(ctx, NULL, 0), before);
  kt_assert_status(ke_free(ctx, p), KE_EINVAL);  /* double free is refused */
}
END_TEST

/* Above the cap: refused, and the message names every number. */
START_TEST(cap_refuses_with_numbers) {
  ke_context *ctx = kt_ctx();
  size_t cap = 0, free_at_open = 0, total = 0;
  ke_ledger_cap(ctx, &cap, &free_at_open, &total);
  ck_assert_uint_gt(cap, 0);
  ck_assert_uint_le(cap, free_at_open);
  void *p = NULL;
  size_t want = cap + 4096;
  kt_assert_status(ke_malloc(ctx, &p, want), KE_ECAP);
  ck_assert_ptr_null(p);
  const char *msg = ke_last_error();
  char num[64];
  snprintf(num, sizeof num, "%zu", want);
  ck_assert_msg(strstr(msg, num), "requested bytes missing: %s", msg);
  snprintf(num, sizeof num, "%zu", cap);
  ck_assert_msg(strstr(msg, num), "cap missing: %s", msg);
  snprintf(num, sizeof num, "%zu", free_at_open);
  ck_assert_msg(strstr(msg, num), "free bytes missing: %s", msg);
  snprintf(num, sizeof num, "%zu", total);
  ck_assert_msg(strstr(msg, num), "total bytes missing: %s", msg);
  ck_assert_msg(strstr(msg, "engine.c"), "call site missing: %s", msg);
}
END_TEST

/* The cap counts what is already live, not just the one request: with a
 * small block live, a request within the cap on its own but not beside it
 * is refused, and the message gives the bytes in use. Small live, large
 * refused: a large live block would be filled on allocation (poison, in
 * every worker), gigabytes of writes in host emulation. */
START_TEST(cap_counts_live_bytes) {
  ke_context *ctx = kt_ctx();
  size_t cap = 0;
  ke_ledger_cap(ctx, &cap, NULL, NULL);
  void *a = NULL, *b = NULL;
  size_t live = 1 << 20;
  ck_assert_uint_gt(cap, 2 * live);
  kt_assert_ok(ke_malloc(ctx, &a, live));
  kt_assert_status(ke_malloc(ctx, &b, cap - live + 1), KE_ECAP);
  ck_assert_ptr_null(b);
  char num[64];
  snprintf(num, sizeof num, "%zu bytes already in use", live);
  ck_assert_msg(strstr(ke_last_error(), num), "bytes in use missing: %s", ke_last_error());
  kt_assert_ok(ke_free(ctx, a));
}
END_TEST

/* Uniform draws land in (lo, hi], whatever the seed. */
START_TEST(uniform_range) {
  ke_context *ctx = kt_ctx();
  int64_t shape[1] = {1000};
  ke_tensor t;
  kt_assert_ok(ke_tensor_alloc(ctx, &t, KE_F32, 1, shape));
  kt_assert_ok(ke_rand_uniform(ctx, &t, kt_seed(), -1.0f, 1.0f));
  double *v = kt_to_doubles(&t);
  double lo = 1, hi = -1;
  for (int i = 0; i < 1000; i++) {
    ck_assert_msg(isfinite(v[i]) && v[i] >= -1.0 && v[i] <= 1.0,
                  "uniform draw %d = %g outside (-1, 1]", i, v[i]);
    lo = v[i] < lo ? v[i] : lo;
    hi = v[i] > hi ? v[i] : hi;
  }
  ck_assert_msg(lo < -0.9 && hi > 0.9, "draws span only [%g, %g]", lo, hi);
  free(v);
  kt_assert_ok(ke_tensor_free(ctx, &t));
}
END_TEST

/* One context per device and process: a second on the same device is
 * refused. */
START_TEST(one_context_per_process) {
  ke_context *second = NULL;
  kt_assert_status(ke_context_open(NULL, &second), KE_EBUSY);
  ck_assert_ptr_null(second);
  ke_context_options o;
  ke_context_options_init(&o);
  o.cap_fraction = 1.5;
  ke_context *c = NULL;
  ck_assert_int_ne(ke_context_open(&o, &c), KE_OK);
}
END_TEST

START_TEST(device_query) {
  int n = 0;
  kt_assert_ok(ke_device_count(&n));
  ck_assert_int_ge(n, 1);
  const ke_device_info *d = ke_context_device(kt_ctx());
  ck_assert_int_gt((int)strlen(d->name), 0);
  ck_assert_int_gt((int)strlen(d->arch), 0);
  ck_assert_msg(d->warp_size == 32 || d->warp_size == 64, "warp size %d",
                d->warp_size);
  ck_assert_uint_gt(d->total_bytes, 0);
  ck_assert_uint_le(d->free_bytes, d->total_bytes);
  ke_device_info out;
  kt_assert_status(ke_device_query(n, &out), KE_EINVAL);
  size_t f = 0, t = 0;
  kt_assert_ok(ke_mem_info(kt_ctx(), &f, &t));
  ck_assert_uint_eq(t, d->total_bytes);
}
END_TEST

/* Every launch is timed: per kernel name, launches, total, min, median. */
START_TEST(timing_per_kernel) {
  ke_context *ctx = kt_ctx();
  int64_t shape[2] = {64, 1000};
  ke_tensor x, y;
  kt_alloc(&x, KE_F32, 2, shape);
  kt_alloc(&y, KE_F32, 2, shape);
  kt_fill_normal(&x, 0.0f, 1.0f);
  ke_timing_reset(ctx);
  for (int i = 0; i < 5; i++) kt_assert_ok(ke_softmax(ctx, &x, &y, NULL));
  ke_kernel_stats s[8];
  size_t n = 0;
  kt_assert_ok(ke_timing_collect(ctx, s, 8, &n));
  ck_assert_uint_eq(n, 1);
  ck_assert_str_eq(s[0].name, "softmax");
  ck_assert_uint_eq(s[0].launches, 5);
  ck_assert(s[0].min_ms >= 0.0);
  ck_assert(s[0].min_ms <= s[0].median_ms);
  ck_assert(s[0].median_ms <= s[0].max_ms);
  ck_assert(s[0].total_ms >= 5 * s[0].min_ms - 1e-9);
  kt_free(&x);
  kt_free(&y);
}
END_TEST

/* Same seed, same draws; other seed, other draws; sane moments. */
/* A large output's check (the harness compares it on several threads) gives
 * the same figures, NMSE included, on one thread and on three: a report
 * must not depend on the host's cores. */
START_TEST(check_threads) {
  int64_t shape[1] = {(1 << 20) + 4097};   /* past the parallel size, odd */
  ke_tensor a;
  kt_alloc(&a, KE_F32, 1, shape);
  kt_fill_normal(&a, 0.0f, 1.0f);
  double *e = kt_to_doubles(&a);
  for (int64_t i = 0; i < shape[0]; i++) e[i] *= 1.0 + 1e-7 * (double)(i % 97);
  kt_tol tol = kt_tol_default(KE_F32);
  tol.atol = tol.rtol = 1e-3;
  const char *was = getenv("KILN_REF_THREADS");
  char *saved = was ? strdup(was) : NULL;
  kt_check_result r[2];
  const char *threads[2] = {"1", "3"};
  for (int k = 0; k < 2; k++) {
    setenv("KILN_REF_THREADS", threads[k], 1);
    ck_assert(kt_check("threads", &a, e, tol, &r[k]));
  }
  if (saved) setenv("KILN_REF_THREADS", saved, 1);
  else unsetenv("KILN_REF_THREADS");
  free(saved);
  ck_assert_msg(memcmp(&r[0].nmse, &r[1].nmse, sizeof r[0].nmse) == 0,
                "NMSE on 1 thread %.17g, on 3 %.17g", r[0].nmse, r[1].nmse);
  ck_assert(r[0].max_abs == r[1].max_abs && r[0].max_rel == r[1].max_rel);
  ck_assert(r[0].worst_index == r[1].worst_index && r[0].rel_p99 == r[1].rel_p99);
  free(e);
  kt_free(&a);
}
END_TEST

START_TEST(random_inputs) {
  ke_context *ctx = kt_ctx();
  int64_t shape[1] = {100001};   /* odd: normal draws need padding */
  ke_tensor a, b;
  kt_alloc(&a, KE_F32, 1, shape);
  kt_alloc(&b, KE_F32, 1, shape);
  kt_assert_ok(ke_rand_normal(ctx, &a, 42, 1.0f, 2.0f));
  kt_assert_ok(ke_rand_normal(ctx, &b, 42, 1.0f, 2.0f));
  double *va = kt_to_doubles(&a), *vb = kt_to_doubles(&b);
  double sum = 0, sum2 = 0;
  for (int64_t i = 0; i < shape[0]; i++) {
    ck_assert_msg(va[i] == vb[i], "same seed differs at %lld", (long long)i);
    sum += va[i];
    sum2 += va[i] * va[i];
  }
  double mean = sum / (double)shape[0];
  double var = sum2 / (double)shape[0] - mean * mean;
  ck_assert_msg(fabs(mean - 1.0) < 0.05, "normal mean %g", mean);
  ck_assert_msg(fabs(var - 4.0) < 0.2, "normal variance %g", var);
  kt_assert_ok(ke_rand_normal(ctx, &b, 43, 1.0f, 2.0f));
  free(vb);
  vb = kt_to_doubles(&b);
  int64_t same = 0;
  for (int64_t i = 0; i < shape[0]; i++) same += va[i] == vb[i];
  ck_assert_msg(same < 10, "%lld equal draws for different seeds",
                (long long)same);
  kt_assert_status(ke_rand_uniform(ctx, &a, 1, 2.0f, 1.0f), KE_EINVAL);
  kt_assert_status(ke_rand_normal(ctx, &a, 1, 0.0f, 0.0f), KE_EINVAL);
  ke_tensor bad = a;
  bad.dtype = (ke_dtype)9;
  kt_assert_status(ke_rand_uniform(ctx, &bad, 1, 0.0f, 1.0f), KE_EDTYPE);
  bad = a;
  bad.stride[0] = 2;
  bad.shape[0] = 10;
  kt_assert_status(ke_rand_normal(ctx, &bad, 1, 0.0f, 1.0f), KE_ESHAPE);
  free(va);
  free(vb);
  kt_free(&a);
  kt_free(&b);
}
END_TEST

/* f16/bf16 rounding matches the definition (nearest, ties to even). */
START_TEST(dtype_conversions) {
  ck_assert_uint_eq(ke_f32_to_f16(1.0f), 0x3C00);
  ck_assert_uint_eq(ke_f32_to_f16(65504.0f), 0x7BFF);
  ck_assert_uint_eq(ke_f32_to_f16(65520.0f), 0x7C00);   /* rounds to inf */
  ck_assert_uint_eq(ke_f32_to_f16(5.9604644775390625e-08f), 0x0001);
  ck_assert_uint_eq(ke_f32_to_f16(2.98023223876953125e-08f), 0x0000); /* tie */
  ck_assert_uint_eq(ke_f32_to_f16(-0.0f), 0x8000);
  ck_assert_uint_eq(ke_f32_to_f16(1.0f + 1.0f / 2048), 0x3C00);  /* tie even */
  ck_assert_uint_eq(ke_f32_to_f16(1.0f + 3.0f / 2048), 0x3C02);
  ck_assert_uint_eq(ke_f32_to_bf16(1.0f), 0x3F80);
  ck_assert_uint_eq(ke_f32_to_bf16(1.0f + 1.0f / 256), 0x3F80);  /* tie even */
  ck_assert_uint_eq(ke_f32_to_bf16(1.0f + 3.0f / 256), 0x3F82);
  /* Every f16 pattern survives f16 -> f32 -> f16. */
  for (uint32_t h = 0; h < 0x10000; h++) {
    float f = ke_f16_to_f32((uint16_t)h);
    if (isnan(f)) continue;
    ck_assert_msg(ke_f32_to_f16(f) == h, "f16 0x%04x round trip", h);
  }
  ck_assert(isnan(ke_f16_to_f32(ke_f32_to_f16(NAN))));
  ck_assert(isnan(ke_bf16_to_f32(ke_f32_to_bf16(NAN))));
}
END_TEST

/* The ledger's peak: the most bytes live at once since the last reset, the
 * figure a test's `memory.peak.bytes` and `--slots auto` come from. */
START_TEST(ledger_peak) {
  ke_context *ctx = kt_ctx();
  size_t base = ke_ledger_outstanding_bytes(ctx);
  ke_ledger_peak_reset(ctx);
  ck_assert_uint_eq(ke_ledger_peak_bytes(ctx), base);
  void *a = NULL, *b = NULL, *c = NULL;
  kt_assert_ok(ke_malloc(ctx, &a, 1 << 20));
  kt_assert_ok(ke_malloc(ctx, &b, 3 << 20));
  kt_assert_ok(ke_free(ctx, a));
  kt_assert_ok(ke_malloc(ctx, &c, 512 << 10));
  ck_assert_uint_eq(ke_ledger_peak_bytes(ctx), base + (4u << 20));
  ke_ledger_peak_reset(ctx);
  ck_assert_uint_eq(ke_ledger_peak_bytes(ctx), base + (3u << 20) + (512u << 10));
  kt_assert_ok(ke_free(ctx, b));
  kt_assert_ok(ke_free(ctx, c));
}
END_TEST

/* A test of two devices: a context on each (kiln narrowed the visible
 * devices to exactly its two), each context's memory charged to its own
 * device, a kernel on each, data moved between them through the host, and
 * a second context on one device still refused. */
START_TEST(multi_device) {
  ck_assert_int_eq(kt_device_count(), 2);
  ck_assert_int_eq(ke_context_count(), 2);
  ke_context *c0 = kt_ctx_on(0), *c1 = kt_ctx_on(1);
  ck_assert_int_eq(ke_context_device(c0)->index, 0);
  ck_assert_int_eq(ke_context_device(c1)->index, 1);
  size_t f0 = 0, f1 = 0, t = 0, t0 = 0, t1 = 0, f0b = 0, f1b = 0;
  const size_t l0 = ke_ledger_outstanding_bytes(c0);
  const size_t l1 = ke_ledger_outstanding_bytes(c1);
  kt_assert_ok(ke_mem_info(c0, &f0, &t));
  kt_assert_ok(ke_mem_info(c1, &f1, &t));
  int64_t shape[2] = {4, 100};
  ke_tensor x0, y0, x1, y1;
  kt_assert_ok(ke_tensor_alloc(c0, &x0, KE_F32, 2, shape));
  kt_assert_ok(ke_tensor_alloc(c0, &y0, KE_F32, 2, shape));
  kt_assert_ok(ke_tensor_alloc(c1, &x1, KE_F32, 2, shape));
  kt_assert_ok(ke_tensor_alloc(c1, &y1, KE_F32, 2, shape));
  kt_assert_ok(ke_mem_info(c0, &f0b, &t0));
  kt_assert_ok(ke_mem_info(c1, &f1b, &t1));
  /* Each context's ledger holds exactly its own two tensors. The runtime's
   * free figure is the device's: exact on emulated devices, but a real
   * driver hands memory out in pages (2 MiB on NVIDIA's) and other
   * processes share the device, so there it is only a valid figure. */
  ck_assert_uint_eq(ke_ledger_outstanding_bytes(c0) - l0, 2 * 400 * sizeof(float));
  ck_assert_uint_eq(ke_ledger_outstanding_bytes(c1) - l1, 2 * 400 * sizeof(float));
  ck_assert_uint_le(f0b, t0);
  ck_assert_uint_le(f1b, t1);
#ifdef KILN_BACKEND_HOST
  ck_assert_uint_eq(f0 - f0b, 2 * 400 * sizeof(float));
  ck_assert_uint_eq(f1 - f1b, 2 * 400 * sizeof(float));
#endif
  kt_assert_ok(ke_rand_normal(c0, &x0, kt_seed(), 0.0f, 2.0f));
  double *xs = kt_to_doubles(&x0);
  kt_assert_ok(ke_tensor_from_doubles(c1, &x1, xs));
  ke_softmax_params p;
  ke_softmax_params_init(&p);
  kt_assert_ok(ke_softmax(c0, &x0, &y0, &p));
  kt_assert_ok(ke_softmax(c1, &x1, &y1, &p));
  double ref[400], *a = malloc(400 * sizeof *a), *b = malloc(400 * sizeof *b);
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_nonnull(b);
  ke_softmax_ref(xs, ref, 4, 100, &p, 4);
  kt_assert_ok(ke_tensor_to_doubles(c0, &y0, a));
  kt_assert_ok(ke_tensor_to_doubles(c1, &y1, b));
  for (int i = 0; i < 400; i++) {
    ck_assert_msg(a[i] == b[i], "device 0 and 1 disagree at %d: %g, %g", i, a[i], b[i]);
    ck_assert_msg(fabs(a[i] - ref[i]) <= 1e-6, "element %d: %g, expected %g", i, a[i], ref[i]);
  }
  ke_context_options o;
  ke_context_options_init(&o);
  o.device = 1;
  ke_context *again = NULL;
  kt_assert_status(ke_context_open(&o, &again), KE_EBUSY);
  free(xs), free(a), free(b);
  kt_assert_ok(ke_tensor_free(c0, &x0));
  kt_assert_ok(ke_tensor_free(c0, &y0));
  kt_assert_ok(ke_tensor_free(c1, &x1));
  kt_assert_ok(ke_tensor_free(c1, &y1));
}
END_TEST

START_TEST(status_table) {
  ck_assert_str_eq(ke_status_name(KE_OK), "KE_OK");
  ck_assert_str_eq(ke_status_name(KE_ECAP), "KE_ECAP");
  ck_assert_str_eq(ke_status_name(12345), "KE_UNKNOWN");
  ck_assert_str_eq(ke_strerror(KE_ENODEV), "no GPU device available");
  ck_assert_int_lt(KE_ESHAPE, 0);
}
END_TEST

static const kt_test engine_tests[] = {
    KT_TEST(ledger_reports_call_site),
    KT_TEST(cap_refuses_with_numbers),
    KT_TEST(cap_counts_live_bytes),
    KT_TEST(uniform_range),
    KT_TEST(one_context_per_process),
    KT_TEST(device_query),
    KT_TEST(timing_per_kernel),
    KT_TEST(random_inputs),
    KT_TEST(check_threads),
    KT_TEST(ledger_peak),
    KT_TEST(multi_device, .devices = 2),
    KT_TEST(dtype_conversions, .host_only = 1),
    KT_TEST(status_table, .host_only = 1),
};

KT_SUITE(kt_suite_engine, "engine", "gpu,engine", engine_tests);
