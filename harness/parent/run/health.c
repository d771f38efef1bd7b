/* Device health (docs/devices.md, "Device health"). After a test on a
 * device crashes, times out or reports a device fault, the device gets no
 * new test until a probe (the runner's --health-probe: a fresh context, a
 * known kernel, its answer) says whether it still works. Tests that were
 * running on it meanwhile are held back from the report until then. A
 * device that passes goes back into service and the held tests are
 * published as they were; one that fails is taken out of the run: its
 * held and still-running tests become `collateral` and run again on a
 * healthy device, and when no device is left the rest are not run, with
 * the reason.
 */
#include "run-impl.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* A probe that has not answered by then failed (a hung device). */
#define PROBE_TIMEOUT_S 60

int krun__health_usable(const krun__run *R, int d) {
  return R->health[d].state != KRUN__DEV_REMOVED;
}

int krun__health_ready(const krun__run *R, int d) {
  return R->health[d].state == KRUN__DEV_OK;
}

char *krun__health_why(const krun__run *R, int n) {
  kh_buf b = {0};
  if (n == 1) kh_buf_addf(&b, "not run: no healthy device left:");
  else kh_buf_addf(&b, "not run: fewer than %d healthy devices left:", n);
  const krun_backend_info *bi = R->o->bi;
  for (int d = 0; d < bi->ndevices; d++)
    if (R->health[d].state == KRUN__DEV_REMOVED)
      kh_buf_addf(&b, " device %d was taken out after %s (%s);", bi->dev[d].physical,
                  R->health[d].cause, R->health[d].reason);
  return b.data;
}

static int on(const int *devs, int n, int d) {
  for (int i = 0; i < n; i++)
    if (devs[i] == d) return 1;
  return 0;
}

/* ---- Probes ------------------------------------------------------------------------ */

static int start_probe(krun__run *R, int d) {
  krun__job *j = krun__free_job(R);
  if (!j) return -1;
  krun__job_init(j, 0);
  j->probe = 1;
  krun__job_devices(j, &d, 1);
  char *argv[] = {(char *)R->o->bi->runner, "--health-probe", "--result-fd", "3", NULL};
  /* Kiln's own variables for a test do not concern a probe. */
  static const char *const unset[] = {"KILN_TEST", "TEST_TMPDIR", "KILN_WARM",
                                      "KILN_TAKE_SLOTS", NULL};
  krun_spawn_req req = {.argv = argv, .unenv = unset, .narrow = R->o->bi,
                        .devices = j->devs, .ndevices = 1, .new_pgroup = 1,
                        .die_with_parent = 1};
  if (krun__job_exec(R, j, &req, 1) != 0) {
    krun__job_clear(j);
    return -1;
  }
  j->deadline = j->spawn_ms + PROBE_TIMEOUT_S * 1e3;
  R->health[d].probing = 1;
  return 0;
}

void krun__health_start(krun__run *R) {
  for (int d = 0; d < R->o->bi->ndevices; d++)
    if (R->health[d].state == KRUN__DEV_SUSPECT && !R->health[d].probing)
      (void)start_probe(R, d);
}

static void suspect(krun__run *R, int d, const char *cause) {
  if (R->health[d].state != KRUN__DEV_OK) return;
  R->health[d].state = KRUN__DEV_SUSPECT;
  R->health[d].cause = krep_str(&R->rep, cause);
  R->health[d].probing = 0;
  krun__console_note(&R->con, "kiln: device %d: %s ended badly; probing the device before "
                     "it gets another test", R->o->bi->dev[d].physical, cause);
  (void)start_probe(R, d);   /* no free job slot: krun__health_start retries */
}

static int faulted(const krep_test *t) {
  int i = 0;
  return t->outcome == KREP_CRASH || t->outcome == KREP_TIMEOUT ||
         krep_test_next(t, "device_fault", &i) != NULL;
}

void krun__health_after(krun__run *R, krun__job *j) {
  /* One shared process (--isolation none) has no device to hand on. */
  if (!j->ndevs || R->stopping || j->collateral || R->s->isolation == KRUN_ISO_NONE) return;
  /* The host backend's devices live inside kiln's own runner: a test of
   * any other source that crashes cannot hurt them. */
  if (R->o->bi->backend == KRUN_BACKEND_HOST && j->kind != KRUN_KIND_RUNNER) return;
  for (int i = 0; i < j->ntests; i++) {
    if (!faulted(j->tests[i])) continue;
    for (int k = 0; k < j->ndevs; k++) suspect(R, j->devs[k], j->tests[i]->id);
    /* Its own tests are the cause, not bystanders: they are not held. */
    j->cause = 1;
    return;
  }
}

int krun__health_line(krun__run *R, krun__job *j, const char *line) {
  (void)R;
  char *copy = kh_strdup(line);
  kp_record rec;
  kp_result r;
  if (kp_parse(copy, &rec, NULL) == 0 && strcmp(rec.tag, "result") == 0 &&
      kp_decode(&kp_rec_result, rec.fields, rec.nfields, &r, NULL, 0) == 0 && r.status) {
    j->probe_passed = strcmp(r.status, "pass") == 0;
    free(j->probe_message);
    j->probe_message = kh_strdup(r.message ? r.message : "");
  }
  free(copy);
  return 1;
}

/* ---- Collateral runs ----------------------------------------------------------------- */

/* The run was on device d when it was taken out: it says so and runs
 * again on a healthy device (a later attempt, not a retry). */
static void collateral(krun__run *R, krep_test *t, const krun_test *def, int d) {
  char *msg = kh_asprintf("collateral: device %d failed its health probe after %s (%s); "
                          "this run %s: %s", R->o->bi->dev[d].physical, R->health[d].cause,
                          R->health[d].reason, krep_outcome_name(t->outcome),
                          t->message ? t->message : "");
  t->outcome = KREP_COLLATERAL;
  t->message = krep_str(&R->rep, msg);
  free(msg);
  if (!R->stopping && R->s->isolation == KRUN_ISO_PROCESS) {
    t->final = 0;
    krun__queue_front(R, (krun__item){(int)(def - R->o->reg->tests), t->repeat,
                                      t->attempt + 1, 0});
  }
  krun__publish(R, t);
}

int krun__health_settle(krun__run *R, krun__job *j, int i) {
  krep_test *t = j->tests[i];
  for (int k = 0; k < j->ndevs; k++)
    if (R->health[j->devs[k]].state == KRUN__DEV_REMOVED) {
      collateral(R, t, j->defs[i], j->devs[k]);
      return 1;
    }
  int probing = 0;
  for (int k = 0; k < j->ndevs; k++) probing |= R->health[j->devs[k]].state == KRUN__DEV_SUSPECT;
  if (!probing || j->cause) return 0;   /* healthy, or the cause itself */
  R->held = kh_xrealloc(R->held, (size_t)(R->nheld + 1) * sizeof *R->held);
  krun__held *h = &R->held[R->nheld++];
  *h = (krun__held){.t = t, .def = j->defs[i], .ndevs = j->ndevs};
  memcpy(h->devs, j->devs, (size_t)j->ndevs * sizeof *h->devs);
  return 1;
}

/* Held runs whose devices all have a verdict now: published as they were
 * (each may put its device under probe again), or made collateral. */
static void release_held(krun__run *R) {
  for (int i = 0; i < R->nheld;) {
    krun__held h = R->held[i];
    int waiting = 0, removed = -1;
    for (int k = 0; k < h.ndevs; k++) {
      waiting |= R->health[h.devs[k]].state == KRUN__DEV_SUSPECT;
      if (R->health[h.devs[k]].state == KRUN__DEV_REMOVED) removed = h.devs[k];
    }
    if (waiting && removed < 0) {
      i++;
      continue;
    }
    R->held[i] = R->held[--R->nheld];
    if (h.confirm) {
      /* A worker's run that faulted its device: alone on a healthy device
       * once its own passed its probe; its result stands otherwise. */
      if (removed < 0 && !R->stopping) {
        krun__worker_confirm(R, h.t, h.def, h.after, h.started);
        continue;
      }
      if (removed >= 0) {
        char *why = kh_asprintf("device %d failed its health probe after it: not run again "
                                "alone, where it could take another device out of the run",
                                R->o->bi->dev[removed].physical);
        kp_field f[] = {{"key", "not_confirmed"}, {"value", why}};
        krep_test_keep(&R->rep, h.t, "note", f, 2);
        free(why);
      }
      free(h.after);
      krun__test_done(R, h.t, h.def);
      continue;
    }
    if (removed >= 0) {
      collateral(R, h.t, h.def, removed);
    } else {
      if (faulted(h.t) && !R->stopping)
        for (int k = 0; k < h.ndevs; k++) suspect(R, h.devs[k], h.t->id);
      krun__test_done(R, h.t, h.def);
    }
  }
}

/* Device d is out: tests still running on it are killed and become
 * collateral. (Its warm children are the warm pool's: the loop lets them
 * go, krun__warm_drop.) */
static void take_out(krun__run *R, int d) {
  for (int i = 0; i < R->maxjobs; i++) {
    krun__job *j = &R->jobs[i];
    if (!j->active || j->probe || j->exited || !on(j->devs, j->ndevs, d)) continue;
    if (j->warm && !j->assigned) continue;
    j->collateral = 1;
    kill(-j->pid, SIGKILL);
  }
}

int krun__health_done(krun__run *R, krun__job *j) {
  int d = j->dev;
  kill(-j->pid, SIGKILL);
  R->health[d].probing = 0;
  if (R->stopping) {
    /* Stopped by kiln, not by the device: no verdict; what was held is
     * published as it was. */
    R->health[d].state = KRUN__DEV_OK;
    krun__job_clear(j);
    release_held(R);
    return -1;
  }
  int exited_ok = WIFEXITED(j->wstatus) && WEXITSTATUS(j->wstatus) == 0;
  int passed = j->probe_passed && exited_ok && !j->timed_out;
  char *why;
  if (passed) why = kh_strdup("");
  else if (j->timed_out) why = kh_asprintf("the health probe did not end within %d s", PROBE_TIMEOUT_S);
  else if (j->exec_errno) why = kh_asprintf("the health probe could not start: %s", strerror(j->exec_errno));
  else if (j->probe_message && *j->probe_message) why = kh_asprintf("health probe: %s", j->probe_message);
  else if (WIFSIGNALED(j->wstatus)) {
    char sig[32];
    krun__signal_name(WTERMSIG(j->wstatus), sig, sizeof sig);
    why = kh_asprintf("the health probe was killed by %s", sig);
  } else why = kh_asprintf("the health probe exited with status %d", WEXITSTATUS(j->wstatus));
  krep_probe p = {R->o->bi->dev[d].physical, R->health[d].cause, passed, why,
                  krep_round_ms(kh_now_ms() - j->spawn_ms)};
  krep_add_probe(&R->rep, &p);
  krep_journal_probe(R->journal, &p);
  if (passed) {
    R->health[d].state = KRUN__DEV_OK;
    krun__console_note(&R->con, "kiln: device %d passed its health probe (%.0f ms); back in "
                       "service", p.device, p.ms);
  } else {
    R->health[d].state = KRUN__DEV_REMOVED;
    R->health[d].reason = krep_str(&R->rep, why);
    krun__console_note(&R->con, "kiln: device %d failed its health probe: %s; taken out of "
                       "the run", p.device, why);
    take_out(R, d);
  }
  free(why);
  krun__job_clear(j);
  release_held(R);
  return passed ? -1 : d;
}
