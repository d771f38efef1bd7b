/* Running kiln across a Slurm cluster (prefix ksl_): one array job with a
 * shard of a plan per task, each task asking for its GPUs through GRES;
 * one dependent job that merges the shards, marks what a dead task owed as
 * lost and writes JUnit, HTML, the diff against the last good run and the
 * run's status; following the jobs with a progress line; resuming only
 * what was lost. Talks to Slurm through its commands (sbatch, squeue,
 * sacct, scontrol), each started with krun_spawn. docs/scale.md.
 */
#ifndef KILN_PARENT_SLURM_H
#define KILN_PARENT_SLURM_H

#include "base.h"
#include "run.h"

/* How the jobs are asked for; NULL and 0 leave the cluster's defaults. */
typedef struct ksl_sbatch {
  char *partition, *account;
  char *time;               /* each task's time limit */
  char *merge_time;         /* the merge job's */
  int gpus;                 /* GPUs per task, as GRES gpu:N; 0: none */
  char **extra;             /* more sbatch arguments (they win over the
                               script's #SBATCH lines) */
  int nextra;
} ksl_sbatch;

/* A run to submit (`kiln slurm`). */
typedef struct ksl_job {
  const char *run_dir;      /* the run folder; made unless dry_run */
  const krun_plan *plan;    /* the first round's shards */
  char *const *run_args;    /* each task's `kiln run` options */
  int nrun_args;
  char *const *selectors;   /* for the shards' reports */
  int nselectors;
  const char *runner_dir;   /* where the tasks find their runners */
  const char *base;         /* the diff's base, or NULL: the last good run */
  const char *report_copy;  /* the merge also writes the report here */
  const char *junit_copy;   /* ...and JUnit here (NULL: none) */
  ksl_sbatch sb;
} ksl_job;

/* How kiln slurm goes on after submitting. */
typedef struct ksl_wait {
  int dry_run;              /* print the job scripts, submit nothing */
  int no_wait;              /* submit and return */
  double poll_s;            /* between looks at the queue */
} ksl_wait;

/* Each returns kiln's exit status: the merged run's when it followed it
 * to the end (0 all passed, 1 a test failed or was lost, or the diff found
 * a regression), 0 after --no-wait or --dry-run, 2 usage, 3 the cluster or
 * a file failed, 130 interrupted (the jobs go on). */
int ksl_submit(const ksl_job *job, const ksl_wait *w);
/* Submits a new round for the lost tests of RUN; tasks 0: as before; sb's
 * set fields replace the run's. */
int ksl_resume(const char *run, int tasks, const ksl_sbatch *sb, const ksl_wait *w);
int ksl_follow(const char *run, double poll_s);
/* The merge job's work (also by hand: `kiln slurm --merge RUN`). */
int ksl_merge(const char *run);

/* ---- Run folders under a root (runs.c) ------------------------------------------- */

/* A new run folder ROOT/<UTC time> (not made), unique among those there. */
char *ksl_run_dir_new(const char *root);
/* The report.yaml of the newest run under root other than `except` (good:
 * of the newest whose status is good, or that holds a file `accepted`);
 * NULL when there is none. Names are times, so the newest sorts last. */
char *ksl_run_newest(const char *root, const char *except, int good);

/* The run seed the Slurm run whose report.yaml this is gave its tasks;
 * -1 when it is no such run or gave none. */
int ksl_run_seed(const char *report, unsigned long long *seed);

#endif
