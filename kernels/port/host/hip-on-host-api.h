/* HIP-on-CPU: the runtime API subset kiln uses, implemented on the host.
 *
 * The engine's C sources are written against the HIP runtime API. On the
 * host backend this header stands in for <hip/hip_runtime_api.h>: "device"
 * memory is host memory, a stream runs its work at once and in order, and
 * events read a monotonic clock. A simulated device size makes memory info
 * and the allocation cap behave as on a GPU. Only what kiln calls is here;
 * anything else is deliberately missing so a new use fails to compile.
 *
 * Run-time settings (environment):
 *   KILN_WARP_SIZE      32 or 64 (default 32): warpSize seen by kernels
 *   KILN_EMU_MEMORY_MB  simulated device memory in MiB (default 8192)
 *   KILN_EMU_DEVICES    number of emulated devices (default 1; 0 = none)
 *   KILN_EMU_STACK_KB   stack per emulated GPU thread in KiB (default 256)
 *   KILN_EMU_VISIBLE_DEVICES  comma list narrowing the devices, as
 *                       CUDA_VISIBLE_DEVICES does (kiln sets it per child)
 *   KILN_EMU_BROKEN_DEVICES   comma list of physical devices that are listed
 *                       but fail every stream and memory call (tests)
 *   KILN_EMU_STATE_DIR  a folder where the processes of a host share their
 *                       devices' memory use and lost devices (devices.cc)
 * They are read once, at the first call. An invalid value is reported on
 * stderr and every call that needs a device then returns
 * hipErrorNotInitialized. Implementation: this folder, see README.md.
 */
#ifndef KILN_HIP_ON_HOST_API_H
#define KILN_HIP_ON_HOST_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hipError_t {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorNotInitialized = 3,
  hipErrorInvalidDevice = 101,
  hipErrorNoDevice = 100,
  hipErrorInvalidResourceHandle = 400,
  hipErrorNotReady = 600,
  hipErrorIllegalAddress = 700,
  hipErrorAssert = 710,
  hipErrorLaunchFailure = 719,
  hipErrorInvalidConfiguration = 9,
  hipErrorNotSupported = 801,
  hipErrorUnknown = 999
} hipError_t;

typedef enum hipMemcpyKind {
  hipMemcpyHostToHost = 0,
  hipMemcpyHostToDevice = 1,
  hipMemcpyDeviceToHost = 2,
  hipMemcpyDeviceToDevice = 3,
  hipMemcpyDefault = 4
} hipMemcpyKind;

typedef struct hipDeviceProp_t {
  char name[256];
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int multiProcessorCount;
  char gcnArchName[256];
} hipDeviceProp_t;

/* Device attributes kiln reads with hipDeviceGetAttribute. */
typedef enum hipDeviceAttribute_t {
  hipDeviceAttributeL2CacheSize = 1, /* bytes; the emulation says 4 MiB */
  /* 8 at warp 32 (the NVIDIA matrix instructions are emulated), 0 at 64 */
  hipDeviceAttributeComputeCapabilityMajor = 2
} hipDeviceAttribute_t;

/* Kernel attributes set with hipFuncSetAttribute. */
typedef enum hipFuncAttribute {
  /* Dynamic shared memory a kernel may launch with. The emulation models
   * the GPU it emulates: at warp 32 (NVIDIA) 48 KiB without the attribute
   * and at most 227 KiB with it; at warp 64 (AMD CDNA) 64 KiB either way. */
  hipFuncAttributeMaxDynamicSharedMemorySize = 8
} hipFuncAttribute;

typedef struct kemu_stream *hipStream_t;   /* NULL is the default stream */
typedef struct kemu_event *hipEvent_t;

#define hipStreamDefault 0x0
#define hipStreamNonBlocking 0x1
#define hipEventDefault 0x0

hipError_t hipGetDeviceCount(int *count);
hipError_t hipGetDeviceProperties(hipDeviceProp_t *prop, int device);
hipError_t hipDeviceGetAttribute(int *value, hipDeviceAttribute_t attr,
                                 int device);
hipError_t hipFuncSetAttribute(const void *func, hipFuncAttribute attr,
                               int value);
hipError_t hipSetDevice(int device);
hipError_t hipGetDevice(int *device);
hipError_t hipMemGetInfo(size_t *free_bytes, size_t *total_bytes);
hipError_t hipDriverGetVersion(int *version);
hipError_t hipRuntimeGetVersion(int *version);

hipError_t hipMalloc(void **ptr, size_t bytes);
hipError_t hipFree(void *ptr);
hipError_t hipMemcpyAsync(void *dst, const void *src, size_t bytes,
                          hipMemcpyKind kind, hipStream_t stream);
hipError_t hipMemsetAsync(void *dst, int value, size_t bytes,
                          hipStream_t stream);

hipError_t hipStreamCreateWithFlags(hipStream_t *stream, unsigned flags);
hipError_t hipStreamDestroy(hipStream_t stream);
hipError_t hipStreamSynchronize(hipStream_t stream);

hipError_t hipEventCreate(hipEvent_t *event);
hipError_t hipEventDestroy(hipEvent_t event);
hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream);
hipError_t hipEventSynchronize(hipEvent_t event);
hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop);

/* The last error of a launch or call on this thread; Get clears it. */
hipError_t hipGetLastError(void);
hipError_t hipPeekAtLastError(void);
const char *hipGetErrorName(hipError_t error);
const char *hipGetErrorString(hipError_t error);

/* ---- hiprand subset (Philox4x32-10, kiln's own implementation) ---------- */

typedef struct kemu_rand_generator *hiprandGenerator_t;
typedef enum hiprandStatus_t {
  HIPRAND_STATUS_SUCCESS = 0,
  HIPRAND_STATUS_NOT_INITIALIZED = 101,
  HIPRAND_STATUS_ALLOCATION_FAILED = 102,
  HIPRAND_STATUS_TYPE_ERROR = 103,
  HIPRAND_STATUS_LENGTH_NOT_MULTIPLE = 105,
  /* kiln: the output range is not inside one hipMalloc block (a GPU would
   * fault); hiprand's code for a failed kernel launch. */
  HIPRAND_STATUS_LAUNCH_FAILURE = 201,
  HIPRAND_STATUS_INTERNAL_ERROR = 999
} hiprandStatus_t;
typedef enum hiprandRngType_t {
  HIPRAND_RNG_PSEUDO_PHILOX4_32_10 = 405
} hiprandRngType_t;

hiprandStatus_t hiprandCreateGenerator(hiprandGenerator_t *gen,
                                       hiprandRngType_t type);
hiprandStatus_t hiprandDestroyGenerator(hiprandGenerator_t gen);
hiprandStatus_t hiprandSetStream(hiprandGenerator_t gen, hipStream_t stream);
hiprandStatus_t hiprandSetPseudoRandomGeneratorSeed(hiprandGenerator_t gen,
                                                    unsigned long long seed);
/* Restarts the sequence at the given offset (in draws). */
hiprandStatus_t hiprandSetGeneratorOffset(hiprandGenerator_t gen,
                                          unsigned long long offset);
/* Uniform in (0, 1]. */
hiprandStatus_t hiprandGenerateUniform(hiprandGenerator_t gen, float *out,
                                       size_t n);
/* Normal(mean, stddev); n must be even, as in hiprand and cuRAND. */
hiprandStatus_t hiprandGenerateNormal(hiprandGenerator_t gen, float *out,
                                      size_t n, float mean, float stddev);

/* ---- Emulation control (kiln-only) ------------------------------------- */

/* The warp size kernels see (32 or 64). Set from KILN_WARP_SIZE at start;
 * returns hipErrorInvalidValue for other values. */
hipError_t kemu_set_warp_size(int warp_size);
int kemu_warp_size(void);
/* Loses the current device, as a GPU that fell off the bus or took an
 * uncorrectable error: this process's later calls on it fail with
 * hipErrorLaunchFailure, and so do every process's once KILN_EMU_STATE_DIR
 * is set (the loss is kept there). For kiln's device-health tests. */
hipError_t kemu_lose_device(void);

#ifdef __cplusplus
}
#endif
#endif
