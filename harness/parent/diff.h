/* `kiln report diff BASE NEW` (prefix kh_diff): what changed between two
 * reports — tests newly failing, fixed, newly flaky, new and removed; tests
 * and kernels slower beyond a noise threshold; checks whose max error grew
 * by more than a factor while still passing; throughput metrics (kt_metric
 * in GB/s or TFLOP/s) lower beyond a noise threshold. A summary and a YAML
 * file.
 */
#ifndef KILN_PARENT_DIFF_H
#define KILN_PARENT_DIFF_H

#include <stdio.h>

#include "reader.h"

typedef struct kh_diff_opts {
  double time_rel;          /* slower by more than this fraction (0.2 = 20%) */
  double test_abs_ms;       /* ...and by more than this many ms (test body) */
  double kernel_abs_ms;     /* ...and by more than this (kernel median) */
  double drift_factor;      /* max abs error grew more than this factor */
  double metric_rel;        /* a throughput metric (GB/s, TFLOP/s) fell by
                               more than this fraction (0.2 = 20%) */
  const char *yaml_path;    /* or NULL */
} kh_diff_opts;

void kh_diff_opts_default(kh_diff_opts *o);

/* Compares; prints the summary to out and writes the YAML when asked.
 * *regressions gets the number of findings that are regressions. */
int kh_diff(const kh_rep *base, const kh_rep *neu, const kh_diff_opts *o,
            FILE *out, int *regressions, kh_err *err);

#endif
