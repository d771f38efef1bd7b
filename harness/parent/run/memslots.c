/* Memory-aware slots (`--slots auto`, config `slots: auto`): how many tests
 * share a device, sized from each test's peak device memory in an earlier
 * report (`memory.peak.bytes`, the engine ledger's peak) and the device's
 * free memory, so that tests that run side by side do not exhaust it
 * together. A device then has KRUN_AUTO_UNITS slots, each a hundredth of
 * its budget (KRUN_AUTO_BUDGET of its free memory when the run starts); a
 * test takes the slots its peak plus a context's own memory needs, and a
 * test with no history takes the device's default share (1 of its default
 * slots, devices.c: 1 of --jobs on the host backend). The device tokens work as
 * always: only the count per device changed.
 */
#include "run-impl.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *krun_peaks_latest(int backend, const char *exclude) {
  DIR *d = opendir("reports/runs");
  if (!d) return NULL;
  char suffix[32], *best = NULL;
  snprintf(suffix, sizeof suffix, "-%s", krun_backend_names[backend]);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name), sl = strlen(suffix);
    /* <UTC time>-<backend>[-N]: names sort by time. */
    if (e->d_name[0] == '.' || !strstr(e->d_name, suffix) || len < sl) continue;
    char *path = kh_asprintf("reports/runs/%s/report.yaml", e->d_name);
    struct stat st;
    char *dir = kh_asprintf("reports/runs/%s", e->d_name);
    int skip = exclude && strcmp(dir, exclude) == 0;
    free(dir);
    if (!skip && stat(path, &st) == 0 && (!best || strcmp(path, best) > 0)) {
      free(best);
      best = path;
    } else {
      free(path);
    }
  }
  closedir(d);
  return best;
}

long long *krun_peaks_load(const char *path, const krun_registry *reg, kh_err *err) {
  krep_report rep;
  if (krep_read(path, &rep, err) != 0) {
    krep_free(&rep);
    return NULL;
  }
  long long *peaks = kh_xcalloc((size_t)reg->n + 1, sizeof *peaks);
  for (int i = 0; i < reg->n; i++) peaks[i] = -1;
  for (int k = 0; k < rep.ntests; k++) {
    const krep_test *t = rep.tests[k];
    int i = 0;
    const krep_rec *r;
    long long most = -1;
    while ((r = krep_test_next(t, "memory", &i)) != NULL) {
      kp_memory m;
      if (krep_rec_decode(r, &kp_rec_memory, &m) == 0 && m.when &&
          strcmp(m.when, "peak") == 0 && m.bytes != KP_UNONE && (long long)m.bytes > most)
        most = (long long)m.bytes;
    }
    if (most < 0) continue;
    for (int x = 0; x < reg->n; x++)
      if (strcmp(reg->tests[x].id, t->id) == 0 && most > peaks[x]) peaks[x] = most;
  }
  krep_free(&rep);
  return peaks;
}

long long krun__budget(const krun__run *R, int d) {
  return (long long)(KRUN_AUTO_BUDGET * (double)R->o->bi->dev[d].free_bytes);
}

/* A test's slots on device d under --slots auto. */
static int auto_units(const krun__run *R, const krun_test *t, int d) {
  const krun_backend_info *bi = R->o->bi;
  int dflt = krun__default_slots(R->s, bi, d);
  int share = KRUN_AUTO_UNITS / dflt > 0 ? KRUN_AUTO_UNITS / dflt : 1;
  if (t->slots < 0) return KRUN_AUTO_UNITS;
  /* A test that declares k slots keeps at least k default shares. */
  int declared = t->slots > 1 ? t->slots * share : 0;
  long long peak = R->o->peaks ? R->o->peaks[t - R->o->reg->tests] : -1;
  long long budget = krun__budget(R, d);
  int units = share;
  if (peak >= 0 && budget > 0) {
    double need = (double)(peak + krun__context_bytes(bi->backend));
    units = (int)ceil(KRUN_AUTO_UNITS * need / (double)budget);
  }
  if (units < declared) units = declared;
  if (units < 1) units = 1;
  return units > KRUN_AUTO_UNITS ? KRUN_AUTO_UNITS : units;
}

int krun__want(const krun__run *R, const krun_test *t, int d) {
  if (R->s->slots == KRUN_SLOTS_AUTO) return auto_units(R, t, d);
  int cap = R->cap[d];
  return t->slots < 0 ? cap : (t->slots == 0 ? 1 : t->slots);
}

void krun__slots_note(krun__run *R) {
  if (R->s->slots != KRUN_SLOTS_AUTO) return;
  const krun_registry *reg = R->o->reg;
  int known = 0, total = 0;
  long long most = 0;
  for (int i = 0; i < reg->n; i++) {
    if (!R->o->chosen[i]) continue;
    total++;
    long long p = R->o->peaks ? R->o->peaks[i] : -1;
    if (p >= 0) known++, most = p > most ? p : most;
  }
  krun__console_note(&R->con, "kiln: --slots auto: %d of %d tests have a peak in %s (largest "
                     "%.1f MiB); the others take their slots in default shares of a device",
                     known, total, R->o->peaks_from ? R->o->peaks_from : "(no report)",
                     (double)most / (1 << 20));
  for (int d = 0; d < R->o->bi->ndevices; d++)
    krun__console_note(&R->con, "kiln: device %d: %d slots over %.1f MiB (%.0f%% of its "
                       "free memory)", R->o->bi->dev[d].physical, R->cap[d],
                       (double)krun__budget(R, d) / (1 << 20), KRUN_AUTO_BUDGET * 100);
}
