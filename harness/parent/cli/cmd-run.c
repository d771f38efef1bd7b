/* `kiln run`, `kiln list`, `kiln devices`, `kiln guard`: settings from
 * defaults, the config, a resource spec and the command line (in that
 * order), then an outer scheduler's allotment; the backend, the runner's
 * registry, the selection and the shard. `kiln run` and `kiln list` make
 * that plan with the same function, so the list is what the run runs.
 */
#include "cli-impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- The plan ------------------------------------------------------------------ */

typedef struct plan {
  krun_settings s;
  char *config_path;
  krun_backend_info bi;
  krun_registry reg;
  unsigned char *chosen;
  krun_shard sh;
  char **sel;               /* selectors (command line, else the config's) */
  int nsel;
  int held;                 /* slow tests left out on the host backend */
} plan;

/* Defaults < config < resource spec < flags; then devices an outer
 * scheduler gave (CTest's RESOURCE_GROUPS), which replace any list. */
int kcli__settings(kcli__args *a, krun_settings *s, char **config_path) {
  kh_err err;
  krun_settings_init(s);
  *config_path = NULL;
  if (a->config && kcli_config_load(a->config, s, config_path, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    return -1;
  }
  if (a->spec) {
    char *buf;
    size_t len;
    if (kh_read_input(a->spec, 1 << 20, &buf, &len, &err) != 0) {
      fprintf(stderr, "kiln: --resource-spec %s\n", err.msg);
      return -1;
    }
    int rc = kcli_spec_parse(buf, len, a->spec, &a->flags, &err);
    free(buf);
    if (rc != 0) {
      fprintf(stderr, "kiln: %s\n", err.msg);
      return -1;
    }
  }
  krun_settings_overlay(s, &a->flags);
  krun_allot allot;
  if (krun_allot_resolve(&allot, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    return -1;
  }
  krun_allot_apply(&allot, s);
  return 0;
}

void kcli__selectors(kcli__args *a, const krun_settings *s, char ***sel, int *nsel) {
  if (a->npos > 0) *sel = a->pos, *nsel = a->npos;
  else *sel = s->selection, *nsel = s->nselection;
}

/* The run's tests: from --runner and the paths the sources' options name
 * (flags over a config's) when given, else from kiln's own runner; then
 * the config's test rules. A program that cannot list its tests is an
 * infrastructure error; a file that does not read, a mark kiln refuses,
 * or ids that clash, a usage error. */
static int load_tests(const kcli__args *a, const krun_settings *s, const char *own_runner,
                      krun_registry *reg) {
  kh_err err;
  int rc = 0, status = KH_EXIT_INFRA;
  memset(reg, 0, sizeof *reg);
  if (a->runner || !krun_registry_named(s))
    rc = krun_registry_add_runner(reg, a->runner ? a->runner : own_runner, &err);
  if (rc == 0 && (rc = krun_registry_add_named(reg, s, &err)) == -2) status = KH_EXIT_USAGE;
  if (rc == 0 && (rc = krun_registry_finish(reg, s, &err)) != 0) status = KH_EXIT_USAGE;
  if (rc == 0) return 0;
  fprintf(stderr, "kiln: cannot list tests: %s\n", err.msg);
  return status;
}

/* Loads the tests and marks what the selectors choose; prints what went
 * wrong and, on the host backend, the slow tests held back. */
static int select_in(const kcli__args *a, const krun_settings *s, const char *runner,
                     char **sel, int nsel, int host, krun_registry *reg,
                     unsigned char **chosen, int *held) {
  int rc = load_tests(a, s, runner, reg);
  if (rc != 0) return rc;
  *chosen = kh_xcalloc((size_t)reg->n + 1, 1);
  int bad = ksel_select(reg->views, (size_t)reg->n, sel, nsel, host, *chosen, held);
  if (bad) {
    fprintf(stderr, "kiln: selector '%s' matches no test (see `kiln list`)\n", sel[bad - 1]);
    return KH_EXIT_USAGE;
  }
  if (*held)
    fprintf(stderr, "kiln: %d GPU-sized test%s (tag slow) left out on the host backend; add "
                    "@slow to run %s\n", *held, *held == 1 ? "" : "s",
            *held == 1 ? "it" : "them");
  return 0;
}

int kcli__select(const kcli__args *a, const krun_settings *s, const char *runner, char **sel,
                 int nsel, int host, krun_registry *reg, unsigned char **chosen) {
  int held = 0;
  return select_in(a, s, runner, sel, nsel, host, reg, chosen, &held);
}

char *kcli__any_runner(const kcli__args *a, const krun_settings *s) {
  kh_err err;
  if (s->backend != KRUN_BACKEND_AUTO) {
    char *r = krun_runner_find(krun_backend_names[s->backend], a->runner_dir, &err);
    if (!r) fprintf(stderr, "kiln: %s\n", err.msg);
    return r;
  }
  static const int order[] = {KRUN_BACKEND_HOST, KRUN_BACKEND_CUDA, KRUN_BACKEND_HIP};
  for (size_t i = 0; i < 3; i++) {
    char *r = krun_runner_find(krun_backend_names[order[i]], a->runner_dir, &err);
    if (r) return r;
  }
  fprintf(stderr, "kiln: no runner found for any backend: %s\n", err.msg);
  return NULL;
}

static int select_tests(const kcli__args *a, plan *p) {
  return select_in(a, &p->s, p->bi.runner, p->sel, p->nsel, p->bi.backend == KRUN_BACKEND_HOST,
                   &p->reg, &p->chosen, &p->held);
}

/* --isolation none runs the selected tests in one process: they must all
 * come from one source whose tests can share one (a runner, a GoogleTest
 * binary; a command is a process of its own). */
static int check_isolation(const plan *p) {
  if (p->s.isolation != KRUN_ISO_NONE) return 0;
  const krun_registry *reg = &p->reg;
  int source = -1;
  for (int i = 0; i < reg->n; i++) {
    if (!p->chosen[i]) continue;
    const krun_test *t = &reg->tests[i];
    const char *alone = krun_kind_alone(reg->sources[t->source].kind);
    if (alone) {
      fprintf(stderr, "kiln: --isolation none: '%s' is a %s from %s, a process of "
                      "its own; select tests of one runner or GoogleTest binary\n", t->id,
              alone, reg->sources[t->source].path);
      return KH_EXIT_USAGE;
    }
    if (source >= 0 && source != t->source) {
      fprintf(stderr, "kiln: --isolation none runs one process: the selected tests come "
                      "from %s and %s; select tests of one of them\n",
              reg->sources[source].path, reg->sources[t->source].path);
      return KH_EXIT_USAGE;
    }
    source = t->source;
  }
  return 0;
}

/* --shard K/N or the Bazel/Slurm environment narrows the selection, by a
 * plan when one is given. */
static int shard(kcli__args *a, plan *p) {
  kh_err err;
  krun_plan sp = {0};
  int rc = krun_shard_resolve(a->shard, &p->sh, &err);
  if (rc == 0 && a->shard_plan) rc = krun_plan_read(a->shard_plan, &sp, &err);
  if (rc == 0)
    rc = krun_shard_apply(&p->sh, &p->reg, p->chosen, a->shard_durations,
                          a->shard_plan ? &sp : NULL, &err);
  krun_plan_free(&sp);
  if (rc != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    return KH_EXIT_USAGE;
  }
  if (p->sh.count)
    fprintf(stderr, "kiln: shard %d/%d (%s, from %s): %d of %d selected tests\n", p->sh.index,
            p->sh.count, p->sh.method, p->sh.source, p->sh.selected, p->sh.total);
  krun_shard_bazel_ack();
  return 0;
}

/* Where neither a flag nor the config chose the isolation: workers on a
 * GPU backend, where a process per test pays a device context and the
 * runtime's start (the whole cuda suite on one H200: 57.4 s a process per
 * test, 38.9 s in workers, the same verdicts; docs/harness.md), a process
 * per test on the host backend, where a process is cheap and the emulated
 * kernels are the time. --warm asks for warm children, which only a
 * process per test has, and --wrap a tool whose process tree a worker
 * does not see through (a grandchild under valgrind goes unseen). */
static void default_isolation(plan *p) {
  if (p->bi.backend == KRUN_BACKEND_HOST || krun_setting_is_set(&p->s, "isolation") ||
      krun_setting_is_set(&p->s, "warm") || krun_setting_is_set(&p->s, "wrap"))
    return;
  p->s.isolation = KRUN_ISO_WORKER;
}

/* What `kiln run` with these arguments runs: the settings, the backend it
 * resolves to (auto: a GPU backend whose runner finds a device, else
 * host), the tests it selects there and the shard. */
static int plan_make(kcli__args *a, plan *p) {
  memset(p, 0, sizeof *p);
  if (kcli__settings(a, &p->s, &p->config_path) != 0) return KH_EXIT_USAGE;
  kh_err err;
  if (krun_backend_resolve(p->s.backend, a->runner_dir, a->runner, &p->bi, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    return KH_EXIT_INFRA;
  }
  default_isolation(p);
  kcli__selectors(a, &p->s, &p->sel, &p->nsel);
  int rc = select_tests(a, p);
  if (rc == 0) rc = check_isolation(p);
  return rc ? rc : shard(a, p);
}

static void plan_free(plan *p) {
  free(p->chosen), free(p->config_path);
  krun_registry_free(&p->reg);
  krun_settings_free(&p->s);
}

/* ---- kiln list ----------------------------------------------------------------- */

static void json_str(kh_buf *b, const char *s) { kh_json_str(b, s ? s : ""); }

/* The plan as JSON (format kiln-list, version 1; docs/harness.md). */
static void list_json(const plan *p) {
  kh_buf b = {0};
  kh_buf_addf(&b, "{\"format\": \"kiln-list\", \"format_version\": 1, \"backend\": ");
  json_str(&b, krun_backend_names[p->bi.backend]);
  kh_buf_addf(&b, ", \"repeat\": %d, \"selection\": [", p->s.repeat);
  for (int i = 0; i < p->nsel; i++) {
    if (i) kh_buf_addf(&b, ", ");
    json_str(&b, p->sel[i]);
  }
  kh_buf_addf(&b, "], \"held_back\": %d, \"shard\": ", p->held);
  if (p->sh.count) {
    kh_buf_addf(&b, "{\"index\": %d, \"count\": %d, \"method\": ", p->sh.index, p->sh.count);
    json_str(&b, p->sh.method);
    kh_buf_addf(&b, ", \"source\": ");
    json_str(&b, p->sh.source);
    kh_buf_addf(&b, ", \"selected\": %d, \"selected_total\": %d}", p->sh.selected, p->sh.total);
  } else {
    kh_buf_addf(&b, "null");
  }
  kh_buf_addf(&b, ", \"tests\": [");
  int n = 0;
  for (int i = 0; i < p->reg.n; i++) {
    const krun_test *t = &p->reg.tests[i];
    if (!p->chosen[i]) continue;
    kh_buf_addf(&b, "%s\n  {\"id\": ", n++ ? "," : "");
    json_str(&b, t->id);
    kh_buf_addf(&b, ", \"suite\": ");
    json_str(&b, t->suite);
    kh_buf_addf(&b, ", \"name\": ");
    json_str(&b, t->name);
    kh_buf_addf(&b, ", \"tags\": [");
    for (const char *q = t->tags; *q;) {
      size_t len = strcspn(q, ",");
      char *tag = kh_strndup(q, len);
      if (q != t->tags) kh_buf_addf(&b, ", ");
      json_str(&b, tag);
      free(tag);
      q += len + (q[len] == ',');
    }
    kh_buf_addf(&b, "], \"slots\": %d, \"timeout_s\": %d, \"deadline_s\": %g, "
                "\"needs_gpu\": %s, \"file\": ", t->slots, t->timeout_s,
                krun_test_deadline_s(&p->s, t), t->needs_gpu ? "true" : "false");
    json_str(&b, t->file);
    kh_buf_addf(&b, ", \"line\": %d}", t->line);
  }
  kh_buf_addf(&b, "%s], \"runs\": %lld}\n", n ? "\n" : "", (long long)n * p->s.repeat);
  fwrite(b.data, 1, b.len, stdout);
  kh_buf_free(&b);
}

int kcli__list(kcli__args *a) {
  const char *format = a->format ? a->format : "text";
  if (strcmp(format, "text") != 0 && strcmp(format, "json") != 0)
    return kcli__usage_error(a->cmd, "--format: '%s' is not valid: expected text or json",
                             format);
  plan p;
  int rc = plan_make(a, &p);
  if (rc == 0 && strcmp(format, "json") == 0) list_json(&p);
  for (int i = 0; rc == 0 && strcmp(format, "text") == 0 && i < p.reg.n; i++) {
    const krun_test *t = &p.reg.tests[i];
    if (!p.chosen[i]) continue;
    printf("%-44s [%s] slots=%d%s", t->id, t->tags, t->slots, t->needs_gpu ? "" : " host-only");
    if (t->devices > 1) printf(" devices=%d", t->devices);
    if (t->timeout_s) printf(" timeout=%ds", t->timeout_s);
    if (a->verbose) printf("  %s:%d", t->file, t->line);
    printf("\n");
  }
  plan_free(&p);
  return rc;
}

/* ---- kiln devices ---------------------------------------------------------------- */

static void print_holder(pid_t pid, const char *what, void *arg) {
  (void)arg;
  printf("    held by pid %ld: %s\n", (long)pid, what);
}

/* Reads the token set; changes its capacity only when slots were given
 * explicitly (--slots, --resource-spec, a config's slots: or devices:),
 * and says so. */
int kcli__devices(kcli__args *a) {
  krun_settings s;
  char *config_path;
  if (kcli__settings(a, &s, &config_path) != 0) return krun_settings_free(&s), KH_EXIT_USAGE;
  free(config_path);
  krun_backend_info bi;
  kh_err err;
  if (krun_backend_resolve(s.backend, a->runner_dir, a->runner, &bi, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    krun_settings_free(&s);
    return KH_EXIT_INFRA;
  }
  printf("backend %s (runner %s)\n", krun_backend_names[bi.backend], bi.runner);
  printf("devices from %s\n", bi.devices_from);
  /* The devices a resource spec gives, and the device each id names. */
  if (a->spec) {
    printf("resource spec %s gives %d gpu%s:", a->spec, s.ndevices, s.ndevices == 1 ? "" : "s");
    for (int i = 0; i < s.ndevices; i++)
      printf(" '%s' -> device %d (%d slot%s)%s", s.devices[i].name, s.devices[i].id,
             s.devices[i].slots, s.devices[i].slots == 1 ? "" : "s",
             i + 1 < s.ndevices ? "," : "");
    printf("%s\n", s.ndevices ? "" : " none: no test runs");
  }
  if (bi.ndevices == 0) {
    printf("no devices: %s\n", *bi.error ? bi.error : "none found");
    krun_settings_free(&s);
    return KH_EXIT_OK;
  }
  int set = krun_setting_is_set(&s, "slots") || s.devices_given;
  char *key = krun_tokens_key(a->token_key, bi.backend);
  krun_tokens tok;
  int caps[KRUN_MAX_DEVICES];
  krun_device_caps(&s, &bi, caps);
  int rc = krun_tokens_open(&tok, key, set, &err);
  if (rc == 0) printf("token key %s (semaphore set %d)\n", key, tok.semid);
  else printf("token key %s: %s\n", key, err.msg);
  for (int d = 0; d < bi.ndevices; d++) {
    const krun_device *dv = &bi.dev[d];
    printf("device %d (physical %d%s%s): %s, %s, %lld of %lld MiB free\n", dv->index,
           dv->physical, *dv->visible ? ", visible as " : "", dv->visible, dv->name, dv->arch,
           dv->free_bytes >> 20, dv->total_bytes >> 20);
    if (rc != 0) continue;
    int old = krun_tokens_capacity(&tok, dv->physical);
    if (set && caps[d] > 0) {
      int now = krun_tokens_ensure(&tok, dv->physical, caps[d], &err);
      if (err.msg[0]) printf("  warning: %s\n", err.msg);
      if (now >= 0 && now != old)
        printf("  slot capacity of device %d: %d -> %d (host-wide: every kiln using %s)\n",
               dv->physical, old, now, key);
    }
    printf("  slots %d total, %d free\n", krun_tokens_capacity(&tok, dv->physical),
           krun_tokens_free(&tok, dv->physical));
    krun_tokens_holders(&tok, dv->physical, print_holder, NULL);
  }
  free(key);
  krun_settings_free(&s);
  return rc < 0 ? KH_EXIT_INFRA : KH_EXIT_OK;
}

/* ---- kiln run ------------------------------------------------------------------------- */

/* reports/runs/<UTC time>-<what>, made unique with a suffix; NULL with the
 * reason in err. */
char *kcli__default_out(const char *what, kh_err *err) {
  char stamp[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  if (kh_mkdir_p("reports/runs", 0755) != 0) {
    kh_errf(err, "cannot make a run folder: reports/runs (under the current folder): %s; "
            "give one with -o DIR", strerror(errno));
    return NULL;
  }
  for (int n = 1; n < 1000; n++) {
    char *p = n == 1 ? kh_asprintf("reports/runs/%s-%s", stamp, what)
                     : kh_asprintf("reports/runs/%s-%s-%d", stamp, what, n);
    if (mkdir(p, 0755) == 0) return p;
    int e = errno;
    if (e != EEXIST) {
      kh_errf(err, "cannot make a run folder: %s: %s; give one with -o DIR", p, strerror(e));
      free(p);
      return NULL;
    }
    free(p);
  }
  kh_errf(err, "cannot make a run folder: reports/runs/%s-%s: 999 of them exist; give one "
          "with -o DIR", stamp, what);
  return NULL;
}

static char *command_line(int argc, char **argv) {
  kh_buf b = {0};
  for (int i = 0; i < argc; i++) kh_buf_addf(&b, "%s%s", i ? " " : "", argv[i]);
  return b.data;
}

/* --slots auto: the tests' peaks from --slots-from, else from the newest
 * earlier run of the backend (none: every test takes the default share). */
static int peaks_for(kcli__args *a, const krun_settings *s, const krun_backend_info *bi,
                     const krun_registry *reg, const char *out, char **from,
                     long long **peaks) {
  if (a->slots_from && s->slots != KRUN_SLOTS_AUTO) {
    fprintf(stderr, "kiln: --slots-from %s needs --slots auto\n", a->slots_from);
    return KH_EXIT_USAGE;
  }
  if (s->slots != KRUN_SLOTS_AUTO) return 0;
  *from = a->slots_from ? kh_strdup(a->slots_from) : krun_peaks_latest(bi->backend, out);
  if (!*from) return 0;
  kh_err err;
  *peaks = krun_peaks_load(*from, reg, &err);
  if (*peaks) return 0;
  fprintf(stderr, "kiln: --slots auto: %s%s\n", err.msg,
          a->slots_from ? "" : "; every test takes the default share");
  free(*from);
  *from = NULL;
  return a->slots_from ? KH_EXIT_USAGE : 0;
}

/* The earlier times the queue is ordered by: --durations (none: no
 * order), else --shard-durations, else the run folder's earlier report
 * when the folder is used again. A report named on the command line that
 * cannot be read is a usage error; the folder's own, a warning. */
static int durations_for(const kcli__args *a, const krun_registry *reg, const char *out,
                         char **from, double **ms) {
  const char *given = a->durations ? a->durations : a->shard_durations;
  if (given && strcmp(given, "none") == 0) return 0;
  char *earlier = kh_asprintf("%s/report.yaml", out);
  if (!given && access(earlier, F_OK) != 0) {
    free(earlier);
    return 0;
  }
  *from = given ? kh_strdup(given) : earlier;
  if (given) free(earlier);
  kh_err err;
  int known;
  *ms = krun_durations_load(*from, reg, &known, &err);
  if (*ms) return 0;
  const char *what = a->durations ? "--durations"
                     : given      ? "--shard-durations"
                                  : "the run folder's earlier report";
  fprintf(stderr, "kiln: %s: %s%s\n", what, err.msg,
          given ? "" : "; the tests run in the selection's order");
  free(*from);
  *from = NULL;
  return given ? KH_EXIT_USAGE : 0;
}

/* Every file the run will write, checked before the first test: a run
 * must not work for an hour and then find it cannot write its results. */
static int check_outputs(kcli__args *a, const char *out, const char *junit,
                         const char *junit_from) {
  kh_err err;
  if ((a->out && kh_check_output(out, 1, "-o", &err) != 0) ||
      (a->report && kh_check_output(a->report, 0, "--report", &err) != 0) ||
      (junit && kh_check_output(junit, 0, junit_from, &err) != 0)) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    return -1;
  }
  return 0;
}

int kcli__run(kcli__args *a) {
  plan p;
  int rc = plan_make(a, &p);
  const char *junit = a->junit ? a->junit : getenv("XML_OUTPUT_FILE");
  if (junit && !*junit) junit = NULL;
  char *out = NULL;
  kh_err err;
  if (rc == 0 && check_outputs(a, a->out, junit, a->junit ? "--junit" : "XML_OUTPUT_FILE") != 0)
    rc = KH_EXIT_USAGE;
  if (rc == 0 && !(out = a->out ? kh_strdup(a->out)
                                : kcli__default_out(krun_backend_names[p.bi.backend], &err))) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    rc = KH_EXIT_USAGE;
  }
  char *peaks_from = NULL;
  long long *peaks = NULL;
  if (rc == 0) rc = peaks_for(a, &p.s, &p.bi, &p.reg, out, &peaks_from, &peaks);
  char *durations_from = NULL;
  double *durations = NULL;
  if (rc == 0) rc = durations_for(a, &p.reg, out, &durations_from, &durations);
  if (rc == 0) {
    char *key = krun_tokens_key(a->token_key, p.bi.backend);
    char *command = command_line(a->argc, a->argv);
    krun_opts o = {&p.s, &p.reg, p.chosen, &p.bi, key, out, a->report, junit,
                   p.config_path, command, p.sel, p.nsel, a->verbose, &p.sh, peaks, peaks_from,
                   0, durations, durations_from};
    rc = krun_run(&o);
    free(key), free(command);
  }
  free(out), free(peaks_from), free(peaks), free(durations_from), free(durations);
  plan_free(&p);
  return rc;
}

/* ---- kiln guard (started by kiln run) ---------------------------------------------------- */

int kcli__guard(kcli__args *a) {
  long long pid;
  if (kh_parse_ll(a->pos[0], 1, 1 << 30, &pid) != 0)
    return kcli__usage_error(a->cmd, "'%s' is not a process id", a->pos[0]);
  return krun_guard((long)pid, a->npos > 1 ? a->pos[1] : NULL, a->npos > 2 ? a->pos[2] : NULL);
}
