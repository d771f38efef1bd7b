/* `kiln bench` (prefix kh_): measures, in one run and side by side, the
 * ceiling for isolated tests (processes that only open an engine context),
 * kiln's own throughput on trivial tests at several concurrencies, the
 * same tests in one shared process (--isolation none), and kiln's CPU cost
 * per test on the host backend. Prints a table and writes bench.yaml.
 * What each number means: docs/performance.md.
 */
#ifndef KILN_PARENT_BENCH_H
#define KILN_PARENT_BENCH_H

/* argv[0] is "bench". Returns kiln's exit status. */
int kh_bench_main(int argc, char **argv);

#endif
