/* The suites linked into every runner. Add a suite here and to
 * suites/meson.build; order is the order `kiln list` shows. */
#include "kiln/test.h"

extern const kt_suite kt_suite_softmax;
extern const kt_suite kt_suite_engine;
extern const kt_suite kt_suite_masks;
extern const kt_suite kt_suite_attention;
extern const kt_suite kt_suite_kv_repeat;

const kt_suite *const kt_suites[] = {
    &kt_suite_engine,
    &kt_suite_softmax,
    &kt_suite_masks,
    &kt_suite_attention,
    &kt_suite_kv_repeat,
    NULL,
};
