/* TEST ONLY: engine entry points that fault on purpose, for kiln's fault
 * suite (suites/harness/faults.c). Not part of the engine API (kiln/kernels.h does
 * not include this): they write out of bounds, read what nobody wrote and
 * never end, so that kiln's own tests can show how a harness run classifies
 * a real device fault. Each returns after synchronising the context stream,
 * with the runtime's error if the device reported one.
 */
#ifndef KILN_TEST_FAULTS_H
#define KILN_TEST_FAULTS_H

#include <stdint.h>

#include "kiln/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A kernel stores 1.0f at p[offset] (elements), whatever p's size. */
int ke__fault_store(ke_context *ctx, float *p, int64_t offset);
/* A kernel copies n floats from x to y. */
int ke__fault_copy(ke_context *ctx, const float *x, float *y, int64_t n);
/* A kernel spins until *flag (device memory) becomes non-zero. */
int ke__fault_spin(ke_context *ctx, int *flag);
/* One block of 256 threads reads shared memory another warp writes, with
 * no barrier between (a race for compute-sanitizer racecheck); out holds
 * 256 floats. */
int ke__fault_race(ke_context *ctx, float *out);
/* One block of 64 threads of which 16 reach a __syncthreads() (a divergent
 * barrier for compute-sanitizer synccheck); out holds 16 floats. */
int ke__fault_divergent_barrier(ke_context *ctx, float *out);
/* Loses the context's device: host emulation only (kemu_lose_device);
 * KE_ENOSYS on a GPU, where nothing may break a shared device on purpose.
 * Returns KE_EDEVICE when the device was lost. */
int ke__fault_lose_device(ke_context *ctx);

#ifdef __cplusplus
}
#endif
#endif
