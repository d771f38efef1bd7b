/* The report diff. Each report is first folded per test id over its final
 * records (every --repeat): failed if any repeat failed, the median of the
 * body times, per kernel the median of the per-repeat medians, per check
 * the largest max abs error. Timings compare only tests that passed in both
 * reports, and count as slower only past both the relative and the absolute
 * threshold, so a 0.01 ms kernel jittering by 50% is not a regression.
 * Throughput metrics (GB/s, TFLOP/s) fold to their median over repeats and
 * count as lower past --metric-rel.
 */
#include "diff.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "result.h"

void kh_diff_opts_default(kh_diff_opts *o) {
  *o = (kh_diff_opts){.time_rel = 0.2, .test_abs_ms = 100.0,
                      .kernel_abs_ms = 0.05, .drift_factor = 4.0,
                      .metric_rel = 0.2};
}

/* ---- Folding a report per test id --------------------------------------- */

typedef struct kh__named {
  const char *name;
  double v;                 /* kernel: median ms; check: max abs; metric:
                               median value */
  double ratio;             /* check: error/tolerance of the worst repeat */
  int failed;               /* check: failed in some repeat */
  const char *unit;         /* metric */
} kh__named;

typedef struct kh__agg {
  const char *id;
  const kh_rtest *first;    /* a final record, for messages */
  int failed, flaky;
  double ms;                /* median body (or wall) time */
  kh__named *kernels, *checks, *metrics;
  int nkernels, nchecks, nmetrics;
} kh__agg;

typedef struct kh__fold {
  kh__agg *a;
  int n;
} kh__fold;

static int kh__cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

static double kh__median(double *v, int n) {
  if (n == 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, kh__cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static kh__agg *kh__find(const kh__fold *f, const char *id) {
  for (int i = 0; i < f->n; i++)
    if (strcmp(f->a[i].id, id) == 0) return &f->a[i];
  return NULL;
}

static kh__named *kh__slot(kh__named **list, int *n, const char *name) {
  for (int i = 0; i < *n; i++)
    if (strcmp((*list)[i].name, name) == 0) return &(*list)[i];
  *list = kh_xrealloc(*list, (size_t)(*n + 1) * sizeof **list);
  (*list)[*n] = (kh__named){name, NAN, 0.0, 0, NULL};
  return &(*list)[(*n)++];
}

/* Kernel medians across repeats: collect, then take the median. */
static void kh__fold_kernels(const kh_rep *rep, kh__agg *g) {
  double *v = kh_xmalloc(((size_t)rep->ntests + 1) * sizeof *v);
  for (int i = 0; i < rep->ntests; i++) {
    const kh_rtest *t = &rep->tests[i];
    if (!t->final || strcmp(t->id, g->id) != 0) continue;
    for (int k = 0; k < t->nkernels; k++) {
      kh__named *s = kh__slot(&g->kernels, &g->nkernels, t->kernels[k].name);
      if (!isnan(s->v)) continue;  /* done on its first sight */
      int n = 0;
      for (int j = 0; j < rep->ntests; j++) {
        const kh_rtest *u = &rep->tests[j];
        if (!u->final || strcmp(u->id, g->id) != 0) continue;
        for (int m = 0; m < u->nkernels; m++)
          if (strcmp(u->kernels[m].name, s->name) == 0 && !isnan(u->kernels[m].median_ms))
            v[n++] = u->kernels[m].median_ms;
      }
      s->v = kh__median(v, n);
    }
  }
  free(v);
}

/* Metric values across repeats: the median, as for kernels. */
static void kh__fold_metrics(const kh_rep *rep, kh__agg *g) {
  double *v = NULL;
  size_t cap = 0;
  for (int i = 0; i < rep->ntests; i++) {
    const kh_rtest *t = &rep->tests[i];
    if (!t->final || strcmp(t->id, g->id) != 0) continue;
    for (int k = 0; k < t->nmetrics; k++) {
      kh__named *s = kh__slot(&g->metrics, &g->nmetrics, t->metrics[k].name);
      if (s->unit) continue;  /* done on its first sight */
      s->unit = t->metrics[k].unit;
      size_t n = 0;
      for (int j = 0; j < rep->ntests; j++) {
        const kh_rtest *u = &rep->tests[j];
        if (!u->final || strcmp(u->id, g->id) != 0) continue;
        for (int m = 0; m < u->nmetrics; m++) {
          if (strcmp(u->metrics[m].name, s->name) != 0 || isnan(u->metrics[m].value))
            continue;
          if (n == cap) {
            cap = cap ? 2 * cap : 16;
            v = kh_xrealloc(v, cap * sizeof *v);
          }
          v[n++] = u->metrics[m].value;
        }
      }
      s->v = kh__median(v, (int)n);
    }
  }
  free(v);
}

static void kh__fold_test(const kh_rep *rep, const kh_rtest *t, kh__agg *g,
                          double *times, int *ntimes) {
  g->failed |= kh_outcome_failed(t->outcome);
  g->flaky |= t->outcome == KH_FLAKY;
  double ms = isnan(t->body_ms) ? t->wall_ms : t->body_ms;
  if (!isnan(ms)) times[(*ntimes)++] = ms;
  for (int c = 0; c < t->nchecks; c++) {
    const kh_rcheck *x = &t->checks[c];
    kh__named *s = kh__slot(&g->checks, &g->nchecks, x->name);
    if (isnan(s->v) || x->max_abs > s->v) s->v = x->max_abs;
    if (x->ratio > s->ratio) s->ratio = x->ratio;
    s->failed |= !x->pass;
  }
  (void)rep;
}

static void kh__fold_rep(const kh_rep *rep, kh__fold *f) {
  f->a = kh_xcalloc((size_t)rep->ntests + 1, sizeof *f->a);
  f->n = 0;
  double *times = kh_xmalloc(((size_t)rep->ntests + 1) * sizeof *times);
  for (int i = 0; i < rep->ntests; i++) {
    const kh_rtest *t = &rep->tests[i];
    if (!t->final || kh__find(f, t->id)) continue;
    kh__agg *g = &f->a[f->n++];
    g->id = t->id, g->first = t;
    int ntimes = 0;
    for (int j = i; j < rep->ntests; j++)
      if (rep->tests[j].final && strcmp(rep->tests[j].id, t->id) == 0)
        kh__fold_test(rep, &rep->tests[j], g, times, &ntimes);
    g->ms = kh__median(times, ntimes);
    kh__fold_kernels(rep, g);
    kh__fold_metrics(rep, g);
  }
  free(times);
}

static void kh__fold_free(kh__fold *f) {
  for (int i = 0; i < f->n; i++)
    free(f->a[i].kernels), free(f->a[i].checks), free(f->a[i].metrics);
  free(f->a);
}

/* ---- Findings ----------------------------------------------------------- */

/* X(enum, name, is a regression, summary heading) */
#define KH__FIND_MAP(X)                                          \
  X(NEWLY_FAILING, "newly_failing", 1, "newly failing")          \
  X(NEWLY_FLAKY, "newly_flaky", 1, "newly flaky")                \
  X(SLOWER_TEST, "slower_test", 1, "slower test")                \
  X(SLOWER_KERNEL, "slower_kernel", 1, "slower kernel")          \
  X(ERROR_GROWTH, "error_growth", 1, "error growth")             \
  X(LOWER_METRIC, "lower_metric", 1, "lower metric")             \
  X(FIXED, "fixed", 0, "fixed")                                  \
  X(STILL_FAILING, "still_failing", 0, "still failing")          \
  X(NEW_TEST, "new_test", 0, "new test")                         \
  X(REMOVED_TEST, "removed_test", 0, "removed test")

enum {
#define KH__FE(e, n, r, h) KH__F_##e,
  KH__FIND_MAP(KH__FE)
#undef KH__FE
  KH__NFIND
};

static const struct { const char *name, *heading; int regression; } kh__kinds[] = {
#define KH__FT(e, n, r, h) {n, h, r},
  KH__FIND_MAP(KH__FT)
#undef KH__FT
};

typedef struct kh__finding {
  int kind;
  const char *test, *what;  /* what: kernel or check name, or NULL */
  double base, neu;         /* ms or max abs error; NAN when n/a */
  double ratio;             /* check: error/tolerance in NEW */
  const kh_rtest *rec;      /* NEW's record (or BASE's for removed) */
} kh__finding;

typedef struct kh__findings {
  kh__finding *f;
  int n;
  int counts[KH__NFIND];
} kh__findings;

static void kh__add(kh__findings *fs, kh__finding f) {
  fs->f = kh_xrealloc(fs->f, (size_t)(fs->n + 1) * sizeof *fs->f);
  fs->f[fs->n++] = f;
  fs->counts[f.kind]++;
}

static int kh__slower(double base, double neu, double rel, double abs_ms) {
  return !isnan(base) && !isnan(neu) && neu > base * (1 + rel) && neu - base > abs_ms;
}

static void kh__compare_timing(kh__findings *fs, const kh__agg *b, const kh__agg *n,
                               const kh_diff_opts *o) {
  if (b->failed || n->failed) return;
  int before = fs->counts[KH__F_SLOWER_KERNEL];
  for (int k = 0; k < n->nkernels; k++) {
    const kh__named *nk = &n->kernels[k];
    for (int j = 0; j < b->nkernels; j++)
      if (strcmp(b->kernels[j].name, nk->name) == 0 &&
          kh__slower(b->kernels[j].v, nk->v, o->time_rel, o->kernel_abs_ms))
        kh__add(fs, (kh__finding){KH__F_SLOWER_KERNEL, n->id, nk->name,
                                  b->kernels[j].v, nk->v, 0, n->first});
  }
  /* A slower kernel already explains its test's slower body: one finding. */
  if (fs->counts[KH__F_SLOWER_KERNEL] == before &&
      kh__slower(b->ms, n->ms, o->time_rel, o->test_abs_ms))
    kh__add(fs, (kh__finding){KH__F_SLOWER_TEST, n->id, NULL, b->ms, n->ms, 0, n->first});
}

/* A passing check whose max error grew past the factor. From an exact
 * zero, any error is growth (an exact kernel stopped being exact). */
static void kh__compare_checks(kh__findings *fs, const kh__agg *b, const kh__agg *n,
                               const kh_diff_opts *o) {
  for (int c = 0; c < n->nchecks; c++) {
    const kh__named *nc = &n->checks[c];
    if (nc->failed || isnan(nc->v)) continue;
    for (int j = 0; j < b->nchecks; j++) {
      const kh__named *bc = &b->checks[j];
      if (strcmp(bc->name, nc->name) != 0 || isnan(bc->v)) continue;
      if (nc->v > bc->v * o->drift_factor && nc->v > 0)
        kh__add(fs, (kh__finding){KH__F_ERROR_GROWTH, n->id, nc->name, bc->v,
                                  nc->v, nc->ratio, n->first});
    }
  }
}

/* Throughputs, where higher is better, by their unit. */
static int kh__throughput(const char *unit) {
  return unit && (strcmp(unit, "GB/s") == 0 || strcmp(unit, "TFLOP/s") == 0);
}

/* The unit of a finding's metric, from NEW's record. */
static const char *kh__metric_unit(const kh__finding *f) {
  for (int i = 0; i < f->rec->nmetrics; i++)
    if (strcmp(f->rec->metrics[i].name, f->what) == 0) return f->rec->metrics[i].unit;
  return "";
}

/* A throughput metric of a test that passed in both reports, lower in NEW
 * by more than the threshold. */
static void kh__compare_metrics(kh__findings *fs, const kh__agg *b,
                                const kh__agg *n, const kh_diff_opts *o) {
  if (b->failed || n->failed) return;
  for (int m = 0; m < n->nmetrics; m++) {
    const kh__named *nm = &n->metrics[m];
    if (!kh__throughput(nm->unit) || isnan(nm->v)) continue;
    for (int j = 0; j < b->nmetrics; j++) {
      const kh__named *bm = &b->metrics[j];
      if (strcmp(bm->name, nm->name) != 0 || isnan(bm->v) || bm->v <= 0) continue;
      if (nm->v < bm->v * (1 - o->metric_rel)) {
        kh__add(fs, (kh__finding){KH__F_LOWER_METRIC, n->id, nm->name, bm->v,
                                  nm->v, 0, n->first});
      }
    }
  }
}

static void kh__compare(kh__findings *fs, const kh__fold *B, const kh__fold *N,
                        const kh_diff_opts *o) {
  for (int i = 0; i < N->n; i++) {
    const kh__agg *n = &N->a[i], *b = kh__find(B, n->id);
    kh__finding f = {0, n->id, NULL, NAN, NAN, 0, n->first};
    if (!b) {
      f.kind = KH__F_NEW_TEST;
      kh__add(fs, f);
      if (n->failed) f.kind = KH__F_NEWLY_FAILING, kh__add(fs, f);
      continue;
    }
    if (n->failed) {
      f.kind = b->failed ? KH__F_STILL_FAILING : KH__F_NEWLY_FAILING;
      kh__add(fs, f);
    } else if (b->failed) {
      f.kind = KH__F_FIXED, kh__add(fs, f);
    }
    if (n->flaky && !b->flaky) f.kind = KH__F_NEWLY_FLAKY, kh__add(fs, f);
    kh__compare_timing(fs, b, n, o);
    kh__compare_checks(fs, b, n, o);
    kh__compare_metrics(fs, b, n, o);
  }
  for (int i = 0; i < B->n; i++)
    if (!kh__find(N, B->a[i].id))
      kh__add(fs, (kh__finding){KH__F_REMOVED_TEST, B->a[i].id, NULL, NAN, NAN, 0,
                                B->a[i].first});
}

/* ---- Output --------------------------------------------------------------- */

static void kh__line(FILE *out, const kh__finding *f) {
  fprintf(out, "  %-14s %s", kh__kinds[f->kind].heading, f->test);
  switch (f->kind) {
  case KH__F_NEWLY_FAILING: case KH__F_STILL_FAILING: case KH__F_NEWLY_FLAKY:
    fprintf(out, ": %s%s%s", kh_outcome_name(f->rec->outcome),
            *f->rec->message ? ": " : "", f->rec->message);
    break;
  case KH__F_SLOWER_TEST:
    fprintf(out, ": body %.3g ms -> %.3g ms (x%.2f)", f->base, f->neu, f->neu / f->base);
    break;
  case KH__F_SLOWER_KERNEL:
    fprintf(out, " kernel %s: median %.3g ms -> %.3g ms (x%.2f)", f->what, f->base,
            f->neu, f->neu / f->base);
    break;
  case KH__F_ERROR_GROWTH:
    fprintf(out, " check %s: max abs %.3g -> %.3g (x%.3g), %.3g of its tolerance",
            f->what, f->base, f->neu, f->base > 0 ? f->neu / f->base : INFINITY,
            f->ratio);
    break;
  case KH__F_LOWER_METRIC:
    fprintf(out, " metric %s: %.4g -> %.4g %s (x%.2f)", f->what, f->base, f->neu,
            kh__metric_unit(f), f->neu / f->base);
    break;
  default: break;
  }
  fputc('\n', out);
}

static void kh__summary(FILE *out, const kh_rep *b, const kh_rep *n,
                        const kh__findings *fs, int regressions) {
  fprintf(out, "kiln report diff\n  base %s (git %s, %s)\n  new  %s (git %s, %s)\n",
          b->path, *b->git ? b->git : "?", b->start, n->path,
          *n->git ? n->git : "?", n->start);
  fprintf(out, "%s: %d regression%s", regressions ? "REGRESSED" : "no regressions",
          regressions, regressions == 1 ? "" : "s");
  for (int k = 0; k < KH__NFIND; k++)
    if (fs->counts[k]) fprintf(out, ", %d %s", fs->counts[k], kh__kinds[k].heading);
  fputc('\n', out);
  for (int pass = 1; pass >= 0; pass--)   /* regressions first */
    for (int i = 0; i < fs->n; i++)
      if (kh__kinds[fs->f[i].kind].regression == pass) kh__line(out, &fs->f[i]);
}


static void kh__yn(kh_buf *y, const char *key, double v) {
  if (isnan(v)) kh_buf_addf(y, ", %s: .nan", key);
  else if (isinf(v)) kh_buf_addf(y, ", %s: %s.inf", key, v < 0 ? "-" : "");
  else kh_buf_addf(y, ", %s: %.6g", key, v);
}

static void kh__yfinding(kh_buf *y, const kh__finding *f) {
  kh_buf_addf(y, "- {kind: %s, regression: %s, test: ", kh__kinds[f->kind].name,
               kh__kinds[f->kind].regression ? "true" : "false");
  kh_buf_add_yq(y, f->test);
  if (f->kind == KH__F_SLOWER_KERNEL) kh_buf_add(y, ", kernel: ", 10), kh_buf_add_yq(y, f->what);
  if (f->kind == KH__F_ERROR_GROWTH) kh_buf_add(y, ", check: ", 9), kh_buf_add_yq(y, f->what);
  if (f->kind == KH__F_LOWER_METRIC) {
    kh_buf_add(y, ", metric: ", 10), kh_buf_add_yq(y, f->what);
    kh_buf_add(y, ", unit: ", 8), kh_buf_add_yq(y, kh__metric_unit(f));
    kh__yn(y, "base", f->base), kh__yn(y, "new", f->neu);
    kh__yn(y, "factor", f->neu / f->base);
  }
  if (f->kind <= KH__F_NEWLY_FLAKY || f->kind == KH__F_STILL_FAILING) {
    kh_buf_addf(y, ", outcome: %s, message: ", kh_outcome_name(f->rec->outcome));
    kh_buf_add_yq(y, f->rec->message);
  }
  if (f->kind == KH__F_SLOWER_TEST || f->kind == KH__F_SLOWER_KERNEL) {
    kh__yn(y, "base_ms", f->base), kh__yn(y, "new_ms", f->neu);
    kh__yn(y, "factor", f->neu / f->base);
  }
  if (f->kind == KH__F_ERROR_GROWTH) {
    kh__yn(y, "base_max_abs", f->base), kh__yn(y, "new_max_abs", f->neu);
    kh__yn(y, "factor", f->base > 0 ? f->neu / f->base : INFINITY);
    kh__yn(y, "new_error_to_tolerance", f->ratio);
  }
  kh_buf_add(y, "}\n", 2);
}

static void kh__yrep(kh_buf *y, const char *key, const kh_rep *r) {
  kh_buf_addf(y, "%s: {path: ", key);
  kh_buf_add_yq(y, r->path);
  kh_buf_add(y, ", git: ", 7), kh_buf_add_yq(y, r->git);
  kh_buf_add(y, ", start: ", 9), kh_buf_add_yq(y, r->start);
  kh_buf_addf(y, ", tests: %d}\n", r->total);
}

static int kh__yaml(const kh_rep *b, const kh_rep *n, const kh_diff_opts *o,
                    const kh__findings *fs, int regressions, kh_err *err) {
  kh_buf y = {0};
  kh_buf_addf(&y, "# kiln report diff (docs/reports.md)\nformat_version: 1\n");
  kh__yrep(&y, "base", b);
  kh__yrep(&y, "new", n);
  kh_buf_addf(&y, "thresholds: {time_rel: %g, test_abs_ms: %g, kernel_abs_ms: %g, "
               "drift_factor: %g, metric_rel: %g}\nregressed: %s\nregressions: %d\n"
               "counts:\n",
               o->time_rel, o->test_abs_ms, o->kernel_abs_ms, o->drift_factor,
               o->metric_rel,
               regressions ? "true" : "false", regressions);
  for (int k = 0; k < KH__NFIND; k++)
    kh_buf_addf(&y, "  %s: %d\n", kh__kinds[k].name, fs->counts[k]);
  kh_buf_addf(&y, "findings:%s\n", fs->n ? "" : " []");
  for (int i = 0; i < fs->n; i++) kh__yfinding(&y, &fs->f[i]);
  int rc = 0;
  if (kh_write_atomic(o->yaml_path, y.data, y.len) != 0)
    rc = kh_errf(err, "%s: %s", o->yaml_path, strerror(errno));
  kh_buf_free(&y);
  return rc;
}

int kh_diff(const kh_rep *base, const kh_rep *neu, const kh_diff_opts *o,
            FILE *out, int *regressions, kh_err *err) {
  kh__fold B, N;
  kh__findings fs = {0};
  kh__fold_rep(base, &B);
  kh__fold_rep(neu, &N);
  kh__compare(&fs, &B, &N, o);
  *regressions = 0;
  for (int i = 0; i < fs.n; i++) *regressions += kh__kinds[fs.f[i].kind].regression;
  kh__summary(out, base, neu, &fs, *regressions);
  int rc = o->yaml_path ? kh__yaml(base, neu, o, &fs, *regressions, err) : 0;
  free(fs.f);
  kh__fold_free(&B);
  kh__fold_free(&N);
  return rc;
}
