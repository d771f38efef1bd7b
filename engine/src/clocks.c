/* ke_device_clocks: which reader a backend uses (NVML on cuda, sysfs on
 * hip, none in host emulation) and the device's PCI bus id, which only the
 * runtime knows. The readers are in clocks-nvml.c and clocks-sysfs.c.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine-impl.h"

void ke__clocks_unknown(ke_clocks *out, const char *source) {
  memset(out, 0, sizeof *out);
  out->source = source;
  out->sm_mhz = out->mem_mhz = out->sm_max_mhz = out->mem_max_mhz = -1;
  out->temp_c = out->power_w = NAN;
  out->reasons = -1;
}

static void ke__clocks_find(ke_context *ctx, ke__clock_source *src) {
  src->opened = 1;
#if defined(KILN_BACKEND_HOST)
  (void)ctx;
  snprintf(src->why, sizeof src->why, "the host emulation has no clocks");
#else
  char bus[64];
  if (ke__use(ctx) != KE_OK ||
      hipDeviceGetPCIBusId(bus, (int)sizeof bus, ctx->device.index) != hipSuccess) {
    (void)hipGetLastError();
    snprintf(src->why, sizeof src->why, "the runtime gives no PCI bus id for device %d",
             ctx->device.index);
    return;
  }
#if defined(KILN_BACKEND_CUDA)
  if (ke__nvml_open(bus, &src->nvml_device, src->why, sizeof src->why) == 0)
    src->kind = "nvml";
#else
  if (ke__sysfs_open(bus, src->dir, sizeof src->dir, src->why, sizeof src->why) == 0)
    src->kind = "sysfs";
#endif
#endif
}

int ke_clocks_open(ke_context *ctx, ke_clocks *out) {
  if (!ctx || !out) return ke__fail(KE_EINVAL, "ke_clocks_open: NULL argument");
  if (!ctx->clocks.opened) ke__clocks_find(ctx, &ctx->clocks);
  ke__clocks_unknown(out, ctx->clocks.kind);
  if (ctx->clocks.kind) return KE_OK;
  snprintf(out->error, sizeof out->error, "%s", ctx->clocks.why);
  return ke__fail(KE_ENOSYS, "no clocks for device %d: %s", ctx->device.index,
                  ctx->clocks.why);
}

int ke_device_clocks(ke_context *ctx, ke_clocks *out) {
  KE__TRY(ke_clocks_open(ctx, out));
  if (ctx->clocks.nvml_device) return ke__nvml_read(ctx->clocks.nvml_device, out);
  return ke__sysfs_read(ctx->clocks.dir, out);
}
