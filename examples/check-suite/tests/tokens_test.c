/* A host-side test in the same runner: it needs no device (host_only), so
 * kiln opens no context for it. */
#include "kiln/test.h"
#include "mlp.h"

START_TEST(clamps_out_of_range) {
  int32_t ids[] = {5, -1, 31999, 32000, 7};
  ck_assert_int_eq(mlp_clamp_tokens(ids, 5, 32000, 0), 2);
  ck_assert_int_eq(ids[1], 0);
  ck_assert_int_eq(ids[3], 0);
  ck_assert_int_eq(ids[2], 31999);
}
END_TEST

static const kt_test token_tests[] = {
    KT_TEST(clamps_out_of_range, .host_only = 1),
};
KT_SUITE(example_token_suite, "tokens", "cpu", token_tests);
