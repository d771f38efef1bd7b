/* The engine's view of the GPU runtime: the HIP runtime API, whichever
 * backend implements it, plus the one check macro every runtime call goes
 * through. Internal to engine/src.
 */
#ifndef KILN_ENGINE_RUNTIME_H
#define KILN_ENGINE_RUNTIME_H

#if defined(KILN_BACKEND_HIP)
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>
#include "hiprand-c.h"
#define KE__BACKEND_NAME "hip"
#elif defined(KILN_BACKEND_CUDA)
#include "port/cuda/hip-on-cuda-api.h"
#define KE__BACKEND_NAME "cuda"
#elif defined(KILN_BACKEND_HOST)
#include "port/host/hip-on-host-api.h"
#define KE__BACKEND_NAME "host"
#else
#error "define KILN_BACKEND_HIP, KILN_BACKEND_CUDA or KILN_BACKEND_HOST"
#endif

#include "kiln/status.h"

/* Records "EXPR failed in FUNC (FILE:LINE): NAME: MESSAGE" as this thread's
 * last error and returns the matching kiln status. */
int ke__runtime_error(hipError_t err, const char *expr, const char *func,
                      const char *file, int line);
int ke__rand_error(int err, const char *expr, const char *func,
                   const char *file, int line);

/* Wraps every runtime call: on failure, record where and return. */
#define KE__CHECK(expr)                                                       \
  do {                                                                        \
    hipError_t ke__err = (expr);                                              \
    if (ke__err != hipSuccess)                                                \
      return ke__runtime_error(ke__err, #expr, __func__, __FILE__, __LINE__); \
  } while (0)

#define KE__CHECK_RAND(expr)                                                  \
  do {                                                                        \
    hiprandStatus_t ke__rerr = (expr);                                        \
    if (ke__rerr != HIPRAND_STATUS_SUCCESS)                                   \
      return ke__rand_error((int)ke__rerr, #expr, __func__, __FILE__,         \
                            __LINE__);                                        \
  } while (0)

/* Propagates a kiln status from an engine call. */
#define KE__TRY(expr)                                                         \
  do {                                                                        \
    int ke__st = (expr);                                                      \
    if (ke__st != KE_OK) return ke__st;                                       \
  } while (0)

#endif
