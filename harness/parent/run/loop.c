/* The scheduler and the event loop of `kiln run`: start what the slots
 * allow (warm children first), then wait in poll() on every child's pipes
 * and a signalfd, route records to their test runs, enforce deadlines
 * (SIGTERM to the process group, SIGKILL after the grace), reap, and
 * finish a child once its pipes are drained or their time is up: a
 * grandchild holding them cannot hang kiln. The jobs (job.c), the warm pool
 * (warm.c), device health (health.c) and the sources of tests
 * (source-impl.h) are services the loop calls; none of them calls back.
 */
#include "run-impl.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

/* After a child exits, its pipes get this long to reach end of file before
 * the process group is killed. */
#define DRAIN_MS 1000
/* How long a child ended by a stop signal from outside kiln waits for
 * kiln's own (see krun__job.outside_sig). */
#define OUTSIDE_HOLD_MS 750
/* Bytes read from one child's output per wake-up, so a flood cannot starve
 * the others. */
#define READ_BUDGET (1u << 20)

/* ---- Starting tests ----------------------------------------------------------------- */

/* The devices for a test of n devices (1 for most): among the devices in
 * service that could ever hold its slots, the n with room now that hold
 * the fewest of our own children. Returns n with devs filled; -1 to wait;
 * -2 when no n devices in service could ever take it. A test that waits
 * holds back those queued behind it (no overtaking), so a test of many
 * devices or slots is never starved by small ones. */
static int pick(krun__run *R, const krun_test *t, int *devs) {
  int n = t->devices > 1 ? t->devices : 1, possible = 0, got = 0;
  int room[KRUN_MAX_DEVICES];
  for (int d = 0; d < R->o->bi->ndevices; d++) {
    int k = krun__want(R, t, d);
    if (R->cap[d] <= 0 || k > R->cap[d] || !krun__health_usable(R, d)) continue;
    possible++;
    if (R->used[d] + k > R->cap[d] || !krun__health_ready(R, d)) continue;
    room[got++] = d;
  }
  if (possible < n) return -2;
  if (got < n) return -1;
  /* The n least used first (ties: the lower index). */
  for (int i = 0; i < n; i++) {
    int best = i;
    for (int k = i + 1; k < got; k++)
      if (R->used[room[k]] < R->used[room[best]]) best = k;
    int x = room[i];
    room[i] = room[best], room[best] = x;
    devs[i] = room[i];
  }
  return n;
}

/* A test no device can run now or ever: decided without a child. */
static int refuse(krun__run *R, const krun__item *it, const krun_test *t) {
  const krun_backend_info *bi = R->o->bi;
  char *msg;
  int outcome = KREP_ERROR;
  int n = t->devices > 1 ? t->devices : 1, any = 0, usable = 0;
  for (int d = 0; d < bi->ndevices; d++) {
    any |= R->cap[d] > 0;
    usable += R->cap[d] > 0 && krun__health_usable(R, d);
  }
  if (bi->ndevices == 0) {
    outcome = KREP_SKIP;
    msg = *bi->error ? kh_strdup(bi->error)
                     : kh_asprintf("no %s device: the runner found none",
                                   krun_backend_names[bi->backend]);
  } else if (n > bi->ndevices) {
    outcome = KREP_SKIP;
    msg = kh_asprintf("needs %d devices at once; the host has %d (%s)", n, bi->ndevices,
                      krun_backend_names[bi->backend]);
  } else if (any && usable < n) {
    msg = krun__health_why(R, n);
    R->infra = 1;             /* the devices failed, not the test */
  } else if (n > 1 && any) {
    msg = kh_asprintf("needs %d devices at once; only %d have slots (device list or "
                      "--resource-spec)", n, usable);
  } else {
    msg = any ? kh_asprintf("needs %d slots; no device has that many", t->slots)
              : kh_strdup("no device has slots: every device the runner sees was left "
                          "out by the device list (config or --resource-spec)");
  }
  krun__queue_take(R);
  krun__immediate(R, it, outcome, msg);
  free(msg);
  return 1;
}

/* Starts one queued test; 0 when it could not start now. */
static int start_one(krun__run *R) {
  if (R->qhead == R->qlen || R->nrunning >= R->maxrun) return 0;
  krun__item it = R->queue[R->qhead];
  const krun_test *t = &R->o->reg->tests[it.test];
  const krun_backend_info *bi = R->o->bi;
  int devs[KRUN_MAX_DEVICES], ndevs = 0;
  if (bi->ndevices == 0 && t->needs_gpu) return refuse(R, &it, t);
  if (bi->ndevices > 0) {
    if (krun__tokens_lost(R)) return krun__tokens_refuse(R, &it);
    ndevs = pick(R, t, devs);
    if (ndevs == -1) return 0;
    if (ndevs == -2) return refuse(R, &it, t);
  }
  /* --isolation worker: the head and the runs after it that one worker
   * takes (1: the head alone). */
  int take = krun__worker_take(R);
  if (take == 1 && R->warm_on && krun__source_warm_fits(t)) {
    krun__job *w = krun__warm_pick(R, t);
    /* Only a ready child gets a test: one still starting is waited for
     * (its ready record or its death wakes the loop), and so is one that
     * ended but is not finished. A test given to a child that then failed
     * to start would be lost to a runner that cannot go warm at all (a
     * --wrap that breaks it), where the children dying unused turn warm
     * children off. */
    if (w && (!w->ready || w->exited)) return 0;
    if (w && krun__warm_assign(R, w, &it) == 0) {
      krun__queue_take(R);
      return 1;
    }
  }
  krun__job *j = krun__free_job(R);
  if (!j) return 0;
  krun__job_init(j, take);
  for (int i = 0; i < take; i++) {
    krun__item x = krun__queue_take(R);
    j->tests[i] = krun__new_test(R, &x);
    j->defs[i] = &R->o->reg->tests[x.test];
  }
  j->worker = take > 1;
  j->pull = j->worker && krun__source(t->kind)->more;
  j->kind = t->kind;
  krun__job_devices(j, devs, ndevs);
  j->slots = ndevs ? krun__want(R, t, devs[0]) : 0;
  if (krun__spawn(R, j) != 0) krun__spawn_failed(R, j);
  return 1;
}

/* --isolation none: every queued run in one runner process, on the first
 * devices (as many as any of them needs, of those with slots), holding the
 * most slots any of them needs. */
static void start_shared(krun__run *R) {
  int n = R->qlen - R->qhead;
  if (n == 0) return;
  krun__job *j = &R->jobs[0];
  krun__job_init(j, n);
  int slots = 1, want = 1;
  for (int i = 0; i < n; i++) {
    krun__item it = R->queue[R->qhead + i];
    j->tests[i] = krun__new_test(R, &it);
    j->defs[i] = &R->o->reg->tests[it.test];
    if (j->defs[i]->slots < 0 || j->defs[i]->slots > slots) slots = j->defs[i]->slots;
    if (j->defs[i]->devices > want) want = j->defs[i]->devices;
  }
  R->qhead = R->qlen;
  R->qwarm = 0;
  j->kind = j->defs[0]->kind;   /* one source (cli checks) */
  int devs[KRUN_MAX_DEVICES], ndevs = 0;
  for (int d = 0; d < R->o->bi->ndevices && ndevs < want; d++)
    if (R->cap[d] > 0) devs[ndevs++] = d;
  krun__job_devices(j, devs, ndevs);
  int cap = ndevs ? R->cap[devs[0]] : 0;
  j->slots = !ndevs ? 0 : slots < 0 || slots > cap ? cap : slots;
  if (krun__spawn(R, j) != 0) krun__spawn_failed(R, j);
}

/* ---- Reading from children ----------------------------------------------------------------- */

/* A shared process's `test` record moves it on to the next run of that
 * id that has not started: after the current one first (--isolation none
 * repeats in order), else any before it (a worker's program may run the
 * tests it is given in an order of its own). */
static void route_test(krun__run *R, krun__job *j, const char *line) {
  char *copy = kh_strdup(line);
  kp_record rec;
  const char *id = kp_parse(copy, &rec, NULL) == 0 ? kp_get(&rec, "id") : NULL;
  for (int k = 1; id && k <= j->ntests; k++) {
    int i = (j->cur + k) % j->ntests;
    if (j->st[i].started || strcmp(j->tests[i]->id, id) != 0) continue;
    j->cur = i;
    j->st[i].pos = ++j->nstarted;
    j->test_ms = kh_now_ms();
    j->tests[i]->started_s = kh_wall_s();
    krun__journal_start(R, j, j->tests[i]);
    j->deadline = j->test_ms + krun__timeout_ms(R, j->defs[i]);
    break;
  }
  free(copy);
}

/* A phase record's ms; 0 for a record that does not read, or a time
 * below 0 or NaN. */
static double phase_ms(const char *line) {
  char *copy = kh_strdup(line);
  kp_record rec;
  kp_phase ph = {0};
  if (kp_parse(copy, &rec, NULL) != 0 ||
      kp_decode(&kp_rec_phase, rec.fields, rec.nfields, &ph, NULL, 0) != 0)
    ph.ms = 0;
  free(copy);
  return ph.ms >= 0 ? ph.ms : 0;   /* NaN too */
}

/* The test holds its slots once the runner says it took them: its clock
 * starts then. A warm child's clock ran from its assignment; it moves on by
 * the wait the runner reports (the record may be read late). */
static void token_taken(krun__run *R, krun__job *j, krep_test *t, const char *line) {
  j->token_seen = 1;
  if (!j->warm) {
    j->deadline = kh_now_ms() + krun__timeout_ms(R, j->defs[0]);
    t->started_s = kh_wall_s();
    return;
  }
  double ms = phase_ms(line);
  j->deadline = j->assign_ms + ms + krun__timeout_ms(R, j->defs[0]);
  t->started_s += ms / 1e3;
}

/* A record line from the job's child, or made for it by its source (its
 * view's emit, through R->route): routed to its test run and ingested. */
static void job_line(krun__run *R, krun__job *j, const char *line) {
  int shared = j->ntests > 1;
  if (j->probe && krun__health_line(R, j, line)) return;
  if (j->warm && krun__warm_line(R, j, line)) return;
  if (j->pull && strncmp(line, "more", 4) == 0 && (!line[4] || line[4] == ' ')) {
    krun__worker_more(R, j);
    return;
  }
  /* `kiln __exec` could not exec the program (exec.c). */
  if (j->kind != KRUN_KIND_RUNNER && strncmp(line, "exec_error errno=", 17) == 0) {
    j->exec_errno = atoi(line + 17) > 0 ? atoi(line + 17) : EIO;
    return;
  }
  /* A worker's clock, until its first test begins (its start-up, a framework's
   * collection), runs from when it holds its slots, as a test's does. */
  if (j->worker && j->cur < 0 && !j->token_seen &&
      strncmp(line, "phase name=token_wait", 21) == 0) {
    j->token_seen = 1;
    j->deadline = kh_now_ms() + krun__timeout_ms(R, j->defs[0]);
  }
  if (shared && strncmp(line, "test ", 5) == 0) route_test(R, j, line);
  krep_test *t = krun__job_test(j);
  if (!t) return;
  krun__stream *st = &j->st[j->cur];
  int was_ended = st->ended;
  krun__ingest(&R->rep, t, st, line);
  if (j->warm && st->started) R->warm_deaths = 0;   /* the warm path works */
  if (!shared && !j->token_seen && strncmp(line, "phase name=token_wait", 21) == 0)
    token_taken(R, j, t, line);
  if (shared && !was_ended && st->ended) {
    t->ended_s = kh_wall_s();
    t->wall_ms = krep_round_ms(kh_now_ms() - j->test_ms);
    /* Between tests: closing the shared context should be quick. */
    j->deadline = kh_now_ms() + 60e3;
  }
}

static void read_results(krun__run *R, krun__job *j) {
  char chunk[65536];
  for (int rounds = 0; rounds < 16; rounds++) {
    ssize_t n = kh_read(j->fd_res, chunk, sizeof chunk);
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      if (kp_reader_tail(j->rd, R->line) > 0 && krun__job_test(j)) {
        free(j->partial);
        j->partial = kh_strdup(R->line);
      }
      close(j->fd_res);
      j->fd_res = -1;
      return;
    }
    for (size_t off = 0; off < (size_t)n;) {
      off += kp_reader_feed(j->rd, chunk + off, (size_t)n - off);
      int k;
      while ((k = kp_reader_next(j->rd, R->line)) != 0) {
        if (k > 0) job_line(R, j, R->line);
        else if (krun__job_test(j))
          krun__protocol_error(&R->rep, krun__job_test(j), "record longer than the "
                               "protocol's 65536-byte limit", NULL);
        else kill(-j->pid, SIGKILL);   /* a warm child, before its test */
      }
    }
  }
}

static void read_output(krun__run *R, krun__job *j) {
  char chunk[65536];
  for (size_t got = 0; got < READ_BUDGET;) {
    ssize_t n = kh_read(j->fd_out, chunk, sizeof chunk);
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      close(j->fd_out);
      j->fd_out = -1;
      return;
    }
    krun__log_add(&j->log, chunk, (size_t)n);
    if (krun__source(j->kind)->output)
      krun__source(j->kind)->output(krun__job_view(R, j), chunk, (size_t)n);
    got += (size_t)n;
  }
}

/* ---- Signals, timers, reaping -------------------------------------------------------------- */

static void stop_all(krun__run *R, int sig) {
  double now = kh_now_ms();
  for (int i = 0; i < R->maxjobs; i++) {
    krun__job *j = &R->jobs[i];
    if (!j->active) continue;
    /* Ended by the same stop, before kiln heard of it: lost too. */
    if (j->exited && j->outside_sig) j->interrupted = 1;
    if (j->exited) continue;
    j->interrupted = 1;
    if (sig == SIGKILL || !j->term_sent) kill(-j->pid, sig);
    if (sig == SIGKILL) j->kill_sent = 1;
    if (!j->term_sent) j->term_sent = 1, j->kill_at = now + R->s->grace_s * 1e3;
  }
}

static void signals(krun__run *R) {
  struct signalfd_siginfo si;
  while (kh_read(R->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
    if (si.ssi_signo == SIGCHLD) continue;       /* reaped below */
    if (!R->stopping) {
      R->stopping = 1;
      R->stop_sig = (int)si.ssi_signo;
      R->rep.interrupted = 1;
      char name[32];
      krun__signal_name((int)si.ssi_signo, name, sizeof name);
      krun__console_note(&R->con, "kiln: %s: stopping; no new tests start (again to "
                         "kill at once)", name);
      stop_all(R, SIGTERM);
    } else {
      stop_all(R, SIGKILL);
    }
  }
}

static void timers(krun__run *R, double now) {
  for (int i = 0; i < R->maxjobs; i++) {
    krun__job *j = &R->jobs[i];
    if (!j->active || j->exited) continue;
    if (j->deadline > 0 && now >= j->deadline && !j->term_sent) {
      kill(-j->pid, SIGTERM);
      j->timed_out = j->term_sent = 1;
      j->term_late_ms = now - j->deadline;
      j->kill_at = now + R->s->grace_s * 1e3;
    }
    if (j->kill_at > 0 && now >= j->kill_at && !j->kill_sent) {
      kill(-j->pid, SIGKILL);
      j->kill_sent = 1;
    }
  }
}

/* Reaps every child that has ended: a test's (its job is done once its
 * pipes are drained), and, kiln being a child subreaper, any orphan of a
 * test that came to it and ended (contain.c finds the ones still alive). */
static void reap(krun__run *R) {
  for (;;) {
    int wstatus;
    pid_t p = waitpid(-1, &wstatus, WNOHANG);
    if (p < 0 && errno == EINTR) continue;
    if (p <= 0) return;
    for (int i = 0; i < R->maxjobs; i++) {
      krun__job *j = &R->jobs[i];
      if (!j->active || j->exited || j->pid != p) continue;
      j->wstatus = wstatus;
      j->exited = 1;
      j->exit_wall_s = kh_wall_s();
      j->drain_until = kh_now_ms() + DRAIN_MS;
      int sig = WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0;
      if (!j->term_sent && (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)) {
        j->outside_sig = 1;
        j->hold_until = kh_now_ms() + OUTSIDE_HOLD_MS;
      }
    }
  }
}

/* A child that is done: a warm child that never got its test, a health
 * probe, or a test child, whose decided runs health may hold back (a test
 * that crashed, timed out or met a device fault puts its devices under
 * probe; tests that ran beside it wait for the verdict). */
static void finish(krun__run *R, krun__job *j) {
  if (j->warm && !j->assigned) {
    krun__warm_gone(R, j);
    return;
  }
  if (j->probe) {
    int out = krun__health_done(R, j);
    if (out >= 0) krun__warm_drop(R, out);
    return;
  }
  krun__job_finish(R, j);
  krun__health_after(R, j);
  krun__worker_resume(R, j);
  for (int i = 0; i < j->ntests; i++) {
    if (!j->tests[i] || krun__worker_settle(R, j, i) || krun__health_settle(R, j, i)) continue;
    if (j->ntests == 1) krun__worker_verdict(R, j->tests[i], j->defs[i]);
    krun__test_done(R, j->tests[i], j->defs[i]);
  }
  krun__job_end(R, j);
}

/* Could a stop signal kiln did not send (a batch system's cancel reaches
 * every process of the job) have ended this test child, whose records are
 * all read? Besides a death by SIGTERM, SIGINT or SIGHUP (held when it is
 * reaped), an exit with 128 + one of them (a handler's), or any exit in
 * the middle of its test (a client whose server that cancel ended
 * exits 3). Then its verdict, too, waits for kiln's own signal. */
static int stop_may_explain(const krun__job *j) {
  if (j->term_sent || j->outside_sig || j->probe || (j->warm && !j->assigned) ||
      !WIFEXITED(j->wstatus))
    return 0;
  int code = WEXITSTATUS(j->wstatus);
  if (code == 128 + SIGTERM || code == 128 + SIGINT || code == 128 + SIGHUP) return 1;
  return j->cur >= 0 && j->cur < j->ntests && j->st[j->cur].started && !j->st[j->cur].ended;
}

static void finish_ready(krun__run *R, double now) {
  for (int i = 0; i < R->maxjobs; i++) {
    krun__job *j = &R->jobs[i];
    if (!j->active || !j->exited) continue;
    int drained = j->fd_res < 0 && j->fd_out < 0;
    if (!drained && now < j->drain_until) continue;
    if (stop_may_explain(j)) {
      j->outside_sig = 1;
      /* kiln's stop came while its pipes drained: it is that stop's. */
      if (R->stopping) j->interrupted = 1;
      else j->hold_until = now + OUTSIDE_HOLD_MS;
    }
    if (now >= j->hold_until) finish(R, j);
  }
}

/* ---- The loop ------------------------------------------------------------------------------------ */

/* Children alive, warm ones included; names gets the tests running. */
static int active(krun__run *R, const char **names, int max, int *nnames) {
  int n = 0, k = 0;
  for (int i = 0; i < R->maxjobs; i++) {
    krun__job *j = &R->jobs[i];
    if (!j->active) continue;
    n++;
    if (names && k < max && krun__job_test(j)) names[k++] = krun__job_test(j)->id;
  }
  if (nnames) *nnames = k;
  return n;
}

static int poll_timeout(krun__run *R, double now) {
  double next = now + (R->con.tty ? 500 : 1000);
  for (int i = 0; i < R->maxjobs; i++) {
    krun__job *j = &R->jobs[i];
    if (!j->active) continue;
    double t[] = {j->term_sent ? 0 : j->deadline, j->kill_sent ? 0 : j->kill_at,
                  j->exited ? j->drain_until : 0, j->exited ? j->hold_until : 0};
    for (size_t k = 0; k < 4; k++)
      if (t[k] > 0 && t[k] < next) next = t[k];
  }
  return next <= now ? 0 : (int)(next - now) + 1;
}

static void poll_once(krun__run *R, struct pollfd *pfd, krun__job **who, char *which) {
  int n = 0;
  pfd[n++] = (struct pollfd){.fd = R->sigfd, .events = POLLIN};
  for (int i = 0; i < R->maxjobs; i++) {
    krun__job *j = &R->jobs[i];
    if (!j->active) continue;
    if (j->fd_res >= 0) who[n] = j, which[n] = 'r', pfd[n++] = (struct pollfd){j->fd_res, POLLIN, 0};
    if (j->fd_out >= 0) who[n] = j, which[n] = 'o', pfd[n++] = (struct pollfd){j->fd_out, POLLIN, 0};
  }
  if (poll(pfd, (nfds_t)n, poll_timeout(R, kh_now_ms())) <= 0) return;
  if (pfd[0].revents) signals(R);
  for (int i = 1; i < n; i++) {
    if (!pfd[i].revents) continue;
    if (which[i] == 'r') read_results(R, who[i]);
    else read_output(R, who[i]);
  }
}

void krun__loop(krun__run *R) {
  int shared = R->s->isolation == KRUN_ISO_NONE;
  struct pollfd *pfd = kh_xcalloc((size_t)(1 + 2 * R->maxjobs), sizeof *pfd);
  krun__job **who = kh_xcalloc((size_t)(1 + 2 * R->maxjobs), sizeof *who);
  char *which = kh_xcalloc((size_t)(1 + 2 * R->maxjobs), 1);
  R->route = job_line;      /* where the sources' records go */
  if (shared) start_shared(R);
  for (;;) {
    if (!shared && !R->stopping) {
      krun__health_start(R);
      /* Fill the pool first, so that the tests started now go to warm
       * children and new ones start behind them. */
      krun__warm_fill(R);
      while (start_one(R)) {
      }
      krun__warm_fill(R);
    }
    krun__warm_retire(R);
    if (active(R, NULL, 0, NULL) == 0 && (R->stopping || R->qhead == R->qlen)) break;
    poll_once(R, pfd, who, which);
    double now = kh_now_ms();
    timers(R, now);
    reap(R);
    finish_ready(R, now);
    const char *names[8];
    int nrun;
    active(R, names, 8, &nrun);
    krun__console_progress(&R->con, names, nrun);
  }
  free(pfd), free(who), free(which);
}
