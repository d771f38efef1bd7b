/* Children and their test runs: the child's command line and the spawn
 * request for a test (or a warm child, or --isolation none's one process),
 * and what happens when a child is done: outcome, log file, retries,
 * journal and console. A cold child gets everything at once: its device
 * narrowed, its slots to take (a runner takes them with SEM_UNDO and
 * reports the wait; for any other program `kiln __exec` does that before
 * it execs the program), its test on the command line. One path for every
 * kind of test: only the argv and, after the child, the translation of
 * what it left into records differ by kind, and those come from its
 * source's table (source-impl.h). The warm pool and health probes use the
 * jobs here; the loop settles what a finished job decided.
 */
#include "run-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void krun__job_devices(krun__job *j, const int *devs, int n) {
  j->ndevs = n;
  for (int i = 0; i < n; i++) j->devs[i] = devs[i];
  j->dev = n ? devs[0] : -1;
}

double krun_test_deadline_s(const krun_settings *s, const krun_test *t) {
  if (t->timeout_s > 0) return t->timeout_s;
  int own = krun__source(t->kind)->timeout_s;
  if (own > 0 && !krun_setting_is_set(s, "timeout")) return own;
  return s->timeout_s;   /* --timeout takes fractions of a second */
}

double krun__timeout_ms(const krun__run *R, const krun_test *t) {
  return 1e3 * krun_test_deadline_s(R->s, t);
}

/* ---- The queue ------------------------------------------------------------------- */

krun__item krun__queue_take(krun__run *R) {
  krun__item it = R->queue[R->qhead++];
  R->qwarm -= krun__source_warm_fits(&R->o->reg->tests[it.test]);
  return it;
}

void krun__queue_front(krun__run *R, krun__item it) {
  R->qwarm += krun__source_warm_fits(&R->o->reg->tests[it.test]);
  if (R->qhead > 0) {
    R->queue[--R->qhead] = it;
    return;
  }
  if (R->qlen == R->qcap) {
    R->qcap = R->qcap ? 2 * R->qcap : 64;
    R->queue = kh_xrealloc(R->queue, (size_t)R->qcap * sizeof *R->queue);
  }
  memmove(R->queue + 1, R->queue, (size_t)R->qlen * sizeof *R->queue);
  R->queue[0] = it;
  R->qlen++;
}

/* ---- Jobs ------------------------------------------------------------------------- */

void krun__job_init(krun__job *j, int ntests) {
  memset(j, 0, sizeof *j);
  j->fd_res = j->fd_out = j->fd_in = j->cg_procs = -1;
  j->tests = kh_xcalloc((size_t)ntests, sizeof *j->tests);
  j->st = kh_xcalloc((size_t)ntests, sizeof *j->st);
  j->defs = kh_xcalloc((size_t)ntests, sizeof *j->defs);
  j->took_ms = kh_xcalloc((size_t)ntests, sizeof *j->took_ms);
  for (int i = 0; i < ntests; i++) j->took_ms[i] = -1;
  j->ntests = ntests;
  j->cur = ntests == 1 ? 0 : -1;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

void krun__job_clear(krun__job *j) {
  close_fd(&j->fd_res), close_fd(&j->fd_out), close_fd(&j->fd_in);
  krun__contain_job_clear(j);
  if (krun__source(j->kind)->free) krun__source(j->kind)->free(&j->view);
  krun__log_free(&j->log);
  free(j->rd), free(j->tmpdir), free(j->partial), free(j->probe_message);
  free(j->tests), free(j->st), free(j->defs), free(j->took_ms);
  memset(j, 0, sizeof *j);
  j->fd_res = j->fd_out = j->fd_in = j->cg_procs = -1;
}

/* A record a source made for test run i (-1: as the child's own). */
static void view_emit(krun__child *c, int i, const char *line) {
  krun__job *j = (krun__job *)(void *)((char *)c - offsetof(krun__job, view));
  krun__run *R = c->run->core;
  if (i < 0) {
    R->route(R, j, line);
    c->cur = j->cur;        /* a `test` record moves a shared process on */
  } else if (i < j->ntests) krun__ingest(&R->rep, j->tests[i], &j->st[i], line);
}

static int view_others(const krun__child *c, pid_t *pids, int max) {
  const krun__job *j = (const krun__job *)(const void *)((const char *)c -
                                                          offsetof(krun__job, view));
  return krun__contain_others(c->run->core, j, pids, max);
}

krun__child *krun__job_view(krun__run *R, krun__job *j) {
  krun__child *c = &j->view;
  c->run = &R->srcrun;
  c->ctx = R->srcctx ? R->srcctx[j->kind] : NULL;
  c->source = j->ntests && j->defs[0] ? j->defs[0]->source : -1;
  c->src = c->source >= 0 ? &R->o->reg->sources[c->source] : NULL;
  c->ntests = j->ntests;
  c->defs = j->defs;
  c->st = j->st;
  c->cur = j->cur;
  c->warm = j->warm;
  c->worker = j->worker;
  c->pull = j->pull;
  c->tmpdir = j->tmpdir;
  c->pid = j->pid;
  c->line = R->line;
  c->exec_errno = j->exec_errno;
  c->wstatus = j->wstatus;
  c->timed_out = j->timed_out;
  c->interrupted = j->interrupted;
  c->log = &j->log;
  c->took_ms = j->took_ms;
  c->emit = view_emit;
  c->others = view_others;
  return c;
}

krep_test *krun__job_test(const krun__job *j) {
  return j->ntests && j->cur >= 0 ? j->tests[j->cur] : NULL;
}

krun__job *krun__free_job(krun__run *R) {
  for (int i = 0; i < R->maxjobs; i++)
    if (!R->jobs[i].active) return &R->jobs[i];
  return NULL;
}

krep_test *krun__new_test(krun__run *R, const krun__item *it) {
  const krun_test *t = &R->o->reg->tests[it->test];
  krep_test *x = krep_test_new(&R->rep, t->id, t->suite, t->tags);
  x->repeat = it->repeat;
  x->attempt = it->attempt;
  return x;
}

void krun__journal_start(krun__run *R, const krun__job *j, krep_test *t) {
  if (t->pid == KP_NONE) t->pid = j->pid;
  krep_journal_start(R->journal, t);
}

void krun__publish(krun__run *R, krep_test *t) {
  krep_journal_test(R->journal, t);
  krun__console_result(&R->con, &R->rep, t);
}

/* A result decided without a child (no device, too many slots). */
void krun__immediate(krun__run *R, const krun__item *it, int outcome, const char *msg) {
  krep_test *t = krun__new_test(R, it);
  t->outcome = outcome;
  t->message = krep_str(&R->rep, msg);
  t->started_s = t->ended_s = kh_wall_s();
  krun__publish(R, t);
}

/* ---- The token set lost ------------------------------------------------------------- */

/* The message of a test that could not take its slots for that. */
static char *lost_message(const krun__run *R) {
  return kh_asprintf("not run: kiln's error: the device token set of %s (semaphore set "
                     "%d) was removed during the run (ipcrm, or a cleaner), so no test "
                     "may take slots shared with other kilns any more",
                     R->tok.key_path, R->tok.semid);
}

int krun__tokens_lost(krun__run *R) {
  if (!R->use_tokens) return 0;
  if (R->tokens_lost || !krun_tokens_gone(&R->tok)) return R->tokens_lost;
  R->tokens_lost = 1;
  R->infra = 1;
  krun__console_note(&R->con, "kiln: error: the device token set of %s (semaphore set %d) "
                     "was removed while this run held slots (ipcrm, or a cleaner); no "
                     "further test starts, each is an error of kiln's, and the run "
                     "exits 3. Tests running now finish", R->tok.key_path, R->tok.semid);
  return 1;
}

int krun__tokens_refuse(krun__run *R, const krun__item *it) {
  char *msg = lost_message(R);
  krun__queue_take(R);
  krun__immediate(R, it, KREP_ERROR, msg);
  free(msg);
  return 1;
}

void krun__tokens_blame(krun__run *R, krep_test *t) {
  if (!krun__tokens_lost(R)) return;
  char *msg = lost_message(R);
  t->outcome = KREP_ERROR;
  t->message = krep_str(&R->rep, msg);
  free(msg);
}

/* ---- Starting a child ---------------------------------------------------------------- */

static char *log_name(const krun__job *j);

/* compute-sanitizer's report of a test beside its log: NAME.sanitizer.log
 * under the run folder (malloc'd). */
static char *sanitizer_log(const krun__run *R, const krun__job *j) {
  char *name = log_name(j);
  char *path = kh_asprintf("%s/%.*s.sanitizer.log", R->o->out_dir, (int)strlen(name) - 4, name);
  free(name);
  return path;
}

/* `kiln __exec` when a program that is no runner must take slots, then
 * wrap, then compute-sanitizer (--sanitize, around a kiln runner), then the
 * program and its arguments. */
static char **child_argv(krun__run *R, krun__job *j, int takes) {
  const krun_settings *s = R->s;
  const krun__source_i *src = krun__source(j->kind);
  int nargs = 0;
  for (char **a = j->defs[0] ? j->defs[0]->argv : NULL; a && *a; a++) nargs++;
  /* Two words per test run and per source at most (a worker that names
   * every source it shares). */
  char **argv = kh_xcalloc((size_t)(R->nwrap + 24 + s->ntol + 2 * j->ntests + nargs +
                                    2 * R->o->reg->nsources),
                           sizeof *argv);
  int n = 0;
  if (takes && !src->protocol) {
    argv[n++] = kh_strdup(R->self);
    argv[n++] = kh_strdup(KRUN_EXEC_WORD);
    if (src->records) argv[n++] = kh_strdup(KRUN_EXEC_KEEP);
  }
  for (int i = 0; i < R->nwrap; i++) argv[n++] = kh_strdup(R->wrap[i]);
  if (R->sanitizer && !j->warm && src->protocol) {
    char *log = sanitizer_log(R, j);
    char *dir = kh_strdup(log);
    *strrchr(dir, '/') = '\0';
    kh_mkdir_p(dir, 0755);
    n += krun__sanitize_argv(R, argv + n, log);
    free(log), free(dir);
  }
  src->argv(krun__job_view(R, j), argv, &n);
  return argv;
}

static void argv_free(char **argv) {
  for (char **a = argv; *a; a++) free(*a);
  free(argv);
}

static void verbose_argv(krun__run *R, char *const *argv) {
  if (!R->o->verbose) return;
  kh_buf b = {0};
  for (char *const *a = argv; *a; a++) kh_buf_addf(&b, "%s%s", a == argv ? "" : " ", *a);
  krun__console_note(&R->con, "exec: %s", b.data);
  kh_buf_free(&b);
}

static void nonblock(int fd) { fcntl(fd, F_SETFL, O_NONBLOCK); }

/* The child's environment: its test (a warm child learns it later), its
 * private TEST_TMPDIR, the run folder and its devices (physical, as
 * "0" or "0,1"). */
static void environment(krun__run *R, const krun__job *j, const char **set,
                        const char **unset, const char *dev) {
  int n = 0, u = 0;
  if (j->warm) {
    /* The runner sets these from its assignment. KILN_WARM marks the
     * process as kiln's until then (tests look for strays by it). */
    unset[u++] = "KILN_TEST", unset[u++] = "TEST_TMPDIR";
    set[n++] = "KILN_WARM=1";
  } else {
    set[n++] = kh_asprintf("KILN_TEST=%s", j->tests[0]->id);
    set[n++] = kh_asprintf("TEST_TMPDIR=%s", j->tmpdir);
    /* What the test's tools write to $TMPDIR lands there too: kept with it
     * when the test fails, removed with it when it passes. */
    set[n++] = kh_asprintf("TMPDIR=%s", j->tmpdir);
    unset[u++] = "KILN_WARM";
  }
  set[n++] = kh_asprintf("KILN_RUN_DIR=%s", R->o->out_dir);
  /* What a process of this child carries wherever it goes: how kiln finds
   * what the test left running (contain.c), and what the guard kills if
   * kiln dies (guard.c). */
  set[n++] = kh_asprintf("KILN_JOB=%ld.%d", (long)R->ct.self, j->serial);
  if (j->dev >= 0) set[n++] = kh_asprintf("KILN_DEVICE=%s", dev);
  else unset[u++] = "KILN_DEVICE";
  const char *const *un = krun__source(j->kind)->unenv;
  for (int i = 0; un && un[i]; i++) unset[u++] = un[i];
  set[n] = NULL, unset[u] = NULL;
}

/* Starts j's process from req: its result pipe on fd 3 (with records),
 * stdout and stderr on one pipe, stdin from a pipe for a warm child or a
 * worker that asks for more (else /dev/null). 0 with the job active, or
 * -1 with errno (nothing left open). */
int krun__job_exec(krun__run *R, krun__job *j, krun_spawn_req *req, int records) {
  int res[2], out[2], in[2] = {-1, -1};
  if (pipe2(res, O_CLOEXEC) != 0) return -1;
  if (pipe2(out, O_CLOEXEC) != 0) return close(res[0]), close(res[1]), -1;
  if ((j->warm || j->pull) && pipe2(in, O_CLOEXEC) != 0) {
    close(res[0]), close(res[1]), close(out[0]), close(out[1]);
    return -1;
  }
  req->fd_in = in[0], req->fd_out = req->fd_err = out[1];
  req->fd_result = records ? res[1] : -1;
  verbose_argv(R, req->argv);
  fflush(NULL);
  pid_t pid;
  /* Its start-up counts from the request: vfork returns after the exec,
   * which on a loaded machine may be a while. */
  j->spawn_ms = kh_now_ms();
  int rc = krun_spawn(req, &pid, &j->exec_errno);
  int saved = errno;
  close(res[1]), close(out[1]);
  if (in[0] >= 0) close(in[0]);
  if (rc != 0) {
    close(res[0]), close(out[0]);
    if (in[1] >= 0) close(in[1]);
    return errno = saved, -1;
  }
  j->pid = pid;
  j->fd_res = res[0], j->fd_out = out[0], j->fd_in = in[1];
  nonblock(j->fd_res), nonblock(j->fd_out);
  j->rd = kh_xmalloc(sizeof *j->rd);
  kp_reader_init(j->rd);
  j->active = 1;
  return 0;
}

int krun__spawn(krun__run *R, krun__job *j) {
  const krun_backend_info *bi = R->o->bi;
  if (!j->warm) {
    j->tmpdir = kh_asprintf("%s/tmp/%d", R->o->out_dir, ++R->seq);
    kh_mkdir_p(j->tmpdir, 0700);
  }
  int phys[KRUN_MAX_DEVICES], semnum[KRUN_MAX_DEVICES];
  kh_buf devs = {0};
  for (int i = 0; i < j->ndevs; i++) {
    phys[i] = bi->dev[j->devs[i]].physical;
    semnum[i] = krun_tokens_semnum(phys[i]);
    kh_buf_addf(&devs, "%s%d", i ? "," : "", phys[i]);
  }
  const char *set[12], *unset[16];
  krun__contain_job(R, j);
  environment(R, j, set, unset, devs.data);
  /* A warm child takes its slot from its assignment. */
  int takes = !j->warm && R->use_tokens && j->ndevs;
  char **argv = child_argv(R, j, takes);
  const krun_source *src = j->defs[0] ? &R->o->reg->sources[j->defs[0]->source] : NULL;
  krun_spawn_req req = {.argv = argv, .env = set, .unenv = unset,
                        .narrow = j->ndevs ? bi : NULL, .devices = j->devs,
                        .ndevices = j->ndevs,
                        .cwd = src ? src->dir : NULL,
                        .new_pgroup = 1, .die_with_parent = 1, .cgroup_procs = j->cg_procs};
  if (takes) {
    req.take_semid = R->tok.semid;
    req.take_semnum = semnum;
    req.take_slots = j->slots;
  }
  /* Record pipe: a runner's or a program's that writes records, or
   * `kiln __exec`'s for its token_wait; a program of its own gets no
   * fd 3. */
  int rc = krun__job_exec(R, j, &req,
                          krun__source(j->kind)->protocol || krun__source(j->kind)->records || takes);
  int saved = errno;
  for (int i = 0; set[i]; i++)
    if (strcmp(set[i], "KILN_WARM=1") != 0) free((char *)set[i]);
  argv_free(argv);
  if (rc != 0 || j->warm) {   /* a warm child: no test, no slots yet, no holder file */
    kh_buf_free(&devs);
    return rc != 0 ? (errno = saved, -1) : 0;
  }
  for (int i = 0; R->use_tokens && i < j->ndevs; i++)
    krun_tokens_holder_add(&R->tok, phys[i], j->pid, j->tests[0]->id, j->slots);
  R->nrunning++;
  for (int i = 0; i < j->ntests; i++) {
    j->tests[i]->device = j->ndevs ? phys[0] : -1;
    j->tests[i]->devices = j->ndevs > 1 ? krep_str(&R->rep, devs.data) : NULL;
    j->tests[i]->slots = j->slots;
    j->tests[i]->started_s = kh_wall_s();
  }
  /* In the journal before the test runs: if kiln dies now, the test is
   * known to have been in flight (lost), not missing. A shared process's
   * tests start one after another (loop.c). */
  if (j->ntests == 1) krun__journal_start(R, j, j->tests[0]);
  kh_buf_free(&devs);
  /* Without slots to take, nothing says when the test holds them: its
   * clock (a worker's, until its first test begins) starts now. */
  if (!req.take_slots && (j->ntests == 1 || j->worker))
    j->deadline = j->spawn_ms + krun__timeout_ms(R, j->defs[0]);
  for (int i = 0; i < j->ndevs; i++) R->used[j->devs[i]] += j->slots;
  return 0;
}

void krun__spawn_failed(krun__run *R, krun__job *j) {
  char msg[256];
  snprintf(msg, sizeof msg, "could not start a child: %s", strerror(errno));
  for (int i = 0; i < j->ntests; i++) {
    j->tests[i]->outcome = KREP_ERROR;
    j->tests[i]->message = krep_str(&R->rep, msg);
    krun__publish(R, j->tests[i]);
  }
  R->infra = 1;
  krun__job_clear(j);
}

/* ---- Finishing a child -------------------------------------------------------------- */

/* Retries and flakiness: a failed attempt with retries left is marked
 * retried and queued again; a pass after a failed attempt is flaky. Runs
 * made again because their device failed its health probe (collateral)
 * neither use a retry nor make a later pass flaky. */
static void retry_or_flaky(krun__run *R, krep_test *t, const krun_test *def) {
  const krep_test *failed = NULL;
  int collateral = 0;
  for (int k = 0; k < R->rep.ntests; k++) {
    const krep_test *p = R->rep.tests[k];
    if (strcmp(p->id, t->id) != 0 || p->repeat != t->repeat || p->attempt >= t->attempt)
      continue;
    if (p->outcome == KREP_COLLATERAL) collateral++;
    else if (!failed || p->attempt > failed->attempt) failed = p;
  }
  if (t->outcome == KREP_PASS && failed) {
    char *msg = kh_asprintf("passed on attempt %d after %s on attempt %d: %s", t->attempt,
                            krep_outcome_name(failed->outcome), failed->attempt,
                            failed->message ? failed->message : "");
    t->outcome = KREP_FLAKY;
    t->message = krep_str(&R->rep, msg);
    free(msg);
    return;
  }
  if (!krep_outcome_retryable(t->outcome) || t->attempt - collateral > R->s->retries ||
      R->stopping || R->s->isolation == KRUN_ISO_NONE)
    return;
  t->final = 0;
  krun__queue_front(R, (krun__item){(int)(def - R->o->reg->tests), t->repeat,
                                    t->attempt + 1, 0});
}

/* What kiln exec'd for the job (what a failed exec names). */
static const char *program(krun__run *R, krun__job *j) {
  return R->nwrap ? R->wrap[0] : krun__source(j->kind)->program(krun__job_view(R, j));
}

void krun__test_done(krun__run *R, krep_test *t, const krun_test *def) {
  retry_or_flaky(R, t, def);
  krun__publish(R, t);
}

static krun__exit exit_info(krun__run *R, krun__job *j, int i) {
  krun__exit x = {0};
  x.runner = program(R, j);
  x.role = krun__source(j->kind)->protocol ? "runner" : "program";
  x.exec_errno = j->exec_errno;
  x.grace_s = R->s->grace_s;
  x.timeout_s = krun__timeout_ms(R, j->defs[i]) / 1e3;
  /* In a shared process only the test that was running met the end (in a
   * worker that ended before its first test began: its first). */
  int met = j->cur >= 0 || !j->worker ? j->cur : 0;
  if (j->ntests > 1 && i != met) {
    x.shared_died = j->st[i].started ? 0 : j->worker ? 2 : 1;
    x.exited = 1;
    return x;
  }
  x.single = j->ntests == 1;
  x.timed_out = j->timed_out;
  x.kill_sent = j->kill_sent;
  x.term_late_s = j->term_late_ms / 1e3;
  x.interrupted = j->interrupted && !j->timed_out;
  x.stop_sig = R->stop_sig;
  x.outside = j->outside_sig;
  x.signaled = WIFSIGNALED(j->wstatus);
  x.sig = x.signaled ? WTERMSIG(j->wstatus) : 0;
  x.exited = WIFEXITED(j->wstatus);
  x.code = x.exited ? WEXITSTATUS(j->wstatus) : -1;
  return x;
}

/* logs/<suite>/<test>[.rN][.aN].log, relative to the run folder. */
static char *log_name(const krun__job *j) {
  if (j->worker) return kh_asprintf("logs/worker-%d.log", j->serial);
  if (j->ntests > 1) return kh_strdup("logs/shared-process.log");
  const krep_test *t = j->tests[0];
  kh_buf b = {0};
  kh_buf_addf(&b, "logs/%s", t->id);
  if (t->repeat > 1) kh_buf_addf(&b, ".r%d", t->repeat);
  if (t->attempt > 1) kh_buf_addf(&b, ".a%d", t->attempt);
  kh_buf_addf(&b, ".log");
  return b.data;
}

static void write_log(krun__run *R, const krun__job *j, const char *name) {
  char *path = kh_asprintf("%s/%s", R->o->out_dir, name);
  char *slash = strrchr(path, '/');
  *slash = '\0';
  /* Tests of one suite follow each other: make its folder once. */
  if (!R->log_dir || strcmp(R->log_dir, path) != 0) {
    kh_mkdir_p(path, 0755);
    free(R->log_dir);
    R->log_dir = kh_strdup(path);
  }
  *slash = '/';
  if (krun__log_write(&j->log, path) != 0 && !R->logs_failed++) R->logs_errno = errno;
  free(path);
}

/* Whom what the child left running is charged to: its test; in a worker
 * whose source stops it at a test's check, the test it stopped at (the
 * last begun, with a `worker_check` note), else none (the run). */
static krep_test *left_owner(const krun__job *j) {
  if (!j->worker) return j->ntests == 1 ? j->tests[0] : NULL;
  if (!krun__source(j->kind)->worker_stops) return NULL;
  int last = -1;
  for (int i = 0; i < j->ntests; i++)
    if (j->tests[i] && j->st[i].started && (last < 0 || j->st[i].pos > j->st[last].pos))
      last = i;
  if (last < 0) return NULL;
  int at = 0;
  kp_note n;
  for (const krep_rec *r; (r = krep_test_next(j->tests[last], "note", &at)) != NULL;)
    if (krep_rec_decode(r, &kp_rec_note, &n) == 0 && n.key && strcmp(n.key, "worker_check") == 0)
      return j->tests[last];
  return NULL;
}

void krun__job_finish(krun__run *R, krun__job *j) {
  double now = kh_now_ms();
  /* What it left running, wherever it went, found before anything is
   * killed (so each is described as it was), then killed. */
  krun__left left;
  krun__contain_left(R, j, &left);
  krun__contain_span(R, j);
  kill(-j->pid, SIGKILL);       /* whatever is left of its process group */
  krep_test *cur = krun__job_test(j);
  if (j->fd_res >= 0 && kp_reader_tail(j->rd, R->line) > 0 && cur) {
    free(j->partial);
    j->partial = kh_strdup(R->line);
  }
  /* A program that speaks no protocol: what it left, as records. */
  if (krun__source(j->kind)->finish) krun__source(j->kind)->finish(krun__job_view(R, j));
  /* A shared process's tests by the times its source knows. */
  for (int i = 0; j->ntests > 1 && i < j->ntests; i++)
    if (j->took_ms[i] >= 0 && j->st[i].ended) {
      j->tests[i]->wall_ms = krep_round_ms(j->took_ms[i]);
      j->tests[i]->ended_s = j->tests[i]->started_s + j->took_ms[i] / 1e3;
    }
  R->nrunning--;
  for (int i = 0; i < j->ndevs; i++) {
    krun_tokens_holder_remove(&R->tok, R->o->bi->dev[j->devs[i]].physical, j->pid);
    R->used[j->devs[i]] -= j->slots;
  }
  if (j->exec_errno) R->infra = 1;
  char *name = log_name(j);
  write_log(R, j, name);
  char *tail = krun__log_tail(&j->log);
  /* A shared process's leftovers belong to none of its tests alone; a
   * worker's, to the test its check found them after. */
  krep_test *owner = left_owner(j);
  for (int k = 0; k < left.n; k++) krep_add_proc(&R->rep, owner, &left.procs[k]);
  free(left.procs);
  for (int i = 0; i < j->ntests; i++) {
    krep_test *t = j->tests[i];
    krun__exit x = exit_info(R, j, i);
    krun__decide(&R->rep, t, &j->st[i], i == j->cur ? j->partial : NULL, &x,
                 R->s->leaks == KRUN_LEAKS_FAIL);
    /* Where the test is, when its runner said nothing of where it failed
     * (a crash, a timeout): its definition, from the registry. */
    if ((!t->file || !*t->file) && j->defs[i]->file && *j->defs[i]->file) {
      t->file = krep_str(&R->rep, j->defs[i]->file);
      t->line = j->defs[i]->line;
    }
    if (R->s->sanitize && j->ntests == 1) {
      char *cs_log = R->sanitizer ? sanitizer_log(R, j) : NULL;
      char *test_log = kh_asprintf("%s/%s", R->o->out_dir, name);
      krun__sanitize_findings(R, t, cs_log, test_log);
      free(cs_log), free(test_log);
    }
    /* A runner that exits 3 before its test started could not set up
     * (its slots, its options): an infrastructure error. */
    if (x.exited && x.code == 3 && !j->st[i].started) R->infra = 1;
    /* One that could not take its slots because the set went away. */
    if (R->use_tokens && j->ntests == 1 && j->ndevs && !j->token_seen)
      krun__tokens_blame(R, t);
    /* `ended` is when the child was reaped, not when its pipes drained:
     * its slots came back at its exit, and overlap checks read this. */
    double end_s = j->exit_wall_s > 0 ? j->exit_wall_s : kh_wall_s();
    if (j->ntests == 1) {
      /* A warm child's start-up overlapped other tests: the test's own
       * time runs from its assignment. */
      t->wall_ms = krep_round_ms(now - (j->warm ? j->assign_ms : j->spawn_ms));
      t->ended_s = end_s;
    } else if (!j->st[i].ended) {
      t->ended_s = end_s;
    }
    if (j->warm) {
      t->warm = 1;
      if (j->ready) t->startup_ms = krep_round_ms(j->ready_ms - j->spawn_ms);
      t->ready_wait_ms = krep_round_ms(j->ready && j->ready_ms < j->assign_ms
                                           ? j->assign_ms - j->ready_ms : 0);
    }
    /* How it ran: its worker's number is the one in the log's name. */
    t->ran = j->worker ? KREP_RAN_WORKER : j->ntests > 1 ? KREP_RAN_SHARED : KREP_RAN_ALONE;
    t->worker = j->worker ? j->serial : 0;
    t->position = j->ntests > 1 ? j->st[i].pos : 0;
    t->log_path = krep_str(&R->rep, name);
    t->log_tail = krep_str(&R->rep, tail);
    t->log_bytes = j->log.total;
    t->log_dropped = krun__log_dropped(&j->log);
    j->keep_tmp |= krep_outcome_failed(t->outcome);
    /* The kept folder, named on the test: it may be large, and it is the
     * evidence. */
    if (krep_outcome_failed(t->outcome) && j->tmpdir) {
      kp_field f[] = {{"key", "kept_test_tmpdir"}, {"value", j->tmpdir}};
      krep_test_keep(&R->rep, t, "note", f, 2);
    }
  }
  free(tail), free(name);
}

void krun__job_end(krun__run *R, krun__job *j) {
  if (!j->keep_tmp && j->tmpdir && kh_rm_rf(j->tmpdir) != 0) {
    krun__console_note(&R->con, "kiln: warning: %s (TEST_TMPDIR of %s) could not be "
                       "removed: %s; it is left in the run folder", j->tmpdir,
                       j->ntests ? j->tests[0]->id : "a test", strerror(errno));
    if (j->ntests == 1) {
      kp_field f[] = {{"key", "test_tmpdir_left"}, {"value", j->tmpdir}};
      krep_test_keep(&R->rep, j->tests[0], "note", f, 2);
    }
  }
  krun__job_clear(j);
}
