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

/* ---- Runners --------------------------------------------------------------- */

static char *kh__exe_dir(void) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return NULL;
  buf[n] = '\0';
  char *slash = strrchr(buf, '/');
  if (!slash) return NULL;
  *slash = '\0';
  return kh__strdup(buf);
}

char *kh_runner_find(const char *backend, const char *dir, kh_err *err) {
  char *exe_dir = kh__exe_dir();
  const char *dirs[] = {dir, getenv("KILN_RUNNER_DIR"), exe_dir,
                        KILN_BUILD_RUNNER_DIR, KILN_LIBEXECDIR};
  kh_buf tried = {0};
  char *found = NULL;
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0] && !found; i++) {
    if (!dirs[i] || !*dirs[i]) continue;
    char *p = kh__asprintf("%s/kiln-runner-%s", dirs[i], backend);
    /* Say why a runner that is there was passed over. */
    const char *why = access(p, F_OK) != 0 ? "" : " (not executable)";
    if (access(p, X_OK) == 0) found = p;
    else kh__buf_addf(&tried, "%s%s%s", tried.len ? ", " : "", p, why), free(p);
    /* An explicit directory is the only place to look. */
    if (i == 0 && dir) break;
  }
  if (!found)
    kh__errf(err, "no runner for backend '%s' (tried %s)", backend,
             tried.data ? tried.data : "nothing");
  kh__buf_free(&tried);
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
  int st = kh__capture(argv, 16 << 20, 120, &out, &len);
  if (st != 0) {
    kh__errf(err, "%s %s %s", runner, flag,
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
  return kh__strdup(v ? v : "");
}

static void kh__add_test(kp_record *r, void *arg) {
  kh_registry *reg = arg;
  if (strcmp(r->tag, "test") != 0 || !kp_get(r, "id")) return;
  reg->tests = kh__xrealloc(reg->tests, (size_t)(reg->n + 1) * sizeof *reg->tests);
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

int kh_test_has_tag(const kh_test *t, const char *tag) {
  size_t n = strlen(tag);
  for (const char *p = t->tags; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == n && strncmp(p, tag, n) == 0) return 1;
    p = comma ? comma + 1 : p + len;
  }
  return 0;
}

/* ---- Selection ----------------------------------------------------------------- */

static int kh__sel_matches(const char *sel, const kh_test *t) {
  if (sel[0] == '@') return kh_test_has_tag(t, sel + 1);
  return strcmp(sel, t->suite) == 0 || fnmatch(sel, t->id, 0) == 0;
}

/* Tags whose tests a sweep (no selector, another suite's glob, another tag)
 * leaves out: they run only when a selector names them. One row per tag.
 *   host_only  held back only on the host backend (hold_slow)
 *   by_suite   named also by the test's suite, or a glob starting
 *              "suite/"; otherwise only by @tag or the exact id
 *   counted    kiln says how many it left out (a GPU run would take them) */
typedef struct kh__held_tag {
  const char *tag;
  int host_only, by_suite, counted;
} kh__held_tag;

static const kh__held_tag kh__held[] = {
    {"fault", 0, 1, 0},   /* the fault suite: goes wrong on purpose */
    {"bench", 0, 1, 0},   /* kiln bench's trivial tests */
    {"perf", 0, 1, 0},    /* benchmarks: the whole device, minutes of it */
    {"slow", 1, 0, 1},    /* GPU-sized: minutes each in emulation */
};
#define KH__NHELD (sizeof kh__held / sizeof kh__held[0])

/* Is row h in force for test t on this backend? */
static int kh__held_applies(const kh__held_tag *h, const kh_test *t,
                            int hold_slow) {
  return (!h->host_only || hold_slow) && kh_test_has_tag(t, h->tag);
}

/* Does the selector name t on purpose for row h, rather than sweep it up? */
static int kh__held_named(const kh__held_tag *h, const char *sel,
                          const kh_test *t) {
  if (sel[0] == '@' && strcmp(sel + 1, h->tag) == 0) return 1;
  if (strcmp(sel, t->id) == 0) return 1;
  if (!h->by_suite) return 0;
  size_t n = strlen(t->suite);
  return strcmp(sel, t->suite) == 0 ||
         (strncmp(sel, t->suite, n) == 0 && sel[n] == '/');
}

/* Would a sweep take t? */
static int kh__sweepable(const kh_test *t, int hold_slow) {
  for (size_t h = 0; h < KH__NHELD; h++)
    if (kh__held_applies(&kh__held[h], t, hold_slow)) return 0;
  return 1;
}

/* 1: sel takes t; 0: sel matched t but a held tag keeps it out, with
 * *counted set when that tag's leaving-out is reported. */
static int kh__sel_takes(const char *sel, const kh_test *t, int hold_slow,
                         int *counted) {
  int take = 1;
  for (size_t h = 0; h < KH__NHELD; h++) {
    const kh__held_tag *row = &kh__held[h];
    if (!kh__held_applies(row, t, hold_slow) || kh__held_named(row, sel, t))
      continue;
    take = 0;
    *counted |= row->counted;
  }
  return take;
}

/* Held back by a counted (backend-specific) row only: a GPU run would have
 * taken it. */
static int kh__held_counted(const kh_test *t, int hold_slow) {
  int counted = 0;
  for (size_t h = 0; h < KH__NHELD; h++)
    if (kh__held_applies(&kh__held[h], t, hold_slow)) {
      if (!kh__held[h].counted) return 0;
      counted = 1;
    }
  return counted;
}

int kh_select(const kh_registry *reg, char *const *sel, int nsel,
              int hold_slow, unsigned char *chosen, int *held, kh_err *err) {
  int npos = 0;
  for (int s = 0; s < nsel; s++) npos += sel[s][0] != '-';
  for (int i = 0; i < reg->n; i++)
    chosen[i] = npos == 0 && kh__sweepable(&reg->tests[i], hold_slow);
  unsigned char *swept = calloc((size_t)reg->n + 1, 1);
  if (!swept) return kh__errf(err, "out of memory");
  for (int s = 0; s < nsel; s++) {
    int neg = sel[s][0] == '-';
    const char *pat = sel[s] + neg;
    int hits = 0;
    for (int i = 0; i < reg->n; i++) {
      const kh_test *t = &reg->tests[i];
      if (!kh__sel_matches(pat, t)) continue;
      hits++;
      if (neg) {
        chosen[i] = 0;
      } else {
        int counted = 0;
        if (kh__sel_takes(pat, t, hold_slow, &counted)) chosen[i] = 1;
        else if (counted) swept[i] = 1;  /* held back on this backend */
      }
    }
    if (!*pat || hits == 0) {
      free(swept);
      return kh__errf(err, "selector '%s' matches no test (see `kiln list`)",
                      sel[s]);
    }
  }
  /* Exclusions win whatever their position. */
  for (int s = 0; s < nsel; s++) {
    if (sel[s][0] != '-') continue;
    for (int i = 0; i < reg->n; i++)
      if (kh__sel_matches(sel[s] + 1, &reg->tests[i])) chosen[i] = 0;
  }
  /* Count what the host left out that a GPU run would have taken. */
  int n_held = 0;
  for (int i = 0; i < reg->n; i++) {
    const kh_test *t = &reg->tests[i];
    int wanted = npos == 0 ? kh__held_counted(t, hold_slow) : swept[i];
    for (int s = 0; wanted && s < nsel; s++)
      if (sel[s][0] == '-' && kh__sel_matches(sel[s] + 1, t)) wanted = 0;
    n_held += wanted && !chosen[i];
  }
  if (held) *held = n_held;
  free(swept);
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
    if (kh__parse_ll(sel[i], 0, nbase - 1, &k) == 0)
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
      if (kh__parse_ll(d->visible, 0, KH_MAX_DEVICES - 1, &phys) != 0)
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
