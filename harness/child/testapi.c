/* The test API (kt_): context access, guarded buffers, random inputs,
 * numeric checks against double references, skips and notes. Everything a
 * test learns is sent to the parent as protocol records the moment it is
 * known, so a test that crashes later still leaves it in the report.
 */
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "child-impl.h"

kt__child kt__state = {.result_fd = -1, .cap_fraction = 0.7};

double kt__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void kt__emit(kp_record_out *r) {
  if (kt__state.result_fd >= 0) {
    /* A closed pipe means the parent is gone or gave up on us: carry on so
     * the test still ends normally; the parent classifies what it saw. */
    (void)kp_send(r, kt__state.result_fd);
  }
  if (kt__state.verbose) {
    r->buf[r->len] = '\0';
    printf("  | %s\n", r->buf);
  }
}

ke_context *kt_ctx(void) {
  ck_assert_msg(kt__state.ctx != NULL,
                "kt_ctx(): no engine context (host_only test?)");
  return kt__state.ctx;
}

/* splitmix64: cheap, well-mixed, enough to derive independent seeds. */
static uint64_t kt__mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t kt_seed(void) {
  uint64_t h = kt__state.run_seed;
  for (const char *p = kt__state.test_id; *p; p++)
    h = kt__mix(h ^ (unsigned char)*p);
  return kt__mix(h + ++kt__state.seed_counter);
}

/* ---- Guarded buffers ------------------------------------------------------ */

#define KT__GUARD_BYTES 256
#define KT__MAX_GUARDED 256

typedef struct kt__guarded {
  void *data;
  void *base;
  size_t bytes;
} kt__guarded;

static kt__guarded kt__guards[KT__MAX_GUARDED];
static int kt__nguards;

static unsigned char kt__guard_byte(size_t i) {
  return (unsigned char)(0x5a ^ (i * 37 + 11));
}

static void kt__guard_fill(unsigned char *host) {
  for (size_t i = 0; i < KT__GUARD_BYTES; i++) host[i] = kt__guard_byte(i);
}

static kt__guarded *kt__guard_find(const void *data) {
  for (int i = 0; i < kt__nguards; i++)
    if (kt__guards[i].data == data) return &kt__guards[i];
  return NULL;
}

/* 1 when both guard zones still hold the pattern. */
static int kt__guard_intact(const kt__guarded *g) {
  unsigned char want[KT__GUARD_BYTES], got[KT__GUARD_BYTES];
  kt__guard_fill(want);
  const unsigned char *base = g->base;
  kt_assert_ok(ke_copy_to_host(kt_ctx(), got, base, KT__GUARD_BYTES));
  if (memcmp(want, got, KT__GUARD_BYTES) != 0) return 0;
  kt_assert_ok(ke_copy_to_host(kt_ctx(), got,
                               base + KT__GUARD_BYTES + g->bytes,
                               KT__GUARD_BYTES));
  return memcmp(want, got, KT__GUARD_BYTES) == 0;
}

void kt_alloc_at(ke_tensor *t, ke_dtype dtype, int rank, const int64_t *shape,
                 const char *file, int line) {
  ck_assert_msg(kt__nguards < KT__MAX_GUARDED,
                "kt_alloc: more than %d guarded buffers", KT__MAX_GUARDED);
  kt_assert_ok(ke_tensor_init(t, dtype, rank, shape));
  size_t bytes = (size_t)ke_tensor_numel(t) * ke_dtype_size(dtype);
  void *base = NULL;
  kt_assert_ok(ke_malloc_at(kt_ctx(), &base, bytes + 2 * KT__GUARD_BYTES,
                            file, line));
  unsigned char pattern[KT__GUARD_BYTES];
  kt__guard_fill(pattern);
  unsigned char *b = base;
  kt_assert_ok(ke_copy_to_device(kt_ctx(), b, pattern, KT__GUARD_BYTES));
  kt_assert_ok(ke_copy_to_device(kt_ctx(), b + KT__GUARD_BYTES + bytes,
                                 pattern, KT__GUARD_BYTES));
  t->data = b + KT__GUARD_BYTES;
  kt__guards[kt__nguards++] = (kt__guarded){t->data, base, bytes};
}

void kt_free(ke_tensor *t) {
  if (!t || !t->data) return;
  kt__guarded *g = kt__guard_find(t->data);
  if (!g) {
    kt_assert_ok(ke_tensor_free(kt_ctx(), t));
    return;
  }
  int intact = kt__guard_intact(g);
  void *base = g->base;
  *g = kt__guards[--kt__nguards];
  t->data = NULL;
  kt_assert_ok(ke_free(kt_ctx(), base));
  ck_assert_msg(intact, "guard bytes around a buffer were overwritten: "
                        "a kernel wrote out of bounds");
}

void kt_fill_uniform(ke_tensor *t, float lo, float hi) {
  kt_assert_ok(ke_rand_uniform(kt_ctx(), t, kt_seed(), lo, hi));
}

void kt_fill_normal(ke_tensor *t, float mean, float stddev) {
  kt_assert_ok(ke_rand_normal(kt_ctx(), t, kt_seed(), mean, stddev));
}

double *kt_to_doubles(const ke_tensor *t) {
  double *v = malloc((size_t)ke_tensor_numel(t) * sizeof *v);
  ck_assert_msg(v != NULL, "kt_to_doubles: out of host memory");
  kt_assert_ok(ke_tensor_to_doubles(kt_ctx(), t, v));
  return v;
}

void kt_from_doubles(ke_tensor *t, const double *values) {
  kt_assert_ok(ke_tensor_from_doubles(kt_ctx(), t, values));
}

/* ---- Numeric checks ------------------------------------------------------- */

kt_tol kt_tol_default(ke_dtype dtype) {
  switch (dtype) {
  case KE_F16: return (kt_tol){1e-5, 1e-3, 0.0};
  case KE_BF16: return (kt_tol){1e-5, 1.6e-2, 0.0};
  case KE_F32:
  default: return (kt_tol){1e-5, 1.3e-6, 0.0};
  }
}

/* The last override whose pattern matches the suite, the test or the check
 * (as suite/test/check) wins. */
static kt_tol kt__tol_lookup(const char *check, kt_tol tol) {
  char full[512];
  snprintf(full, sizeof full, "%s/%s", kt__state.test_id, check);
  for (int i = 0; i < kt__state.ntol; i++) {
    const kt__tol_override *o = &kt__state.tol[i];
    if (fnmatch(o->pattern, full, 0) == 0 ||
        fnmatch(o->pattern, kt__state.test_id, 0) == 0 ||
        (kt__state.suite && fnmatch(o->pattern, kt__state.suite->name, 0) == 0)) {
      tol.atol = o->atol;
      tol.rtol = o->rtol;
    }
  }
  return tol;
}

static void kt__compare(const double *a, const double *e, int64_t n,
                        kt_check_result *r) {
  double err2 = 0.0, ref2 = 0.0, worst_ratio = -1.0;
  for (int64_t i = 0; i < n; i++) {
    double ai = a[i], ei = e[i];
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
      err2 += err * err;
      ref2 += ei * ei;
      if (err > r->max_abs) r->max_abs = err;
      if (ei != 0.0 && err / fabs(ei) > r->max_rel) r->max_rel = err / fabs(ei);
      if (err > allowed) r->over++;
      ratio = allowed > 0.0 ? err / allowed : (err > 0.0 ? INFINITY : 0.0);
    }
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      r->worst_index = i;
      r->worst_actual = ai;
      r->worst_expected = ei;
    }
  }
  r->nmse = ref2 > 0.0 ? err2 / ref2 : (err2 > 0.0 ? INFINITY : 0.0);
}

int kt_check(const char *name, const ke_tensor *actual,
             const double *expected, kt_tol tol, kt_check_result *out) {
  kt_check_result r;
  memset(&r, 0, sizeof r);
  r.tol = kt__tol_lookup(name, tol);
  r.n = ke_tensor_numel(actual);
  double *a = kt_to_doubles(actual);
  kt__compare(a, expected, r.n, &r);
  free(a);
  const kt__guarded *g = kt__guard_find(actual->data);
  r.guard_damaged = g ? !kt__guard_intact(g) : 0;
  r.pass = r.over == 0 && !r.guard_damaged &&
           (r.tol.max_nmse <= 0.0 || r.nmse <= r.tol.max_nmse);

  kp_record_out rec;
  kp_begin(&rec, "check");
  kp_add_str(&rec, "name", name);
  kp_add_str(&rec, "dtype", ke_dtype_name(actual->dtype));
  kp_add_int(&rec, "n", r.n);
  kp_add_double(&rec, "max_abs", r.max_abs);
  kp_add_double(&rec, "max_rel", r.max_rel);
  kp_add_double(&rec, "nmse", r.nmse);
  kp_add_int(&rec, "worst_index", r.worst_index);
  kp_add_double(&rec, "worst_actual", r.worst_actual);
  kp_add_double(&rec, "worst_expected", r.worst_expected);
  kp_add_int(&rec, "over", r.over);
  kp_add_int(&rec, "nan", r.nan_count);
  kp_add_int(&rec, "inf", r.inf_count);
  kp_add_int(&rec, "special_mismatch", r.special_mismatch);
  kp_add_int(&rec, "guard_damaged", r.guard_damaged);
  kp_add_double(&rec, "atol", r.tol.atol);
  kp_add_double(&rec, "rtol", r.tol.rtol);
  kp_add_double(&rec, "max_nmse", r.tol.max_nmse);
  kp_add_int(&rec, "pass", r.pass);
  kt__emit(&rec);

  snprintf(kt__state.last_summary, sizeof kt__state.last_summary,
           "check %s (%s, %lld elements): %lld over tolerance (atol %g, "
           "rtol %g)%s; worst [%lld] = %.9g, expected %.9g; max abs %.3g, "
           "max rel %.3g, nmse %.3g, %lld NaN, %lld Inf",
           name, ke_dtype_name(actual->dtype), (long long)r.n,
           (long long)r.over, r.tol.atol, r.tol.rtol,
           r.guard_damaged ? "; GUARD BYTES OVERWRITTEN" : "",
           (long long)r.worst_index, r.worst_actual, r.worst_expected,
           r.max_abs, r.max_rel, r.nmse, (long long)r.nan_count,
           (long long)r.inf_count);
  if (out) *out = r;
  return r.pass;
}

const char *kt_last_check_summary(void) { return kt__state.last_summary; }

/* ---- Outcomes -------------------------------------------------------------- */

void kt__skip(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(kt__state.skip_reason, sizeof kt__state.skip_reason, fmt, ap);
  va_end(ap);
  kt__state.skipped = 1;
}

void kt_note(const char *key, const char *value) {
  kp_record_out rec;
  kp_begin(&rec, "note");
  kp_add_str(&rec, "key", key);
  kp_add_str(&rec, "value", value);
  kt__emit(&rec);
}

void kt_metric(const char *name, double value, const char *unit) {
  kp_record_out rec;
  kp_begin(&rec, "metric");
  kp_add_str(&rec, "name", name);
  kp_add_double(&rec, "value", value);
  kp_add_str(&rec, "unit", unit ? unit : "");
  kt__emit(&rec);
}

/* ---- Fixture ---------------------------------------------------------------- */

static ke_allocation kt__before[1024];
static size_t kt__nbefore;
static double kt__body_start;

static void kt__emit_phase(const char *name, double ms) {
  kp_record_out rec;
  kp_begin(&rec, "phase");
  kp_add_str(&rec, "name", name);
  kp_add_double(&rec, "ms", ms);
  kt__emit(&rec);
}

static void kt__emit_device(const ke_device_info *d) {
  kp_record_out rec;
  kp_begin(&rec, "device");
  kp_add_str(&rec, "backend", ke_backend_name());
  kp_add_int(&rec, "index", d->index);
  kp_add_str(&rec, "name", d->name);
  kp_add_str(&rec, "arch", d->arch);
  kp_add_int(&rec, "warp_size", d->warp_size);
  kp_add_uint(&rec, "l2_bytes", d->l2_bytes);
  kp_add_uint(&rec, "total_bytes", d->total_bytes);
  kp_add_uint(&rec, "free_bytes", d->free_bytes);
  kt__emit(&rec);
}

static void kt__emit_memory(const char *when) {
  size_t free_b = 0, total_b = 0;
  if (ke_mem_info(kt__state.ctx, &free_b, &total_b) != KE_OK) return;
  kp_record_out rec;
  kp_begin(&rec, "memory");
  kp_add_str(&rec, "when", when);
  kp_add_uint(&rec, "free_bytes", free_b);
  kp_add_uint(&rec, "total_bytes", total_b);
  kt__emit(&rec);
}

int kt__context_open(void) {
  ke_context_options opts;
  ke_context_options_init(&opts);
  opts.poison = kt__state.poison;
  opts.cap_fraction = kt__state.cap_fraction;
  double t0 = kt__now_ms();
  int st = ke_context_open(&opts, &kt__state.ctx);
  kt__state.runtime_init_ms = kt__now_ms() - t0;
  kt__state.opened = 1;
  kt__state.open_status = st;
  if (st != KE_OK) {
    kt__state.ctx = NULL;
    snprintf(kt__state.setup_error, sizeof kt__state.setup_error,
             "engine context: %s: %s", ke_status_name(st), ke_last_error());
  }
  return st;
}

void kt__fixture_setup(void) {
  kt__nguards = 0;
  if (kt__state.test->host_only) {
    kt__body_start = kt__now_ms();
    return;
  }
  /* A context opened before the test was known (--warm) is reported here,
   * after the test record, exactly as one opened now. */
  if (!kt__state.ctx && !kt__state.opened) (void)kt__context_open();
  if (kt__state.opened) {
    kt__state.opened = 0;
    kt__emit_phase("runtime_init", kt__state.runtime_init_ms);
    if (kt__state.open_status != KE_OK) {
      kt__state.setup_failed = kt__state.open_status;
      ck_abort_msg("%s", kt__state.setup_error);
    }
    kt__emit_device(ke_context_device(kt__state.ctx));
  }
  kt__nbefore = ke_ledger_outstanding(kt__state.ctx, kt__before, 1024);
  ke_timing_reset(kt__state.ctx);
  kt__emit_memory("before");
  kt__body_start = kt__now_ms();
}

static int kt__was_there_before(uint64_t serial) {
  for (size_t i = 0; i < kt__nbefore && i < 1024; i++)
    if (kt__before[i].serial == serial) return 1;
  return 0;
}

void kt__fixture_teardown(void) {
  kt__emit_phase("body", kt__now_ms() - kt__body_start);
  if (!kt__state.ctx) return;
  double t0 = kt__now_ms();

  ke_kernel_stats stats[64];
  size_t nstats = 0;
  if (ke_timing_collect(kt__state.ctx, stats, 64, &nstats) == KE_OK) {
    for (size_t i = 0; i < nstats && i < 64; i++) {
      kp_record_out rec;
      kp_begin(&rec, "kernel");
      kp_add_str(&rec, "name", stats[i].name);
      kp_add_uint(&rec, "launches", stats[i].launches);
      kp_add_double(&rec, "total_ms", stats[i].total_ms);
      kp_add_double(&rec, "min_ms", stats[i].min_ms);
      kp_add_double(&rec, "median_ms", stats[i].median_ms);
      kp_add_double(&rec, "max_ms", stats[i].max_ms);
      kt__emit(&rec);
    }
  }

  /* Whatever this test allocated and did not free is a leak. Guarded
   * buffers the test forgot count too: their call site is the test's. The
   * engine's own scratch (split decode) is the engine's, not the test's:
   * it is given back first, so that it is never counted (if that fails,
   * it stays listed, and shows as a leak). */
  (void)ke_scratch_release(kt__state.ctx);
  ke_allocation live[256];
  size_t nlive = ke_ledger_outstanding(kt__state.ctx, live, 256);
  for (size_t i = 0; i < nlive && i < 256; i++) {
    if (kt__was_there_before(live[i].serial)) continue;
    kp_record_out rec;
    kp_begin(&rec, "leak");
    kp_add_uint(&rec, "bytes", live[i].bytes);
    kp_add_str(&rec, "file", live[i].file);
    kp_add_int(&rec, "line", live[i].line);
    kp_add_uint(&rec, "serial", live[i].serial);
    kt__emit(&rec);
  }
  kt__emit_memory("after");

  if (!kt__state.keep_context) {
    (void)ke_context_close(kt__state.ctx);
    kt__state.ctx = NULL;
  }
  kt__emit_phase("teardown", kt__now_ms() - t0);
}
