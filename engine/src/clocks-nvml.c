/* Clocks from NVIDIA's NVML, loaded with dlopen at the first use so that
 * neither the runner nor any machine needs it: no library means no clocks,
 * with the reason, never a failure. The prototypes are NVML's, declared
 * here (no nvml.h needed at build time). NVML sees every GPU whatever
 * CUDA_VISIBLE_DEVICES says, so the device is found by its PCI bus id,
 * which the CUDA runtime gives for the visible one.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clocks-impl.h"

typedef int nvml_ret;                          /* nvmlReturn_t; 0 success */
typedef struct nvml_device_st *nvml_device;    /* nvmlDevice_t */
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };

static struct {
  int tried, ok;
  char why[256];
  nvml_ret (*init)(void);
  nvml_ret (*by_bus)(const char *, nvml_device *);
  nvml_ret (*clock)(nvml_device, int, unsigned *);
  nvml_ret (*max_clock)(nvml_device, int, unsigned *);
  nvml_ret (*temperature)(nvml_device, int, unsigned *);
  nvml_ret (*power)(nvml_device, unsigned *);          /* milliwatts */
  nvml_ret (*reasons)(nvml_device, unsigned long long *);
  const char *(*error)(nvml_ret);
} nvml;

static void *sym(void *lib, const char *name, const char *fallback) {
  void *p = dlsym(lib, name);
  return p || !fallback ? p : dlsym(lib, fallback);
}

/* Loads the library and starts NVML, once per process. */
static int load(void) {
  if (nvml.tried) return nvml.ok ? 0 : -1;
  nvml.tried = 1;
  const char *path = getenv("KILN_NVML_LIBRARY");
  if (!path || !*path) path = "libnvidia-ml.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(nvml.why, sizeof nvml.why, "NVML not loaded: %s", dlerror());
    return -1;
  }
  *(void **)&nvml.init = sym(lib, "nvmlInit_v2", "nvmlInit");
  *(void **)&nvml.by_bus = sym(lib, "nvmlDeviceGetHandleByPciBusId_v2",
                               "nvmlDeviceGetHandleByPciBusId");
  *(void **)&nvml.clock = sym(lib, "nvmlDeviceGetClockInfo", NULL);
  *(void **)&nvml.max_clock = sym(lib, "nvmlDeviceGetMaxClockInfo", NULL);
  *(void **)&nvml.temperature = sym(lib, "nvmlDeviceGetTemperature", NULL);
  *(void **)&nvml.power = sym(lib, "nvmlDeviceGetPowerUsage", NULL);
  /* Renamed in CUDA 12's NVML; the old name stays for older drivers. */
  *(void **)&nvml.reasons = sym(lib, "nvmlDeviceGetCurrentClocksEventReasons",
                                "nvmlDeviceGetCurrentClocksThrottleReasons");
  *(void **)&nvml.error = sym(lib, "nvmlErrorString", NULL);
  if (!nvml.init || !nvml.by_bus || !nvml.clock) {
    snprintf(nvml.why, sizeof nvml.why, "NVML at %s lacks nvmlInit_v2, "
             "nvmlDeviceGetHandleByPciBusId_v2 or nvmlDeviceGetClockInfo", path);
    return -1;
  }
  nvml_ret r = nvml.init();
  if (r != 0) {
    snprintf(nvml.why, sizeof nvml.why, "nvmlInit_v2: %s",
             nvml.error ? nvml.error(r) : "failed");
    return -1;
  }
  nvml.ok = 1;
  return 0;
}

int ke__nvml_open(const char *pci_bus_id, void **device, char *why, size_t n) {
  if (load() != 0) {
    snprintf(why, n, "%s", nvml.why);
    return -1;
  }
  nvml_device d = NULL;
  nvml_ret r = nvml.by_bus(pci_bus_id, &d);
  if (r != 0) {
    snprintf(why, n, "NVML has no device at PCI %s: %s", pci_bus_id,
             nvml.error ? nvml.error(r) : "not found");
    return -1;
  }
  *device = d;
  return 0;
}

static int clock_of(nvml_ret (*fn)(nvml_device, int, unsigned *), nvml_device d, int type) {
  unsigned v = 0;
  return fn && fn(d, type, &v) == 0 ? (int)v : -1;
}

int ke__nvml_read(void *device, ke_clocks *out) {
  nvml_device d = device;
  ke__clocks_unknown(out, "nvml");
  out->sm_mhz = clock_of(nvml.clock, d, NVML_CLOCK_SM);
  out->mem_mhz = clock_of(nvml.clock, d, NVML_CLOCK_MEM);
  out->sm_max_mhz = clock_of(nvml.max_clock, d, NVML_CLOCK_SM);
  out->mem_max_mhz = clock_of(nvml.max_clock, d, NVML_CLOCK_MEM);
  unsigned v = 0;
  if (nvml.temperature && nvml.temperature(d, NVML_TEMPERATURE_GPU, &v) == 0)
    out->temp_c = v;
  if (nvml.power && nvml.power(d, &v) == 0) out->power_w = v / 1000.0;
  unsigned long long reasons = 0;
  if (nvml.reasons && nvml.reasons(d, &reasons) == 0) out->reasons = (int64_t)reasons;
  return 0;
}
