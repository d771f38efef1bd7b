/* The suites linked into every runner. Add a suite here and to
 * suites/meson.build; order is the order `kiln list` shows. */
#include "kiln/test.h"

extern const kt_suite kt_suite_softmax;
extern const kt_suite kt_suite_engine;
extern const kt_suite kt_suite_paged_attention;

const kt_suite *const kt_suites[] = {
    &kt_suite_engine,
    &kt_suite_softmax,
    &kt_suite_paged_attention,
    NULL,
};
