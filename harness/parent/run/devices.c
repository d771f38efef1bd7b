/* Runners and devices: finding a backend's runner, asking a runner for
 * records (`--list`, `--devices`) in a child process, read with the
 * protocol's decoders after its `runner` record says it speaks this
 * kiln's protocol, and the devices and their slots, so that the parent
 * plans without linking a suite or a GPU runtime. See run.h.
 */
#include "run-impl.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln-config.h"
#include "records.h"

const char *const krun_backend_names[] = {"auto", "host", "hip", "cuda", NULL};

/* ---- Runners --------------------------------------------------------------- */

/* Where this kiln's own runners are, after the explicit places: beside a
 * kiln run from the build tree, the build's; beside an installed one, the
 * install's, found from this kiln's folder first (an install copied with
 * DESTDIR or moved), then where it was configured to go. */
static void own_dirs(const char *here, const char **dirs, char **owned) {
  if (kh_same_file(here, KILN_BUILD_PARENT_DIR)) {
    dirs[0] = KILN_BUILD_RUNNER_DIR;
    return;
  }
  if (*KILN_BIN_TO_LIBEXEC) dirs[0] = *owned = kh_asprintf("%s/%s", here, KILN_BIN_TO_LIBEXEC);
  dirs[1] = KILN_LIBEXECDIR;
}

char *krun_runner_find(const char *backend, const char *dir, kh_err *err) {
  const char *here = kh_self_dir();
  char *owned = NULL;
  const char *dirs[5] = {dir, getenv("KILN_RUNNER_DIR"), here};
  own_dirs(here, dirs + 3, &owned);
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
  free(owned);
  return found;
}

/* The runner's own words when it failed: the last line of its stderr. */
static void last_line(const char *text, char *out, size_t n) {
  size_t len = strlen(text);
  while (len && (text[len - 1] == '\n' || text[len - 1] == ' ')) len--;
  size_t start = len;
  while (start && text[start - 1] != '\n') start--;
  snprintf(out, n, "%.*s", (int)(len - start), text + start);
  kh_text_clean(out);
}

/* The `runner` record that begins the answer: 0 when it speaks this
 * kiln's protocol, else -1 with what to do in err. */
static int check_runner(const char *runner, const kp_record *r, kh_err *err) {
  kp_runner v = {0};
  if (!r || strcmp(r->tag, "runner") != 0 ||
      kp_decode(&kp_rec_runner, r->fields, r->nfields, &v, NULL, 0) != 0 ||
      !kp_get(r, "protocol"))
    return kh_errf(err, "%s does not begin its answer with a `runner` record: it was "
                   "built against a kiln older than %s (runner protocol %d), or it is "
                   "no kiln runner (a GoogleTest binary goes with --gtest, a command "
                   "in a --manifest). Rebuild it against this kiln", runner,
                   KILN_VERSION, KP_VERSION);
  if (v.protocol != KP_VERSION)
    return kh_errf(err, "%s was built against kiln %s, runner protocol %lld; this kiln "
                   "%s speaks protocol %d. Rebuild it against this kiln (pkg-config "
                   "module kiln-%s)", runner, v.kiln ? v.kiln : "?", v.protocol,
                   KILN_VERSION, KP_VERSION, v.backend ? v.backend : "BACKEND");
  return 0;
}

int krun__runner_records(const char *runner, const char *flag,
                         void (*fn)(kp_record *, void *), void *arg, kh_err *err) {
  char *argv[] = {(char *)runner, (char *)flag, NULL};
  char *out = NULL, *errs = NULL;
  size_t len = 0;
  int st = krun_capture(argv, 16 << 20, 120, &out, &len, &errs);
  if (st != 0) {
    char said[300] = "";
    if (errs) last_line(errs, said, sizeof said);
    int e = errno;
    if (st < 0 && e == ETIMEDOUT)
      kh_errf(err, "%s %s timed out after 120 s", runner, flag);
    else if (st < 0)
      kh_errf(err, "%s %s could not be started: %s%s", runner, flag, strerror(e),
              access(runner, F_OK) == 0 && access(runner, X_OK) != 0
                  ? " (the file is not executable: chmod +x it)" : "");
    else
      kh_errf(err, "%s %s failed (status %d)%s%s", runner, flag, st, *said ? ": " : "",
              said);
    free(out), free(errs);
    return -1;
  }
  char *save = NULL;
  int first = 1, rc = 0;
  for (char *line = strtok_r(out, "\n", &save); line && rc == 0;
       line = strtok_r(NULL, "\n", &save)) {
    kp_record rec;
    int ok = kp_parse(line, &rec, NULL) == 0;
    if (first) rc = check_runner(runner, ok ? &rec : NULL, err);
    else if (ok) fn(&rec, arg);
    first = 0;
  }
  if (first) rc = check_runner(runner, NULL, err);
  free(out), free(errs);
  return rc;
}

/* ---- Devices --------------------------------------------------------------------- */

static void add_device(kp_record *r, void *arg) {
  krun_backend_info *bi = arg;
  if (strcmp(r->tag, "backend") == 0) {
    kp_backend b;
    if (kp_decode(&kp_rec_backend, r->fields, r->nfields, &b, NULL, 0) != 0) return;
    if (b.error) snprintf(bi->error, sizeof bi->error, "%s", b.error);
    snprintf(bi->sanitizers, sizeof bi->sanitizers, "%s", b.sanitizers ? b.sanitizers : "none");
    for (int k = KRUN_BACKEND_HOST; b.name && krun_backend_names[k]; k++)
      if (strcmp(b.name, krun_backend_names[k]) == 0) bi->backend = k;
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

/* Asks the runner for its devices, inside what the outside world gave
 * (krun_outer). The backend is the one its `backend` record names; it must
 * be `backend` unless that is AUTO. */
static int devices_probe(int backend, const char *runner, krun_backend_info *bi,
                         kh_err *err) {
  memset(bi, 0, sizeof *bi);
  bi->backend = KRUN_BACKEND_AUTO;
  snprintf(bi->runner, sizeof bi->runner, "%s", runner);
  /* A runner of unknown backend (--runner) says which it is first: the
   * outer devices are read for that backend, and it is asked again if
   * they were exported for it (a Slurm allocation). */
  int asked = 0;
  if (backend == KRUN_BACKEND_AUTO) {
    if (krun__runner_records(runner, "--devices", add_device, bi, err) != 0) return -1;
    if (bi->backend == KRUN_BACKEND_AUTO)
      return kh_errf(err, "%s --devices named no backend kiln knows", runner);
    backend = bi->backend;
    asked = 1;
  }
  krun_outer outer;
  if (krun_outer_read(backend, &outer, err) != 0) return -1;
  krun_outer_export(backend, &outer);
  if (!asked || outer.exported) {
    bi->ndevices = 0;
    bi->error[0] = '\0';
    bi->backend = KRUN_BACKEND_AUTO;
    if (krun__runner_records(runner, "--devices", add_device, bi, err) != 0) return -1;
  }
  krun_outer_describe(&outer, bi->devices_from, sizeof bi->devices_from);
  if (bi->backend == KRUN_BACKEND_AUTO)
    return kh_errf(err, "%s --devices named no backend kiln knows", runner);
  if (bi->backend != backend)
    return kh_errf(err, "%s is a runner for the %s backend, not %s", runner,
                   krun_backend_names[bi->backend], krun_backend_names[backend]);
  for (int i = 0; i < bi->ndevices; i++) {
    krun_device *d = &bi->dev[i];
    int k = d->index;
    int inside = outer.n >= 0 && k >= 0 && k < outer.n;
    if (inside) snprintf(d->visible, sizeof d->visible, "%s", outer.entry[k]);
    else snprintf(d->visible, sizeof d->visible, "%d", k);
    /* A UUID entry with no node number falls back to the position. */
    d->physical = inside && outer.node_dev[k] >= 0 ? outer.node_dev[k] : k;
  }
  return 0;
}

int krun_backend_resolve(int wanted, const char *runner_dir, const char *runner,
                         krun_backend_info *bi, kh_err *err) {
  if (runner) return devices_probe(wanted, runner, bi, err);
  if (wanted != KRUN_BACKEND_AUTO) {
    char *found = krun_runner_find(krun_backend_names[wanted], runner_dir, err);
    if (!found) return -1;
    int rc = devices_probe(wanted, found, bi, err);
    free(found);
    return rc;
  }
  static const int order[] = {KRUN_BACKEND_CUDA, KRUN_BACKEND_HIP};
  for (size_t i = 0; i < 2; i++) {
    kh_err ignored;
    char *found = krun_runner_find(krun_backend_names[order[i]], runner_dir, &ignored);
    if (!found) continue;
    int rc = devices_probe(order[i], found, bi, &ignored);
    free(found);
    if (rc == 0 && bi->ndevices > 0) return 0;
  }
  return krun_backend_resolve(KRUN_BACKEND_HOST, runner_dir, NULL, bi, err);
}

/* ---- Slots ----------------------------------------------------------------------------- */

static int cpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

int krun__jobs(const krun_settings *s) { return s->jobs > 0 ? s->jobs : cpus(); }

/* Device memory a context takes besides what the test allocates: the
 * runtime's own (CUDA and ROCm reserve a few hundred MiB per process; the
 * host emulation nothing). */
long long krun__context_bytes(int backend) {
  return backend == KRUN_BACKEND_HOST ? 0 : 512ll << 20;
}

/* The default slots of a GPU (docs/devices.md, "Device tokens"): as many
 * tests as the host has cores for (each test's references, conversions and
 * checks run on the host: its cores shared by the devices), as many as
 * fit its memory (--slots auto's budget over a context plus
 * KRUN_DEFAULT_TEST_BYTES each, the most a default-suite test was measured
 * to hold), and at most KRUN_DEFAULT_GPU_SLOTS, the most measured to
 * help. The host backend's default is --jobs. */
#define KRUN_DEFAULT_TEST_BYTES (4ll << 30)
#define KRUN_DEFAULT_GPU_SLOTS 8

int krun__default_slots(const krun_settings *s, const krun_backend_info *bi, int d) {
  if (bi->backend == KRUN_BACKEND_HOST) return krun__jobs(s);
  int n = bi->ndevices > 0 ? bi->ndevices : 1;
  int by_cores = krun__jobs(s) / n;
  long long mem = bi->dev[d].free_bytes > 0 ? bi->dev[d].free_bytes : bi->dev[d].total_bytes;
  long long budget = (long long)(KRUN_AUTO_BUDGET * (double)mem);
  /* A device that says nothing of its memory is bounded by cores alone. */
  long long by_memory = mem > 0 ? budget / (krun__context_bytes(bi->backend) +
                                            KRUN_DEFAULT_TEST_BYTES)
                                : by_cores;
  long long slots = by_cores < by_memory ? by_cores : by_memory;
  if (slots > KRUN_DEFAULT_GPU_SLOTS) slots = KRUN_DEFAULT_GPU_SLOTS;
  return slots < 1 ? 1 : (int)slots;
}

void krun_device_caps(const krun_settings *s, const krun_backend_info *bi,
                      int caps[KRUN_MAX_DEVICES]) {
  /* --slots auto: every device counts in hundredths (memslots.c). */
  int automatic = s->slots == KRUN_SLOTS_AUTO;
  for (int d = 0; d < bi->ndevices; d++) {
    int dflt = automatic ? KRUN_AUTO_UNITS
               : s->slots > 0 ? s->slots : krun__default_slots(s, bi, d);
    caps[d] = s->devices_given ? 0 : dflt;  /* a device list leaves others out */
    for (int i = 0; i < s->ndevices; i++)
      if (s->devices[i].id >= 0 && s->devices[i].id == bi->dev[d].physical)
        caps[d] = s->devices[i].slots >= 0 && !automatic ? s->devices[i].slots : dflt;
    /* The token set counts in a semaphore (at most 32767); more slots than
     * a device could use are no use anyway. */
    if (caps[d] > KRUN_MAX_SLOTS) caps[d] = KRUN_MAX_SLOTS;
  }
}
