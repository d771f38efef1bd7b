/* The slowest tests of a report and where their time went: printed at the
 * end of `kiln run` (and by `kiln report show`), so that a test that takes
 * minutes, and why, is read off the console rather than the YAML. */
#include "report-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double phase_ms(const krep_test *t, const char *name) {
  int i = 0;
  const krep_rec *r;
  while ((r = krep_test_next(t, "phase", &i))) {
    kp_phase ph;
    if (krep_rec_decode(r, &kp_rec_phase, &ph) == 0 && ph.name &&
        strcmp(ph.name, name) == 0)
      return ph.ms;
  }
  return NAN;
}

static double kernels_ms(const krep_test *t, long long *launches) {
  double ms = 0.0;
  int i = 0;
  const krep_rec *r;
  *launches = 0;
  while ((r = krep_test_next(t, "kernel", &i))) {
    kp_kernel k;
    if (krep_rec_decode(r, &kp_rec_kernel, &k) != 0) continue;
    if (isfinite(k.total_ms)) ms += k.total_ms;
    *launches += (long long)k.launches;
  }
  return ms;
}

static int by_wall(const void *a, const void *b) {
  const krep_test *x = *(const krep_test *const *)a, *y = *(const krep_test *const *)b;
  if (x->wall_ms != y->wall_ms) return x->wall_ms < y->wall_ms ? 1 : -1;
  return x->seq - y->seq;
}

void krep_durations(const krep_report *rep, int n, FILE *out) {
  const krep_test **v = kh_xcalloc((size_t)rep->ntests + 1, sizeof *v);
  int nv = 0;
  for (int i = 0; i < rep->ntests; i++) {
    const krep_test *t = rep->tests[i];
    if (t->final && isfinite(t->wall_ms)) v[nv++] = t;
  }
  qsort(v, (size_t)nv, sizeof *v, by_wall);
  if (nv > n) nv = n;
  if (nv > 0)
    fprintf(out, "slowest %d test%s (wall: reference + kernels + rest of the "
                 "body, outside the body):\n", nv, nv == 1 ? "" : "s");
  for (int i = 0; i < nv; i++) {
    const krep_test *t = v[i];
    long long launches;
    const double body = phase_ms(t, "body"), ref = phase_ms(t, "reference");
    const double kern = kernels_ms(t, &launches);
    fprintf(out, "  %8.2f s  %s", t->wall_ms / 1e3, t->id);
    if (t->repeat != 1) fprintf(out, " (repeat %d)", t->repeat);
    if (isfinite(body)) {
      const double r = isfinite(ref) ? ref : 0.0;
      double rest = body - r - kern;
      if (rest < 0) rest = 0; /* kernels overlap the body's host work */
      fprintf(out, ": reference %s%.2f s, kernels %.3f s (%lld launch%s), "
                   "rest %.2f s, outside %.2f s",
              isfinite(ref) ? "" : "? ", r / 1e3, kern / 1e3, launches,
              launches == 1 ? "" : "es", rest / 1e3,
              fmax(0.0, t->wall_ms - body) / 1e3);
    }
    fputc('\n', out);
  }
  free(v);
}
