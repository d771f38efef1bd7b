/* Internals of the run room (prefix krun__): a run's state, its children
 * (jobs), their logs and record streams, outcomes, the warm pool and the
 * console. Shared by the room's files; no other room sees them.
 */
#ifndef KILN_PARENT_RUN_IMPL_H
#define KILN_PARENT_RUN_IMPL_H

#include <limits.h>
#include <stdio.h>
#include <sys/types.h>

#include "protocol.h"
#include "report.h"
#include "run.h"

int krun__jobs(const krun_settings *s);               /* --jobs, or CPUs */
const char *krun__visible_var(int backend, int which);

/* ---- A child's output (log.c): its first 256 KiB and its last 64 KiB ---- */

typedef struct krun__log {
  char *head;
  size_t head_len, head_cap;
  char *ring;
  size_t ring_pos, ring_len;
  long long total;
} krun__log;

void krun__log_add(krun__log *l, const char *d, size_t n);
long long krun__log_dropped(const krun__log *l);
/* The last lines (at most 40 and 4 KiB), cleaned for YAML; malloc'd. */
char *krun__log_tail(const krun__log *l);
/* The kept output, with a marker where bytes were dropped. */
void krun__log_write(const krun__log *l, const char *path);
void krun__log_free(krun__log *l);

/* ---- A child's record stream (ingest.c) ------------------------------------ */

/* Where a test's stream is in the protocol's order. */
typedef struct krun__stream {
  int started, ended, has_result;
  char status[8];           /* the result record's: pass, fail, error, skip */
} krun__stream;

/* Takes one line from the child into the test: records the report lists
 * are kept, the result and the test's pid and seed are taken. 0, or -1
 * after a protocol error (later lines are then ignored). */
int krun__ingest(krep_report *rep, krep_test *t, krun__stream *st, const char *line);
/* Records a protocol error (the first one stands). */
void krun__protocol_error(krep_report *rep, krep_test *t, const char *why,
                          const char *line);

/* ---- Outcomes (decide.c) ------------------------------------------------------ */

/* ---- Containment (contain.c) -------------------------------------------------- */

typedef struct krun__contain {
  int mode;                 /* resolved: KRUN_CONTAIN_CGROUP, _SUBREAPER, _NONE */
  char run_cg[PATH_MAX];    /* cgroup: the run's cgroup folder ("" none) */
  int has_kill;             /* cgroup.kill (Linux 5.14) */
  pid_t self, session;
  char why[512];            /* auto without a cgroup: why not */
} krun__contain;

/* Processes a child left, found and killed. */
typedef struct krun__left {
  krep_proc *procs;
  int n;
} krun__left;

typedef struct krun__exit {
  int exec_errno;           /* the exec failed */
  const char *runner;       /* what was exec'd */
  const char *role;         /* "runner", "program"; NULL: runner */
  int timed_out;
  double timeout_s, grace_s;
  int kill_sent;            /* the grace ran out: SIGKILL */
  int interrupted;          /* kiln was stopped */
  int stop_sig;             /* ...by this signal (0: unknown) */
  int signaled, sig;
  int exited, code;
  int shared_died;          /* --isolation none: the process ended before
                               this test ran */
  int single;               /* the process ran this test alone, so its exit
                               status is this test's */
} krun__exit;

/* Sets the outcome and message from what the child sent and how it ended
 * (partial: an unterminated last line, or NULL). leaks_fail: a passing
 * test with leak records becomes `leak`. */
void krun__decide(krep_report *rep, krep_test *t, const krun__stream *st,
                  const char *partial, const krun__exit *x, int leaks_fail);
/* "SIGSEGV" for 11; "signal N" when unnamed. */
void krun__signal_name(int sig, char *out, size_t n);

/* ---- The console (console.c) ------------------------------------------------------ */

typedef struct krun__console {
  FILE *out;
  int tty, color, verbose;
  int total, done;
  int counts[KREP_NOUTCOMES];
  double start_ms;
  int progress_shown;
  char last_progress[512];
} krun__console;

void krun__console_init(krun__console *c, int verbose, int total);
void krun__console_result(krun__console *c, const krep_test *t);
void krun__console_progress(krun__console *c, const char *const *running, int n);
void krun__console_note(krun__console *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void krun__console_summary(krun__console *c, const krep_report *rep, const char *path);

/* ---- A run ---------------------------------------------------------------------------- */

typedef struct krun__item {
  int test;                 /* index into the registry */
  int repeat, attempt;
} krun__item;

struct krun__gtest;

/* A child process: a cold test, a warm child, or --isolation none's one. */
typedef struct krun__job {
  int active;
  int kind;                 /* krun_kind of its tests (a warm child: runner) */
  struct krun__gtest *gt;   /* a GoogleTest child's console and results */
  pid_t pid;
  int fd_res, fd_out, fd_in;   /* fd_in: a warm child's stdin until assigned */
  kp_reader *rd;
  krun__log log;
  krep_test **tests;        /* one, or every test of --isolation none */
  krun__stream *st;
  const krun_test **defs;
  int ntests, cur;          /* cur: where records go; -1: none yet */
  char *partial;            /* an unterminated last line */
  int dev, slots;           /* dev: index into bi->dev, -1 for none */
  double spawn_ms, test_ms, deadline, kill_at, drain_until;
  double exit_wall_s;       /* when it was reaped: its slots were back */
  int exited, wstatus;
  int timed_out, term_sent, kill_sent, interrupted;
  int exec_errno;
  char *tmpdir;
  /* Warm children: spawned with no test, which comes on fd_in. */
  int warm, assigned, ready, retiring, token_seen;
  double ready_ms, assign_ms;
  /* Containment: KILN_JOB=<kiln pid>.<serial> in its environment, and its
   * cgroup (cg, NULL when none; cg_procs its cgroup.procs, or -1). */
  int serial;
  char *cg;
  int cg_procs;
} krun__job;

typedef struct krun__run {
  const krun_opts *o;
  const krun_settings *s;
  krun_tokens tok;
  int use_tokens;
  int cap[KRUN_MAX_DEVICES], used[KRUN_MAX_DEVICES];
  krun__item *queue;
  int qhead, qlen, qcap;
  krun__job *jobs;
  int maxjobs;              /* running and warm children */
  int maxrun;               /* tests at once (--jobs) */
  int nrunning;
  /* The warm pool: children spawned warm and not yet assigned. */
  int warm_on;
  int warm_max[KRUN_MAX_DEVICES], warm_n[KRUN_MAX_DEVICES];
  int nwarm;                /* sum of warm_n */
  int qwarm;                /* queued runs a warm child could take */
  int warm_deaths;          /* in a row, before assignment */
  char **wrap;
  int nwrap;
  krep_report rep;
  krep_journal *journal;
  krun__console con;
  int sigfd;
  int stopping, infra;
  krun__contain ct;
  int job_serial;           /* the last KILN_JOB serial given */
  pid_t guard_pid;          /* the guard (guard.c), or 0 */
  int guard_fd;             /* its stdin, -1: none */
  int stop_sig;             /* the signal that stopped kiln */
  char *line;               /* KP_MAX_LINE scratch */
  char *self;               /* this kiln, for `kiln __exec` */
  int seq;                  /* private TEST_TMPDIR numbers */
  char *log_dir;            /* the logs/<suite> folder made last */
} krun__run;

/* job.c: children and their test runs */
void krun__job_init(krun__job *j, int ntests);
void krun__job_clear(krun__job *j);
krep_test *krun__job_test(const krun__job *j);    /* where records go, or NULL */
krun__job *krun__free_job(krun__run *R);
int krun__spawn(krun__run *R, krun__job *j);
void krun__spawn_failed(krun__run *R, krun__job *j);
void krun__job_finish(krun__run *R, krun__job *j);
krep_test *krun__new_test(krun__run *R, const krun__item *it);
/* The journal's start record of a test run, before it runs. */
void krun__journal_start(krun__run *R, const krun__job *j, krep_test *t);
void krun__immediate(krun__run *R, const krun__item *it, int outcome, const char *msg);
double krun__timeout_ms(const krun__run *R, const krun_test *t);
int krun__want(const krun_test *t, int cap);
void krun__queue_front(krun__run *R, krun__item it);
krun__item krun__queue_take(krun__run *R);

/* warm.c: the warm pool */
int krun__warm_fits(const krun_test *t);
void krun__warm_fill(krun__run *R);
void krun__warm_retire(krun__run *R);
krun__job *krun__warm_pick(krun__run *R);
int krun__warm_assign(krun__run *R, krun__job *j, const krun__item *it);
int krun__warm_line(krun__run *R, krun__job *j, const char *line);
void krun__warm_gone(krun__run *R, krun__job *j);

/* loop.c: scheduling and events until the queue is done */
void krun__loop(krun__run *R);
/* A record line from the job's child (or made for it from what a
 * GoogleTest binary prints): routed to its test run and ingested. */
void krun__job_line(krun__run *R, krun__job *j, const char *line);

/* registry.c, devices.c: the sources' shared parts */
int krun__registry_source(krun_registry *reg, int kind, const char *path);
/* Appends a copy of t (its strings copied; argv taken as is). */
krun_test *krun__registry_add(krun_registry *reg, int source, const krun_test *t);
/* Runs `runner flag` and calls fn for each record of its answer after the
 * `runner` record, which must speak this kiln's protocol. */
int krun__runner_records(const char *runner, const char *flag,
                         void (*fn)(kp_record *, void *), void *arg, kh_err *err);

/* gtest.c: GoogleTest binaries */
/* Prepares a GoogleTest child (its console reader, its JSON file) and
 * appends the binary and its arguments for the job's tests to argv (n so
 * far). */
void krun__gtest_start(krun__run *R, krun__job *j, char **argv, int *n);
/* The child's console output, as it comes: [ RUN ] lines become `test`
 * records, the end of each test is kept. */
void krun__gtest_output(krun__run *R, krun__job *j, const char *data, size_t n);
/* After the child: its results from GoogleTest's JSON output (else from
 * its console) as records into each test run. */
void krun__gtest_finish(krun__run *R, krun__job *j);
void krun__gtest_free(krun__job *j);

/* manifest.c: commands */
/* After the child: its test's records from how the command ended. */
void krun__command_finish(krun__run *R, krun__job *j);

/* contain.c: what tests leave running */
int krun__contain_setup(krun__run *R, kh_err *err);
void krun__contain_teardown(krun__run *R);
/* Gives the child its KILN_JOB serial and (cgroup) its cgroup. */
void krun__contain_job(krun__run *R, krun__job *j);
void krun__contain_job_clear(krun__job *j);
/* After the child ended: what it left, described, killed. */
void krun__contain_left(krun__run *R, krun__job *j, krun__left *l);
/* At the end: whatever no test claimed, onto the run. */
void krun__contain_sweep(krun__run *R);

/* guard.c: the guard that ends a run's processes when kiln dies */
void krun__guard_start(krun__run *R);
void krun__guard_stop(krun__run *R);

#endif
