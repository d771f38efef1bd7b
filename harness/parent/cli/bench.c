/* `kiln bench`: kiln's speed against the ceiling the GPU runtime allows,
 * and its own cost per test. Sections, each a list of points: the ceiling
 * (runner --context-probe processes, N at concurrency c), kiln (this
 * binary's `kiln run` on bench/trivial at the same concurrencies, warm and
 * cold), isolation none (the same tests in one process), and the host
 * figures: `kiln run --backend host --jobs 2` on bench/noop, the runner
 * alone on the same test two at a time, and kiln's peak RSS at two test
 * counts. Every process starts through the run room's one spawn function,
 * narrowed to one device as `kiln run` narrows a test. CPU comes from
 * wait4's rusage of each whole process tree.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A probe that takes longer than this is killed and counted as failed. */
#define PROBE_TIMEOUT_MS 120e3

static const char *const sections[] = {"ceiling", "kiln", "none", "host"};

static double cpu_ms(const struct rusage *ru) {
  return (double)ru->ru_utime.tv_sec * 1e3 + ru->ru_utime.tv_usec / 1e3 +
         (double)ru->ru_stime.tv_sec * 1e3 + ru->ru_stime.tv_usec / 1e3;
}

/* ---- Many processes, c at a time -------------------------------------------------- */

typedef struct proc {
  pid_t pid;
  int fd;                   /* its stdout (and result fd): EOF ends it */
  double t0;
  kh_buf out;
} proc;

typedef struct tally {
  int failed;
  double open_ms, open_max, start_ms, cpu_ms;
  int nopen, nstart;
  char why[256];
} tally;

/* A context probe's records: runtime_init and process_start phases, and a
 * passing result. Returns 1 when it passed. */
static int probe_records(proc *p, tally *s) {
  int passed = 0;
  char *save = NULL;
  kh_buf_add(&p->out, "", 1);
  for (char *line = strtok_r(p->out.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    kp_record r;
    if (kp_parse(line, &r, NULL) != 0) continue;
    kp_phase ph;
    kp_result res;
    if (strcmp(r.tag, "phase") == 0 &&
        kp_decode(&kp_rec_phase, r.fields, r.nfields, &ph, NULL, 0) == 0 && ph.name) {
      if (strcmp(ph.name, "runtime_init") == 0) {
        s->open_ms += ph.ms, s->nopen++;
        if (ph.ms > s->open_max) s->open_max = ph.ms;
      } else if (strcmp(ph.name, "process_start") == 0) {
        s->start_ms += ph.ms, s->nstart++;
      }
    } else if (strcmp(r.tag, "result") == 0 &&
               kp_decode(&kp_rec_result, r.fields, r.nfields, &res, NULL, 0) == 0) {
      passed = res.status && strcmp(res.status, "pass") == 0;
      if (!passed && res.message) snprintf(s->why, sizeof s->why, "%s", res.message);
    }
  }
  return passed;
}

static void proc_start(const kcli__bench_data *B, proc *p, char **argv, int probe) {
  int fds[2];
  memset(p, 0, sizeof *p);
  p->fd = -1;
  if (pipe2(fds, O_CLOEXEC) != 0) return;
  char spawn[48];
  p->t0 = kh_now_ms();
  snprintf(spawn, sizeof spawn, "KILN_SPAWN_MS=%.3f", p->t0);
  const char *env[] = {spawn, NULL};
  krun_spawn_req req = {.argv = argv, .env = env, .fd_in = -1, .fd_out = fds[1],
                        .fd_err = probe ? -1 : fds[1], .fd_result = probe ? -1 : fds[1],
                        .narrow = &B->bi, .devices = (int[]){0}, .ndevices = 1,
                        .die_with_parent = 1};
  int exec_errno = 0;
  if (krun_spawn(&req, &p->pid, &exec_errno) != 0) p->pid = -1;
  close(fds[1]);
  if (p->pid <= 0) {
    close(fds[0]);
    return;
  }
  p->fd = fds[0];
}

/* Its pipe reached end of file (or it ran out of time): reap it. */
static void proc_finish(proc *p, tally *s, int probe) {
  if (p->fd >= 0) close(p->fd);
  int st = 0;
  struct rusage ru;
  while (wait4(p->pid, &st, 0, &ru) < 0 && errno == EINTR) {
  }
  s->cpu_ms += cpu_ms(&ru);
  int passed = probe ? probe_records(p, s) : 1;
  if (!passed || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    s->failed++;
    if (!s->why[0] || passed)
      snprintf(s->why, sizeof s->why, "%s %s %d", probe ? "probe" : "runner",
               WIFSIGNALED(st) ? "killed by signal" : "exited",
               WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
  }
  kh_buf_free(&p->out);
  memset(p, 0, sizeof *p);
  p->fd = -1;
}

/* n runs of argv, conc at a time; fills the point's wall, tests/s, CPU. */
static void batch(const kcli__bench_data *B, char **argv, int probe, int conc, int n,
                  tally *s, kcli__point *pt) {
  proc *act = kh_xcalloc((size_t)conc, sizeof *act);
  for (int i = 0; i < conc; i++) act[i].fd = -1;
  int started = 0, finished = 0;
  double t0 = kh_now_ms();
  while (finished < n) {
    for (int i = 0; i < conc && started < n; i++)
      if (act[i].pid == 0) {
        proc_start(B, &act[i], argv, probe);
        started++;
        if (act[i].pid <= 0) {    /* could not start: count it failed */
          s->failed++, finished++;
          snprintf(s->why, sizeof s->why, "cannot start %s: %s", argv[0], strerror(errno));
          act[i].pid = 0;
        }
      }
    struct pollfd pfd[256];   /* conc is at most 256 */
    int idx[256], k = 0;
    for (int i = 0; i < conc; i++)
      if (act[i].pid > 0) pfd[k] = (struct pollfd){act[i].fd, POLLIN, 0}, idx[k++] = i;
    if (k == 0) continue;
    if (poll(pfd, (nfds_t)k, 1000) < 0 && errno != EINTR) break;
    for (int m = 0; m < k; m++) {
      proc *p = &act[idx[m]];
      int done = 0;
      if (pfd[m].revents) {
        char chunk[4096];
        ssize_t got = kh_read(p->fd, chunk, sizeof chunk);
        if (got > 0 && p->out.len < (64u << 10)) kh_buf_add(&p->out, chunk, (size_t)got);
        done = got == 0 || (got < 0 && errno != EAGAIN);
      }
      if (!done && kh_now_ms() - p->t0 > PROBE_TIMEOUT_MS) kill(p->pid, SIGKILL), done = 1;
      if (done) proc_finish(p, s, probe), finished++;
    }
  }
  free(act);
  pt->conc = conc, pt->tests = n, pt->available = 1, pt->failed = s->failed;
  pt->wall_s = (kh_now_ms() - t0) / 1e3;
  pt->tests_per_s = n / pt->wall_s;
  pt->cpu_ms_per_test = s->cpu_ms / n;
  if (s->failed)
    snprintf(pt->note, sizeof pt->note, "%d of %d %s failed: %s", s->failed, n,
             probe ? "probes" : "runs", s->why);
}

/* The ceiling: processes that only open the engine context and close it. */
static void ceiling_point(kcli__bench_data *B, int conc, int n, kcli__point *pt) {
  char *argv[] = {B->bi.runner, "--context-probe", NULL};
  tally s = {0};
  pt->what = "ceiling";
  batch(B, argv, 1, conc, n, &s, pt);
  pt->open_ms_mean = s.nopen ? s.open_ms / s.nopen : NAN;
  pt->open_ms_max = s.nopen ? s.open_max : NAN;
  pt->start_ms_mean = s.nstart ? s.start_ms / s.nstart : NAN;
}

/* The runner alone on the no-op test, as a shell loop would run it: the
 * figure kiln's own CPU per test is held against. */
static void runner_point(kcli__bench_data *B, kcli__point *pt) {
  char *argv[] = {B->bi.runner, "--result-fd", "3", "--", "bench/noop", NULL};
  tally s = {0};
  pt->what = "runner";
  batch(B, argv, 0, 2, B->host_tests, &s, pt);
}

/* ---- kiln's own runs -------------------------------------------------------------- */

/* `kiln run --backend B --repeat N ... -- SELECTOR` (this binary), its
 * console in DIR/console.txt; wall, CPU of the whole tree, and for the
 * rss points kiln's own peak RSS from its report. */
static void kiln_point(kcli__bench_data *B, const char *what, int conc, int backend, int tests,
                       const char *selector, const char *extra1, const char *extra2,
                       kcli__point *pt) {
  pt->what = what, pt->conc = conc, pt->tests = tests;
  if (strcmp(what, "rss") == 0)
    snprintf(pt->run_dir, sizeof pt->run_dir, "%s/rss-%d", B->out, tests);
  else
    snprintf(pt->run_dir, sizeof pt->run_dir, "%s/%s-c%d", B->out, what, conc);
  int round = 1;   /* host-c2, host-c2-r2, ... for the host rounds */
  for (int i = 0; i < B->npts; i++)
    round += &B->pts[i] != pt && B->pts[i].what == what && B->pts[i].conc == conc;
  if (round > 1) {
    size_t len = strlen(pt->run_dir);
    snprintf(pt->run_dir + len, sizeof pt->run_dir - len, "-r%d", round);
  }
  char jobs[16], repeat[16];
  snprintf(jobs, sizeof jobs, "%d", conc);
  snprintf(repeat, sizeof repeat, "%d", tests);
  int gpu = backend != KRUN_BACKEND_HOST;
  char *argv[24];
  int n = 0;
  argv[n++] = B->self, argv[n++] = "run";
  argv[n++] = "--backend", argv[n++] = (char *)krun_backend_names[backend];
  argv[n++] = "--repeat", argv[n++] = repeat, argv[n++] = "--jobs", argv[n++] = jobs;
  if (gpu) argv[n++] = "--slots", argv[n++] = jobs;   /* host: slots follow --jobs */
  argv[n++] = "--out", argv[n++] = pt->run_dir;
  if (extra1) argv[n++] = (char *)extra1;
  if (extra2) argv[n++] = (char *)extra2;
  if (B->contain) argv[n++] = "--contain", argv[n++] = (char *)B->contain;
  argv[n++] = "--", argv[n++] = (char *)selector, argv[n] = NULL;
  char *log = kh_asprintf("%s/console.txt", pt->run_dir);
  int fd = kh_mkdir_p(pt->run_dir, 0755) == 0
               ? open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
  free(log);
  pid_t pid;
  int exec_errno = 0;
  krun_spawn_req req = {.argv = argv, .fd_in = -1, .fd_out = fd, .fd_err = fd,
                        .fd_result = -1, .narrow = gpu ? &B->bi : NULL, .devices = (int[]){0}, .ndevices = 1,
                        .die_with_parent = 1};
  double t0 = kh_now_ms();
  if (fd < 0 || krun_spawn(&req, &pid, &exec_errno) != 0) {
    snprintf(pt->note, sizeof pt->note, "cannot start kiln run in %s: %s", pt->run_dir,
             strerror(errno));
    pt->failed = tests;
    if (fd >= 0) close(fd);
    return;
  }
  close(fd);
  int st = 0;
  struct rusage ru;
  while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR) {
  }
  pt->available = 1;
  pt->wall_s = (kh_now_ms() - t0) / 1e3;
  pt->tests_per_s = tests / pt->wall_s;
  pt->cpu_ms_per_test = cpu_ms(&ru) / tests;
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    pt->failed = tests;   /* the report says which; we only know "some" */
    snprintf(pt->note, sizeof pt->note, "kiln run %s %d: see %s/console.txt",
             WIFEXITED(st) ? "exited" : "killed by signal",
             WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), pt->run_dir);
  }
  krep_report rep;
  kh_err err;
  if (krep_read(pt->run_dir, &rep, &err) == 0) pt->peak_rss_kb = rep.peak_rss_kb;
  krep_free(&rep);
}

/* ---- The sections -------------------------------------------------------------------- */

static kcli__point *new_point(kcli__bench_data *B) {
  if (B->npts == KCLI__BENCH_MAX_POINTS) return NULL;
  kcli__point *p = &B->pts[B->npts++];
  memset(p, 0, sizeof *p);
  p->ratio = p->open_ms_mean = p->open_ms_max = p->start_ms_mean = NAN;
  p->peak_rss_kb = -1;
  return p;
}

static void say(const kcli__point *p) {
  if (!p->available) {
    fprintf(stderr, "kiln bench: %s: n/a (%s)\n", p->what, p->note);
    return;
  }
  fprintf(stderr, "kiln bench: %-9s c=%-2d %4d tests in %7.3f s = %8.1f/s%s%s\n", p->what,
          p->conc, p->tests, p->wall_s, p->tests_per_s, p->note[0] ? "; " : "", p->note);
}

/* kiln and the runner alone in turns, KCLI__BENCH_HOST_ROUNDS of each, so
 * that a burst of load from elsewhere falls on both rather than on one. */
static void host_section(kcli__bench_data *B) {
  kcli__point *p;
  for (int r = 0; r < KCLI__BENCH_HOST_ROUNDS; r++) {
    if ((p = new_point(B)))
      kiln_point(B, "host", 2, KRUN_BACKEND_HOST, B->host_tests, "bench/noop", NULL, NULL, p),
          say(p);
    if (B->bi.backend == KRUN_BACKEND_HOST && (p = new_point(B))) runner_point(B, p), say(p);
  }
  for (int i = 0; i < 2; i++)
    if ((p = new_point(B)))
      kiln_point(B, "rss", 2, KRUN_BACKEND_HOST, B->rss_tests[i], "bench/noop", NULL, NULL, p),
          say(p);
}

static void run_sections(kcli__bench_data *B) {
  int backend = B->bi.backend;
  kcli__point *p;
  if (!(B->skip & KCLI__S_CEILING)) {
    /* One probe first, unmeasured: a driver's first start in a while
     * (module load, persistence off) is not what a test run pays. */
    kcli__point warmup;
    ceiling_point(B, 1, 1, &warmup);
    for (int i = 0; i < B->nconc && (p = new_point(B)); i++)
      ceiling_point(B, B->conc[i], B->tests, p), say(p);
  }
  if (!(B->skip & KCLI__S_KILN))
    for (int i = 0; i < B->nconc; i++) {
      if ((p = new_point(B)))
        kiln_point(B, "kiln", B->conc[i], backend, B->tests, "bench/trivial", NULL, NULL, p), say(p);
      if ((p = new_point(B)))
        kiln_point(B, "kiln_cold", B->conc[i], backend, B->tests, "bench/trivial", "--warm", "0",
                   p), say(p);
    }
  if (!(B->skip & KCLI__S_NONE) && (p = new_point(B)))
    kiln_point(B, "none", 1, backend, B->tests, "bench/trivial", "--isolation", "none", p), say(p);
  if (!(B->skip & KCLI__S_HOST)) {
    /* The runner-alone figure is the host runner's: measure it on host. */
    if (backend != KRUN_BACKEND_HOST) {
      kh_err err;
      krun_backend_info gpu = B->bi;
      if (krun_backend_resolve(KRUN_BACKEND_HOST, B->runner_dir, NULL, &B->bi, &err) == 0)
        host_section(B);
      B->bi = gpu;
    } else {
      host_section(B);
    }
  }
}

/* ---- Options and setup ---------------------------------------------------------------- */

/* "a,b,c" into counts from lo to hi; 0, or a usage error. */
static int counts(kcli__args *a, const char *flag, const char *text, int *out, int max,
                  int lo, int hi, int *n) {
  char *copy = kh_strdup(text), *save = NULL;
  int rc = 0;
  *n = 0;
  for (char *w = strtok_r(copy, ",", &save); w && rc == 0; w = strtok_r(NULL, ",", &save)) {
    long long v;
    if (*n == max || kh_parse_ll(w, lo, hi, &v) != 0)
      rc = kcli__usage_error(a->cmd, "%s: '%s' in '%s' is not a count from %d to %d (at "
                             "most %d of them)", flag, w, text, lo, hi, max);
    else out[(*n)++] = (int)v;
  }
  if (rc == 0 && *n == 0) rc = kcli__usage_error(a->cmd, "%s: '%s' holds no count", flag, text);
  free(copy);
  return rc;
}

static int options(kcli__bench_data *B, kcli__args *a) {
  B->runner_dir = a->runner_dir;
  if (krun_setting_is_set(&a->flags, "contain"))
    B->contain = krun_contain_names[a->flags.contain];
  B->tests = a->tests ? a->tests : 48;
  B->host_tests = a->host_tests ? a->host_tests : 300;
  static const int dflt[] = {1, 2, 3, 4, 6, 8};
  memcpy(B->conc, dflt, sizeof dflt);
  B->nconc = 6;
  B->rss_tests[0] = 100, B->rss_tests[1] = 1000;
  int n;
  if (a->concurrency &&
      counts(a, "--concurrency", a->concurrency, B->conc, KCLI__BENCH_MAX_CONC, 1, 256,
             &B->nconc) != 0)
    return KH_EXIT_USAGE;
  if (a->rss_tests &&
      (counts(a, "--rss-tests", a->rss_tests, B->rss_tests, 2, 1, 1000000, &n) != 0 ||
       (n != 2 && kcli__usage_error(a->cmd, "--rss-tests: '%s' is not two counts", a->rss_tests))))
    return KH_EXIT_USAGE;
  char *copy = a->skip ? kh_strdup(a->skip) : NULL, *save = NULL;
  int rc = 0;
  for (char *w = copy ? strtok_r(copy, ",", &save) : NULL; w && rc == 0;
       w = strtok_r(NULL, ",", &save)) {
    size_t i = 0;
    while (i < 4 && strcmp(w, sections[i]) != 0) i++;
    if (i == 4)
      rc = kcli__usage_error(a->cmd, "--skip: '%s' is not a section (ceiling, kiln, none, "
                             "host)", w);
    B->skip |= 1u << i;
  }
  free(copy);
  return rc;
}

/* reports/runs/<UTC time>-bench, made unique with a suffix. */
static char *default_out(void) {
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

static int setup(kcli__bench_data *B, kcli__args *a) {
  ssize_t n = readlink("/proc/self/exe", B->self, sizeof B->self - 1);
  if (n <= 0) {
    fprintf(stderr, "kiln bench: cannot find this kiln (/proc/self/exe): %s\n", strerror(errno));
    return KH_EXIT_INFRA;
  }
  B->self[n] = '\0';
  kh_err err;
  if (krun_backend_resolve(a->flags.backend, B->runner_dir, NULL, &B->bi, &err) != 0) {
    fprintf(stderr, "kiln bench: %s\n", err.msg);
    return KH_EXIT_INFRA;
  }
  if (B->bi.ndevices == 0) {
    fprintf(stderr, "kiln bench: the %s runner finds no device: %s\n",
            krun_backend_names[B->bi.backend], *B->bi.error ? B->bi.error : "none found");
    return KH_EXIT_INFRA;
  }
  B->out = a->out ? kh_strdup(a->out) : default_out();
  if (!B->out || kh_mkdir_p(B->out, 0755) != 0) {
    fprintf(stderr, "kiln bench: cannot create the bench folder %s: %s\n",
            B->out ? B->out : "under reports/runs", strerror(errno));
    return KH_EXIT_INFRA;
  }
  return 0;
}

int kcli__bench(kcli__args *a) {
  kcli__bench_data *B = kh_xcalloc(1, sizeof *B);
  int rc = options(B, a);
  if (rc == 0) rc = setup(B, a);
  if (rc == 0) {
    B->start_s = kh_wall_s();
    fprintf(stderr, "kiln bench: backend %s, device %s, %d tests per point, folder %s\n",
            krun_backend_names[B->bi.backend], B->bi.dev[0].name, B->tests, B->out);
    run_sections(B);
    kcli__bench_summary s;
    kcli__bench_summarise(B, &s);
    kcli__bench_print(B, &s);
    if (kcli__bench_yaml(B, &s) != 0) rc = KH_EXIT_INFRA;
    for (int i = 0; i < B->npts; i++)
      if (B->pts[i].failed || !B->pts[i].available) rc = KH_EXIT_INFRA;
  }
  free(B->out);
  free(B);
  return rc;
}
