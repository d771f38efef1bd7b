/* The noise model of `kiln report diff`: is a figure's change (a test's
 * body time, a kernel's median, a throughput metric) outside the noise
 * measured for it? Two runs of the same code on the same machine differ in
 * every timing; a fixed threshold ("20% slower") cries wolf on noisy
 * figures and sleeps through quiet ones.
 *
 * In log units (a factor is a difference), for each figure:
 *   shift     median(new) against median(base);
 *   spread    its repeats' standard deviation, pooled over both runs, never
 *             below the typical figure's (a figure measured 3 times can
 *             look quiet by chance; pulled up only, never down);
 *   noise     of the shift: spread * sqrt(pi/2 * (1/nb + 1/nn)) (medians),
 *             scaled by how much more every figure moved than its own
 *             spread says (lambda: run-to-run effects that repeats within
 *             one run cannot see), plus the variance of its median over
 *             earlier nights (--history);
 *   excess    the shift beyond the run-wide shift (the median of every
 *             figure's shift, given 8 figures or more: a machine that is
 *             slower tonight moves them all), judged with Student's t on
 *             the spread's degrees of freedom.
 * The run-wide shift itself is judged only against history: the run-wide
 * shifts of earlier nights against the base. diff.c decides what counts
 * (the confidence over every figure at once, the thresholds) and says it.
 * A new source of noise (a GPU's clock throttling) is a term of `noise`.
 */
#include "report-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Weight, in degrees of freedom, of the typical figure's spread. */
#define PRIOR_DOF 4
/* Figures it takes to tell a run-wide shift (and lambda) from one
 * figure's: fewer, and each is judged on its own. */
#define MIN_FIGURES 8
/* The median of a chi-square variable with one degree of freedom. */
#define CHI2_1_MEDIAN 0.45493642311957

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

double krep__median(double *v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- Student's t ------------------------------------------------------------------- */

/* The continued fraction of the regularized incomplete beta function
 * (modified Lentz's method). */
static double beta_cf(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; m++) {
    double aa = m * (b - m) * x / ((a - 1 + 2 * m) * (a + 2 * m));
    d = 1 + aa * d;
    c = 1 + aa / c;
    d = 1 / (fabs(d) < tiny ? tiny : d);
    c = fabs(c) < tiny ? tiny : c;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1 + 2 * m));
    d = 1 + aa * d;
    c = 1 + aa / c;
    d = 1 / (fabs(d) < tiny ? tiny : d);
    c = fabs(c) < tiny ? tiny : c;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) < 1e-15) break;
  }
  return h;
}

static double beta_inc(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
  return x < (a + 1) / (a + b + 2) ? front * beta_cf(a, b, x) / a
                                   : 1 - front * beta_cf(b, a, 1 - x) / b;
}

double krep__t_tail(double t, double df) {
  if (isnan(t)) return 1;
  if (isinf(t)) return t > 0 ? 0 : 1;
  double tail = 0.5 * beta_inc(df / 2, 0.5, df / (df + t * t));
  return t > 0 ? tail : 1 - tail;
}

/* ---- The figures -------------------------------------------------------------------- */

/* Sum of squared deviations of the logs from their mean. */
static double log_ss(const double *v, int n) {
  double mean = 0, ss = 0;
  for (int i = 0; i < n; i++) mean += log(v[i]) / n;
  for (int i = 0; i < n; i++) ss += (log(v[i]) - mean) * (log(v[i]) - mean);
  return ss;
}

static int usable(const double *v, int n) {
  if (n < 1) return 0;
  for (int i = 0; i < n; i++)
    if (!(v[i] > 0) || isinf(v[i])) return 0;
  return 1;
}

/* Sample variance of n values (n >= 2). */
static double variance(const double *v, int n) {
  double mean = 0, ss = 0;
  for (int i = 0; i < n; i++) mean += v[i] / n;
  for (int i = 0; i < n; i++) ss += (v[i] - mean) * (v[i] - mean);
  return ss / (n - 1);
}

void krep__noise_judge(krep__fig *f, int n, krep__noise *out) {
  memset(out, 0, sizeof *out);
  int most = 1;             /* samples or nights of a figure, at most */
  for (int i = 0; i < n; i++) {
    if (f[i].nb > most) most = f[i].nb;
    if (f[i].nn > most) most = f[i].nn;
    if (f[i].nh + 1 > most) most = f[i].nh + 1;
  }
  double *buf = kh_xcalloc((size_t)n + 1, sizeof *buf);
  double *work = kh_xcalloc((size_t)most + 1, sizeof *work);
  int nfig = 0, nvar = 0;
  double *var = kh_xcalloc((size_t)n + 1, sizeof *var);
  for (int i = 0; i < n; i++) {
    krep__fig *x = &f[i];
    x->used = usable(x->b, x->nb) && usable(x->n, x->nn);
    x->p = 1, x->noise = 0;
    if (!x->used) continue;
    memcpy(work, x->b, (size_t)x->nb * sizeof *work);
    x->base = krep__median(work, x->nb);
    memcpy(work, x->n, (size_t)x->nn * sizeof *work);
    x->neu = krep__median(work, x->nn);
    x->shift = log(x->neu / x->base) * (x->higher_better ? -1 : 1);
    x->dof = x->nb + x->nn - 2;
    if (x->dof > 0) {
      x->var = (log_ss(x->b, x->nb) + log_ss(x->n, x->nn)) / x->dof;
      var[nvar++] = x->var;
    }
    buf[nfig++] = x->shift;
  }
  out->nfig = nfig;
  if (nfig == 0) goto done;
  out->run_shift = nfig >= MIN_FIGURES ? krep__median(buf, nfig) : 0;
  out->prior_var = nvar >= 3 ? krep__median(var, nvar) : 0;

  /* Each figure's spread (pulled up towards the typical one), the noise
   * of its shift, and lambda from how far all of them moved. */
  int nse = 0;
  for (int i = 0; i < n; i++) {
    krep__fig *x = &f[i];
    if (!x->used) continue;
    double v = x->dof > 0 ? x->var : 0, prior = out->prior_var;
    if (prior > 0) {
      double shrunk = (x->dof * v + PRIOR_DOF * prior) / (x->dof + PRIOR_DOF);
      if (shrunk > v) v = shrunk;
      x->df = x->dof + PRIOR_DOF;
    } else {
      x->df = x->dof;
    }
    x->se = x->df > 0 ? sqrt(M_PI / 2 * v * (1.0 / x->nb + 1.0 / x->nn)) : 0;
    x->excess = x->shift - out->run_shift;
    if (x->se > 0) buf[nse++] = (x->excess / x->se) * (x->excess / x->se);
  }
  out->lambda = nse >= MIN_FIGURES ? krep__median(buf, nse) / CHI2_1_MEDIAN : 1;
  if (out->lambda < 1) out->lambda = 1;

  for (int i = 0; i < n; i++) {
    krep__fig *x = &f[i];
    if (!x->used) continue;
    double h2 = 0;
    int nh = 0;
    for (int k = 0; k < x->nh; k++)
      if (x->h[k] > 0 && !isinf(x->h[k])) work[nh++] = log(x->h[k]);
    if (nh >= 1) {
      work[nh++] = log(x->base);
      h2 = variance(work, nh);
      if (x->df <= 0) x->df = nh - 1;
    }
    x->noise = sqrt(out->lambda * x->se * x->se + h2);
    if (x->noise > 0 && x->df > 0) x->p = krep__t_tail(x->excess / x->noise, x->df);
  }

done:
  free(buf), free(var), free(work);
}

void krep__noise_run(const double *hist_shift, int nhist, krep__noise *out) {
  out->nhist = nhist;
  out->run_p = 1;
  if (nhist < 1 || out->nfig == 0) return;
  /* The base itself is one night, with a shift of 0 against itself. */
  double *v = kh_xcalloc((size_t)nhist + 2, sizeof *v);
  memcpy(v, hist_shift, (size_t)nhist * sizeof *v);
  v[nhist] = 0;
  out->run_noise = sqrt(variance(v, nhist + 1) * (1 + 1.0 / (nhist + 1)));
  out->run_judged = out->run_noise > 0;
  if (out->run_judged) out->run_p = krep__t_tail(out->run_shift / out->run_noise, nhist);
  free(v);
}
