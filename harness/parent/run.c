/* `kiln run`: the scheduler and the event loop. Each test gets a forked
 * child that takes its device slots, narrows its environment and execs the
 * runner (libuv's test-runner pattern: a clean process image per test, and
 * room for a --wrap command). The parent is single-threaded, so the child
 * may use ordinary libc between fork and exec. A GPU test that takes one
 * slot may instead go to a warm child: one started (runtime, context)
 * before its test was known, which reads the test from a pipe on stdin.
 */
#include "run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wordexp.h>

#include "console.h"
#include "kiln-config.h"
#include "protocol.h"
#include "report.h"
#include "shard.h"
#include "tokens.h"

/* A child's output is kept as its first 256 KiB and its last 64 KiB. */
#define KH__LOG_HEAD (256u << 10)
#define KH__LOG_TAIL (64u << 10)
/* Lines of log tail carried in the report. */
#define KH__TAIL_LINES 40
#define KH__TAIL_BYTES 4096
/* After a child exits, its pipes get this long to reach end of file before
 * the process group is killed: a grandchild holding them must not hang us. */
#define KH__DRAIN_MS 1000
/* Bytes read from one child's output per wake-up, so a flood cannot starve
 * the others. */
#define KH__READ_BUDGET (1u << 20)
/* Warm children that die before their assignment, in a row, after which
 * the run starts the rest of its tests cold (where a broken runner gets
 * reported as an error instead of being respawned for ever). */
#define KH__WARM_DEATHS 3
/* What a warm child's holder file says until its test is assigned. */
#define KH__WARM_HOLDER "(warm, no test yet)"

/* ---- State ----------------------------------------------------------------- */

typedef struct kh__item {
  int test;
  int repeat;
  int attempt;
} kh__item;

typedef struct kh__log {
  char *head;
  size_t head_len;
  char *ring;
  size_t ring_pos, ring_len;
  long long total;
} kh__log;

typedef struct kh__job {
  int active;
  pid_t pid;
  int fd_res, fd_out, fd_exec;
  kp_reader *rd;
  kh__log log;
  kh_result **recs;         /* one, or all of them for --isolation none */
  const kh_test **tests;
  int nrecs, cur;
  int dev;                  /* index into bi->dev, -1 for none */
  int slots;
  double spawn_ms, test_ms, deadline, kill_at, drain_until;
  double exit_wall_s;       /* when it was reaped: its slots were back */
  int exited, wstatus;
  int timed_out, term_sent, kill_sent, interrupted;
  int exec_stage, exec_errno;
  char *tmpdir;
  /* Warm children: spawned with no test, which comes on fd_in. */
  int warm;                 /* spawned warm (--warm) */
  int assigned;             /* its test was written to it */
  int ready;                /* its `ready` record came */
  int retiring;             /* not needed: its stdin was closed */
  int token_seen;           /* its runner reported taking the slot */
  int fd_in;                /* write end of its stdin, until assignment */
  double ready_ms, assign_ms;
} kh__job;

typedef struct kh__run {
  const kh_run_opts *o;
  const kh_settings *s;
  kh_tokens tok;
  int use_tokens;
  int cap[KH_MAX_DEVICES], used[KH_MAX_DEVICES];
  kh__item *queue;
  int qhead, qlen, qcap;
  kh__job *jobs;
  int maxjobs;              /* the job table: running and warm children */
  int maxrun;               /* tests at once (--jobs) */
  int nrunning;
  /* The warm pool: children spawned warm and not yet assigned. */
  int warm_on;
  int warm_max[KH_MAX_DEVICES], warm_n[KH_MAX_DEVICES];
  int nwarm;                /* sum of warm_n */
  int qwarm;                /* queued runs a warm child could take */
  int warm_deaths;          /* in a row, before assignment */
  char **wrap;
  int nwrap;
  kh_report rep;
  int journal;
  int sigfd;
  int stopping, infra;
  kh_console con;
  char *line;               /* KP_MAX_LINE scratch */
  int seq;
} kh__run;

/* ---- Devices and slots ------------------------------------------------------ */

static int kh__jobs(const kh_settings *s) {
  if (s->jobs > 0) return s->jobs;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

void kh_device_caps(const kh_settings *s, const kh_backend_info *bi,
                    int caps[KH_MAX_DEVICES]) {
  int dflt = s->slots > 0 ? s->slots
             : bi->backend == KH_BACKEND_HOST ? kh__jobs(s) : 2;
  for (int d = 0; d < bi->ndevices; d++) {
    caps[d] = s->ndevices ? 0 : dflt;  /* a device list leaves others out */
    for (int i = 0; i < s->ndevices; i++)
      if (s->devices[i].id == bi->dev[d].physical)
        caps[d] = s->devices[i].slots > 0 ? s->devices[i].slots : dflt;
  }
}

static int kh__want(const kh_test *t, int cap) {
  return t->slots < 0 ? cap : (t->slots == 0 ? 1 : t->slots);
}

/* The device with the fewest of our own children that can take the test
 * now; -1 to wait, -2 when no device could ever take it. */
static int kh__pick(kh__run *R, const kh_test *t) {
  int best = -1, possible = 0;
  for (int d = 0; d < R->o->bi->ndevices; d++) {
    int k = kh__want(t, R->cap[d]);
    if (R->cap[d] <= 0 || k > R->cap[d]) continue;
    possible = 1;
    if (R->used[d] + k > R->cap[d]) continue;
    if (best < 0 || R->used[d] < R->used[best]) best = d;
  }
  return possible ? best : -2;
}

/* ---- Logs --------------------------------------------------------------------- */

static void kh__log_add(kh__log *l, const char *d, size_t n) {
  l->total += (long long)n;
  if (l->head_len < KH__LOG_HEAD) {
    if (!l->head) l->head = kh_xmalloc(KH__LOG_HEAD);
    size_t take = n < KH__LOG_HEAD - l->head_len ? n : KH__LOG_HEAD - l->head_len;
    memcpy(l->head + l->head_len, d, take);
    l->head_len += take;
    d += take, n -= take;
  }
  if (n == 0) return;
  if (!l->ring) l->ring = kh_xmalloc(KH__LOG_TAIL);
  if (n > KH__LOG_TAIL) d += n - KH__LOG_TAIL, n = KH__LOG_TAIL;
  while (n > 0) {
    size_t take = KH__LOG_TAIL - l->ring_pos < n ? KH__LOG_TAIL - l->ring_pos : n;
    memcpy(l->ring + l->ring_pos, d, take);
    l->ring_pos = (l->ring_pos + take) % KH__LOG_TAIL;
    l->ring_len = l->ring_len + take > KH__LOG_TAIL ? KH__LOG_TAIL : l->ring_len + take;
    d += take, n -= take;
  }
}

/* The ring in order, NUL-terminated. */
static char *kh__log_ring(const kh__log *l) {
  char *out = kh_xmalloc(l->ring_len + 1);
  size_t start = (l->ring_pos + KH__LOG_TAIL - l->ring_len) % KH__LOG_TAIL;
  size_t first = KH__LOG_TAIL - start < l->ring_len ? KH__LOG_TAIL - start : l->ring_len;
  if (l->ring_len) {
    memcpy(out, l->ring + start, first);
    memcpy(out + first, l->ring, l->ring_len - first);
  }
  out[l->ring_len] = '\0';
  return out;
}

static long long kh__log_dropped(const kh__log *l) {
  return l->total - (long long)l->head_len - (long long)l->ring_len;
}

static char *kh__log_tail(const kh__log *l) {
  char *all = l->ring_len ? kh__log_ring(l)
                          : kh_strndup(l->head ? l->head : "", l->head_len);
  size_t len = strlen(all);     /* output holding NUL bytes stops there */
  const char *p = all + len;
  int lines = 0;
  if (p > all && p[-1] == '\n') p--;
  while (p > all && (size_t)(all + len - p) < KH__TAIL_BYTES) {
    if (p[-1] == '\n' && ++lines == KH__TAIL_LINES) break;
    p--;
  }
  char *tail = kh_strdup(p);
  free(all);
  kh_text_clean(tail);
  return tail;
}

static void kh__log_write(const kh__log *l, const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (l->head_len) (void)kh_write_all(fd, l->head, l->head_len);
  long long dropped = kh__log_dropped(l);
  if (dropped > 0) {
    char mark[128];
    int n = snprintf(mark, sizeof mark, "\n[kiln: %lld bytes of output "
                                        "dropped here]\n", dropped);
    (void)kh_write_all(fd, mark, (size_t)n);
  }
  if (l->ring_len) {
    char *ring = kh__log_ring(l);
    (void)kh_write_all(fd, ring, l->ring_len);
    free(ring);
  }
  close(fd);
}

/* logs/<suite>/<test>[.rN][.aN].log, relative to the run folder. */
static char *kh__log_name(const kh__job *j) {
  if (j->nrecs > 1) return kh_strdup("logs/shared-process.log");
  const kh_result *r = j->recs[0];
  kh_buf b = {0};
  kh_buf_addf(&b, "logs/%s", r->id);
  if (r->repeat > 1) kh_buf_addf(&b, ".r%d", r->repeat);
  if (r->attempt > 1) kh_buf_addf(&b, ".a%d", r->attempt);
  kh_buf_addf(&b, ".log");
  return b.data;
}

/* ---- The child, between fork and exec ----------------------------------------- */

typedef struct kh__exec_report {
  int stage;                /* 1 tokens, 2 exec */
  int err;
} kh__exec_report;

static void kh__child_fail(int stage) {
  kh__exec_report rep = {stage, errno};
  (void)kh_write_all(4, &rep, sizeof rep);
  _exit(127);
}

/* stdin from /dev/null (a warm child: the assignment pipe), stdout+stderr
 * into the log pipe, records on 3, the exec-error pipe on 4 (close-on-exec),
 * nothing else. */
static void kh__child_fds(int in_r, int res_w, int out_w, int exec_w) {
  int res = fcntl(res_w, F_DUPFD, 10), out = fcntl(out_w, F_DUPFD, 10);
  int ex = fcntl(exec_w, F_DUPFD_CLOEXEC, 10);
  int null = in_r >= 0 ? fcntl(in_r, F_DUPFD, 10) : open("/dev/null", O_RDONLY);
  if (res < 0 || out < 0 || ex < 0 || null < 0) _exit(127);
  dup2(null, 0);
  dup2(out, 1);
  dup2(out, 2);
  dup2(res, 3);
  dup3(ex, 4, O_CLOEXEC);
  if (close_range(5, ~0u, 0) != 0)
    for (int fd = 5; fd < 1024; fd++) close(fd);
}

static void kh__child_env(kh__run *R, const kh__job *j) {
  const kh_backend_info *bi = R->o->bi;
  if (j->warm) {
    /* The runner sets these from its assignment. KILN_WARM marks the
     * process as kiln's until then (tests look for strays by it). */
    unsetenv("KILN_TEST");
    unsetenv("TEST_TMPDIR");
    setenv("KILN_WARM", "1", 1);
  } else {
    setenv("KILN_TEST", j->recs[0]->id, 1);
    setenv("TEST_TMPDIR", j->tmpdir, 1);
    unsetenv("KILN_WARM");
  }
  setenv("KILN_RUN_DIR", R->o->out_dir, 1);
  if (j->dev < 0) {
    unsetenv("KILN_DEVICE");
    return;
  }
  char num[16];
  snprintf(num, sizeof num, "%d", bi->dev[j->dev].physical);
  setenv("KILN_DEVICE", num, 1);
  kh_visible_narrow(bi, j->dev);
}

static void kh__child(kh__run *R, kh__job *j, char **argv, pid_t parent,
                      int in_r, int res_w, int out_w, int exec_w) {
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE, SIGQUIT};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  setpgid(0, 0);
  /* If kiln dies (even by SIGKILL), so does the runner, and its slots
   * return through SEM_UNDO. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  kh__child_fds(in_r, res_w, out_w, exec_w);
  if (j->warm) {
    /* No slot yet: the runner takes it when its test is assigned. */
    if (R->use_tokens && j->dev >= 0)
      kh_tokens_holder_add(&R->tok, R->o->bi->dev[j->dev].physical, getpid(),
                           KH__WARM_HOLDER, 0);
    kh__child_env(R, j);
    execvp(argv[0], argv);
    kh__child_fail(2);
  }
  double waited = 0;
  if (R->use_tokens && j->dev >= 0) {
    int phys = R->o->bi->dev[j->dev].physical;
    double t0 = kh_now_ms();
    if (kh_tokens_take(&R->tok, phys, j->slots) != 0) kh__child_fail(1);
    waited = kh_now_ms() - t0;
    kh_tokens_holder_add(&R->tok, phys, getpid(), j->recs[0]->id, j->slots);
  }
  kp_record_out *rec = kh_xmalloc(sizeof *rec);
  kp_begin(rec, "phase");
  kp_add_str(rec, "name", "token_wait");
  kp_add_double(rec, "ms", waited);
  (void)kp_send(rec, 3);
  kh__child_env(R, j);
  execvp(argv[0], argv);
  kh__child_fail(2);
}

/* ---- Spawning ------------------------------------------------------------------- */

static char **kh__argv(kh__run *R, const kh__job *j) {
  const kh_settings *s = R->s;
  int max = R->nwrap + 16 + 2 * s->ntol + j->nrecs;
  char **argv = kh_xcalloc((size_t)max, sizeof *argv);
  int n = 0;
  for (int i = 0; i < R->nwrap; i++) argv[n++] = kh_strdup(R->wrap[i]);
  argv[n++] = kh_strdup(R->o->bi->runner);
  argv[n++] = kh_strdup("--result-fd");
  argv[n++] = kh_strdup("3");
  if (s->poison) argv[n++] = kh_strdup("--poison");
  if (kh_setting_is_set(s, "seed")) argv[n++] = kh_asprintf("--seed=%llu", s->seed);
  if (s->cap > 0) argv[n++] = kh_asprintf("--cap=%g", s->cap);
  for (int i = 0; i < s->ntol; i++)
    argv[n++] = kh_asprintf("--tolerance=%s=%.17g:%.17g", s->tol[i].match,
                             s->tol[i].atol, s->tol[i].rtol);
  if (j->warm) {
    argv[n++] = kh_strdup("--warm");
    return argv;
  }
  argv[n++] = kh_strdup("--");
  for (int i = 0; i < j->nrecs; i++) argv[n++] = kh_strdup(j->recs[i]->id);
  return argv;
}

static void kh__argv_free(char **argv) {
  for (char **a = argv; *a; a++) free(*a);
  free(argv);
}

static void kh__verbose_argv(kh__run *R, char **argv) {
  if (!R->o->verbose) return;
  kh_buf b = {0};
  for (char **a = argv; *a; a++) kh_buf_addf(&b, "%s%s", a == argv ? "" : " ", *a);
  kh_console_note(&R->con, "exec: %s", b.data);
  kh_buf_free(&b);
}

static int kh__pipe(int p[2]) { return pipe2(p, O_CLOEXEC); }

static void kh__nonblock(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void kh__close_pair(int p[2]) {
  if (p[0] >= 0) close(p[0]);
  if (p[1] >= 0) close(p[1]);
}

static int kh__spawn(kh__run *R, kh__job *j) {
  int res[2], out[2], ex[2], in[2] = {-1, -1};
  if (kh__pipe(res) != 0) return -1;
  if (kh__pipe(out) != 0) return close(res[0]), close(res[1]), -1;
  if (kh__pipe(ex) != 0 || (j->warm && kh__pipe(in) != 0)) {
    kh__close_pair(res), kh__close_pair(out), kh__close_pair(ex);
    return -1;
  }
  if (!j->warm) {
    j->tmpdir = kh_asprintf("%s/tmp/%d", R->o->out_dir, ++R->seq);
    kh_mkdir_p(j->tmpdir, 0700);
  }
  char **argv = kh__argv(R, j);
  kh__verbose_argv(R, argv);
  fflush(NULL);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) kh__child(R, j, argv, parent, in[0], res[1], out[1], ex[1]);
  kh__argv_free(argv);
  close(res[1]), close(out[1]), close(ex[1]);
  if (in[0] >= 0) close(in[0]);
  if (pid < 0) {
    close(res[0]), close(out[0]), close(ex[0]);
    if (in[1] >= 0) close(in[1]);
    return -1;
  }
  setpgid(pid, pid);          /* also done by the child: no race either way */
  j->pid = pid;
  j->fd_res = res[0], j->fd_out = out[0], j->fd_exec = ex[0], j->fd_in = in[1];
  kh__nonblock(j->fd_res), kh__nonblock(j->fd_out), kh__nonblock(j->fd_exec);
  j->rd = kh_xmalloc(sizeof *j->rd);
  kp_reader_init(j->rd);
  j->spawn_ms = kh_now_ms();
  j->active = 1;
  if (j->warm) return 0;      /* no test, no slots yet */
  R->nrunning++;
  for (int i = 0; i < j->nrecs; i++) {
    j->recs[i]->device = j->dev >= 0 ? R->o->bi->dev[j->dev].physical : -1;
    j->recs[i]->slots = j->slots;
    j->recs[i]->start_s = kh_wall_s();
  }
  if (j->dev >= 0) R->used[j->dev] += j->slots;
  return 0;
}

/* ---- Finishing a test run --------------------------------------------------------- */

static void kh__publish(kh__run *R, kh_result *r) {
  kh_journal_result(R->journal, r);
  kh_console_result(&R->con, r);
}

static kh_result *kh__new_result(kh__run *R, const kh__item *it) {
  const kh_test *t = &R->o->reg->tests[it->test];
  kh_result *r = kh_result_new(t->id, t->suite, t->tags);
  r->repeat = it->repeat;
  r->attempt = it->attempt;
  r->seq = R->rep.nresults;
  kh_report_add(&R->rep, r);
  return r;
}

/* A result decided without a child (no device, too many slots). */
static void kh__immediate(kh__run *R, const kh__item *it, int outcome,
                          const char *msg) {
  kh_result *r = kh__new_result(R, it);
  r->outcome = outcome;
  kh_result_set(&r->message, msg);
  r->start_s = r->end_s = kh_wall_s();
  kh__publish(R, r);
}

/* A run a warm child can take: a GPU test of one slot, while warm
 * children are in use at all. */
static int kh__warm_fits(const kh_test *t) {
  return t->needs_gpu && (t->slots == 0 || t->slots == 1);
}

static kh__item kh__queue_take(kh__run *R) {
  kh__item it = R->queue[R->qhead++];
  R->qwarm -= kh__warm_fits(&R->o->reg->tests[it.test]);
  return it;
}

static void kh__queue_front(kh__run *R, kh__item it) {
  R->qwarm += kh__warm_fits(&R->o->reg->tests[it.test]);
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

static int kh__test_index(kh__run *R, const kh_result *r) {
  for (int i = 0; i < R->o->reg->n; i++)
    if (strcmp(R->o->reg->tests[i].id, r->id) == 0) return i;
  return -1;
}

/* Retries and flakiness: a failed attempt with retries left is marked
 * retried and queued again; a pass after a failed attempt is flaky. */
static void kh__retry_or_flaky(kh__run *R, kh_result *r) {
  if (r->outcome == KH_PASS && r->attempt > 1) {
    const kh_result *prev = NULL;
    for (int i = 0; i < R->rep.nresults; i++) {
      const kh_result *p = R->rep.results[i];
      if (strcmp(p->id, r->id) == 0 && p->repeat == r->repeat &&
          p->attempt == r->attempt - 1)
        prev = p;
    }
    char *msg = kh_asprintf("passed on attempt %d after %s on attempt %d: %s",
                             r->attempt, prev ? kh_outcome_name(prev->outcome) : "?",
                             r->attempt - 1,
                             prev && prev->message ? prev->message : "");
    r->outcome = KH_FLAKY;
    free(r->message);
    r->message = msg;
    return;
  }
  if (!kh_outcome_retryable(r->outcome) || r->attempt > R->s->retries ||
      R->stopping || R->s->isolation == KH_ISO_NONE)
    return;
  r->retried = 1;
  kh__queue_front(R, (kh__item){kh__test_index(R, r), r->repeat, r->attempt + 1});
}

static kh_exit_info kh__exit_info(kh__run *R, const kh__job *j, int i) {
  kh_exit_info x = {0};
  x.runner = R->nwrap ? R->wrap[0] : R->o->bi->runner;
  x.exec_stage = j->exec_stage;
  x.exec_errno = j->exec_errno;
  x.grace_s = R->s->grace_s;
  const kh_test *t = j->tests[i];
  x.timeout_s = t->timeout_s > 0 ? t->timeout_s : R->s->timeout_s;
  /* In a shared process only the test that was running met the end. */
  int current = j->nrecs == 1 || i == j->cur;
  if (!current) {
    x.shared_died = !j->recs[i]->started;
    x.exited = 1;
    return x;
  }
  x.single = j->nrecs == 1;
  x.timed_out = j->timed_out;
  x.kill_sent = j->kill_sent;
  x.interrupted = j->interrupted && !j->timed_out;
  x.signaled = WIFSIGNALED(j->wstatus);
  x.sig = x.signaled ? WTERMSIG(j->wstatus) : 0;
  x.exited = WIFEXITED(j->wstatus);
  x.code = x.exited ? WEXITSTATUS(j->wstatus) : -1;
  return x;
}

/* The result the child's records go to; NULL for a warm child with no
 * test yet. */
static kh_result *kh__job_rec(const kh__job *j) {
  return j->recs[j->cur >= 0 ? j->cur : 0];
}

static void kh__close(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void kh__job_clear(kh__job *j) {
  free(j->log.head), free(j->log.ring), free(j->rd), free(j->tmpdir);
  free(j->recs), free(j->tests);
  memset(j, 0, sizeof *j);
  j->fd_res = j->fd_out = j->fd_exec = j->fd_in = -1;
}

/* A warm child that ended before it was given a test: no result. Unless
 * kiln retired it or is stopping, that is a failure of the warm path;
 * enough of them in a row and the run goes on cold. */
static void kh__warm_gone(kh__run *R, kh__job *j) {
  kill(-j->pid, SIGKILL);
  kh__close(&j->fd_res), kh__close(&j->fd_out), kh__close(&j->fd_exec);
  kh__close(&j->fd_in);
  if (j->dev >= 0)
    kh_tokens_holder_remove(&R->tok, R->o->bi->dev[j->dev].physical, j->pid);
  if (!j->retiring) {
    R->warm_n[j->dev]--, R->nwarm--;
    if (!R->stopping) {
      char how[64];
      if (WIFSIGNALED(j->wstatus)) kh_signal_name(WTERMSIG(j->wstatus), how, sizeof how);
      else snprintf(how, sizeof how, "exit %d", WEXITSTATUS(j->wstatus));
      char *tail = kh__log_tail(&j->log);
      if (R->o->verbose)
        kh_console_note(&R->con, "kiln: warm child %ld (device %d) ended "
                        "before its assignment (%s%s); output: %s",
                        (long)j->pid, R->o->bi->dev[j->dev].physical, how,
                        j->exec_stage ? ", exec failed" : "",
                        *tail ? tail : "(none)");
      free(tail);
      if (++R->warm_deaths >= KH__WARM_DEATHS && R->warm_on) {
        R->warm_on = 0;
        kh_console_note(&R->con, "kiln: warning: %d warm children in a row "
                        "ended before their assignment; starting the rest "
                        "of the tests cold (-v says how they ended)",
                        KH__WARM_DEATHS);
      }
    }
  }
  kh__job_clear(j);
}

static void kh__job_finish(kh__run *R, kh__job *j) {
  if (j->warm && !j->assigned) {
    kh__warm_gone(R, j);
    return;
  }
  double now = kh_now_ms();
  kill(-j->pid, SIGKILL);       /* whatever is left of its process group */
  if (j->fd_res >= 0 && kp_reader_tail(j->rd, R->line) > 0)
    kh_result_set(&kh__job_rec(j)->partial, R->line);
  kh__close(&j->fd_res), kh__close(&j->fd_out), kh__close(&j->fd_exec);
  kh__close(&j->fd_in);
  R->nrunning--;
  if (j->dev >= 0) {
    kh_tokens_holder_remove(&R->tok, R->o->bi->dev[j->dev].physical, j->pid);
    R->used[j->dev] -= j->slots;
  }
  if (j->exec_stage) R->infra = 1;
  char *log_name = kh__log_name(j);
  char *log_path = kh_asprintf("%s/%s", R->o->out_dir, log_name);
  char *dir = kh_strdup(log_path);
  *strrchr(dir, '/') = '\0';
  kh_mkdir_p(dir, 0755);
  kh__log_write(&j->log, log_path);
  char *tail = kh__log_tail(&j->log);
  int keep_tmp = 0;
  for (int i = 0; i < j->nrecs; i++) {
    kh_result *r = j->recs[i];
    kh_exit_info x = kh__exit_info(R, j, i);
    kh_result_decide(r, &x, R->s->leaks == KH_LEAKS_FAIL);
    /* `ended` is when the child was reaped, not when its pipes drained:
     * its slots came back at its exit, and overlap checks read this. */
    double end_s = j->exit_wall_s > 0 ? j->exit_wall_s : kh_wall_s();
    if (j->nrecs == 1) {
      /* A warm child's start-up overlapped other tests: the test's own
       * time runs from its assignment. */
      r->wall_ms = now - (j->warm ? j->assign_ms : j->spawn_ms);
      r->end_s = end_s;
    }
    if (j->warm) {
      r->warm = 1;
      r->startup_ms = j->ready ? j->ready_ms - j->spawn_ms : -1;
      r->ready_wait_ms = j->ready && j->ready_ms < j->assign_ms
                             ? j->assign_ms - j->ready_ms : 0;
    } else if (!r->ended) {
      r->end_s = end_s;
    }
    kh_result_set(&r->log_path, log_name);
    kh_result_set(&r->log_tail, tail);
    r->log_bytes = j->log.total;
    r->log_dropped = kh__log_dropped(&j->log);
    kh__retry_or_flaky(R, r);
    keep_tmp |= kh_outcome_failed(r->outcome);
    kh__publish(R, r);
  }
  if (!keep_tmp) kh_rm_rf(j->tmpdir);
  free(tail), free(dir), free(log_path), free(log_name);
  kh__job_clear(j);
}

/* ---- Reading from children -------------------------------------------------------- */

static double kh__timeout_ms(kh__run *R, const kh_test *t) {
  return 1e3 * (t->timeout_s > 0 ? t->timeout_s : R->s->timeout_s);
}

/* --isolation none: a `test` record moves on to the next result with
 * that id. */
static void kh__route_test(kh__run *R, kh__job *j, const char *line) {
  char *copy = kh_strdup(line);
  kp_record rec;
  const char *id = kp_parse(copy, &rec, NULL) == 0 ? kp_get(&rec, "id") : NULL;
  for (int i = j->cur + 1; id && i < j->nrecs; i++) {
    if (j->recs[i]->started || strcmp(j->recs[i]->id, id) != 0) continue;
    j->cur = i;
    j->test_ms = kh_now_ms();
    j->recs[i]->start_s = kh_wall_s();
    j->deadline = j->test_ms + kh__timeout_ms(R, j->tests[i]);
    break;
  }
  free(copy);
}

/* A warm child's first `ready` record is the parent's, not the test's: it
 * says the child has started. Anything else before its assignment breaks
 * the protocol, and the child is killed (and not used). Returns 1 when the
 * line was taken here. */
static int kh__warm_line(kh__run *R, kh__job *j, const char *line) {
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
    kh_console_note(&R->con, "kiln: warm child %ld sent '%s' before its "
                    "assignment; killing it", (long)j->pid, excerpt);
  }
  kill(-j->pid, SIGKILL);
  kh__close(&j->fd_in);     /* and never assign it a test */
  return 1;
}

static void kh__job_line(kh__run *R, kh__job *j, const char *line) {
  int shared = j->nrecs > 1;
  if (j->warm && kh__warm_line(R, j, line)) return;
  if (shared && strncmp(line, "test ", 5) == 0) kh__route_test(R, j, line);
  kh_result *r = kh__job_rec(j);
  int was_ended = r->ended;
  kh_result_line(r, line);
  if (j->warm && r->started) R->warm_deaths = 0;   /* the warm path works */
  if (!shared && (j->deadline == 0 || (j->warm && !j->token_seen)) &&
      strncmp(line, "phase name=token_wait", 21) == 0) {
    /* The test starts, and its clock runs, once it holds its slots. A
     * warm child's clock ran from its assignment; it moves on by the time
     * the runner says it waited for the slot (the record may be read
     * late). */
    j->token_seen = 1;
    if (j->warm) {
      char *copy = kh_strdup(line);
      kp_record rec;
      double ms = 0;
      if (kp_parse(copy, &rec, NULL) != 0 || kp_get_double(&rec, "ms", &ms) != 0 ||
          !(ms >= 0))
        ms = 0;
      free(copy);
      j->deadline = j->assign_ms + ms + kh__timeout_ms(R, j->tests[0]);
      r->start_s += ms / 1e3;
    } else {
      j->deadline = kh_now_ms() + kh__timeout_ms(R, j->tests[0]);
      r->start_s = kh_wall_s();
    }
  }
  if (shared && !was_ended && r->ended) {
    r->end_s = kh_wall_s();
    r->wall_ms = kh_now_ms() - j->test_ms;
    /* Between tests: closing the shared context should be quick. */
    j->deadline = kh_now_ms() + 60e3;
  }
}

static void kh__read_results(kh__run *R, kh__job *j) {
  char chunk[65536];
  for (int rounds = 0; rounds < 16; rounds++) {
    ssize_t n = kh_read(j->fd_res, chunk, sizeof chunk);
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      if (kp_reader_tail(j->rd, R->line) > 0 && kh__job_rec(j))
        kh_result_set(&kh__job_rec(j)->partial, R->line);
      kh__close(&j->fd_res);
      return;
    }
    for (size_t off = 0; off < (size_t)n;) {
      off += kp_reader_feed(j->rd, chunk + off, (size_t)n - off);
      int k;
      while ((k = kp_reader_next(j->rd, R->line)) != 0) {
        if (k > 0) kh__job_line(R, j, R->line);
        else if (kh__job_rec(j))
          kh_result_protocol_error(kh__job_rec(j), "record longer than the "
                                   "protocol's 65536-byte limit", NULL);
        else kill(-j->pid, SIGKILL);   /* a warm child, before its test */
      }
    }
  }
}

static void kh__read_output(kh__job *j) {
  char chunk[65536];
  for (size_t got = 0; got < KH__READ_BUDGET;) {
    ssize_t n = kh_read(j->fd_out, chunk, sizeof chunk);
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      kh__close(&j->fd_out);
      return;
    }
    kh__log_add(&j->log, chunk, (size_t)n);
    got += (size_t)n;
  }
}

static void kh__read_exec(kh__job *j) {
  kh__exec_report rep;
  ssize_t n = kh_read(j->fd_exec, &rep, sizeof rep);
  if (n < 0 && errno == EAGAIN) return;
  if (n == (ssize_t)sizeof rep) {
    j->exec_stage = rep.stage;
    j->exec_errno = rep.err;
  }
  kh__close(&j->fd_exec);
}

/* ---- Signals, timers, reaping ------------------------------------------------------ */

static void kh__stop_all(kh__run *R, int sig) {
  double now = kh_now_ms();
  for (int i = 0; i < R->maxjobs; i++) {
    kh__job *j = &R->jobs[i];
    if (!j->active || j->exited) continue;
    j->interrupted = 1;
    if (sig == SIGKILL || !j->term_sent) kill(-j->pid, sig);
    if (sig == SIGKILL) j->kill_sent = 1;
    if (!j->term_sent) j->term_sent = 1, j->kill_at = now + R->s->grace_s * 1e3;
  }
}

static void kh__signals(kh__run *R) {
  struct signalfd_siginfo si;
  while (kh_read(R->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
    if (si.ssi_signo == SIGCHLD) continue;       /* reaped below */
    if (!R->stopping) {
      R->stopping = 1;
      R->rep.interrupted = 1;
      char name[32];
      kh_signal_name((int)si.ssi_signo, name, sizeof name);
      kh_console_note(&R->con, "kiln: %s: stopping; no new tests start "
                      "(again to kill at once)", name);
      kh__stop_all(R, SIGTERM);
    } else {
      kh__stop_all(R, SIGKILL);
    }
  }
}

static void kh__timers(kh__run *R, double now) {
  for (int i = 0; i < R->maxjobs; i++) {
    kh__job *j = &R->jobs[i];
    if (!j->active || j->exited) continue;
    if (j->deadline > 0 && now >= j->deadline && !j->term_sent) {
      kill(-j->pid, SIGTERM);
      j->timed_out = j->term_sent = 1;
      j->kill_at = now + R->s->grace_s * 1e3;
    }
    if (j->kill_at > 0 && now >= j->kill_at && !j->kill_sent) {
      kill(-j->pid, SIGKILL);
      j->kill_sent = 1;
    }
  }
}

static void kh__reap(kh__run *R) {
  for (int i = 0; i < R->maxjobs; i++) {
    kh__job *j = &R->jobs[i];
    if (!j->active || j->exited) continue;
    pid_t p;
    do p = waitpid(j->pid, &j->wstatus, WNOHANG);
    while (p < 0 && errno == EINTR);
    if (p != j->pid) continue;
    j->exited = 1;
    j->exit_wall_s = kh_wall_s();
    j->drain_until = kh_now_ms() + KH__DRAIN_MS;
  }
}

static void kh__finish_ready(kh__run *R, double now) {
  for (int i = 0; i < R->maxjobs; i++) {
    kh__job *j = &R->jobs[i];
    if (!j->active || !j->exited) continue;
    int drained = j->fd_res < 0 && j->fd_out < 0 && j->fd_exec < 0;
    if (drained || now >= j->drain_until) kh__job_finish(R, j);
  }
}

/* ---- Starting tests ------------------------------------------------------------------ */

static kh__job *kh__free_job(kh__run *R) {
  for (int i = 0; i < R->maxjobs; i++)
    if (!R->jobs[i].active) return &R->jobs[i];
  return NULL;
}

static void kh__job_alloc(kh__job *j, int n) {
  memset(j, 0, sizeof *j);
  j->fd_res = j->fd_out = j->fd_exec = j->fd_in = -1;
  j->recs = kh_xcalloc((size_t)n, sizeof *j->recs);
  j->tests = kh_xcalloc((size_t)n, sizeof *j->tests);
  j->nrecs = n;
  j->cur = n == 1 ? 0 : -1;
}

static void kh__spawn_failed(kh__run *R, kh__job *j) {
  char msg[256];
  snprintf(msg, sizeof msg, "could not start a child: %s", strerror(errno));
  for (int i = 0; i < j->nrecs; i++) {
    j->recs[i]->outcome = KH_ERROR;
    kh_result_set(&j->recs[i]->message, msg);
    kh__publish(R, j->recs[i]);
  }
  R->infra = 1;
  free(j->recs), free(j->tests), free(j->tmpdir);
  memset(j, 0, sizeof *j);
}

/* ---- Warm children ---------------------------------------------------------------- */

/* Spawns warm children into the pool while queued runs could use them:
 * on each device at most warm_max, and never more in all than queued runs
 * a warm child can take, so none starts idle at the end of a run. They
 * hold no slot until assigned, so they run alongside the running tests:
 * that is the overlap. */
static void kh__warm_fill(kh__run *R) {
  while (R->warm_on && !R->stopping && R->nwarm < R->qwarm) {
    int best = -1;
    for (int d = 0; d < R->o->bi->ndevices; d++)
      if (R->warm_n[d] < R->warm_max[d] &&
          (best < 0 || R->warm_n[d] < R->warm_n[best]))
        best = d;
    kh__job *j = best >= 0 ? kh__free_job(R) : NULL;
    if (!j) return;
    kh__job_alloc(j, 1);
    j->warm = 1;
    j->dev = best;
    if (kh__spawn(R, j) != 0) {
      kh_console_note(&R->con, "kiln: warning: could not start a warm child "
                      "(%s); starting the rest of the tests cold",
                      strerror(errno));
      kh__job_clear(j);
      R->warm_on = 0;
      return;
    }
    R->warm_n[best]++, R->nwarm++;
  }
}

/* Closes the stdin of warm children beyond what the queue can use (all of
 * them once it is empty or warm children are off): they exit quietly. */
static void kh__warm_retire(kh__run *R) {
  int want = R->warm_on && !R->stopping ? R->qwarm : 0;
  for (int i = R->maxjobs - 1; i >= 0 && R->nwarm > want; i--) {
    kh__job *j = &R->jobs[i];
    if (!j->active || !j->warm || j->assigned || j->retiring) continue;
    kh__close(&j->fd_in);
    j->retiring = 1;
    R->warm_n[j->dev]--, R->nwarm--;
  }
}

/* The pool child for a one-slot GPU test: on a device with a free slot,
 * one that is ready (the longest waiting) before one still starting (the
 * oldest). NULL when there is none. */
static kh__job *kh__warm_pick(kh__run *R) {
  kh__job *best = NULL;
  for (int i = 0; i < R->maxjobs; i++) {
    kh__job *j = &R->jobs[i];
    if (!j->active || !j->warm || j->assigned || j->retiring || j->exited ||
        j->fd_in < 0)
      continue;
    if (R->cap[j->dev] <= 0 || R->used[j->dev] + 1 > R->cap[j->dev]) continue;
    if (!best || (j->ready && !best->ready) ||
        (j->ready == best->ready &&
         (j->ready ? j->ready_ms < best->ready_ms : j->spawn_ms < best->spawn_ms)))
      best = j;
  }
  return best;
}

/* Writes the test to the warm child: `assign id= tmpdir=` and the slot it
 * is to take (semaphore and count), then closes the pipe. The test's clock
 * starts now. 0, or -1 when the child is gone (it is then killed and
 * reaped as a warm child that died unused). */
static int kh__warm_assign(kh__run *R, kh__job *j, const kh__item *it) {
  const kh_test *t = &R->o->reg->tests[it->test];
  const kh_backend_info *bi = R->o->bi;
  int phys = bi->dev[j->dev].physical;
  char *tmpdir = kh_asprintf("%s/tmp/%d", R->o->out_dir, R->seq + 1);
  kp_record_out *rec = kh_xmalloc(sizeof *rec);
  kp_begin(rec, "assign");
  kp_add_str(rec, "id", t->id);
  kp_add_str(rec, "tmpdir", tmpdir);
  if (R->use_tokens) {
    kp_add_int(rec, "sem_id", R->tok.semid);
    kp_add_int(rec, "sem_num", kh_tokens_semnum(phys));
    kp_add_int(rec, "slots", 1);
  }
  kh_mkdir_p(tmpdir, 0700);
  int st = kp_send(rec, j->fd_in);
  free(rec);
  kh__close(&j->fd_in);
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
  j->deadline = j->assign_ms + kh__timeout_ms(R, t);
  j->slots = 1;
  j->recs[0] = kh__new_result(R, it);
  j->tests[0] = t;
  j->recs[0]->device = phys;
  j->recs[0]->slots = 1;
  j->recs[0]->start_s = kh_wall_s();
  if (R->use_tokens) kh_tokens_holder_add(&R->tok, phys, j->pid, t->id, 1);
  R->warm_n[j->dev]--, R->nwarm--;
  R->used[j->dev] += 1;
  R->nrunning++;
  return 0;
}

/* ---- Starting tests (cold) --------------------------------------------------------- */

/* Starts one queued test; 0 when it could not start now. */
static int kh__start_one(kh__run *R) {
  if (R->qhead == R->qlen || R->nrunning >= R->maxrun) return 0;
  kh__item it = R->queue[R->qhead];
  const kh_test *t = &R->o->reg->tests[it.test];
  const kh_backend_info *bi = R->o->bi;
  int dev = -1;
  if (bi->ndevices == 0 && t->needs_gpu) {
    kh__queue_take(R);
    char *msg = *bi->error ? kh_strdup(bi->error)
                : kh_asprintf("no %s device: the runner found none",
                               kh_backend_names[bi->backend]);
    kh__immediate(R, &it, KH_SKIP, msg);
    free(msg);
    return 1;
  }
  if (bi->ndevices > 0) {
    dev = kh__pick(R, t);
    if (dev == -1) return 0;
    if (dev == -2) {
      kh__queue_take(R);
      int any = 0;
      for (int d = 0; d < bi->ndevices; d++) any |= R->cap[d] > 0;
      char *msg = any ? kh_asprintf("needs %d slots; no device has that many",
                                     t->slots)
                      : kh_strdup("no device has slots: every device the "
                                   "runner sees was left out by the device "
                                   "list (config or --resource-spec)");
      kh__immediate(R, &it, KH_ERROR, msg);
      free(msg);
      return 1;
    }
  }
  if (R->warm_on && kh__warm_fits(t)) {
    kh__job *w = kh__warm_pick(R);
    /* Only a ready child gets a test: one still starting is waited for
     * (its ready record or its death wakes the loop). A test given to a
     * child that then failed to start would be lost to a runner that
     * cannot go warm at all (one older than --warm, a --wrap that breaks
     * it), where the children dying unused turn warm children off. */
    if (w && !w->ready) return 0;
    if (w && kh__warm_assign(R, w, &it) == 0) {
      kh__queue_take(R);
      return 1;
    }
  }
  kh__job *j = kh__free_job(R);
  if (!j) return 0;
  kh__queue_take(R);
  kh__job_alloc(j, 1);
  j->recs[0] = kh__new_result(R, &it);
  j->tests[0] = t;
  j->dev = dev;
  j->slots = dev >= 0 ? kh__want(t, R->cap[dev]) : 0;
  if (kh__spawn(R, j) != 0) kh__spawn_failed(R, j);
  return 1;
}

/* --isolation none: every queued run in one runner process, on the first
 * device, holding the most slots any of them needs. */
static void kh__start_shared(kh__run *R) {
  int n = R->qlen - R->qhead;
  if (n == 0) return;
  kh__job *j = &R->jobs[0];
  kh__job_alloc(j, n);
  int slots = 1;
  for (int i = 0; i < n; i++) {
    kh__item it = R->queue[R->qhead + i];
    j->recs[i] = kh__new_result(R, &it);
    j->tests[i] = &R->o->reg->tests[it.test];
    if (j->tests[i]->slots < 0 || j->tests[i]->slots > slots)
      slots = j->tests[i]->slots;
  }
  R->qhead = R->qlen;
  R->qwarm = 0;
  j->dev = R->o->bi->ndevices > 0 ? 0 : -1;
  j->slots = j->dev < 0 ? 0 : slots < 0 || slots > R->cap[0] ? R->cap[0] : slots;
  if (kh__spawn(R, j) != 0) kh__spawn_failed(R, j);
}

/* ---- The loop --------------------------------------------------------------------------- */

/* Children alive, warm ones included; names gets the tests running. */
static int kh__active(kh__run *R, char **names, int max, int *nnames) {
  int n = 0, k = 0;
  for (int i = 0; i < R->maxjobs; i++) {
    kh__job *j = &R->jobs[i];
    if (!j->active) continue;
    n++;
    if (names && k < max && kh__job_rec(j)) names[k++] = kh__job_rec(j)->id;
  }
  if (nnames) *nnames = k;
  return n;
}

static int kh__poll_timeout(kh__run *R, double now) {
  double next = now + (R->con.tty ? 500 : 1000);
  for (int i = 0; i < R->maxjobs; i++) {
    kh__job *j = &R->jobs[i];
    if (!j->active) continue;
    double t[] = {j->term_sent ? 0 : j->deadline, j->kill_sent ? 0 : j->kill_at,
                  j->exited ? j->drain_until : 0};
    for (size_t k = 0; k < 3; k++)
      if (t[k] > 0 && t[k] < next) next = t[k];
  }
  return next <= now ? 0 : (int)(next - now) + 1;
}

typedef struct kh__watch {
  kh__job *job;
  int which;                /* 0 results, 1 output, 2 exec */
} kh__watch;

static void kh__poll_once(kh__run *R) {
  int cap = 1 + 3 * R->maxjobs;
  struct pollfd *pfd = kh_xcalloc((size_t)cap, sizeof *pfd);
  kh__watch *w = kh_xcalloc((size_t)cap, sizeof *w);
  int n = 0;
  pfd[n++] = (struct pollfd){.fd = R->sigfd, .events = POLLIN};
  for (int i = 0; i < R->maxjobs; i++) {
    kh__job *j = &R->jobs[i];
    int fds[3] = {j->fd_res, j->fd_out, j->fd_exec};
    for (int k = 0; k < 3 && j->active; k++) {
      if (fds[k] < 0) continue;
      w[n] = (kh__watch){j, k};
      pfd[n++] = (struct pollfd){.fd = fds[k], .events = POLLIN};
    }
  }
  int r = poll(pfd, (nfds_t)n, kh__poll_timeout(R, kh_now_ms()));
  if (r > 0) {
    if (pfd[0].revents) kh__signals(R);
    for (int i = 1; i < n; i++) {
      if (!pfd[i].revents) continue;
      if (w[i].which == 0) kh__read_results(R, w[i].job);
      else if (w[i].which == 1) kh__read_output(w[i].job);
      else kh__read_exec(w[i].job);
    }
  }
  free(pfd);
  free(w);
}

static void kh__loop(kh__run *R) {
  int shared = R->s->isolation == KH_ISO_NONE;
  if (shared) kh__start_shared(R);
  for (;;) {
    if (!shared && !R->stopping) {
      /* Fill the pool first, so that the tests started now go to warm
       * children and new ones start behind them. */
      kh__warm_fill(R);
      while (kh__start_one(R)) {
      }
      kh__warm_fill(R);
    }
    kh__warm_retire(R);
    if (kh__active(R, NULL, 0, NULL) == 0 && (R->stopping || R->qhead == R->qlen))
      break;
    kh__poll_once(R);
    double now = kh_now_ms();
    kh__timers(R, now);
    kh__reap(R);
    kh__finish_ready(R, now);
    char *names[8];
    int nrun;
    kh__active(R, names, 8, &nrun);
    kh_console_progress(&R->con, names, nrun);
  }
}

/* ---- Setting up and writing out ------------------------------------------------------------ */

int kh_parent_gpu_clean(char *why, size_t n) {
  static const char *const files[] = {"/dev/nvidia", "/dev/kfd", "/dev/dri/"};
  static const char *const libs[] = {"libcuda", "libamdhip64", "libhsa-runtime",
                                     "libnvidia", "/dev/nvidia", "/dev/kfd",
                                     "/dev/dri/"};
  why[0] = '\0';
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    char link[300], target[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
    ssize_t len = readlink(link, target, sizeof target - 1);
    if (len <= 0) continue;
    target[len] = '\0';
    for (size_t i = 0; i < 3; i++)
      if (strncmp(target, files[i], strlen(files[i])) == 0)
        snprintf(why, n, "open file %s", target);
  }
  if (d) closedir(d);
  char *maps = NULL;
  if (kh_read_file("/proc/self/maps", 64u << 20, &maps, NULL) == 0) {
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
      char *hit = strstr(maps, libs[i]);
      if (!hit) continue;
      char *eol = strchr(hit, '\n');
      snprintf(why, n, "mapped %.*s", (int)(eol ? eol - hit : 80), hit);
    }
    free(maps);
  }
  return why[0] == '\0';
}

char *kh__git_rev(void) {
  const char *env = getenv("KILN_GIT_REV");
  if (env) return kh_strdup(env);
  char *argv[] = {"git", "-C", KILN_SOURCE_DIR, "rev-parse", "--short=12", "HEAD", NULL};
  char *out = NULL;
  int st = kh_capture(argv, 256, 5, &out, NULL);
  if (st != 0) {
    free(out);
    return kh_strdup("");
  }
  out[strcspn(out, "\n")] = '\0';
  return out;
}

static void kh__fill_meta(kh__run *R) {
  const kh_run_opts *o = R->o;
  kh_report *rep = &R->rep;
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  rep->kiln_version = kh_strdup(KILN_VERSION);
  rep->git = kh__git_rev();
  rep->host = kh_strdup(host);
  rep->backend = kh_strdup(kh_backend_names[o->bi->backend]);
  rep->config = kh_strdup(o->config_path ? o->config_path : "");
  rep->out_dir = kh_strdup(o->out_dir);
  rep->token_key = kh_strdup(o->token_key);
  if (o->shard && o->shard->count) {
    rep->shard_index = o->shard->index, rep->shard_count = o->shard->count;
    rep->shard_selected = o->shard->selected, rep->shard_total = o->shard->total;
    rep->shard_method = kh_strdup(o->shard->method);
    rep->shard_source = kh_strdup(o->shard->source);
  }
  rep->command = kh_strdup(o->command);
  rep->start_s = kh_wall_s();
  rep->ndevices = o->bi->ndevices;
  memcpy(rep->devices, o->bi->dev, sizeof rep->devices);
  kh_settings_describe(o->s, &rep->set_keys, &rep->set_values, &rep->nset);
  for (int i = 0; i < o->nselection; i++) {
    rep->selection = kh_xrealloc(rep->selection,
                                  (size_t)(rep->nselection + 1) * sizeof(char *));
    rep->selection[rep->nselection++] = kh_strdup(o->selection[i]);
  }
}

static void kh__fill_queue(kh__run *R) {
  const kh_registry *reg = R->o->reg;
  for (int rep = 1; rep <= R->s->repeat; rep++)
    for (int i = 0; i < reg->n; i++) {
      if (!R->o->chosen[i]) continue;
      if (R->qlen == R->qcap) {
        R->qcap = R->qcap ? 2 * R->qcap : 64;
        R->queue = kh_xrealloc(R->queue, (size_t)R->qcap * sizeof *R->queue);
      }
      R->queue[R->qlen++] = (kh__item){i, rep, 1};
      R->qwarm += kh__warm_fits(&reg->tests[i]);
    }
}

/* A device that a config or resource spec lists but the runner does not
 * see gets no slots: say so, since its tests will run elsewhere or not. */
static void kh__warn_unseen(kh__run *R) {
  const kh_backend_info *bi = R->o->bi;
  for (int i = 0; i < R->s->ndevices; i++) {
    int seen = 0;
    for (int d = 0; d < bi->ndevices; d++)
      seen |= bi->dev[d].physical == R->s->devices[i].id;
    if (!seen)
      kh_console_note(&R->con, "kiln: warning: device %d is listed (config or "
                      "--resource-spec) but the %s runner does not see it; "
                      "it gets no tests", R->s->devices[i].id,
                      kh_backend_names[bi->backend]);
  }
}

static int kh__setup_tokens(kh__run *R, kh_err *err) {
  const kh_backend_info *bi = R->o->bi;
  kh__warn_unseen(R);
  kh_device_caps(R->s, bi, R->cap);
  if (bi->ndevices == 0) return 0;
  if (kh_tokens_open(&R->tok, R->o->token_key, err) != 0) return -1;
  R->use_tokens = 1;
  for (int d = 0; d < bi->ndevices; d++) {
    if (R->cap[d] <= 0) continue;
    int cap = kh_tokens_ensure(&R->tok, bi->dev[d].physical, R->cap[d], err);
    if (cap < 0) return -1;
    if (err->msg[0]) kh_console_note(&R->con, "kiln: warning: %s", err->msg);
    R->cap[d] = cap;
  }
  return 0;
}

/* Warm children per device: off for --isolation none and with no device;
 * `warm: auto` gives KH_WARM_PER_SLOT per slot. */
static void kh__setup_warm(kh__run *R) {
  const kh_settings *s = R->s;
  const kh_backend_info *bi = R->o->bi;
  int total = 0;
  for (int d = 0; d < bi->ndevices; d++) {
    int max = s->warm >= 0 ? s->warm : R->cap[d] * KH_WARM_PER_SLOT;
    R->warm_max[d] = R->cap[d] > 0 ? max : 0;
    total += R->warm_max[d];
  }
  R->warm_on = total > 0 && R->use_tokens && s->isolation == KH_ISO_PROCESS;
  /* Room in the job table for the pool and for retired children still
   * on their way out. */
  if (R->warm_on) {
    R->maxjobs = R->maxrun + 2 * total;
    free(R->jobs);
    R->jobs = kh_xcalloc((size_t)R->maxjobs, sizeof *R->jobs);
  }
}

static int kh__setup_signals(kh__run *R, sigset_t *old) {
  sigset_t set;
  sigemptyset(&set);
  int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < 4; i++) sigaddset(&set, sigs[i]);
  sigprocmask(SIG_BLOCK, &set, old);
  signal(SIGPIPE, SIG_IGN);
  R->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  return R->sigfd < 0 ? -1 : 0;
}

static int kh__exit_status(kh__run *R) {
  if (R->rep.interrupted) return KH_EXIT_INTERRUPTED;
  if (R->infra) return KH_EXIT_INFRA;
  for (int i = 0; i < R->rep.nresults; i++)
    if (!R->rep.results[i]->retried && kh_outcome_failed(R->rep.results[i]->outcome))
      return KH_EXIT_FAIL;
  return KH_EXIT_OK;
}

static int kh__finish(kh__run *R) {
  kh_report *rep = &R->rep;
  rep->end_s = kh_wall_s();
  rep->not_run = R->qlen - R->qhead;
  char why[512];
  rep->parent_gpu_clean = kh_parent_gpu_clean(why, sizeof why);
  if (!rep->parent_gpu_clean) kh_console_note(&R->con, "kiln: parent is not GPU-clean: %s", why);
  kh_journal_finish(R->journal, rep);
  char *path = kh_asprintf("%s/report.yaml", R->o->out_dir);
  kh_err err;
  int status = kh__exit_status(R);
  if (kh_report_write(rep, path, &err) != 0 ||
      (R->o->report_copy && kh_report_write(rep, R->o->report_copy, &err) != 0)) {
    kh_console_note(&R->con, "kiln: %s", err.msg);
    status = KH_EXIT_INFRA;
  }
  kh_console_summary(&R->con, rep, path);
  free(path);
  return status;
}

static void kh__cleanup(kh__run *R, const sigset_t *old) {
  if (R->journal >= 0) close(R->journal);
  if (R->sigfd >= 0) close(R->sigfd);
  sigprocmask(SIG_SETMASK, old, NULL);
  kh_report_free(&R->rep);
  for (int i = 0; i < R->nwrap; i++) free(R->wrap[i]);
  free(R->wrap);
  free(R->queue), free(R->jobs), free(R->line);
}

static int kh__parse_wrap(kh__run *R) {
  if (!R->s->wrap || !*R->s->wrap) return 0;
  wordexp_t we;
  if (wordexp(R->s->wrap, &we, WRDE_NOCMD) != 0 || we.we_wordc == 0) {
    fprintf(stderr, "kiln: --wrap: cannot split '%s' into words (no $(...) "
                    "or unbalanced quotes, please)\n", R->s->wrap);
    return -1;
  }
  R->wrap = kh_xcalloc(we.we_wordc, sizeof *R->wrap);
  for (size_t i = 0; i < we.we_wordc; i++) R->wrap[i] = kh_strdup(we.we_wordv[i]);
  R->nwrap = (int)we.we_wordc;
  wordfree(&we);
  return 0;
}

int kh_run(const kh_run_opts *o) {
  kh__run R;
  memset(&R, 0, sizeof R);
  R.o = o, R.s = o->s, R.journal = -1, R.sigfd = -1;
  if (kh__parse_wrap(&R) != 0) return KH_EXIT_USAGE;
  R.line = kh_xmalloc(KP_MAX_LINE);
  R.maxjobs = R.maxrun = o->s->isolation == KH_ISO_NONE ? 1 : kh__jobs(o->s);
  R.jobs = kh_xcalloc((size_t)R.maxjobs, sizeof *R.jobs);
  kh_report_init(&R.rep);
  kh__fill_queue(&R);
  kh_console_init(&R.con, o->verbose, R.qlen);
  kh_err err;
  sigset_t old;
  if (kh_mkdir_p(o->out_dir, 0755) != 0) {
    fprintf(stderr, "kiln: cannot create run folder %s: %s\n", o->out_dir,
            strerror(errno));
    return KH_EXIT_INFRA;
  }
  if (kh__setup_signals(&R, &old) != 0 || kh__setup_tokens(&R, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", R.sigfd < 0 ? strerror(errno) : err.msg);
    kh__cleanup(&R, &old);
    return KH_EXIT_INFRA;
  }
  kh__setup_warm(&R);
  kh__fill_meta(&R);
  char *jpath = kh_asprintf("%s/journal", o->out_dir);
  R.journal = kh_journal_open(&R.rep, jpath, &err);
  free(jpath);
  if (R.journal < 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    kh__cleanup(&R, &old);
    return KH_EXIT_INFRA;
  }
  kh_console_note(&R.con, "kiln: %d test run%s on %s (%d device%s), run folder %s",
                  R.qlen, R.qlen == 1 ? "" : "s", kh_backend_names[o->bi->backend],
                  o->bi->ndevices, o->bi->ndevices == 1 ? "" : "s", o->out_dir);
  kh__loop(&R);
  int status = kh__finish(&R);
  kh__cleanup(&R, &old);
  return status;
}
