/* The runner: one executable per backend (kiln-runner-host, -hip, -cuda)
 * holding the engine, the suites and this child side of the harness.
 *
 * The kiln parent execs it in child mode to run one test (or, for
 * --isolation none, several in one process sharing one context) and reads
 * its records from --result-fd. It also lists its registry and its devices
 * so that the parent can plan without linking any suite or GPU runtime.
 * Run by hand with test patterns, it is a plain in-process test runner.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <time.h>
#include <unistd.h>

#include "child-impl.h"
#include "kiln-config.h"

enum { KR_EXIT_OK = 0, KR_EXIT_FAIL = 1, KR_EXIT_USAGE = 2, KR_EXIT_INFRA = 3 };

static void kr_usage(FILE *f, const char *argv0) {
  fprintf(f,
    "usage: %s [OPTIONS] [PATTERN...]\n"
    "\n"
    "kiln's test runner for the %s backend. Normally started by `kiln run`,\n"
    "one process per test; run by hand it runs the matching tests in this\n"
    "one process (sharing one engine context) and prints what it finds.\n"
    "\n"
    "PATTERN   suite, suite/test, a glob over suite/test, or @tag (default:\n"
    "          all); -PATTERN or -@tag excludes (after `--`)\n"
    "\n"
    "  --list              print the registry, one `test` record per line\n"
    "  --devices           print one `device` record per visible device\n"
    "  --context-probe     open the engine context on device 0, close it,\n"
    "                      print its timings (phase records) and exit;\n"
    "                      with $KILN_SPAWN_MS (CLOCK_MONOTONIC ms at fork)\n"
    "                      also the process start-up time\n"
    "  --result-fd N       send protocol records to file descriptor N\n"
    "  --warm              open the engine context, send a `ready` record,\n"
    "                      then run the one test named by an `assign` line\n"
    "                      read from stdin (EOF first: exit 0)\n"
    "  --verbose           print every record (standalone runs)\n"
    "  --poison            fill new device allocations with NaN bytes\n"
    "  --cap F             allocation cap, fraction of free memory (0<F<=1)\n"
    "  --seed N            run seed (default: from the clock; reported)\n"
    "  --tolerance P=A:R   override atol A and rtol R for checks matching\n"
    "                      glob P (suite, suite/test or suite/test/check)\n"
    "  --help, --version\n",
    argv0, ke_backend_name());
}

static const kt_test *kr_find(const char *id, const kt_suite **suite_out) {
  for (const kt_suite *const *s = kt_suites; *s; s++) {
    size_t n = strlen((*s)->name);
    if (strncmp(id, (*s)->name, n) != 0 || id[n] != '/') continue;
    for (size_t i = 0; i < (*s)->ntests; i++)
      if (strcmp(id + n + 1, (*s)->tests[i].name) == 0) {
        *suite_out = *s;
        return &(*s)->tests[i];
      }
  }
  return NULL;
}

static void kr_list(void) {
  for (const kt_suite *const *s = kt_suites; *s; s++) {
    for (size_t i = 0; i < (*s)->ntests; i++) {
      const kt_test *t = &(*s)->tests[i];
      char id[256], tags[512];
      snprintf(id, sizeof id, "%s/%s", (*s)->name, t->name);
      snprintf(tags, sizeof tags, "%s%s%s", (*s)->tags ? (*s)->tags : "",
               (*s)->tags && *(*s)->tags && t->tags && *t->tags ? "," : "",
               t->tags ? t->tags : "");
      kp_record_out rec;
      kp_begin(&rec, "test");
      kp_add_str(&rec, "id", id);
      kp_add_str(&rec, "suite", (*s)->name);
      kp_add_str(&rec, "name", t->name);
      kp_add_str(&rec, "tags", tags);
      kp_add_int(&rec, "slots", t->slots == 0 ? 1 : t->slots);
      kp_add_int(&rec, "timeout_s", t->timeout_s);
      kp_add_int(&rec, "needs_gpu", !t->host_only);
      kp_add_str(&rec, "file", (*t->check_test)->file);
      kp_add_int(&rec, "line", (*t->check_test)->line);
      kp_send(&rec, STDOUT_FILENO);
    }
  }
}

static int kr_devices(void) {
  int n = 0;
  int st = ke_device_count(&n);
  kp_record_out rec;
  kp_begin(&rec, "backend");
  kp_add_str(&rec, "name", ke_backend_name());
  kp_add_int(&rec, "devices", n);
  if (st != KE_OK) kp_add_str(&rec, "error", ke_last_error());
  kp_send(&rec, STDOUT_FILENO);
  for (int i = 0; i < n; i++) {
    ke_device_info d;
    kp_begin(&rec, "device");
    kp_add_int(&rec, "index", i);
    if (ke_device_query(i, &d) != KE_OK) {
      kp_add_str(&rec, "error", ke_last_error());
    } else {
      kp_add_str(&rec, "name", d.name);
      kp_add_str(&rec, "arch", d.arch);
      kp_add_int(&rec, "warp_size", d.warp_size);
      kp_add_int(&rec, "multiprocessors", d.multiprocessors);
      kp_add_uint(&rec, "total_bytes", d.total_bytes);
      kp_add_uint(&rec, "free_bytes", d.free_bytes);
    }
    kp_send(&rec, STDOUT_FILENO);
  }
  return KR_EXIT_OK;
}

/* --context-probe: what a process costs that only opens the engine
 * context and exits, nothing else (`kiln bench` measures the ceiling for
 * isolated tests with it). Records on stdout: phase runtime_init (context
 * open, runtime start included), the device, phase teardown (close), end;
 * on failure a result record with status error. */
static int kr_context_probe(double main_ms) {
  kp_record_out rec;
  /* KILN_SPAWN_MS: CLOCK_MONOTONIC ms when the caller forked us; the gap to
   * main() is fork, exec, dynamic linking and static initialisers. */
  const char *spawn = getenv("KILN_SPAWN_MS");
  char *end;
  double spawn_ms = spawn ? strtod(spawn, &end) : 0;
  if (spawn && *spawn && !*end && spawn_ms > 0) {
    kp_begin(&rec, "phase");
    kp_add_str(&rec, "name", "process_start");
    kp_add_double(&rec, "ms", main_ms - spawn_ms);
    kp_send(&rec, STDOUT_FILENO);
  }
  ke_context_options opts;
  ke_context_options_init(&opts);
  ke_context *ctx = NULL;
  double t0 = kt__now_ms();
  int st = ke_context_open(&opts, &ctx);
  double open_ms = kt__now_ms() - t0;
  kp_begin(&rec, "phase");
  kp_add_str(&rec, "name", "runtime_init");
  kp_add_double(&rec, "ms", open_ms);
  kp_send(&rec, STDOUT_FILENO);
  if (st != KE_OK) {
    kp_begin(&rec, "result");
    kp_add_str(&rec, "status", "error");
    kp_add_str(&rec, "message", ke_last_error());
    kp_send(&rec, STDOUT_FILENO);
    return KR_EXIT_INFRA;
  }
  const ke_device_info *d = ke_context_device(ctx);
  kp_begin(&rec, "device");
  kp_add_str(&rec, "backend", ke_backend_name());
  kp_add_int(&rec, "index", d->index);
  kp_add_str(&rec, "name", d->name);
  kp_add_str(&rec, "arch", d->arch);
  kp_send(&rec, STDOUT_FILENO);
  t0 = kt__now_ms();
  st = ke_context_close(ctx);
  kp_begin(&rec, "phase");
  kp_add_str(&rec, "name", "teardown");
  kp_add_double(&rec, "ms", kt__now_ms() - t0);
  kp_send(&rec, STDOUT_FILENO);
  kp_begin(&rec, "result");
  kp_add_str(&rec, "status", st == KE_OK ? "pass" : "error");
  kp_add_str(&rec, "message", st == KE_OK ? "" : ke_last_error());
  kp_send(&rec, STDOUT_FILENO);
  kp_begin(&rec, "end");
  kp_send(&rec, STDOUT_FILENO);
  return st == KE_OK ? KR_EXIT_OK : KR_EXIT_INFRA;
}

/* 1 when the comma-separated tag list holds tag. */
static int kr_has_tag(const char *tags, const char *tag) {
  size_t n = strlen(tag);
  for (const char *p = tags ? tags : ""; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == n && strncmp(p, tag, n) == 0) return 1;
    p += len + (comma ? 1 : 0);
  }
  return 0;
}

/* suite, glob over suite/test, or @tag. */
static int kr_matches(const char *pattern, const kt_suite *s,
                      const kt_test *t) {
  char id[256];
  snprintf(id, sizeof id, "%s/%s", s->name, t->name);
  if (pattern[0] == '@')
    return kr_has_tag(s->tags, pattern + 1) || kr_has_tag(t->tags, pattern + 1);
  return strcmp(pattern, s->name) == 0 || fnmatch(pattern, id, 0) == 0;
}

static const char *kr_status_of(TestResult *tr) {
  if (kt__state.skipped) return "skip";
  /* No device is a skip only where nobody promised one: under kiln a child
   * with KILN_DEVICE set was given a device, and losing it is an error. */
  if (kt__state.setup_failed)
    return kt__state.setup_failed == KE_ENODEV && !kt__state.test->host_only &&
                   !getenv("KILN_DEVICE")
               ? "skip"
               : "error";
  switch (tr_rtype(tr)) {
  case CK_PASS: return "pass";
  case CK_FAILURE: return "fail";
  default: return "error";
  }
}

/* Runs one registered test through Check, in this process. Returns 0 for a
 * pass, 2 for a skip, 1 otherwise. */
static int kr_run_one(const kt_suite *suite, const kt_test *test) {
  kt__state.suite = suite;
  kt__state.test = test;
  kt__state.skipped = 0;
  kt__state.setup_failed = 0;
  kt__state.skip_reason[0] = '\0';
  kt__state.last_summary[0] = '\0';
  kt__state.seed_counter = 0;
  snprintf(kt__state.test_id, sizeof kt__state.test_id, "%s/%s", suite->name,
           test->name);

  kp_record_out rec;
  kp_begin(&rec, "test");
  kp_add_str(&rec, "id", kt__state.test_id);
  kp_add_int(&rec, "pid", (long long)getpid());
  kp_add_uint(&rec, "seed", kt__state.run_seed);
  kt__emit(&rec);
  fflush(stdout);

  Suite *cs = suite_create(suite->name);
  TCase *tc = tcase_create(test->name);
  tcase_add_checked_fixture(tc, kt__fixture_setup, kt__fixture_teardown);
  tcase_add_test(tc, *test->check_test);
  suite_add_tcase(cs, tc);
  SRunner *sr = srunner_create(cs);
  /* kiln owns the fork: one process per test, made by the parent. */
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_SILENT);

  TestResult **results = srunner_results(sr);
  int nresults = srunner_ntests_run(sr);
  const char *status = "error";
  const char *message = "Check ran no test";
  const char *file = (*test->check_test)->file;
  int line = (*test->check_test)->line;
  if (nresults > 0 && results) {
    status = kr_status_of(results[0]);
    message = tr_msg(results[0]);
    if (tr_lfile(results[0])) file = tr_lfile(results[0]);
    line = tr_lno(results[0]);
  }
  if (kt__state.skipped) message = kt__state.skip_reason;
  else if (kt__state.setup_failed) message = kt__state.setup_error;

  kp_begin(&rec, "result");
  kp_add_str(&rec, "status", status);
  kp_add_str(&rec, "message", message ? message : "");
  kp_add_str(&rec, "file", file ? file : "");
  kp_add_int(&rec, "line", line);
  kt__emit(&rec);
  kp_begin(&rec, "end");
  kt__emit(&rec);

  if (kt__state.result_fd < 0) {
    printf("%-5s %s", status, kt__state.test_id);
    if (strcmp(status, "pass") != 0)
      printf("\n      %s:%d: %s", file ? file : "?", line,
             message ? message : "");
    printf("\n");
    fflush(stdout);
  }
  int outcome = strcmp(status, "pass") == 0 ? 0
                : strcmp(status, "skip") == 0 ? 2
                                               : 1;
  srunner_free(sr);
  return outcome;
}

/* ---- Warm mode ------------------------------------------------------------ */

/* One line from fd 0, byte by byte so that nothing past it is consumed.
 * Returns its length (newline dropped), 0 at end of file before a whole
 * line, -1 on a read error or a line that does not fit. */
static ssize_t kr_read_line(char *out, size_t cap) {
  size_t n = 0;
  for (;;) {
    char c;
    ssize_t r = read(STDIN_FILENO, &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) return 0;
    if (c == '\n') break;
    if (n + 1 >= cap) return errno = EMSGSIZE, -1;
    out[n++] = c;
  }
  out[n] = '\0';
  return (ssize_t)n;
}

/* The assignment's slots: `slots` from semaphore `sem_num` of the set
 * `sem_id`, with SEM_UNDO so the kernel returns them however this process
 * ends. A warm child holds none while it waits: kiln only assigns a test
 * when its own count says the slot is free, and another kiln may still
 * hold it, so the wait is reported as token_wait like a cold child's. */
static int kr_take_slots(const kp_record *a, const char *argv0) {
  long long id, num, slots;
  if (kp_get_int(a, "sem_id", &id) != 0) return 0;   /* nothing to take */
  if (kp_get_int(a, "sem_num", &num) != 0 || num < 0 || num > 65535 ||
      kp_get_int(a, "slots", &slots) != 0 || slots < 1 || slots > 32767) {
    fprintf(stderr, "%s: --warm: the assignment's sem_num/slots are missing "
                    "or out of range\n", argv0);
    return -1;
  }
  double t0 = kt__now_ms();
  struct sembuf op = {(unsigned short)num, (short)-slots, SEM_UNDO};
  int r;
  do r = semop((int)id, &op, 1);
  while (r != 0 && errno == EINTR);
  if (r != 0) {
    fprintf(stderr, "%s: --warm: taking %lld slot(s) from semaphore %lld of "
                    "set %lld: %s\n", argv0, slots, num, id, strerror(errno));
    return -1;
  }
  kp_record_out rec;
  kp_begin(&rec, "phase");
  kp_add_str(&rec, "name", "token_wait");
  kp_add_double(&rec, "ms", kt__now_ms() - t0);
  kt__emit(&rec);
  return 0;
}

/* --warm: starts the runtime and opens the context before the test is
 * known (the expensive part on a GPU), says so with a `ready` record, then
 * reads one assignment from stdin: `assign id=ID tmpdir=DIR [sem_id=N
 * sem_num=N slots=N]`. The test then runs in that context and closes it,
 * as in a cold child. End of file first means kiln does not need this
 * child: exit 0 quietly. */
static int kr_warm(const char *argv0) {
  (void)kt__context_open();
  kp_record_out rec;
  kp_begin(&rec, "ready");
  kp_add_str(&rec, "status", kt__state.open_status == KE_OK ? "ok" : "error");
  kp_add_double(&rec, "runtime_init_ms", kt__state.runtime_init_ms);
  kt__emit(&rec);

  static char line[KP_MAX_LINE];
  ssize_t n = kr_read_line(line, sizeof line);
  int saved = errno;
  int null = open("/dev/null", O_RDONLY);
  if (null >= 0 && null != STDIN_FILENO) dup2(null, STDIN_FILENO), close(null);
  if (n <= 0) {
    if (kt__state.ctx) (void)ke_context_close(kt__state.ctx);
    if (n == 0) return KR_EXIT_OK;
    fprintf(stderr, "%s: --warm: cannot read the assignment on stdin: %s\n",
            argv0, strerror(saved));
    return KR_EXIT_INFRA;
  }
  kp_record a;
  const char *why = "not an `assign` record";
  const kt_suite *suite = NULL;
  const kt_test *test = NULL;
  if (kp_parse(line, &a, &why) != 0 || strcmp(a.tag, "assign") != 0 ||
      !kp_get(&a, "id")) {
    fprintf(stderr, "%s: --warm: bad assignment '%.200s': %s (expected "
                    "`assign id=SUITE/TEST tmpdir=DIR`)\n", argv0, line, why);
    return KR_EXIT_USAGE;
  }
  test = kr_find(kp_get(&a, "id"), &suite);
  if (!test) {
    fprintf(stderr, "%s: --warm: no test '%s' (see --list)\n", argv0,
            kp_get(&a, "id"));
    return KR_EXIT_USAGE;
  }
  setenv("KILN_TEST", kp_get(&a, "id"), 1);
  if (kp_get(&a, "tmpdir")) setenv("TEST_TMPDIR", kp_get(&a, "tmpdir"), 1);
  if (kr_take_slots(&a, argv0) != 0) return KR_EXIT_INFRA;
  kt__state.keep_context = 0;
  int outcome = kr_run_one(suite, test);
  /* A host_only test never used the context. */
  if (kt__state.ctx) (void)ke_context_close(kt__state.ctx);
  kt__state.ctx = NULL;
  return outcome == 1 ? KR_EXIT_FAIL : KR_EXIT_OK;
}

static int kr_parse_tolerance(const char *arg) {
  if (kt__state.ntol >= (int)(sizeof kt__state.tol / sizeof kt__state.tol[0]))
    return -1;
  kt__tol_override *o = &kt__state.tol[kt__state.ntol];
  const char *eq = strrchr(arg, '=');
  if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof o->pattern) return -1;
  char *end;
  double atol = strtod(eq + 1, &end);
  if (*end != ':') return -1;
  double rtol = strtod(end + 1, &end);
  if (*end || !(atol >= 0) || !(rtol >= 0)) return -1;
  memcpy(o->pattern, arg, (size_t)(eq - arg));
  o->pattern[eq - arg] = '\0';
  o->atol = atol;
  o->rtol = rtol;
  kt__state.ntol++;
  return 0;
}

int main(int argc, char **argv) {
  double main_ms = kt__now_ms();
  enum { OPT_LIST = 256, OPT_DEVICES, OPT_PROBE, OPT_FD, OPT_POISON, OPT_CAP, OPT_SEED,
         OPT_TOL, OPT_VERBOSE, OPT_HELP, OPT_VERSION, OPT_WARM };
  static const struct option opts[] = {
      {"list", no_argument, 0, OPT_LIST},
      {"devices", no_argument, 0, OPT_DEVICES},
      {"context-probe", no_argument, 0, OPT_PROBE},
      {"result-fd", required_argument, 0, OPT_FD},
      {"poison", no_argument, 0, OPT_POISON},
      {"cap", required_argument, 0, OPT_CAP},
      {"seed", required_argument, 0, OPT_SEED},
      {"tolerance", required_argument, 0, OPT_TOL},
      {"verbose", no_argument, 0, OPT_VERBOSE},
      {"help", no_argument, 0, OPT_HELP},
      {"version", no_argument, 0, OPT_VERSION},
      {"warm", no_argument, 0, OPT_WARM},
      {0, 0, 0, 0}};
  int list = 0, devices = 0, probe = 0, seeded = 0, warm = 0;
  int c;
  char *end;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case OPT_LIST: list = 1; break;
    case OPT_DEVICES: devices = 1; break;
    case OPT_PROBE: probe = 1; break;
    case OPT_FD:
      kt__state.result_fd = (int)strtol(optarg, &end, 10);
      if (*end || kt__state.result_fd < 0) {
        fprintf(stderr, "%s: --result-fd: '%s' is not a file descriptor\n",
                argv[0], optarg);
        return KR_EXIT_USAGE;
      }
      break;
    case OPT_POISON: kt__state.poison = 1; break;
    case OPT_CAP:
      kt__state.cap_fraction = strtod(optarg, &end);
      if (*end || !(kt__state.cap_fraction > 0 && kt__state.cap_fraction <= 1)) {
        fprintf(stderr, "%s: --cap: '%s' is not a fraction in (0, 1]\n",
                argv[0], optarg);
        return KR_EXIT_USAGE;
      }
      break;
    case OPT_SEED:
      errno = 0;
      kt__state.run_seed = strtoull(optarg, &end, 0);
      if (*end || errno) {
        fprintf(stderr, "%s: --seed: '%s' is not an unsigned integer\n",
                argv[0], optarg);
        return KR_EXIT_USAGE;
      }
      seeded = 1;
      break;
    case OPT_TOL:
      if (kr_parse_tolerance(optarg) != 0) {
        fprintf(stderr, "%s: --tolerance: '%s' is not PATTERN=ATOL:RTOL "
                        "with ATOL, RTOL >= 0\n", argv[0], optarg);
        return KR_EXIT_USAGE;
      }
      break;
    case OPT_VERBOSE: kt__state.verbose = 1; break;
    case OPT_WARM: warm = 1; break;
    case OPT_HELP: kr_usage(stdout, argv[0]); return KR_EXIT_OK;
    case OPT_VERSION:
      printf("kiln-runner %s (%s backend, protocol %d)\n", KILN_VERSION,
             ke_backend_name(), KP_VERSION);
      return KR_EXIT_OK;
    default: kr_usage(stderr, argv[0]); return KR_EXIT_USAGE;
    }
  }
  if (list) return kr_list(), KR_EXIT_OK;
  if (devices) return kr_devices();
  if (probe) return kr_context_probe(main_ms);
  if (!seeded) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    kt__state.run_seed = ((uint64_t)ts.tv_sec * 1000000007ull) ^
                         (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
  }
  if (warm) {
    if (optind < argc) {
      fprintf(stderr, "%s: --warm takes its test from stdin, not '%s'\n",
              argv[0], argv[optind]);
      return KR_EXIT_USAGE;
    }
    return kr_warm(argv[0]);
  }

  /* Which tests: exact ids first (the parent's way), else patterns. */
  const kt_suite *suites[4096];
  const kt_test *tests[4096];
  size_t ntests = 0;
  int nselect = 0;
  for (int i = optind; i < argc; i++) {
    if (argv[i][0] == '-') continue;   /* exclusions, applied below */
    nselect++;
    const kt_suite *s;
    const kt_test *t = kr_find(argv[i], &s);
    if (t && ntests < 4096) {
      suites[ntests] = s;
      tests[ntests++] = t;
      continue;
    }
    size_t before = ntests;
    for (const kt_suite *const *ps = kt_suites; *ps; ps++)
      for (size_t j = 0; j < (*ps)->ntests && ntests < 4096; j++)
        if (kr_matches(argv[i], *ps, &(*ps)->tests[j])) {
          suites[ntests] = *ps;
          tests[ntests++] = &(*ps)->tests[j];
        }
    if (ntests == before) {
      fprintf(stderr, "%s: no test matches '%s' (see --list)\n", argv[0],
              argv[i]);
      return KR_EXIT_USAGE;
    }
  }
  if (nselect == 0)
    for (const kt_suite *const *ps = kt_suites; *ps; ps++)
      for (size_t j = 0; j < (*ps)->ntests && ntests < 4096; j++) {
        suites[ntests] = *ps;
        tests[ntests++] = &(*ps)->tests[j];
      }
  /* -PATTERN and -@tag drop tests from the selection. */
  for (int i = optind; i < argc; i++) {
    if (argv[i][0] != '-') continue;
    size_t kept = 0;
    for (size_t j = 0; j < ntests; j++)
      if (!kr_matches(argv[i] + 1, suites[j], tests[j])) {
        suites[kept] = suites[j];
        tests[kept++] = tests[j];
      }
    ntests = kept;
  }

  /* Several tests in one process share one context: the old way, kept to
   * reproduce state pollution (kiln run --isolation none). */
  kt__state.keep_context = ntests > 1;
  int failed = 0, skipped = 0;
  for (size_t i = 0; i < ntests; i++) {
    int outcome = kr_run_one(suites[i], tests[i]);
    failed += outcome == 1;
    skipped += outcome == 2;
  }
  if (kt__state.ctx) (void)ke_context_close(kt__state.ctx);

  if (kt__state.result_fd < 0) {
    printf("%zu passed, %d failed, %d skipped\n",
           ntests - (size_t)failed - (size_t)skipped, failed, skipped);
    printf("(seed %" PRIu64 "; replay with --seed %" PRIu64 ")\n",
           kt__state.run_seed, kt__state.run_seed);
  }
  return failed ? KR_EXIT_FAIL : KR_EXIT_OK;
}
