/* Sources of tests (prefix krun__source): what lists tests and runs them.
 * Each kind of source (kiln runners, GoogleTest binaries, manifests of
 * commands, other frameworks' suites) is one file that fills one krun__source_i
 * table, the ggml backend way: the source keeps its state in a context
 * of its own (the table's open makes it, close frees it), sees a narrow
 * view of the run (krun__srcrun) and of each child (krun__child), and
 * declares its own flags and config keys (krun_sopt, run.h), which cli/
 * reads generically. The job, the loop and the warm pool call only the
 * table, never a source file by name, and a source calls nothing above
 * it: it hands records to the emit function of its child's view.
 *
 * Adding a source: one file that ends in
 *     const krun__source_i krun__foo_source = {.name = "foo", ...};
 * and its row in the table of sources.c (and the file in
 * harness/parent/meson.build). Nothing else in run/ or cli/ changes.
 */
#ifndef KILN_PARENT_RUN_SOURCE_IMPL_H
#define KILN_PARENT_RUN_SOURCE_IMPL_H

#include <stddef.h>
#include <sys/types.h>

#include "run.h"

struct krun__console;
struct krun__log;
struct krun__stream;

/* What a source sees of the run (its context's open, every child). */
typedef struct krun__srcrun {
  const krun_settings *s;   /* the run's settings (poison, seed, ...) */
  int seed_given;           /* s->seed was set */
  const krun_registry *reg;
  const char *runner;       /* the backend's kiln runner */
  const char *out_dir;      /* the run folder */
  const int *queued;        /* per registry source: test runs queued */
  struct krun__console *con;   /* for notes */
  void *core;               /* the core's (emit's) */
} krun__srcrun;

/* What a source sees of one child: its test runs and, once it ended, how.
 * The core fills it before every call; data is the source's own. */
typedef struct krun__child {
  const krun__srcrun *run;
  void *ctx;                /* the source's context (its open's), or NULL */
  void *data;               /* the source's state for this child: argv may
                               set it, free frees it */
  int source;               /* index into run->reg->sources */
  const krun_source *src;
  int ntests;               /* one, or every test of --isolation none */
  const krun_test *const *defs;   /* per test run: its test */
  const struct krun__stream *st;  /* per test run: where its records are */
  int cur;                  /* the test run records go to; -1: none yet */
  int warm;                 /* started before its test was known (--warm) */
  int worker;               /* runs its tests as a worker (--isolation worker) */
  int pull;                 /* a worker that may ask for more (the source's more) */
  const char *tmpdir;       /* its private TEST_TMPDIR (NULL: warm) */
  pid_t pid;
  char *line;               /* KP_MAX_LINE scratch */
  /* How it ended (finish): */
  int exec_errno, wstatus, timed_out, interrupted;
  const struct krun__log *log;   /* its console output */
  /* Per test run: its time as the source knows it, in ms (finish may set
   * it for a shared process; -1: the core's clock). */
  double *took_ms;
  /* Hands one protocol record (a line without its newline) to test run i
   * as if the child had sent it on its result pipe; i = -1: routed as the
   * child's own records are (a `test` record moves a shared process on). */
  void (*emit)(struct krun__child *c, int i, const char *line);
  /* The child's live processes besides its own process, at most max into
   * pids, as kiln's containment finds them (its cgroup, else what
   * descends from it and kiln's orphans that carry its KILN_JOB); looked
   * at, not killed. -1 when kiln does not look (--contain none). */
  int (*others)(const struct krun__child *c, pid_t *pids, int max);
} krun__child;

/* What a lister may ask of the others: a manifest names suites of other
 * sources. */
typedef struct krun__lister {
  krun_registry *reg;
  int kind;                 /* the lister's own */
  /* A config key of another source (what a manifest may name): the
   * option, its source in *kind; NULL for none. */
  const krun_sopt *(*option)(const char *key, int *kind);
  /* Every source's option i, as krun_sopt_at; a kind's name. */
  const krun_sopt *(*option_at)(int i, int *kind);
  const char *(*kind_name)(int kind);
  /* Lists path through source kind's list. */
  int (*list)(const struct krun__lister *L, int kind, const char *path, kh_err *err);
} krun__lister;

typedef struct krun__source_i {
  const char *name;         /* krun_kind_name(kind) */
  /* What one test is called when its tests cannot share one process
   * (--isolation none, kiln bisect): "command"; NULL: they can. */
  const char *alone;
  /* Its command-line flags and config keys, {NULL} ended (optional). */
  const krun_sopt *opts;
  /* Seconds its tests may take where neither the test nor --timeout (or
   * the config's timeout) sets a deadline (optional: 0, the run's
   * default). For suites written for a runner that has no deadline of
   * its own. */
  int timeout_s;
  /* Lists path's tests into L->reg (krun__registry_source with L->kind,
   * then krun__registry_add: id, suite, tags, slots, devices, timeout,
   * file:line). 0; -2 a usage error, -3 (or -1) an infrastructure error,
   * err naming path. */
  int (*list)(const krun__lister *L, const char *path, kh_err *err);
  /* Lists every path its flag (or config key) names at once, as list
   * would each in turn, in their order: one process for them all
   * (optional: list is called per path). */
  int (*list_all)(const krun__lister *L, char *const *paths, int n, kh_err *err);
  /* Its context for the run, before the first test: kind is its own,
   * vals its opts' values in its opts' order; may start processes it
   * keeps for the whole run (a pool of pre-imported interpreters). NULL
   * for none (optional). */
  void *(*open)(const krun__srcrun *run, int kind, const krun_sval *vals);
  /* Frees the context and ends what open started, after the last test
   * (before the final sweep), or on the way out of a run that failed
   * (optional). */
  void (*close)(void *ctx);
  /* Appends the program and its arguments for c's tests (one, or every
   * test of --isolation none; none for a warm child) to argv, *n words
   * so far. May set c->data. */
  void (*argv)(krun__child *c, char **argv, int *n);
  /* What kiln exec'd, for the message of a failed exec. */
  const char *(*program)(const krun__child *c);
  /* Variables the child must not take from kiln's environment, NULL
   * ended (optional). */
  const char *const *unenv;
  /* 1: the child speaks kiln's protocol on fd 3 and takes its slots
   * itself (a kiln runner); 0: a program of its own, which `kiln __exec`
   * starts when it must take slots. */
  int protocol;
  /* 1: a program that takes no slots itself but writes kiln's records on
   * fd 3: the pipe is open for it, and `kiln __exec` leaves it open
   * (optional). */
  int records;
  /* 1: its children can start before their test is known (--warm, the
   * test assigned on stdin), so the warm pool may run them (optional). */
  int warm;
  /* 1: a child can run a sequence of its tests as a worker, reporting
   * each as it ends and checking between two, as far as the source can,
   * that the first left nothing behind (--isolation worker; the child's
   * view says worker) (optional). */
  int workers;
  /* A worker that may ask for more of its source's tests when its
   * sequence runs out (a `more` record on fd 3), so that no sequence need
   * hold all it will run: the runs [first, c->ntests) kiln added are
   * written to out as the worker reads them on its stdin, ending with an
   * empty line (none added: the empty line alone) (optional: workers
   * that do not ask). */
  void (*more)(krun__child *c, int first, kh_buf *out);
  /* 1: a worker of source a (of this kind) runs source b's tests too, in
   * the one process (b is collected with a: paths of one project),
   * so one sequence, and what a worker asks for, may hold both's
   * (optional: a worker runs its own source's tests alone). */
  int (*shares)(const krun_registry *reg, int a, int b);
  /* 1: its worker stops after a test whose check found something left
   * behind (a `worker_check` note), so what the worker leaves running is
   * that test's (optional: 0, the run's). */
  int worker_stops;
  /* The child's console output as it comes, made into records handed to
   * c->emit in order (optional). */
  void (*output)(krun__child *c, const char *data, size_t n);
  /* After the child ended and its pipes drained: what it left (its exit
   * status, files it wrote) as records into each test run the protocol
   * did not finish; decide.c then makes the outcome (optional: a source
   * whose records say everything). */
  void (*finish)(krun__child *c);
  /* Frees c->data (optional). */
  void (*free)(krun__child *c);
} krun__source_i;

/* sources.c: every source, by kind */
const krun__source_i *krun__source(int kind);
int krun__nsources(void);
/* Opens every source's context (run) or closes them; ctx has one slot
 * per source. */
void krun__sources_open(const krun__srcrun *run, void **ctx);
void krun__sources_close(void **ctx);
/* A run a warm child can take: its source starts warm, a GPU test of one
 * slot on one device. */
int krun__source_warm_fits(const krun_test *t);
/* 1: one worker can run tests a and b in one sequence: the same needs
 * (slots, devices, a GPU) and the same source, or sources whose table
 * says a worker of one runs the other's (shares). */
int krun__source_joins(const krun_registry *reg, const krun_test *a, const krun_test *b);
/* For settings.c: the sources' option values freed, copied over, shown. */
void krun__svals_free(krun_settings *s);
void krun__svals_overlay(krun_settings *dst, const krun_settings *src);
void krun__svals_each(const krun_settings *s,
                      void (*fn)(const char *key, const char *value, void *arg), void *arg);

#endif
