/* Internals of the Slurm room (prefix ksl__): a run's state on disk, the job
 * scripts, the calls to Slurm's commands, the run folder's layout. Seen by
 * no other room.
 *
 * A run folder RUN:
 *   slurm/state            this file's records (state.c): how the tasks
 *                          run, the sbatch options, each round's jobs
 *   slurm/plan-R           round R's shard plan (run/plan.c)
 *   slurm/array-R.sh, merge-R.sh   the job scripts, with their output beside them
 *   shards/R-K/            shard K of round R: a `kiln run` folder, plus
 *                          `task` (the Slurm job, node and GPUs it ran on)
 *   report.yaml junit.xml report.html diff.txt diff.yaml base status
 *                          what the merge writes
 */
#ifndef KILN_PARENT_SLURM_IMPL_H
#define KILN_PARENT_SLURM_IMPL_H

#include "report.h"
#include "slurm.h"

/* ---- A run's state (state.c) ------------------------------------------------------- */

typedef struct ksl__round {
  int n;                    /* 1 the first, 2 its first resume, ... */
  int tasks;
  long long array, merge;   /* Slurm job ids; 0: not submitted */
  double submitted;         /* wall clock, s */
} ksl__round;

typedef struct ksl__state {
  char *run;                /* the run folder, absolute */
  char *kiln;               /* the kiln the jobs run, absolute */
  char *cwd;                /* where the jobs start */
  char *runner_dir;
  char *base, *report_copy, *junit_copy;   /* NULL: none */
  ksl_sbatch sb;
  char **args;              /* the tasks' `kiln run` options */
  int nargs;
  char **selectors;
  int nselectors;
  ksl__round *rounds;
  int nrounds;
} ksl__state;

/* Fills st from a job about to be submitted (strings copied). */
void ksl__state_init(ksl__state *st, const ksl_job *job, const char *kiln, const char *cwd);
int ksl__state_write(const ksl__state *st, kh_err *err);
/* Reads RUN/slurm/state; errors name the file. */
int ksl__state_read(const char *run, ksl__state *st, kh_err *err);
void ksl__state_free(ksl__state *st);
/* A path inside the run folder: ksl__path(st->run, "slurm/plan-%d", 1). */
char *ksl__path(const char *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- Job scripts (script.c) --------------------------------------------------------- */

/* Round r's array script (one task per shard of its plan) and merge script
 * into b. */
void ksl__array_script(const ksl__state *st, const ksl__round *r, kh_buf *b);
void ksl__merge_script(const ksl__state *st, const ksl__round *r, kh_buf *b);
/* The sbatch command line for a script (extra arguments last; dependency:
 * the array job's id, 0 for none, -1 to print a placeholder). */
char **ksl__sbatch_argv(const ksl__state *st, const char *script, long long dependency);
/* Appends s as one shell word. */
void ksl__quote(kh_buf *b, const char *s);

/* ---- Slurm's commands (cluster.c) ---------------------------------------------------- */

typedef struct ksl__task {
  char state[32];           /* PENDING, RUNNING, COMPLETED, CANCELLED, ...; "" unknown */
  char node[128];           /* "" unknown */
  char reason[128];         /* squeue's reason ("Resources", "ReqNodeNotAvail, ...") */
  int seen;                 /* from the follower's record, not from Slurm */
} ksl__task;

/* Submits a script; *job gets its id. Errors carry sbatch's own words. */
int ksl__submit(char **argv, long long *job, kh_err *err);
/* The tasks 0..n-1 of an array job as Slurm knows them now: squeue, which
 * keeps ended jobs for MinJobAge. With final, ended tasks also through
 * sacct (when the cluster keeps accounting) and `scontrol show job`. A
 * task Slurm no longer knows keeps state "". */
int ksl__tasks(long long array, int n, ksl__task *out, int final, kh_err *err);
/* One job's state (the merge job), "" when Slurm no longer knows it. */
int ksl__job(long long job, ksl__task *out, kh_err *err);
/* 1 for a state after which the job does nothing more. */
int ksl__ended(const char *state);
/* 1 for a state in which Slurm holds the job back (PENDING, REQUEUED...):
 * only then is its reason why it waits. */
int ksl__waiting(const char *state);
/* scancel; best effort. */
void ksl__cancel(long long job);
/* The follower's record of round r's tasks as it last saw them,
 * RUN/slurm/seen-R: kept because a cluster without accounting forgets a
 * pending task that is cancelled (a drained node's, say), and the merge
 * then still knows its state and squeue's reason. ksl__seen_read fills
 * only the tasks Slurm no longer knows (marking them seen). */
void ksl__seen_write(const char *run, int round, const ksl__task *t, int n);
void ksl__seen_read(const char *run, int round, ksl__task *t, int n);

/* ---- Runs under a root (runs.c) -------------------------------------------------------- */

/* The report.yaml of the last max runs under root other than except,
 * oldest first (the HTML page's trends). */
char **ksl__history(const char *root, const char *except, int max, int *n);

/* ---- The merge (collect.c) ------------------------------------------------------------ */

/* The run's status as the merge wrote it ("" when it has not). */
void ksl__status(const char *run, char *out, size_t n);
/* The exit status a run's status stands for. */
int ksl__status_exit(const char *status);

#endif
