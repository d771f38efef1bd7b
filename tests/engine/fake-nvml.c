/* A stand-in for libnvidia-ml.so.1 with known answers, for the clock
 * readers' test (clocks-readers.c): one device at PCI 0000:1B:00.0 running
 * at 1410 of 1980 MHz (memory 2619 of 2619), 61 C, 312.5 W, held back by
 * its software power cap. Only the functions kiln's reader looks up. */
#include <string.h>
#include <strings.h>

typedef struct nvml_device_st *nvml_device;
static struct nvml_device_st { int unused; } the_device;

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }

const char *nvmlErrorString(int r) { return r == 6 ? "Not Found" : "Unknown Error"; }

int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvml_device *d) {
  if (strcasecmp(bus, "0000:1b:00.0") != 0 && strcasecmp(bus, "00000000:1b:00.0") != 0)
    return 6;
  *d = &the_device;
  return 0;
}

int nvmlDeviceGetClockInfo(nvml_device d, int type, unsigned *mhz) {
  (void)d;
  *mhz = type == 1 ? 1410 : type == 2 ? 2619 : 0;
  return type == 1 || type == 2 ? 0 : 2;
}

int nvmlDeviceGetMaxClockInfo(nvml_device d, int type, unsigned *mhz) {
  (void)d;
  *mhz = type == 1 ? 1980 : 2619;
  return 0;
}

int nvmlDeviceGetTemperature(nvml_device d, int sensor, unsigned *c) {
  (void)d, (void)sensor;
  *c = 61;
  return 0;
}

int nvmlDeviceGetPowerUsage(nvml_device d, unsigned *mw) {
  (void)d;
  *mw = 312500;
  return 0;
}

int nvmlDeviceGetCurrentClocksEventReasons(nvml_device d, unsigned long long *r) {
  (void)d;
  *r = 0x4;   /* sw_power_cap */
  return 0;
}
