/* The hiprand entry points the engine calls, declared for C.
 *
 * ROCm 5.2's <hiprand/hiprand.h> does not compile as C (it names the C++-only
 * __half type and an untagged struct), so on the hip backend the engine
 * declares the few calls it makes itself. Values and signatures are those of
 * hiprand's ABI (libhiprand.so.1); the generator is an opaque pointer.
 */
#ifndef KILN_HIPRAND_C_H
#define KILN_HIPRAND_C_H

#include <stddef.h>

#include <hip/hip_runtime_api.h>

typedef struct hiprandGenerator_st *hiprandGenerator_t;
typedef enum hiprandStatus {
  HIPRAND_STATUS_SUCCESS = 0
} hiprandStatus_t;
typedef enum hiprandRngType {
  HIPRAND_RNG_PSEUDO_PHILOX4_32_10 = 405
} hiprandRngType_t;

hiprandStatus_t hiprandCreateGenerator(hiprandGenerator_t *generator,
                                       hiprandRngType_t rng_type);
hiprandStatus_t hiprandDestroyGenerator(hiprandGenerator_t generator);
hiprandStatus_t hiprandSetStream(hiprandGenerator_t generator,
                                 hipStream_t stream);
hiprandStatus_t hiprandSetPseudoRandomGeneratorSeed(
    hiprandGenerator_t generator, unsigned long long seed);
hiprandStatus_t hiprandSetGeneratorOffset(hiprandGenerator_t generator,
                                          unsigned long long offset);
hiprandStatus_t hiprandGenerateUniform(hiprandGenerator_t generator,
                                       float *output_data, size_t n);
hiprandStatus_t hiprandGenerateNormal(hiprandGenerator_t generator,
                                      float *output_data, size_t n,
                                      float mean, float stddev);

#endif
