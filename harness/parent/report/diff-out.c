/* What `kiln report diff` says: the summary on stdout (regressions first,
 * each speed change with its factor, the noise it was judged against and
 * how sure), and the findings as YAML (--yaml, format_version 2:
 * docs/reports.md).
 */
#include "report-impl.h"

#include <math.h>
#include <string.h>

/* Each kind of finding: its YAML name, its heading in the summary, and
 * whether it is a regression. */
const krep__find_kind krep__find_kinds[KREP__NFIND] = {
#define FT(e, n, r, h) {n, h, r},
    KREP__FIND_MAP(FT)
#undef FT
};

/* ---- The summary ----------------------------------------------------------------- */

static const char *message(const krep__finding *f) {
  return f->rec && f->rec->message ? f->rec->message : "";
}

/* "99.9993%": as many digits as it takes to differ from 100. */
static void percent(double p, char *out, size_t n) {
  if (p < 1e-9) {
    snprintf(out, n, "> 99.9999999%%");
    return;
  }
  int digits = p >= 0.01 ? 1 : (int)ceil(-log10(p)) - 1;
  snprintf(out, n, "%.*f%%", digits, 100 * (1 - p));
}

/* "repeat 2 of 3", "repeats 1, 3 of 5" */
static void repeats(const krep__finding *f, char *out, size_t n) {
  size_t len = (size_t)snprintf(out, n, "repeat%s ", f->failed > 1 ? "s" : "");
  int shown = f->failed < 8 ? f->failed : 8;
  for (int i = 0; i < shown && len < n; i++)
    len += (size_t)snprintf(out + len, n - len, "%s%d", i ? ", " : "", f->failed_repeat[i]);
  if (len < n) snprintf(out + len, n - len, "%s of %d", f->failed > 8 ? ", ..." : "", f->repeats);
}

/* Factors as the values move: a time up (x2.0), a throughput down (x0.5);
 * shifts are kept as "worse" (+), so a throughput's sign turns. */
static double dir(const krep__finding *f) { return f->kind == F_LOWER_METRIC ? -1 : 1; }

static void speed_tail(FILE *out, const krep__finding *f, double run_shift) {
  char conf[40];
  percent(f->p, conf, sizeof conf);
  fprintf(out, " (x%.2f; x%.2f beyond the run-wide x%.2f), noise +-%.1f%% (%d+%d repeats), "
          "confidence %s", f->neu / f->base, exp(dir(f) * f->fig.excess),
          exp(dir(f) * run_shift), 100 * (exp(f->fig.noise) - 1), f->fig.nb, f->fig.nn, conf);
}

static int plain(const char *ran) { return !*ran || strcmp(ran, "alone") == 0; }

/* How it ran before and now, when either was not simply alone. */
static void ran(FILE *out, const krep__finding *f) {
  if (plain(f->ran_base) && plain(f->ran_new)) return;
  fprintf(out, " [before: ");
  if (f->base_outcome >= 0)
    fprintf(out, "%s %s", krep_outcome_name(f->base_outcome), *f->ran_base ? f->ran_base : "?");
  else
    fprintf(out, "not in the base");
  fprintf(out, "; now: %s %s]", krep_outcome_name(f->rec->outcome), *f->ran_new ? f->ran_new : "?");
}

static void line(FILE *out, const krep__finding *f, const krep__findings *fs) {
  fprintf(out, "  %-14s %s", krep__find_kinds[f->kind].heading, f->test);
  /* A throttled finding reads as the kind it would have been. */
  krep__finding as;
  int throttled = f->kind == F_THROTTLED;
  if (throttled) as = *f, as.kind = f->as, f = &as;
  char where[160], conf[40];
  switch (f->kind) {
  case F_NEWLY_FAILING: case F_STILL_FAILING: case F_NEWLY_FLAKY: case F_NEWLY_POLLUTED:
  case F_STILL_POLLUTED:
    if (f->failed && f->failed < f->repeats) {
      repeats(f, where, sizeof where);
      fprintf(out, ": failed in %s", where);
    }
    fprintf(out, ": %s%s%s", krep_outcome_name(f->rec->outcome), *message(f) ? ": " : "",
            message(f));
    ran(out, f);
    break;
  case F_SLOWER_RUN:
    percent(f->p, conf, sizeof conf);
    fprintf(out, ": every timing x%.2f against base, beyond %d earlier night%s (+-%.1f%%), "
            "confidence %s", exp(fs->noise.run_shift), fs->noise.nhist,
            fs->noise.nhist == 1 ? "" : "s", 100 * (exp(fs->noise.run_noise) - 1), conf);
    break;
  case F_SLOWER_TEST:
    fprintf(out, ": body %.3g ms -> %.3g ms", f->base, f->neu);
    speed_tail(out, f, fs->noise.run_shift);
    break;
  case F_SLOWER_KERNEL:
    fprintf(out, " kernel %s: median %.3g ms -> %.3g ms", f->what, f->base, f->neu);
    speed_tail(out, f, fs->noise.run_shift);
    break;
  case F_ERROR_GROWTH:
    fprintf(out, " check %s: max abs %.3g -> %.3g (x%.3g), %.3g of its tolerance",
            f->what, f->base, f->neu, f->base > 0 ? f->neu / f->base : INFINITY,
            f->ratio);
    break;
  case F_LOWER_METRIC:
    fprintf(out, " metric %s: %.4g -> %.4g %s", f->what, f->base, f->neu,
            f->unit ? f->unit : "");
    speed_tail(out, f, fs->noise.run_shift);
    break;
  default: break;
  }
  if (throttled) fprintf(out, " [discounted: the device throttled]");
  fputc('\n', out);
}

static void start_of(const krep_report *r, char *out, size_t n) {
  if (isnan(r->start_s)) snprintf(out, n, "?");
  else kh_iso_time(r->start_s, out, n);
}

/* How speed was judged, in one line. */
static void speed_line(FILE *out, const krep_diff_opts *o, const krep__findings *fs) {
  const krep__noise *nz = &fs->noise;
  if (nz->nfig == 0) {
    fprintf(out, "  speed: no timed figure of a test that passed in both runs\n");
    return;
  }
  fprintf(out, "  speed: %d figure%s of tests that passed in both; run-wide x%.2f against base ",
          nz->nfig, nz->nfig == 1 ? "" : "s", exp(nz->run_shift));
  if (nz->run_judged) {
    char conf[40];
    percent(nz->run_p, conf, sizeof conf);
    fprintf(out, "(against %d earlier night%s: +-%.1f%%, confidence %s)", nz->nhist,
            nz->nhist == 1 ? "" : "s", 100 * (exp(nz->run_noise) - 1), conf);
  } else {
    fprintf(out, "(not judged: that needs earlier nights, --history)");
  }
  fprintf(out, "; a change counts at %g%% confidence over all %d\n", 100 * o->confidence,
          nz->nfig);
}

void krep__diff_summary(FILE *out, const krep_report *b, const krep_report *n,
                        const krep_diff_opts *o, const krep__findings *fs, int regressions) {
  char bs[40], ns[40];
  start_of(b, bs, sizeof bs), start_of(n, ns, sizeof ns);
  fprintf(out, "kiln report diff\n  base %s (git %s, %s)\n  new  %s (git %s, %s)\n",
          b->path, b->git && *b->git ? b->git : "?", bs, n->path,
          n->git && *n->git ? n->git : "?", ns);
  fprintf(out, "%s: %d regression%s", regressions ? "REGRESSED" : "no regressions",
          regressions, regressions == 1 ? "" : "s");
  for (int k = 0; k < KREP__NFIND; k++)
    if (fs->counts[k]) fprintf(out, ", %d %s", fs->counts[k], krep__find_kinds[k].heading);
  fputc('\n', out);
  speed_line(out, o, fs);
  for (int pass = 1; pass >= 0; pass--)   /* regressions first */
    for (int i = 0; i < fs->n; i++)
      if (krep__find_kinds[fs->f[i].kind].regression == pass) line(out, &fs->f[i], fs);
}

/* ---- YAML ------------------------------------------------------------------------------ */

static void knum(krep_yaml *y, const char *k, double v) {
  krep_yaml_key(y, k);
  krep_yaml_ms(y, v);
}

static void kstr(krep_yaml *y, const char *k, const char *v) {
  krep_yaml_key(y, k);
  krep_yaml_str(y, v);
}

static void kint(krep_yaml *y, const char *k, long long v) {
  krep_yaml_key(y, k);
  krep_yaml_int(y, v);
}

static void yaml_speed(krep_yaml *y, const krep__finding *f, double run_shift) {
  int metric = f->kind == F_LOWER_METRIC;
  knum(y, metric ? "base" : "base_ms", f->base), knum(y, metric ? "new" : "new_ms", f->neu);
  knum(y, "factor", f->neu / f->base);
  knum(y, "adjusted_factor", exp(dir(f) * f->fig.excess));
  knum(y, "run_factor", exp(dir(f) * run_shift));
  knum(y, "noise_rel", exp(f->fig.noise) - 1);
  krep_yaml_key(y, "confidence");
  krep_yaml_num(y, 1 - f->p);
  krep_yaml_key(y, "repeats");
  krep_yaml_map(y, 1);
  kint(y, "base", f->fig.nb), kint(y, "new", f->fig.nn);
  krep_yaml_end(y);
}

static void yaml_finding(krep_yaml *y, const krep__finding *f, const krep__findings *fs) {
  krep_yaml_map(y, 1);
  kstr(y, "kind", krep__find_kinds[f->kind].name);
  krep_yaml_key(y, "regression");
  krep_yaml_bool(y, krep__find_kinds[f->kind].regression);
  kstr(y, "test", f->test);
  krep__finding as;
  if (f->kind == F_THROTTLED) {
    kstr(y, "discounted", krep__find_kinds[f->as].name);
    as = *f, as.kind = f->as, f = &as;
  }
  if (f->kind == F_SLOWER_KERNEL) kstr(y, "kernel", f->what);
  if (f->kind == F_ERROR_GROWTH) kstr(y, "check", f->what);
  if (f->kind == F_LOWER_METRIC) {
    kstr(y, "metric", f->what);
    kstr(y, "unit", f->unit ? f->unit : "");
  }
  if (f->kind == F_NEWLY_FAILING || f->kind == F_NEWLY_FLAKY || f->kind == F_STILL_FAILING ||
      f->kind == F_NEWLY_POLLUTED || f->kind == F_STILL_POLLUTED) {
    kstr(y, "outcome", krep_outcome_name(f->rec->outcome));
    kstr(y, "message", message(f));
    if (f->base_outcome >= 0) kstr(y, "base_outcome", krep_outcome_name(f->base_outcome));
    if (*f->ran_base) kstr(y, "base_ran", f->ran_base);
    if (*f->ran_new) kstr(y, "new_ran", f->ran_new);
    if (f->failed) {
      krep_yaml_key(y, "failed_repeats");
      krep_yaml_seq(y, 1);
      for (int i = 0; i < f->failed && i < 8; i++) krep_yaml_int(y, f->failed_repeat[i]);
      krep_yaml_end(y);
      kint(y, "repeats", f->repeats);
    }
  }
  if (f->speed) yaml_speed(y, f, fs->noise.run_shift);
  if (f->kind == F_SLOWER_RUN) {
    knum(y, "factor", exp(fs->noise.run_shift));
    knum(y, "noise_rel", exp(fs->noise.run_noise) - 1);
    krep_yaml_key(y, "confidence");
    krep_yaml_num(y, 1 - f->p);
    kint(y, "history", fs->noise.nhist);
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

int krep__diff_yaml(const krep_report *b, const krep_report *n, const krep_diff_opts *o,
                    const krep__findings *fs, int regressions, kh_err *err) {
  krep_yaml *y = krep_yaml_open(o->yaml_path, err);
  if (!y) return -1;
  const krep__noise *nz = &fs->noise;
  krep_yaml_map(y, 0);
  kint(y, "format_version", 2);
  yaml_rep(y, "base", b);
  yaml_rep(y, "new", n);
  krep_yaml_key(y, "thresholds");
  krep_yaml_map(y, 1);
  knum(y, "time_rel", o->time_rel), knum(y, "test_abs_ms", o->test_abs_ms);
  knum(y, "kernel_abs_ms", o->kernel_abs_ms), knum(y, "drift_factor", o->drift_factor);
  knum(y, "metric_rel", o->metric_rel);
  krep_yaml_key(y, "confidence");
  krep_yaml_num(y, o->confidence);
  krep_yaml_end(y);
  krep_yaml_key(y, "speed");
  krep_yaml_map(y, 1);
  kint(y, "figures", nz->nfig);
  knum(y, "run_factor", exp(nz->run_shift));
  kint(y, "history", nz->nhist);
  krep_yaml_key(y, "run_judged");
  krep_yaml_bool(y, nz->run_judged);
  krep_yaml_key(y, "lambda");
  krep_yaml_num(y, nz->lambda);
  krep_yaml_key(y, "p_needed");
  krep_yaml_num(y, fs->p_needed);
  krep_yaml_end(y);
  krep_yaml_key(y, "regressed");
  krep_yaml_bool(y, regressions > 0);
  kint(y, "regressions", regressions);
  krep_yaml_key(y, "counts");
  krep_yaml_map(y, 0);
  for (int k = 0; k < KREP__NFIND; k++) kint(y, krep__find_kinds[k].name, fs->counts[k]);
  krep_yaml_end(y);
  krep_yaml_key(y, "findings");
  krep_yaml_seq(y, fs->n == 0);
  for (int i = 0; i < fs->n; i++) yaml_finding(y, &fs->f[i], fs);
  krep_yaml_end(y);
  krep_yaml_end(y);
  return krep_yaml_close(y, err);
}
