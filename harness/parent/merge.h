/* `kiln report merge A B ...` (prefix kh_merge): one run report from the
 * reports of a sharded run (or of runs of different selections). Test
 * records are copied verbatim; the summary is recounted.
 */
#ifndef KILN_PARENT_MERGE_H
#define KILN_PARENT_MERGE_H

#include <stdio.h>

#include "reader.h"

typedef struct kh_merge_opts {
  int force;                /* merge reports of different revisions */
  const char *out_path;     /* the merged report.yaml ("-": stdout) */
} kh_merge_opts;

/* Checks that the reports belong together (one revision; no test run in
 * two of them; for sharded runs every shard 1..N present and every selected
 * test in one) and writes the merged report. Messages go to log. */
int kh_merge(kh_rep *reps, int n, const kh_merge_opts *o, FILE *log, kh_err *err);

#endif
