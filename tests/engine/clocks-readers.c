/* The engine's clock readers (engine/src/clocks-nvml.c, clocks-sysfs.c)
 * against known answers, on any machine: NVML through a stand-in library
 * (fake-nvml.c, loaded with dlopen as the real one is) and through a path
 * with no library at all (no clocks, with the reason, not a failure), and
 * AMD's sysfs through a tree made here.
 *   clocks-readers nvml FAKE_LIB | no-nvml | sysfs
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clocks-impl.h"

static int fails;
#define CHECK(cond, ...)                                                      \
  do {                                                                        \
    if (cond) printf("ok: " __VA_ARGS__), printf("\n");                       \
    else printf("FAIL: " __VA_ARGS__), printf("  (%s)\n", #cond), fails++;    \
  } while (0)

static int nvml(const char *lib) {
  setenv("KILN_NVML_LIBRARY", lib, 1);
  char why[256] = "";
  void *dev = NULL;
  CHECK(ke__nvml_open("0000:2A:00.0", &dev, why, sizeof why) != 0 &&
            strstr(why, "no device at PCI 0000:2A:00.0: Not Found"),
        "an unknown device is refused with NVML's reason: %s", why);
  CHECK(ke__nvml_open("0000:1B:00.0", &dev, why, sizeof why) == 0 && dev,
        "the device found by its PCI bus id");
  ke_clocks c;
  CHECK(ke__nvml_read(dev, &c) == 0 && !strcmp(c.source, "nvml"), "read");
  CHECK(c.sm_mhz == 1410 && c.sm_max_mhz == 1980, "SM clock %d of %d MHz", c.sm_mhz, c.sm_max_mhz);
  CHECK(c.mem_mhz == 2619 && c.mem_max_mhz == 2619, "memory clock %d of %d MHz", c.mem_mhz,
        c.mem_max_mhz);
  CHECK(c.temp_c == 61 && fabs(c.power_w - 312.5) < 1e-9, "%g C, %g W", c.temp_c, c.power_w);
  CHECK(c.reasons == 0x4, "reasons 0x%llx (sw_power_cap)", (unsigned long long)c.reasons);
  return 0;
}

static int no_nvml(void) {
  setenv("KILN_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  char why[256] = "";
  void *dev = NULL;
  CHECK(ke__nvml_open("0000:1B:00.0", &dev, why, sizeof why) != 0 &&
            strstr(why, "NVML not loaded") && strstr(why, "/nonexistent/libnvidia-ml.so.1"),
        "no library: no clocks, and why: %s", why);
  return 0;
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) perror(path), exit(2);
  fputs(text, f);
  fclose(f);
}

static int sysfs(void) {
  char root[] = "/tmp/kiln-sysfs.XXXXXX";
  if (!mkdtemp(root)) return perror("mkdtemp"), 2;
  char dir[512], path[640];
  setenv("KILN_SYSFS_ROOT", root, 1);
  char why[256] = "", found[512];
  CHECK(ke__sysfs_open("0000:03:00.0", found, sizeof found, why, sizeof why) != 0 &&
            strstr(why, "no amdgpu clocks"), "no device folder: why: %s", why);
  snprintf(dir, sizeof dir, "%s/bus", root), mkdir(dir, 0755);
  snprintf(dir, sizeof dir, "%s/bus/pci", root), mkdir(dir, 0755);
  snprintf(dir, sizeof dir, "%s/bus/pci/devices", root), mkdir(dir, 0755);
  snprintf(dir, sizeof dir, "%s/bus/pci/devices/0000:03:00.0", root), mkdir(dir, 0755);
  snprintf(path, sizeof path, "%s/pp_dpm_sclk", dir);
  put(path, "0: 500Mhz\n1: 1000Mhz *\n2: 1700Mhz\n");
  snprintf(path, sizeof path, "%s/pp_dpm_mclk", dir);
  put(path, "0: 96Mhz\n1: 1600Mhz *\n");
  snprintf(path, sizeof path, "%s/hwmon", dir), mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/hwmon/hwmon3", dir), mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/hwmon/hwmon3/temp1_input", dir);
  put(path, "54000\n");
  snprintf(path, sizeof path, "%s/hwmon/hwmon3/power1_average", dir);
  put(path, "123000000\n");
  CHECK(ke__sysfs_open("0000:03:00.0", found, sizeof found, why, sizeof why) == 0 &&
            !strcmp(found, dir), "the device's folder by its PCI bus id");
  ke_clocks c;
  CHECK(ke__sysfs_read(found, &c) == 0 && !strcmp(c.source, "sysfs"), "read");
  CHECK(c.sm_mhz == 1000 && c.sm_max_mhz == 1700, "SM clock %d of %d MHz", c.sm_mhz, c.sm_max_mhz);
  CHECK(c.mem_mhz == 1600 && c.mem_max_mhz == 1600, "memory clock %d of %d MHz", c.mem_mhz,
        c.mem_max_mhz);
  CHECK(c.temp_c == 54 && c.power_w == 123, "%g C, %g W", c.temp_c, c.power_w);
  CHECK(c.reasons == -1, "reasons unknown on AMD (%lld)", (long long)c.reasons);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd) != 0) return 2;
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "nvml")) nvml(argv[2]);
  else if (argc == 2 && !strcmp(argv[1], "no-nvml")) no_nvml();
  else if (argc == 2 && !strcmp(argv[1], "sysfs")) sysfs();
  else return fprintf(stderr, "usage: %s nvml LIB | no-nvml | sysfs\n", argv[0]), 2;
  printf("%d check(s) failed\n", fails);
  return fails ? 1 : 0;
}
