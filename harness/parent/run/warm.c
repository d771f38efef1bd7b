/* The warm pool: runners started (runtime, context) before their test is
 * known, while other tests run, so that on a GPU the next test's start-up
 * overlaps the current one (docs/harness.md, "Warm children"). A warm child
 * holds no slot until its test is assigned: kiln writes `assign id=...
 * tmpdir=... sem_id=... sem_num=... slots=1` on its stdin and the runner
 * takes the slot itself, so a slot is never held through a start-up.
 * Which runs a warm child can take is its source's to say
 * (krun__source_warm_fits); the loop calls the pool, never the reverse.
 */
#include "run-impl.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Warm children that die before their assignment, in a row, after which
 * the run starts the rest of its tests cold (where a broken runner gets
 * reported as an error instead of being respawned for ever). */
#define WARM_DEATHS 3

/* Spawns warm children while queued runs could use them: on each device at
 * most warm_max, and never more in all than queued runs a warm child can
 * take, so none starts idle at the end of a run. They hold no slot until
 * assigned, so they run alongside the running tests: that is the overlap. */
void krun__warm_fill(krun__run *R) {
  while (R->warm_on && !R->stopping && R->nwarm < R->qwarm) {
    int best = -1;
    for (int d = 0; d < R->o->bi->ndevices; d++)
      if (R->warm_n[d] < R->warm_max[d] && krun__health_ready(R, d) &&
          (best < 0 || R->warm_n[d] < R->warm_n[best]))
        best = d;
    krun__job *j = best >= 0 ? krun__free_job(R) : NULL;
    if (!j) return;
    krun__job_init(j, 1);
    j->warm = 1;
    krun__job_devices(j, &best, 1);
    if (krun__spawn(R, j) != 0) {
      krun__console_note(&R->con, "kiln: warning: could not start a warm child (%s); "
                         "starting the rest of the tests cold", strerror(errno));
      krun__job_clear(j);
      R->warm_on = 0;
      return;
    }
    R->warm_n[best]++, R->nwarm++;
  }
}

/* Closes the stdin of warm children beyond what the queue can use (all of
 * them once it is empty or warm children are off): they exit quietly. */
void krun__warm_retire(krun__run *R) {
  int want = R->warm_on && !R->stopping ? R->qwarm : 0;
  for (int i = R->maxjobs - 1; i >= 0 && R->nwarm > want; i--) {
    krun__job *j = &R->jobs[i];
    if (!j->active || !j->warm || j->assigned || j->retiring) continue;
    if (j->fd_in >= 0) close(j->fd_in);
    j->fd_in = -1;
    j->retiring = 1;
    R->warm_n[j->dev]--, R->nwarm--;
  }
}

/* The pool child for a one-slot GPU test t: on a device with room for it
 * (one slot, or its share under --slots auto), one that is ready (the
 * longest waiting) before one still starting (the oldest), and last one
 * that has ended but is not finished yet (its pipes still open): the
 * caller waits for it, so that its death is counted before the test may
 * start cold. NULL when there is none. */
krun__job *krun__warm_pick(krun__run *R, const krun_test *t) {
  krun__job *best = NULL, *ended = NULL;
  for (int i = 0; i < R->maxjobs; i++) {
    krun__job *j = &R->jobs[i];
    if (!j->active || !j->warm || j->assigned || j->retiring || j->fd_in < 0)
      continue;
    if (R->cap[j->dev] <= 0 || R->used[j->dev] + krun__want(R, t, j->dev) > R->cap[j->dev] ||
        !krun__health_ready(R, j->dev))
      continue;
    if (j->exited) {
      ended = j;
      continue;
    }
    if (!best || (j->ready && !best->ready) ||
        (j->ready == best->ready &&
         (j->ready ? j->ready_ms < best->ready_ms : j->spawn_ms < best->spawn_ms)))
      best = j;
  }
  return best ? best : ended;
}

/* Writes the test to the warm child and closes the pipe; the test's clock
 * starts now. 0, or -1 when the child is gone (it is then killed and
 * reaped as a warm child that died unused). */
int krun__warm_assign(krun__run *R, krun__job *j, const krun__item *it) {
  const krun_test *t = &R->o->reg->tests[it->test];
  int phys = R->o->bi->dev[j->dev].physical;
  int slots = krun__want(R, t, j->dev);
  char *tmpdir = kh_asprintf("%s/tmp/%d", R->o->out_dir, R->seq + 1);
  kp_assign a = {t->id, tmpdir, KP_NONE, KP_NONE, KP_NONE};
  if (R->use_tokens) a.sem_id = R->tok.semid, a.sem_num = krun_tokens_semnum(phys), a.slots = slots;
  kp_record_out *rec = kh_xmalloc(sizeof *rec);
  kp_encode(rec, &kp_rec_assign, &a);
  kh_mkdir_p(tmpdir, 0700);
  int st = kp_send(rec, j->fd_in);
  free(rec);
  close(j->fd_in);
  j->fd_in = -1;
  if (st != 0) {
    kh_rm_rf(tmpdir);
    free(tmpdir);
    kill(-j->pid, SIGKILL);
    return -1;
  }
  R->seq++;
  j->tmpdir = tmpdir;
  j->assigned = 1;
  j->assign_ms = kh_now_ms();
  j->deadline = j->assign_ms + krun__timeout_ms(R, t);
  j->slots = slots;
  j->tests[0] = krun__new_test(R, it);
  j->defs[0] = t;
  j->tests[0]->device = phys;
  j->tests[0]->slots = slots;
  j->tests[0]->started_s = kh_wall_s();
  krun__journal_start(R, j, j->tests[0]);
  if (R->use_tokens) krun_tokens_holder_add(&R->tok, phys, j->pid, t->id, slots);
  R->warm_n[j->dev]--, R->nwarm--;
  R->used[j->dev] += slots;
  R->nrunning++;
  return 0;
}

/* A warm child's first `ready` record is kiln's, not the test's: it says
 * the child has started. Anything else before its assignment breaks the
 * protocol, and the child is killed (and not used). Returns 1 when the
 * line was taken here. */
int krun__warm_line(krun__run *R, krun__job *j, const char *line) {
  if (!j->ready && (strncmp(line, "ready ", 6) == 0 || strcmp(line, "ready") == 0)) {
    j->ready = 1;
    j->ready_ms = kh_now_ms();
    return 1;
  }
  if (j->assigned) return 0;
  if (R->o->verbose) {
    char excerpt[121];
    snprintf(excerpt, sizeof excerpt, "%s", line);
    kh_text_clean(excerpt);
    krun__console_note(&R->con, "kiln: warm child %ld sent '%s' before its assignment; "
                       "killing it", (long)j->pid, excerpt);
  }
  kill(-j->pid, SIGKILL);
  if (j->fd_in >= 0) close(j->fd_in);   /* and never assign it a test */
  j->fd_in = -1;
  return 1;
}

void krun__warm_drop(krun__run *R, int d) {
  R->warm_max[d] = 0;
  for (int i = 0; i < R->maxjobs; i++) {
    krun__job *j = &R->jobs[i];
    if (!j->active || !j->warm || j->assigned || j->exited || j->dev != d) continue;
    if (!j->retiring) R->warm_n[d]--, R->nwarm--;
    j->retiring = 1;
    kill(-j->pid, SIGKILL);
  }
}

/* A warm child that ended before it was given a test: no result. Unless
 * kiln retired it or is stopping, that is a failure of the warm path;
 * enough of them in a row and the run goes on cold. */
void krun__warm_gone(krun__run *R, krun__job *j) {
  /* Anything it started before it had a test belongs to no test. */
  krun__left left;
  krun__contain_left(R, j, &left);
  for (int k = 0; k < left.n; k++) krep_add_proc(&R->rep, NULL, &left.procs[k]);
  free(left.procs);
  kill(-j->pid, SIGKILL);     /* no holder file: it held no slot */
  if (!j->retiring) {
    R->warm_n[j->dev]--, R->nwarm--;
    if (!R->stopping) {
      char how[64];
      if (WIFSIGNALED(j->wstatus)) krun__signal_name(WTERMSIG(j->wstatus), how, sizeof how);
      else snprintf(how, sizeof how, "exit %d", WEXITSTATUS(j->wstatus));
      char *tail = krun__log_tail(&j->log);
      if (R->o->verbose)
        krun__console_note(&R->con, "kiln: warm child %ld (device %d) ended before its "
                           "assignment (%s%s); output: %s", (long)j->pid,
                           R->o->bi->dev[j->dev].physical, how,
                           j->exec_errno ? ", exec failed" : "", *tail ? tail : "(none)");
      free(tail);
      if (++R->warm_deaths >= WARM_DEATHS && R->warm_on) {
        R->warm_on = 0;
        krun__console_note(&R->con, "kiln: warning: %d warm children in a row ended "
                           "before their assignment; starting the rest of the tests "
                           "cold (-v says how they ended)", WARM_DEATHS);
      }
    }
  }
  krun__job_clear(j);
}
