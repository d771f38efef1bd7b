/* HIP runtime API on CUDA: the subset the engine's C sources call.
 *
 * The engine is written against the HIP runtime API. Debian's HIP headers
 * (ROCm 5.2) do not compile against CUDA 13, so on the cuda backend this
 * header maps each HIP name kiln uses onto its CUDA twin. It is plain C and
 * includes only CUDA's C headers. A HIP call not listed here fails to
 * compile, which is the point: add it here, deliberately.
 */
#ifndef KILN_HIP_ON_CUDA_API_H
#define KILN_HIP_ON_CUDA_API_H

#include <cuda_runtime_api.h>
#include <curand.h>

typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef struct cudaDeviceProp hipDeviceProp_t;
typedef enum cudaMemcpyKind hipMemcpyKind;
typedef enum cudaDeviceAttr hipDeviceAttribute_t;

#define hipSuccess cudaSuccess
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipErrorInvalidConfiguration cudaErrorInvalidConfiguration
#define hipErrorIllegalAddress cudaErrorIllegalAddress
#define hipErrorLaunchFailure cudaErrorLaunchFailure
#define hipErrorAssert cudaErrorAssert
#define hipErrorUnknown cudaErrorUnknown

#define hipDeviceAttributeL2CacheSize cudaDevAttrL2CacheSize
#define hipDeviceAttributeComputeCapabilityMajor \
  cudaDevAttrComputeCapabilityMajor
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipFuncAttributeMaxDynamicSharedMemorySize \
  cudaFuncAttributeMaxDynamicSharedMemorySize

#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyHostToHost cudaMemcpyHostToHost
#define hipMemcpyDefault cudaMemcpyDefault

#define hipStreamDefault cudaStreamDefault
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipEventDefault cudaEventDefault

#define hipGetDeviceCount cudaGetDeviceCount
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipFuncSetAttribute cudaFuncSetAttribute
#define hipSetDevice cudaSetDevice
#define hipGetDevice cudaGetDevice
#define hipDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define hipMemGetInfo cudaMemGetInfo
#define hipDriverGetVersion cudaDriverGetVersion
#define hipRuntimeGetVersion cudaRuntimeGetVersion
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemsetAsync cudaMemsetAsync
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipEventCreate cudaEventCreate
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError
#define hipGetErrorName cudaGetErrorName
#define hipGetErrorString cudaGetErrorString

/* hiprand -> cuRAND: the same Philox4x32-10 generator, the same calls. */
typedef curandGenerator_t hiprandGenerator_t;
typedef curandStatus_t hiprandStatus_t;
#define HIPRAND_STATUS_SUCCESS CURAND_STATUS_SUCCESS
#define HIPRAND_RNG_PSEUDO_PHILOX4_32_10 CURAND_RNG_PSEUDO_PHILOX4_32_10
#define hiprandCreateGenerator curandCreateGenerator
#define hiprandDestroyGenerator curandDestroyGenerator
#define hiprandSetStream curandSetStream
#define hiprandSetPseudoRandomGeneratorSeed curandSetPseudoRandomGeneratorSeed
#define hiprandSetGeneratorOffset curandSetGeneratorOffset
#define hiprandGenerateUniform curandGenerateUniform
#define hiprandGenerateNormal curandGenerateNormal

#endif
