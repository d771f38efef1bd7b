/* Reports (prefix krep_): the one in-memory model of a run and its test
 * runs, the one reader and the one YAML writer, the journal, and the tools
 * that read a report: show, JUnit, HTML, diff, merge. `kiln run` fills the
 * model as children report, writes the journal per test and report.yaml
 * (and JUnit) from the model at the end; every tool reads report.yaml back
 * into the same model. The format is in reports/README.md.
 *
 * Strings of a model are owned by it (interned: a no-op test costs a few
 * hundred bytes, so a run of thousands stays small). A child's records are
 * kept as sent (tag and key=value text): the report writes every key a
 * child sent, known or not, and harness/common/records.h says which keys
 * hold numbers.
 */
#ifndef KILN_PARENT_REPORT_H
#define KILN_PARENT_REPORT_H

#include <stdio.h>

#include "base.h"
#include "records.h"

/* The report format this kiln writes, and the oldest it reads:
 *   2: outcome lost, summary.lost, processes_left, leaks_total, and the
 *      run's nothing_tested, containment and allotment;
 *   3: outcome collateral, device health probes, slots counted in
 *      hundredths of a device under --slots auto, numeric lists in checks
 *      and tests of several devices.
 * Formats 1 and 2 still read. */
#define KREP_FORMAT 3
#define KREP_FORMAT_OLDEST 1
/* The largest report kiln reads (a night of 100000 tests is about 200 MB). */
#define KREP_MAX_REPORT ((size_t)512 << 20)

/* ---- Outcomes ------------------------------------------------------------ */

/* X(enum, name, fails the run, console colour, worth a retry). A new
 * outcome is a row here; every writer and reader goes by the table.
 * lost: the run started or was planned, but what ran it ended first (kiln
 * was stopped or killed, or the Slurm task running its shard died), so its
 * result never came back; krep_test.lost says what ended it and where.
 * polluted: the run did not pass in a worker (--isolation worker) and
 * passed alone, so a test before it in that worker broke it; its message
 * names them. */
#define KREP_OUTCOME_MAP(X)                  \
  X(PASS, "pass", 0, "32", 0)                \
  X(FAIL, "fail", 1, "31", 1)                \
  X(CRASH, "crash", 1, "31;1", 1)            \
  X(TIMEOUT, "timeout", 1, "35", 1)          \
  X(LEAK, "leak", 1, "33", 1)                \
  X(ERROR, "error", 1, "31", 0)              \
  X(SKIP, "skip", 0, "36", 0)                \
  X(FLAKY, "flaky", 0, "33;1", 0)            \
  X(LOST, "lost", 1, "35;1", 0)            \
  X(COLLATERAL, "collateral", 1, "35;1", 0) \
  X(POLLUTED, "polluted", 0, "33;1", 0)

typedef enum {
#define KREP__ENUM(e, n, f, c, r) KREP_##e,
  KREP_OUTCOME_MAP(KREP__ENUM)
#undef KREP__ENUM
  KREP_NOUTCOMES
} krep_outcome;

const char *krep_outcome_name(int outcome);
const char *krep_outcome_color(int outcome);
int krep_outcome_failed(int outcome);      /* flaky and skip do not fail */
int krep_outcome_retryable(int outcome);
int krep_outcome_parse(const char *name);  /* -1 for an unknown name */

/* How a test run ran (ran.c): in a process of its own, in a worker's
 * sequence (--isolation worker), or in --isolation none's one shared
 * process; unknown for a run that never ran and in older reports. */
enum { KREP_RAN_UNKNOWN = 0, KREP_RAN_ALONE, KREP_RAN_WORKER, KREP_RAN_SHARED };
const char *krep_ran_name(int ran);        /* NULL for unknown */
int krep_ran_parse(const char *name);      /* KREP_RAN_UNKNOWN for another */

/* ---- The model ------------------------------------------------------------ */

/* A child's record as it sent it. */
typedef struct krep_rec {
  const char *tag;
  int n;
  kp_field f[];
} krep_rec;

/* A value of a key this kiln does not know, read from a report and
 * written back as it was (merge keeps every key of a test record). */
typedef struct krep_any {
  enum { KREP_SCALAR, KREP_SEQ, KREP_MAP } kind;
  const char *text;         /* scalar; NULL: null */
  int quoted;               /* the scalar was quoted (a string) */
  int flow;
  const char **keys;        /* map */
  struct krep_any **items;
  int n;
} krep_any;

typedef struct krep_extra {
  const char *key;
  krep_any *value;
} krep_extra;

/* A process a test (or the run) left running, found when it ended and
 * killed (run/contain.c). */
typedef struct krep_proc {
  long long pid;
  const char *command;      /* its command line, cut to 200 bytes */
  const char *how;          /* "the test's process group", "own process
                               group", "new session" */
  int killed;
  const char *error;        /* why it could not be killed, or NULL */
} krep_proc;

/* What ended a lost run before its result came back, and where (NULL:
 * unknown). by: "kiln" (kiln was stopped or killed during the run) or
 * "slurm" (the Slurm task that ran its shard ended first); state: the
 * signal that stopped kiln, or the task's Slurm state (CANCELLED, TIMEOUT,
 * NODE_FAIL, OUT_OF_MEMORY, ...); job: the Slurm job and array task
 * ("1234_5"); node: the host it ran on; reason: why Slurm held the task
 * when it was last seen pending (squeue's reason, e.g. "ReqNodeNotAvail"),
 * NULL when it was never seen pending or had no reason. */
typedef struct krep_loss {
  const char *by, *state, *job, *node, *reason;
} krep_loss;

/* One test run. Doubles are NAN and pid KP_NONE when unknown. */
typedef struct krep_test {
  const char *id, *suite, *tags;   /* tags comma-separated */
  int seq;                  /* scheduling order: the report's order */
  int outcome;              /* krep_outcome */
  int final;                /* 0: a later attempt (--retries) replaced it */
  int repeat, attempt;      /* from 1 */
  int device;               /* physical device, -1 for none */
  const char *devices;      /* a test of several devices: all of them, as
                               "0,1" (physical; device is the first);
                               NULL for one */
  int slots;
  int warm;                 /* ran in a warm child */
  int ran;                  /* KREP_RAN_* */
  int worker;               /* ran in a worker: its number (logs/worker-N.log); 0 */
  int position;             /* in a worker or the shared process: its place
                               in the order the process ran its tests, from
                               1; 0 */
  long long pid;
  int has_seed;
  unsigned long long seed;
  double started_s, ended_s;       /* wall clock */
  double wall_ms, startup_ms, ready_wait_ms;
  const char *message, *file;      /* NULL: none */
  int line;
  const char *signal;              /* "SIGSEGV" when a signal ended it */
  int exit_code;                   /* -1 when it did not exit */
  const char *protocol_error;
  long long records_dropped;       /* past the per-test limit */
  const char *log_path;            /* relative to the run folder */
  const char *log_tail;
  long long log_bytes, log_dropped;
  krep_loss lost;                  /* outcome lost: why (by NULL: none) */
  int merged_from;                 /* index into the report's sources; -1 */
  const krep_rec **recs;           /* phases, device, memory, kernels, ... */
  int nrecs, recs_cap;
  size_t recs_bytes;               /* what they hold, against the limit */
  krep_extra *extra;
  int nextra;
  krep_proc *procs;                /* processes it left running */
  int nprocs;
} krep_test;

/* A device the run had (the runner's index, the token's physical index). */
typedef struct krep_device {
  int index, physical;
  const char *visible, *name, *arch;
  int warp_size;
  long long total_bytes, free_bytes;
  int slots;                /* the capacity the run used; 0 unknown */
  long long budget_bytes;   /* --slots auto: what its slots share; -1 */
} krep_device;

typedef struct krep_shard {
  int index, count;         /* count 0: not sharded */
  int selected, total;
  const char *method, *source;
} krep_shard;

/* A device health probe (docs/devices.md, "Device health"): after a test
 * on the device crashed, timed out or met a device fault, kiln checked the
 * device before giving it another test. A device whose probe failed was
 * taken out of the run. */
typedef struct krep_probe {
  int device;               /* physical */
  const char *cause;        /* the test id that led to it */
  int passed;
  const char *message;      /* why it failed; "" when it passed */
  double ms;
} krep_probe;

/* An input of a merged report. */
typedef struct krep_source {
  const char *report, *git, *host, *start, *end;
  krep_shard shard;
  int round;                /* of a resumed run: 1 the first, 2 its resume... */
} krep_source;

typedef struct krep_pool krep_pool;

typedef struct krep_report {
  const char *path;         /* the file it was read from, or NULL */
  int format;               /* its format_version (KREP_FORMAT when made here) */
  const char *kiln_version, *git, *command;
  const char *host, *backend, *config, *out_dir, *token_key;
  const char *slots_from;   /* --slots auto: the report peaks came from */
  const char *durations_from;   /* the report the queue's order came from */
  double start_s, end_s;
  double duration_s;        /* NAN: end - start */
  int interrupted;
  int finished;             /* the journal had its finish record */
  int rebuilt;              /* made by `kiln report rebuild` */
  int parent_gpu_clean;     /* 1, 0, -1 unknown */
  long long peak_rss_kb;    /* kiln's own peak RSS, -1 unknown */
  krep_shard shard;
  krep_device *devices;
  int ndevices;
  const char **set_keys, **set_values;   /* effective settings, as text */
  int nset;
  const char **selection;
  int nselection;
  int not_run;              /* selected runs never started */
  int planned;              /* runs the run set out to make (tests x
                               repeats), -1 unknown */
  long long kiln_pid;       /* -1 unknown */
  const char *nothing_tested;   /* why the run tested nothing, or NULL */
  const char *containment;  /* how left processes were found: cgroup,
                               subreaper, none; NULL unknown */
  const char *allot_source; /* the scheduler that gave the devices (ctest),
                               or NULL */
  krep_proc *procs;         /* processes no test claimed, swept at the end */
  int nprocs;
  krep_source *sources;     /* merged_from */
  int nsources;
  krep_probe *probes;       /* in the order they ended */
  int nprobes;
  krep_test **tests;
  int ntests, tests_cap;
  krep_pool *pool;
} krep_report;

void krep_init(krep_report *rep);
void krep_free(krep_report *rep);
/* A copy of s owned by the report (NULL stays NULL). */
const char *krep_str(krep_report *rep, const char *s);
void krep_add_device(krep_report *rep, const krep_device *d);
void krep_add_setting(krep_report *rep, const char *key, const char *value);
void krep_add_selector(krep_report *rep, const char *sel);
void krep_add_probe(krep_report *rep, const krep_probe *p);
/* The failed probe that took a physical device out of the run, or NULL. */
const krep_probe *krep_device_removed(const krep_report *rep, int physical);

/* Adds a process left running to a test, or (t NULL) to the run. */
void krep_add_proc(krep_report *rep, krep_test *t, const krep_proc *p);

/* Appends a test run in scheduling order. */
krep_test *krep_test_new(krep_report *rep, const char *id, const char *suite,
                         const char *tags);
/* Keeps a child's record when the report lists its kind (phase, device,
 * memory, kernel, check, leak, note, metric, truncated): 1 kept, 0 not such
 * a record, -1 past the per-test limit (counted in records_dropped). */
int krep_test_keep(krep_report *rep, krep_test *t, const char *tag,
                   const kp_field *f, int n);
/* Takes t out of the report: a run that was never started after all (a
 * worker's, started again in another). */
void krep_test_drop(krep_report *rep, krep_test *t);
/* The test's records with this tag, one after another: *i starts at 0. */
const krep_rec *krep_test_next(const krep_test *t, const char *tag, int *i);
/* A kept record as its struct (records.h); 0, or -1 when malformed. */
int krep_rec_decode(const krep_rec *r, const kp_rdesc *d, void *out);
/* 1 when a clocks record of the test says the device slowed down (power,
 * thermal or hardware slowdown) at its start or end: its timings and
 * metrics are marked, and `report diff` discounts them. */
int krep_test_throttled(const krep_test *t);
/* The test's leaked bytes and (*count) allocations: its leak_total record
 * when it sent one (exact however many it listed), else the sum of its
 * leak records (saturating). */
long long krep_test_leaked(const krep_test *t, long long *count);

/* A test run's note (a `note` record) of that key, or NULL. */
const char *krep_test_note(const krep_test *t, const char *key);
/* The run in a worker that run t (alone) confirms: the replaced attempt
 * before it, of the same test and repeat, that ran in a worker; or NULL. */
const krep_test *krep_test_confirms(const krep_report *rep, const krep_test *t);
/* How t ran, in words every output uses: "in worker 7 at 2", "in the
 * shared process at 5", "alone", "alone, after fail in worker 7 at 2" (a
 * confirmation); "" when unknown. */
void krep_ran_text(const krep_report *rep, const krep_test *t, char *out, size_t n);

/* "workers: 12 runs in 3 workers; 2 run again alone: 1 confirmed, 1
 * polluted" (a run's merged inputs each count their own workers); ""
 * when no run was in a worker. */
void krep_ran_summary(const krep_report *rep, char *out, size_t n);

/* Outcomes of the final runs: counts[KREP_NOUTCOMES], and their total. */
int krep_count(const krep_report *rep, int *counts);
/* A time in ms as the report keeps it (6 significant digits): a run's
 * model then holds what its report.yaml reads back as. */
double krep_round_ms(double ms);
/* The run's duration in seconds (duration_s, else end - start). */
double krep_duration(const krep_report *rep);
/* The n slowest final runs by wall time, slowest first, each with what
 * its time went to: the body's reference share (times.reference_ms), its
 * kernels' event time, the rest of the body, and the time outside the
 * body (process start, context, waits), as test runners list their
 * slowest tests. */
void krep_durations(const krep_report *rep, int n, FILE *out);

/* ---- report.yaml ----------------------------------------------------------- */

/* Writes the report atomically (a temporary file beside it, fsync, rename),
 * streaming: no copy of the whole report in memory. "-": stdout. */
int krep_write(const krep_report *rep, const char *path, kh_err *err);
/* Reads FILE, or DIR/report.yaml. Errors name the file, line and column. */
int krep_read(const char *path, krep_report *rep, kh_err *err);

/* ---- The journal ------------------------------------------------------------- */

typedef struct krep_journal krep_journal;

/* Creates RUNDIR/journal afresh (one run's journal: the caller holds the
 * run folder's lock) with the run's header records, synced; NULL with err
 * when they cannot be written (a full disk). */
krep_journal *krep_journal_open(const krep_report *rep, const char *path,
                                kh_err *err);
/* The run's plan: the test runs it sets out to make. */
void krep_journal_plan(krep_journal *j, int runs);
/* A test run starts (before its test runs): what `report rebuild` lists as
 * lost when no `run` record follows. */
void krep_journal_start(krep_journal *j, const krep_test *t);
/* Appends a finished test run: one write(), no sync (a write survives a
 * killed kiln; docs/reliability.md). */
void krep_journal_test(krep_journal *j, const krep_test *t);
/* Appends a device health probe's verdict. */
void krep_journal_probe(krep_journal *j, const krep_probe *p);
/* The finish record, synced; closes the journal. 0, or the errno of the
 * first write that failed during the run (the journal is incomplete). */
int krep_journal_close(krep_journal *j, const krep_report *rep);
/* Appends `left` records to the journal at path after its kiln died (the
 * guard's kills), so `kiln report rebuild` lists them under the run. */
void krep_journal_append_left(const char *path, const krep_proc *p, int n);
/* Rebuilds a report from a journal; a journal without its finish record
 * (kiln was killed) gives interrupted: true, each test run started and not
 * finished is `lost`, and not_run counts the rest of the plan. Lines are
 * bounded (an over-long one is an error naming it). */
int krep_journal_read(const char *path, krep_report *rep, kh_err *err);
/* Counts the test runs a journal finished from *offset on, as another kiln
 * appends them (kiln slurm's progress): final runs into *done, those that
 * failed also into *failed, except lost ones (a test whose result is
 * unknown has not failed), which go into *lost when it is not NULL.
 * *offset moves past the last whole line. -1 when the file cannot be
 * opened (not there yet). */
int krep_journal_count(const char *path, long long *offset, int *done, int *failed,
                       int *lost);

/* ---- The YAML writer ------------------------------------------------------------ */

/* Every YAML kiln writes goes through here: strings that YAML 1.1 or 1.2
 * would read as anything else (numbers, booleans, null, timestamps,
 * sexagesimals such as 1:30) are quoted; numbers are written so that
 * both read them back as numbers; NaN is .nan. */
typedef struct krep_yaml krep_yaml;

krep_yaml *krep_yaml_open(const char *path, kh_err *err);  /* "-": stdout */
/* Ends the document, flushes, and for a file fsyncs and renames it into
 * place. 0, or -1 with err (the temporary file is removed). */
int krep_yaml_close(krep_yaml *y, kh_err *err);
void krep_yaml_map(krep_yaml *y, int flow);
void krep_yaml_seq(krep_yaml *y, int flow);
void krep_yaml_end(krep_yaml *y);            /* of the innermost map/seq */
void krep_yaml_key(krep_yaml *y, const char *key);
void krep_yaml_str(krep_yaml *y, const char *s);   /* NULL: null */
void krep_yaml_int(krep_yaml *y, long long v);
void krep_yaml_num(krep_yaml *y, double v);        /* all 17 digits */
void krep_yaml_ms(krep_yaml *y, double v);         /* 6 digits: times */
void krep_yaml_bool(krep_yaml *y, int v);
void krep_yaml_null(krep_yaml *y);
/* A protocol value: written as type (a number that is not one becomes a
 * string); type -1: a number or boolean when it reads exactly as one. */
void krep_yaml_value(krep_yaml *y, const char *text, int type);

/* ---- Tools ------------------------------------------------------------------------ */

/* `kiln report show`: counts, then every final test that did not pass with
 * its message, failing checks and log. */
void krep_show(const krep_report *rep, FILE *out);

/* JUnit XML (Jenkins/Surefire variant), atomically; "-": stdout. */
int krep_junit_write(const krep_report *rep, const char *path, kh_err *err);

/* One self-contained HTML page; history: earlier reports for the trends. */
int krep_html_write(const krep_report *rep, const krep_report *history,
                    int nhistory, const char *path, kh_err *err);

typedef struct krep_diff_opts {
  double time_rel;          /* slower by more than this fraction */
  double test_abs_ms;       /* ...and by more than this (test body) */
  double kernel_abs_ms;     /* ...and by more than this (kernel median) */
  double drift_factor;      /* max abs error grew more than this factor */
  double metric_rel;        /* a GB/s or TFLOP/s metric fell by more */
  double confidence;        /* a speed change must be outside the noise
                               with this confidence (0.999) */
  const krep_report *history;   /* earlier reports: run-to-run noise */
  int nhistory;
  const char *yaml_path;    /* or NULL */
} krep_diff_opts;

void krep_diff_defaults(krep_diff_opts *o);
/* Prints what changed from base to neu; *regressions gets how many of the
 * findings are regressions. */
int krep_diff(const krep_report *base, const krep_report *neu,
              const krep_diff_opts *o, FILE *out, int *regressions,
              kh_err *err);

typedef struct krep_merge_opts {
  int force;                /* merge reports of different revisions */
  /* A resumed run's rounds (NULL: one round): input i is of round[i], 1
   * the first. A test that a later round ran again keeps only that round's
   * runs; each round's shards are checked on their own. */
  const int *round;
} krep_merge_opts;

/* Checks that the reports belong together (one revision unless force; no
 * test run in two inputs of a round; for shards, each of 1..N once and no
 * test lost) and merges them into out (sorted by round and shard; tests
 * keep every key). Warnings go to log. */
int krep_merge(krep_report *reps, int n, const krep_merge_opts *o,
               krep_report *out, FILE *log, kh_err *err);

#endif
