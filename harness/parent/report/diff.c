/* `kiln report diff BASE NEW [--history REPORT...]`. Each report is first
 * folded per test id over its final records (every --repeat): failed if
 * any repeat failed (and which), its body times, per kernel the per-repeat
 * medians, per check the largest max abs error, per metric the values.
 * Failures, flakiness and error growth are compared as they are. Speed is
 * judged by the noise model (noise.c): a test's body, a kernel or a
 * throughput metric of a test that passed in both runs counts as slower
 * only when its change beyond the run-wide change is outside its measured
 * noise with the asked confidence over all the figures at once (so that
 * ninety figures do not give ninety chances of a false alarm), and past
 * the relative and absolute thresholds. A test whose device throttled
 * (its clocks records: power, thermal or hardware slowdown) in either
 * report has its speed findings listed as `throttled`, discounted rather
 * than counted as regressions. The findings are written by diff-out.c.
 */
#include "report-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void krep_diff_defaults(krep_diff_opts *o) {
  *o = (krep_diff_opts){.time_rel = 0.2, .test_abs_ms = 100.0,
                        .kernel_abs_ms = 0.05, .drift_factor = 4.0,
                        .metric_rel = 0.2, .confidence = 0.999};
}

/* ---- Folding a report per test id ----------------------------------------- */

typedef struct named {
  const char *name;
  double v;                 /* check: max abs; kernel, metric: median */
  double ratio;             /* check: error/tolerance of the worst repeat */
  int failed;               /* check: failed in some repeat */
  const char *unit;         /* metric */
  double *samples;          /* body, kernels and metrics: one per repeat */
  int nsamples;
} named;

typedef struct agg {
  const char *id;
  const krep_test *first;   /* a final record, for messages */
  const krep_test *failing; /* the first final record that failed */
  const krep_test *polluting;   /* the first final record polluted */
  int repeats, failed, flaky, polluted;
  int throttled;            /* a record's device slowed down (clocks) */
  int failed_repeat[8];     /* the first repeats that failed */
  named body;               /* body (or wall) ms */
  named *kernels, *checks, *metrics;
  int nkernels, nchecks, nmetrics;
} agg;

typedef struct fold {
  const krep_report *rep;
  agg *a;
  int n;
} fold;

static agg *find(const fold *f, const char *id) {
  for (int i = 0; f && i < f->n; i++)
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

static double median_of(const named *s) {
  if (s->nsamples == 0) return NAN; /* no samples: no array to copy */
  double *v = kh_xmalloc(((size_t)s->nsamples + 1) * sizeof *v);
  memcpy(v, s->samples, (size_t)s->nsamples * sizeof *v);
  double m = krep__median(v, s->nsamples);
  free(v);
  return m;
}

/* One final record of the test into its fold. */
static void fold_test(const krep_test *t, agg *g) {
  krep__view v;
  krep__view_of(t, &v);
  g->repeats++;
  if (krep_outcome_failed(t->outcome)) {
    if (!g->failing) g->failing = t;
    if (g->failed < (int)(sizeof g->failed_repeat / sizeof g->failed_repeat[0]))
      g->failed_repeat[g->failed] = t->repeat;
    g->failed++;
  }
  g->flaky |= t->outcome == KREP_FLAKY;
  if (t->outcome == KREP_POLLUTED && !g->polluted++) g->polluting = t;
  g->throttled |= krep_test_throttled(t);
  sample(&g->body, isnan(v.body_ms) ? t->wall_ms : v.body_ms);
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
  f->rep = rep;
  f->a = kh_xcalloc((size_t)rep->ntests + 1, sizeof *f->a);
  f->n = 0;
  for (int i = 0; i < rep->ntests; i++) {
    const krep_test *t = rep->tests[i];
    if (!t->final || find(f, t->id)) continue;
    agg *g = &f->a[f->n++];
    g->id = t->id, g->first = t;
    g->body = (named){"body", NAN, 0, 0, NULL, NULL, 0};
    for (int j = i; j < rep->ntests; j++)
      if (rep->tests[j]->final && strcmp(rep->tests[j]->id, t->id) == 0)
        fold_test(rep->tests[j], g);
    g->body.v = median_of(&g->body);
    for (int k = 0; k < g->nkernels; k++) g->kernels[k].v = median_of(&g->kernels[k]);
    for (int m = 0; m < g->nmetrics; m++) g->metrics[m].v = median_of(&g->metrics[m]);
  }
}

static void fold_free(fold *f) {
  for (int i = 0; i < f->n; i++) {
    agg *g = &f->a[i];
    free(g->body.samples);
    for (int k = 0; k < g->nkernels; k++) free(g->kernels[k].samples);
    for (int m = 0; m < g->nmetrics; m++) free(g->metrics[m].samples);
    free(g->kernels), free(g->checks), free(g->metrics);
  }
  free(f->a);
}

/* ---- Findings ----------------------------------------------------------------- */

static void add(krep__findings *fs, krep__finding f) {
  fs->f = kh_xrealloc(fs->f, (size_t)(fs->n + 1) * sizeof *fs->f);
  fs->f[fs->n++] = f;
  fs->counts[f.kind]++;
}

/* The record a test's finding is about in one report: its first
 * failing, else polluted, else first final record. */
static const krep_test *telling(const agg *g) {
  return g->failing ? g->failing : g->polluting ? g->polluting : g->first;
}

/* A failing (or polluted) test's finding: its first such record, the
 * repeats that failed when some passed, and how it ran in each report. */
static krep__finding failure(int kind, const agg *n, const fold *N, const agg *b,
                             const fold *B) {
  krep__finding f = {.kind = kind, .test = n->id, .rec = telling(n), .base = NAN, .neu = NAN};
  f.failed = n->failed, f.repeats = n->repeats;
  memcpy(f.failed_repeat, n->failed_repeat, sizeof f.failed_repeat);
  krep_ran_text(N->rep, f.rec, f.ran_new, sizeof f.ran_new);
  f.base_outcome = b ? telling(b)->outcome : -1;
  if (b) krep_ran_text(B->rep, telling(b), f.ran_base, sizeof f.ran_base);
  return f;
}

/* A passing check whose max error grew past the factor. From an exact
 * zero, any error is growth (an exact kernel stopped being exact). */
static void compare_checks(krep__findings *fs, const agg *b, const agg *n,
                           const krep_diff_opts *o) {
  for (int c = 0; c < n->nchecks; c++) {
    const named *nc = &n->checks[c];
    if (nc->failed || isnan(nc->v)) continue;
    for (int j = 0; j < b->nchecks; j++) {
      const named *bc = &b->checks[j];
      if (strcmp(bc->name, nc->name) != 0 || isnan(bc->v)) continue;
      if (nc->v > bc->v * o->drift_factor && nc->v > 0)
        add(fs, (krep__finding){.kind = F_ERROR_GROWTH, .test = n->id, .what = nc->name,
                                .base = bc->v, .neu = nc->v, .ratio = nc->ratio,
                                .rec = n->first});
    }
  }
}

static void compare(krep__findings *fs, const fold *B, const fold *N, const krep_diff_opts *o) {
  for (int i = 0; i < N->n; i++) {
    const agg *n = &N->a[i], *b = find(B, n->id);
    krep__finding f = {.test = n->id, .rec = n->first, .base = NAN, .neu = NAN};
    if (!b) {
      f.kind = F_NEW_TEST;
      add(fs, f);
      if (n->failed) add(fs, failure(F_NEWLY_FAILING, n, N, NULL, B));
      else if (n->polluted) add(fs, failure(F_NEWLY_POLLUTED, n, N, NULL, B));
      continue;
    }
    if (n->failed) {
      add(fs, failure(b->failed ? F_STILL_FAILING : F_NEWLY_FAILING, n, N, b, B));
    } else if (b->failed) {
      f.kind = F_FIXED, add(fs, f);
    }
    /* Passing alone but not in its worker: some test before it there now
     * leaves state behind. */
    if (!n->failed && n->polluted)
      add(fs, failure(b->polluted ? F_STILL_POLLUTED : F_NEWLY_POLLUTED, n, N, b, B));
    if (n->flaky && !b->flaky) f.kind = F_NEWLY_FLAKY, add(fs, f);
    compare_checks(fs, b, n, o);
  }
  for (int i = 0; i < B->n; i++)
    if (!find(N, B->a[i].id))
      add(fs, (krep__finding){.kind = F_REMOVED_TEST, .test = B->a[i].id,
                              .rec = B->a[i].first, .base = NAN, .neu = NAN});
}

/* ---- Speed ---------------------------------------------------------------------------- */

enum { FIG_BODY, FIG_KERNEL, FIG_METRIC };

/* Throughputs, where higher is better, by their unit. */
static int throughput(const char *unit) {
  return unit && (strcmp(unit, "GB/s") == 0 || strcmp(unit, "TFLOP/s") == 0);
}

typedef struct figures {
  krep__fig *f;
  int n;
  double *hist;             /* n * nh medians on earlier nights */
  int nh;
} figures;

static void add_fig(figures *F, const agg *n, int kind, const named *b, const named *x,
                    const fold *H, int nh) {
  krep__fig *f = &F->f[F->n];
  *f = (krep__fig){.test = n->id, .what = kind == FIG_BODY ? NULL : x->name, .kind = kind,
                   .higher_better = kind == FIG_METRIC, .b = b->samples, .nb = b->nsamples,
                   .n = x->samples, .nn = x->nsamples, .h = F->hist + (size_t)F->n * nh,
                   .nh = nh, .unit = x->unit};
  for (int k = 0; k < nh; k++) {
    const agg *g = find(&H[k], n->id);
    const named *s = NULL;
    if (g && !g->failed) {
      if (kind == FIG_BODY) s = &g->body;
      for (int i = 0; kind == FIG_KERNEL && i < g->nkernels; i++)
        if (strcmp(g->kernels[i].name, x->name) == 0) s = &g->kernels[i];
      for (int i = 0; kind == FIG_METRIC && i < g->nmetrics; i++)
        if (strcmp(g->metrics[i].name, x->name) == 0) s = &g->metrics[i];
    }
    F->hist[(size_t)F->n * nh + k] = s ? s->v : NAN;
  }
  F->n++;
}

/* Every timed figure of a test that passed in both runs. */
static void collect(figures *F, const fold *B, const fold *N, const fold *H, int nh) {
  int cap = 0;
  for (int i = 0; i < N->n; i++) cap += 1 + N->a[i].nkernels + N->a[i].nmetrics;
  F->f = kh_xcalloc((size_t)cap + 1, sizeof *F->f);
  F->hist = kh_xcalloc((size_t)(cap + 1) * (size_t)(nh + 1), sizeof *F->hist);
  F->nh = nh;
  for (int i = 0; i < N->n; i++) {
    const agg *n = &N->a[i], *b = find(B, n->id);
    if (!b || b->failed || n->failed) continue;
    add_fig(F, n, FIG_BODY, &b->body, &n->body, H, nh);
    for (int k = 0; k < n->nkernels; k++)
      for (int j = 0; j < b->nkernels; j++)
        if (strcmp(b->kernels[j].name, n->kernels[k].name) == 0)
          add_fig(F, n, FIG_KERNEL, &b->kernels[j], &n->kernels[k], H, nh);
    for (int m = 0; m < n->nmetrics; m++)
      for (int j = 0; throughput(n->metrics[m].unit) && j < b->nmetrics; j++)
        if (strcmp(b->metrics[j].name, n->metrics[m].name) == 0)
          add_fig(F, n, FIG_METRIC, &b->metrics[j], &n->metrics[m], H, nh);
  }
}

/* Night k's run-wide shift against the base: the median over the figures
 * it has of ln(its median / the base's). */
static double night_shift(const figures *F, int k) {
  double *v = kh_xcalloc((size_t)F->n + 1, sizeof *v);
  int n = 0;
  for (int i = 0; i < F->n; i++) {
    const krep__fig *f = &F->f[i];
    if (f->used && f->h[k] > 0 && !isinf(f->h[k]))
      v[n++] = log(f->h[k] / f->base) * (f->higher_better ? -1 : 1);
  }
  double m = n ? krep__median(v, n) : NAN;
  free(v);
  return m;
}

/* Past the thresholds: a time slower by more than --time-rel (and the
 * absolute one), a throughput lower by more than --metric-rel of its base. */
static int slower_enough(const krep__fig *f, double run_shift, const krep_diff_opts *o) {
  if (f->kind == FIG_METRIC) return 1 - exp(-f->excess) > o->metric_rel;
  if (exp(f->excess) - 1 <= o->time_rel) return 0;
  double abs_ms = f->kind == FIG_BODY ? o->test_abs_ms : o->kernel_abs_ms;
  return f->neu - f->base * exp(run_shift) > abs_ms;
}

static void judge_speed(krep__findings *fs, figures *F, const fold *B, const fold *N,
                        const krep_diff_opts *o) {
  krep__noise *nz = &fs->noise;
  krep__noise_judge(F->f, F->n, nz);
  double *hs = kh_xcalloc((size_t)F->nh + 1, sizeof *hs);
  int nhs = 0;
  for (int k = 0; k < F->nh; k++) {
    double s = night_shift(F, k);
    if (!isnan(s)) hs[nhs++] = s;
  }
  krep__noise_run(hs, nhs, nz);
  free(hs);
  /* The confidence is over every figure at once (Bonferroni). */
  fs->p_needed = nz->nfig ? (1 - o->confidence) / nz->nfig : 0;
  if (nz->run_judged && nz->run_p <= 1 - o->confidence && exp(nz->run_shift) - 1 > o->time_rel)
    add(fs, (krep__finding){.kind = F_SLOWER_RUN, .test = "(run)", .base = NAN, .neu = NAN,
                            .p = nz->run_p});
  for (int i = 0; i < F->n; i++) {
    const krep__fig *f = &F->f[i];
    if (!f->used || f->p > fs->p_needed || !slower_enough(f, nz->run_shift, o)) continue;
    /* A slower kernel already explains its test's slower body. */
    if (f->kind == FIG_BODY) {
      int explained = 0;
      for (int k = 0; k < F->n; k++)
        explained |= F->f[k].kind == FIG_KERNEL && F->f[k].test == f->test &&
                     F->f[k].used && F->f[k].p <= fs->p_needed &&
                     slower_enough(&F->f[k], nz->run_shift, o);
      if (explained) continue;
    }
    static const int kind[] = {F_SLOWER_TEST, F_SLOWER_KERNEL, F_LOWER_METRIC};
    krep__finding x = {.kind = kind[f->kind], .test = f->test, .what = f->what,
                       .base = f->base, .neu = f->neu, .unit = f->unit, .fig = *f,
                       .speed = 1, .p = f->p};
    /* A device that slowed itself down says nothing about the code: the
     * finding is listed, discounted. This gate comes after the noise
     * model's judgment, so the two compose. */
    const agg *b = find(B, f->test), *n = find(N, f->test);
    if ((b && b->throttled) || (n && n->throttled)) x.as = x.kind, x.kind = F_THROTTLED;
    add(fs, x);
  }
}

int krep_diff(const krep_report *base, const krep_report *neu, const krep_diff_opts *o,
              FILE *out, int *regressions, kh_err *err) {
  fold B, N;
  fold *H = kh_xcalloc((size_t)o->nhistory + 1, sizeof *H);
  krep__findings fs;
  memset(&fs, 0, sizeof fs);
  fold_rep(base, &B);
  fold_rep(neu, &N);
  for (int k = 0; k < o->nhistory; k++) fold_rep(&o->history[k], &H[k]);
  compare(&fs, &B, &N, o);
  figures F = {0};
  collect(&F, &B, &N, H, o->nhistory);
  judge_speed(&fs, &F, &B, &N, o);
  *regressions = 0;
  for (int i = 0; i < fs.n; i++) *regressions += krep__find_kinds[fs.f[i].kind].regression;
  krep__diff_summary(out, base, neu, o, &fs, *regressions);
  int rc = o->yaml_path ? krep__diff_yaml(base, neu, o, &fs, *regressions, err) : 0;
  free(fs.f), free(F.f), free(F.hist);
  fold_free(&B);
  fold_free(&N);
  for (int k = 0; k < o->nhistory; k++) fold_free(&H[k]);
  free(H);
  return rc;
}
