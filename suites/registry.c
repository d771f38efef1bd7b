/* The suites linked into every runner. Add a suite here and to
 * suites/meson.build; order is the order `kiln list` shows. */
#include "kiln/test.h"

extern const kt_suite kt_suite_softmax;
extern const kt_suite kt_suite_engine;
extern const kt_suite kt_suite_faults;
extern const kt_suite kt_suite_rope;
extern const kt_suite kt_suite_rmsnorm;
extern const kt_suite kt_suite_swiglu;
extern const kt_suite kt_suite_gemm;
extern const kt_suite kt_suite_mxfp;
extern const kt_suite kt_suite_drift;
extern const kt_suite kt_suite_paged_attention;
extern const kt_suite kt_suite_masks;
extern const kt_suite kt_suite_attention;
extern const kt_suite kt_suite_attention_tiled;
extern const kt_suite kt_suite_attention_decode;
extern const kt_suite kt_suite_kv_repeat;
extern const kt_suite kt_suite_bench;
extern const kt_suite kt_suite_perf;

const kt_suite *const kt_suites[] = {
    &kt_suite_engine,
    &kt_suite_softmax,
    &kt_suite_faults,
    &kt_suite_rope,
    &kt_suite_rmsnorm,
    &kt_suite_swiglu,
    &kt_suite_gemm,
    &kt_suite_mxfp,
    &kt_suite_drift,
    &kt_suite_paged_attention,
    &kt_suite_masks,
    &kt_suite_attention,
    &kt_suite_attention_tiled,
    &kt_suite_attention_decode,
    &kt_suite_kv_repeat,
    &kt_suite_bench,
    &kt_suite_perf,
    NULL,
};
