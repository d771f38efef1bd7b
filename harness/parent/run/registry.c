/* Runners and what they hold: finding a backend's runner, its registry
 * (`--list`) and its devices (`--devices`), each asked in a child process
 * and read with the protocol's decoders, so the parent plans without
 * linking a suite or a GPU runtime. See run.h.
 */
#include "run-impl.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln-config.h"
#include "records.h"

/* ---- Runners --------------------------------------------------------------- */

static char *exe_dir(void) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return NULL;
  buf[n] = '\0';
  char *slash = strrchr(buf, '/');
  if (!slash) return NULL;
  *slash = '\0';
  return kh_strdup(buf);
}

char *krun_runner_find(const char *backend, const char *dir, kh_err *err) {
  char *here = exe_dir();
  const char *dirs[] = {dir, getenv("KILN_RUNNER_DIR"), here,
                        KILN_BUILD_RUNNER_DIR, KILN_LIBEXECDIR};
  kh_buf tried = {0};
  char *found = NULL;
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0] && !found; i++) {
    if (!dirs[i] || !*dirs[i]) continue;
    char *p = kh_asprintf("%s/kiln-runner-%s", dirs[i], backend);
    /* Say why a runner that is there was passed over. */
    const char *why = access(p, F_OK) != 0 ? "" : " (not executable)";
    if (access(p, X_OK) == 0) found = p;
    else kh_buf_addf(&tried, "%s%s%s", tried.len ? ", " : "", p, why), free(p);
    /* An explicit directory is the only place to look. */
    if (i == 0 && dir) break;
  }
  if (!found)
    kh_errf(err, "no runner for backend '%s' (tried %s)", backend,
             tried.data ? tried.data : "nothing");
  kh_buf_free(&tried);
  free(here);
  return found;
}

/* Runs `runner flag` and calls fn for each record line of its stdout. */
static int runner_records(const char *runner, const char *flag,
                          void (*fn)(kp_record *, void *), void *arg, kh_err *err) {
  char *argv[] = {(char *)runner, (char *)flag, NULL};
  char *out = NULL;
  size_t len = 0;
  int st = krun_capture(argv, 16 << 20, 120, &out, &len);
  if (st != 0) {
    kh_errf(err, "%s %s %s", runner, flag,
             st < 0 ? (errno == ETIMEDOUT ? "timed out after 120 s"
                                          : "could not be started")
                    : "failed");
    if (st > 0)
      snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg),
               " (status %d)", st);
    free(out);
    return -1;
  }
  char *save = NULL;
  for (char *line = strtok_r(out, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    kp_record rec;
    if (kp_parse(line, &rec, NULL) == 0) fn(&rec, arg);
  }
  free(out);
  return 0;
}

/* ---- The registry ------------------------------------------------------------ */

static void add_test(kp_record *r, void *arg) {
  krun_registry *reg = arg;
  kp_listing l;
  if (strcmp(r->tag, "test") != 0 ||
      kp_decode(&kp_rec_listing, r->fields, r->nfields, &l, NULL, 0) != 0 || !l.id)
    return;
  reg->tests = kh_xrealloc(reg->tests, (size_t)(reg->n + 1) * sizeof *reg->tests);
  krun_test *t = &reg->tests[reg->n++];
  t->id = kh_strdup(l.id);
  t->suite = kh_strdup(l.suite ? l.suite : "");
  t->name = kh_strdup(l.name ? l.name : "");
  t->tags = kh_strdup(l.tags ? l.tags : "");
  t->file = kh_strdup(l.file ? l.file : "");
  t->slots = kp_get(r, "slots") ? (int)l.slots : 1;
  t->devices = l.devices > 1 && l.devices <= KRUN_MAX_DEVICES * 4 ? (int)l.devices : 1;
  t->timeout_s = (int)l.timeout_s;
  t->needs_gpu = kp_get(r, "needs_gpu") ? (int)l.needs_gpu : 1;
  t->line = (int)l.line;
}

int krun_registry_load(const char *runner, krun_registry *reg, kh_err *err) {
  memset(reg, 0, sizeof *reg);
  if (runner_records(runner, "--list", add_test, reg, err) != 0) return -1;
  reg->views = kh_xcalloc((size_t)reg->n + 1, sizeof *reg->views);
  for (int i = 0; i < reg->n; i++)
    reg->views[i] = (ksel_test){reg->tests[i].id, reg->tests[i].suite, reg->tests[i].tags};
  return 0;
}

void krun_registry_needs(krun_registry *reg, const krun_settings *s) {
  for (int i = 0; i < reg->n; i++) {
    krun_test *t = &reg->tests[i];
    for (int k = 0; k < s->nres; k++) {
      const krun_resource *r = &s->res[k];
      if (fnmatch(r->match, t->id, 0) != 0 && fnmatch(r->match, t->suite, 0) != 0) continue;
      t->devices = r->gpus;
      if (r->slots > 0) t->slots = r->slots;
    }
  }
}

void krun_registry_free(krun_registry *reg) {
  for (int i = 0; i < reg->n; i++) {
    krun_test *t = &reg->tests[i];
    free(t->id), free(t->suite), free(t->name), free(t->tags), free(t->file);
  }
  free(reg->tests), free(reg->views);
  memset(reg, 0, sizeof *reg);
}

/* ---- Devices --------------------------------------------------------------------- */

/* The visible-devices variables of each backend: a child sees exactly its
 * device, as index 0 (spawn.c), and an outer mask is respected. */
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

/* The outer mask as a list of physical entries: for ROCm, HIP's mask
 * indexes into ROCR's. Returns -1 when no mask is set. */
static int outer_mask(int backend, char out[][64]) {
  if (backend == KRUN_BACKEND_CUDA || backend == KRUN_BACKEND_HOST) {
    const char *m = getenv(krun__visible_var(backend, 0));
    return m ? split_mask(m, out, KRUN_MAX_DEVICES) : -1;
  }
  if (backend != KRUN_BACKEND_HIP) return -1;
  const char *rocr = getenv("ROCR_VISIBLE_DEVICES");
  const char *hip = getenv("HIP_VISIBLE_DEVICES");
  if (!rocr && !hip) return -1;
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
    if (kh_parse_ll(sel[i], 0, nbase - 1, &k) == 0)
      memcpy(out[n++], base[k], 64);
  }
  return n;
}

static void add_device(kp_record *r, void *arg) {
  krun_backend_info *bi = arg;
  if (strcmp(r->tag, "backend") == 0) {
    kp_backend b;
    if (kp_decode(&kp_rec_backend, r->fields, r->nfields, &b, NULL, 0) != 0) return;
    if (b.error) snprintf(bi->error, sizeof bi->error, "%s", b.error);
    snprintf(bi->sanitizers, sizeof bi->sanitizers, "%s", b.sanitizers ? b.sanitizers : "none");
    return;
  }
  kp_device d;
  if (strcmp(r->tag, "device") != 0 || bi->ndevices == KRUN_MAX_DEVICES ||
      kp_decode(&kp_rec_device, r->fields, r->nfields, &d, NULL, 0) != 0)
    return;
  if (d.error) {
    snprintf(bi->error, sizeof bi->error, "%s", d.error);
    return;
  }
  krun_device *x = &bi->dev[bi->ndevices++];
  memset(x, 0, sizeof *x);
  x->index = kp_get(r, "index") ? (int)d.index : bi->ndevices - 1;
  snprintf(x->name, sizeof x->name, "%s", d.name ? d.name : "");
  snprintf(x->arch, sizeof x->arch, "%s", d.arch ? d.arch : "");
  x->warp_size = (int)d.warp_size;
  x->total_bytes = (long long)d.total_bytes;
  x->free_bytes = (long long)d.free_bytes;
}

static int devices_probe(int backend, const char *runner, krun_backend_info *bi,
                     kh_err *err) {
  memset(bi, 0, sizeof *bi);
  bi->backend = backend;
  snprintf(bi->runner, sizeof bi->runner, "%s", runner);
  if (runner_records(runner, "--devices", add_device, bi, err) != 0)
    return -1;
  char mask[KRUN_MAX_DEVICES][64];
  int nmask = outer_mask(backend, mask);
  for (int i = 0; i < bi->ndevices; i++) {
    krun_device *d = &bi->dev[i];
    long long phys = d->index;
    if (nmask >= 0 && d->index < nmask) {
      snprintf(d->visible, sizeof d->visible, "%s", mask[d->index]);
      if (kh_parse_ll(d->visible, 0, KRUN_MAX_DEVICES - 1, &phys) != 0)
        phys = d->index;    /* a UUID: fall back to the position */
    } else {
      snprintf(d->visible, sizeof d->visible, "%d", d->index);
    }
    d->physical = (int)phys;
  }
  return 0;
}

int krun_backend_resolve(int wanted, const char *runner_dir, krun_backend_info *bi,
                       kh_err *err) {
  if (wanted != KRUN_BACKEND_AUTO) {
    char *runner = krun_runner_find(krun_backend_names[wanted], runner_dir, err);
    if (!runner) return -1;
    int rc = devices_probe(wanted, runner, bi, err);
    free(runner);
    return rc;
  }
  static const int order[] = {KRUN_BACKEND_CUDA, KRUN_BACKEND_HIP};
  for (size_t i = 0; i < 2; i++) {
    kh_err ignored;
    char *runner = krun_runner_find(krun_backend_names[order[i]], runner_dir,
                                  &ignored);
    if (!runner) continue;
    int rc = devices_probe(order[i], runner, bi, &ignored);
    free(runner);
    if (rc == 0 && bi->ndevices > 0) return 0;
  }
  return krun_backend_resolve(KRUN_BACKEND_HOST, runner_dir, bi, err);
}

/* ---- Slots ----------------------------------------------------------------------------- */

static int cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

int krun__jobs(const krun_settings *s) { return s->jobs > 0 ? s->jobs : cpus(); }

void krun_device_caps(const krun_settings *s, const krun_backend_info *bi,
                      int caps[KRUN_MAX_DEVICES]) {
  int dflt = s->slots > 0 ? s->slots : bi->backend == KRUN_BACKEND_HOST ? krun__jobs(s) : 2;
  int automatic = s->slots == KRUN_SLOTS_AUTO;
  if (automatic) dflt = KRUN_AUTO_UNITS;
  for (int d = 0; d < bi->ndevices; d++) {
    caps[d] = s->ndevices ? 0 : dflt;  /* a device list leaves others out */
    for (int i = 0; i < s->ndevices; i++)
      if (s->devices[i].id == bi->dev[d].physical)
        caps[d] = s->devices[i].slots > 0 && !automatic ? s->devices[i].slots : dflt;
  }
}
