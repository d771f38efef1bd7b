/* Devices an outer scheduler gave this kiln. A scheduler that runs kiln as
 * one of its jobs decides which GPUs and how many slots the job may use,
 * and says so in the job's environment; kiln then uses exactly those, and
 * leaves the host-wide token set alone (the scheduler is the arbiter of
 * who holds what). One row per scheduler in `sources` below, each a
 * function that reads its variables: CTest's RESOURCE_GROUPS today; a
 * Slurm row (SLURM_JOB_GPUS, SLURM_STEP_GPUS) plugs in beside it.
 *
 * CTest (https://cmake.org/cmake/help/latest/manual/ctest.1.html, "Resource
 * Allocation"): CTEST_RESOURCE_GROUP_COUNT=N; CTEST_RESOURCE_GROUP_<i> =
 * the resource types group i holds ("gpus"); CTEST_RESOURCE_GROUP_<i>_GPUS
 * = "id:0,slots:1;id:1,slots:2". Slots of one id over several groups add
 * up. Every value is checked; an error names the variable.
 */
#include "run.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CTest makes a group per requirement of a test; more than this is no
 * allotment but a malformed environment. */
#define MAX_GROUPS 1024

/* Adds slots to device id (as a resource spec names it) in a. */
static int add(krun_allot *a, const char *id, long long slots) {
  for (int i = 0; i < a->ndevices; i++)
    if (strcmp(a->devices[i].name, id) == 0) {
      long long sum = a->devices[i].slots + slots;
      a->devices[i].slots = sum > KRUN_MAX_SLOTS ? KRUN_MAX_SLOTS : (int)sum;
      return 0;
    }
  if (a->ndevices == KRUN_MAX_DEVICES) return -1;
  krun_dev_slots *d = &a->devices[a->ndevices++];
  long long idx;
  d->id = (id[0] != '0' || !id[1]) && kh_parse_ll(id, 0, KRUN_MAX_DEVICES - 1, &idx) == 0
              ? (int)idx : -1;
  d->slots = slots > KRUN_MAX_SLOTS ? KRUN_MAX_SLOTS : (int)slots;
  snprintf(d->name, sizeof d->name, "%s", id);
  return 0;
}

/* "id:X,slots:N;id:Y,slots:M", read in one pass (sscanf would measure the
 * whole rest of the string at each entry). */
static int ctest_gpus(krun_allot *a, const char *var, const char *v, kh_err *err) {
  for (const char *p = v; *p;) {
    const char *entry = p;
    char id[64];
    size_t n = 0;
    unsigned long long slots = 0;
    int ok = strncmp(p, "id:", 3) == 0;
    for (p += ok ? 3 : 0; ok && ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'); p++)
      if (n < sizeof id - 1) id[n++] = *p;
    id[n] = '\0';
    ok = ok && n > 0 && strncmp(p, ",slots:", 7) == 0;
    if (ok) p += 7;
    ok = ok && *p >= '0' && *p <= '9';
    for (; ok && *p >= '0' && *p <= '9'; p++)
      if (slots < 1u << 30) slots = slots * 10 + (unsigned)(*p - '0');
    if (!ok || (*p && *p != ';'))
      return kh_errf(err, "%s: '%.60s' is not id:ID,slots:N", var, entry);
    if (add(a, id, (long long)slots) != 0)
      return kh_errf(err, "%s: more than %d gpus", var, KRUN_MAX_DEVICES);
    p += *p == ';';
  }
  return 0;
}

static int has_type(const char *list, const char *type) {
  size_t n = strlen(type);
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    if (len == n && strncmp(p, type, n) == 0) return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

static int ctest(krun_allot *a, kh_err *err) {
  const char *count = getenv("CTEST_RESOURCE_GROUP_COUNT");
  if (!count) return 0;
  long long n;
  if (kh_parse_ll(count, 0, MAX_GROUPS, &n) != 0)
    return kh_errf(err, "CTEST_RESOURCE_GROUP_COUNT='%.40s' is not a group count from 0 to %d",
                   count, MAX_GROUPS);
  a->source = "ctest";
  for (long long g = 0; g < n; g++) {
    char var[64], gpus[80];
    snprintf(var, sizeof var, "CTEST_RESOURCE_GROUP_%lld", g);
    const char *types = getenv(var);
    if (!types) return kh_errf(err, "%s is not set (CTEST_RESOURCE_GROUP_COUNT=%lld)", var, n);
    if (!has_type(types, "gpus")) continue;
    snprintf(gpus, sizeof gpus, "%s_GPUS", var);
    const char *v = getenv(gpus);
    if (!v) return kh_errf(err, "%s is not set (%s=%s)", gpus, var, types);
    if (ctest_gpus(a, gpus, v, err) != 0) return -1;
  }
  return 0;
}

static const struct {
  const char *name;
  int (*read)(krun_allot *a, kh_err *err);
} sources[] = {
    {"ctest", ctest},
};

int krun_allot_resolve(krun_allot *a, kh_err *err) {
  memset(a, 0, sizeof *a);
  for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
    if (sources[i].read(a, err) != 0) return -1;
    if (a->source) return 0;
  }
  return 0;
}

void krun_allot_apply(const krun_allot *a, krun_settings *s) {
  if (!a->source) return;
  krun_setting_clear_devices(s);
  for (int i = 0; i < a->ndevices; i++)
    krun_setting_add_device(s, a->devices[i].id, a->devices[i].slots, a->devices[i].name);
  s->allot_source = a->source;
}
