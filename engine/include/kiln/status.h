/* kiln engine: status codes.
 *
 * Every engine function returns a status: KE_OK (0) or a negative code from
 * the table below. The same table generates the enum, the names and the
 * messages, so the three can never disagree. ke_last_error() adds the detail
 * of the most recent failure on this thread (expression, file, line, numbers).
 */
#ifndef KILN_STATUS_H
#define KILN_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, message) */
#define KE_STATUS_MAP(X)                                                      \
  X(OK, 0, "success")                                                         \
  X(EINVAL, -1, "invalid argument")                                           \
  X(ENODEV, -2, "no GPU device available")                                    \
  X(ENOMEM, -3, "out of device memory")                                       \
  X(ECAP, -4, "allocation refused: above the allocation cap")                 \
  X(ESHAPE, -5, "shape not supported by this kernel")                         \
  X(EDTYPE, -6, "dtype not supported by this kernel")                         \
  X(ERUNTIME, -7, "GPU runtime call failed")                                  \
  X(ELAUNCH, -8, "kernel launch failed")                                      \
  X(ESTATE, -9, "invalid state")                                              \
  X(EBUSY, -10, "a context is already open in this process")                  \
  X(ENOSYS, -11, "not supported by this backend")                             \
  X(ERAND, -12, "random number generator failed")                            \
  X(EDEVICE, -13, "the device faulted: its context cannot be trusted")

typedef enum {
#define KE__STATUS_ENUM(name, value, msg) KE_##name = value,
  KE_STATUS_MAP(KE__STATUS_ENUM)
#undef KE__STATUS_ENUM
} ke_status;

/* "KE_ECAP" for KE_ECAP; "KE_UNKNOWN" for a value outside the table. */
const char *ke_status_name(int status);
/* The table's message for a status. */
const char *ke_strerror(int status);
/* Detail of the last failure on this thread: what failed, where, and the
 * numbers involved. Empty string when nothing failed yet. */
const char *ke_last_error(void);
/* Clears ke_last_error() for this thread. */
void ke_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
