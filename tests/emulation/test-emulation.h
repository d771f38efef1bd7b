/* The parts of the emulation's own test program (test-emulation.cc runs
 * them), one file a concern:
 *   test-emulation-warps.cc    barriers, warp operations, matrix instructions
 *   test-emulation-runtime.cc  atomics, shared memory, thread geometry,
 *                              launch configuration, streams, events, memory,
 *                              random numbers, several OS threads
 *   test-emulation-fatal.cc    cases that kill the process, settings
 */
#ifndef KILN_TEST_EMULATION_H
#define KILN_TEST_EMULATION_H

#include "test-check.h"

/* argv[0], for the settings cases that run this program again. */
extern const char *g_argv0;

/* Every shuffle form, each lane's results at out + lane * SHFL_OPS (the
 * warp checks, and the fatal case of a width that is not a power of 2). */
enum { SHFL_OPS = 8 };

template <class T>
__global__ void shuffles(T *out, int width) {
  const unsigned t = threadIdx.x;
  const T v = (T)(t * 3 + 1);
  T *o = out + (size_t)t * SHFL_OPS;
  o[0] = __shfl(v, 5, width);
  o[1] = __shfl(v, 37, width);
  o[2] = __shfl_up(v, 1, width);
  o[3] = __shfl_up(v, 3, width);
  o[4] = __shfl_down(v, 1, width);
  o[5] = __shfl_down(v, 7, width);
  o[6] = __shfl_xor(v, 1, width);
  o[7] = __shfl_xor(v, 6, width);
}

/* test-emulation-warps.cc */
void run_block_sum(unsigned n, unsigned blocks, uint64_t seed, int *bad);
void test_barriers();
void test_early_exit();
void test_warps(unsigned ws);
void test_matrix();

/* test-emulation-runtime.cc */
__global__ void big_frame(int *out);
void test_atomics();
void test_dynamic_shared();
void test_geometry(dim3 grid, dim3 block);
void test_launch_config();
void test_memory();
void test_philox();
void test_threads();

/* test-emulation-fatal.cc */
void test_fatal();
void test_settings();
int probe();

#endif
