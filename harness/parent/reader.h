/* Reading a report.yaml back into memory (prefix kh_rep): the typed fields
 * that junit, diff, merge and html need, over the libyaml document that
 * stays loaded so that merge can copy test records verbatim (keys this
 * parent does not know included). Strings point into the document.
 */
#ifndef KILN_PARENT_READER_H
#define KILN_PARENT_READER_H

#include <yaml.h>

#include "base.h"

typedef struct kh_rkernel {
  const char *name;
  long long launches;
  double total_ms, median_ms;
} kh_rkernel;

typedef struct kh_rcheck {
  const char *name, *dtype;
  long long n, over;
  double max_abs, max_rel, nmse, atol, rtol, worst_actual, worst_expected;
  double ratio;             /* worst element's |error| / (atol + rtol*|e|) */
  int pass;
} kh_rcheck;

typedef struct kh_rmetric {
  const char *name, *unit;
  double value;             /* NAN when absent or not a number */
} kh_rmetric;

typedef struct kh_rtest {
  yaml_node_t *node;        /* the record, for merge */
  const char *id, *suite, *message, *file, *signal, *log_path, *log_tail;
  const char *started;
  const char **tags;
  int ntags;
  int outcome;              /* kh_outcome */
  int final, repeat, attempt, line;
  double wall_ms, body_ms;  /* body_ms: NAN when the child sent none */
  kh_rkernel *kernels;
  int nkernels;
  kh_rcheck *checks;
  int nchecks;
  kh_rmetric *metrics;
  int nmetrics;
} kh_rtest;

typedef struct kh_rep {
  char *path;               /* the report file */
  yaml_document_t doc;
  yaml_node_t *root;
  const char *git, *version, *command, *host, *backend, *start, *end;
  double duration_s;
  int interrupted;
  int shard_index, shard_count, shard_total;  /* 0 when not sharded */
  int counts[16];           /* final outcomes, by kh_outcome */
  int total, not_run;
  kh_rtest *tests;
  int ntests;
} kh_rep;

/* Loads FILE, or DIR/report.yaml. Errors name the file, line and column. */
int kh_rep_load(const char *path, kh_rep *rep, kh_err *err);
void kh_rep_free(kh_rep *rep);

/* Lookups in the loaded document; "" / NAN / dflt when absent. */
yaml_node_t *kh_rep_node(const kh_rep *rep, yaml_node_t *map, const char *key);
const char *kh_rep_text(const kh_rep *rep, yaml_node_t *map, const char *key);
double kh_rep_num(const kh_rep *rep, yaml_node_t *map, const char *key);
/* A YAML number as written by the report (.nan, .inf, -.inf too). */
double kh_rep_parse_num(const char *s);

/* 1 when any of the test's final records did not pass (kh_outcome_failed). */
int kh_rtest_failed(const kh_rtest *t);

#endif
