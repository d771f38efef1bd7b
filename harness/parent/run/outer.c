/* Which devices the outside world gave this kiln: the one owner of that
 * question, so that every way in agrees. First found wins:
 *   1. the backend's own visible-devices variables (CUDA_VISIBLE_DEVICES;
 *      ROCR_VISIBLE_DEVICES with HIP_VISIBLE_DEVICES indexing into it;
 *      KILN_EMU_VISIBLE_DEVICES for the host emulation);
 *   2. a Slurm allocation: SLURM_STEP_GPUS inside a step, else
 *      SLURM_JOB_GPUS (the node's GPU numbers Slurm gave the job).
 * The node's number of each device keys its device tokens, which are per
 * host: where Slurm renumbers the visible devices from 0 (a cgroup that
 * confines the job to its GPUs), its own list still says which GPUs of the
 * node they are, so two jobs on one node never share a token.
 */
#include "run-impl.h"

#include <stdlib.h>
#include <string.h>

/* The visible-devices variables of each backend: a child sees exactly its
 * device, as index 0 (spawn.c); [1] is the one [0] indexes into. */
static const char *const visible_vars[][2] = {
    [KRUN_BACKEND_AUTO] = {NULL, NULL},
    [KRUN_BACKEND_HOST] = {"KILN_EMU_VISIBLE_DEVICES", NULL},
    [KRUN_BACKEND_HIP] = {"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"},
    [KRUN_BACKEND_CUDA] = {"CUDA_VISIBLE_DEVICES", NULL},
};

const char *krun__visible_var(int backend, int which) {
  return visible_vars[backend][which];
}

/* Splits a comma-separated mask into at most max entries. */
static int split_mask(const char *mask, char out[][64], int max) {
  int n = 0;
  for (const char *p = mask; p && *p && n < max;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    snprintf(out[n++], 64, "%.*s", (int)(len < 63 ? len : 63), p);
    p = comma ? comma + 1 : p + len;
  }
  return n;
}

/* The backend's own mask as entries naming physical devices: for ROCm,
 * HIP's mask indexes into ROCR's. -1 when no mask is set. */
static int own_mask(int backend, char out[][64], const char **source) {
  if (backend == KRUN_BACKEND_CUDA || backend == KRUN_BACKEND_HOST) {
    const char *m = getenv(visible_vars[backend][0]);
    *source = visible_vars[backend][0];
    return m ? split_mask(m, out, KRUN_MAX_DEVICES) : -1;
  }
  if (backend != KRUN_BACKEND_HIP) return -1;
  const char *rocr = getenv("ROCR_VISIBLE_DEVICES");
  const char *hip = getenv("HIP_VISIBLE_DEVICES");
  if (!rocr && !hip) return -1;
  *source = hip ? "HIP_VISIBLE_DEVICES" : "ROCR_VISIBLE_DEVICES";
  char base[KRUN_MAX_DEVICES][64];
  int nbase = rocr ? split_mask(rocr, base, KRUN_MAX_DEVICES) : 0;
  if (!rocr)
    for (nbase = 0; nbase < KRUN_MAX_DEVICES; nbase++)
      snprintf(base[nbase], 64, "%d", nbase);
  if (!hip) {
    memcpy(out, base, sizeof base);
    return nbase;
  }
  char sel[KRUN_MAX_DEVICES][64];
  int nsel = split_mask(hip, sel, KRUN_MAX_DEVICES), n = 0;
  for (int i = 0; i < nsel; i++) {
    long long k;
    if (kh_parse_ll(sel[i], 0, nbase - 1, &k) == 0) memcpy(out[n++], base[k], 64);
  }
  return n;
}

/* A Slurm GPU list: node device numbers, commas and ranges ("0,2-3").
 * -1 when unset; -2 when it does not parse. */
static int slurm_gpus(const char **name, int out[KRUN_MAX_DEVICES], const char **text) {
  static const char *const vars[] = {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"};
  for (size_t v = 0; v < 2; v++) {
    const char *s = getenv(vars[v]);
    if (!s || !*s) continue;
    *name = vars[v], *text = s;
    int n = 0;
    char entries[KRUN_MAX_DEVICES][64];
    int nent = split_mask(s, entries, KRUN_MAX_DEVICES);
    for (int i = 0; i < nent; i++) {
      char *dash = strchr(entries[i], '-');
      long long lo, hi;
      if (dash) *dash = '\0';
      if (kh_parse_ll(entries[i], 0, KRUN_MAX_DEVICES - 1, &lo) != 0) return -2;
      hi = lo;
      if (dash && kh_parse_ll(dash + 1, lo, KRUN_MAX_DEVICES - 1, &hi) != 0) return -2;
      for (long long d = lo; d <= hi && n < KRUN_MAX_DEVICES; d++) out[n++] = (int)d;
    }
    return n;
  }
  return -1;
}

int krun_outer_read(int backend, krun_outer *o, kh_err *err) {
  memset(o, 0, sizeof *o);
  o->n = -1;
  for (int i = 0; i < KRUN_MAX_DEVICES; i++) o->node_dev[i] = -1;
  int gpus[KRUN_MAX_DEVICES];
  const char *gname = NULL, *gtext = NULL;
  int ngpus = slurm_gpus(&gname, gpus, &gtext);
  if (ngpus == -2)
    return kh_errf(err, "environment %s=%s: expected GPU numbers below %d (e.g. 0,2-3)",
                   gname, gtext, KRUN_MAX_DEVICES);
  const char *own = NULL;
  int n = own_mask(backend, o->entry, &own);
  if (n >= 0) {
    o->n = n;
    snprintf(o->source, sizeof o->source, "%s", own);
    for (int i = 0; i < n; i++) {
      long long v;
      /* Slurm's list names the node's GPUs behind a mask it set itself
       * (same length); otherwise a numeric entry is the node's number. */
      if (ngpus == n) o->node_dev[i] = gpus[i];
      else if (kh_parse_ll(o->entry[i], 0, KRUN_MAX_DEVICES - 1, &v) == 0) o->node_dev[i] = (int)v;
    }
    return 0;
  }
  if (ngpus >= 0 && backend != KRUN_BACKEND_AUTO) {
    o->n = ngpus;
    o->exported = 1;
    snprintf(o->source, sizeof o->source, "%s", gname);
    for (int i = 0; i < ngpus; i++) {
      snprintf(o->entry[i], sizeof o->entry[i], "%d", gpus[i]);
      o->node_dev[i] = gpus[i];
    }
  }
  return 0;
}

void krun_outer_export(int backend, const krun_outer *o) {
  if (!o->exported || backend == KRUN_BACKEND_AUTO) return;
  kh_buf b = {0};
  for (int i = 0; i < o->n; i++) kh_buf_addf(&b, "%s%s", i ? "," : "", o->entry[i]);
  /* ROCm: ROCR's mask names physical devices, HIP's would index into it. */
  const char *var = visible_vars[backend][backend == KRUN_BACKEND_HIP ? 1 : 0];
  setenv(var, b.data ? b.data : "", 1);
  kh_buf_free(&b);
}

void krun_outer_describe(const krun_outer *o, char *out, size_t n) {
  if (o->n < 0) {
    snprintf(out, n, "every device the runner sees");
    return;
  }
  int len = snprintf(out, n, "%s=", o->source);
  for (int i = 0; i < o->n && len > 0 && (size_t)len < n; i++)
    len += snprintf(out + len, n - (size_t)len, "%s%s", i ? "," : "", o->entry[i]);
}
