/* `kiln bench`: kiln's speed against the ceiling the GPU runtime allows.
 * Four sections, each a list of points (what, concurrency, tests, wall):
 * the ceiling (runner --context-probe processes, N at concurrency c), kiln
 * (this binary's own `kiln run` on bench/trivial at the same
 * concurrencies), isolation none (the same tests in one process) and the
 * host CPU cost (`kiln run --backend host --jobs 2` on bench/noop, CPU from
 * wait4's rusage of the whole kiln process tree). Every child is started
 * here with fork and exec, its environment narrowed to one device like
 * `kiln run` narrows a test's. See docs/performance.md.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kiln-config.h"
#include "protocol.h"
#include "registry.h"
#include "run.h"
#include "settings.h"
#include "base.h"

/* Targets from the "Speed" issue: kiln within 90% of the ceiling; on the
 * host backend with 2 jobs, at most 3 ms of CPU and at least 300 no-op
 * tests per second. */
#define KH__TARGET_RATIO 0.9
#define KH__TARGET_CPU_MS 3.0
#define KH__TARGET_TESTS_S 300.0
/* A context probe that takes longer than this is killed and counted as
 * failed. */
#define KH__PROBE_TIMEOUT_MS 120e3
#define KH__MAX_CONC 16
#define KH__MAX_POINTS 64

/* ---- Settings ------------------------------------------------------------ */

enum { KH__S_CEILING = 1, KH__S_KILN = 2, KH__S_NONE = 4, KH__S_HOST = 8 };
static const char *const kh__sections[] = {"ceiling", "kiln", "none", "host"};

typedef struct kh__point {
  const char *what;         /* ceiling, kiln, kiln_cold, none, host */
  int conc;
  int tests;
  int available;            /* 0: not measured (note says why) */
  int failed;               /* tests (or probes) that did not pass */
  double wall_s, tests_per_s, cpu_ms_per_test, ratio;
  double open_ms_mean, open_ms_max, start_ms_mean;  /* ceiling only */
  char run_dir[PATH_MAX];   /* kiln runs */
  char note[PATH_MAX + 512];
} kh__point;

typedef struct kh__bench {
  int backend;              /* as asked; bi.backend once resolved */
  const char *runner_dir;
  int tests, host_tests;
  int conc[KH__MAX_CONC], nconc;
  unsigned skip;
  char *out;
  char self[PATH_MAX];      /* this kiln, for `kiln run` */
  kh_backend_info bi;
  int has_warm;             /* this kiln has `run --warm` */
  kh__point pts[KH__MAX_POINTS];
  int npts;
  double start_s;
} kh__bench;

static void kh__bench_usage(FILE *f) {
  fprintf(f,
    "usage: kiln bench [--backend B] [--tests N] [--concurrency LIST]\n"
    "                  [--host-tests N] [--out DIR] [--skip LIST]\n"
    "                  [--runner-dir DIR]\n"
    "\n"
    "Measures kiln's speed against the ceiling, side by side, and writes\n"
    "DIR/bench.yaml plus the `kiln run` reports it made:\n"
    "  ceiling  N processes that only open and close an engine context\n"
    "           (kiln-runner-B --context-probe), c at a time, for each c in\n"
    "           LIST: tests/s = N / wall. The ceiling is the best c.\n"
    "  kiln     kiln run --repeat N --jobs c --slots c -- bench/trivial for\n"
    "           each c (and with --warm 0 when this kiln has a warm pool)\n"
    "  none     the same N tests in one process (--isolation none)\n"
    "  host     kiln run --backend host --jobs 2 --repeat N bench/noop: CPU\n"
    "           ms per test of the whole kiln process tree, and tests/s\n"
    "Every child sees one device (the first), as `kiln run` narrows it.\n"
    "\n"
    "  --backend B        auto|host|hip|cuda (default auto: a GPU backend\n"
    "                     whose runner finds a device, else host)\n"
    "  --tests N          tests (or probes) per point (default 48)\n"
    "  --concurrency LIST processes at once, comma-separated (default\n"
    "                     1,2,3,4,6,8)\n"
    "  --host-tests N     no-op tests of the host CPU point (default 300)\n"
    "  --out DIR          bench folder (default reports/runs/<UTC time>-bench)\n"
    "  --skip LIST        sections left out: ceiling,kiln,none,host\n"
    "  --runner-dir DIR   where kiln-runner-<backend> lives\n"
    "  --help             this text\n"
    "\n"
    "Targets (PASS/MISS in the summary): kiln's best >= 90%% of the\n"
    "ceiling; host CPU <= 3 ms per test and >= 300 tests/s with 2 jobs.\n"
    "Exit status: 0 every point measured (a MISS is not an error), 2 usage\n"
    "error, 3 a point could not be measured. See docs/performance.md.\n");
}

/* "1,2,4" into B->conc. */
static int kh__parse_conc(kh__bench *B, const char *text) {
  char *copy = kh_strdup(text), *save = NULL;
  B->nconc = 0;
  int rc = 0;
  for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
    long long v;
    if (B->nconc == KH__MAX_CONC || kh_parse_ll(w, 1, 256, &v) != 0) {
      fprintf(stderr, "kiln bench: --concurrency: '%s' in '%s' is not a "
                      "count from 1 to 256 (at most %d of them)\n",
              w, text, KH__MAX_CONC);
      rc = -1;
      break;
    }
    B->conc[B->nconc++] = (int)v;
  }
  if (rc == 0 && B->nconc == 0) {
    fprintf(stderr, "kiln bench: --concurrency: '%s' holds no count\n", text);
    rc = -1;
  }
  free(copy);
  return rc;
}

static int kh__parse_skip(kh__bench *B, const char *text) {
  char *copy = kh_strdup(text), *save = NULL;
  int rc = 0;
  for (char *w = strtok_r(copy, ",", &save); w && rc == 0;
       w = strtok_r(NULL, ",", &save)) {
    size_t i = 0;
    while (i < 4 && strcmp(w, kh__sections[i]) != 0) i++;
    if (i == 4) {
      fprintf(stderr, "kiln bench: --skip: '%s' is not a section (ceiling, "
                      "kiln, none, host)\n", w);
      rc = -1;
    }
    B->skip |= 1u << i;
  }
  free(copy);
  return rc;
}

static int kh__parse_count(const char *flag, const char *text, int *out) {
  long long v;
  if (kh_parse_ll(text, 1, 1000000, &v) != 0) {
    fprintf(stderr, "kiln bench: %s: '%s' is not a count from 1 to 1000000\n",
            flag, text);
    return -1;
  }
  *out = (int)v;
  return 0;
}

/* --name VALUE or --name=VALUE at argv[*i]; NULL when argv[*i] is not
 * --name. */
static const char *kh__flag(const char *name, int argc, char **argv, int *i,
                            int *missing) {
  size_t n = strlen(name);
  if (strncmp(argv[*i], name, n) != 0) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n] != '\0') return NULL;
  if (*i + 1 >= argc) {
    *missing = 1;
    return NULL;
  }
  return argv[++*i];
}

/* 0 to go on, else the exit status (-1 for --help). */
static int kh__bench_args(kh__bench *B, int argc, char **argv) {
  B->tests = 48, B->host_tests = 300;
  static const int dflt[] = {1, 2, 3, 4, 6, 8};
  memcpy(B->conc, dflt, sizeof dflt);
  B->nconc = 6;
  for (int i = 1; i < argc; i++) {
    int missing = 0, bad = 0;
    const char *v;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      kh__bench_usage(stdout);
      return -1;
    } else if ((v = kh__flag("--backend", argc, argv, &i, &missing))) {
      int b = 0;
      while (kh_backend_names[b] && strcmp(kh_backend_names[b], v) != 0) b++;
      if (!kh_backend_names[b]) {
        fprintf(stderr, "kiln bench: --backend: '%s' is not auto, host, hip "
                        "or cuda\n", v);
        return KH_EXIT_USAGE;
      }
      B->backend = b;
    } else if ((v = kh__flag("--tests", argc, argv, &i, &missing))) {
      bad = kh__parse_count("--tests", v, &B->tests);
    } else if ((v = kh__flag("--host-tests", argc, argv, &i, &missing))) {
      bad = kh__parse_count("--host-tests", v, &B->host_tests);
    } else if ((v = kh__flag("--concurrency", argc, argv, &i, &missing))) {
      bad = kh__parse_conc(B, v);
    } else if ((v = kh__flag("--skip", argc, argv, &i, &missing))) {
      bad = kh__parse_skip(B, v);
    } else if ((v = kh__flag("--out", argc, argv, &i, &missing))) {
      free(B->out);
      B->out = kh_strdup(v);
    } else if ((v = kh__flag("--runner-dir", argc, argv, &i, &missing))) {
      B->runner_dir = v;
    } else if (!missing) {
      fprintf(stderr, "kiln bench: unknown argument '%s' (see kiln bench "
                      "--help)\n", argv[i]);
      return KH_EXIT_USAGE;
    }
    if (missing) {
      fprintf(stderr, "kiln bench: %s needs a value\n", argv[i]);
      return KH_EXIT_USAGE;
    }
    if (bad) return KH_EXIT_USAGE;
  }
  return 0;
}

/* ---- Children --------------------------------------------------------------- */

/* In a forked child: dies with kiln bench, sees one device (when the
 * backend has any and narrow is set), stdin from /dev/null, stdout and
 * stderr to out_fd; then execs argv. */
static void kh__child_exec(const kh__bench *B, int narrow, int out_fd,
                           char *const argv[]) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int null = open("/dev/null", O_RDONLY);
  if (null >= 0) dup2(null, 0);
  dup2(out_fd, 1);
  dup2(out_fd, 2);
  if (narrow && B->bi.ndevices > 0) kh_visible_narrow(&B->bi, 0);
  char spawn[32];
  snprintf(spawn, sizeof spawn, "%.3f", kh_now_ms());
  setenv("KILN_SPAWN_MS", spawn, 1);
  execv(argv[0], argv);
  fprintf(stderr, "kiln bench: cannot run %s: %s\n", argv[0], strerror(errno));
  _exit(127);
}

static double kh__cpu_ms(const struct rusage *ru) {
  return (double)ru->ru_utime.tv_sec * 1e3 + ru->ru_utime.tv_usec / 1e3 +
         (double)ru->ru_stime.tv_sec * 1e3 + ru->ru_stime.tv_usec / 1e3;
}

/* ---- Ceiling: context probes ----------------------------------------------- */

typedef struct kh__probe {
  pid_t pid;
  int fd;
  double t0;
  kh_buf out;
} kh__probe;

typedef struct kh__probe_sum {
  int failed;
  double open_ms, open_max, start_ms, cpu_ms;
  int nopen, nstart;
  char why[256];
} kh__probe_sum;

/* Reads the probe's records: runtime_init and process_start phases, and a
 * passing result. Returns 1 when it passed. */
static int kh__probe_parse(kh__probe *p, kh__probe_sum *s) {
  int passed = 0;
  char *save = NULL;
  const char *last = "";
  kh_buf_add(&p->out, "", 1);
  for (char *line = strtok_r(p->out.data, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    last = line;
    char *copy = kh_strdup(line);
    kp_record r;
    double ms;
    if (kp_parse(copy, &r, NULL) == 0) {
      const char *name = kp_get(&r, "name");
      if (strcmp(r.tag, "phase") == 0 && name &&
          kp_get_double(&r, "ms", &ms) == 0) {
        if (strcmp(name, "runtime_init") == 0) {
          s->open_ms += ms, s->nopen++;
          if (ms > s->open_max) s->open_max = ms;
        } else if (strcmp(name, "process_start") == 0) {
          s->start_ms += ms, s->nstart++;
        }
      }
      if (strcmp(r.tag, "result") == 0 && kp_get(&r, "status"))
        passed = strcmp(kp_get(&r, "status"), "pass") == 0;
      if (!passed && strcmp(r.tag, "result") == 0 && kp_get(&r, "message"))
        snprintf(s->why, sizeof s->why, "%s", kp_get(&r, "message"));
    }
    free(copy);
  }
  if (!passed && !s->why[0])
    snprintf(s->why, sizeof s->why, "%s", *last ? last : "no output");
  return passed;
}

static void kh__probe_start(const kh__bench *B, kh__probe *p) {
  int fds[2];
  memset(p, 0, sizeof *p);
  p->fd = -1;
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  char *argv[] = {(char *)B->bi.runner, "--context-probe", NULL};
  p->t0 = kh_now_ms();
  p->pid = fork();
  if (p->pid == 0) kh__child_exec(B, 1, fds[1], argv);
  close(fds[1]);
  if (p->pid < 0) {
    close(fds[0]);
    return;
  }
  p->fd = fds[0];
}

/* The probe's pipe reached end of file (or it ran out of time): reap it. */
static void kh__probe_finish(kh__probe *p, kh__probe_sum *s) {
  if (p->fd >= 0) close(p->fd);
  int st = 0;
  struct rusage ru;
  while (wait4(p->pid, &st, 0, &ru) < 0 && errno == EINTR) {
  }
  s->cpu_ms += kh__cpu_ms(&ru);
  int passed = kh__probe_parse(p, s);
  if (!passed || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    s->failed++;
    if (!s->why[0] || passed)
      snprintf(s->why, sizeof s->why, "probe %s %d",
               WIFSIGNALED(st) ? "killed by signal" : "exited",
               WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  }
  kh_buf_free(&p->out);
  memset(p, 0, sizeof *p);
  p->fd = -1;
}

static void kh__ceiling_point(kh__bench *B, int conc, kh__point *pt) {
  kh__probe *act = kh_xcalloc((size_t)conc, sizeof *act);
  kh__probe_sum s = {0};
  for (int i = 0; i < conc; i++) act[i].fd = -1;
  int started = 0, finished = 0;
  double t0 = kh_now_ms();
  while (finished < B->tests) {
    for (int i = 0; i < conc && started < B->tests; i++)
      if (act[i].pid == 0) {
        kh__probe_start(B, &act[i]);
        started++;
        if (act[i].pid <= 0) {    /* could not fork: count it failed */
          s.failed++, finished++;
          snprintf(s.why, sizeof s.why, "cannot start a probe: %s",
                   strerror(errno));
          act[i].pid = 0;
        }
      }
    struct pollfd pfd[256];   /* conc is at most 256 */
    int idx[256], n = 0;
    for (int i = 0; i < conc; i++)
      if (act[i].pid > 0) {
        pfd[n] = (struct pollfd){.fd = act[i].fd, .events = POLLIN};
        idx[n++] = i;
      }
    if (n == 0) continue;
    if (poll(pfd, (nfds_t)n, 1000) < 0 && errno != EINTR) break;
    for (int k = 0; k < n; k++) {
      kh__probe *p = &act[idx[k]];
      int done = 0;
      if (pfd[k].revents) {
        char chunk[4096];
        ssize_t got = kh_read(p->fd, chunk, sizeof chunk);
        if (got > 0 && p->out.len < (64u << 10))
          kh_buf_add(&p->out, chunk, (size_t)got);
        done = got == 0 || (got < 0 && errno != EAGAIN);
      }
      if (!done && kh_now_ms() - p->t0 > KH__PROBE_TIMEOUT_MS) {
        kill(p->pid, SIGKILL);
        done = 1;
      }
      if (done) kh__probe_finish(p, &s), finished++;
    }
  }
  double wall_ms = kh_now_ms() - t0;
  free(act);
  pt->what = "ceiling", pt->conc = conc, pt->tests = B->tests;
  pt->available = 1;
  pt->failed = s.failed;
  pt->wall_s = wall_ms / 1e3;
  pt->tests_per_s = B->tests / pt->wall_s;
  pt->cpu_ms_per_test = s.cpu_ms / B->tests;
  pt->open_ms_mean = s.nopen ? s.open_ms / s.nopen : NAN;
  pt->open_ms_max = s.nopen ? s.open_max : NAN;
  pt->start_ms_mean = s.nstart ? s.start_ms / s.nstart : NAN;
  if (s.failed)
    snprintf(pt->note, sizeof pt->note, "%d of %d probes failed: %s",
             s.failed, B->tests, s.why);
}

/* ---- kiln's own runs ----------------------------------------------------------- */

/* Runs `kiln run ARGS` (this binary) with its console in DIR/console.txt;
 * fills wall, CPU of the whole tree, and the exit status. */
static int kh__kiln_run(const kh__bench *B, int narrow, char **args, int nargs,
                        const char *dir, double *wall_s, double *cpu_ms,
                        int *status) {
  if (kh_mkdir_p(dir, 0755) != 0) return -1;
  char *log = kh_asprintf("%s/console.txt", dir);
  int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  free(log);
  if (fd < 0) return -1;
  char **argv = kh_xcalloc((size_t)nargs + 3, sizeof *argv);
  argv[0] = (char *)B->self;
  argv[1] = "run";
  memcpy(argv + 2, args, (size_t)nargs * sizeof *argv);
  double t0 = kh_now_ms();
  pid_t pid = fork();
  if (pid == 0) kh__child_exec(B, narrow, fd, argv);
  close(fd);
  free(argv);
  if (pid < 0) return -1;
  struct rusage ru;
  while (wait4(pid, status, 0, &ru) < 0 && errno == EINTR) {
  }
  *wall_s = (kh_now_ms() - t0) / 1e3;
  *cpu_ms = kh__cpu_ms(&ru);
  return 0;
}

/* One kiln point: `kiln run --backend B --repeat N ... -- SELECTOR`. */
static void kh__kiln_point(kh__bench *B, const char *what, int conc,
                           int backend, int tests, const char *selector,
                           const char *extra1, const char *extra2,
                           kh__point *pt) {
  pt->what = what, pt->conc = conc, pt->tests = tests;
  snprintf(pt->run_dir, sizeof pt->run_dir, "%s/%s-c%d", B->out, what, conc);
  char jobs[16], repeat[16];
  snprintf(jobs, sizeof jobs, "%d", conc);
  snprintf(repeat, sizeof repeat, "%d", tests);
  char *args[24];
  int n = 0;
  args[n++] = "--backend", args[n++] = (char *)kh_backend_names[backend];
  args[n++] = "--repeat", args[n++] = repeat;
  args[n++] = "--jobs", args[n++] = jobs;
  if (strcmp(what, "host") != 0)   /* host: slots follow --jobs */
    args[n++] = "--slots", args[n++] = jobs;
  args[n++] = "--out", args[n++] = pt->run_dir;
  if (extra1) args[n++] = (char *)extra1;
  if (extra2) args[n++] = (char *)extra2;
  args[n++] = "--", args[n++] = (char *)selector;
  double wall = 0, cpu = 0;
  int st = 0;
  if (kh__kiln_run(B, strcmp(what, "host") != 0, args, n, pt->run_dir, &wall,
                   &cpu, &st) != 0) {
    snprintf(pt->note, sizeof pt->note, "cannot start kiln run in %s: %s",
             pt->run_dir, strerror(errno));
    pt->failed = tests;
    return;
  }
  pt->available = 1;
  pt->wall_s = wall;
  pt->tests_per_s = tests / wall;
  pt->cpu_ms_per_test = cpu / tests;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    pt->failed = tests;   /* the report says which; we only know "some" */
    snprintf(pt->note, sizeof pt->note, "kiln run %s %d: see %s/console.txt",
             WIFEXITED(st) ? "exited" : "killed by signal",
             WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), pt->run_dir);
  }
}

/* Does this kiln's `run` know --warm (the warm-child pool)? */
static int kh__has_warm(const kh__bench *B) {
  char *argv[] = {(char *)B->self, "--help", NULL};
  char *out = NULL;
  int st = kh_capture(argv, 1 << 20, 30, &out, NULL);
  int has = st == 0 && out && strstr(out, "--warm") != NULL;
  free(out);
  return has;
}

/* ---- The sections --------------------------------------------------------------- */

static kh__point *kh__new_point(kh__bench *B) {
  if (B->npts == KH__MAX_POINTS) return NULL;
  kh__point *p = &B->pts[B->npts++];
  memset(p, 0, sizeof *p);
  p->ratio = NAN, p->open_ms_mean = p->open_ms_max = p->start_ms_mean = NAN;
  return p;
}

static void kh__say(const kh__point *p) {
  if (!p->available) {
    fprintf(stderr, "kiln bench: %s: n/a (%s)\n", p->what, p->note);
    return;
  }
  fprintf(stderr, "kiln bench: %-9s c=%-2d %4d tests in %7.3f s = %8.1f/s%s%s\n",
          p->what, p->conc, p->tests, p->wall_s, p->tests_per_s,
          p->note[0] ? "; " : "", p->note);
}

static void kh__run_sections(kh__bench *B) {
  int backend = B->bi.backend;
  if (!(B->skip & KH__S_CEILING)) {
    /* One probe first, unmeasured: a driver's first start in a while
     * (module load, persistence off) is not what a test run pays. */
    kh__point warmup;
    int saved = B->tests;
    B->tests = 1;
    kh__ceiling_point(B, 1, &warmup);
    B->tests = saved;
    for (int i = 0; i < B->nconc; i++) {
      kh__point *p = kh__new_point(B);
      if (!p) break;
      kh__ceiling_point(B, B->conc[i], p);
      kh__say(p);
    }
  }
  if (!(B->skip & KH__S_KILN)) {
    B->has_warm = kh__has_warm(B);
    for (int i = 0; i < B->nconc; i++) {
      kh__point *p = kh__new_point(B);
      if (!p) break;
      kh__kiln_point(B, "kiln", B->conc[i], backend, B->tests,
                     "bench/trivial", NULL, NULL, p);
      kh__say(p);
      if (!B->has_warm) continue;
      p = kh__new_point(B);
      if (!p) break;
      kh__kiln_point(B, "kiln_cold", B->conc[i], backend, B->tests,
                     "bench/trivial", "--warm", "0", p);
      kh__say(p);
    }
    if (!B->has_warm) {
      kh__point *p = kh__new_point(B);
      if (p) {
        p->what = "kiln_cold";
        snprintf(p->note, sizeof p->note,
                 "this kiln has no `run --warm` (no warm pool): every kiln "
                 "row is cold");
        kh__say(p);
      }
    }
  }
  if (!(B->skip & KH__S_NONE)) {
    kh__point *p = kh__new_point(B);
    if (p) {
      kh__kiln_point(B, "none", 1, backend, B->tests, "bench/trivial",
                     "--isolation", "none", p);
      kh__say(p);
    }
  }
  if (!(B->skip & KH__S_HOST)) {
    kh__point *p = kh__new_point(B);
    if (p) {
      kh__kiln_point(B, "host", 2, KH_BACKEND_HOST, B->host_tests,
                     "bench/noop", NULL, NULL, p);
      kh__say(p);
    }
  }
}

/* ---- Summary -------------------------------------------------------------------- */

typedef struct kh__summary {
  const kh__point *ceiling, *kiln, *none, *host;
} kh__summary;

static const kh__point *kh__best(const kh__bench *B, const char *what) {
  const kh__point *best = NULL;
  for (int i = 0; i < B->npts; i++) {
    const kh__point *p = &B->pts[i];
    if (strcmp(p->what, what) != 0 || !p->available || p->failed) continue;
    if (!best || p->tests_per_s > best->tests_per_s) best = p;
  }
  return best;
}

static void kh__summarise(kh__bench *B, kh__summary *s) {
  s->ceiling = kh__best(B, "ceiling");
  s->kiln = kh__best(B, "kiln");
  s->none = kh__best(B, "none");
  s->host = kh__best(B, "host");
  for (int i = 0; i < B->npts && s->ceiling; i++) {
    kh__point *p = &B->pts[i];
    if (p->available && strcmp(p->what, "host") != 0)
      p->ratio = p->tests_per_s / s->ceiling->tests_per_s;
  }
}

static const char *kh__verdict(int pass) { return pass ? "PASS" : "MISS"; }

static void kh__print_table(const kh__bench *B, const kh__summary *s) {
  printf("%-10s %5s %6s %9s %9s %12s %8s  %s\n", "what", "conc", "tests",
         "wall_s", "tests/s", "cpu_ms/test", "ratio", "note");
  for (int i = 0; i < B->npts; i++) {
    const kh__point *p = &B->pts[i];
    if (!p->available) {
      printf("%-10s %5s %6s %9s %9s %12s %8s  %s\n", p->what, "-", "-", "n/a",
             "n/a", "n/a", "n/a", p->note);
      continue;
    }
    char ratio[16] = "-";
    if (!isnan(p->ratio)) snprintf(ratio, sizeof ratio, "%.0f%%", 100 * p->ratio);
    printf("%-10s %5d %6d %9.3f %9.1f %12.2f %8s  %s\n", p->what, p->conc,
           p->tests, p->wall_s, p->tests_per_s, p->cpu_ms_per_test, ratio,
           p->note);
  }
  printf("\n");
  if (s->ceiling)
    printf("ceiling:         %.1f tests/s (concurrency %d; context open %.3g ms "
           "mean, %.3g max)\n", s->ceiling->tests_per_s, s->ceiling->conc,
           s->ceiling->open_ms_mean, s->ceiling->open_ms_max);
  else
    printf("ceiling:         n/a\n");
  if (s->kiln && s->ceiling)
    printf("kiln best:       %.1f tests/s (concurrency %d) = %.0f%% of the "
           "ceiling  %s (target >= %.0f%%)\n", s->kiln->tests_per_s,
           s->kiln->conc, 100 * s->kiln->ratio,
           kh__verdict(s->kiln->ratio >= KH__TARGET_RATIO),
           100 * KH__TARGET_RATIO);
  else if (s->kiln)
    printf("kiln best:       %.1f tests/s (concurrency %d); no ceiling to "
           "compare with\n", s->kiln->tests_per_s, s->kiln->conc);
  else
    printf("kiln best:       n/a\n");
  if (s->none)
    printf("isolation none:  %.1f tests/s%s", s->none->tests_per_s,
           s->ceiling ? "" : "\n");
  if (s->none && s->ceiling)
    printf(" = %.1fx the ceiling (one process, shared context)\n",
           s->none->ratio);
  if (!s->none) printf("isolation none:  n/a\n");
  if (s->host) {
    printf("host CPU:        %.2f ms per test  %s (target <= %.0f)\n",
           s->host->cpu_ms_per_test,
           kh__verdict(s->host->cpu_ms_per_test <= KH__TARGET_CPU_MS),
           KH__TARGET_CPU_MS);
    printf("host tests/s:    %.1f with 2 jobs  %s (target >= %.0f)\n",
           s->host->tests_per_s,
           kh__verdict(s->host->tests_per_s >= KH__TARGET_TESTS_S),
           KH__TARGET_TESTS_S);
  } else {
    printf("host CPU:        n/a\nhost tests/s:    n/a\n");
  }
  printf("bench: %s/bench.yaml\n", B->out);
  fflush(stdout);
}

/* ---- bench.yaml ------------------------------------------------------------------ */


static void kh__yn(kh_buf *y, const char *key, double v) {
  if (isnan(v)) kh_buf_addf(y, "%s: null", key);
  else if (isinf(v)) kh_buf_addf(y, "%s: %s.inf", key, v < 0 ? "-" : "");
  else kh_buf_addf(y, "%s: %.6g", key, v);
}

static void kh__host_info(kh_buf *y) {
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  struct utsname u;
  char *cpuinfo = NULL, model[256] = "";
  if (kh_read_file("/proc/cpuinfo", 1 << 20, &cpuinfo, NULL) == 0) {
    char *m = strstr(cpuinfo, "model name");
    char *colon = m ? strchr(m, ':') : NULL;
    if (colon) snprintf(model, sizeof model, "%.*s",
                        (int)strcspn(colon + 2, "\n"), colon + 2);
  }
  free(cpuinfo);
  double load[3] = {NAN, NAN, NAN};
  if (getloadavg(load, 3) < 0) load[0] = NAN;
  kh_buf_add(y, "host: {name: ", 13);
  kh_buf_add_yq(y, host);
  kh_buf_add(y, ", kernel: ", 10);
  kh_buf_add_yq(y, uname(&u) == 0 ? u.release : "");
  kh_buf_addf(y, ", cpus: %ld, cpu_model: ", sysconf(_SC_NPROCESSORS_ONLN));
  kh_buf_add_yq(y, model);
  kh_buf_add(y, ", ", 2);
  kh__yn(y, "load_avg_1m", load[0]);
  kh_buf_add(y, "}\n", 2);
}

static void kh__ypoint(kh_buf *y, const kh__point *p) {
  kh_buf_addf(y, "  - {what: %s, available: %s", p->what,
               p->available ? "true" : "false");
  if (p->available) {
    kh_buf_addf(y, ", concurrency: %d, tests: %d, failed: %d, ", p->conc,
                 p->tests, p->failed);
    kh__yn(y, "wall_s", p->wall_s), kh_buf_add(y, ", ", 2);
    kh__yn(y, "tests_per_s", p->tests_per_s), kh_buf_add(y, ", ", 2);
    kh__yn(y, "cpu_ms_per_test", p->cpu_ms_per_test), kh_buf_add(y, ", ", 2);
    kh__yn(y, "ratio_to_ceiling", p->ratio);
  }
  if (strcmp(p->what, "ceiling") == 0 && p->available) {
    kh_buf_add(y, ", ", 2), kh__yn(y, "context_open_ms_mean", p->open_ms_mean);
    kh_buf_add(y, ", ", 2), kh__yn(y, "context_open_ms_max", p->open_ms_max);
    kh_buf_add(y, ", ", 2), kh__yn(y, "process_start_ms_mean", p->start_ms_mean);
  }
  if (p->run_dir[0]) kh_buf_add(y, ", run_dir: ", 11), kh_buf_add_yq(y, p->run_dir);
  if (p->note[0]) kh_buf_add(y, ", note: ", 8), kh_buf_add_yq(y, p->note);
  kh_buf_add(y, "}\n", 2);
}

static void kh__ysummary(kh_buf *y, const kh__summary *s) {
  kh_buf_add(y, "summary:\n", 9);
  if (s->ceiling)
    kh_buf_addf(y, "  ceiling: {tests_per_s: %.6g, concurrency: %d}\n",
                 s->ceiling->tests_per_s, s->ceiling->conc);
  else
    kh_buf_add(y, "  ceiling: null\n", 16);
  if (s->kiln) {
    kh_buf_addf(y, "  kiln: {tests_per_s: %.6g, concurrency: %d, ",
                 s->kiln->tests_per_s, s->kiln->conc);
    kh__yn(y, "ratio_to_ceiling", s->kiln->ratio);
    kh_buf_addf(y, ", target_ratio: %g", KH__TARGET_RATIO);
    if (s->ceiling)
      kh_buf_addf(y, ", pass: %s", s->kiln->ratio >= KH__TARGET_RATIO
                                        ? "true" : "false");
    kh_buf_add(y, "}\n", 2);
  } else {
    kh_buf_add(y, "  kiln: null\n", 13);
  }
  if (s->none) {
    kh_buf_addf(y, "  isolation_none: {tests_per_s: %.6g, ", s->none->tests_per_s);
    kh__yn(y, "ratio_to_ceiling", s->none->ratio);
    kh_buf_add(y, "}\n", 2);
  } else {
    kh_buf_add(y, "  isolation_none: null\n", 23);
  }
  if (s->host)
    kh_buf_addf(y, "  host: {cpu_ms_per_test: %.6g, target_cpu_ms: %g, "
                 "cpu_pass: %s, tests_per_s: %.6g, target_tests_per_s: %g, "
                 "tests_per_s_pass: %s, jobs: 2}\n",
                 s->host->cpu_ms_per_test, KH__TARGET_CPU_MS,
                 s->host->cpu_ms_per_test <= KH__TARGET_CPU_MS ? "true" : "false",
                 s->host->tests_per_s, KH__TARGET_TESTS_S,
                 s->host->tests_per_s >= KH__TARGET_TESTS_S ? "true" : "false");
  else
    kh_buf_add(y, "  host: null\n", 13);
}

static int kh__write_yaml(const kh__bench *B, const kh__summary *s) {
  kh_buf y = {0};
  char start[40];
  kh_iso_time(B->start_s, start, sizeof start);
  char *git = kh__git_rev();
  kh_buf_addf(&y, "# kiln bench (docs/performance.md)\nformat_version: 1\n");
  kh_buf_add(&y, "kiln_version: ", 14), kh_buf_add_yq(&y, KILN_VERSION);
  kh_buf_add(&y, "\ngit: ", 6), kh_buf_add_yq(&y, git);
  kh_buf_add(&y, "\nstart: ", 8), kh_buf_add_yq(&y, start);
  kh_buf_addf(&y, "\nwall_s: %.3f\nbackend: %s\nrunner: ",
               kh_wall_s() - B->start_s, kh_backend_names[B->bi.backend]);
  kh_buf_add_yq(&y, B->bi.runner);
  kh_buf_add(&y, "\n", 1);
  if (B->bi.ndevices > 0) {
    kh_buf_add(&y, "device: {name: ", 15), kh_buf_add_yq(&y, B->bi.dev[0].name);
    kh_buf_add(&y, ", arch: ", 8), kh_buf_add_yq(&y, B->bi.dev[0].arch);
    kh_buf_add(&y, ", visible: ", 11), kh_buf_add_yq(&y, B->bi.dev[0].visible);
    kh_buf_addf(&y, ", devices_on_host: %d}\n", B->bi.ndevices);
  } else {
    kh_buf_add(&y, "device: null\n", 13);
  }
  kh__host_info(&y);
  kh_buf_addf(&y, "settings: {tests: %d, host_tests: %d, warm_flag: %s, "
               "concurrency: [", B->tests, B->host_tests,
               B->has_warm ? "true" : "false");
  for (int i = 0; i < B->nconc; i++)
    kh_buf_addf(&y, "%s%d", i ? ", " : "", B->conc[i]);
  kh_buf_add(&y, "], skip: [", 10);
  for (int i = 0, n = 0; i < 4; i++)
    if (B->skip & (1u << i)) kh_buf_addf(&y, "%s%s", n++ ? ", " : "", kh__sections[i]);
  kh_buf_add(&y, "]}\npoints:\n", 11);
  for (int i = 0; i < B->npts; i++) kh__ypoint(&y, &B->pts[i]);
  if (B->npts == 0) kh_buf_add(&y, "  []\n", 5);
  kh__ysummary(&y, s);
  char *path = kh_asprintf("%s/bench.yaml", B->out);
  int rc = kh_write_atomic(path, y.data, y.len);
  if (rc != 0) fprintf(stderr, "kiln bench: %s: %s\n", path, strerror(errno));
  free(path), free(git);
  kh_buf_free(&y);
  return rc;
}

/* ---- main ----------------------------------------------------------------------- */

/* reports/runs/<UTC time>-bench, made unique with a suffix. */
static char *kh__bench_default_out(void) {
  char stamp[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  kh_mkdir_p("reports/runs", 0755);
  for (int n = 1; n < 1000; n++) {
    char *p = n == 1 ? kh_asprintf("reports/runs/%s-bench", stamp)
                     : kh_asprintf("reports/runs/%s-bench-%d", stamp, n);
    if (mkdir(p, 0755) == 0) return p;
    free(p);
  }
  return NULL;
}

static int kh__bench_setup(kh__bench *B) {
  ssize_t n = readlink("/proc/self/exe", B->self, sizeof B->self - 1);
  if (n <= 0) {
    fprintf(stderr, "kiln bench: cannot find this kiln (/proc/self/exe): "
                    "%s\n", strerror(errno));
    return KH_EXIT_INFRA;
  }
  B->self[n] = '\0';
  kh_err err;
  if (kh_backend_resolve(B->backend, B->runner_dir, &B->bi, &err) != 0) {
    fprintf(stderr, "kiln bench: %s\n", err.msg);
    return KH_EXIT_INFRA;
  }
  if (B->bi.ndevices == 0) {
    fprintf(stderr, "kiln bench: the %s runner finds no device: %s\n",
            kh_backend_names[B->bi.backend],
            *B->bi.error ? B->bi.error : "none found");
    return KH_EXIT_INFRA;
  }
  if (!B->out) B->out = kh__bench_default_out();
  if (!B->out || kh_mkdir_p(B->out, 0755) != 0) {
    fprintf(stderr, "kiln bench: cannot create the bench folder %s: %s\n",
            B->out ? B->out : "under reports/runs", strerror(errno));
    return KH_EXIT_INFRA;
  }
  return 0;
}

int kh_bench_main(int argc, char **argv) {
  kh__bench *B = kh_xcalloc(1, sizeof *B);
  int rc = kh__bench_args(B, argc, argv);
  if (rc == 0) rc = kh__bench_setup(B);
  if (rc == 0) {
    B->start_s = kh_wall_s();
    fprintf(stderr, "kiln bench: backend %s, device %s, %d tests per point, "
                    "folder %s\n", kh_backend_names[B->bi.backend],
            B->bi.dev[0].name, B->tests, B->out);
    kh__run_sections(B);
    kh__summary s;
    kh__summarise(B, &s);
    kh__print_table(B, &s);
    if (kh__write_yaml(B, &s) != 0) rc = KH_EXIT_INFRA;
    for (int i = 0; i < B->npts; i++)
      if (B->pts[i].failed || (!B->pts[i].available &&
                               strcmp(B->pts[i].what, "kiln_cold") != 0))
        rc = KH_EXIT_INFRA;
  }
  free(B->out);
  free(B);
  return rc < 0 ? KH_EXIT_OK : rc;
}
