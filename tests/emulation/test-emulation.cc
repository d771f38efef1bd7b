/* Test of the HIP-on-CPU emulation itself (meson test --suite emulation).
 *
 * Plain C++, no test framework: each CHECK prints what failed and the
 * program exits non-zero if any did. Kernels here are written as kiln's are
 * (hipLaunchKernelGGL, __shared__, HIP_DYNAMIC_SHARED, warp operations) and
 * their results are compared with independent host models. Cases that must
 * kill the process (deadlock, __trap, bad settings) run in child processes.
 * The checks live in the parts test-emulation.h lists; this file runs them
 * and holds the benchmark.
 *
 *   test-emulation          run every check
 *   test-emulation --bench  only time the benchmark launch
 */
#include <stdlib.h>
#include <time.h>

#include <algorithm>

#include "hip-on-host-impl.h"
#include "test-emulation.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

const char *g_argv0 = "";

static double now_s() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ==== Benchmark ========================================================== */

__global__ void bench_kernel(const float *in, float *out) {
  __shared__ float s[1024];
  const unsigned t = threadIdx.x, n = blockDim.x;
  float v = in[blockIdx.x * n + t];
  s[t] = v;
  __syncthreads();
  v += s[(t + 1) % n];
  __syncthreads();
  s[t] = v;
  __syncthreads();
  v += s[n - 1 - t];
  __syncthreads();
  for (int m = warpSize / 2; m > 0; m /= 2) v += __shfl_xor(v, m);
  if (__lane_id() == 0) out[blockIdx.x * (n / warpSize) + t / warpSize] = v;
}

static double bench(int reps) {
  const unsigned blocks = 1024, threads = 256, ws = (unsigned)warpSize;
  float *in = dev_alloc<float>(blocks * threads);
  float *out = dev_alloc<float>(blocks * threads / ws);
  for (unsigned i = 0; i < blocks * threads; i++) in[i] = (float)(i % 17);
  double best = 1e9;
  for (int rep = 0; rep < reps; rep++) {
    double t0 = now_s();
    hipLaunchKernelGGL(bench_kernel, blocks, threads, 0, 0, in, out);
    best = std::min(best, now_s() - t0);
    HIP_OK(hipGetLastError());
  }
  /* The result, so that the stress test checks something. */
  for (unsigned b = 0; b < blocks; b++)
    for (unsigned w = 0; w < threads / ws; w++) {
      const float *a = in + b * threads;
      float want = 0;
      for (unsigned t = w * ws; t < (w + 1) * ws; t++) {
        float v = a[t] + a[(t + 1) % threads];
        float u = a[threads - 1 - t] + a[(threads - t) % threads];
        want += v + u;
      }
      float got = out[b * (threads / ws) + w];
      if (got != want) {
        CHECK(got == want, "bench block %u warp %u: %g want %g", b, w, got,
              want);
        b = blocks;
        break;
      }
    }
  printf("bench: %u blocks x %u threads (warp %u), 4 __syncthreads + warp "
         "shuffle reduction: %.1f ms per launch (%.0f ns per thread)\n",
         blocks, threads, ws, best * 1e3, best * 1e9 / (blocks * threads));
  dev_free(in);
  dev_free(out);
  return best;
}

int main(int argc, char **argv) {
  g_argv0 = argv[0];
  if (argc > 1 && strcmp(argv[1], "--probe") == 0) return probe();
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
    bench(5);
    return g_failures ? 1 : 0;
  }
  HIP_OK(kemu_set_warp_size(32));
  test_barriers();
  test_early_exit();
  test_warps(32);
  test_warps(64);
  test_matrix();
  HIP_OK(kemu_set_warp_size(32));
  test_atomics();
  test_dynamic_shared();
  test_geometry(dim3(3, 2, 2), dim3(8, 4, 2));
  test_geometry(dim3(2, 1, 3), dim3(5, 7, 3));
  HIP_OK(kemu_set_warp_size(64));
  test_geometry(dim3(2, 2, 1), dim3(5, 7, 3));
  HIP_OK(kemu_set_warp_size(32));
  if (kemu__stack_bytes() >= (128u << 10)) { /* KILN_EMU_STACK_KB >= 128 */
    int *out = dev_alloc<int>(64);
    hipLaunchKernelGGL(big_frame, 2, 64, 0, 0, out);
    HIP_OK(hipGetLastError());
    CHECK(out[3] == 16380, "big_frame %d", out[3]);
    dev_free(out);
  }
  test_launch_config();
  test_memory();
  test_philox();
  test_threads();
  test_fatal();
  test_settings();
  /* Also a stress test (262144 threads, 2.6 million switches); a minute
   * under Valgrind, so skipped there. */
  if (!RUNNING_ON_VALGRIND) bench(1);
  if (g_failures) {
    fprintf(stderr, "test-emulation: %d check(s) failed\n", g_failures.load());
    return 1;
  }
  printf("test-emulation: all checks passed\n");
  return 0;
}
