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

/* An assertion of a helper, at its caller's line (kiln/test.h). */
#define AT(file, line, cond, ...) \
  ((cond) ? _mark_point((file), (line)) : _ck_assert_failed((file), (line), __VA_ARGS__))
/* kt_assert_ok at the caller's line. */
#define OK_AT(file, line, expr)                                                 \
  do {                                                                         \
    int st_ = (expr);                                                          \
    AT(file, line, st_ == KE_OK, "Assertion '" #expr "' failed", "%s returned %s: %s", \
       #expr, ke_status_name(st_), ke_last_error());                           \
  } while (0)

ke_context *kt__ctx_at(const char *file, int line) {
  AT(file, line, kt__state.ctx != NULL, "Assertion 'kt_ctx()' failed",
     "kt_ctx(): no engine context (host_only test?)");
  return kt__state.ctx;
}

/* splitmix64: cheap, well-mixed, enough to derive independent seeds. */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t kt_seed(void) {
  uint64_t h = kt__state.run_seed;
  for (const char *p = kt__state.test_id; *p; p++)
    h = mix(h ^ (unsigned char)*p);
  return mix(h + ++kt__state.seed_counter);
}

/* ---- Guarded buffers ------------------------------------------------------ */

#define KT__GUARD_BYTES 256
#define KT__MAX_GUARDED 256

typedef struct guarded {
  void *data;
  void *base;
  size_t bytes;
} guarded;

static guarded guards[KT__MAX_GUARDED];
static int nguards;

static unsigned char guard_byte(size_t i) {
  return (unsigned char)(0x5a ^ (i * 37 + 11));
}

static void guard_fill(unsigned char *host) {
  for (size_t i = 0; i < KT__GUARD_BYTES; i++) host[i] = guard_byte(i);
}

static guarded *guard_find(const void *data) {
  for (int i = 0; i < nguards; i++)
    if (guards[i].data == data) return &guards[i];
  return NULL;
}

/* 1 when both guard zones still hold the pattern. */
static int guard_intact(const guarded *g, const char *file, int line) {
  unsigned char want[KT__GUARD_BYTES], got[KT__GUARD_BYTES];
  guard_fill(want);
  const unsigned char *base = g->base;
  ke_context *ctx = kt__ctx_at(file, line);
  OK_AT(file, line, ke_copy_to_host(ctx, got, base, KT__GUARD_BYTES));
  if (memcmp(want, got, KT__GUARD_BYTES) != 0) return 0;
  OK_AT(file, line, ke_copy_to_host(ctx, got, base + KT__GUARD_BYTES + g->bytes,
                                    KT__GUARD_BYTES));
  return memcmp(want, got, KT__GUARD_BYTES) == 0;
}

void kt_alloc_at(ke_tensor *t, ke_dtype dtype, int rank, const int64_t *shape,
                 const char *file, int line) {
  AT(file, line, nguards < KT__MAX_GUARDED, "Assertion 'kt_alloc' failed",
     "kt_alloc: more than %d guarded buffers", KT__MAX_GUARDED);
  OK_AT(file, line, ke_tensor_init(t, dtype, rank, shape));
  size_t bytes = (size_t)ke_tensor_numel(t) * ke_dtype_size(dtype);
  ke_context *ctx = kt__ctx_at(file, line);
  void *base = NULL;
  OK_AT(file, line, ke_malloc_at(ctx, &base, bytes + 2 * KT__GUARD_BYTES, file, line));
  unsigned char pattern[KT__GUARD_BYTES];
  guard_fill(pattern);
  unsigned char *b = base;
  OK_AT(file, line, ke_copy_to_device(ctx, b, pattern, KT__GUARD_BYTES));
  OK_AT(file, line, ke_copy_to_device(ctx, b + KT__GUARD_BYTES + bytes, pattern,
                                      KT__GUARD_BYTES));
  t->data = b + KT__GUARD_BYTES;
  guards[nguards++] = (guarded){t->data, base, bytes};
}

void kt_free_at(ke_tensor *t, const char *file, int line) {
  if (!t || !t->data) return;
  guarded *g = guard_find(t->data);
  if (!g) {
    OK_AT(file, line, ke_tensor_free(kt__ctx_at(file, line), t));
    return;
  }
  int intact = guard_intact(g, file, line);
  void *base = g->base;
  *g = guards[--nguards];
  t->data = NULL;
  OK_AT(file, line, ke_free(kt__ctx_at(file, line), base));
  AT(file, line, intact, "Assertion 'kt_free' failed",
     "guard bytes around a buffer were overwritten: a kernel wrote out of bounds");
}

void kt_fill_uniform_at(ke_tensor *t, float lo, float hi, const char *file, int line) {
  OK_AT(file, line, ke_rand_uniform(kt__ctx_at(file, line), t, kt_seed(), lo, hi));
}

void kt_fill_normal_at(ke_tensor *t, float mean, float stddev, const char *file, int line) {
  OK_AT(file, line, ke_rand_normal(kt__ctx_at(file, line), t, kt_seed(), mean, stddev));
}

double *kt_to_doubles_at(const ke_tensor *t, const char *file, int line) {
  double *v = malloc((size_t)ke_tensor_numel(t) * sizeof *v);
  AT(file, line, v != NULL, "Assertion 'kt_to_doubles' failed",
     "kt_to_doubles: out of host memory");
  OK_AT(file, line, ke_tensor_to_doubles(kt__ctx_at(file, line), t, v));
  return v;
}

void kt_from_doubles_at(ke_tensor *t, const double *values, const char *file, int line) {
  OK_AT(file, line, ke_tensor_from_doubles(kt__ctx_at(file, line), t, values));
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

/* The last override whose glob matches the suite, the test or the check
 * (as suite/test/check) wins (harness/common/select.h). */
static kt_tol tol_lookup(const char *check, kt_tol tol) {
  const ksel_tol *o =
      ksel_tol_pick(kt__state.tol, kt__state.ntol,
                    kt__state.suite ? kt__state.suite->name : NULL,
                    kt__state.test_id, check);
  if (o) tol.atol = o->atol, tol.rtol = o->rtol;
  return tol;
}

static void compare(const double *a, const double *e, int64_t n,
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

int kt_check_at(const char *name, const ke_tensor *actual, const double *expected,
                kt_tol tol, kt_check_result *out, const char *file, int line) {
  kt_check_result r;
  memset(&r, 0, sizeof r);
  r.tol = tol_lookup(name, tol);
  r.n = ke_tensor_numel(actual);
  double *a = kt_to_doubles_at(actual, file, line);
  compare(a, expected, r.n, &r);
  free(a);
  const guarded *g = guard_find(actual->data);
  r.guard_damaged = g ? !guard_intact(g, file, line) : 0;
  r.pass = r.over == 0 && !r.guard_damaged &&
           (r.tol.max_nmse <= 0.0 || r.nmse <= r.tol.max_nmse);

  kp_check c = {name, ke_dtype_name(actual->dtype), r.n, r.max_abs, r.max_rel,
                 r.nmse, r.worst_index, r.worst_actual, r.worst_expected,
                 r.over, r.nan_count, r.inf_count, r.special_mismatch,
                 r.guard_damaged, r.tol.atol, r.tol.rtol, r.tol.max_nmse,
                 r.pass};
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_check, &c);
  kt__emit(&rec);
  kp_check_sentence(&c, kt__state.last_summary, sizeof kt__state.last_summary);
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
  kp_encode(&rec, &kp_rec_note, &(kp_note){key ? key : "", value ? value : ""});
  kt__emit(&rec);
}

void kt_metric(const char *name, double value, const char *unit) {
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_metric, &(kp_metric){name, value, unit ? unit : ""});
  kt__emit(&rec);
}

/* ---- Fixture ---------------------------------------------------------------- */

static double body_start;

static void emit_phase(const char *name, double ms) {
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_phase, &(kp_phase){name, ms});
  kt__emit(&rec);
}

void kt__device_of(const ke_device_info *d, kp_device *out) {
  *out = (kp_device){ke_backend_name(), d->index, d->name, d->arch,
                     d->warp_size, d->multiprocessors, d->l2_bytes,
                     d->total_bytes, d->free_bytes, NULL, KP_NONE, NULL};
}

static void emit_device(const ke_device_info *d) {
  kp_device dev;
  kt__device_of(d, &dev);
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_device, &dev);
  kt__emit(&rec);
}

static void emit_memory(const char *when) {
  size_t free_b = 0, total_b = 0;
  if (ke_mem_info(kt__state.ctx, &free_b, &total_b) != KE_OK) return;
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_memory, &(kp_memory){when, free_b, total_b});
  kt__emit(&rec);
}

/* Every allocation outstanding now, oldest first (malloc'd; *n of them). */
static ke_allocation *outstanding(ke_context *ctx, size_t *n) {
  *n = ke_ledger_outstanding(ctx, NULL, 0);
  ke_allocation *all = malloc((*n ? *n : 1) * sizeof *all);
  ck_assert_msg(all != NULL, "out of host memory listing %zu allocations", *n);
  *n = ke_ledger_outstanding(ctx, all, *n);
  return all;
}

/* The serial from which allocations are the test's: past every one alive
 * now. Serials only grow, so an allocation alive after the test with a
 * serial below it was alive before it (a shared process's earlier tests),
 * whatever their number. */
static uint64_t ledger_mark(ke_context *ctx) {
  size_t n;
  ke_allocation *all = outstanding(ctx, &n);
  uint64_t mark = 0;
  for (size_t i = 0; i < n; i++)
    if (all[i].serial >= mark) mark = all[i].serial + 1;
  free(all);
  return mark;
}

/* The test's leaks: a record for each (the first KP_LEAKS_LISTED), then
 * the exact totals. */
static void emit_leaks(void) {
  size_t n;
  ke_allocation *live = outstanding(kt__state.ctx, &n);
  kp_leak_total total = {0, 0, 0};
  kp_record_out rec;
  for (size_t i = 0; i < n; i++) {
    if (live[i].serial < kt__state.ledger_mark) continue;
    total.count++;
    total.bytes += live[i].bytes;
    if (total.listed == KP_LEAKS_LISTED) continue;
    total.listed++;
    kp_leak l = {live[i].bytes, live[i].file, live[i].line, live[i].serial};
    kp_encode(&rec, &kp_rec_leak, &l);
    kt__emit(&rec);
  }
  free(live);
  if (total.count == 0) return;
  kp_encode(&rec, &kp_rec_leak_total, &total);
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
  nguards = 0;
  if (kt__state.test->host_only) {
    body_start = kt__now_ms();
    return;
  }
  /* A context opened before the test was known (--warm) is reported here,
   * after the test record, exactly as one opened now. */
  if (!kt__state.ctx && !kt__state.opened) (void)kt__context_open();
  if (kt__state.opened) {
    kt__state.opened = 0;
    emit_phase("runtime_init", kt__state.runtime_init_ms);
    if (kt__state.open_status != KE_OK) {
      kt__state.setup_failed = kt__state.open_status;
      ck_abort_msg("%s", kt__state.setup_error);
    }
    emit_device(ke_context_device(kt__state.ctx));
  }
  kt__state.ledger_mark = ledger_mark(kt__state.ctx);
  ke_timing_reset(kt__state.ctx);
  emit_memory("before");
  body_start = kt__now_ms();
}

void kt__fixture_teardown(void) {
  emit_phase("body", kt__now_ms() - body_start);
  if (!kt__state.ctx) return;
  double t0 = kt__now_ms();

  ke_kernel_stats stats[64];
  size_t nstats = 0;
  if (ke_timing_collect(kt__state.ctx, stats, 64, &nstats) == KE_OK) {
    for (size_t i = 0; i < nstats && i < 64; i++) {
      kp_kernel k = {stats[i].name, stats[i].launches, stats[i].total_ms,
                     stats[i].min_ms, stats[i].median_ms, stats[i].max_ms};
      kp_record_out rec;
      kp_encode(&rec, &kp_rec_kernel, &k);
      kt__emit(&rec);
    }
  }

  /* Whatever this test allocated and did not free is a leak. Guarded
   * buffers the test forgot count too: their call site is the test's. The
   * engine's own scratch (split decode) is the engine's, not the test's:
   * it is given back first, so that it is never counted (if that fails,
   * it stays listed, and shows as a leak). */
  (void)ke_scratch_release(kt__state.ctx);
  emit_leaks();
  emit_memory("after");

  if (!kt__state.keep_context) {
    (void)ke_context_close(kt__state.ctx);
    kt__state.ctx = NULL;
  }
  emit_phase("teardown", kt__now_ms() - t0);
}
