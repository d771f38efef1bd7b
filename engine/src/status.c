/* Status names, messages and the per-thread last-error detail. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine-impl.h"

static _Thread_local char ke__last_error[1024];

const char *ke_status_name(int status) {
  switch (status) {
#define KE__STATUS_NAME(name, value, msg) \
  case value:                             \
    return "KE_" #name;
    KE_STATUS_MAP(KE__STATUS_NAME)
#undef KE__STATUS_NAME
  default:
    return "KE_UNKNOWN";
  }
}

const char *ke_strerror(int status) {
  switch (status) {
#define KE__STATUS_MSG(name, value, msg) \
  case value:                            \
    return msg;
    KE_STATUS_MAP(KE__STATUS_MSG)
#undef KE__STATUS_MSG
  default:
    return "unknown status";
  }
}

const char *ke_last_error(void) { return ke__last_error; }

void ke_clear_error(void) { ke__last_error[0] = '\0'; }

int ke__fail(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ke__last_error, sizeof ke__last_error, fmt, ap);
  va_end(ap);
  return status;
}

/* Errors after which a context on the device cannot be trusted: the
 * device faulted (an illegal address, a failed or timed-out launch, a
 * device-side assert, an uncorrectable ECC error) or is gone. kiln probes
 * such a device before it gives it another test, so a broad list costs a
 * probe at most. */
static int ke__is_device_fault(hipError_t err) {
  switch (err) {
  case hipErrorIllegalAddress:
  case hipErrorLaunchFailure:
  case hipErrorAssert:
  case hipErrorUnknown:
#if defined(KILN_BACKEND_CUDA)
  case cudaErrorMisalignedAddress:
  case cudaErrorIllegalInstruction:
  case cudaErrorHardwareStackError:
  case cudaErrorInvalidPc:
  case cudaErrorLaunchTimeout:
  case cudaErrorECCUncorrectable:
  case cudaErrorDevicesUnavailable:
#endif
    return 1;
  default:
    return 0;
  }
}

/* The first device fault this process saw (ke_device_fault). */
static int ke__fault_device = -1;
static char ke__fault_detail[1024];

int ke_device_fault(int *device, const char **detail) {
  if (ke__fault_device < 0) return 0;
  if (device) *device = ke__fault_device;
  if (detail) *detail = ke__fault_detail;
  return 1;
}

int ke__runtime_error(hipError_t err, const char *expr, const char *func,
                      const char *file, int line) {
  int status = KE_ERUNTIME;
  if (err == hipErrorOutOfMemory) status = KE_ENOMEM;
  else if (err == hipErrorNoDevice) status = KE_ENODEV;
  else if (err == hipErrorInvalidConfiguration) status = KE_ELAUNCH;
  else if (ke__is_device_fault(err)) status = KE_EDEVICE;
  ke__fail(status, "%s failed in %s (%s:%d): %s: %s", expr, func, file, line,
           hipGetErrorName(err), hipGetErrorString(err));
  if (status == KE_EDEVICE && ke__fault_device < 0) {
    int dev = 0;
    ke__fault_device = hipGetDevice(&dev) == hipSuccess ? dev : 0;
    snprintf(ke__fault_detail, sizeof ke__fault_detail, "%s", ke__last_error);
  }
  return status;
}

int ke__rand_error(int err, const char *expr, const char *func,
                   const char *file, int line) {
  return ke__fail(KE_ERAND, "%s failed in %s (%s:%d): random status %d",
                  expr, func, file, line, err);
}
