/* `kiln report diff BASE NEW`. Each report is first folded per test id over
 * its final records (every --repeat): failed if any repeat failed, the
 * median of the body times, per kernel the median of the per-repeat
 * medians, per check the largest max abs error, per metric the median.
 * Timings compare only tests that passed in both reports, and count as
 * slower only past both the relative and the absolute threshold, so a
 * 0.01 ms kernel jittering by 50% is not a regression. Throughput metrics
 * (GB/s, TFLOP/s) count as lower past --metric-rel. A test whose device
 * throttled (its clocks records: power, thermal or hardware slowdown) in
 * either report has its slower times and lower metrics listed as
 * `throttled`, discounted rather than counted as regressions.
 */
#include "report-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void krep_diff_defaults(krep_diff_opts *o) {
  *o = (krep_diff_opts){.time_rel = 0.2, .test_abs_ms = 100.0,
                        .kernel_abs_ms = 0.05, .drift_factor = 4.0,
                        .metric_rel = 0.2};
}

/* ---- Folding a report per test id ----------------------------------------- */

typedef struct named {
  const char *name;
  double v;                 /* kernel: median ms; check: max abs; metric: median */
  double ratio;             /* check: error/tolerance of the worst repeat */
  int failed;               /* check: failed in some repeat */
  const char *unit;         /* metric */
  double *samples;          /* kernels and metrics: one per repeat */
  int nsamples;
} named;

typedef struct agg {
  const char *id;
  const krep_test *first;   /* a final record, for messages */
  int failed, flaky;
  int throttled;            /* a record's device slowed down (clocks) */
  double ms;                /* median body (or wall) time */
  named *kernels, *checks, *metrics;
  int nkernels, nchecks, nmetrics;
} agg;

typedef struct fold {
  agg *a;
  int n;
} fold;

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static double median(double *v, int n) {
  if (n == 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static agg *find(const fold *f, const char *id) {
  for (int i = 0; i < f->n; i++)
    if (strcmp(f->a[i].id, id) == 0) return &f->a[i];
  return NULL;
}

static named *slot(named **list, int *n, const char *name) {
  for (int i = 0; i < *n; i++)
    if (strcmp((*list)[i].name, name) == 0) return &(*list)[i];
  *list = kh_xrealloc(*list, (size_t)(*n + 1) * sizeof **list);
  (*list)[*n] = (named){name, NAN, 0.0, 0, NULL, NULL, 0};
  return &(*list)[(*n)++];
}

static void sample(named *s, double v) {
  if (isnan(v)) return;
  s->samples = kh_xrealloc(s->samples, (size_t)(s->nsamples + 1) * sizeof *s->samples);
  s->samples[s->nsamples++] = v;
}

/* One final record of the test into its fold. */
static void fold_test(const krep_test *t, agg *g, double *times, int *ntimes) {
  krep__view v;
  krep__view_of(t, &v);
  g->failed |= krep_outcome_failed(t->outcome);
  g->flaky |= t->outcome == KREP_FLAKY;
  g->throttled |= krep_test_throttled(t);
  double ms = isnan(v.body_ms) ? t->wall_ms : v.body_ms;
  if (!isnan(ms)) times[(*ntimes)++] = ms;
  for (int c = 0; c < v.nchecks; c++) {
    const kp_check *x = &v.checks[c];
    named *s = slot(&g->checks, &g->nchecks, x->name);
    if (isnan(s->v) || x->max_abs > s->v) s->v = x->max_abs;
    if (v.ratios[c] > s->ratio) s->ratio = v.ratios[c];
    s->failed |= !x->pass;
  }
  for (int k = 0; k < v.nkernels; k++)
    sample(slot(&g->kernels, &g->nkernels, v.kernels[k].name), v.kernels[k].median_ms);
  for (int m = 0; m < v.nmetrics; m++) {
    named *s = slot(&g->metrics, &g->nmetrics, v.metrics[m].name);
    if (!s->unit) s->unit = v.metrics[m].unit;
    sample(s, v.metrics[m].value);
  }
  krep__view_free(&v);
}

/* Names in a view point into the pool (the report outlives the fold). */
static void fold_rep(const krep_report *rep, fold *f) {
  f->a = kh_xcalloc((size_t)rep->ntests + 1, sizeof *f->a);
  f->n = 0;
  double *times = kh_xmalloc(((size_t)rep->ntests + 1) * sizeof *times);
  for (int i = 0; i < rep->ntests; i++) {
    const krep_test *t = rep->tests[i];
    if (!t->final || find(f, t->id)) continue;
    agg *g = &f->a[f->n++];
    g->id = t->id, g->first = t;
    int ntimes = 0;
    for (int j = i; j < rep->ntests; j++)
      if (rep->tests[j]->final && strcmp(rep->tests[j]->id, t->id) == 0)
        fold_test(rep->tests[j], g, times, &ntimes);
    g->ms = median(times, ntimes);
    for (int k = 0; k < g->nkernels; k++)
      g->kernels[k].v = median(g->kernels[k].samples, g->kernels[k].nsamples);
    for (int m = 0; m < g->nmetrics; m++)
      g->metrics[m].v = median(g->metrics[m].samples, g->metrics[m].nsamples);
  }
  free(times);
}

static void fold_free(fold *f) {
  for (int i = 0; i < f->n; i++) {
    for (int k = 0; k < f->a[i].nkernels; k++) free(f->a[i].kernels[k].samples);
    for (int m = 0; m < f->a[i].nmetrics; m++) free(f->a[i].metrics[m].samples);
    free(f->a[i].kernels), free(f->a[i].checks), free(f->a[i].metrics);
  }
  free(f->a);
}

/* ---- Findings -------------------------------------------------------------- */

/* X(enum, name, is a regression, summary heading) */
#define FIND_MAP(X)                                              \
  X(NEWLY_FAILING, "newly_failing", 1, "newly failing")          \
  X(NEWLY_FLAKY, "newly_flaky", 1, "newly flaky")                \
  X(SLOWER_TEST, "slower_test", 1, "slower test")                \
  X(SLOWER_KERNEL, "slower_kernel", 1, "slower kernel")          \
  X(ERROR_GROWTH, "error_growth", 1, "error growth")             \
  X(LOWER_METRIC, "lower_metric", 1, "lower metric")             \
  X(THROTTLED, "throttled", 0, "throttled")                      \
  X(FIXED, "fixed", 0, "fixed")                                  \
  X(STILL_FAILING, "still_failing", 0, "still failing")          \
  X(NEW_TEST, "new_test", 0, "new test")                         \
  X(REMOVED_TEST, "removed_test", 0, "removed test")

enum {
#define FE(e, n, r, h) F_##e,
  FIND_MAP(FE)
#undef FE
  NFIND
};

static const struct { const char *name, *heading; int regression; } kinds[] = {
#define FT(e, n, r, h) {n, h, r},
  FIND_MAP(FT)
#undef FT
};

typedef struct finding {
  int kind;
  int as;                   /* throttled: the kind it would have been */
  const char *test, *what;  /* kernel, check or metric name, or NULL */
  double base, neu;         /* ms, max abs error or metric; NAN when n/a */
  double ratio;             /* check: error/tolerance in NEW */
  const char *unit;         /* metric */
  const krep_test *rec;     /* NEW's record (or BASE's for removed) */
} finding;

typedef struct findings {
  finding *f;
  int n;
  int counts[NFIND];
} findings;

static void add(findings *fs, finding f) {
  fs->f = kh_xrealloc(fs->f, (size_t)(fs->n + 1) * sizeof *fs->f);
  fs->f[fs->n++] = f;
  fs->counts[f.kind]++;
}

/* A speed finding of a test whose device throttled in either report says
 * nothing about the code: it is listed as throttled, not a regression.
 * This gate comes after the thresholds (and whatever noise model decides
 * `slower`), so the two compose. */
static void add_speed(findings *fs, finding f, const agg *b, const agg *n) {
  if (b->throttled || n->throttled) f.as = f.kind, f.kind = F_THROTTLED;
  add(fs, f);
}

static int slower(double base, double neu, double rel, double abs_ms) {
  return !isnan(base) && !isnan(neu) && neu > base * (1 + rel) && neu - base > abs_ms;
}

static void compare_timing(findings *fs, const agg *b, const agg *n,
                           const krep_diff_opts *o) {
  if (b->failed || n->failed) return;
  int kernels = 0;
  for (int k = 0; k < n->nkernels; k++) {
    const named *nk = &n->kernels[k];
    for (int j = 0; j < b->nkernels; j++)
      if (strcmp(b->kernels[j].name, nk->name) == 0 &&
          slower(b->kernels[j].v, nk->v, o->time_rel, o->kernel_abs_ms)) {
        add_speed(fs, (finding){F_SLOWER_KERNEL, 0, n->id, nk->name, b->kernels[j].v, nk->v,
                                0, NULL, n->first}, b, n);
        kernels++;
      }
  }
  /* A slower kernel already explains its test's slower body: one finding. */
  if (!kernels && slower(b->ms, n->ms, o->time_rel, o->test_abs_ms))
    add_speed(fs, (finding){F_SLOWER_TEST, 0, n->id, NULL, b->ms, n->ms, 0, NULL, n->first},
              b, n);
}

/* A passing check whose max error grew past the factor. From an exact
 * zero, any error is growth (an exact kernel stopped being exact). */
static void compare_checks(findings *fs, const agg *b, const agg *n,
                           const krep_diff_opts *o) {
  for (int c = 0; c < n->nchecks; c++) {
    const named *nc = &n->checks[c];
    if (nc->failed || isnan(nc->v)) continue;
    for (int j = 0; j < b->nchecks; j++) {
      const named *bc = &b->checks[j];
      if (strcmp(bc->name, nc->name) != 0 || isnan(bc->v)) continue;
      if (nc->v > bc->v * o->drift_factor && nc->v > 0)
        add(fs, (finding){F_ERROR_GROWTH, 0, n->id, nc->name, bc->v, nc->v, nc->ratio,
                          NULL, n->first});
    }
  }
}

/* Throughputs, where higher is better, by their unit. */
static int throughput(const char *unit) {
  return unit && (strcmp(unit, "GB/s") == 0 || strcmp(unit, "TFLOP/s") == 0);
}

/* A throughput metric of a test that passed in both reports, lower in NEW
 * by more than the threshold. */
static void compare_metrics(findings *fs, const agg *b, const agg *n,
                            const krep_diff_opts *o) {
  if (b->failed || n->failed) return;
  for (int m = 0; m < n->nmetrics; m++) {
    const named *nm = &n->metrics[m];
    if (!throughput(nm->unit) || isnan(nm->v)) continue;
    for (int j = 0; j < b->nmetrics; j++) {
      const named *bm = &b->metrics[j];
      if (strcmp(bm->name, nm->name) != 0 || isnan(bm->v) || bm->v <= 0) continue;
      if (nm->v < bm->v * (1 - o->metric_rel))
        add_speed(fs, (finding){F_LOWER_METRIC, 0, n->id, nm->name, bm->v, nm->v, 0,
                                nm->unit, n->first}, b, n);
    }
  }
}

static void compare(findings *fs, const fold *B, const fold *N, const krep_diff_opts *o) {
  for (int i = 0; i < N->n; i++) {
    const agg *n = &N->a[i], *b = find(B, n->id);
    finding f = {0, 0, n->id, NULL, NAN, NAN, 0, NULL, n->first};
    if (!b) {
      f.kind = F_NEW_TEST;
      add(fs, f);
      if (n->failed) f.kind = F_NEWLY_FAILING, add(fs, f);
      continue;
    }
    if (n->failed) {
      f.kind = b->failed ? F_STILL_FAILING : F_NEWLY_FAILING;
      add(fs, f);
    } else if (b->failed) {
      f.kind = F_FIXED, add(fs, f);
    }
    if (n->flaky && !b->flaky) f.kind = F_NEWLY_FLAKY, add(fs, f);
    compare_timing(fs, b, n, o);
    compare_checks(fs, b, n, o);
    compare_metrics(fs, b, n, o);
  }
  for (int i = 0; i < B->n; i++)
    if (!find(N, B->a[i].id))
      add(fs, (finding){F_REMOVED_TEST, 0, B->a[i].id, NULL, NAN, NAN, 0, NULL,
                        B->a[i].first});
}

/* ---- Output ------------------------------------------------------------------ */

static const char *message(const finding *f) {
  return f->rec->message ? f->rec->message : "";
}

static void line(FILE *out, const finding *f) {
  fprintf(out, "  %-14s %s", kinds[f->kind].heading, f->test);
  int kind = f->kind == F_THROTTLED ? f->as : f->kind;
  switch (kind) {
  case F_NEWLY_FAILING: case F_STILL_FAILING: case F_NEWLY_FLAKY:
    fprintf(out, ": %s%s%s", krep_outcome_name(f->rec->outcome),
            *message(f) ? ": " : "", message(f));
    break;
  case F_SLOWER_TEST:
    fprintf(out, ": body %.3g ms -> %.3g ms (x%.2f)", f->base, f->neu, f->neu / f->base);
    break;
  case F_SLOWER_KERNEL:
    fprintf(out, " kernel %s: median %.3g ms -> %.3g ms (x%.2f)", f->what, f->base,
            f->neu, f->neu / f->base);
    break;
  case F_ERROR_GROWTH:
    fprintf(out, " check %s: max abs %.3g -> %.3g (x%.3g), %.3g of its tolerance",
            f->what, f->base, f->neu, f->base > 0 ? f->neu / f->base : INFINITY,
            f->ratio);
    break;
  case F_LOWER_METRIC:
    fprintf(out, " metric %s: %.4g -> %.4g %s (x%.2f)", f->what, f->base, f->neu,
            f->unit ? f->unit : "", f->neu / f->base);
    break;
  default: break;
  }
  if (f->kind == F_THROTTLED)
    fprintf(out, " [discounted: the device throttled (its clocks records)]");
  fputc('\n', out);
}

static void start_of(const krep_report *r, char *out, size_t n) {
  if (isnan(r->start_s)) snprintf(out, n, "?");
  else kh_iso_time(r->start_s, out, n);
}

static void summary(FILE *out, const krep_report *b, const krep_report *n,
                    const findings *fs, int regressions) {
  char bs[40], ns[40];
  start_of(b, bs, sizeof bs), start_of(n, ns, sizeof ns);
  fprintf(out, "kiln report diff\n  base %s (git %s, %s)\n  new  %s (git %s, %s)\n",
          b->path, b->git && *b->git ? b->git : "?", bs, n->path,
          n->git && *n->git ? n->git : "?", ns);
  fprintf(out, "%s: %d regression%s", regressions ? "REGRESSED" : "no regressions",
          regressions, regressions == 1 ? "" : "s");
  for (int k = 0; k < NFIND; k++)
    if (fs->counts[k]) fprintf(out, ", %d %s", fs->counts[k], kinds[k].heading);
  fputc('\n', out);
  for (int pass = 1; pass >= 0; pass--)   /* regressions first */
    for (int i = 0; i < fs->n; i++)
      if (kinds[fs->f[i].kind].regression == pass) line(out, &fs->f[i]);
}

static void knum(krep_yaml *y, const char *k, double v) {
  krep_yaml_key(y, k);
  krep_yaml_ms(y, v);
}

static void kstr(krep_yaml *y, const char *k, const char *v) {
  krep_yaml_key(y, k);
  krep_yaml_str(y, v);
}

static void yaml_finding(krep_yaml *y, const finding *f) {
  krep_yaml_map(y, 1);
  kstr(y, "kind", kinds[f->kind].name);
  krep_yaml_key(y, "regression");
  krep_yaml_bool(y, kinds[f->kind].regression);
  kstr(y, "test", f->test);
  finding as;   /* a throttled finding: its figures, as the kind it would be */
  if (f->kind == F_THROTTLED) {
    kstr(y, "discounted", kinds[f->as].name);
    as = *f;
    as.kind = f->as;
    f = &as;
  }
  if (f->kind == F_SLOWER_KERNEL) kstr(y, "kernel", f->what);
  if (f->kind == F_ERROR_GROWTH) kstr(y, "check", f->what);
  if (f->kind == F_LOWER_METRIC) {
    kstr(y, "metric", f->what);
    kstr(y, "unit", f->unit ? f->unit : "");
    knum(y, "base", f->base), knum(y, "new", f->neu), knum(y, "factor", f->neu / f->base);
  }
  if (f->kind <= F_NEWLY_FLAKY || f->kind == F_STILL_FAILING) {
    kstr(y, "outcome", krep_outcome_name(f->rec->outcome));
    kstr(y, "message", message(f));
  }
  if (f->kind == F_SLOWER_TEST || f->kind == F_SLOWER_KERNEL) {
    knum(y, "base_ms", f->base), knum(y, "new_ms", f->neu);
    knum(y, "factor", f->neu / f->base);
  }
  if (f->kind == F_ERROR_GROWTH) {
    knum(y, "base_max_abs", f->base), knum(y, "new_max_abs", f->neu);
    knum(y, "factor", f->base > 0 ? f->neu / f->base : INFINITY);
    knum(y, "new_error_to_tolerance", f->ratio);
  }
  krep_yaml_end(y);
}

static void yaml_rep(krep_yaml *y, const char *key, const krep_report *r) {
  char start[40];
  start_of(r, start, sizeof start);
  int counts[KREP_NOUTCOMES];
  krep_yaml_key(y, key);
  krep_yaml_map(y, 1);
  kstr(y, "path", r->path);
  kstr(y, "git", r->git ? r->git : "");
  kstr(y, "start", start);
  krep_yaml_key(y, "tests");
  krep_yaml_int(y, krep_count(r, counts));
  krep_yaml_end(y);
}

static int yaml(const krep_report *b, const krep_report *n, const krep_diff_opts *o,
                const findings *fs, int regressions, kh_err *err) {
  krep_yaml *y = krep_yaml_open(o->yaml_path, err);
  if (!y) return -1;
  krep_yaml_map(y, 0);
  krep_yaml_key(y, "format_version");
  krep_yaml_int(y, 1);
  yaml_rep(y, "base", b);
  yaml_rep(y, "new", n);
  krep_yaml_key(y, "thresholds");
  krep_yaml_map(y, 1);
  knum(y, "time_rel", o->time_rel), knum(y, "test_abs_ms", o->test_abs_ms);
  knum(y, "kernel_abs_ms", o->kernel_abs_ms), knum(y, "drift_factor", o->drift_factor);
  knum(y, "metric_rel", o->metric_rel);
  krep_yaml_end(y);
  krep_yaml_key(y, "regressed");
  krep_yaml_bool(y, regressions > 0);
  krep_yaml_key(y, "regressions");
  krep_yaml_int(y, regressions);
  krep_yaml_key(y, "counts");
  krep_yaml_map(y, 0);
  for (int k = 0; k < NFIND; k++) {
    krep_yaml_key(y, kinds[k].name);
    krep_yaml_int(y, fs->counts[k]);
  }
  krep_yaml_end(y);
  krep_yaml_key(y, "findings");
  krep_yaml_seq(y, fs->n == 0);
  for (int i = 0; i < fs->n; i++) yaml_finding(y, &fs->f[i]);
  krep_yaml_end(y);
  krep_yaml_end(y);
  return krep_yaml_close(y, err);
}

int krep_diff(const krep_report *base, const krep_report *neu, const krep_diff_opts *o,
              FILE *out, int *regressions, kh_err *err) {
  fold B, N;
  findings fs = {0};
  fold_rep(base, &B);
  fold_rep(neu, &N);
  compare(&fs, &B, &N, o);
  *regressions = 0;
  for (int i = 0; i < fs.n; i++) *regressions += kinds[fs.f[i].kind].regression;
  summary(out, base, neu, &fs, *regressions);
  int rc = o->yaml_path ? yaml(base, neu, o, &fs, *regressions, err) : 0;
  free(fs.f);
  fold_free(&B);
  fold_free(&N);
  return rc;
}
