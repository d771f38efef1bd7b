/* Numeric checks (kt_check): a device tensor against a double-precision
 * reference, element by element, as torch.testing.assert_close and
 * llama.cpp's test-backend-ops compare. Besides the verdict each check
 * records the distribution of its error: nearest-rank quantiles of the
 * relative error, a histogram in decades, and its few worst elements, so
 * that a failure (or a drift) reads as a shape rather than one number.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child-impl.h"

kt_tol kt_tol_default(ke_dtype dtype) {
  switch (dtype) {
  case KE_F16: return (kt_tol){1e-5, 1e-3, 0.0, 0};
  case KE_BF16: return (kt_tol){1e-5, 1.6e-2, 0.0, 0};
  case KE_F32:
  default: return (kt_tol){1e-5, 1.3e-6, 0.0, 0};
  }
}

/* The last override whose glob matches the suite, the test or the check
 * (as suite/test/check) wins (harness/common/select.h). An override
 * without a budget keeps the check's own. */
static kt_tol tol_lookup(const char *check, kt_tol tol) {
  const ksel_tol *o =
      ksel_tol_pick(kt__state.tol, kt__state.ntol,
                    kt__state.suite ? kt__state.suite->name : NULL,
                    kt__state.test_id, check);
  if (o) {
    tol.atol = o->atol, tol.rtol = o->rtol;
    if (o->max_over >= 0) tol.max_over = o->max_over;
  }
  return tol;
}

/* ---- Order statistics ------------------------------------------------------ */

static void swap(double *a, double *b) {
  double t = *a;
  *a = *b;
  *b = t;
}

/* Puts the k-th smallest of v[lo..hi) at v[k], smaller ones before it and
 * larger ones after (quickselect with a three-way partition, so that many
 * equal errors, all zero say, cost one pass). */
static void select_kth(double *v, size_t lo, size_t hi, size_t k) {
  while (hi - lo > 1) {
    double a = v[lo], b = v[lo + (hi - lo) / 2], c = v[hi - 1];
    double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    size_t lt = lo, i = lo, gt = hi;
    while (i < gt) {
      if (v[i] < pivot) swap(&v[lt++], &v[i++]);
      else if (v[i] > pivot) swap(&v[i], &v[--gt]);
      else i++;
    }
    if (k < lt) hi = lt;
    else if (k >= gt) lo = gt;
    else return;
  }
}

/* The q-quantiles (nearest rank: the ceil(q n)-th smallest) of v[0..n),
 * for ascending q; reorders v. */
static void quantiles(double *v, size_t n, const double *q, double *out, int nq) {
  size_t lo = 0;
  for (int i = 0; i < nq; i++) {
    if (n == 0) {
      out[i] = 0.0;
      continue;
    }
    size_t rank = (size_t)ceil(q[i] * (double)n);
    size_t k = rank > 0 ? rank - 1 : 0;
    if (k >= n) k = n - 1;
    select_kth(v, lo, n, k);
    out[i] = v[k];
    lo = k;                 /* everything before k is no larger */
  }
}

/* Powers of ten from 10^KP_HIST_LO to 10^KP_HIST_HI. */
static const double kDecade[] = {1e-10, 1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4,
                                 1e-3,  1e-2, 1e-1, 1e0,  1e1,  1e2};
_Static_assert(sizeof kDecade / sizeof kDecade[0] == KP_HIST_HI - KP_HIST_LO + 1,
               "kDecade spans KP_HIST_LO..KP_HIST_HI");

/* The histogram bin of a relative error (records.h: KP_HIST_*): the decade
 * floor(log10(rel)). log10 was a sixth of a large check's time; a value
 * more than 2^-40 (relative) inside a decade's bounds is in that decade
 * whatever log10's last-bit error, so comparisons place it, and only a
 * value that close to a power of ten asks log10, as before. */
static int hist_bin(double rel) {
  if (rel == 0.0) return 0;
  if (rel < pow(10.0, KP_HIST_LO)) return 1;
  const double in = 1.0 + 0x1p-40, out = 1.0 - 0x1p-40;
  const int last = KP_HIST_HI - KP_HIST_LO;
  int i = 0;
  while (i < last && !(rel < kDecade[i + 1] * out)) i++;
  if (rel >= kDecade[i] * in && (i == last || rel < kDecade[i + 1] * out))
    return i == last ? KP_HIST_BINS - 1 : 2 + i;
  int d = (int)floor(log10(rel));
  if (d >= KP_HIST_HI) return KP_HIST_BINS - 1;
  return 2 + d - KP_HIST_LO;
}

/* ---- The comparison ------------------------------------------------------------ */

typedef struct worst {
  double ratio;             /* error / tolerance; INFINITY for a special */
  int64_t index;
  double actual, expected;
} worst;

typedef struct dist {
  double *rel;              /* relative errors of the finite elements */
  size_t nrel;
  long long hist[KP_HIST_BINS];
  worst top[KP_WORST_K];    /* worst first */
  int ntop;
} dist;

/* Keeps the K worst by ratio, worst first; ties keep the lower index;
 * exact elements are not listed. */
static void keep_worst(dist *d, double ratio, int64_t i, double a, double e) {
  if (!(ratio > 0.0)) return;
  if (d->ntop == KP_WORST_K && !(ratio > d->top[KP_WORST_K - 1].ratio)) return;
  int at = d->ntop < KP_WORST_K ? d->ntop++ : KP_WORST_K - 1;
  while (at > 0 && ratio > d->top[at - 1].ratio) {
    d->top[at] = d->top[at - 1];
    at--;
  }
  d->top[at] = (worst){ratio, i, a, e};
}

/* One contiguous range [lo, hi) of the elements into r and d (d->rel
 * starts at the range's own place in the shared buffer). */
typedef struct part {
  const double *a, *e;
  int64_t lo, hi;
  kt_check_result r;
  dist d;
  double err2, ref2;
  /* Large outputs: the sums per block of KT__CHECK_BLOCK elements (by
   * global block number), which compare adds in block order, so that
   * the NMSE does not depend on how many threads split the range. */
  double *blk_err2, *blk_ref2;
} part;

#define KT__CHECK_BLOCK 4096

static void compare_range(part *p) {
  kt_check_result *r = &p->r;
  dist *d = &p->d;
  for (int64_t i = p->lo; i < p->hi; i++) {
    if (p->blk_err2 && i > p->lo && i % KT__CHECK_BLOCK == 0) {
      p->blk_err2[i / KT__CHECK_BLOCK - 1] = p->err2, p->blk_ref2[i / KT__CHECK_BLOCK - 1] = p->ref2;
      p->err2 = p->ref2 = 0.0;
    }
    double ai = p->a[i], ei = p->e[i];
    if (isnan(ai)) r->nan_count++;
    else if (isinf(ai)) r->inf_count++;
    double ratio;
    if (isnan(ei) || isnan(ai) || isinf(ei) || isinf(ai)) {
      /* NaN must meet NaN; Inf must meet Inf of the same sign. */
      int same = (isnan(ei) && isnan(ai)) || (isinf(ei) && ai == ei);
      if (same) continue;
      r->special_mismatch++;
      r->over++;
      ratio = INFINITY;
    } else {
      double err = fabs(ai - ei);
      double allowed = r->tol.atol + r->tol.rtol * fabs(ei);
      p->err2 += err * err;
      p->ref2 += ei * ei;
      if (err > r->max_abs) r->max_abs = err;
      if (ei != 0.0) {
        double rel = err / fabs(ei);
        if (rel > r->max_rel) r->max_rel = rel;
        d->rel[d->nrel++] = rel;
        d->hist[hist_bin(rel)]++;
      }
      if (err > allowed) r->over++;
      ratio = allowed > 0.0 ? err / allowed : (err > 0.0 ? INFINITY : 0.0);
    }
    keep_worst(d, ratio, i, ai, ei);
  }
  if (p->blk_err2 && p->hi > p->lo) {
    p->blk_err2[(p->hi - 1) / KT__CHECK_BLOCK] = p->err2;
    p->blk_ref2[(p->hi - 1) / KT__CHECK_BLOCK] = p->ref2;
  }
}

static void *compare_thread(void *p) {
  compare_range(p);
  return NULL;
}

/* Large outputs are compared in ranges on the host's cores (as the
 * references run, ke_ref_threads); the ranges merge in index order, so
 * the worst list, the counts and the quantiles are those of one pass,
 * and the NMSE's sums are added block by block in index order: the same
 * figures on any number of threads. */
#define KT__CHECK_PARALLEL_MIN (1 << 20)
#define KT__CHECK_MAX_PARTS 64

static void compare(const double *a, const double *e, int64_t n, kt_check_result *r,
                    dist *d) {
  int np = n >= KT__CHECK_PARALLEL_MIN ? ke_ref_threads() : 1;
  if (np > KT__CHECK_MAX_PARTS) np = KT__CHECK_MAX_PARTS;
  part parts[KT__CHECK_MAX_PARTS];
  pthread_t tid[KT__CHECK_MAX_PARTS];
  int started[KT__CHECK_MAX_PARTS] = {0};
  const int64_t nblk = n >= KT__CHECK_PARALLEL_MIN ? (n + KT__CHECK_BLOCK - 1) / KT__CHECK_BLOCK : 0;
  double *blk = nblk ? malloc((size_t)(2 * nblk) * sizeof *blk) : NULL;
  ck_assert_msg(!nblk || blk, "no memory for the check's %lld block sums", (long long)nblk);
  for (int k = 0; k < np; k++) {
    part *p = &parts[k];
    memset(p, 0, sizeof *p);
    p->a = a, p->e = e;
    p->lo = n * k / np, p->hi = n * (k + 1) / np;
    if (blk) {   /* ranges on block boundaries: each block one thread's */
      p->lo = k == 0 ? 0 : p->lo / KT__CHECK_BLOCK * KT__CHECK_BLOCK;
      p->hi = k == np - 1 ? n : p->hi / KT__CHECK_BLOCK * KT__CHECK_BLOCK;
      p->blk_err2 = blk, p->blk_ref2 = blk + nblk;
    }
    p->r.tol = r->tol;
    p->d.rel = d->rel + p->lo;
    if (k > 0) started[k] = pthread_create(&tid[k], NULL, compare_thread, p) == 0;
  }
  compare_range(&parts[0]);
  for (int k = 1; k < np; k++) {
    if (started[k]) pthread_join(tid[k], NULL);
    else compare_range(&parts[k]);   /* no thread: do it here */
  }
  double err2 = 0.0, ref2 = 0.0;
  for (int k = 0; k < np; k++) {
    const part *p = &parts[k];
    r->nan_count += p->r.nan_count, r->inf_count += p->r.inf_count;
    r->special_mismatch += p->r.special_mismatch, r->over += p->r.over;
    if (p->r.max_abs > r->max_abs) r->max_abs = p->r.max_abs;
    if (p->r.max_rel > r->max_rel) r->max_rel = p->r.max_rel;
    if (!blk) err2 += p->err2, ref2 += p->ref2;
    memmove(d->rel + d->nrel, p->d.rel, p->d.nrel * sizeof *d->rel);
    d->nrel += p->d.nrel;
    for (int b = 0; b < KP_HIST_BINS; b++) d->hist[b] += p->d.hist[b];
    for (int t = 0; t < p->d.ntop; t++)
      keep_worst(d, p->d.top[t].ratio, p->d.top[t].index, p->d.top[t].actual,
                 p->d.top[t].expected);
  }
  for (int64_t b = 0; b < nblk; b++) err2 += blk[b], ref2 += blk[nblk + b];
  free(blk);
  r->nmse = ref2 > 0.0 ? err2 / ref2 : (err2 > 0.0 ? INFINITY : 0.0);
  if (d->ntop) {   /* else every element is exact: worst_index stays 0 */
    r->worst_index = d->top[0].index;
    r->worst_actual = d->top[0].actual;
    r->worst_expected = d->top[0].expected;
  }
  static const double q[] = {0.5, 0.9, 0.99, 0.999};
  double out[4];
  quantiles(d->rel, d->nrel, q, out, 4);
  r->rel_n = (int64_t)d->nrel;
  r->rel_p50 = out[0], r->rel_p90 = out[1], r->rel_p99 = out[2], r->rel_p999 = out[3];
}

/* "a,b,c" of the numbers, into a buffer of n bytes. */
static void join(char *out, size_t n, const double *v, int count, int integral) {
  size_t len = 0;
  out[0] = '\0';
  for (int i = 0; i < count && len < n; i++)
    len += (size_t)snprintf(out + len, n - len, integral ? "%s%.0f" : "%s%.17g",
                            i ? "," : "", v[i]);
}

int kt_check_at(const char *name, const ke_tensor *actual, const double *expected,
                kt_tol tol, kt_check_result *out, const char *file, int line) {
  kt_check_result r;
  memset(&r, 0, sizeof r);
  r.tol = tol_lookup(name, tol);
  r.n = ke_tensor_numel(actual);
  double *a = kt_to_doubles_at(actual, file, line);
  dist d = {0};
  d.rel = malloc(((size_t)r.n + 1) * sizeof *d.rel);
  ck_assert_msg(d.rel != NULL, "kt_check: out of host memory (%lld elements)",
                (long long)r.n);
  compare(a, expected, r.n, &r, &d);
  free(a), free(d.rel);
  r.guard_damaged = kt__guard_damaged(actual->data, file, line);
  /* A budget excuses a few finite misses (rounding at a format's
   * boundaries), never a NaN or an Inf in the wrong place. */
  r.pass = r.special_mismatch == 0 && r.over <= r.tol.max_over && !r.guard_damaged &&
           (r.tol.max_nmse <= 0.0 || r.nmse <= r.tol.max_nmse);

  double hist[KP_HIST_BINS], idx[KP_WORST_K], act[KP_WORST_K], exp_[KP_WORST_K];
  for (int i = 0; i < KP_HIST_BINS; i++) hist[i] = (double)d.hist[i];
  for (int i = 0; i < d.ntop; i++)
    idx[i] = (double)d.top[i].index, act[i] = d.top[i].actual, exp_[i] = d.top[i].expected;
  char hist_s[KP_HIST_BINS * 21], idx_s[KP_WORST_K * 21], act_s[KP_WORST_K * 26],
      exp_s[KP_WORST_K * 26];
  join(hist_s, sizeof hist_s, hist, KP_HIST_BINS, 1);
  join(idx_s, sizeof idx_s, idx, d.ntop, 1);
  join(act_s, sizeof act_s, act, d.ntop, 0);
  join(exp_s, sizeof exp_s, exp_, d.ntop, 0);

  kp_check c = {name, ke_dtype_name(actual->dtype), r.n, r.max_abs, r.max_rel,
                r.nmse, r.worst_index, r.worst_actual, r.worst_expected,
                r.over, r.nan_count, r.inf_count, r.special_mismatch,
                r.guard_damaged, r.tol.atol, r.tol.rtol, r.tol.max_nmse,
                r.pass, r.rel_n, r.rel_p50, r.rel_p90, r.rel_p99, r.rel_p999,
                KP_HIST_LO, hist_s, idx_s, act_s, exp_s, r.tol.max_over};
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_check, &c);
  kt__emit(&rec);
  kp_check_sentence(&c, kt__state.last_summary, sizeof kt__state.last_summary);
  if (out) *out = r;
  return r.pass;
}

const char *kt_last_check_summary(void) { return kt__state.last_summary; }
