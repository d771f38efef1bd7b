/* Clocks from AMD's sysfs (the amdgpu driver), read as text: the current
 * level of pp_dpm_sclk and pp_dpm_mclk (the line marked '*') and their top
 * level as the maximum, temp1_input (millidegrees) and power1_average or
 * power1_input (microwatts) of the device's hwmon folder. The device is
 * bus/pci/devices/<PCI bus id> under $KILN_SYSFS_ROOT (else /sys). The
 * driver's throttle status lives in gpu_metrics, a binary table whose
 * layout changes with its version: not read, so reasons stay unknown on
 * AMD rather than guessed.
 */
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clocks-impl.h"

int ke__sysfs_open(const char *pci_bus_id, char *dir, size_t ndir, char *why, size_t n) {
  const char *root = getenv("KILN_SYSFS_ROOT");
  if (!root || !*root) root = "/sys";
  char bus[64];
  snprintf(bus, sizeof bus, "%s", pci_bus_id);
  for (char *p = bus; *p; p++) *p = (char)tolower((unsigned char)*p);
  snprintf(dir, ndir, "%s/bus/pci/devices/%s", root, bus);
  char probe[600];
  snprintf(probe, sizeof probe, "%s/pp_dpm_sclk", dir);
  struct stat st;
  if (stat(probe, &st) != 0) {
    snprintf(why, n, "no amdgpu clocks at %s", probe);
    return -1;
  }
  return 0;
}

static int read_text(const char *path, char *out, size_t n) {
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  size_t len = fread(out, 1, n - 1, f);
  fclose(f);
  out[len] = '\0';
  return 0;
}

/* pp_dpm_*: lines "N: 1700Mhz" with a '*' on the current one; *max gets
 * the highest level. */
static int dpm(const char *dir, const char *file, int *max) {
  char path[600], text[4096];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  *max = -1;
  if (read_text(path, text, sizeof text) != 0) return -1;
  int cur = -1;
  char *save = NULL;
  for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char *colon = strchr(line, ':');
    if (!colon) continue;
    int mhz = atoi(colon + 1);
    if (mhz > *max) *max = mhz;
    if (strchr(line, '*')) cur = mhz;
  }
  return cur;
}

/* The first hwmon folder of the device, or "" when it has none. */
static void hwmon(const char *dir, char *out, size_t n) {
  char path[600];
  snprintf(path, sizeof path, "%s/hwmon", dir);
  out[0] = '\0';
  DIR *d = opendir(path);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    if (strncmp(e->d_name, "hwmon", 5) == 0 && strlen(path) + strlen(e->d_name) + 2 <= n) {
      snprintf(out, n, "%s/%.*s", path, (int)(n - strlen(path) - 2), e->d_name);
      break;
    }
  if (d) closedir(d);
}

static double number(const char *dir, const char *file) {
  char path[900], text[64];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  if (!*dir || read_text(path, text, sizeof text) != 0) return NAN;
  char *end;
  double v = strtod(text, &end);
  return end == text ? NAN : v;
}

int ke__sysfs_read(const char *dir, ke_clocks *out) {
  ke__clocks_unknown(out, "sysfs");
  out->sm_mhz = dpm(dir, "pp_dpm_sclk", &out->sm_max_mhz);
  out->mem_mhz = dpm(dir, "pp_dpm_mclk", &out->mem_max_mhz);
  char mon[700];
  hwmon(dir, mon, sizeof mon);
  out->temp_c = number(mon, "temp1_input") / 1000.0;
  double uw = number(mon, "power1_average");
  if (isnan(uw)) uw = number(mon, "power1_input");
  out->power_w = uw / 1e6;
  return 0;
}
