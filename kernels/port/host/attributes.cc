/* HIP-on-CPU kernel attributes: the dynamic shared memory a launch may
 * ask for, by default and as hipFuncSetAttribute raises it, for the
 * emulated GPU of the current warp size (launch.cc checks each launch
 * against it). Apart from runtime.cc because it shares none of the
 * runtime's state: only the warp size and this table.
 */
#include <stddef.h>

#include <mutex>

#include "hip-on-host-impl.h"

namespace {

/* Dynamic shared memory limits of the emulated GPU (hip-on-host-api.h):
 * NVIDIA at warp 32, AMD CDNA at warp 64. */
size_t dyn_shared_default() {
  return kemu__warp_size_value == 32 ? 48 << 10 : 64 << 10;
}
size_t dyn_shared_max() {
  return kemu__warp_size_value == 32 ? 227 << 10 : 64 << 10;
}

/* Kernels whose dynamic shared memory limit was raised; a handful at most. */
struct func_attr {
  const void *func;
  size_t max_dyn;
};
std::mutex attr_lock;
func_attr attrs[256];
unsigned int nattrs;

} // namespace

size_t kemu__dyn_shared_limit(const void *func) {
  std::lock_guard<std::mutex> hold(attr_lock);
  for (unsigned int i = 0; i < nattrs; i++)
    if (attrs[i].func == func)
      return attrs[i].max_dyn < dyn_shared_max() ? attrs[i].max_dyn
                                                 : dyn_shared_max();
  return dyn_shared_default();
}

hipError_t hipFuncSetAttribute(const void *func, hipFuncAttribute attr,
                               int value) {
  if (!func || attr != hipFuncAttributeMaxDynamicSharedMemorySize ||
      value < 0 || (size_t)value > dyn_shared_max()) {
    kemu__record_error(hipErrorInvalidValue);
    return hipErrorInvalidValue;
  }
  std::lock_guard<std::mutex> hold(attr_lock);
  for (unsigned int i = 0; i < nattrs; i++)
    if (attrs[i].func == func) {
      attrs[i].max_dyn = (size_t)value;
      return hipSuccess;
    }
  if (nattrs == sizeof attrs / sizeof attrs[0]) {
    kemu__record_error(hipErrorOutOfMemory);
    return hipErrorOutOfMemory;
  }
  attrs[nattrs++] = {func, (size_t)value};
  return hipSuccess;
}

