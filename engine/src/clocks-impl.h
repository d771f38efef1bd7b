/* The readers behind ke_device_clocks (clocks.c): NVIDIA's NVML, loaded
 * at run time, and AMD's sysfs. Both take the device's PCI bus id
 * ("0000:1b:00.0"), which the runtime gives, and touch no GPU runtime
 * themselves, so they are compiled into every engine: the host build's
 * tests run them against a fake NVML library and a fake sysfs tree
 * (tests/clocks-readers.c). Internal to engine/src.
 */
#ifndef KILN_ENGINE_CLOCKS_IMPL_H
#define KILN_ENGINE_CLOCKS_IMPL_H

#include <stddef.h>

#include "kiln/engine.h"

/* Which source a context reads, and its handle there. */
typedef struct ke__clock_source {
  int opened;               /* ke__clocks_open ran (a source or a reason) */
  const char *kind;         /* "nvml", "sysfs", or NULL: none */
  void *nvml_device;        /* nvmlDevice_t */
  char dir[512];            /* sysfs: the device's folder */
  char why[256];            /* none: why */
} ke__clock_source;

/* Fills every field with "unknown" and the source's name. */
void ke__clocks_unknown(ke_clocks *out, const char *source);

/* NVML ($KILN_NVML_LIBRARY, else libnvidia-ml.so.1): 0 with the device's
 * handle, or -1 with why (no library, a symbol missing, no such device). */
int ke__nvml_open(const char *pci_bus_id, void **device, char *why, size_t n);
int ke__nvml_read(void *device, ke_clocks *out);

/* sysfs ($KILN_SYSFS_ROOT, else /sys): the device's folder under
 * bus/pci/devices, or -1 with why. */
int ke__sysfs_open(const char *pci_bus_id, char *dir, size_t ndir, char *why, size_t n);
int ke__sysfs_read(const char *dir, ke_clocks *out);

#endif
