/* Following a run (`kiln slurm` after it submits, `kiln slurm --follow
 * RUN`): every poll, the last round's tasks from squeue and the tests they
 * finished from their journals (read from where the last poll stopped, or
 * again from the start when a requeued task began its journal anew),
 * shown as one progress line; once the merge job has ended, the run's
 * status, with kiln's exit status for it. A merge job that ended without
 * writing the status (cancelled, failed, never able to start) is done
 * here instead, so the run is merged either way. Ctrl-C stops following;
 * the jobs go on.
 */
#include "slurm-impl.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* What the follower has read of one task's journal. A requeued task (its
 * node went DOWN, `scontrol requeue`) runs its shard again, and its kiln
 * truncates the journal and writes a new header: the counts then start
 * again from its first line. The header (kiln's pid, its start time)
 * tells one run of the task from the next. */
typedef struct journal_seen {
  long long off;
  int done, failed, lost;
  char *head;               /* its first line as last read (malloc'd) */
} journal_seen;

static void journal_read(const char *path, journal_seen *js) {
  FILE *f = fopen(path, "re");
  if (!f) return;
  char *head = NULL;
  size_t cap = 0;
  if (getline(&head, &cap, f) < 0 && head) head[0] = '\0';
  struct stat sb;
  long long size = fstat(fileno(f), &sb) == 0 ? (long long)sb.st_size : js->off;
  fclose(f);
  if (!head || !js->head || strcmp(head, js->head) != 0 || size < js->off) {
    free(js->head);
    memset(js, 0, sizeof *js);
    js->head = head;
    head = NULL;
  }
  free(head);
  (void)krep_journal_count(path, &js->off, &js->done, &js->failed, &js->lost);
}

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
        /* A reason says why Slurm held a task back while it waited (or
         * never started); for one that ran it is whatever Slurm said last. */
        const char *state = first->lost.state, *reason = first->lost.reason;
        int held = !state || ksl__waiting(state) || !first->lost.node;
        printf("  %d lost with Slurm task %s (%s on %s%s%s)\n", n, first->lost.job,
               state ? state : "state unknown", first->lost.node ? first->lost.node : "no node",
               !reason ? "" : held ? "; held for " : "; Slurm's reason: ", reason ? reason : "");
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
  journal_seen *js = kh_xcalloc((size_t)r->tasks, sizeof *js);
  int tty = isatty(STDOUT_FILENO), gone = 0, warned = 0;
  char last[512] = "", status[32] = "";
  double t0 = kh_now_ms();
  while (!stop_sig) {
    progress p = {.total = plan.ntests * plan.repeat};
    ksl__task merge;
    int ok = ksl__tasks(r->array, r->tasks, tasks, 0, &err) == 0 &&
             ksl__job(r->merge, &merge, &err) == 0;
    if (!ok && !warned++) fprintf(stderr, "\nkiln slurm: %s (asking again)\n", err.msg);
    for (int k = 0; k < r->tasks; k++) {
      char *j = ksl__path(run, "shards/%d-%d/journal", r->n, k + 1);
      journal_read(j, &js[k]);
      free(j);
      p.tests += js[k].done, p.failed += js[k].failed, p.lost += js[k].lost;
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
  for (int k = 0; k < r->tasks; k++) free(js[k].head);
  free(tasks), free(js);
  krun_plan_free(&plan);
  ksl__state_free(&st);
  return rc;
}
