/* Argument parsing for the report tools. Each tool takes a few options of
 * its own, so they are parsed here rather than in kiln.c's table of run
 * options; usage errors name the option and the value, and exit 2.
 */
#include "reportcmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "html.h"
#include "junit.h"
#include "merge.h"
#include "reader.h"
#include "base.h"

typedef struct kh__args {
  int help;                 /* -h/--help: print the tool's usage */
  const char **pos;
  int npos;
  const char *out;          /* -o/--out */
  const char **history;     /* html --history (repeatable) */
  int nhistory;
  int force;
  kh_diff_opts diff;
} kh__args;

typedef struct kh__dopt {
  const char *name;
  double *slot;
  double lo, hi;
} kh__dopt;

static int kh__number(const kh__dopt *d, const char *v) {
  if (kh_parse_double(v, d->lo, d->hi, d->slot) == 0) return 0;
  fprintf(stderr, "kiln: --%s %s: expected a number in %g..%g\n", d->name, v, d->lo, d->hi);
  return -1;
}

/* One option at argv[*i]; value either after '=' or the next word. */
static int kh__option(kh__args *a, int argc, char **argv, int *i) {
  const char *word = argv[*i];
  char *arg = argv[*i] + (argv[*i][1] == '-' ? 2 : 1);
  char *eq = strchr(arg, '=');
  size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
  if (len == 5 && strncmp(arg, "force", 5) == 0 && !eq) return a->force = 1, 0;
  if (((len == 1 && *arg == 'h') || (len == 4 && strncmp(arg, "help", 4) == 0)) && !eq)
    return a->help = 1, 0;
  const char *v = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
  const kh__dopt dopts[] = {
    {"time-rel", &a->diff.time_rel, 0, 1e6}, {"test-abs-ms", &a->diff.test_abs_ms, 0, 1e12},
    {"kernel-abs-ms", &a->diff.kernel_abs_ms, 0, 1e12}, {"drift", &a->diff.drift_factor, 1, 1e300},
    {"metric-rel", &a->diff.metric_rel, 0, 1}};
  if (!v) {
    fprintf(stderr, "kiln: %s needs a value\n", word);
    return -1;
  }
  for (size_t k = 0; k < sizeof dopts / sizeof dopts[0]; k++)
    if (strlen(dopts[k].name) == len && strncmp(arg, dopts[k].name, len) == 0)
      return kh__number(&dopts[k], v);
  if ((len == 1 && *arg == 'o') || (len == 3 && strncmp(arg, "out", 3) == 0)) return a->out = v, 0;
  if (len == 4 && strncmp(arg, "yaml", 4) == 0) return a->diff.yaml_path = v, 0;
  if (len == 7 && strncmp(arg, "history", 7) == 0) {
    a->history = kh_xrealloc(a->history, (size_t)(a->nhistory + 1) * sizeof *a->history);
    a->history[a->nhistory++] = v;
    return 0;
  }
  fprintf(stderr, "kiln: report %s: unknown option '%s'\n", argv[0], word);
  return -1;
}

static int kh__parse(kh__args *a, int argc, char **argv) {
  memset(a, 0, sizeof *a);
  kh_diff_opts_default(&a->diff);
  a->pos = kh_xcalloc((size_t)argc + 1, sizeof *a->pos);
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-' && argv[i][1]) {
      if (kh__option(a, argc, argv, &i) != 0) return -1;
    } else {
      a->pos[a->npos++] = argv[i];
    }
  }
  return 0;
}

/* Loads n reports; on failure prints the error and frees what loaded. */
static kh_rep *kh__load(const char **paths, int n) {
  kh_rep *reps = kh_xcalloc((size_t)n + 1, sizeof *reps);
  for (int i = 0; i < n; i++) {
    kh_err err;
    if (kh_rep_load(paths[i], &reps[i], &err) != 0) {
      fprintf(stderr, "kiln: %s\n", err.msg);
      for (int j = 0; j <= i; j++) kh_rep_free(&reps[j]);
      free(reps);
      return NULL;
    }
  }
  return reps;
}

static void kh__free_reps(kh_rep *reps, int n) {
  for (int i = 0; i < n && reps; i++) kh_rep_free(&reps[i]);
  free(reps);
}

/* ---- The tools ---------------------------------------------------------- */

static const struct {
  const char *name;
  const char *usage;
} kh__usages[] = {
    {"junit", "kiln report junit REPORT|RUNDIR [-o FILE]\n"
              "  JUnit XML (Jenkins/Surefire) of a report; -o - or none: stdout"},
    {"diff", "kiln report diff BASE NEW [--yaml FILE] [--time-rel F] "
             "[--test-abs-ms MS]\n                [--kernel-abs-ms MS] [--drift F] "
             "[--metric-rel F]\n"
             "  what regressed from BASE to NEW; exit 1 when anything did"},
    {"merge", "kiln report merge REPORT... -o FILE [--force]\n"
              "  one run report from shard reports (--force: across revisions)"},
    {"html", "kiln report html REPORT|RUNDIR [-o FILE] [--history REPORT]...\n"
             "  a self-contained HTML page; --history adds earlier nights' trends"},
};

static void kh__usage(FILE *f, const char *tool) {
  for (size_t i = 0; i < sizeof kh__usages / sizeof kh__usages[0]; i++)
    if (strcmp(tool, kh__usages[i].name) == 0)
      fprintf(f, "%susage: %s\n", f == stderr ? "kiln: " : "", kh__usages[i].usage);
}

static int kh__junit(kh__args *a) {
  if (a->npos != 1) {
    kh__usage(stderr, "junit");
    return KH_EXIT_USAGE;
  }
  kh_rep *r = kh__load(a->pos, 1);
  if (!r) return KH_EXIT_USAGE;
  kh_err err;
  int rc = kh_junit_write(r, a->out ? a->out : "-", &err);
  if (rc) fprintf(stderr, "kiln: %s\n", err.msg);
  kh__free_reps(r, 1);
  return rc ? KH_EXIT_INFRA : KH_EXIT_OK;
}

static int kh__diff(kh__args *a) {
  if (a->npos != 2) {
    kh__usage(stderr, "diff");
    return KH_EXIT_USAGE;
  }
  kh_rep *r = kh__load(a->pos, 2);
  if (!r) return KH_EXIT_USAGE;
  kh_err err;
  int regressions = 0;
  int rc = kh_diff(&r[0], &r[1], &a->diff, stdout, &regressions, &err);
  if (rc) fprintf(stderr, "kiln: %s\n", err.msg);
  kh__free_reps(r, 2);
  return rc ? KH_EXIT_INFRA : regressions ? KH_EXIT_FAIL : KH_EXIT_OK;
}

static int kh__merge(kh__args *a) {
  if (a->npos < 1) {
    kh__usage(stderr, "merge");
    return KH_EXIT_USAGE;
  }
  kh_rep *r = kh__load(a->pos, a->npos);
  if (!r) return KH_EXIT_USAGE;
  kh_err err;
  kh_merge_opts o = {a->force, a->out ? a->out : "-"};
  int rc = kh_merge(r, a->npos, &o, stderr, &err);
  if (rc) fprintf(stderr, "kiln: report merge: %s\n", err.msg);
  else {
    int runs = 0;
    for (int i = 0; i < a->npos; i++) runs += r[i].ntests;
    fprintf(stderr, "kiln: merged %d reports, %d test runs, into %s\n", a->npos, runs, o.out_path);
  }
  kh__free_reps(r, a->npos);
  return rc ? KH_EXIT_USAGE : KH_EXIT_OK;
}

static int kh__html(kh__args *a) {
  if (a->npos != 1) {
    kh__usage(stderr, "html");
    return KH_EXIT_USAGE;
  }
  kh_rep *r = kh__load(a->pos, 1);
  if (!r) return KH_EXIT_USAGE;
  kh_rep *h = a->nhistory ? kh__load(a->history, a->nhistory) : NULL;
  if (a->nhistory && !h) {
    kh__free_reps(r, 1);
    return KH_EXIT_USAGE;
  }
  char *out = a->out ? kh_strdup(a->out) : NULL;
  if (!out) {  /* beside the report */
    const char *slash = strrchr(r->path, '/');
    out = slash ? kh_asprintf("%.*s/report.html", (int)(slash - r->path), r->path)
                : kh_strdup("report.html");
  }
  kh_err err;
  int rc = kh_html_write(r, h, a->nhistory, out, &err);
  if (rc) fprintf(stderr, "kiln: %s\n", err.msg);
  else if (strcmp(out, "-") != 0) fprintf(stderr, "kiln: wrote %s\n", out);
  free(out);
  kh__free_reps(h, a->nhistory);
  kh__free_reps(r, 1);
  return rc ? KH_EXIT_INFRA : KH_EXIT_OK;
}

static const struct {
  const char *name;
  int (*fn)(kh__args *);
} kh__tools[] = {{"junit", kh__junit}, {"diff", kh__diff}, {"merge", kh__merge},
                 {"html", kh__html}};

int kh_rtool_handles(const char *word) {
  for (size_t i = 0; i < sizeof kh__tools / sizeof kh__tools[0]; i++)
    if (strcmp(word, kh__tools[i].name) == 0) return 1;
  return 0;
}

int kh_rtool_main(int argc, char **argv) {
  kh__args a;
  int rc = KH_EXIT_USAGE;
  if (kh__parse(&a, argc, argv) == 0) {
    if (a.help) {
      kh__usage(stdout, argv[0]);
      rc = KH_EXIT_OK;
    } else {
      for (size_t i = 0; i < sizeof kh__tools / sizeof kh__tools[0]; i++)
        if (strcmp(argv[0], kh__tools[i].name) == 0) rc = kh__tools[i].fn(&a);
    }
  }
  free(a.pos);
  free(a.history);
  return rc;
}

int kh_rtool_junit_after_run(const char *run_dir, const char *path) {
  kh_rep r;
  kh_err err;
  int rc = kh_rep_load(run_dir, &r, &err);
  if (rc == 0) rc = kh_junit_write(&r, path, &err);
  if (rc) fprintf(stderr, "kiln: JUnit %s: %s\n", path, err.msg);
  kh_rep_free(&r);
  return rc;
}
