/* Engine tests that need their own context options or environment, so they
 * cannot run inside a runner's fixture: poison mode, no device, the cap
 * fraction, and the ledger after a close. Linked against the host engine.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kiln/engine.h"
#include "kiln/kernels.h"

static ke_context *open_ctx(int poison, double cap) {
  ke_context_options o;
  ke_context_options_init(&o);
  o.poison = poison;
  o.cap_fraction = cap;
  ke_context *ctx = NULL;
  int st = ke_context_open(&o, &ctx);
  ck_assert_msg(st == KE_OK, "open: %s: %s", ke_status_name(st),
                ke_last_error());
  return ctx;
}

/* With poison, memory nobody wrote reads as NaN, and so does a result
 * computed from it: the unwritten read shows instead of passing by luck. */
START_TEST(poison_makes_unwritten_reads_nan) {
  ke_context *ctx = open_ctx(1, 0.7);
  int64_t shape[2] = {4, 33};
  ke_tensor x, y;
  ck_assert_int_eq(ke_tensor_alloc(ctx, &x, KE_F32, 2, shape), KE_OK);
  ck_assert_int_eq(ke_tensor_alloc(ctx, &y, KE_BF16, 2, shape), KE_OK);
  unsigned char raw[4 * 33 * 4];
  ck_assert_int_eq(ke_copy_to_host(ctx, raw, x.data, sizeof raw), KE_OK);
  for (size_t i = 0; i < sizeof raw; i++) ck_assert_uint_eq(raw[i], 0xFF);
  ck_assert_int_eq(ke_softmax(ctx, &x, &y, NULL), KE_OK);  /* x unwritten */
  double out[4 * 33];
  ck_assert_int_eq(ke_tensor_to_doubles(ctx, &y, out), KE_OK);
  for (int i = 0; i < 4 * 33; i++) ck_assert_msg(isnan(out[i]), "y[%d]=%g", i, out[i]);
  ke_tensor_free(ctx, &x);
  ke_tensor_free(ctx, &y);
  ck_assert_int_eq(ke_context_close(ctx), KE_OK);
}
END_TEST

/* Without poison the same memory is whatever the allocator gave. */
START_TEST(no_poison_by_default) {
  ke_context_options o;
  ke_context_options_init(&o);
  ck_assert_int_eq(o.poison, 0);
  ck_assert(fabs(o.cap_fraction - 0.7) < 1e-12);
}
END_TEST

/* No device is a status, never a crash. Runs as its own test case under
 * KILN_EMU_DEVICES=0 (tests/meson.build: engine-direct-nodevice). */
START_TEST(no_device_is_a_status) {
  int n = -1;
  ck_assert_int_eq(ke_device_count(&n), KE_ENODEV);
  ck_assert_int_eq(n, 0);
  ck_assert_msg(strlen(ke_last_error()) > 0, "no detail for ENODEV");
  ke_context *ctx = NULL;
  ck_assert_int_eq(ke_context_open(NULL, &ctx), KE_ENODEV);
  ck_assert_ptr_null(ctx);
}
END_TEST

/* The cap follows the fraction; the refusal message carries the numbers. */
START_TEST(cap_fraction_is_settable) {
  ke_context *ctx = open_ctx(0, 0.25);
  size_t cap = 0, free_at_open = 0, total = 0;
  ke_ledger_cap(ctx, &cap, &free_at_open, &total);
  ck_assert_uint_eq(cap, (size_t)((double)free_at_open * 0.25));
  void *p = NULL;
  ck_assert_int_eq(ke_malloc(ctx, &p, cap + 1), KE_ECAP);
  ck_assert_msg(strstr(ke_last_error(), "0.25"), "%s", ke_last_error());
  ck_assert_int_eq(ke_malloc(ctx, &p, cap), KE_OK);
  ck_assert_int_eq(ke_free(ctx, p), KE_OK);
  ck_assert_int_eq(ke_context_close(ctx), KE_OK);
}
END_TEST

/* A leak is listed with bytes and call site until the context closes; the
 * close frees it so the process can go on. */
START_TEST(ledger_lists_leak_until_close) {
  ke_context *ctx = open_ctx(0, 0.7);
  void *p = NULL;
  int line = __LINE__ + 1;
  ck_assert_int_eq(ke_malloc(ctx, &p, 4096), KE_OK);
  ke_allocation a[4];
  ck_assert_uint_eq(ke_ledger_outstanding(ctx, a, 4), 1);
  ck_assert_uint_eq(a[0].bytes, 4096);
  ck_assert_int_eq(a[0].line, line);
  ck_assert_msg(strstr(a[0].file, "engine-direct.c"), "%s", a[0].file);
  ck_assert_int_eq(ke_context_close(ctx), KE_OK);
  ctx = open_ctx(0, 0.7);   /* a new context after close is fine */
  ck_assert_uint_eq(ke_ledger_outstanding(ctx, NULL, 0), 0);
  ck_assert_int_eq(ke_context_close(ctx), KE_OK);
}
END_TEST

/* argv[1] names the test case to run: "engine" (default) or "nodevice". */
int main(int argc, char **argv) {
  Suite *s = suite_create("engine-direct");
  TCase *tc = tcase_create("engine");
  tcase_add_test(tc, poison_makes_unwritten_reads_nan);
  tcase_add_test(tc, no_poison_by_default);
  tcase_add_test(tc, cap_fraction_is_settable);
  tcase_add_test(tc, ledger_lists_leak_until_close);
  suite_add_tcase(s, tc);
  TCase *nodev = tcase_create("nodevice");
  tcase_add_test(nodev, no_device_is_a_status);
  suite_add_tcase(s, nodev);
  SRunner *sr = srunner_create(s);
  srunner_run(sr, NULL, argc > 1 ? argv[1] : "engine", CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
