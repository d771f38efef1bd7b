/* Device discovery: how many devices the runtime sees and what each is.
 * A machine without a GPU is a status (KE_ENODEV), never a crash.
 */
#include <stdio.h>
#include <string.h>

#include "engine-impl.h"

const char *ke_backend_name(void) { return KE__BACKEND_NAME; }

int ke_device_count(int *count) {
  if (!count) return ke__fail(KE_EINVAL, "ke_device_count: count is NULL");
  *count = 0;
  int n = 0;
  hipError_t err = hipGetDeviceCount(&n);
  if (err != hipSuccess || n <= 0) {
    /* Drop the sticky error so that later calls start clean. */
    (void)hipGetLastError();
    return ke__fail(KE_ENODEV, "no %s device: hipGetDeviceCount: %s",
                    KE__BACKEND_NAME,
                    err != hipSuccess ? hipGetErrorString(err) : "0 devices");
  }
  *count = n;
  return KE_OK;
}

/* The architecture name as users know it on each vendor. */
static void ke__arch_name(const hipDeviceProp_t *prop, char *out, size_t n) {
#if defined(KILN_BACKEND_CUDA)
  snprintf(out, n, "sm_%d%d", prop->major, prop->minor);
#else
  /* gcnArchName may carry features ("gfx90a:sramecc+:xnack-"). */
  snprintf(out, n, "%.63s", prop->gcnArchName);
  char *colon = strchr(out, ':');
  if (colon) *colon = '\0';
#endif
}

int ke__device_info_fill(int device, ke_device_info *out) {
  hipDeviceProp_t prop;
  memset(out, 0, sizeof *out);
  KE__CHECK(hipGetDeviceProperties(&prop, device));
  ke__device_changed();
  KE__CHECK(hipSetDevice(device));
  size_t free_bytes = 0, total_bytes = 0;
  KE__CHECK(hipMemGetInfo(&free_bytes, &total_bytes));
  out->index = device;
  snprintf(out->name, sizeof out->name, "%s", prop.name);
  ke__arch_name(&prop, out->arch, sizeof out->arch);
  out->warp_size = prop.warpSize;
  out->multiprocessors = prop.multiProcessorCount;
  int l2 = 0;
  KE__CHECK(hipDeviceGetAttribute(&l2, hipDeviceAttributeL2CacheSize, device));
  out->l2_bytes = l2 > 0 ? (size_t)l2 : 0;
  out->total_bytes = total_bytes;
  out->free_bytes = free_bytes;
  return KE_OK;
}

int ke_device_query(int device, ke_device_info *out) {
  int n = 0;
  if (!out) return ke__fail(KE_EINVAL, "ke_device_query: out is NULL");
  KE__TRY(ke_device_count(&n));
  if (device < 0 || device >= n)
    return ke__fail(KE_EINVAL, "device %d out of range: %d device(s) visible",
                    device, n);
  return ke__device_info_fill(device, out);
}
