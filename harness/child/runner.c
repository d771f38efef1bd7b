/* The runner's main: in libkiln-runner, linked into one runner per backend
 * (kiln-runner-host, -hip, -cuda: the engine, the suites and this child
 * side of the harness) and into the runners other projects build against
 * the installed kiln with their own suites (docs/third-party.md).
 *
 * The kiln parent starts it to run one test (or, for --isolation none and
 * --isolation worker, several in one process sharing one context) and
 * reads its records from
 * --result-fd. It also lists its registry and its devices so that the
 * parent can plan without linking any suite or GPU runtime. Run by hand with
 * test patterns, it is a plain in-process test runner that selects as
 * `kiln run` does (harness/common/select.h). Records go through
 * harness/common/records.h, the protocol's one encoder.
 */
#include <errno.h>
#include <fcntl.h>
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
#include "records.h"
#include "select.h"

/* Exit statuses (docs/protocol.md). */
enum { ST_OK = 0, ST_FAIL = 1, ST_USAGE = 2, ST_INFRA = 3 };
#define MAX_TESTS 4096

static void usage(FILE *f, const char *argv0) {
  fprintf(f,
    "usage: %s [OPTIONS] [PATTERN...]\n"
    "\n"
    "kiln's test runner for the %s backend. Normally started by `kiln run`,\n"
    "one process per test; run by hand it runs the matching tests in this\n"
    "one process (sharing one engine context) and prints what it finds.\n"
    "\n"
    "PATTERN   suite, suite/test, a glob over suite/test, or @tag (default:\n"
    "          what `kiln run` takes by default); -PATTERN or -@tag excludes\n"
    "          (after `--`). Tests tagged fault, bench or perf run only when\n"
    "          named, and on the host backend so do tests tagged slow.\n"
    "\n"
    "  --list              print the `runner` record (the kiln and protocol\n"
    "                      this runner was built with), then the registry,\n"
    "                      one `test` record per line\n"
    "  --devices           print the `runner` record, then one `device`\n"
    "                      record per visible device\n"
    "  --context-probe     open the engine context on device 0, close it,\n"
    "                      print its timings (phase records) and exit;\n"
    "                      with $KILN_SPAWN_MS (CLOCK_MONOTONIC ms at spawn)\n"
    "                      also the process start-up time\n"
    "  --health-probe      check device 0: open a context, run a small softmax\n"
    "                      and compare it with the reference; records on the\n"
    "                      --result-fd (else stdout); exit 0 healthy, 3 not\n"
    "  --result-fd N       send protocol records to file descriptor N\n"
    "  --worker            run the tests in one context as a worker: after\n"
    "                      each, check that it left nothing behind (device\n"
    "                      allocations, a busy stream, a device fault); a\n"
    "                      test that did gets a `worker_check` note and ends\n"
    "                      the sequence\n"
    "  --warm              open the engine context, send a `ready` record,\n"
    "                      then run the one test named by an `assign` line\n"
    "                      read from stdin (EOF first: exit 0)\n"
    "  --verbose           print every record (standalone runs)\n"
    "  --poison            fill new device allocations with NaN bytes\n"
    "  --cap F             allocation cap, fraction of free memory (0<F<=1)\n"
    "  --seed N            run seed (default: from the clock; reported)\n"
    "  --tolerance P=A:R[:K]  override atol A and rtol R (and allow K\n"
    "                      elements over tolerance) for checks matching\n"
    "                      glob P (suite, suite/test or suite/test/check)\n"
    "  --help, --version\n"
    "\n"
    "KILN_TAKE_SLOTS=S:N:K[,N:K...] in the environment: first take K slots\n"
    "from semaphore N (of each listed) of System V set S, all in one semop\n"
    "(SEM_UNDO; kiln sets it) and report the wait as the phase token_wait.\n"
    "KILN_PROTOCOL=N (kiln sets it): refuse to run (exit 3) unless N is this\n"
    "runner's protocol, %d.\n",
    argv0, ke_backend_name(), KP_VERSION);
}

/* ---- --devices ------------------------------------------------------------ */

static int devices(void) {
  kt__runner_record();
  int n = 0;
  int st = ke_device_count(&n);
  kp_backend b = {ke_backend_name(), n, st != KE_OK ? ke_last_error() : NULL,
                  KILN_SANITIZERS};
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_backend, &b);
  kp_send(&rec, STDOUT_FILENO);
  for (int i = 0; i < n; i++) {
    ke_device_info d;
    kp_device dev;
    if (ke_device_query(i, &d) == KE_OK) {
      kt__device_of(&d, &dev);
    } else {
      memset(&dev, 0, sizeof dev);
      dev.backend = ke_backend_name();
      dev.index = i;
      dev.error = ke_last_error();
      dev.physical = KP_NONE;
    }
    kp_encode(&rec, &kp_rec_device, &dev);
    kp_send(&rec, STDOUT_FILENO);
  }
  return ST_OK;
}

/* ---- Running a test ---------------------------------------------------------------- */

static const char *status_of(TestResult *tr) {
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

/* --worker: what the test that just ran left behind for the next one in
 * this process: device allocations still live, a stream that does not go
 * idle, a device fault. 0 when nothing, else 1 with why. */
static int left_behind(char *why, size_t n) {
  for (int i = 0; i < KT__MAX_CONTEXTS; i++) {
    ke_context *c = kt__state.ctx[i];
    if (!c) continue;
    (void)ke_scratch_release(c);
    size_t live = ke_ledger_outstanding(c, NULL, 0);
    if (live)
      return snprintf(why, n, "%zu device allocation%s (%zu bytes) still live on device %d",
                      live, live == 1 ? "" : "s", ke_ledger_outstanding_bytes(c), i), 1;
    if (ke_context_sync(c) != KE_OK)
      return snprintf(why, n, "the stream of device %d does not go idle: %s", i,
                      ke_last_error()), 1;
  }
  int dev;
  const char *detail = NULL;
  if (ke_device_fault(&dev, &detail))
    return snprintf(why, n, "a device fault on device %d: %s", dev, detail ? detail : "?"), 1;
  return 0;
}

/* Runs one registered test through Check, in this process. Returns 0 for a
 * pass, 2 for a skip, 1 otherwise. */
static int run_one(const kt__entry *e) {
  kt__state.suite = e->suite;
  kt__state.test = e->test;
  kt__state.skipped = 0;
  kt__state.setup_failed = 0;
  kt__state.skip_reason[0] = '\0';
  kt__state.last_summary[0] = '\0';
  kt__state.seed_counter = 0;
  snprintf(kt__state.test_id, sizeof kt__state.test_id, "%s", e->id);

  kp_record_out rec;
  kp_test t = {e->id, (long long)getpid(), kt__state.run_seed};
  kp_encode(&rec, &kp_rec_test, &t);
  kt__emit(&rec);
  fflush(stdout);

  Suite *cs = suite_create(e->suite->name);
  TCase *tc = tcase_create(e->test->name);
  tcase_add_checked_fixture(tc, kt__fixture_setup, kt__fixture_teardown);
  tcase_add_test(tc, *e->test->check_test);
  suite_add_tcase(cs, tc);
  SRunner *sr = srunner_create(cs);
  /* kiln owns the fork: one process per test, made by the parent. */
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, CK_SILENT);

  TestResult **results = srunner_results(sr);
  kp_result r = {"error", "Check ran no test", (*e->test->check_test)->file,
                 (*e->test->check_test)->line};
  if (srunner_ntests_run(sr) > 0 && results) {
    r.status = status_of(results[0]);
    r.message = tr_msg(results[0]);
    /* A failure is where it failed (the test API's helpers report their
     * caller's line); a pass, a skip or an error is the test itself:
     * Check's location for them is only its last passing assertion. */
    if (strcmp(r.status, "fail") == 0 && tr_lfile(results[0])) {
      r.file = tr_lfile(results[0]);
      r.line = tr_lno(results[0]);
    }
  }
  if (kt__state.skipped) r.message = kt__state.skip_reason;
  else if (kt__state.setup_failed) r.message = kt__state.setup_error;
  if (!r.message) r.message = "";
  if (!r.file) r.file = "";
  /* A worker's test that left something behind is marked, and the
   * sequence stops after it (kiln runs the rest in a new worker). */
  char why[256];
  if (kt__state.worker && left_behind(why, sizeof why)) {
    kp_encode(&rec, &kp_rec_note, &(kp_note){"worker_check", why});
    kt__emit(&rec);
    kt__state.worker_stop = 1;
  }
  kp_encode(&rec, &kp_rec_result, &r);
  kt__emit(&rec);
  kp_encode(&rec, &kp_rec_end, &(kp_end){0});
  kt__emit(&rec);

  if (kt__state.result_fd < 0) {
    printf("%-5s %s", r.status, e->id);
    if (strcmp(r.status, "pass") != 0)
      printf("\n      %s:%lld: %s", r.file, r.line, r.message);
    printf("\n");
    fflush(stdout);
  }
  int outcome = strcmp(r.status, "pass") == 0 ? 0 : strcmp(r.status, "skip") == 0 ? 2 : 1;
  srunner_free(sr);
  return outcome;
}

/* ---- Slots ----------------------------------------------------------------------- */

/* Takes the slots of t (kp_slots_take) and reports the wait as
 * token_wait. kiln starts a test only when its own count says the slots
 * are free; another kiln may still hold them, hence the wait. */
static int take_slots(const kp_take *t, const char *argv0) {
  double t0 = kt__now_ms();
  if (kp_slots_take(t, argv0) != 0) return -1;
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_phase, &(kp_phase){"token_wait", kt__now_ms() - t0});
  kt__emit(&rec);
  return 0;
}

/* ---- Warm mode ---------------------------------------------------------------------- */

/* The assignment line from fd 0. kiln writes it and closes the pipe, so
 * whatever follows the newline is nothing. Returns its length (newline
 * dropped), 0 at end of file before a whole line, -1 on a read error or a
 * line that does not fit. */
static ssize_t read_line(char *out, size_t cap) {
  size_t n = 0;
  for (;;) {
    ssize_t r = read(STDIN_FILENO, out + n, cap - 1 - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    char *nl = memchr(out + n, '\n', (size_t)r);
    if (nl) {
      *nl = '\0';
      return nl - out;
    }
    if (r == 0) return 0;
    n += (size_t)r;
    if (n + 1 >= cap) return errno = EMSGSIZE, -1;
  }
}

/* --warm: starts the runtime and opens the context before the test is
 * known (the expensive part on a GPU), says so with a `ready` record, then
 * reads one assignment from stdin. The test then runs in that context and
 * closes it, as in a cold child. End of file first means kiln does not need
 * this child: exit 0 quietly. */
static int warm(const char *argv0) {
  (void)kt__context_open();
  kp_record_out rec;
  kp_ready ready = {kt__state.open_status == KE_OK ? "ok" : "error",
                    kt__state.runtime_init_ms};
  kp_encode(&rec, &kp_rec_ready, &ready);
  kt__emit(&rec);

  static char line[KP_MAX_LINE];
  ssize_t n = read_line(line, sizeof line);
  int saved = errno;
  int null = open("/dev/null", O_RDONLY);
  if (null >= 0 && null != STDIN_FILENO) dup2(null, STDIN_FILENO), close(null);
  if (n <= 0) {
    kt__contexts_close();
    if (n == 0) return ST_OK;
    fprintf(stderr, "%s: --warm: cannot read the assignment on stdin: %s\n",
            argv0, strerror(saved));
    return ST_INFRA;
  }
  char copy[256];
  snprintf(copy, sizeof copy, "%.200s", line);
  kp_record r;
  kp_assign a;
  const char *why = "not an `assign` record";
  char bad[200] = "";
  if (kp_parse(line, &r, &why) != 0 || strcmp(r.tag, "assign") != 0 ||
      kp_decode(&kp_rec_assign, r.fields, r.nfields, &a, bad, sizeof bad) != 0 ||
      !a.id) {
    fprintf(stderr, "%s: --warm: bad assignment '%.200s': %s (expected "
                    "`assign id=SUITE/TEST tmpdir=DIR`)\n", argv0, copy,
            *bad ? bad : why);
    return ST_USAGE;
  }
  static kt__entry e;
  if (!kt__find(a.id, &e)) {
    fprintf(stderr, "%s: --warm: no test '%s' (see --list)\n", argv0, a.id);
    return ST_USAGE;
  }
  setenv("KILN_TEST", a.id, 1);
  if (a.tmpdir) setenv("TEST_TMPDIR", a.tmpdir, 1);
  kp_take take = {a.sem_id, 1, {a.sem_num}, {a.slots}};
  if (a.sem_id != KP_NONE && take_slots(&take, argv0) != 0) return ST_INFRA;
  /* The context opened before the slots were ours, perhaps while other
   * tests held the device's memory: its cap is sized now, for this test. */
  if (kt__state.ctx[0]) (void)ke_ledger_cap_resize(kt__state.ctx[0]);
  kt__state.keep_context = 0;
  int outcome = run_one(&e);
  /* A host_only test never used the context. */
  kt__contexts_close();
  return outcome == 1 ? ST_FAIL : ST_OK;
}

/* ---- Which tests ------------------------------------------------------------------------ */

/* The parent names tests by exact id, in the order to run them (repeats
 * included, for --isolation none); anything else selects as `kiln run`
 * does. Fills picks (n of them); returns their number, or -1 after a usage
 * error. */
static int choose(char **args, int nargs, kt__entry *picks, const char *argv0) {
  int n = 0;
  while (n < nargs && n < MAX_TESTS && kt__find(args[n], &picks[n])) n++;
  if (nargs > 0 && n == nargs) return n;
  if (kt__registry_check(argv0) != 0) return -1;
  size_t total;
  kt__entry *all = kt__registry(&total);
  ksel_test *views = calloc(total + 1, sizeof *views);
  unsigned char *chosen = calloc(total + 1, 1);
  if (!views || !chosen) abort();
  for (size_t i = 0; i < total; i++)
    views[i] = (ksel_test){all[i].id, all[i].suite->name, all[i].tags};
  int held = 0;
  int bad = ksel_select(views, total, args, nargs, strcmp(ke_backend_name(), "host") == 0,
                        chosen, &held);
  n = 0;
  if (bad) {
    fprintf(stderr, "%s: no test matches '%s' (see --list)\n", argv0, args[bad - 1]);
    n = -1;
  }
  for (size_t i = 0; !bad && i < total && n < MAX_TESTS; i++)
    if (chosen[i]) picks[n++] = all[i];
  if (!bad && held)
    fprintf(stderr, "%s: %d GPU-sized test%s (tag slow) left out on the host "
                    "backend; add @slow to run %s\n", argv0, held,
            held == 1 ? "" : "s", held == 1 ? "it" : "them");
  free(views), free(chosen), free(all);
  return n;
}

/* ---- The protocol --------------------------------------------------------------------------- */

/* kiln says which protocol it speaks in KILN_PROTOCOL. A runner built
 * against another kiln refuses to go on, and says what to do, rather than
 * send records the other side would read wrong. (kiln also checks the
 * `runner` record of --list and --devices, which catches runners older
 * than this check.) */
static int protocol_differs(const char *argv0) {
  const char *v = getenv("KILN_PROTOCOL");
  if (!v || !*v) return 0;
  char *end;
  long p = strtol(v, &end, 10);
  if (!*end && p == KP_VERSION) return 0;
  fprintf(stderr, "%s: this runner was built against kiln %s and speaks its runner "
                  "protocol %d; the kiln that started it speaks protocol %s. Rebuild "
                  "the runner against that kiln (pkg-config module kiln-%s).\n",
          argv0, KILN_VERSION, KP_VERSION, v, ke_backend_name());
  return 1;
}

/* ---- main ---------------------------------------------------------------------------------- */

typedef struct options {
  int list, devices, probe, health, seeded, warm, worker;
} options;

/* Parses the options into kt__state and o; returns -1 to go on, else the
 * exit status. */
static int parse(int argc, char **argv, options *o) {
  enum { O_LIST = 256, O_DEVICES, O_PROBE, O_HEALTH, O_FD, O_POISON, O_CAP, O_SEED,
         O_TOL, O_VERBOSE, O_HELP, O_VERSION, O_WARM, O_WORKER };
  static const struct option opts[] = {
      {"list", no_argument, 0, O_LIST},
      {"devices", no_argument, 0, O_DEVICES},
      {"context-probe", no_argument, 0, O_PROBE},
      {"health-probe", no_argument, 0, O_HEALTH},
      {"result-fd", required_argument, 0, O_FD},
      {"poison", no_argument, 0, O_POISON},
      {"cap", required_argument, 0, O_CAP},
      {"seed", required_argument, 0, O_SEED},
      {"tolerance", required_argument, 0, O_TOL},
      {"verbose", no_argument, 0, O_VERBOSE},
      {"help", no_argument, 0, O_HELP},
      {"version", no_argument, 0, O_VERSION},
      {"warm", no_argument, 0, O_WARM},
      {"worker", no_argument, 0, O_WORKER},
      {0, 0, 0, 0}};
  int c;
  char *end;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case O_LIST: o->list = 1; break;
    case O_DEVICES: o->devices = 1; break;
    case O_PROBE: o->probe = 1; break;
    case O_HEALTH: o->health = 1; break;
    case O_FD:
      kt__state.result_fd = (int)strtol(optarg, &end, 10);
      if (*end || kt__state.result_fd < 0) {
        fprintf(stderr, "%s: --result-fd: '%s' is not a file descriptor\n",
                argv[0], optarg);
        return ST_USAGE;
      }
      break;
    case O_POISON: kt__state.poison = 1; break;
    case O_CAP:
      kt__state.cap_fraction = strtod(optarg, &end);
      if (*end || !(kt__state.cap_fraction > 0 && kt__state.cap_fraction <= 1)) {
        fprintf(stderr, "%s: --cap: '%s' is not a fraction in (0, 1]\n",
                argv[0], optarg);
        return ST_USAGE;
      }
      break;
    case O_SEED:
      errno = 0;
      kt__state.run_seed = strtoull(optarg, &end, 0);
      if (*end || errno) {
        fprintf(stderr, "%s: --seed: '%s' is not an unsigned integer\n",
                argv[0], optarg);
        return ST_USAGE;
      }
      o->seeded = 1;
      break;
    case O_TOL:
      if (kt__state.ntol == KT__MAX_TOL ||
          ksel_tol_parse(optarg, &kt__state.tol[kt__state.ntol]) != 0) {
        fprintf(stderr, "%s: --tolerance: '%s' is not PATTERN=ATOL:RTOL[:MAX_OVER] "
                        "with ATOL, RTOL from 0 to 1e30 (at most %d)\n",
                argv[0], optarg, KT__MAX_TOL);
        return ST_USAGE;
      }
      kt__state.ntol++;
      break;
    case O_VERBOSE: kt__state.verbose = 1; break;
    case O_WARM: o->warm = 1; break;
    case O_WORKER: o->worker = 1; break;
    case O_HELP: usage(stdout, argv[0]); return ST_OK;
    case O_VERSION:
      printf("kiln-runner %s (%s backend, protocol %d, sanitizers: %s)\n", KILN_VERSION,
             ke_backend_name(), KP_VERSION, KILN_SANITIZERS);
      return ST_OK;
    default: usage(stderr, argv[0]); return ST_USAGE;
    }
  }
  return -1;
}

int main(int argc, char **argv) {
  double main_ms = kt__now_ms();
  options o = {0};
  int st = parse(argc, argv, &o);
  if (st >= 0) return st;
  if (protocol_differs(argv[0])) return ST_INFRA;
  if (o.list) return kt__registry_check(argv[0]) != 0 ? ST_INFRA : (kt__list(), ST_OK);
  if (o.devices) return devices();
  if (o.probe) return kt__context_probe(main_ms);
  if (o.health) return kt__health_probe();
  if (!o.seeded) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    kt__state.run_seed = ((uint64_t)ts.tv_sec * 1000000007ull) ^
                         (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
  }
  if (o.warm) {
    if (optind < argc) {
      fprintf(stderr, "%s: --warm takes its test from stdin, not '%s'\n",
              argv[0], argv[optind]);
      return ST_USAGE;
    }
    return warm(argv[0]);
  }
  /* Room for every pick, taken from the heap only when it is used. */
  static kt__entry picks[MAX_TESTS];
  int n = choose(argv + optind, argc - optind, picks, argv[0]);
  if (n < 0) return ST_USAGE;
  /* Slots kiln's spawn request asks this process to take (a warm runner
   * takes them from its assignment instead). */
  const char *take = getenv("KILN_TAKE_SLOTS");
  if (take && *take) {
    kp_take t;
    if (kp_slots_parse(take, &t) != 0) {
      fprintf(stderr, "%s: KILN_TAKE_SLOTS='%s' is not SEM_ID:SEM_NUM:N[,SEM_NUM:N...]\n",
              argv[0], take);
      return ST_USAGE;
    }
    unsetenv("KILN_TAKE_SLOTS");
    if (take_slots(&t, argv[0]) != 0) return ST_INFRA;
  }

  /* Several tests in one process share one context: the old way, kept to
   * reproduce state pollution (kiln run --isolation none). */
  kt__state.keep_context = n > 1;
  kt__state.worker = o.worker;
  int failed = 0, skipped = 0, ran = 0;
  for (int i = 0; i < n && !kt__state.worker_stop; i++, ran++) {
    int outcome = run_one(&picks[i]);
    failed += outcome == 1;
    skipped += outcome == 2;
  }
  kt__contexts_close();

  if (kt__state.result_fd < 0) {
    printf("%d passed, %d failed, %d skipped\n", ran - failed - skipped, failed,
           skipped);
    printf("(seed %" PRIu64 "; replay with --seed %" PRIu64 ")\n",
           kt__state.run_seed, kt__state.run_seed);
  }
  return failed ? ST_FAIL : ST_OK;
}
