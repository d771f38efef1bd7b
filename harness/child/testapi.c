/* The test API (kt_): context access, guarded buffers, random inputs,
 * skips, notes and the fixture (numeric checks are in check.c). Everything a
 * test learns is sent to the parent as protocol records the moment it is
 * known, so a test that crashes later still leaves it in the report.
 */
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
  AT(file, line, kt__state.ctx[0] != NULL, "Assertion 'kt_ctx()' failed",
     "kt_ctx(): no engine context (host_only test?)");
  return kt__state.ctx[0];
}

ke_context *kt_ctx_on(int i) {
  ck_assert_msg(i >= 0 && i < kt__state.nctx && kt__state.ctx[i] != NULL,
                "kt_ctx_on(%d): the test has contexts on %d device(s) (declare "
                ".devices in its KT_TEST)", i, kt__state.nctx);
  return kt__state.ctx[i];
}

int kt_device_count(void) { return kt__state.nctx; }

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

void kt__guards_reset(void) { nguards = 0; }

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

int kt__guard_damaged(const void *data, const char *file, int line) {
  const guarded *g = guard_find(data);
  return g ? !guard_intact(g, file, line) : 0;
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
