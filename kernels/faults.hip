/* Fault kernels: device code that goes wrong on purpose, for kiln's fault
 * suite (suites/harness/faults.c) only. No engine user calls these; they exist so
 * that kiln's own tests can show how a real device fault is classified.
 *
 *   ke_fault_store: one thread stores 1.0f at p[offset]. With an offset far
 *     past any allocation (the fault suite uses 2^45 floats, 128 TiB) it is
 *     an illegal address on a GPU (a sticky error at the next sync) and an
 *     address outside the canonical x86-64 range in host emulation, so
 *     SIGSEGV there, or AddressSanitizer's SEGV report: deterministic
 *     everywhere. With offset n it writes one past the end instead, which
 *     only guard bytes around the buffer can see.
 *   ke_fault_copy: y[i] = x[i]; the suite hands it an x nobody wrote, so
 *     under --poison the result is NaN.
 *   ke_fault_spin: spins until *flag becomes non-zero, which nobody does:
 *     a kernel that never ends. On a GPU the stream never completes; in host
 *     emulation the fiber never yields, so the thread spins. Only the
 *     parent's timeout (SIGTERM, then SIGKILL) ends it.
 *   ke_fault_race: each thread writes its slot of shared memory and reads
 *     the slot of a thread 32 further on with no barrier between: a
 *     read-after-write hazard across warps (compute-sanitizer racecheck).
 *     In host emulation threads run one after another until a barrier, so
 *     nothing catches it there.
 *   ke_fault_divergent_barrier: only the first 16 threads of the block reach
 *     a __syncthreads() (compute-sanitizer synccheck). In host emulation a
 *     thread that returned counts as arrived, so it passes there.
 */
#include "arch/kd.h"
#include "contract/faults.h"

__global__ void ke_fault_store(float *p, int64_t offset) {
  if (blockIdx.x == 0 && threadIdx.x == 0) p[offset] = 1.0f;
}

__global__ void ke_fault_copy(const float *x, float *y, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = x[i];
}

__global__ void ke_fault_spin(int *flag) {
  /* atomicAdd(flag, 0) is a real load each time: the loop cannot be
   * hoisted, and it spins on every backend. */
  while (atomicAdd(flag, 0) == 0) {
  }
}

__global__ void ke_fault_race(float *out) {
  __shared__ float slot[256];
  slot[threadIdx.x] = (float)threadIdx.x;
  out[threadIdx.x] = slot[(threadIdx.x + 32) % blockDim.x];
}

__global__ void ke_fault_divergent_barrier(float *out) {
  __shared__ float slot[64];
  if (threadIdx.x < 16) {
    slot[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = slot[(threadIdx.x + 1) % 16];
  }
}

extern "C" int ke__fault_store_launch(void *stream, float *p, int64_t offset) {
  hipLaunchKernelGGL(ke_fault_store, dim3(1), dim3(32), 0,
                     (hipStream_t)stream, p, offset);
  return (int)hipGetLastError();
}

extern "C" int ke__fault_copy_launch(void *stream, const float *x, float *y,
                                     int64_t n) {
  int64_t blocks = (n + 255) / 256;
  if (blocks > 1024) blocks = 1024;
  if (blocks < 1) blocks = 1;
  hipLaunchKernelGGL(ke_fault_copy, dim3((unsigned)blocks), dim3(256), 0,
                     (hipStream_t)stream, x, y, n);
  return (int)hipGetLastError();
}

extern "C" int ke__fault_spin_launch(void *stream, int *flag) {
  hipLaunchKernelGGL(ke_fault_spin, dim3(1), dim3(1), 0, (hipStream_t)stream,
                     flag);
  return (int)hipGetLastError();
}

extern "C" int ke__fault_race_launch(void *stream, float *out) {
  hipLaunchKernelGGL(ke_fault_race, dim3(1), dim3(256), 0, (hipStream_t)stream, out);
  return (int)hipGetLastError();
}

extern "C" int ke__fault_divergent_barrier_launch(void *stream, float *out) {
  hipLaunchKernelGGL(ke_fault_divergent_barrier, dim3(1), dim3(64), 0,
                     (hipStream_t)stream, out);
  return (int)hipGetLastError();
}

#if defined(KD_PLANTED_SWITCH) && defined(KILN_BACKEND_HOST)
/* The switch of the planted bugs (arch/kd.h): set only by the mutant runners
 * (suites/planted.c). C linkage from arch/kd.h's declaration. */
int kd_planted_bug = 0;
#endif
