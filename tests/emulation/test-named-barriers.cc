/* Test of the emulation's named barriers (PTX bar.sync / bar.arrive id,
 * count; launch.cc kemu_bar_named, called by arch/sm90.h's kd_bar_sync and
 * kd_bar_arrive): meson test --suite emulation. A program of its own, in
 * test-emulation.cc's style (test-check.h: CHECK, child processes for the
 * cases that must abort).
 *
 * The fibers run in FIFO order, thread 0 first, so every kernel here puts
 * the threads that must wait before the ones they wait for: a barrier that
 * does not hold them lets them read what is not yet written.
 */
#include "test-check.h"

static int *dev_ints(size_t n) {
  int *p = dev_alloc<int>(n);
  memset(p, 0, n * sizeof(int));
  return p;
}

/* Warps 4-7 write, warps 0-3 wait for them with bar.sync 1, 256 and read;
 * warps 8-11 take no part and return at once (a named barrier with a count
 * waits for that count, not for the block). bar.arrive from the writers.
 * Each block writes other values: __shared__ arrays outlive a block here. */
__global__ void sync_waits(int *out) {
  __shared__ int s[128];
  const unsigned t = threadIdx.x;
  if (t < 128) {
    kemu_bar_named(1, 256, true);
    /* written by another warp's thread of this block */
    out[128 * blockIdx.x + t] = s[(t + 1) % 128];
  } else if (t < 256) {
    s[t - 128] = 1000 * (int)(blockIdx.x + 1) + (int)(t - 128);
    kemu_bar_named(1, 256, false);
  }
}

/* bar.arrive does not wait: warps 0-3 arrive at barrier 1 and then write,
 * then sync at barrier 2; warps 4-7 need that write (barrier 2) before
 * they complete barrier 1. An arrive that waited would deadlock. */
__global__ void arrive_goes_on(int *out) {
  __shared__ int s[128];
  const unsigned t = threadIdx.x;
  if (t < 128) {
    kemu_bar_named(1, 256, false);
    s[t] = 7 * (int)t;
    kemu_bar_named(2, 256, true);
  } else {
    kemu_bar_named(2, 256, true);
    out[t - 128] = s[255 - t];
    kemu_bar_named(1, 256, true);
  }
}

/* Two warpgroups take turns, FlashAttention-3's ping-pong, over ROUNDS
 * phases of barriers 1 and 2 (count 256 each): group c waits on its own
 * barrier, runs its turn, then arrives on the other's; group 1 opens group
 * 0's first turn. Inside a turn each thread takes a ticket; the tickets of
 * turn k must be k * 128 .. k * 128 + 127, so turns never mix. */
enum { ROUNDS = 20 };
__global__ void ping_pong(int *out) {
  __shared__ int ticket;
  const unsigned t = threadIdx.x, c = t / 128;
  if (t == 0) ticket = 0;
  __syncthreads();
  if (c == 1) kemu_bar_named(1, 256, false);
  for (int r = 0; r < ROUNDS; r++) {
    kemu_bar_named(1 + (int)c, 256, true);
    const int k = ticket++;
    out[k] = (2 * r + (int)c) * 128 + (int)(t % 128); /* what k must be */
    out[2 * ROUNDS * 128 + k] = k;
    /* Group 1's last arrival would open a turn group 0 never takes. */
    if (!(c == 1 && r == ROUNDS - 1)) kemu_bar_named(2 - (int)c, 256, false);
  }
}

static void test_semantics() {
  int *out = dev_ints(2 * ROUNDS * 128 * 2);
  hipLaunchKernelGGL(sync_waits, 2, 384, 0, 0, out);
  CHECK(hipGetLastError() == hipSuccess, "sync_waits launch");
  int bad = 0;
  for (int t = 0; t < 256; t++)
    bad += out[t] != 1000 * (t / 128 + 1) + (t + 1) % 128;
  CHECK(bad == 0, "bar.sync did not wait for the writers: %d of 256 wrong "
        "(out[0] = %d)", bad, out[0]);

  memset(out, 0, 128 * sizeof(int));
  hipLaunchKernelGGL(arrive_goes_on, 1, 256, 0, 0, out);
  CHECK(hipGetLastError() == hipSuccess, "arrive_goes_on launch");
  bad = 0;
  for (int t = 0; t < 128; t++) bad += out[t] != 7 * (127 - t);
  CHECK(bad == 0, "bar.arrive then a write: %d of 128 wrong", bad);

  hipLaunchKernelGGL(ping_pong, 3, 256, 0, 0, out);
  CHECK(hipGetLastError() == hipSuccess, "ping_pong launch");
  bad = 0;
  for (int k = 0; k < 2 * ROUNDS * 128; k++)
    bad += out[2 * ROUNDS * 128 + k] != k || out[k] / 128 != k / 128;
  CHECK(bad == 0, "ping-pong turns mixed: %d of %d tickets out of turn", bad,
        2 * ROUNDS * 128);
  hipFree(out);
}

/* ==== Misuse aborts, in child processes (expect_abort) ================== */

/* Group 1 forgets to open group 0's first turn. */
__global__ void missing_arrive(int *out) {
  const unsigned c = threadIdx.x / 128;
  kemu_bar_named(1 + (int)c, 256, true);
  out[threadIdx.x] = 1;
  kemu_bar_named(2 - (int)c, 256, false);
}
/* Warps 0-3 count 256, warps 4-7 count 128 on the same phase. */
__global__ void count_mismatch(int *) {
  kemu_bar_named(3, threadIdx.x < 128 ? 256 : 128, threadIdx.x < 128);
}
__global__ void bad_count(int *) { kemu_bar_named(1, 48, true); }
__global__ void bad_id(int *) { kemu_bar_named(0, 64, true); }
/* Only 64 of the block's 128 threads ever arrive at a barrier of 128; the
 * others return (they do not count, as on the GPU). */
__global__ void too_few(int *) {
  if (threadIdx.x < 64) kemu_bar_named(5, 128, true);
}

/* Thread 0 waits on an mbarrier phase no one completes, the others at a
 * named barrier it never reaches: reported as soon as it is alone. */
__global__ void mbar_alone(int *) {
  HIP_DYNAMIC_SHARED(uint64_t, bar);
  const uint32_t at = kemu_smem_addr(bar);
  if (threadIdx.x == 0) kemu_mbar_init(at, 1);
  __syncthreads();
  if (threadIdx.x == 0)
    kemu_mbar_wait(at, 0);
  else
    kemu_bar_named(4, 64, true);
}

static void test_fatal() {
  int *out = dev_ints(256);
  expect_abort("missing arrive",
               [&] { hipLaunchKernelGGL(missing_arrive, 1, 256, 0, 0, out); },
               "deadlock in kernel missing_arrive block (0,0,0): 0 threads "
               "at __syncthreads, 0 at warp barrier, 256 at named barriers");
  expect_abort("count mismatch",
               [&] { hipLaunchKernelGGL(count_mismatch, 1, 256, 0, 0, out); },
               "bar.arrive 3, 128 in kernel count_mismatch thread 128: this "
               "phase opened with a count of 256");
  expect_abort("count not whole warps",
               [&] { hipLaunchKernelGGL(bad_count, 1, 64, 0, 0, out); },
               "multiple of the warp size (32)");
  expect_abort("barrier 0",
               [&] { hipLaunchKernelGGL(bad_id, 1, 64, 0, 0, out); },
               "barrier ids 1-15");
  expect_abort("too few arrivals",
               [&] { hipLaunchKernelGGL(too_few, 1, 128, 0, 0, out); },
               "64 returned (of 128); named barrier 5 has 64 of 128 arrivals");
  expect_abort("count over the block",
               [&] { hipLaunchKernelGGL(too_few, 1, 64, 0, 0, out); },
               "at most the block's 64 threads");
  expect_abort("mbarrier wait alone",
               [&] { hipLaunchKernelGGL(mbar_alone, 1, 64, 64, 0, out); },
               "63 at named barriers (bar.sync), 0 returned (of 64); named "
               "barrier 4 has 63 of 64 arrivals; thread 0, the only one able "
               "to run, waits on an mbarrier");
  hipFree(out);
}

int main() {
  CHECK(kemu_set_warp_size(32) == hipSuccess, "warp size 32");
  test_semantics();
  test_fatal();
  if (g_failures) {
    fprintf(stderr, "test-named-barriers: %d check(s) failed\n",
            g_failures.load());
    return 1;
  }
  printf("test-named-barriers: all checks passed\n");
  return 0;
}
