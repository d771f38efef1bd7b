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
#include "source-impl.h"

int krun__jobs(const krun_settings *s);               /* --jobs, or CPUs */
/* A device's slots when --slots is not given (devices.c). */
int krun__default_slots(const krun_settings *s, const krun_backend_info *bi, int d);
/* The share of a device's free memory that tests may fill (--slots auto,
 * and the default slots' memory bound). */
#define KRUN_AUTO_BUDGET 0.9
/* Device memory a context takes besides what its test allocates
 * (devices.c). */
long long krun__context_bytes(int backend);
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
int krun__log_write(const krun__log *l, const char *path);  /* 0, or -1 (errno) */
/* The most bytes a test's log file takes. */
long long krun__log_max_bytes(void);
void krun__log_free(krun__log *l);

/* ---- A child's record stream (ingest.c) ------------------------------------ */

/* Where a test's stream is in the protocol's order. */
typedef struct krun__stream {
  int started, ended, has_result;
  int pos;                  /* a shared process's: its place in the order
                               the process ran its tests, 1 first */
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
  double term_late_s;       /* SIGTERM went this long after the deadline */
  int kill_sent;            /* the grace ran out: SIGKILL */
  int interrupted;          /* kiln was stopped */
  int stop_sig;             /* ...by this signal (0: unknown) */
  int outside;              /* a stop signal kiln did not send ended it */
  int signaled, sig;
  int exited, code;
  int shared_died;          /* the process it shared ended before this
                               test ran: 1 --isolation none, 2 its worker */
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
  FILE *out;                /* NULL: quiet */
  int tty, color, verbose;
  int total, done;
  int counts[KREP_NOUTCOMES];
  double start_ms;
  int progress_shown;
  char last_progress[512];
} krun__console;

void krun__console_init(krun__console *c, int verbose, int quiet, int total);
void krun__console_result(krun__console *c, const krep_report *rep, const krep_test *t);
void krun__console_progress(krun__console *c, const char *const *running, int n);
void krun__console_note(krun__console *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void krun__console_summary(krun__console *c, const krep_report *rep, const char *path);

/* ---- A run ---------------------------------------------------------------------------- */

struct krun__run;
struct krun__job;

/* Takes one protocol record (a line without its newline) for the job's
 * test runs, as if the child had sent it on its result pipe. */
typedef void krun__emit(struct krun__run *R, struct krun__job *j, const char *line);

typedef struct krun__item {
  int test;                 /* index into the registry */
  int repeat, attempt;
  int alone;                /* run alone: a worker's test confirmed (worker.c) */
} krun__item;

/* A child process: a cold test, a warm child, or --isolation none's one. */
typedef struct krun__job {
  int active;
  int kind;                 /* krun_kind of its tests (a warm child: runner) */
  krun__child view;         /* what its source sees of it (view.data: the
                               source's state for it) */
  double *took_ms;          /* per test run: the source's times (view) */
  pid_t pid;
  int fd_res, fd_out, fd_in;   /* fd_in: a warm child's stdin until assigned */
  kp_reader *rd;
  krun__log log;
  krep_test **tests;        /* one, or every test of --isolation none */
  krun__stream *st;
  const krun_test **defs;
  int ntests, cur;          /* cur: where records go; -1: none yet */
  int nstarted;             /* a shared process's runs begun so far */
  char *partial;            /* an unterminated last line */
  /* Its devices (indexes into bi->dev): dev is the first, -1 for none; a
   * test of several devices has ndevs of them, slots taken on each. */
  int dev, slots;
  int devs[KRUN_MAX_DEVICES], ndevs;
  double spawn_ms, test_ms, deadline, kill_at, drain_until;
  double exit_wall_s;       /* when it was reaped: its slots were back */
  int exited, wstatus;
  int timed_out, term_sent, kill_sent, interrupted;
  double term_late_ms;      /* how late the loop sent SIGTERM */
  /* Ended in a way a stop signal kiln did not send explains (a batch
   * system's cancel signals every process of the job, kiln's own a moment
   * later): killed by SIGTERM, SIGINT or SIGHUP, or exited 128 + one of
   * them or mid-test (loop.c). Its verdict waits until hold_until for
   * kiln's signal. */
  int outside_sig;
  double hold_until;
  int exec_errno;
  char *tmpdir;
  int keep_tmp;             /* a test failed: its TEST_TMPDIR stays */
  /* --isolation worker: a sequence of one source's tests (worker.c). */
  int worker;
  /* A worker of a source that answers `more` (worker.c): stdin is a pipe
   * that kiln writes the runs it adds to. */
  int pull;
  /* Warm children: spawned with no test, which comes on fd_in. */
  int warm, assigned, ready, retiring, token_seen;
  double ready_ms, assign_ms;
  /* Containment: KILN_JOB=<kiln pid>.<serial> in its environment, and its
   * cgroup (cg, NULL when none; cg_procs its cgroup.procs, or -1). */
  int serial;
  char *cg;
  int cg_procs;
  /* A device health probe (health.c): no test; its verdict. */
  int probe, probe_passed;
  char *probe_message;
  /* A test of this child put its devices under probe (health.c). */
  int cause;
  /* Its device was taken out of the run while it ran: its tests are
   * collateral (run again elsewhere). */
  int collateral;
} krun__job;

/* What the run knows of a device's health (health.c). */
typedef enum { KRUN__DEV_OK = 0, KRUN__DEV_SUSPECT, KRUN__DEV_REMOVED } krun__dev_state;

typedef struct krun__health {
  int state;                /* krun__dev_state */
  int probing;              /* a probe job runs (0: to be started) */
  const char *cause;        /* the test that put it under probe */
  const char *reason;       /* removed: why (the probe's message) */
} krun__health;

/* A worker's run that did not pass, queued alone (worker.c): that run,
 * the tests before it in the worker, its outcome there, and whether it
 * began there. */
typedef struct krun__confirm {
  int test, repeat, attempt;
  char *after;
  int was, started;
} krun__confirm;

/* A test run that ended on a device under probe, kept back until the
 * verdict: published as it was, or made collateral. */
typedef struct krun__held {
  krep_test *t;
  const krun_test *def;
  int devs[KRUN_MAX_DEVICES], ndevs;
  /* 1: a worker's run that faulted its device, to run again alone once
   * the device passes its probe (started, after: as krun__confirm's); if
   * the device fails, its result stands: run elsewhere, it could take
   * another device out of the run. */
  int confirm, started;
  char *after;
} krun__held;

typedef struct krun__run {
  const krun_opts *o;
  const krun_settings *s;
  krun_tokens tok;
  int use_tokens;
  int tokens_lost;          /* the set was removed during the run */
  int lock_fd;              /* the run folder's lock (run.c), -1: none */
  int logs_failed, logs_errno;  /* test logs that could not be written */
  int cap[KRUN_MAX_DEVICES], used[KRUN_MAX_DEVICES];
  krun__item *queue;
  int qhead, qlen, qcap;
  double *est;              /* per registry test: its expected ms (order.c), or NULL */
  krun__job *jobs;
  int maxjobs;              /* running and warm children */
  int maxrun;               /* tests at once (--jobs) */
  int nrunning;
  /* The last finished tests' [spawn, end] (kh_now_ms), for naming the test
   * of an orphan with no KILN_JOB by when it started (contain.c). */
  double spans[64][2];
  int nspans;
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
  char *sanitizer;          /* compute-sanitizer's path (--sanitize on cuda) */
  krun__health health[KRUN_MAX_DEVICES];   /* by index into bi->dev */
  krun__held *held;
  int nheld;
    /* --isolation worker: runs queued to confirm a worker's non-pass alone. */
  struct krun__confirm *confirm;
  int nconfirm;
  /* The sources: their view of the run, their contexts by kind, and where
   * a record a source makes for a child goes (the loop's router). */
  krun__srcrun srcrun;
  void **srcctx;
  krun__emit *route;
} krun__run;

/* job.c: children and their test runs */
void krun__job_init(krun__job *j, int ntests);
void krun__job_clear(krun__job *j);
krep_test *krun__job_test(const krun__job *j);    /* where records go, or NULL */
krun__job *krun__free_job(krun__run *R);
int krun__job_exec(krun__run *R, krun__job *j, krun_spawn_req *req, int records);
int krun__spawn(krun__run *R, krun__job *j);
void krun__spawn_failed(krun__run *R, krun__job *j);
/* What j's source sees of it, brought up to date (source-impl.h). */
krun__child *krun__job_view(krun__run *R, krun__job *j);
/* After a test child ended: its source's records, then each test run's
 * outcome, log and times; its slots back. The caller settles the runs
 * (health, then krun__test_done) and then calls krun__job_end. */
void krun__job_finish(krun__run *R, krun__job *j);
/* Removes the child's private TEST_TMPDIR unless a test failed, and
 * clears the job. */
void krun__job_end(krun__run *R, krun__job *j);
/* A decided test run: its retry or flakiness, then the journal and the
 * console. */
void krun__test_done(krun__run *R, krep_test *t, const krun_test *def);
void krun__publish(krun__run *R, krep_test *t);
krep_test *krun__new_test(krun__run *R, const krun__item *it);
/* The journal's start record of a test run, before it runs. */
void krun__journal_start(krun__run *R, const krun__job *j, krep_test *t);
void krun__immediate(krun__run *R, const krun__item *it, int outcome, const char *msg);
double krun__timeout_ms(const krun__run *R, const krun_test *t);
/* Slots test t takes on device d (memslots.c). */
int krun__want(const krun__run *R, const krun_test *t, int d);
/* --slots auto: device d's budget in bytes, and the console's account. */
long long krun__budget(const krun__run *R, int d);
void krun__slots_note(krun__run *R);
/* The token set was removed during the run (job.c): said once, the run
 * fails with kiln's error, and no test takes slots from then on. */
int krun__tokens_lost(krun__run *R);
/* Queued test run `it` refused for that: an error, not the test's own. */
int krun__tokens_refuse(krun__run *R, const krun__item *it);
/* Why test t of job j (it took no slots) did not run, when the set is
 * gone: its outcome becomes kiln's error. */
void krun__tokens_blame(krun__run *R, krep_test *t);
/* Gives the job its devices (n of them; 0: none). */
void krun__job_devices(krun__job *j, const int *devs, int n);
void krun__queue_front(krun__run *R, krun__item it);
krun__item krun__queue_take(krun__run *R);

/* order.c: the queue longest first by an earlier report's durations
 * (o->durations; nothing without them, or under --isolation none). */
void krun__order(krun__run *R);
/* A registry test's expected ms (its earlier time, or the median of the
 * known ones); NAN when the run has no durations. */
double krun__order_ms(const krun__run *R, int test);

/* worker.c: --isolation worker */
/* How many of the queued runs from the head one worker takes (1: the
 * head runs alone, as a child of its own). It may move short runs of the
 * head's group up from the queue's tail to fill the sequence. */
int krun__worker_take(krun__run *R);
/* After a worker ended: the runs it never started go back to the front
 * of the queue, for a new worker, and leave the report. */
void krun__worker_resume(krun__run *R, krun__job *j);
/* 1 when the worker's i-th run did not pass and was queued to run alone
 * (it is published as a run replaced by a later one); else 0. */
int krun__worker_settle(krun__run *R, krun__job *j, int i);
/* Queues worker run t (of test def) to run again alone; it is published
 * as a run replaced by a later one. Takes after. */
void krun__worker_confirm(krun__run *R, krep_test *t, const krun_test *def, char *after,
                          int started);
/* A run that confirmed a worker's non-pass alone: passing, it becomes
 * `polluted`, naming the tests that ran before it in the worker. */
void krun__worker_verdict(krun__run *R, krep_test *t, const krun_test *def);
/* Worker j asked for more: the next runs from the head of the queue of
 * its source or one it shares (krun__source_joins), its share, added to
 * j and written to its stdin; none while stopping or once the head is a
 * run it cannot take. */
void krun__worker_more(krun__run *R, krun__job *j);

/* warm.c: the warm pool */
void krun__warm_fill(krun__run *R);
void krun__warm_retire(krun__run *R);
krun__job *krun__warm_pick(krun__run *R, const krun_test *t);
int krun__warm_assign(krun__run *R, krun__job *j, const krun__item *it);
int krun__warm_line(krun__run *R, krun__job *j, const char *line);
void krun__warm_gone(krun__run *R, krun__job *j);
/* Device d was taken out of the run: its warm children are let go (killed)
 * and no more start there. */
void krun__warm_drop(krun__run *R, int d);

/* health.c: device health probes and collateral runs */
int krun__health_usable(const krun__run *R, int d);   /* not taken out */
int krun__health_ready(const krun__run *R, int d);    /* and not under probe */
/* Why a test of n devices cannot run: too few left in service (malloc'd). */
char *krun__health_why(const krun__run *R, int n);
/* After j's tests were decided: puts j's devices under probe when a test
 * crashed, timed out or reported a device fault. */
void krun__health_after(krun__run *R, krun__job *j);
/* 1 when health took j's i-th test (held until a verdict, or collateral),
 * else 0: the caller finishes it. */
int krun__health_settle(krun__run *R, krun__job *j, int i);
/* Starts probes that had no free job slot yet. */
void krun__health_start(krun__run *R);
int krun__health_line(krun__run *R, krun__job *j, const char *line);
/* The probe ended: its verdict. Returns the device it took out of the run
 * (its tests killed, to run again elsewhere), or -1. */
int krun__health_done(krun__run *R, krun__job *j);

/* sanitize.c: --sanitize */
/* Finds the tool (0), or says why not and returns kiln's exit status. */
int krun__sanitize_setup(krun__run *R);
/* compute-sanitizer's words before the runner's (at most 6), its report
 * going to log; 0 without it. */
int krun__sanitize_argv(const krun__run *R, char **argv, const char *log);
/* The findings of the report (compute-sanitizer's file, or the test's log
 * for an AddressSanitizer build) into t's records and outcome. */
void krun__sanitize_findings(krun__run *R, krep_test *t, const char *cs_log,
                             const char *test_log);

/* loop.c: scheduling and events until the queue is done */
void krun__loop(krun__run *R);

/* registry.c, devices.c: what every source uses */
int krun__registry_source(krun_registry *reg, int kind, const char *path);
/* Appends a copy of t (its strings copied; argv taken as is). */
krun_test *krun__registry_add(krun_registry *reg, int source, const krun_test *t);
/* Runs `runner flag` and calls fn for each record of its answer after the
 * `runner` record, which must speak this kiln's protocol. */
int krun__runner_records(const char *runner, const char *flag,
                         void (*fn)(kp_record *, void *), void *arg, kh_err *err);

/* contain.c: what tests leave running */
int krun__contain_setup(krun__run *R, kh_err *err);
void krun__contain_teardown(krun__run *R);
/* Gives the child its KILN_JOB serial and (cgroup) its cgroup. */
void krun__contain_job(krun__run *R, krun__job *j);
void krun__contain_job_clear(krun__job *j);
/* After the child ended: what it left, described, killed. */
void krun__contain_left(krun__run *R, krun__job *j, krun__left *l);
/* While job j runs: its live processes besides its own (its cgroup's,
 * else what descends from it and kiln's orphans that carry its KILN_JOB),
 * at most max into pids, nothing killed; -1 under --contain none. */
int krun__contain_others(const krun__run *R, const krun__job *j, pid_t *pids, int max);
/* Notes a finished test's [spawn, end], for orphans found later. */
void krun__contain_span(krun__run *R, const krun__job *j);
/* At the end: whatever no test claimed, onto the run. */
void krun__contain_sweep(krun__run *R);

/* procs.c: walks over processes (contain.c, guard.c). A walk calls fn for
 * each pid; fn returns nonzero to stop it. */
typedef int krun__pid_fn(pid_t pid, void *arg);
/* The pids a file lists (cgroup.procs, /proc/PID/task/PID/children); -1
 * when it cannot be read. */
int krun__pids_in_file(const char *path, krun__pid_fn *fn, void *arg);
/* Every process in /proc. */
void krun__procs_each(krun__pid_fn *fn, void *arg);
/* Every process in cgroup cg and the cgroups under it; remove: each
 * cgroup under cg is removed after its walk. */
void krun__cgroup_each(const char *cg, int remove, krun__pid_fn *fn, void *arg);
/* Each VAR=VALUE of the process's environment; -1 when it cannot be read. */
int krun__environ_each(pid_t pid, int (*fn)(const char *var, void *arg), void *arg);
/* 1 when pid is ending by itself: gone, a zombie, or every thread of it
 * in its exit (a process whose mm is gone reads as `?`); 0 while it runs. */
int krun__proc_ending(pid_t pid);
/* Waits until each of the n pids is ending, at most ms in all; returns
 * how many still run. A process that ends within this grace of being
 * found was exiting by itself, and is no leak. */
#define KRUN_EXIT_GRACE_MS 500
int krun__procs_settle(const pid_t *pids, int n, double ms);

/* guard.c: the guard that ends a run's processes when kiln dies */
void krun__guard_start(krun__run *R);
void krun__guard_stop(krun__run *R);

#endif
