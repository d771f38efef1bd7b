// A GoogleTest binary written as any project writes one, with nothing of
// kiln in it: tests/harness/gtest.sh runs it under `kiln run --gtest` and
// checks that each outcome lands in kiln's report as it should (pass,
// failure with file and line, crash, hang, skip, exit mid-test, a flaky
// test, parameterised and typed tests by their full names, properties,
// kiln's environment, the GPU visible-device variable, a process left
// running); tests/harness/gtest-workers.sh runs it in workers.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

TEST(Arith, Adds) { EXPECT_EQ(2 + 2, 4); }

TEST(Arith, FailsOnPurpose) {
  EXPECT_EQ(2 + 2, 5) << "planted failure";  // the line the report must name
}

TEST(Arith, DISABLED_Slow) { EXPECT_TRUE(true); }

// Typed tests register in file order, before Crash: with --isolation none
// the crash stops the process, and what ran before it keeps its outcome.
template <typename T>
class Zeros : public ::testing::Test {};
using ZeroTypes = ::testing::Types<int, float, double>;
TYPED_TEST_SUITE(Zeros, ZeroTypes);
TYPED_TEST(Zeros, DefaultIsZero) { EXPECT_EQ(TypeParam(), TypeParam(0)); }

TEST(Crash, Segfault) {
  std::fflush(stdout);
  std::raise(SIGSEGV);
}

TEST(Hang, Forever) {
  for (;;) pause();
}

TEST(Quits, Early) { std::exit(3); }

TEST(Skip, NoDevice) { GTEST_SKIP() << "needs a device this machine lacks"; }

// Starts a helper, waits until it runs, and forgets it, as a test that
// leaves a server running does; held back (DISABLED_), run by its id.
TEST(Strays, DISABLED_LeavesChild) {
  int ready[2];
  ASSERT_EQ(pipe2(ready, O_CLOEXEC), 0);
  pid_t pid = fork();
  if (pid == 0) {
    execlp("sleep", "sleep", "37", static_cast<char *>(nullptr));
    _exit(127);
  }
  close(ready[1]);
  char byte;
  EXPECT_EQ(read(ready[0], &byte, 1), 0) << "the helper did not start";  // closed at its exec
  close(ready[0]);
  ASSERT_GT(pid, 0);
}

// Starts a task that shares the binary's memory (as LeakSanitizer's tracer
// does at exit) and lives until the binary exits: part of the binary, not
// a process it left. The binary ends it in its exit, before its memory
// goes (a static object's destructor closes the pipe and reaps it); raw
// system calls in the task, which has no libc state of its own.
static int wait_for_exit(void *arg) {
  int *fds = static_cast<int *>(arg);
  char byte;
  syscall(SYS_close, fds[1]);
  syscall(SYS_read, fds[0], &byte, 1);
  syscall(SYS_exit, 0);
  return 0;
}
struct SharedTask {
  int fds[2] = {-1, -1};
  pid_t pid = -1;
  ~SharedTask() {
    if (pid <= 0) return;
    close(fds[1]);
    waitpid(pid, nullptr, 0);
  }
};
static SharedTask shared_task;
TEST(Strays, DISABLED_SharesMemory) {
  static char stack[64 * 1024] __attribute__((aligned(16)));
  ASSERT_EQ(pipe(shared_task.fds), 0);
  shared_task.pid = clone(wait_for_exit, stack + sizeof stack, CLONE_VM | SIGCHLD, shared_task.fds);
  ASSERT_GT(shared_task.pid, 0);
}

// Fails its first run in a run folder and passes the next: under kiln with
// --retries, a flaky test.
TEST(Flaky, OnceThenPasses) {
  const char *dir = std::getenv("KILN_RUN_DIR");
  ASSERT_NE(dir, nullptr) << "not under kiln";
  std::string mark = std::string(dir) + "/flaky-once";
  if (access(mark.c_str(), F_OK) != 0) {
    FILE *f = std::fopen(mark.c_str(), "w");
    if (f) std::fclose(f);
    FAIL() << "first run fails";
  }
}

// What kiln gives each test process: its id and a private folder.
TEST(Environment, UnderKiln) {
  const ::testing::TestInfo *me = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string id = std::string(me->test_suite_name()) + "." + me->name();
  const char *test = std::getenv("KILN_TEST"), *tmp = std::getenv("TEST_TMPDIR");
  ASSERT_NE(test, nullptr);
  EXPECT_EQ(id, test);
  ASSERT_NE(tmp, nullptr);
  std::string probe = std::string(tmp) + "/probe";
  FILE *f = std::fopen(probe.c_str(), "w");
  ASSERT_NE(f, nullptr) << tmp << " is not writable";
  std::fclose(f);
}

// A multi-GPU-unaware test, as most are: it uses "the" GPU, so it must see
// exactly one. Records what it saw.
TEST(Devices, SeesOneDevice) {
  const char *vars[] = {"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"};
  for (const char *var : vars) {
    const char *v = std::getenv(var);
    if (!v) continue;
    RecordProperty("visible_devices", v);
    EXPECT_EQ(std::strchr(v, ','), nullptr) << var << "=" << v << " shows several devices";
    EXPECT_NE(*v, '\0') << var << " is empty";
    return;
  }
  GTEST_SKIP() << "no GPU visible-device variable set";
}

// Parameterised tests: GoogleTest registers them after every TEST, so
// they run last.
class Sizes : public ::testing::TestWithParam<int> {};
TEST_P(Sizes, PowerOfTwo) {
  int n = GetParam();
  EXPECT_EQ(n & (n - 1), 0) << n << " is no power of two";
}
INSTANTIATE_TEST_SUITE_P(Pow2, Sizes, ::testing::Values(1, 64, 96));

