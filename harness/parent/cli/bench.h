/* `kiln bench` inside the command-line room (prefix kcli__bench): the
 * points it measures (bench.c) and how it shows them (bench-out.c: the
 * table, the summary with the targets, bench.yaml). What each number
 * means: docs/measuring.md.
 */
#ifndef KILN_PARENT_CLI_BENCH_H
#define KILN_PARENT_CLI_BENCH_H

#include <limits.h>

#include "cli-impl.h"

/* Targets. kiln within 90% of the ceiling; on the host backend with 2
 * jobs, kiln's CPU per no-op test at most 1.3 times the runner's own for
 * the same test, kiln's tests/s at least twice what this harness did before
 * it was rebuilt (KCLI__BENCH_BEFORE_TESTS_S: 110-118 tests/s on the 2-core
 * CI machine, the old harness measured before the rebuild; wall-clock figures
 * move with the machine's load, docs/measuring.md), and kiln's peak RSS
 * flat (within 2 MiB) from the first RSS run to the second. */
#define KCLI__BENCH_RATIO 0.9
#define KCLI__BENCH_CPU_RATIO 1.3
#define KCLI__BENCH_BEFORE_TESTS_S 118.0
#define KCLI__BENCH_RSS_KB 2048
#define KCLI__BENCH_HOST_ROUNDS 3
#define KCLI__BENCH_MAX_CONC 16
#define KCLI__BENCH_MAX_POINTS 64

enum { KCLI__S_CEILING = 1, KCLI__S_KILN = 2, KCLI__S_NONE = 4, KCLI__S_HOST = 8 };

typedef struct kcli__point {
  const char *what;         /* ceiling, kiln, kiln_cold, none, host, runner, rss */
  int conc, tests;
  int available;            /* 0: not measured (note says why) */
  int failed;               /* tests (or probes) that did not pass */
  double wall_s, tests_per_s, cpu_ms_per_test, ratio;
  double open_ms_mean, open_ms_max, start_ms_mean;  /* ceiling */
  long long peak_rss_kb;    /* rss: kiln's own, from its report; -1 */
  char run_dir[PATH_MAX];   /* kiln runs */
  char note[PATH_MAX + 512];
} kcli__point;

typedef struct kcli__bench_data {
  const char *runner_dir;
  int tests, host_tests, rss_tests[2];
  int conc[KCLI__BENCH_MAX_CONC], nconc;
  unsigned skip;            /* KCLI__S_* */
  const char *contain;      /* --contain for every kiln run, or NULL */
  char *out;
  char self[PATH_MAX];      /* this kiln, for `kiln run` */
  krun_backend_info bi;
  kcli__point pts[KCLI__BENCH_MAX_POINTS];
  int npts;
  double start_s;
} kcli__bench_data;

/* The best available point of each kind (the most tests/s), and the host
 * figures: host and runner are the rounds with the least CPU per test,
 * host_tps the most tests/s of kiln's rounds. */
typedef struct kcli__bench_summary {
  const kcli__point *ceiling, *kiln, *none, *host, *runner, *host_tps, *rss[2];
  double cpu_ratio;         /* host / runner CPU per test; NAN */
  int rss_known;           /* both RSS points measured */
  long long rss_growth_kb;  /* rss[1] - rss[0] */
} kcli__bench_summary;

void kcli__bench_summarise(kcli__bench_data *B, kcli__bench_summary *s);
void kcli__bench_print(const kcli__bench_data *B, const kcli__bench_summary *s);
int kcli__bench_yaml(const kcli__bench_data *B, const kcli__bench_summary *s);

#endif
