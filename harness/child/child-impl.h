/* Child side of the harness: state shared by the runner's main loop and the
 * test API while one test runs. Internal to harness/child.
 */
#ifndef KILN_CHILD_IMPL_H
#define KILN_CHILD_IMPL_H

#include <stdint.h>

#include "kiln/engine.h"
#include "kiln/test.h"
#include "protocol.h"
#include "records.h"
#include "select.h"

/* Tolerance overrides a runner takes (--tolerance, repeatable). */
#define KT__MAX_TOL 64
/* Devices one test may use at once (a context on each). */
#define KT__MAX_CONTEXTS 16

typedef struct kt__child {
  int result_fd;            /* -1: standalone, print to stdout */
  int verbose;              /* standalone: print check lines */
  int poison;
  double cap_fraction;
  uint64_t run_seed;
  uint64_t seed_counter;
  ksel_tol tol[KT__MAX_TOL];
  int ntol;
  /* The test being run. */
  const kt_suite *suite;
  const kt_test *test;
  char test_id[256];
  /* The test's contexts, one per device it uses (ctx[0]: the first), and
   * how many are open. */
  ke_context *ctx[KT__MAX_CONTEXTS];
  int nctx;
  int keep_context;         /* several tests in one process share them */
  /* --worker: after each test, what it left behind is checked; one that
   * left something stops the sequence there. */
  int worker, worker_stop;
  /* Per context: allocations with serial >= mark are this test's. */
  uint64_t ledger_mark[KT__MAX_CONTEXTS];
  int skipped;
  char skip_reason[512];
  int setup_failed;
  char setup_error[1024];
  char last_summary[1024];
  double runtime_init_ms;
  double clocks_init_ms;    /* opening the clock source (NVML) */
  /* kt__context_open ran and the fixture has not reported it yet: a warm
   * runner (--warm) opens the context before its test is known. */
  int opened;
  int open_status;          /* its ke_status; setup_error says why */
} kt__child;

extern kt__child kt__state;

/* ---- The registry (registry.c) ------------------------------------------- */

/* A registered test with its id and tags spelt out. Made only where a
 * whole registry is needed (--list, selection by pattern): a child that
 * runs one test by id builds none of it, which keeps its start cheap. */
typedef struct kt__entry {
  const kt_suite *suite;
  const kt_test *test;
  char id[256];
  char tags[512];
} kt__entry;

/* Every registered test, in link order; *n gets their number. */
kt__entry *kt__registry(size_t *n);
/* The test with this exact id, into e; 0 when there is none. */
int kt__find(const char *id, kt__entry *e);
/* -1 (after saying why on stderr) when two suites share a name or a test
 * id is registered twice. */
int kt__registry_check(const char *argv0);
/* The `runner` record on stdout: the kiln and protocol this runner was
 * built with. */
void kt__runner_record(void);
/* --list: the runner record, then a `test` record per test. */
void kt__list(void);

/* Sends a record to the parent (or prints it in standalone mode). */
void kt__emit(kp_record_out *r);
/* The protocol's device record for d (the one layout every writer uses). */
void kt__device_of(const ke_device_info *d, kp_device *out);
double kt__now_ms(void);
/* 1 when data is a guarded buffer (kt_alloc) whose guard bytes changed. */
int kt__guard_damaged(const void *data, const char *file, int line);
/* Opens the engine context on device 0 as the fixture does, keeping the
 * time it took and the status for the fixture to report. */
int kt__context_open(void);
/* Sets ctx's tuning knobs from the environment's kernel settings
 * (tuning.c); a status. */
int kt__tuning_apply(ke_context *ctx);
/* Closes every context the runner holds. */
void kt__contexts_close(void);
void kt__fixture_setup(void);
void kt__fixture_teardown(void);
void kt__guards_reset(void);
/* The runner's probes (probes.c): --context-probe (main_ms: when main()
 * started) and --health-probe; each returns the exit status. */
int kt__context_probe(double main_ms);
int kt__health_probe(void);
/* Devices a test uses at once: its .devices, at least 1. */
int kt__devices_needed(const kt_test *t);

#endif
