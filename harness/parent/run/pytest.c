/* pytest suites under kiln (docs/pytest.md): each node id a test of
 * its own process (or of a worker's sequence), with the slots, narrowing,
 * timeouts and reports every test gets. Its flags and config keys (--pytest, --zygote) are its
 * table's; its zygotes live in its context. The Python side is kiln's
 * package kiln_pytest (harness/python/, installed under share/kiln/python):
 *
 *   python3 -m kiln_pytest collect [--cache DIR] -- PATH...   pytest's own
 *       collection of every --pytest path in one interpreter, each path's
 *       listing kept in (and taken from) DIR: per path a `pytest` record
 *       (protocol, rootdir, path, cached), then the `test` records of a
 *       runner's --list, with slots, devices and needs_gpu from the test's
 *       `kiln` mark;
 *   python3 -m kiln_pytest run [--zygote S] --result-fd 3 --rootdir DIR -- NODEID
 *       one test, in the rootdir, its records (test, phase, note, result,
 *       end) on fd 3 as a runner writes them, made from pytest's reports;
 *       with --worker (--isolation worker) every node id of the child in
 *       one session, each test's records as it ends, and between two a
 *       check of what the first left behind (a `worker_check` note);
 *       with --pull SOURCE too, the whole source collected and, before
 *       its last test, a `more` record, answered on stdin with more node
 *       ids of it (none: the session ends);
 *   python3 -m kiln_pytest zygote --socket S --rootdir DIR PATH
 *       per source for the run (open, close): imports what the
 *       test files import from outside the project once, then forks a
 *       child per `run --zygote S` that asks; `run` falls back to its own
 *       interpreter where forking is unsafe.
 *
 * The interpreter is $KILN_PYTHON, else python3 on the PATH.
 */
#include "run-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kiln-config.h"
#include "records.h"
#include "select.h"

/* How long a zygote may take to listen (its socket comes before its
 * imports, so this is an interpreter's start). */
#define ZYGOTE_LISTEN_MS 15000

static const char *python(void) {
  const char *p = getenv("KILN_PYTHON");
  return p && *p ? p : "python3";
}

/* The folder holding kiln_pytest: the source tree's for a kiln run from
 * its build tree, else the installed one; NULL with the places tried. */
static char *package_dir(kh_err *err) {
  char *tried[3] = {NULL};
  int n = 0;
  if (kh_same_file(kh_self_dir(), KILN_BUILD_PARENT_DIR)) {
    tried[n++] = kh_strdup(KILN_SOURCE_DIR "/harness/python");
  } else {
    if (*KILN_BIN_TO_DATA) tried[n++] = kh_asprintf("%s/%s/python", kh_self_dir(), KILN_BIN_TO_DATA);
    tried[n++] = kh_strdup(KILN_DATADIR "/python");
  }
  char *hit = NULL;
  for (int i = 0; i < n && !hit; i++) {
    char *init = kh_asprintf("%s/kiln_pytest/__init__.py", tried[i]);
    if (access(init, R_OK) == 0) hit = kh_strdup(tried[i]);
    free(init);
  }
  if (!hit)
    kh_errf(err, "kiln's pytest package (kiln_pytest) is not in %s%s%s", tried[0],
            n > 1 ? " nor " : "", n > 1 ? tried[1] : "");
  for (int i = 0; i < n; i++) free(tried[i]);
  return hit;
}

/* Puts the package first on PYTHONPATH, once: the collection, the
 * zygotes and every test's interpreter inherit it. */
static void pythonpath(const char *dir) {
  const char *old = getenv("PYTHONPATH");
  size_t n = strlen(dir);
  if (old && strncmp(old, dir, n) == 0 && (old[n] == ':' || !old[n])) return;
  char *v = old && *old ? kh_asprintf("%s:%s", dir, old) : kh_strdup(dir);
  setenv("PYTHONPATH", v, 1);
  free(v);
}

static const char *last_line(char *text) {
  size_t n = text ? strlen(text) : 0;
  while (n && (text[n - 1] == '\n' || text[n - 1] == ' ')) text[--n] = '\0';
  char *nl = text ? strrchr(text, '\n') : NULL;
  return nl ? nl + 1 : text ? text : "";
}

/* ---- Listing ------------------------------------------------------------------------- */

/* Where listings are kept between runs: $KILN_PYTEST_LISTING (none: not
 * kept), else beside the run folders, which change with every run. */
#define LISTING_DIR "reports/runs/.pytest-listing"

static const char *listing_dir(void) {
  const char *d = getenv("KILN_PYTEST_LISTING");
  if (d && strcmp(d, "none") == 0) return NULL;
  return d && *d ? d : LISTING_DIR;
}

/* The paths for a message: "a", "a b c". */
static char *joined(char *const *paths, int n) {
  kh_buf b = {0};
  for (int i = 0; i < n; i++) kh_buf_addf(&b, "%s%s", i ? " " : "", paths[i]);
  return b.data ? b.data : kh_strdup("");
}

/* What a listing says of itself: paths from the cache, paths collected
 * but not kept, and why the first of those was not. */
typedef struct listing_tally {
  int cached, unkept, missed;
  char *why, *miss;         /* the first path not kept, not used: why */
} listing_tally;

/* One `pytest` record: the next path's source, or an error. */
static int listing_head(const krun__lister *L, const kp_record *r, const char *path,
                        int *source, listing_tally *n, kh_err *err) {
  const char *proto = kp_get(r, "protocol"), *root = kp_get(r, "rootdir");
  const char *said = kp_get(r, "path"), *hit = kp_get(r, "cached");
  const char *unkept = kp_get(r, "unkept"), *missed = kp_get(r, "missed");
  if (proto && atoi(proto) != KP_VERSION)
    return kh_errf(err, "--pytest %s: kiln_pytest speaks protocol %s, this kiln %d: "
                   "use the kiln_pytest of this kiln (PYTHONPATH)", path, proto, KP_VERSION);
  if (!proto || !root || !said || strcmp(said, path) != 0)
    return kh_errf(err, "--pytest %s: the collection did not begin with kiln_pytest's "
                   "`pytest` record for it", path);
  *source = krun__registry_source(L->reg, L->kind, path);
  L->reg->sources[*source].dir = kh_strdup(root);
  n->cached += hit && strcmp(hit, "1") == 0;
  if (unkept && *unkept && !n->unkept++) n->why = kh_asprintf("%s: %s", path, unkept);
  if (missed && *missed && !n->missed++) n->miss = kh_asprintf("%s: %s", path, missed);
  return 0;
}

/* The console's line: how long listing took, and where it came from. */
static void listing_said(int ntests, int npaths, double took_s, const char *cache,
                         const listing_tally *n) {
  int fresh = npaths - n->cached;
  fprintf(stderr, "kiln: listed %d pytest test%s of %d source%s in %.1f s: ", ntests,
          ntests == 1 ? "" : "s", npaths, npaths == 1 ? "" : "s", took_s);
  if (!cache) fprintf(stderr, "collected (not kept: KILN_PYTEST_LISTING=none)\n");
  else if (!fresh) fprintf(stderr, "from the cache (%s)\n", cache);
  else if (n->unkept) fprintf(stderr, "%d from the cache, %d collected, %d not kept (%s)\n",
                              n->cached, fresh, n->unkept, n->why);
  else if (!n->cached) fprintf(stderr, "collected, kept in %s\n", cache);
  else fprintf(stderr, "%d from the cache, %d collected (%s)\n", n->cached, fresh, cache);
  /* A kept listing that failed its checks: what changed, so that a user
   * whose cache never hits can see why. */
  if (n->missed)
    fprintf(stderr, "kiln: %d kept listing%s not used: %s%s\n", n->missed,
            n->missed == 1 ? "" : "s", n->miss, n->missed > 1 ? ", ..." : "");
}

static void listing_test(krun_registry *reg, int source, const kp_record *r) {
  kp_listing l;
  if (strcmp(r->tag, "test") != 0 ||
      kp_decode(&kp_rec_listing, r->fields, r->nfields, &l, NULL, 0) != 0 || !l.id)
    return;
  krun_test t = {.id = (char *)l.id, .suite = (char *)l.suite, .name = (char *)l.name,
                 .tags = (char *)(l.tags ? l.tags : ""), .file = (char *)l.file,
                 .slots = (int)l.slots,
                 .devices = l.devices > 1 && l.devices <= KRUN_MAX_DEVICES ? (int)l.devices : 1,
                 .timeout_s = (int)l.timeout_s, .needs_gpu = (int)l.needs_gpu,
                 .line = (int)l.line};
  krun__registry_add(reg, source, &t);
}

/* The tests pytest collects from every path, in one interpreter
 * (kiln_pytest collect PATH...), each path's listing from the cache when
 * it holds a good one: id the node id, suite its file; slots, devices and
 * needs_gpu from the tests' `kiln` mark. Says on stderr how long it took
 * and what came from the cache. -2 for a mark kiln_pytest refused (a
 * usage error). */
static int pytest_list_all(const krun__lister *L, char *const *paths, int npaths,
                           kh_err *err) {
  krun_registry *reg = L->reg;
  char *dir = package_dir(err);
  if (!dir) return -1;
  pythonpath(dir);
  free(dir);
  const char *cache = listing_dir();
  int na = 0;
  char **argv = kh_xcalloc((size_t)npaths + 8, sizeof *argv);
  argv[na++] = (char *)python();
  argv[na++] = "-m";
  argv[na++] = "kiln_pytest";
  argv[na++] = "collect";
  if (cache) argv[na++] = "--cache", argv[na++] = (char *)cache;
  argv[na++] = "--";
  for (int i = 0; i < npaths; i++) argv[na++] = paths[i];
  char *out = NULL, *errs = NULL, *all = joined(paths, npaths);
  size_t len = 0;
  double t0 = kh_now_ms();
  int st = krun_capture(argv, 64u << 20, 600, &out, &len, &errs);
  double took_s = (kh_now_ms() - t0) / 1000.0;
  int rc = 0, first = reg->n, at = -1, source = -1, from = reg->n;
  listing_tally tally = {0};
  if (st != 0) {
    const char *said = last_line(errs);
    rc = kh_errf(err, "--pytest %s: %s -m kiln_pytest collect %s%s%s", all, python(),
                 st < 0 ? (errno == ETIMEDOUT ? "timed out after 600 s" : "could not run")
                 : st == 2 ? "refused a mark" : "failed",
                 *said ? ": " : "", said);
  }
  char *save = NULL;
  for (char *line = rc ? NULL : strtok_r(out, "\n", &save); line && rc == 0;
       line = strtok_r(NULL, "\n", &save)) {
    kp_record r;
    if (kp_parse(line, &r, NULL) != 0) continue;
    if (strcmp(r.tag, "pytest") == 0) {
      if (at >= 0 && reg->n == from)
        rc = kh_errf(err, "--pytest %s: pytest collected no test", paths[at]);
      else if (++at >= npaths)
        rc = kh_errf(err, "--pytest %s: kiln_pytest listed more paths than it was given",
                     all);
      else
        rc = listing_head(L, &r, paths[at], &source, &tally, err);
      from = reg->n;
    } else if (source < 0) {
      rc = kh_errf(err, "--pytest %s: the collection did not begin with kiln_pytest's "
                   "`pytest` record", paths[0]);
    } else {
      listing_test(reg, source, &r);
    }
  }
  if (rc == 0 && at >= 0 && reg->n == from)
    rc = kh_errf(err, "--pytest %s: pytest collected no test", paths[at]);
  else if (rc == 0 && at + 1 < npaths)
    rc = kh_errf(err, "--pytest %s: kiln_pytest listed no test for it", paths[at + 1]);
  if (rc != 0 && st == 2) rc = -2;        /* a mark kiln_pytest refused */
  if (rc == 0) listing_said(reg->n - first, npaths, took_s, cache, &tally);
  free(out), free(errs), free(all), free(argv), free(tally.why), free(tally.miss);
  return rc;
}

static int pytest_list(const krun__lister *L, const char *path, kh_err *err) {
  char *paths[] = {(char *)path};
  return pytest_list_all(L, paths, 1, err);
}

/* ---- The run's zygotes (the source's context) ------------------------------------------ */

/* A source's zygote: its process and socket. */
typedef struct zygote {
  pid_t pid;                /* 0: none */
  char *sock;
} zygote;

typedef struct pyctx {
  zygote *zyg;              /* by registry source */
  int nzyg;
} pyctx;

/* Where source s's zygote listens: absolute, since the zygote and the
 * tests run in the source's rootdir, not in kiln's folder; in /tmp where
 * the run folder's path is too long for a socket's address (with the
 * ".new" the zygote binds first). */
static char *socket_path(const char *out_dir, int s) {
  char cwd[4096];
  char *p = out_dir[0] == '/' || !getcwd(cwd, sizeof cwd)
                ? kh_asprintf("%s/pytest-zygote-%d.sock", out_dir, s)
                : kh_asprintf("%s/%s/pytest-zygote-%d.sock", cwd, out_dir, s);
  if (strlen(p) + strlen(".new") >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
    free(p);
    p = kh_asprintf("/tmp/kiln-%ld-pytest-zygote-%d.sock", (long)getpid(), s);
  }
  return p;
}

static void zygote_start(const krun__srcrun *run, int s, zygote *z) {
  const krun_source *src = &run->reg->sources[s];
  z->sock = socket_path(run->out_dir, s);
  char *log = kh_asprintf("%s/logs/pytest-zygote-%d.log", run->out_dir, s);
  char *logs = kh_asprintf("%s/logs", run->out_dir);
  kh_mkdir_p(logs, 0755);
  int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  char *argv[] = {(char *)python(), "-m", "kiln_pytest", "zygote", "--socket", z->sock,
                  "--rootdir", src->dir, (char *)src->path, NULL};
  /* No device of its own: it must touch none (its children get theirs). */
  const char *env[] = {NULL}, *unenv[] = {"KILN_TEST", "KILN_DEVICE", NULL};
  krun_spawn_req req = {.argv = argv, .env = env, .unenv = unenv, .fd_in = -1,
                        .fd_out = fd, .fd_err = fd, .fd_result = -1, .new_pgroup = 1,
                        .die_with_parent = 1, .cgroup_procs = -1};
  int exec_errno = 0;
  pid_t pid;
  if (fd < 0 || krun_spawn(&req, &pid, &exec_errno) != 0 || exec_errno) {
    krun__console_note(run->con, "kiln: no pytest zygote for %s (%s): each test starts an "
                       "interpreter", src->path, strerror(exec_errno ? exec_errno : errno));
    free(z->sock), z->sock = NULL;
  } else {
    z->pid = pid;
    /* Tests start once it listens, or it died (they then start fresh). */
    double until = kh_now_ms() + ZYGOTE_LISTEN_MS;
    struct stat st;
    while (stat(z->sock, &st) != 0 && kh_now_ms() < until && kill(pid, 0) == 0 &&
           waitpid(pid, NULL, WNOHANG) == 0)
      usleep(5000);
  }
  if (fd >= 0) close(fd);
  free(log), free(logs);
}

/* The source's own `zygote` for it (a manifest's zygote: false), else the
 * run's. */
static int wants_zygote(const krun_source *src, int run_wide) {
  int on = run_wide;
  for (int i = 0; i < src->nset; i++)
    if (strncmp(src->set[i], "zygote=", 7) == 0) on = strcmp(src->set[i] + 7, "true") == 0;
  return on;
}

/* A zygote for each source of this kind whose tests are queued, unless
 * --zygote false or --isolation none. vals: --pytest, --zygote. */
static void *pytest_open(const krun__srcrun *run, int kind, const krun_sval *vals) {
  const krun_registry *reg = run->reg;
  pyctx *P = kh_xcalloc(1, sizeof *P);
  P->nzyg = reg->nsources;
  P->zyg = kh_xcalloc((size_t)reg->nsources + 1, sizeof *P->zyg);
  if (run->s->isolation == KRUN_ISO_NONE) return P;
  for (int s = 0; s < reg->nsources; s++)
    if (reg->sources[s].kind == kind && wants_zygote(&reg->sources[s], vals[1].on) &&
        run->queued[s])
      zygote_start(run, s, &P->zyg[s]);
  return P;
}

static void pytest_close(void *ctx) {
  pyctx *P = ctx;
  for (int s = 0; s < P->nzyg; s++) {
    zygote *z = &P->zyg[s];
    if (z->pid > 0) {
      kill(-z->pid, SIGKILL);
      kill(z->pid, SIGKILL);
      while (waitpid(z->pid, NULL, 0) < 0 && errno == EINTR) {
      }
    }
    if (z->sock) unlink(z->sock);
    free(z->sock);
  }
  free(P->zyg), free(P);
}

/* ---- A test's process ------------------------------------------------------------------ */

/* pytest's node id: kiln's id less its escapes (a '%' in a parameter). */
static char *nodeid(const char *id) {
  char *raw = kh_xmalloc(strlen(id) + 1);
  long len = ksel_id_unescape(id, raw, strlen(id));
  if (len < 0 || memchr(raw, '\0', (size_t)len)) {
    free(raw);
    return kh_strdup(id);
  }
  raw[len] = '\0';
  return raw;
}

/* Sources a and b are collected by one pytest session: the same
 * rootdir, and no option set for one alone (a manifest's zygote: false). */
static int pytest_shares(const krun_registry *reg, int a, int b) {
  const krun_source *x = &reg->sources[a], *y = &reg->sources[b];
  if (!x->dir || !y->dir || strcmp(x->dir, y->dir) != 0 || x->nset != y->nset) return 0;
  for (int i = 0; i < x->nset; i++)
    if (strcmp(x->set[i], y->set[i]) != 0) return 0;
  return 1;
}

/* One node id, or a worker's (--worker: every id in one session). */
static void pytest_argv(krun__child *c, char **argv, int *n) {
  const pyctx *P = c->ctx;
  argv[(*n)++] = kh_strdup(python());
  argv[(*n)++] = kh_strdup("-m");
  argv[(*n)++] = kh_strdup("kiln_pytest");
  argv[(*n)++] = kh_strdup("run");
  if (P && c->source < P->nzyg && P->zyg[c->source].sock) {
    argv[(*n)++] = kh_strdup("--zygote");
    argv[(*n)++] = kh_strdup(P->zyg[c->source].sock);
  }
  argv[(*n)++] = kh_strdup("--result-fd");
  argv[(*n)++] = kh_strdup("3");
  argv[(*n)++] = kh_strdup("--rootdir");
  argv[(*n)++] = kh_strdup(c->src->dir);
  if (c->worker) argv[(*n)++] = kh_strdup("--worker");
  /* Its source collected whole, and every source it shares that has
   * tests queued (as every `pytest -n` worker collects every path): any
   * test kiln adds is there, and one worker serves them all. */
  const krun_registry *reg = c->run->reg;
  for (int s = 0; c->pull && s < reg->nsources; s++) {
    if (s != c->source && !(reg->sources[s].kind == c->src->kind && c->run->queued[s] &&
                            pytest_shares(reg, c->source, s)))
      continue;
    char *abs = realpath(reg->sources[s].path, NULL);
    argv[(*n)++] = kh_strdup("--pull");
    argv[(*n)++] = abs ? abs : kh_strdup(reg->sources[s].path);
  }
  argv[(*n)++] = kh_strdup("--");
  for (int i = 0; i < (c->worker ? c->ntests : 1); i++) argv[(*n)++] = nodeid(c->defs[i]->id);
}

/* The node ids kiln added to a worker that asked for more, a line each,
 * then an empty line (worker.py reads them). */
static void pytest_more(krun__child *c, int first, kh_buf *out) {
  for (int i = first; i < c->ntests; i++) {
    char *id = nodeid(c->defs[i]->id);
    kh_buf_addf(out, "%s\n", id);
    free(id);
  }
  kh_buf_addf(out, "\n");
}

static const char *program(const krun__child *c) {
  (void)c;
  return python();
}

static void feed(krun__child *c, kp_record_out *rec) {
  rec->buf[rec->len] = '\0';
  c->emit(c, -1, rec->buf);
}

/* The interpreter ended before pytest started the test (a missing
 * module, a bad interpreter): why, as the test's error. A signal, the
 * deadline, kiln stopping: decide.c says so. */
static void pytest_finish(krun__child *c) {
  if (c->exec_errno || c->st[0].started || !WIFEXITED(c->wstatus) || c->timed_out ||
      c->interrupted)
    return;
  char *tail = krun__log_tail(c->log);
  char *msg = kh_asprintf("%s exited with status %d before pytest started the test%s%s",
                          python(), WEXITSTATUS(c->wstatus), *last_line(tail) ? ": " : "",
                          last_line(tail));
  kp_record_out *rec = kh_xmalloc(sizeof *rec);
  kp_begin(rec, "test");
  kp_add_str(rec, "id", c->defs[0]->id);
  kp_add_int(rec, "pid", c->pid);
  feed(c, rec);
  kp_encode(rec, &kp_rec_result, &(kp_result){"error", msg, "", 0});
  feed(c, rec);
  kp_encode(rec, &kp_rec_end, &(kp_end){0});
  feed(c, rec);
  free(rec), free(msg), free(tail);
}

/* ---- The source ------------------------------------------------------------------------ */

static const krun_sopt opts[] = {
    {.name = "pytest", .arg = "PATH", .type = KRUN_SOPT_PATHS, .lists = 1, .config = 1,
     .what = "a pytest folder or file",
     .help = "a pytest suite (a folder or file): each node id in its own process, ids "
             "the node ids (path/test_x.py::test_y[param]), needs from the mark "
             "@pytest.mark.kiln(slots=N|'all', gpus=N, gpu=False, timeout=S) or pytest-timeout's "
             "mark, else 900 s unless --timeout is given (repeatable; "
             "replaces a config's pytest:; python: $KILN_PYTHON, else python3)"},
    {.name = "zygote", .arg = "B", .type = KRUN_SOPT_BOOL, .dflt = 1, .config = 1,
     .help = "pytest: fork each test from a process that imported the suite's dependencies "
             "once (default true; false: a fresh interpreter each)"},
    {NULL},
};

const krun__source_i krun__pytest_source = {
    .name = "pytest",
    .alone = "pytest test",
    .opts = opts,
    /* pytest itself has no deadline, and third-party GPU suites have tests
     * of minutes: Liger-Kernel's swiglu MixtralExperts cases took 110-114 s
     * on an H200 and two more passed 120 s (docs/pytest.md). Fifteen
     * minutes still end a hang within a nightly run. */
    .timeout_s = 900,
    .list = pytest_list,
    .list_all = pytest_list_all,
    .open = pytest_open,
    .close = pytest_close,
    .argv = pytest_argv,
    .program = program,
    .records = 1,
    .workers = 1,
    .more = pytest_more,
    .shares = pytest_shares,
    .worker_stops = 1,
    .finish = pytest_finish,
};
