/* Following a run (`kiln slurm` after it submits, `kiln slurm --follow
 * RUN`): every poll, the last round's tasks from squeue and the tests they
 * finished from their journals (read from where the last poll stopped),
 * shown as one progress line; once the merge job has ended, the run's
 * status, with kiln's exit status for it. A merge job that ended without
 * writing the status (cancelled, failed, never able to start) is done
 * here instead, so the run is merged either way. Ctrl-C stops following;
 * the jobs go on.
 */
#include "slurm-impl.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Polls without the merge job in squeue and no status before kiln merges
 * itself: a shared file system may show the status a little late. */
#define GONE_POLLS 3

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig) { stop_sig = sig; }

static void nap(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);   /* a signal ends it early */
}

typedef struct progress {
  int pending, running, done;
  int tests, failed, lost, total;
  char merge[64];
  char reason[128];         /* why Slurm holds the first pending task, or "" */
} progress;

static void count_tasks(const ksl__task *t, int n, progress *p) {
  for (int i = 0; i < n; i++) {
    const char *s = t[i].state;
    if (!*s || ksl__ended(s)) {
      p->done++;
    } else if (strcmp(s, "PENDING") == 0 || strcmp(s, "REQUEUED") == 0) {
      if (!p->pending++ || !p->reason[0]) snprintf(p->reason, sizeof p->reason, "%s", t[i].reason);
    } else {
      p->running++;
    }
  }
}

static void show(const progress *p, long long array, int tty, double t0, char *last, size_t n) {
  char line[512], pending[160], lost[32] = "";
  snprintf(pending, sizeof pending, p->reason[0] ? "%d pending (%s)" : "%d pending", p->pending,
           p->reason);
  if (p->lost) snprintf(lost, sizeof lost, ", %d lost", p->lost);
  snprintf(line, sizeof line,
           "kiln slurm: job %lld: %s, %d running, %d done; tests %d/%d done, %d failed%s; "
           "merge %s",
           array, pending, p->running, p->done, p->tests, p->total, p->failed, lost,
           p->merge[0] ? p->merge : "ended");
  if (tty) {
    printf("\r\033[K%s (%.0f s)", line, (kh_now_ms() - t0) / 1e3);
  } else if (strcmp(line, last) != 0) {
    printf("%s\n", line);
    snprintf(last, n, "%s", line);
  }
  fflush(stdout);
}

/* The merged run in a few lines: counts, where lost tests were lost. */
static void summary(const char *run, const char *status) {
  char *path = ksl__path(run, "report.yaml");
  krep_report rep;
  kh_err err;
  if (krep_read(path, &rep, &err) == 0) {
    int counts[KREP_NOUTCOMES];
    printf("kiln slurm: %s: %d test runs:", path, krep_count(&rep, counts));
    for (int o = 0; o < KREP_NOUTCOMES; o++)
      if (counts[o]) printf(" %d %s", counts[o], krep_outcome_name(o));
    printf("\n");
    /* Lost runs, by the task that lost them (they come together). */
    const krep_test *first = NULL;
    int n = 0;
    for (int i = 0; i <= rep.ntests; i++) {
      const krep_test *t = i < rep.ntests ? rep.tests[i] : NULL;
      int lost = t && t->final && t->outcome == KREP_LOST && t->lost.job;
      if (first && (!lost || strcmp(t->lost.job, first->lost.job) != 0)) {
        printf("  %d lost with Slurm task %s (%s on %s%s%s)\n", n, first->lost.job,
               first->lost.state ? first->lost.state : "state unknown",
               first->lost.node ? first->lost.node : "no node",
               first->lost.reason ? "; held for " : "",
               first->lost.reason ? first->lost.reason : "");
        first = NULL, n = 0;
      }
      if (lost && !first) first = t;
      n += lost;
    }
    if (rep.nothing_tested) printf("kiln slurm: nothing tested: %s\n", rep.nothing_tested);
  } else {
    printf("kiln slurm: %s\n", err.msg);
  }
  krep_free(&rep);
  free(path);
  printf("kiln slurm: status %s; JUnit %s/junit.xml, HTML %s/report.html, diff %s/diff.txt\n",
         status, run, run, run);
  if (strcmp(status, "lost") == 0)
    printf("kiln slurm: `kiln slurm --resume %s` runs the lost tests again\n", run);
}

int ksl_follow(const char *run, double poll_s) {
  ksl__state st;
  kh_err err;
  if (ksl__state_read(run, &st, &err) != 0) {
    fprintf(stderr, "kiln slurm: %s\n", err.msg);
    ksl__state_free(&st);
    return KH_EXIT_USAGE;
  }
  const ksl__round *r = &st.rounds[st.nrounds - 1];
  char *pp = ksl__path(run, "slurm/plan-%d", r->n);
  krun_plan plan;
  int rc = krun_plan_read(pp, &plan, &err);
  free(pp);
  if (rc != 0) {
    fprintf(stderr, "kiln slurm: %s\n", err.msg);
    krun_plan_free(&plan), ksl__state_free(&st);
    return KH_EXIT_USAGE;
  }
  struct sigaction sa = {.sa_handler = on_signal}, old_int, old_term;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  ksl__task *tasks = kh_xcalloc((size_t)r->tasks, sizeof *tasks);
  long long *off = kh_xcalloc((size_t)r->tasks, sizeof *off);
  int *done = kh_xcalloc((size_t)r->tasks, sizeof *done);
  int *failed = kh_xcalloc((size_t)r->tasks, sizeof *failed);
  int tty = isatty(STDOUT_FILENO), gone = 0, warned = 0;
  char last[512] = "", status[32] = "";
  int *lost = kh_xcalloc((size_t)r->tasks, sizeof *lost);
  double t0 = kh_now_ms();
  while (!stop_sig) {
    progress p = {.total = plan.ntests * plan.repeat};
    ksl__task merge;
    int ok = ksl__tasks(r->array, r->tasks, tasks, 0, &err) == 0 &&
             ksl__job(r->merge, &merge, &err) == 0;
    if (!ok && !warned++) fprintf(stderr, "\nkiln slurm: %s (asking again)\n", err.msg);
    for (int k = 0; k < r->tasks; k++) {
      char *j = ksl__path(run, "shards/%d-%d/journal", r->n, k + 1);
      (void)krep_journal_count(j, &off[k], &done[k], &failed[k], &lost[k]);
      free(j);
      p.tests += done[k], p.failed += failed[k], p.lost += lost[k];
    }
    if (ok) {
      count_tasks(tasks, r->tasks, &p);
      ksl__seen_write(run, r->n, tasks, r->tasks);
      ksl__status(run, status, sizeof status);
      /* Once the merge wrote the run's status, that is what the merge job
       * did (its Slurm state only says whether it ran). */
      if (*status) snprintf(p.merge, sizeof p.merge, "done (status %s)", status);
      else snprintf(p.merge, sizeof p.merge, "%s", merge.state);
      show(&p, r->array, tty, t0, last, sizeof last);
      if (strcmp(merge.reason, "DependencyNeverSatisfied") == 0) {
        ksl__cancel(r->merge);
        break;
      }
      if (ksl__ended(merge.state) || (!merge.state[0] && (*status || ++gone >= GONE_POLLS)))
        break;
    }
    nap(poll_s);
  }
  if (tty) printf("\n");
  if (stop_sig) {
    printf("kiln slurm: stopped following; the jobs go on (array %lld, merge %lld): `kiln "
           "slurm --follow %s` follows them again, `scancel %lld %lld` cancels them\n",
           r->array, r->merge, run, r->array, r->merge);
    rc = KH_EXIT_INTERRUPTED;
  } else {
    ksl__status(run, status, sizeof status);
    if (!*status) {
      printf("kiln slurm: the merge job %lld ended without merging; merging here\n", r->merge);
      (void)ksl_merge(run);
      ksl__status(run, status, sizeof status);
    }
    summary(run, status);
    rc = ksl__status_exit(status);
  }
  sigaction(SIGINT, &old_int, NULL);
  sigaction(SIGTERM, &old_term, NULL);
  free(tasks), free(off), free(done), free(failed), free(lost);
  krun_plan_free(&plan);
  ksl__state_free(&st);
  return rc;
}
