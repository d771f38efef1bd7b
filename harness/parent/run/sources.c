/* Every source of tests by kind (source-impl.h): the one place that knows
 * which tables exist. The job, the loop and the warm pool reach a source
 * only through krun__source().
 */
#include "run-impl.h"

static const krun__source_i *const sources[] = {
    [KRUN_KIND_RUNNER] = &krun__runner_source,
    [KRUN_KIND_GTEST] = &krun__gtest_source,
    [KRUN_KIND_COMMAND] = &krun__command_source,
    [KRUN_KIND_PYTEST] = &krun__pytest_source,
};

const krun__source_i *krun__source(int kind) { return sources[kind]; }

void krun__sources_run(krun__run *R, int start) {
  for (size_t k = 0; k < sizeof sources / sizeof sources[0]; k++) {
    void (*fn)(krun__run *) = start ? sources[k]->run_start : sources[k]->run_end;
    if (fn) fn(R);
  }
}

int krun__source_warm_fits(const krun_test *t) {
  return krun__source(t->kind)->warm && t->needs_gpu && (t->slots == 0 || t->slots == 1) &&
         t->devices <= 1;
}
