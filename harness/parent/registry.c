/* Runners, their registries and devices, and test selection; see
 * registry.h. Every question to a runner is asked in a child process.
 */
#include "registry.h"

#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln-config.h"
#include "protocol.h"
#include "select.h"

/* ---- Runners --------------------------------------------------------------- */

static char *kh__exe_dir(void) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return NULL;
  buf[n] = '\0';
  char *slash = strrchr(buf, '/');
  if (!slash) return NULL;
  *slash = '\0';
  return kh_strdup(buf);
}

char *kh_runner_find(const char *backend, const char *dir, kh_err *err) {
  char *exe_dir = kh__exe_dir();
  const char *dirs[] = {dir, getenv("KILN_RUNNER_DIR"), exe_dir,
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
  free(exe_dir);
  return found;
}

/* Runs `runner flag` and calls fn for each record line of its stdout. */
static int kh__runner_records(const char *runner, const char *flag,
                              void (*fn)(kp_record *, void *), void *arg,
                              kh_err *err) {
  char *argv[] = {(char *)runner, (char *)flag, NULL};
  char *out = NULL;
  size_t len = 0;
  int st = kh_capture(argv, 16 << 20, 120, &out, &len);
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

static char *kh__field(const kp_record *r, const char *key) {
  const char *v = kp_get(r, key);
  return kh_strdup(v ? v : "");
}

static void kh__add_test(kp_record *r, void *arg) {
  kh_registry *reg = arg;
  if (strcmp(r->tag, "test") != 0 || !kp_get(r, "id")) return;
  reg->tests = kh_xrealloc(reg->tests, (size_t)(reg->n + 1) * sizeof *reg->tests);
  kh_test *t = &reg->tests[reg->n++];
  long long v;
  t->id = kh__field(r, "id");
  t->suite = kh__field(r, "suite");
  t->name = kh__field(r, "name");
  t->tags = kh__field(r, "tags");
  t->file = kh__field(r, "file");
  t->slots = kp_get_int(r, "slots", &v) == 0 ? (int)v : 1;
  t->timeout_s = kp_get_int(r, "timeout_s", &v) == 0 ? (int)v : 0;
  t->needs_gpu = kp_get_int(r, "needs_gpu", &v) == 0 ? (int)v : 1;
  t->line = kp_get_int(r, "line", &v) == 0 ? (int)v : 0;
}

int kh_registry_load(const char *runner, kh_registry *reg, kh_err *err) {
  memset(reg, 0, sizeof *reg);
  return kh__runner_records(runner, "--list", kh__add_test, reg, err);
}

void kh_registry_free(kh_registry *reg) {
  for (int i = 0; i < reg->n; i++) {
    kh_test *t = &reg->tests[i];
    free(t->id), free(t->suite), free(t->name), free(t->tags), free(t->file);
  }
  free(reg->tests);
  memset(reg, 0, sizeof *reg);
}

int kh_select(const kh_registry *reg, char *const *sel, int nsel,
              int hold_slow, unsigned char *chosen, int *held, kh_err *err) {
  ksel_test *views = kh_xcalloc((size_t)reg->n + 1, sizeof *views);
  for (int i = 0; i < reg->n; i++)
    views[i] = (ksel_test){reg->tests[i].id, reg->tests[i].suite, reg->tests[i].tags};
  int bad = ksel_select(views, (size_t)reg->n, sel, nsel, hold_slow, chosen, held);
  free(views);
  if (bad)
    return kh_errf(err, "selector '%s' matches no test (see `kiln list`)",
                    sel[bad - 1]);
  return 0;
}

/* ---- Devices --------------------------------------------------------------------- */

static const char *const kh__visible[][2] = {
    [KH_BACKEND_AUTO] = {NULL, NULL},
    [KH_BACKEND_HOST] = {"KILN_EMU_VISIBLE_DEVICES", NULL},
    [KH_BACKEND_HIP] = {"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"},
    [KH_BACKEND_CUDA] = {"CUDA_VISIBLE_DEVICES", NULL},
};

const char *kh_visible_var(int backend, int which) {
  return kh__visible[backend][which];
}

void kh_visible_narrow(const kh_backend_info *bi, int dev) {
  /* The child sees exactly its device, as index 0. ROCm: ROCR narrows to
   * the physical device and HIP then sees it as 0. */
  const char *v0 = kh_visible_var(bi->backend, 0);
  const char *v1 = kh_visible_var(bi->backend, 1);
  if (bi->backend == KH_BACKEND_HIP) {
    setenv(v1, bi->dev[dev].visible, 1);
    setenv(v0, "0", 1);
  } else if (v0) {
    setenv(v0, bi->dev[dev].visible, 1);
  }
}

/* Splits a comma-separated mask into at most max entries. */
static int kh__split_mask(const char *mask, char out[][64], int max) {
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
static int kh__outer_mask(int backend, char out[][64]) {
  if (backend == KH_BACKEND_CUDA || backend == KH_BACKEND_HOST) {
    const char *m = getenv(kh_visible_var(backend, 0));
    return m ? kh__split_mask(m, out, KH_MAX_DEVICES) : -1;
  }
  if (backend != KH_BACKEND_HIP) return -1;
  const char *rocr = getenv("ROCR_VISIBLE_DEVICES");
  const char *hip = getenv("HIP_VISIBLE_DEVICES");
  if (!rocr && !hip) return -1;
  char base[KH_MAX_DEVICES][64];
  int nbase = rocr ? kh__split_mask(rocr, base, KH_MAX_DEVICES) : 0;
  if (!rocr)
    for (nbase = 0; nbase < KH_MAX_DEVICES; nbase++)
      snprintf(base[nbase], 64, "%d", nbase);
  if (!hip) {
    memcpy(out, base, sizeof base);
    return nbase;
  }
  char sel[KH_MAX_DEVICES][64];
  int nsel = kh__split_mask(hip, sel, KH_MAX_DEVICES), n = 0;
  for (int i = 0; i < nsel; i++) {
    long long k;
    if (kh_parse_ll(sel[i], 0, nbase - 1, &k) == 0)
      memcpy(out[n++], base[k], 64);
  }
  return n;
}

static void kh__add_device(kp_record *r, void *arg) {
  kh_backend_info *bi = arg;
  long long v;
  if (strcmp(r->tag, "backend") == 0) {
    const char *e = kp_get(r, "error");
    if (e) snprintf(bi->error, sizeof bi->error, "%s", e);
    return;
  }
  if (strcmp(r->tag, "device") != 0 || bi->ndevices == KH_MAX_DEVICES) return;
  if (kp_get(r, "error")) {
    snprintf(bi->error, sizeof bi->error, "%s", kp_get(r, "error"));
    return;
  }
  kh_device *d = &bi->dev[bi->ndevices++];
  memset(d, 0, sizeof *d);
  d->index = kp_get_int(r, "index", &v) == 0 ? (int)v : bi->ndevices - 1;
  snprintf(d->name, sizeof d->name, "%s", kp_get(r, "name") ? kp_get(r, "name") : "");
  snprintf(d->arch, sizeof d->arch, "%s", kp_get(r, "arch") ? kp_get(r, "arch") : "");
  d->warp_size = kp_get_int(r, "warp_size", &v) == 0 ? (int)v : 0;
  d->total_bytes = kp_get_int(r, "total_bytes", &v) == 0 ? v : 0;
  d->free_bytes = kp_get_int(r, "free_bytes", &v) == 0 ? v : 0;
}

int kh_devices_probe(int backend, const char *runner, kh_backend_info *bi,
                     kh_err *err) {
  memset(bi, 0, sizeof *bi);
  bi->backend = backend;
  snprintf(bi->runner, sizeof bi->runner, "%s", runner);
  if (kh__runner_records(runner, "--devices", kh__add_device, bi, err) != 0)
    return -1;
  char mask[KH_MAX_DEVICES][64];
  int nmask = kh__outer_mask(backend, mask);
  for (int i = 0; i < bi->ndevices; i++) {
    kh_device *d = &bi->dev[i];
    long long phys = d->index;
    if (nmask >= 0 && d->index < nmask) {
      snprintf(d->visible, sizeof d->visible, "%s", mask[d->index]);
      if (kh_parse_ll(d->visible, 0, KH_MAX_DEVICES - 1, &phys) != 0)
        phys = d->index;    /* a UUID: fall back to the position */
    } else {
      snprintf(d->visible, sizeof d->visible, "%d", d->index);
    }
    d->physical = (int)phys;
  }
  return 0;
}

int kh_backend_resolve(int wanted, const char *runner_dir, kh_backend_info *bi,
                       kh_err *err) {
  if (wanted != KH_BACKEND_AUTO) {
    char *runner = kh_runner_find(kh_backend_names[wanted], runner_dir, err);
    if (!runner) return -1;
    int rc = kh_devices_probe(wanted, runner, bi, err);
    free(runner);
    return rc;
  }
  static const int order[] = {KH_BACKEND_CUDA, KH_BACKEND_HIP};
  for (size_t i = 0; i < 2; i++) {
    kh_err ignored;
    char *runner = kh_runner_find(kh_backend_names[order[i]], runner_dir,
                                  &ignored);
    if (!runner) continue;
    int rc = kh_devices_probe(order[i], runner, bi, &ignored);
    free(runner);
    if (rc == 0 && bi->ndevices > 0) return 0;
  }
  return kh_backend_resolve(KH_BACKEND_HOST, runner_dir, bi, err);
}
