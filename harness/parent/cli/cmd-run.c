/* `kiln run`, `kiln list`, `kiln devices`: settings from defaults, the
 * config and the command line (in that order), the runner's registry and
 * the selection, shards; then the run room does the work.
 */
#include "cli-impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- What every one of them needs ------------------------------------------------ */

/* Defaults < config < resource spec < flags. */
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
    if (kh_read_file(a->spec, 1 << 20, &buf, &len) != 0) {
      fprintf(stderr, "kiln: --resource-spec: %s: %s\n", a->spec, strerror(errno));
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
  return 0;
}

/* Selectors from the command line, else the config's selection. */
static void selectors(kcli__args *a, const krun_settings *s, char ***sel, int *nsel) {
  if (a->npos > 0) *sel = a->pos, *nsel = a->npos;
  else *sel = s->selection, *nsel = s->nselection;
}

int kcli__select_tests(const char *runner, char **sel, int nsel, const krun_settings *s,
                        int backend, krun_registry *reg, unsigned char **chosen) {
  kh_err err;
  if (krun_registry_load(runner, reg, &err) != 0) {
    fprintf(stderr, "kiln: cannot list tests: %s\n", err.msg);
    return KH_EXIT_INFRA;
  }
  krun_registry_needs(reg, s);
  *chosen = kh_xcalloc((size_t)reg->n + 1, 1);
  int held = 0;
  int bad = ksel_select(reg->views, (size_t)reg->n, sel, nsel,
                        backend == KRUN_BACKEND_HOST, *chosen, &held);
  if (bad) {
    fprintf(stderr, "kiln: selector '%s' matches no test (see `kiln list`)\n", sel[bad - 1]);
    return KH_EXIT_USAGE;
  }
  if (held)
    fprintf(stderr, "kiln: %d GPU-sized test%s (tag slow) left out on the host backend; add "
                    "@slow to run %s\n", held, held == 1 ? "" : "s", held == 1 ? "it" : "them");
  return 0;
}

/* --shard K/N or the Bazel/Slurm environment narrows the selection. */
static int shard(kcli__args *a, krun_registry *reg, unsigned char *chosen, krun_shard *sh) {
  kh_err err;
  if (krun_shard_resolve(a->shard, sh, &err) != 0 ||
      krun_shard_apply(sh, reg, chosen, a->shard_durations, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    return KH_EXIT_USAGE;
  }
  if (sh->count)
    fprintf(stderr, "kiln: shard %d/%d (%s, from %s): %d of %d selected tests\n", sh->index,
            sh->count, sh->method, sh->source, sh->selected, sh->total);
  krun_shard_bazel_ack();
  return 0;
}

/* ---- kiln list ----------------------------------------------------------------------- */

/* Any runner will do to list tests: the backend's, else the first built. */
static char *any_runner(const kcli__args *a, const krun_settings *s) {
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

int kcli__list(kcli__args *a) {
  krun_settings s;
  char *config_path;
  if (kcli__settings(a, &s, &config_path) != 0) return krun_settings_free(&s), KH_EXIT_USAGE;
  free(config_path);
  char *runner = any_runner(a, &s);
  if (!runner) return krun_settings_free(&s), KH_EXIT_INFRA;
  char **sel;
  int nsel;
  selectors(a, &s, &sel, &nsel);
  krun_registry reg;
  unsigned char *chosen = NULL;
  krun_shard sh;
  int rc = kcli__select_tests(runner, sel, nsel, &s, s.backend, &reg, &chosen);
  if (rc == 0) rc = shard(a, &reg, chosen, &sh);
  for (int i = 0; rc == 0 && i < reg.n; i++) {
    const krun_test *t = &reg.tests[i];
    if (!chosen[i]) continue;
    printf("%-44s [%s] slots=%d%s", t->id, t->tags, t->slots, t->needs_gpu ? "" : " host-only");
    if (t->devices > 1) printf(" devices=%d", t->devices);
    if (t->timeout_s) printf(" timeout=%ds", t->timeout_s);
    if (a->verbose) printf("  %s:%d", t->file, t->line);
    printf("\n");
  }
  free(chosen), free(runner);
  krun_registry_free(&reg);
  krun_settings_free(&s);
  return rc;
}

/* ---- kiln devices ---------------------------------------------------------------------- */

static void print_holder(pid_t pid, const char *what, void *arg) {
  (void)arg;
  printf("    held by pid %ld: %s\n", (long)pid, what);
}

int kcli__devices(kcli__args *a) {
  krun_settings s;
  char *config_path;
  if (kcli__settings(a, &s, &config_path) != 0) return krun_settings_free(&s), KH_EXIT_USAGE;
  free(config_path);
  krun_backend_info bi;
  kh_err err;
  if (krun_backend_resolve(s.backend, a->runner_dir, &bi, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    krun_settings_free(&s);
    return KH_EXIT_INFRA;
  }
  printf("backend %s (runner %s)\n", krun_backend_names[bi.backend], bi.runner);
  if (bi.ndevices == 0) {
    printf("no devices: %s\n", *bi.error ? bi.error : "none found");
    krun_settings_free(&s);
    return KH_EXIT_OK;
  }
  char *key = krun_tokens_key(a->token_key, bi.backend);
  krun_tokens tok;
  int caps[KRUN_MAX_DEVICES];
  krun_device_caps(&s, &bi, caps);
  int rc = krun_tokens_open(&tok, key, &err);
  printf("token key %s%s%s\n", key, rc ? ": " : "", rc ? err.msg : "");
  for (int d = 0; d < bi.ndevices; d++) {
    const krun_device *dv = &bi.dev[d];
    printf("device %d (physical %d%s%s): %s, %s, %lld of %lld MiB free\n", dv->index,
           dv->physical, *dv->visible ? ", visible as " : "", dv->visible, dv->name, dv->arch,
           dv->free_bytes >> 20, dv->total_bytes >> 20);
    if (rc != 0) continue;
    if (caps[d] > 0) krun_tokens_ensure(&tok, dv->physical, caps[d], &err);
    printf("  slots %d total, %d free\n", krun_tokens_capacity(&tok, dv->physical),
           krun_tokens_free(&tok, dv->physical));
    krun_tokens_holders(&tok, dv->physical, print_holder, NULL);
  }
  free(key);
  krun_settings_free(&s);
  return rc ? KH_EXIT_INFRA : KH_EXIT_OK;
}

/* ---- kiln run ------------------------------------------------------------------------------- */

char *kcli__default_out(const char *what) {
  char stamp[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  kh_mkdir_p("reports/runs", 0755);
  for (int n = 1; n < 1000; n++) {
    char *p = n == 1 ? kh_asprintf("reports/runs/%s-%s", stamp, what)
                     : kh_asprintf("reports/runs/%s-%s-%d", stamp, what, n);
    if (mkdir(p, 0755) == 0) return p;
    free(p);
  }
  return NULL;
}

char *kcli__command_line(int argc, char **argv) {
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

int kcli__run(kcli__args *a) {
  krun_settings s;
  char *config_path = NULL;
  if (kcli__settings(a, &s, &config_path) != 0) return krun_settings_free(&s), KH_EXIT_USAGE;
  krun_backend_info bi;
  kh_err err;
  int rc = 0;
  if (krun_backend_resolve(s.backend, a->runner_dir, &bi, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    rc = KH_EXIT_INFRA;
  }
  char **sel;
  int nsel;
  selectors(a, &s, &sel, &nsel);
  krun_registry reg = {0};
  unsigned char *chosen = NULL;
  krun_shard sh = {0};
  if (rc == 0) rc = kcli__select_tests(bi.runner, sel, nsel, &s, bi.backend, &reg, &chosen);
  if (rc == 0) rc = shard(a, &reg, chosen, &sh);
  char *out = NULL;
  if (rc == 0 && !(out = a->out ? kh_strdup(a->out) : kcli__default_out(krun_backend_names[bi.backend]))) {
    fprintf(stderr, "kiln: cannot create a run folder under reports/runs\n");
    rc = KH_EXIT_INFRA;
  }
  char *peaks_from = NULL;
  long long *peaks = NULL;
  if (rc == 0) rc = peaks_for(a, &s, &bi, &reg, out, &peaks_from, &peaks);
  if (rc == 0) {
    char *key = krun_tokens_key(a->token_key, bi.backend);
    char *command = kcli__command_line(a->argc, a->argv);
    const char *junit = a->junit ? a->junit : getenv("XML_OUTPUT_FILE");
    krun_opts o = {&s, &reg, chosen, &bi, key, out, a->report, junit && *junit ? junit : NULL,
                   config_path, command, sel, nsel, a->verbose, &sh, peaks, peaks_from, 0};
    rc = krun_run(&o);
    free(key), free(command);
  }
  free(out), free(chosen), free(config_path), free(peaks_from), free(peaks);
  krun_registry_free(&reg);
  krun_settings_free(&s);
  return rc;
}
