/* The emulation's test (test-emulation.h), part three: what must kill the
 * process (deadlock, __trap, a fiber's stack overflow, a bad shuffle
 * width), in child processes, and the settings read from the environment,
 * each in a fresh run of this program.
 */
#include <stdlib.h>

#include "test-emulation.h"

/* ==== Fatal cases, in child processes ==================================== */

/* Half of each warp waits at __syncthreads, the other half at a shuffle:
 * neither barrier can ever release. */
__global__ void deadlock_kernel(int *out) {
  int v = (int)threadIdx.x;
  if (__lane_id() < 16)
    __syncthreads();
  else
    v = __shfl_xor(v, 1);
  out[threadIdx.x] = v;
}

/* Deep enough recursion that the fiber's stack overflows into its guard. */
__device__ int dig(volatile int *sink, int depth, int limit) {
  if (depth >= limit) return 0;
  volatile char frame[1024];
  frame[0] = (char)depth;
  int below = dig(sink, depth + 1, limit); /* used below: no tail call */
  *sink = frame[0] + below;
  return below + 1;
}

__global__ void overflow_kernel(int *out, int limit) {
  if (threadIdx.x == 3) out[0] = dig(out, 0, limit);
}

__global__ void trap_kernel(int *out) {
  if (threadIdx.x == 5) __trap();
  out[threadIdx.x] = 1;
}

void test_fatal() {
  int *out = dev_alloc<int>(64);
  expect_abort("deadlock",
               [&] { hipLaunchKernelGGL(deadlock_kernel, 1, 64, 0, 0, out); },
               "deadlock in kernel deadlock_kernel block (0,0,0)");
  expect_abort("__trap",
               [&] { hipLaunchKernelGGL(trap_kernel, 2, 64, 0, 0, out); },
               "__trap() in kernel trap_kernel block (0,0,0) thread (5,0,0)");
  {
    /* SIGSEGV with our line, or under ASan its stack-overflow report
     * preceded by our line: either way the thread is named. */
    std::string err;
    int status = in_child(
        [&] {
          hipLaunchKernelGGL(overflow_kernel, 1, 32, 0, 0, out, 1 << 30);
        },
        &err);
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0),
          "stack overflow: the child survived");
    CHECK(err.find("kernel overflow_kernel block (0,0,0) thread (3,0,0)") !=
                  std::string::npos &&
              (err.find("stack overflow") != std::string::npos ||
               err.find("stack-overflow") != std::string::npos),
          "stack overflow report: %s", err.c_str());
  }
  expect_abort("shuffle width",
               [&] {
                 hipLaunchKernelGGL(shuffles<int>, 1, 64, 0, 0, out, 3);
               },
               "width 3");
  dev_free(out);
}

/* Settings are read once per process, so each case re-executes this
 * program with the variable set and asks it to report what it sees. */
static void expect_probe(const char *var, const char *value,
                         const char *want) {
  std::string err;
  int status = in_child(
      [&] {
        setenv(var, value, 1);
        /* argv[0] rather than /proc/self/exe, which is Valgrind's own
         * binary when the test runs under it. */
        const char *self =
            strchr(g_argv0, '/') ? g_argv0 : "/proc/self/exe";
        execl(self, "test-emulation", "--probe", (char *)nullptr);
        _exit(127);
      },
      &err);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s=%s: status %#x",
        var, value, status);
  CHECK(err.find(want) != std::string::npos, "%s=%s: want \"%s\" in: %s", var,
        value, want, err.c_str());
}

int probe() {
  int count = -1;
  hipError_t e = hipGetDeviceCount(&count);
  void *p = nullptr, *q = nullptr;
  hipError_t m = hipMalloc(&p, 3 << 20);
  /* With KILN_EMU_MEMORY_MB=4 the second block does not fit. */
  hipError_t m2 = hipMalloc(&q, 2 << 20);
  size_t free_bytes = 0, total = 0;
  (void)hipMemGetInfo(&free_bytes, &total);
  fprintf(stderr, "probe: count=%s/%d malloc=%s/%s free=%zu/%zu warp=%d\n",
          hipGetErrorName(e), count, hipGetErrorName(m), hipGetErrorName(m2),
          free_bytes, total, kemu_warp_size());
  if (p) hipFree(p);
  if (q) hipFree(q);
  return 0;
}

void test_settings() {
  expect_probe("KILN_EMU_DEVICES", "0",
               "probe: count=hipErrorNoDevice/0 malloc=hipErrorNoDevice");
  expect_probe("KILN_EMU_DEVICES", "2", "probe: count=hipSuccess/2");
  expect_probe("KILN_WARP_SIZE", "64", "warp=64");
  expect_probe("KILN_WARP_SIZE", "48",
               "probe: count=hipErrorNotInitialized/0 "
               "malloc=hipErrorNotInitialized");
  expect_probe("KILN_EMU_MEMORY_MB", "4",
               "malloc=hipSuccess/hipErrorOutOfMemory free=1048576/4194304");
  expect_probe("KILN_EMU_MEMORY_MB", "lots", "KILN_EMU_MEMORY_MB=\"lots\"");
}
