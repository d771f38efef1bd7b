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

int ke__runtime_error(hipError_t err, const char *expr, const char *func,
                      const char *file, int line) {
  int status = KE_ERUNTIME;
  if (err == hipErrorOutOfMemory) status = KE_ENOMEM;
  else if (err == hipErrorNoDevice) status = KE_ENODEV;
  else if (err == hipErrorInvalidConfiguration) status = KE_ELAUNCH;
  return ke__fail(status, "%s failed in %s (%s:%d): %s: %s", expr, func,
                  file, line, hipGetErrorName(err), hipGetErrorString(err));
}

int ke__rand_error(int err, const char *expr, const char *func,
                   const char *file, int line) {
  return ke__fail(KE_ERAND, "%s failed in %s (%s:%d): random status %d",
                  expr, func, file, line, err);
}
