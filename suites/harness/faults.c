/* The fault suite: tests that go wrong on purpose, one way each, so that
 * kiln's own tests (tests/harness) can assert how the parent classifies
 * them. Tagged `fault`: kiln runs them only when they are named (@fault,
 * `faults`, or an id), never as part of the user's GPU suite.
 *
 * Environment the tests read (set by tests/harness):
 *   KILN_FAULT_STATE_DIR  where faults/flaky_once keeps its attempt marker
 *   KILN_FAULT_FLOOD_MB   megabytes faults/flood writes (default 300)
 *   KILN_FAULT_SLEEP_MS   how long faults/sleeper, faults/gpu_sleeper,
 *                         faults/helper, faults/two_devices and
 *                         faults/memory_hog sleep (default 300)
 *   KILN_FAULT_SLEEP_LOG  where those sleeps append their wall-clock start
 *                         and end (one "START_MS END_MS" line each)
 *   KILN_FAULT_KILL_MS    how long faults/kill_kiln waits before it kills
 *                         kiln (default 300)
 *   KILN_FAULT_HOG_MB     device memory faults/memory_hog holds (default 40)
 *   KILN_FAULT_LOSE_AFTER_MS  how long faults/device_lost waits before it
 *                         loses its device (default 0)
 *
 * The device faults (oob_write_far, oob_write_near, unwritten_read,
 * spin_kernel) run real kernels from kernels/faults.hip through the
 * test-only entry points of kiln/test-faults.h, on every backend.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "child-impl.h"
#include "kiln/test-faults.h"
#include "kiln/test.h"

/* A test that passes: allocates, copies, frees. */
START_TEST(pass) {
  void *p = NULL;
  kt_assert_ok(ke_malloc(kt_ctx(), &p, 1024));
  char host[1024] = {1};
  kt_assert_ok(ke_copy_to_device(kt_ctx(), p, host, sizeof host));
  kt_assert_ok(ke_free(kt_ctx(), p));
}
END_TEST

START_TEST(fail_assert) {
  int answer = 41;
  ck_assert_int_eq(answer, 42);
}
END_TEST

START_TEST(segfault) {
  volatile int *nowhere = NULL;
  *nowhere = 1;
}
END_TEST

START_TEST(abort_call) { abort(); }
END_TEST

/* Ends the process before any result record: a crash, not a pass. */
START_TEST(exit_early) { exit(0); }
END_TEST

/* Hangs; SIGTERM ends it. */
START_TEST(hang) {
  for (;;) pause();
}
END_TEST

/* Hangs and ignores SIGTERM: only the SIGKILL after the grace ends it. */
START_TEST(hang_ignores_term) {
  signal(SIGTERM, SIG_IGN);
  for (;;) pause();
}
END_TEST

/* A device allocation never freed: the ledger names bytes and this line. */
START_TEST(leak) {
  void *p = NULL;
  kt_assert_ok(ke_malloc(kt_ctx(), &p, 4096));
}
END_TEST

START_TEST(skip) { KT_SKIP("skipped on purpose by the fault suite"); }
END_TEST

/* Fails on its first attempt and passes on the next: a marker file in
 * KILN_FAULT_STATE_DIR (TEST_TMPDIR is private to each attempt). */
START_TEST(flaky_once) {
  const char *dir = getenv("KILN_FAULT_STATE_DIR");
  if (!dir) KT_SKIP("KILN_FAULT_STATE_DIR is not set");
  char path[4096];
  snprintf(path, sizeof path, "%s/flaky_once.marker", dir);
  FILE *f = fopen(path, "r");
  if (f) {
    fclose(f);
    return;
  }
  f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fclose(f);
  ck_abort_msg("first attempt fails on purpose");
}
END_TEST

/* Writes a line that is not a record to the result pipe, then passes. */
START_TEST(garbage) {
  static const char junk[] = "this is not a record = %zz\n";
  if (kt__state.result_fd >= 0)
    (void)!write(kt__state.result_fd, junk, sizeof junk - 1);
}
END_TEST

/* Writes half a record and leaves without a newline or an end record. */
START_TEST(truncated) {
  static const char half[] = "check name=half n=10 max_abs=";
  if (kt__state.result_fd >= 0)
    (void)!write(kt__state.result_fd, half, sizeof half - 1);
  fflush(stdout);
  _exit(0);
}
END_TEST

/* Leaves a grandchild that holds stdout, stderr and the result pipe and
 * never exits; the test itself passes. */
START_TEST(grandchild) {
  pid_t pid = fork();
  if (pid == 0) {
    /* No Check call in the grandchild: a passing ck_assert writes a
     * location message to Check's message file, whose offset the fork
     * shares, and the runner's Check then read garbage ("Bad message
     * type", 1 run in 40, found by scripts/soak.sh). It keeps stdout,
     * stderr and the result pipe, and execs: nothing of the runner. */
    printf("grandchild %ld sleeping with the pipes open\n", (long)getpid());
    fflush(stdout);
    if (close_range(4, ~0u, 0) != 0)
      for (int fd = 4; fd < 1024; fd++) close(fd);
    execlp("sleep", "sleep", "100000", (char *)NULL);
    for (;;) pause();
  }
  ck_assert_int_ge(pid, 0);
  printf("grandchild pid %ld\n", (long)pid);
}
END_TEST

/* Floods stdout: KILN_FAULT_FLOOD_MB megabytes (default 300). */
START_TEST(flood) {
  const char *mb_env = getenv("KILN_FAULT_FLOOD_MB");
  long mb = mb_env ? atol(mb_env) : 300;
  static char chunk[1 << 20];
  for (size_t i = 0; i < sizeof chunk; i++)
    chunk[i] = (i % 64 == 63) ? '\n' : (char)('a' + i % 26);
  for (long i = 0; i < mb; i++) {
    size_t off = 0;
    while (off < sizeof chunk) {
      ssize_t n = write(STDOUT_FILENO, chunk + off, sizeof chunk - off);
      ck_assert_int_gt(n, 0);
      off += (size_t)n;
    }
  }
  printf("\nflood done: %ld MB\n", mb);
}
END_TEST

/* Sleeps $name milliseconds (default 300). */
static void sleep_env(const char *name) {
  const char *env = getenv(name);
  long ms = env ? atol(env) : 300;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static double wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Sleeps KILN_FAULT_SLEEP_MS: for token-sharing tests. With
 * KILN_FAULT_SLEEP_LOG set, appends "START_MS END_MS" (wall clock) of the
 * sleep to that file: the sleep lies inside the time the test holds its
 * slots, so the tests can count sleeps at once exactly, where a report's
 * started..ended also holds the parent's reaping latency. */
static void faults_sleep(void) {
  double t0 = wall_ms();
  sleep_env("KILN_FAULT_SLEEP_MS");
  const char *log = getenv("KILN_FAULT_SLEEP_LOG");
  if (!log || !*log) return;
  char line[64];
  int n = snprintf(line, sizeof line, "%.3f %.3f\n", t0, wall_ms());
  int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  /* One short write with O_APPEND: lines of tests at once do not mix. */
  if (fd >= 0 && write(fd, line, (size_t)n) != n) ck_abort_msg("cannot append to %s", log);
  if (fd >= 0) close(fd);
  else ck_abort_msg("cannot open %s", log);
}

START_TEST(sleeper) { faults_sleep(); }
END_TEST

/* The same sleep in a GPU test, which gets an engine context (and, with
 * KILN_EMU_INIT_MS on the host, a slow start-up): for warm children. */
START_TEST(gpu_sleeper) {
  void *p = NULL;
  kt_assert_ok(ke_malloc(kt_ctx(), &p, 256));
  faults_sleep();
  kt_assert_ok(ke_free(kt_ctx(), p));
}
END_TEST

/* ---- Processes a test leaves behind -------------------------------------------- */

/* In a child of the test: nothing of the runner's (no pipe to kiln, no
 * Check call: see grandchild), stdout and stderr on /dev/null, then
 * `sleep`, which keeps the test's environment. */
static void become_sleeper(void) {
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) dup2(null, 1), dup2(null, 2);
  if (close_range(3, ~0u, 0) != 0)
    for (int fd = 3; fd < 1024; fd++) close(fd);
  execlp("sleep", "sleep", "100000", (char *)NULL);
  _exit(127);
}

/* Starts a sleeper that leaves the test's process group, and returns its
 * pid: session 0, its own process group; session 1, the daemon pattern (a
 * child calls setsid() and forks the sleeper, then exits, so the sleeper is
 * an orphan in a new session). */
static pid_t start_stray(int session) {
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  pid_t c = fork();
  ck_assert_int_ge(c, 0);
  if (c == 0) {
    close(p[0]);
    pid_t stray = 0;
    if (session) {
      setsid();
      stray = fork();
      if (stray != 0) {
        (void)!write(p[1], &stray, sizeof stray);
        _exit(0);
      }
    } else {
      setpgid(0, 0);
      stray = getpid();
      (void)!write(p[1], &stray, sizeof stray);
    }
    become_sleeper();
  }
  close(p[1]);
  pid_t stray = -1;
  ck_assert_int_eq(read(p[0], &stray, sizeof stray), (ssize_t)sizeof stray);
  close(p[0]);
  if (session) waitpid(c, NULL, 0);
  /* Until it has become `sleep` (what kiln will report it as). */
  char path[64], cmd[16] = "";
  snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)stray);
  for (int i = 0; i < 2000 && strcmp(cmd, "sleep") != 0; i++) {
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(cmd, 1, sizeof cmd - 1, f) : 0;
    if (f) fclose(f);
    cmd[n] = '\0';
    if (strcmp(cmd, "sleep") != 0) usleep(1000);
  }
  return stray;
}

/* Leaves two sleepers running, neither in the test's process group (one in
 * its own group, one a daemon in a new session), and passes. */
START_TEST(escape) {
  pid_t group = start_stray(0), daemon = start_stray(1);
  printf("escaped: pid %ld in its own process group, pid %ld in a new session\n",
         (long)group, (long)daemon);
}
END_TEST

/* A well-behaved test with a helper process: it starts `sleep` in its own
 * process group, sleeps KILN_FAULT_SLEEP_MS, then stops its helper and
 * passes. Only a kiln that dies meanwhile leaves the helper behind. */
START_TEST(helper) {
  pid_t h = fork();
  ck_assert_int_ge(h, 0);
  if (h == 0) become_sleeper();
  printf("helper pid %ld\n", (long)h);
  fflush(stdout);
  faults_sleep();
  kill(h, SIGKILL);
  waitpid(h, NULL, 0);
}
END_TEST

/* Kills kiln: sleeps KILN_FAULT_KILL_MS (default 300, so that other tests
 * are in flight), then sends SIGKILL to its parent, and waits to die with
 * it. */
START_TEST(kill_kiln) {
  sleep_env("KILN_FAULT_KILL_MS");
  printf("killing kiln (pid %ld)\n", (long)getppid());
  fflush(stdout);
  kill(getppid(), SIGKILL);
  for (;;) pause();
}
END_TEST

/* 300 device allocations never freed: the report lists every one. */
START_TEST(many_leaks) {
  for (int i = 0; i < 300; i++) {
    void *p = NULL;
    kt_assert_ok(ke_malloc(kt_ctx(), &p, 64 + (size_t)i));
  }
}
END_TEST

/* ---- State pollution ----------------------------------------------------- */

/* The original engine's bug in miniature: a process-wide workspace cache
 * that hands a buffer from one test to the next without clearing it. A
 * fresh workspace is zeroed when it is made, so a test that writes part of
 * it and assumes the rest is zero passes alone and fails after a test that
 * filled it. (Freed device memory cannot carry the state here: the host
 * emulation fills every new allocation with 0xFF bytes.) */
#define KT__WS_FLOATS 16384            /* 64 KiB */

static void *kt__workspace;

/* Returns the cached workspace, making (and zeroing) one if there is none;
 * *made says whether this call made it. */
static void *kt__workspace_get(int *made) {
  *made = kt__workspace == NULL;
  if (*made) {
    static const float zeros[KT__WS_FLOATS];
    kt_assert_ok(ke_malloc(kt_ctx(), &kt__workspace, sizeof zeros));
    kt_assert_ok(ke_copy_to_device(kt_ctx(), kt__workspace, zeros, sizeof zeros));
  }
  return kt__workspace;
}

/* Fills the workspace with 7.25 and leaves it in the cache: the polluter.
 * (The ledger reports the workspace as this test's leak.) */
START_TEST(pollution_writer) {
  int made;
  void *ws = kt__workspace_get(&made);
  static float pattern[KT__WS_FLOATS];
  for (int i = 0; i < KT__WS_FLOATS; i++) pattern[i] = 7.25f;
  kt_assert_ok(ke_copy_to_device(kt_ctx(), ws, pattern, sizeof pattern));
}
END_TEST

/* Takes the workspace first thing, writes its first half, and checks all
 * of it against a reference that has zeros in the second half. */
static void read_workspace(const char *check) {
  int made;
  void *ws = kt__workspace_get(&made);
  static float half[KT__WS_FLOATS / 2];
  static double expected[KT__WS_FLOATS];
  for (int i = 0; i < KT__WS_FLOATS / 2; i++) half[i] = (float)i * 0.5f;
  for (int i = 0; i < KT__WS_FLOATS; i++)
    expected[i] = i < KT__WS_FLOATS / 2 ? (double)i * 0.5 : 0.0;
  kt_assert_ok(ke_copy_to_device(kt_ctx(), ws, half, sizeof half));
  ke_tensor view;
  int64_t shape[1] = {KT__WS_FLOATS};
  kt_assert_ok(ke_tensor_init(&view, KE_F32, 1, shape));
  view.data = ws;
  int ok = kt_check(check, &view, expected, kt_tol_default(KE_F32), NULL);
  if (made) {
    kt_assert_ok(ke_free(kt_ctx(), ws));
    kt__workspace = NULL;
  }
  ck_assert_msg(ok, "%s", kt_last_check_summary());
}

START_TEST(pollution_reader) { read_workspace("workspace"); }
END_TEST

/* A planted chain of three for `kiln bisect`: chain_victim reads the
 * workspace as pollution_reader does, chain_pollute fills it but only once
 * chain_arm has run in the same process. Neither of the first two alone
 * makes the victim fail; both before it do. */
static int kt__chain_armed;

START_TEST(chain_arm) { kt__chain_armed = 1; }
END_TEST

START_TEST(chain_pollute) {
  if (!kt__chain_armed) return;
  int made;
  void *ws = kt__workspace_get(&made);
  static float pattern[KT__WS_FLOATS];
  for (int i = 0; i < KT__WS_FLOATS; i++) pattern[i] = -3.5f;
  kt_assert_ok(ke_copy_to_device(kt_ctx(), ws, pattern, sizeof pattern));
}
END_TEST

START_TEST(chain_victim) { read_workspace("chain_workspace"); }
END_TEST

/* Branches on host memory nobody wrote, then passes: invisible to a plain
 * run, an error under `--wrap "valgrind --error-exitcode=99"`, which kiln
 * must then not report as a pass. */
START_TEST(uninit_branch) {
  /* Through a volatile pointer, so the compiler neither warns nor drops the
   * read; a call in each branch keeps it a real conditional jump. */
  int *volatile p = malloc(sizeof(int));
  ck_assert_ptr_nonnull(p);
  if (*p > 0) printf("uninit_branch: positive\n");
  else printf("uninit_branch: not positive\n");
  free(p);
}
END_TEST

/* ---- Device faults (kernels/faults.hip) ----------------------------------- */

/* 2^45 floats = 128 TiB past the buffer: outside any GPU allocation (an
 * illegal address, reported at the sync) and outside the canonical x86-64
 * address range (SIGSEGV in host emulation, or ASan's SEGV report). */
#define KT__FAR_OFFSET ((int64_t)1 << 45)

/* A kernel writes far out of bounds. Written as a real kernel test would
 * be: on a GPU the sync returns the runtime's error and the assertion names
 * it; in host emulation the store itself kills the process. */
START_TEST(oob_write_far) {
  void *p = NULL;
  kt_assert_ok(ke_malloc(kt_ctx(), &p, 1024 * sizeof(float)));
  kt_assert_ok(ke__fault_store(kt_ctx(), p, KT__FAR_OFFSET));
  kt_assert_ok(ke_free(kt_ctx(), p));
}
END_TEST

/* A kernel writes one element past the end of a guarded tensor: no crash
 * anywhere (the guard zone is real memory), but kt_free finds the guard
 * bytes overwritten and fails the test. */
START_TEST(oob_write_near) {
  ke_tensor t;
  int64_t shape[1] = {1000};
  kt_alloc(&t, KE_F32, 1, shape);
  kt_fill_uniform(&t, -1.0f, 1.0f);
  kt_assert_ok(ke__fault_store(kt_ctx(), t.data, 1000));
  kt_free(&t);
}
END_TEST

/* A kernel reads a buffer nobody wrote and the test assumes zeros. Without
 * --poison it passes or fails on whatever the allocator left; with --poison
 * the input is NaN bytes, so the check fails with every element NaN. */
START_TEST(unwritten_read) {
  enum { N = 4096 };
  void *x = NULL;
  ke_tensor y;
  int64_t shape[1] = {N};
  kt_assert_ok(ke_malloc(kt_ctx(), &x, N * sizeof(float)));
  kt_alloc(&y, KE_F32, 1, shape);
  kt_assert_ok(ke__fault_copy(kt_ctx(), x, y.data, N));
  static const double zeros[N];
  int ok = kt_check("unwritten", &y, zeros, kt_tol_default(KE_F32), NULL);
  kt_free(&y);
  kt_assert_ok(ke_free(kt_ctx(), x));
  ck_assert_msg(ok, "%s", kt_last_check_summary());
}
END_TEST

/* A kernel that never ends: it spins on a flag nobody sets, in a process
 * that ignores SIGTERM (as one stuck in a driver call may not answer it).
 * The test's 2 s timeout sends SIGTERM; the SIGKILL after the grace ends
 * it. */
START_TEST(spin_kernel) {
  signal(SIGTERM, SIG_IGN);
  void *flag = NULL;
  static const int zero = 0;
  kt_assert_ok(ke_malloc(kt_ctx(), &flag, sizeof zero));
  kt_assert_ok(ke_copy_to_device(kt_ctx(), flag, &zero, sizeof zero));
  printf("spin_kernel: launching a kernel that never ends\n");
  fflush(stdout);
  kt_assert_ok(ke__fault_spin(kt_ctx(), flag));
  ck_abort_msg("the spinning kernel returned");
}
END_TEST

/* Asks for more device memory than the device has: the cap refuses it with
 * KE_ECAP and names the numbers; the test fails cleanly, nothing crashes. */
START_TEST(over_cap) {
  void *p = NULL;
  size_t total = ke_context_device(kt_ctx())->total_bytes;
  kt_assert_ok(ke_malloc(kt_ctx(), &p, 2 * total));
  kt_assert_ok(ke_free(kt_ctx(), p));
}
END_TEST

/* Closes its end of the result pipe and passes: the parent never gets the
 * result or end record, so this is not a pass. */
START_TEST(closed_pipe) {
  if (kt__state.result_fd >= 0) {
    close(kt__state.result_fd);
    kt__state.result_fd = -1;
  }
  printf("closed the result pipe\n");
}
END_TEST

/* Strings every YAML 1.1 or 1.2 reader would take for something else when
 * written plain (booleans, nulls, numbers, sexagesimals, dates, merge
 * keys) or that need quoting for their indicators: sent as notes (key and
 * value) and printed, so that tests/harness/yaml-strings.sh can check that
 * each comes back from the report as the same string. */
static const char *const yaml_hostile[] = {
    "yes", "No", "ON", "off", "y", "n", "true", "False", "null", "Null", "~", "",
    "1:30", "1:2", "0x1F", "0o17", "017", "0b101", "1_000", "1e3", "1.5", ".5",
    "-.inf", ".NaN", "+12", "-0", "2001-12-14", "2001-12-14t21:59:43.10-05:00",
    "2026-11-22T06:25:25.851Z", "<<", "=", "- item", "key: value", "#comment",
    "@at", "`tick", "!tag", "&anchor", "*alias", "'single'", "\"double\"", "[a, b]",
    "{a: 1}", "trailing space ", " leading space", "two\nlines", "tab\there",
    "%percent", "|pipe", ">fold", "?question", ",comma", "it's", "\xc3\xa9 \xe2\x9c\x93"};

START_TEST(yaml_strings) {
  for (size_t i = 0; i < sizeof yaml_hostile / sizeof yaml_hostile[0]; i++) {
    kt_note(yaml_hostile[i], yaml_hostile[i]);
    printf("%s\n", yaml_hostile[i]);
  }
  kt_metric("yaml.strings", 1.0, "yes");
}
END_TEST

/* A record longer than the protocol's line limit: the runner sends a
 * `truncated` record in its place, which the report lists. */
START_TEST(long_record) {
  static char big[70000];
  memset(big, 'x', sizeof big - 1);
  kt_note("big", big);
  kt_note("after", "still here");
}
END_TEST

/* ---- Device health, devices, memory, sanitizers ------------------------------ */

/* Loses its device mid-test: in host emulation the device then fails every
 * call, and with KILN_EMU_STATE_DIR it stays lost for every later process,
 * as a GPU that fell off the bus would; kiln's health probe finds it and
 * takes the device out of the run. On a GPU nothing may break a shared
 * device on purpose: a skip. */
START_TEST(device_lost) {
  const char *env = getenv("KILN_FAULT_LOSE_AFTER_MS");
  long ms = env ? atol(env) : 0;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (ms > 0 && nanosleep(&ts, &ts) != 0) {
  }
  int st = ke__fault_lose_device(kt_ctx());
  if (st == KE_ENOSYS) KT_SKIP("%s", ke_last_error());
  kt_assert_ok(st);
}
END_TEST

/* Needs two devices at once: a context on each, memory on each, notes of
 * the devices it was given, then a sleep (for overlap checks). */
START_TEST(two_devices) {
  ck_assert_int_eq(kt_device_count(), 2);
  void *p[2];
  for (int i = 0; i < 2; i++) {
    kt_assert_ok(ke_malloc(kt_ctx_on(i), &p[i], 4096));
    ck_assert_int_eq(ke_context_device(kt_ctx_on(i))->index, i);
  }
  static const char *const vars[] = {"KILN_DEVICE", "KILN_EMU_VISIBLE_DEVICES",
                                     "CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i])) kt_note(vars[i], getenv(vars[i]));
  faults_sleep();
  for (int i = 0; i < 2; i++) kt_assert_ok(ke_free(kt_ctx_on(i), p[i]));
}
END_TEST

/* Holds KILN_FAULT_HOG_MB of device memory (default 40) while it sleeps:
 * parallel runs of it exhaust a small device unless kiln sizes its slots
 * by memory (--slots auto). */
START_TEST(memory_hog) {
  const char *env = getenv("KILN_FAULT_HOG_MB");
  size_t mb = env ? (size_t)atol(env) : 40;
  void *p = NULL;
  kt_assert_ok(ke_malloc(kt_ctx(), &p, mb << 20));
  faults_sleep();
  kt_assert_ok(ke_free(kt_ctx(), p));
}
END_TEST

/* A kernel stores one element past the end of a plain device allocation
 * (no guard zone): nothing notices in a normal run; a sanitizer does
 * (compute-sanitizer memcheck on a GPU, AddressSanitizer in host
 * emulation). The planted out-of-bounds kernel of `--sanitize memcheck`. */
START_TEST(oob_write_edge) {
  void *p = NULL;
  kt_assert_ok(ke_malloc(kt_ctx(), &p, 1000 * sizeof(float)));
  kt_assert_ok(ke__fault_store(kt_ctx(), p, 1000));
  kt_assert_ok(ke_free(kt_ctx(), p));
}
END_TEST

/* Shared memory read across warps with no barrier (racecheck). */
START_TEST(shared_race) {
  void *p = NULL;
  kt_assert_ok(ke_malloc(kt_ctx(), &p, 256 * sizeof(float)));
  kt_assert_ok(ke__fault_race(kt_ctx(), p));
  kt_assert_ok(ke_free(kt_ctx(), p));
}
END_TEST

/* A __syncthreads() only part of the block reaches (synccheck). */
START_TEST(divergent_barrier) {
  void *p = NULL;
  kt_assert_ok(ke_malloc(kt_ctx(), &p, 64 * sizeof(float)));
  kt_assert_ok(ke__fault_divergent_barrier(kt_ctx(), p));
  kt_assert_ok(ke_free(kt_ctx(), p));
}
END_TEST

static const kt_test fault_tests[] = {
    KT_TEST(pass),
    KT_TEST(fail_assert),
    KT_TEST(segfault, .host_only = 1),
    KT_TEST(abort_call, .host_only = 1),
    KT_TEST(exit_early, .host_only = 1),
    KT_TEST(hang, .host_only = 1, .timeout_s = 1),
    KT_TEST(hang_ignores_term, .host_only = 1, .timeout_s = 1),
    KT_TEST(leak),
    KT_TEST(skip, .host_only = 1),
    KT_TEST(flaky_once, .host_only = 1),
    KT_TEST(garbage, .host_only = 1),
    KT_TEST(truncated, .host_only = 1),
    KT_TEST(grandchild, .host_only = 1),
    KT_TEST(flood, .host_only = 1, .tags = "slow"),
    KT_TEST(sleeper, .host_only = 1, .tags = "sleep"),
    KT_TEST(gpu_sleeper, .tags = "sleep"),
    KT_TEST(pollution_writer, .tags = "pollution"),
    KT_TEST(pollution_reader, .tags = "pollution"),
    KT_TEST(oob_write_far, .tags = "device"),
    KT_TEST(oob_write_near, .tags = "device"),
    KT_TEST(unwritten_read, .tags = "device"),
    KT_TEST(spin_kernel, .tags = "device", .timeout_s = 2),
    KT_TEST(over_cap, .tags = "device"),
    KT_TEST(closed_pipe, .host_only = 1),
    KT_TEST(uninit_branch, .host_only = 1),
    KT_TEST(yaml_strings, .host_only = 1),
    KT_TEST(long_record, .host_only = 1),
    KT_TEST(escape, .host_only = 1),
    KT_TEST(helper, .host_only = 1, .tags = "sleep"),
    KT_TEST(kill_kiln, .host_only = 1),
    KT_TEST(many_leaks),
    KT_TEST(device_lost, .tags = "device"),
    KT_TEST(two_devices, .devices = 2, .tags = "sleep"),
    KT_TEST(memory_hog, .tags = "sleep"),
    KT_TEST(oob_write_edge, .tags = "device,sanitizer"),
    KT_TEST(shared_race, .tags = "sanitizer"),
    KT_TEST(divergent_barrier, .tags = "sanitizer"),
    KT_TEST(chain_arm, .tags = "chain"),
    KT_TEST(chain_pollute, .tags = "chain"),
    KT_TEST(chain_victim, .tags = "chain"),
};

KT_SUITE(kt_suite_faults, "faults", "fault", fault_tests);
