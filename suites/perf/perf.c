/* Perf suite: one benchmark per kernel family (tag `perf`, held back from a
 * plain `kiln run`; `kiln run @perf`). Each test runs the rows of the table
 * of cases (cases.c) that name it: it measures the median of many
 * event-timed launches over rotating buffers that together are at least
 * twice the device's L2, records bandwidth (or FLOP/s) as report metrics,
 * and checks one output against the double reference on sampled rows, so a
 * fast wrong kernel fails. Figures are never asserted. Method, shapes and
 * which bytes count: docs/measuring.md. On the host backend every size is
 * scaled down so that CI runs the same code in seconds.
 */
#include "perf/perf.h"

/* A test that runs the table's rows that name it (its own name), each
 * through fn. vs_copy: the test is memory-bound and measures the copy
 * first, the base of its ratio_to_copy. */
#define PERF_CASES_TEST(name, fn, vs_copy)                                   \
  START_TEST(name) { perf_run_cases(#name, fn, vs_copy); }                   \
  END_TEST

PERF_CASES_TEST(copy, perf_copy_case, 0)
PERF_CASES_TEST(softmax, perf_row_case, 1)
PERF_CASES_TEST(rmsnorm, perf_row_case, 1)
PERF_CASES_TEST(rmsnorm_residual, perf_row_case, 1)
PERF_CASES_TEST(swiglu, perf_row_case, 1)
PERF_CASES_TEST(rope, perf_rope_case, 1)
PERF_CASES_TEST(kv_repeat, perf_kv_case, 1)
PERF_CASES_TEST(mxfp_dequant, perf_mx_dequant_case, 1)
PERF_CASES_TEST(gemm, perf_gemm_case, 0)
PERF_CASES_TEST(mxfp_gemm, perf_mx_gemm_case, 0)
PERF_CASES_TEST(attention, perf_attention_case, 0)
PERF_CASES_TEST(decode, perf_decode_case, 1)
PERF_CASES_TEST(paged_decode, perf_decode_case, 1)

/* The decode rows again, over settings of the split's knobs (decode.c). */
START_TEST(decode_sweep) { perf_decode_sweep(); }
END_TEST

#define PERF_TEST(fn) KT_TEST(fn, .slots = KT_WHOLE_DEVICE, .timeout_s = 600)

static const kt_test kPerfTests[] = {
    PERF_TEST(copy),    PERF_TEST(softmax),      PERF_TEST(rmsnorm),
    PERF_TEST(rmsnorm_residual), PERF_TEST(swiglu), PERF_TEST(rope),
    PERF_TEST(kv_repeat), PERF_TEST(mxfp_dequant), PERF_TEST(gemm),
    PERF_TEST(mxfp_gemm), PERF_TEST(attention), PERF_TEST(decode),
    PERF_TEST(paged_decode), PERF_TEST(decode_sweep),
};
KT_SUITE(kt_suite_perf, "perf", "perf", kPerfTests);
