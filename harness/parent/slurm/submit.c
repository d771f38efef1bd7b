/* Submitting a round: its plan and job scripts into the run folder, the
 * array job, then the merge job that depends on it (a merge that cannot be
 * submitted cancels the array, so nothing runs unmerged). `kiln slurm`
 * submits round 1 from its selection; `kiln slurm --resume RUN` submits
 * the next round from the tests the merged report lists as lost.
 */
#include "slurm-impl.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- The plan, said in a line per shard ------------------------------------------------ */

static void plan_summary(const krun_plan *p, FILE *f) {
  fprintf(f, "kiln slurm: %d shard%s of %d tests, %d run%s each (", p->count,
          p->count == 1 ? "" : "s", p->ntests, p->repeat, p->repeat == 1 ? "" : "s");
  if (p->durations) fprintf(f, "balanced by the times in %s):\n", p->durations);
  else fprintf(f, "hash partition: no earlier report):\n");
  for (int k = 1; k <= p->count; k++) {
    int n = 0;
    double ms = 0;
    for (int i = 0; i < p->ntests; i++)
      if (p->tests[i].shard == k) n++, ms += isnan(p->tests[i].ms) ? 0 : p->tests[i].ms;
    fprintf(f, "  shard %d: %d test%s", k, n, n == 1 ? "" : "s");
    if (ms > 0) fprintf(f, ", %.1f s by the old times", ms * p->repeat / 1e3);
    fprintf(f, "\n");
  }
}

static void print_argv(char **v, FILE *f) {
  kh_buf b = {0};
  for (int i = 0; v[i]; i++) {
    if (i) kh_buf_add(&b, " ", 1);
    ksl__quote(&b, v[i]);
  }
  fprintf(f, "%s\n", b.data ? b.data : "");
  kh_buf_free(&b);
}

static void free_argv(char **v) {
  for (int i = 0; v[i]; i++) free(v[i]);
  free(v);
}

/* ---- Files and jobs of a round ---------------------------------------------------------- */

static int write_script(const char *path, const kh_buf *b, kh_err *err) {
  if (kh_write_atomic(path, b->data, b->len) != 0 || chmod(path, 0755) != 0)
    return kh_errf(err, "%s: %s", path, strerror(errno));
  return 0;
}

static int dry_run(const ksl__state *st, const ksl__round *r, const krun_plan *plan) {
  kh_buf a = {0}, m = {0};
  ksl__array_script(st, r, &a);
  ksl__merge_script(st, r, &m);
  char *ap = ksl__path(st->run, "slurm/array-%d.sh", r->n);
  char *mp = ksl__path(st->run, "slurm/merge-%d.sh", r->n);
  char **av = ksl__sbatch_argv(st, ap, 0), **mv = ksl__sbatch_argv(st, mp, -1);
  printf("kiln slurm: run %s, round %d (dry run: nothing written, nothing submitted)\n",
         st->run, r->n);
  plan_summary(plan, stdout);
  printf("# ---- %s, submitted with:\n# ", ap);
  print_argv(av, stdout);
  fputs(a.data, stdout);
  printf("# ---- %s, submitted with:\n# ", mp);
  print_argv(mv, stdout);
  fputs(m.data, stdout);
  free_argv(av), free_argv(mv);
  free(ap), free(mp);
  kh_buf_free(&a), kh_buf_free(&m);
  return KH_EXIT_OK;
}

/* Writes the round's files and submits it; the state is written after each
 * step, so a kiln that dies half-way leaves a run folder that says what
 * it submitted. */
static int submit_round(ksl__state *st, const krun_plan *plan, const ksl_wait *w) {
  ksl__round r = {st->nrounds + 1, plan->count, 0, 0, kh_wall_s()};
  if (w->dry_run) return dry_run(st, &r, plan);
  kh_err err;
  char *slurm_dir = ksl__path(st->run, "slurm"), *shards = ksl__path(st->run, "shards");
  char *pp = ksl__path(st->run, "slurm/plan-%d", r.n);
  char *ap = ksl__path(st->run, "slurm/array-%d.sh", r.n);
  char *mp = ksl__path(st->run, "slurm/merge-%d.sh", r.n);
  kh_buf a = {0}, m = {0};
  ksl__array_script(st, &r, &a);
  ksl__merge_script(st, &r, &m);
  st->rounds = kh_xrealloc(st->rounds, (size_t)(st->nrounds + 1) * sizeof *st->rounds);
  ksl__round *rr = &st->rounds[st->nrounds++];
  *rr = r;
  int rc = 0;
  if (kh_mkdir_p(slurm_dir, 0755) != 0 || kh_mkdir_p(shards, 0755) != 0)
    rc = kh_errf(&err, "cannot make %s: %s", slurm_dir, strerror(errno));
  if (rc == 0) rc = krun_plan_write(plan, pp, &err);
  if (rc == 0) rc = write_script(ap, &a, &err);
  if (rc == 0) rc = write_script(mp, &m, &err);
  if (rc == 0) rc = ksl__state_write(st, &err);
  char **av = ksl__sbatch_argv(st, ap, 0);
  if (rc == 0 && (rc = ksl__submit(av, &rr->array, &err)) == 0) {
    char **mv = ksl__sbatch_argv(st, mp, rr->array);
    if ((rc = ksl__submit(mv, &rr->merge, &err)) != 0) {
      ksl__cancel(rr->array);
      char why[sizeof err.msg];
      snprintf(why, sizeof why, "%s", err.msg);
      kh_errf(&err, "the merge job: %s (array job %lld cancelled)", why, rr->array);
    }
    free_argv(mv);
  }
  free_argv(av);
  kh_err ignored;
  if (rr->array) (void)ksl__state_write(st, &ignored);
  if (rc != 0)
    fprintf(stderr, "kiln slurm: %s\n", err.msg);
  else
    printf("kiln slurm: run %s, round %d: array job %lld (%d task%s), merge job %lld\n",
           st->run, r.n, rr->array, r.tasks, r.tasks == 1 ? "" : "s", rr->merge);
  free(slurm_dir), free(shards), free(pp), free(ap), free(mp);
  kh_buf_free(&a), kh_buf_free(&m);
  if (rc != 0) return KH_EXIT_INFRA;
  if (w->no_wait) {
    printf("kiln slurm: not waiting; `kiln slurm --follow %s` follows it\n", st->run);
    return KH_EXIT_OK;
  }
  return ksl_follow(st->run, w->poll_s);
}

/* ---- kiln slurm ---------------------------------------------------------------------- */

int ksl_submit(const ksl_job *job, const ksl_wait *w) {
  char kiln[PATH_MAX], cwd[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", kiln, sizeof kiln - 1);
  if (n <= 0 || !getcwd(cwd, sizeof cwd)) {
    fprintf(stderr, "kiln slurm: cannot name this kiln or this folder: %s\n", strerror(errno));
    return KH_EXIT_INFRA;
  }
  kiln[n] = '\0';
  ksl__state st;
  ksl__state_init(&st, job, kiln, cwd);
  if (!w->dry_run) plan_summary(job->plan, stdout);
  int rc = submit_round(&st, job->plan, w);
  ksl__state_free(&st);
  return rc;
}

/* ---- kiln slurm --resume ------------------------------------------------------------- */

/* The lost tests of the merged report as a registry, one entry per id. */
static void lost_tests(const krep_report *rep, krun_registry *reg) {
  memset(reg, 0, sizeof *reg);
  reg->tests = kh_xcalloc((size_t)rep->ntests + 1, sizeof *reg->tests);
  for (int i = 0; i < rep->ntests; i++) {
    const krep_test *t = rep->tests[i];
    int seen = 0;
    if (!t->final || t->outcome != KREP_LOST) continue;
    for (int k = 0; k < reg->n && !seen; k++) seen = strcmp(reg->tests[k].id, t->id) == 0;
    if (seen) continue;
    krun_test *x = &reg->tests[reg->n++];
    x->id = kh_strdup(t->id), x->suite = kh_strdup(t->suite), x->tags = kh_strdup(t->tags);
    x->name = kh_strdup(""), x->file = kh_strdup("");
  }
}

static void override(char **dst, const char *src) {
  if (!src) return;
  free(*dst);
  *dst = kh_strdup(src);
}

int ksl_resume(const char *run_arg, int tasks, const ksl_sbatch *sb, const ksl_wait *w) {
  char real[PATH_MAX], status[32];
  const char *run = realpath(run_arg, real) ? real : run_arg;
  ksl__state st;
  kh_err err;
  if (ksl__state_read(run, &st, &err) != 0) {
    fprintf(stderr, "kiln slurm --resume: %s\n", err.msg);
    ksl__state_free(&st);
    return KH_EXIT_USAGE;
  }
  ksl__status(run, status, sizeof status);
  const ksl__round *last = &st.rounds[st.nrounds - 1];
  ksl__task mj;
  if (!*status && ksl__job(last->merge, &mj, &err) == 0 && mj.state[0] && !ksl__ended(mj.state)) {
    fprintf(stderr, "kiln slurm --resume: run %s is still going (merge job %lld is %s); "
                    "`kiln slurm --follow %s` waits for it\n", run, last->merge, mj.state, run);
    ksl__state_free(&st);
    return KH_EXIT_USAGE;
  }
  if (!*status) (void)ksl_merge(run);
  char *report = ksl__path(run, "report.yaml"), *prev = ksl__path(run, "slurm/plan-%d", last->n);
  krep_report rep;
  krun_plan old = {0}, plan = {0};
  krun_registry reg = {0};
  int rc = krep_read(report, &rep, &err) != 0 || krun_plan_read(prev, &old, &err) != 0;
  if (rc == 0) lost_tests(&rep, &reg);
  if (rc != 0) {
    fprintf(stderr, "kiln slurm --resume: %s\n", err.msg);
    rc = KH_EXIT_USAGE;
  } else if (reg.n == 0) {
    ksl__status(run, status, sizeof status);
    printf("kiln slurm: run %s lost no test (status %s): nothing to resume\n", run, status);
    rc = ksl__status_exit(status);
  } else {
    unsigned char *all = kh_xcalloc((size_t)reg.n + 1, 1);
    memset(all, 1, (size_t)reg.n);
    int count = tasks > 0 ? tasks : last->tasks;
    if (count > reg.n) count = reg.n;
    /* Balanced by the run's own times: the lost tests have none, so they
     * are dealt out evenly. */
    if (krun_plan_make(&reg, all, count, report, old.repeat, &plan, &err) != 0) {
      fprintf(stderr, "kiln slurm --resume: %s\n", err.msg);
      rc = KH_EXIT_INFRA;
    } else {
      override(&st.sb.partition, sb->partition), override(&st.sb.account, sb->account);
      override(&st.sb.time, sb->time), override(&st.sb.merge_time, sb->merge_time);
      if (sb->gpus > 0) st.sb.gpus = sb->gpus;
      printf("kiln slurm: resuming %d lost test%s of %s\n", reg.n, reg.n == 1 ? "" : "s", run);
      if (!w->dry_run) plan_summary(&plan, stdout);
      rc = submit_round(&st, &plan, w);
    }
    free(all);
  }
  krun_registry_free(&reg);
  krun_plan_free(&old), krun_plan_free(&plan);
  krep_free(&rep);
  free(report), free(prev);
  ksl__state_free(&st);
  return rc;
}
