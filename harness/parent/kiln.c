/* The kiln command: `kiln run`, `kiln list`, `kiln devices`, `kiln report`,
 * `kiln bench` (bench.c, which parses its own options).
 * This file parses the command line (one option table drives parsing and
 * --help), merges flags over the config, and hands off to run.c, registry.c,
 * tokens.c and report.c. The parent links no engine and no GPU runtime.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "kiln-config.h"
#include "protocol.h"
#include "registry.h"
#include "report.h"
#include "reportcmd.h"
#include "run.h"
#include "settings.h"
#include "shard.h"
#include "tokens.h"
#include "base.h"

/* ---- Options ------------------------------------------------------------ */

enum {
  KH_O_SETTING, KH_O_CONFIG, KH_O_REPORT, KH_O_OUT, KH_O_SPEC, KH_O_TOKEN,
  KH_O_TOL, KH_O_RUNNER_DIR, KH_O_VERBOSE, KH_O_HELP, KH_O_VERSION,
  KH_O_JUNIT, KH_O_SHARD, KH_O_SHARD_DUR
};

typedef struct kh__opt {
  const char *name;
  char short_name;
  int has_arg;
  int kind;
  const char *setting;      /* for KH_O_SETTING */
  const char *arg;          /* for --help */
  const char *help;
} kh__opt;

static const kh__opt kh__opts[] = {
  {"jobs", 'j', 1, KH_O_SETTING, "jobs", "N", "children at once (default: number of CPUs)"},
  {"backend", 0, 1, KH_O_SETTING, "backend", "B", "auto|host|hip|cuda (auto: a GPU backend whose runner finds a device, else host)"},
  {"config", 'c', 1, KH_O_CONFIG, NULL, "FILE", "YAML run profile: a path or a name in configs/ (quick, nightly, ...)"},
  {"report", 0, 1, KH_O_REPORT, NULL, "FILE", "also write the YAML report to FILE"},
  {"out", 'o', 1, KH_O_OUT, NULL, "DIR", "run folder (default reports/runs/<UTC time>-<backend>)"},
  {"timeout", 't', 1, KH_O_SETTING, "timeout", "S", "seconds per test unless the test sets its own (default 120)"},
  {"grace", 0, 1, KH_O_SETTING, "grace", "S", "seconds between SIGTERM and SIGKILL on timeout (default 2)"},
  {"retries", 0, 1, KH_O_SETTING, "retries", "N", "run a failed test up to N more times; a later pass is `flaky`"},
  {"repeat", 0, 1, KH_O_SETTING, "repeat", "N", "run every selected test N times"},
  {"isolation", 0, 1, KH_O_SETTING, "isolation", "M", "process (one child per test) or none (one shared process)"},
  {"wrap", 0, 1, KH_O_SETTING, "wrap", "CMD", "run each child under CMD (valgrind, compute-sanitizer, ...)"},
  {"warm", 0, 1, KH_O_SETTING, "warm", "N", "warm children per device, started before their test (0: off; default auto: 1 per slot)"},
  {"poison", 0, 0, KH_O_SETTING, "poison", NULL, "fill new device allocations with NaN bytes"},
  {"seed", 0, 1, KH_O_SETTING, "seed", "N", "run seed passed to every child (default: chosen per child)"},
  {"cap", 0, 1, KH_O_SETTING, "cap", "F", "device allocation cap as a fraction of free memory"},
  {"slots", 0, 1, KH_O_SETTING, "slots", "N", "slots per device (default 2 on a GPU, --jobs on host)"},
  {"resource-spec", 0, 1, KH_O_SPEC, NULL, "FILE", "CTest resource-spec JSON: the devices and their slots"},
  {"token-key", 0, 1, KH_O_TOKEN, NULL, "PATH", "device-token key path (default /tmp/kiln-tokens-<backend>; env KILN_TOKEN_KEY)"},
  {"leaks", 0, 1, KH_O_SETTING, "leaks", "P", "fail (a leak fails the test) or warn"},
  {"tolerance", 0, 1, KH_O_TOL, NULL, "G=A:R", "atol A, rtol R for checks matching glob G (repeatable)"},
  {"junit", 0, 1, KH_O_JUNIT, NULL, "FILE", "also write JUnit XML to FILE (default $XML_OUTPUT_FILE when set)"},
  {"shard", 0, 1, KH_O_SHARD, NULL, "K/N", "run shard K of N (1-based; else Bazel/Slurm array env)"},
  {"shard-durations", 0, 1, KH_O_SHARD_DUR, NULL, "REPORT", "balance shards by this report's times"},
  {"runner-dir", 0, 1, KH_O_RUNNER_DIR, NULL, "DIR", "where kiln-runner-<backend> lives (env KILN_RUNNER_DIR)"},
  {"verbose", 'v', 0, KH_O_VERBOSE, NULL, NULL, "more detail: child command lines, every test's message"},
  {"help", 'h', 0, KH_O_HELP, NULL, NULL, "this text"},
  {"version", 0, 0, KH_O_VERSION, NULL, NULL, "kiln's version"},
};
#define KH__NOPTS (sizeof kh__opts / sizeof kh__opts[0])

typedef struct kh__cli {
  kh_settings flags;        /* what the command line set */
  char *config, *report, *out, *spec, *token_key, *runner_dir;
  char *junit, *shard, *shard_durations;
  int verbose, help, version;
  char **pos;               /* command, its words, selectors */
  int npos;
} kh__cli;

static void kh__usage(FILE *f) {
  fprintf(f,
    "usage: kiln run [OPTIONS] [--] [SELECTOR...]\n"
    "       kiln list [OPTIONS] [SELECTOR...]\n"
    "       kiln devices [OPTIONS]\n"
    "       kiln report show FILE|RUNDIR\n"
    "       kiln report rebuild RUNDIR [--report FILE]\n"
    "       kiln report junit REPORT [-o FILE]\n"
    "       kiln report diff BASE NEW [--yaml FILE] [--time-rel F] [--test-abs-ms MS]\n"
    "                        [--kernel-abs-ms MS] [--drift F] [--metric-rel F]\n"
    "       kiln report merge REPORT... [-o FILE] [--force]\n"
    "       kiln report html REPORT [-o FILE] [--history REPORT]...\n"
    "       kiln bench [--backend B] [--tests N] [--concurrency LIST] [--out DIR]\n"
    "                  [--skip ceiling,kiln,none,host] (kiln bench --help)\n"
    "\n"
    "Runs every selected GPU test in its own child process (a fresh engine\n"
    "context each), scheduled onto devices through host-wide device tokens,\n"
    "and writes a YAML report into the run folder.\n"
    "\n"
    "Selectors: SUITE, SUITE/TEST, globs (softmax/sizes_*), @TAG; a leading\n"
    "'-' excludes (-@slow, -softmax/causal). Tests tagged `fault`, `bench` or\n"
    "`perf` run only when named (@fault, @perf, their suite or id); on the host\n"
    "backend, tests tagged `slow` (GPU-sized) run only through @slow or their\n"
    "id. No selector: every other test.\n"
    "\n");
  for (size_t i = 0; i < KH__NOPTS; i++) {
    const kh__opt *o = &kh__opts[i];
    char left[64];
    /* Long-only options line up under the long names of the others. */
    if (o->short_name)
      snprintf(left, sizeof left, "-%c, --%s%s%s", o->short_name, o->name,
               o->arg ? " " : "", o->arg ? o->arg : "");
    else
      snprintf(left, sizeof left, "    --%s%s%s", o->name, o->arg ? " " : "",
               o->arg ? o->arg : "");
    fprintf(f, "  %-26s %s\n", left, o->help);
  }
  fprintf(f,
    "\nExit status: 0 all passed (skips and flaky allowed), 1 a test did not\n"
    "pass, 2 usage or config error, 3 infrastructure error, 130 interrupted.\n"
    "Flags override the config. See docs/harness.md.\n");
}

static const kh__opt *kh__opt_long(const char *name, size_t len) {
  for (size_t i = 0; i < KH__NOPTS; i++)
    if (strlen(kh__opts[i].name) == len && strncmp(kh__opts[i].name, name, len) == 0)
      return &kh__opts[i];
  return NULL;
}

static const kh__opt *kh__opt_short(char c) {
  for (size_t i = 0; i < KH__NOPTS; i++)
    if (kh__opts[i].short_name == c) return &kh__opts[i];
  return NULL;
}

static int kh__apply(kh__cli *c, const kh__opt *o, const char *val) {
  kh_err err;
  char **slot[] = {[KH_O_CONFIG] = &c->config, [KH_O_REPORT] = &c->report,
                   [KH_O_OUT] = &c->out, [KH_O_SPEC] = &c->spec,
                   [KH_O_TOKEN] = &c->token_key, [KH_O_RUNNER_DIR] = &c->runner_dir,
                   [KH_O_JUNIT] = &c->junit, [KH_O_SHARD] = &c->shard,
                   [KH_O_SHARD_DUR] = &c->shard_durations};
  switch (o->kind) {
  case KH_O_SETTING:
    if (kh_setting_set(&c->flags, o->setting, val ? val : "true", &err) != 0) {
      fprintf(stderr, "kiln: --%s: %s\n", o->name, err.msg);
      return -1;
    }
    return 0;
  case KH_O_TOL:
    if (kh_setting_add_tolerance(&c->flags, val, &err) != 0) {
      fprintf(stderr, "kiln: --tolerance: %s\n", err.msg);
      return -1;
    }
    return 0;
  case KH_O_VERBOSE: c->verbose = 1; return 0;
  case KH_O_HELP: c->help = 1; return 0;
  case KH_O_VERSION: c->version = 1; return 0;
  default:
    free(*slot[o->kind]);
    *slot[o->kind] = kh_strdup(val);
    return 0;
  }
}

static void kh__add_pos(kh__cli *c, const char *a) {
  c->pos = kh_xrealloc(c->pos, (size_t)(c->npos + 1) * sizeof *c->pos);
  c->pos[c->npos++] = (char *)a;
}

/* One argument at argv[*i]. Anything starting with '-' that is not an
 * option we know (-@slow, -suite/test) is an exclusion selector. */
static int kh__parse_arg(kh__cli *c, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  const kh__opt *o = NULL;
  const char *val = NULL;
  if (strncmp(a, "--", 2) == 0) {
    const char *eq = strchr(a + 2, '=');
    o = kh__opt_long(a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
    if (!o) {
      fprintf(stderr, "kiln: unknown option '%s' (see kiln --help)\n", a);
      return -1;
    }
    if (eq && !o->has_arg) {
      fprintf(stderr, "kiln: --%s takes no value\n", o->name);
      return -1;
    }
    val = eq ? eq + 1 : NULL;
  } else if (a[0] == '-' && a[1] && (o = kh__opt_short(a[1])) != NULL &&
             (a[2] == '\0' || o->has_arg)) {
    val = a[2] ? a + 2 : NULL;
  } else {
    kh__add_pos(c, a);
    return 0;
  }
  if (o->has_arg && !val) {
    if (*i + 1 >= argc) {
      fprintf(stderr, "kiln: --%s needs a value (%s)\n", o->name, o->arg);
      return -1;
    }
    val = argv[++*i];
  }
  return kh__apply(c, o, val);
}

static int kh__parse_cli(kh__cli *c, int argc, char **argv) {
  memset(c, 0, sizeof *c);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0) {
      while (++i < argc) kh__add_pos(c, argv[i]);
      break;
    }
    if (kh__parse_arg(c, argc, argv, &i) != 0) return -1;
  }
  return 0;
}

static void kh__cli_free(kh__cli *c) {
  kh_settings_free(&c->flags);
  free(c->config), free(c->report), free(c->out), free(c->spec);
  free(c->token_key), free(c->runner_dir), free(c->pos);
  free(c->junit), free(c->shard), free(c->shard_durations);
}

/* ---- Settings: defaults, config, flags --------------------------------------- */

static int kh__settings(kh__cli *c, kh_settings *s, char **config_path) {
  kh_err err;
  kh_settings_init(s);
  *config_path = NULL;
  if (c->config && kh_config_load(c->config, s, config_path, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    return -1;
  }
  if (c->spec) {
    char *buf;
    size_t len;
    if (kh_read_file(c->spec, 1 << 20, &buf, &len) != 0) {
      fprintf(stderr, "kiln: --resource-spec: %s: %s\n", c->spec, strerror(errno));
      return -1;
    }
    int rc = kh_resource_spec_parse(buf, len, c->spec, &c->flags, &err);
    free(buf);
    if (rc != 0) {
      fprintf(stderr, "kiln: %s\n", err.msg);
      return -1;
    }
  }
  kh_settings_overlay(s, &c->flags);
  return 0;
}

/* Selectors from the command line (after the command word), else from the
 * config's selection. */
static void kh__selectors(kh__cli *c, const kh_settings *s, int first,
                          char ***sel, int *nsel) {
  if (c->npos > first) {
    *sel = c->pos + first;
    *nsel = c->npos - first;
  } else {
    *sel = s->selection;
    *nsel = s->nselection;
  }
}

static char *kh__command_line(int argc, char **argv) {
  kh_buf b = {0};
  for (int i = 0; i < argc; i++) kh_buf_addf(&b, "%s%s", i ? " " : "", argv[i]);
  return b.data;
}

/* --shard K/N or the Bazel/Slurm environment narrows the selection. */
static int kh__shard(kh__cli *c, kh_registry *reg, unsigned char *chosen, kh_shard *sh) {
  kh_err err;
  if (kh_shard_resolve(c->shard, sh, &err) != 0 ||
      kh_shard_apply(sh, reg, chosen, c->shard_durations, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    return KH_EXIT_USAGE;
  }
  if (sh->count)
    fprintf(stderr, "kiln: shard %d/%d (%s, from %s): %d of %d selected tests\n", sh->index,
           sh->count, sh->method, sh->source, sh->selected, sh->total);
  kh_shard_bazel_ack();
  return 0;
}

/* ---- kiln list ------------------------------------------------------------------ */

static char *kh__any_runner(const kh__cli *c, const kh_settings *s) {
  kh_err err;
  if (s->backend != KH_BACKEND_AUTO) {
    char *r = kh_runner_find(kh_backend_names[s->backend], c->runner_dir, &err);
    if (!r) fprintf(stderr, "kiln: %s\n", err.msg);
    return r;
  }
  static const int order[] = {KH_BACKEND_HOST, KH_BACKEND_CUDA, KH_BACKEND_HIP};
  for (size_t i = 0; i < 3; i++) {
    char *r = kh_runner_find(kh_backend_names[order[i]], c->runner_dir, &err);
    if (r) return r;
  }
  fprintf(stderr, "kiln: no runner found for any backend: %s\n", err.msg);
  return NULL;
}

static int kh__load_selected(const char *runner, char **sel, int nsel,
                             int backend, kh_registry *reg,
                             unsigned char **chosen) {
  kh_err err;
  if (kh_registry_load(runner, reg, &err) != 0) {
    fprintf(stderr, "kiln: cannot list tests: %s\n", err.msg);
    return KH_EXIT_INFRA;
  }
  *chosen = kh_xcalloc((size_t)reg->n + 1, 1);
  int held = 0;
  if (kh_select(reg, sel, nsel, backend == KH_BACKEND_HOST, *chosen, &held,
                &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    return KH_EXIT_USAGE;
  }
  if (held)
    fprintf(stderr, "kiln: %d GPU-sized test%s (tag slow) left out on the "
                    "host backend; add @slow to run %s\n",
            held, held == 1 ? "" : "s", held == 1 ? "it" : "them");
  return 0;
}

static int kh__cmd_list(kh__cli *c, kh_settings *s) {
  char *runner = kh__any_runner(c, s);
  if (!runner) return KH_EXIT_INFRA;
  char **sel;
  int nsel;
  kh__selectors(c, s, 1, &sel, &nsel);
  kh_registry reg;
  unsigned char *chosen = NULL;
  int rc = kh__load_selected(runner, sel, nsel, s->backend, &reg, &chosen);
  kh_shard shard;
  if (rc == 0) rc = kh__shard(c, &reg, chosen, &shard);
  for (int i = 0; rc == 0 && i < reg.n; i++) {
    const kh_test *t = &reg.tests[i];
    if (!chosen[i]) continue;
    printf("%-44s [%s] slots=%d%s", t->id, t->tags, t->slots,
           t->needs_gpu ? "" : " host-only");
    if (t->timeout_s) printf(" timeout=%ds", t->timeout_s);
    if (c->verbose) printf("  %s:%d", t->file, t->line);
    printf("\n");
  }
  free(chosen);
  kh_registry_free(&reg);
  free(runner);
  return rc;
}

/* ---- kiln devices --------------------------------------------------------------- */

static char *kh__token_key(const kh__cli *c, int backend) {
  if (c->token_key) return kh_strdup(c->token_key);
  const char *env = getenv("KILN_TOKEN_KEY");
  if (env && *env) return kh_strdup(env);
  return kh_tokens_default_path(kh_backend_names[backend]);
}

static void kh__print_holder(pid_t pid, const char *what, void *arg) {
  (void)arg;
  printf("    held by pid %ld: %s\n", (long)pid, what);
}

static int kh__cmd_devices(kh__cli *c, kh_settings *s) {
  kh_backend_info bi;
  kh_err err;
  if (kh_backend_resolve(s->backend, c->runner_dir, &bi, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    return KH_EXIT_INFRA;
  }
  printf("backend %s (runner %s)\n", kh_backend_names[bi.backend], bi.runner);
  if (bi.ndevices == 0) {
    printf("no devices: %s\n", *bi.error ? bi.error : "none found");
    return KH_EXIT_OK;
  }
  char *key = kh__token_key(c, bi.backend);
  kh_tokens tok;
  int caps[KH_MAX_DEVICES];
  kh_device_caps(s, &bi, caps);
  int rc = kh_tokens_open(&tok, key, &err);
  printf("token key %s%s%s\n", key, rc ? ": " : "", rc ? err.msg : "");
  for (int d = 0; d < bi.ndevices; d++) {
    const kh_device *dv = &bi.dev[d];
    printf("device %d (physical %d%s%s): %s, %s, %lld of %lld MiB free\n",
           dv->index, dv->physical, *dv->visible ? ", visible as " : "",
           dv->visible, dv->name, dv->arch, dv->free_bytes >> 20,
           dv->total_bytes >> 20);
    if (rc != 0) continue;
    if (caps[d] > 0) kh_tokens_ensure(&tok, dv->physical, caps[d], &err);
    printf("  slots %d total, %d free\n", kh_tokens_capacity(&tok, dv->physical),
           kh_tokens_free(&tok, dv->physical));
    kh_tokens_holders(&tok, dv->physical, kh__print_holder, NULL);
  }
  free(key);
  return rc ? KH_EXIT_INFRA : KH_EXIT_OK;
}

/* ---- kiln run --------------------------------------------------------------------- */

/* reports/runs/<UTC time>-<backend>, made unique with a suffix. */
static char *kh__default_out(int backend) {
  char stamp[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  kh_mkdir_p("reports/runs", 0755);
  for (int n = 1; n < 1000; n++) {
    char *p = n == 1 ? kh_asprintf("reports/runs/%s-%s", stamp, kh_backend_names[backend])
                     : kh_asprintf("reports/runs/%s-%s-%d", stamp,
                                    kh_backend_names[backend], n);
    if (mkdir(p, 0755) == 0) return p;
    free(p);
  }
  return NULL;
}

/* JUnit for the finished run: --junit, else Bazel's XML_OUTPUT_FILE. A
 * JUnit file that cannot be written is an infrastructure error. */
static int kh__after_run(kh__cli *c, const char *out, int rc) {
  const char *junit = c->junit ? c->junit : getenv("XML_OUTPUT_FILE");
  if (!junit || !*junit || rc == KH_EXIT_USAGE) return rc;
  if (kh_rtool_junit_after_run(out, junit) != 0) return rc ? rc : KH_EXIT_INFRA;
  return rc;
}

static int kh__cmd_run(kh__cli *c, kh_settings *s, const char *config_path,
                       char *command) {
  kh_backend_info bi;
  kh_err err;
  if (kh_backend_resolve(s->backend, c->runner_dir, &bi, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    return KH_EXIT_INFRA;
  }
  char **sel;
  int nsel;
  kh__selectors(c, s, 1, &sel, &nsel);
  kh_registry reg;
  unsigned char *chosen = NULL;
  int rc = kh__load_selected(bi.runner, sel, nsel, bi.backend, &reg, &chosen);
  kh_shard shard;
  if (rc == 0) rc = kh__shard(c, &reg, chosen, &shard);
  char *out = NULL, *key = NULL;
  if (rc == 0) {
    out = c->out ? kh_strdup(c->out) : kh__default_out(bi.backend);
    if (!out) {
      fprintf(stderr, "kiln: cannot create a run folder under reports/runs\n");
      rc = KH_EXIT_INFRA;
    }
  }
  if (rc == 0) {
    key = kh__token_key(c, bi.backend);
    kh_run_opts o = {s, &reg, chosen, &bi, key, out, c->report, config_path,
                     command, sel, nsel, c->verbose, &shard};
    rc = kh_run(&o);
    rc = kh__after_run(c, out, rc);
  }
  free(out), free(key), free(chosen);
  kh_registry_free(&reg);
  return rc;
}

/* ---- kiln report ----------------------------------------------------------------- */

static int kh__cmd_report(kh__cli *c) {
  kh_err err;
  if (c->npos != 3 || (strcmp(c->pos[1], "show") != 0 &&
                       strcmp(c->pos[1], "rebuild") != 0)) {
    fprintf(stderr, "kiln: usage: kiln report show FILE|RUNDIR\n"
                    "                   kiln report rebuild RUNDIR [--report FILE]\n"
                    "                   kiln report junit|diff|merge|html ... "
                    "(--help for each)\n");
    return KH_EXIT_USAGE;
  }
  if (strcmp(c->pos[1], "show") == 0) {
    if (kh_report_show(c->pos[2], stdout, &err) != 0) {
      fprintf(stderr, "kiln: %s\n", err.msg);
      return KH_EXIT_USAGE;
    }
    return KH_EXIT_OK;
  }
  kh_report rep;
  char *journal = kh_asprintf("%s/journal", c->pos[2]);
  char *path = kh_asprintf("%s/report.yaml", c->pos[2]);
  int rc = KH_EXIT_OK;
  if (kh_journal_read(journal, &rep, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    rc = KH_EXIT_USAGE;
  } else {
    rep.rebuilt = 1;
    if (kh_report_write(&rep, path, &err) != 0 ||
        (c->report && kh_report_write(&rep, c->report, &err) != 0)) {
      fprintf(stderr, "kiln: %s\n", err.msg);
      rc = KH_EXIT_INFRA;
    } else {
      printf("rebuilt %s from %s: %d test runs%s\n", path, journal, rep.nresults,
             rep.finished ? "" : " (the run did not finish: interrupted)");
    }
  }
  kh_report_free(&rep);
  free(journal), free(path);
  return rc;
}

/* ---- main ----------------------------------------------------------------------------- */

int main(int argc, char **argv) {
  /* The report tools (junit, diff, merge, html) parse their own options. */
  if (argc > 2 && strcmp(argv[1], "report") == 0 && kh_rtool_handles(argv[2]))
    return kh_rtool_main(argc - 2, argv + 2);
  if (argc > 1 && strcmp(argv[1], "bench") == 0)
    return kh_bench_main(argc - 1, argv + 1);
  kh__cli c;
  if (kh__parse_cli(&c, argc, argv) != 0) {
    kh__cli_free(&c);
    return KH_EXIT_USAGE;
  }
  if (c.help || c.version || c.npos == 0) {
    if (c.version)
      printf("kiln %s (report format %d, runner protocol %d)\n", KILN_VERSION,
             KH_REPORT_FORMAT, KP_VERSION);
    else kh__usage(c.npos == 0 && !c.help ? stderr : stdout);
    int rc = c.npos == 0 && !c.help && !c.version ? KH_EXIT_USAGE : KH_EXIT_OK;
    kh__cli_free(&c);
    return rc;
  }
  const char *cmd = c.pos[0];
  if (strcmp(cmd, "report") == 0) {
    int rc = kh__cmd_report(&c);
    kh__cli_free(&c);
    return rc;
  }
  kh_settings s;
  char *config_path = NULL;
  int rc;
  if (kh__settings(&c, &s, &config_path) != 0) rc = KH_EXIT_USAGE;
  else if (strcmp(cmd, "run") == 0) {
    char *command = kh__command_line(argc, argv);
    rc = kh__cmd_run(&c, &s, config_path, command);
    free(command);
  } else if (strcmp(cmd, "list") == 0) rc = kh__cmd_list(&c, &s);
  else if (strcmp(cmd, "devices") == 0) rc = kh__cmd_devices(&c, &s);
  else {
    fprintf(stderr, "kiln: unknown command '%s' (run, list, devices, report, bench)\n", cmd);
    rc = KH_EXIT_USAGE;
  }
  kh_settings_free(&s);
  free(config_path);
  kh__cli_free(&c);
  return rc;
}
