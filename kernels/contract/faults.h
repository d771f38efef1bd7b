/* Launchers of the fault kernels (kernels/faults.hip): test-only, for the
 * fault suite. Kept out of contract/launch.h so that no real entry point can
 * reach them by accident. Internal to the engine.
 */
#ifndef KILN_KERNELS_CONTRACT_FAULTS_H
#define KILN_KERNELS_CONTRACT_FAULTS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

int ke__fault_store_launch(void *stream, float *p, int64_t offset);
int ke__fault_copy_launch(void *stream, const float *x, float *y, int64_t n);
int ke__fault_spin_launch(void *stream, int *flag);
int ke__fault_race_launch(void *stream, float *out);
int ke__fault_divergent_barrier_launch(void *stream, float *out);

#ifdef __cplusplus
}
#endif
#endif
