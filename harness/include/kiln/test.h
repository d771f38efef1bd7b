/* kiln test API: what a suite uses besides Check (prefix kt_).
 *
 * A suite is a set of Check tests (START_TEST/END_TEST, ck_assert_*) plus a
 * kiln registry entry per test with the metadata Check cannot hold: tags,
 * device slots, timeout, whether it needs a GPU. The runner runs one test
 * (or, with --isolation none, several) inside a checked fixture that opens
 * the engine context; numeric checks compare a device result with a
 * double-precision reference and are recorded in the report.
 */
#ifndef KILN_TEST_H
#define KILN_TEST_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Registry ------------------------------------------------------------ */

#define KT_WHOLE_DEVICE (-1) /* slots: every slot of the device */

typedef struct kt_test {
  const char *name;
  const TTest *const *check_test; /* &NAME, the pointer START_TEST makes */
  const char *tags;         /* comma-separated, added to the suite's */
  int slots;                /* device slots held; 0 means 1 */
  int timeout_s;            /* 0: the run's default */
  int host_only;            /* 1: needs no device and no context */
  int devices;              /* devices it needs at once (kiln takes slots on
                               that many, narrows the visible devices to
                               them, and the fixture opens a context on
                               each: kt_ctx_on); 0 means 1. Fewer on the
                               host: a skip with the reason */
} kt_test;

typedef struct kt_suite {
  const char *name;
  const char *tags;         /* comma-separated, applied to every test */
  const kt_test *tests;
  size_t ntests;
} kt_suite;

/* Registry entry for START_TEST(fn); the designated fields follow. */
#define KT_TEST(fn, ...) {.name = #fn, .check_test = &fn, __VA_ARGS__}

/* Defines the suite `sym` and registers it with the runner: a pointer to
 * it goes into the kt_suites linker section, which the runner's main
 * walks (no list kept by hand; the order is the link order). A suite file
 * must be linked as an object file: the linker leaves out members of a
 * static archive that nothing references (link such an archive whole). */
#define KT_SUITE(sym, suite_name, suite_tags, table)                         \
  const kt_suite sym = {.name = suite_name, .tags = suite_tags,              \
                        .tests = table,                                      \
                        .ntests = sizeof(table) / sizeof((table)[0])};       \
  static const kt_suite *const kt__registered_##sym                          \
      __attribute__((used, section("kt_suites"),                             \
                     aligned(sizeof(void *)))) = &sym

/* ---- Context and inputs -------------------------------------------------- */

/* Each helper below is a macro that passes its caller's file and line, so
 * that a failure inside it (guard bytes overwritten in kt_free, an engine
 * call refused in kt_alloc) is reported at the test's own line, not at the
 * helper's. */

/* The engine context the fixture opened for this test (on its first
 * device). */
ke_context *kt__ctx_at(const char *file, int line);
#define kt_ctx() kt__ctx_at(__FILE__, __LINE__)
/* A test of several devices (.devices = N): the context on its i-th device,
 * 0 <= i < kt_device_count(); kt_ctx() is kt_ctx_on(0). */
ke_context *kt_ctx_on(int i);
int kt_device_count(void);
/* A fresh seed: the run's seed (reported, settable with --seed) mixed with
 * the test id and a per-call counter, so every check gets new inputs and any
 * failure can be replayed. */
uint64_t kt_seed(void);

/* Allocates a packed tensor with guard zones on both sides, filled with a
 * known pattern; kt_check (and kt_free) verify the guards, so a kernel that
 * writes past its output fails the test. */
void kt_alloc_at(ke_tensor *t, ke_dtype dtype, int rank, const int64_t *shape,
                 const char *file, int line);
#define kt_alloc(t, dtype, rank, shape) \
  kt_alloc_at((t), (dtype), (rank), (shape), __FILE__, __LINE__)
void kt_free_at(ke_tensor *t, const char *file, int line);
#define kt_free(t) kt_free_at((t), __FILE__, __LINE__)
/* Uniform(lo, hi) / Normal(mean, std) device inputs with a fresh seed. */
void kt_fill_uniform_at(ke_tensor *t, float lo, float hi, const char *file, int line);
void kt_fill_normal_at(ke_tensor *t, float mean, float stddev, const char *file, int line);
#define kt_fill_uniform(t, lo, hi) kt_fill_uniform_at((t), (lo), (hi), __FILE__, __LINE__)
#define kt_fill_normal(t, m, s) kt_fill_normal_at((t), (m), (s), __FILE__, __LINE__)
/* The tensor as doubles (malloc'd; free with free()). */
double *kt_to_doubles_at(const ke_tensor *t, const char *file, int line);
void kt_from_doubles_at(ke_tensor *t, const double *values, const char *file, int line);
#define kt_to_doubles(t) kt_to_doubles_at((t), __FILE__, __LINE__)
#define kt_from_doubles(t, v) kt_from_doubles_at((t), (v), __FILE__, __LINE__)

/* ---- Numeric checks ------------------------------------------------------ */

/* |actual - expected| <= atol + rtol * |expected| per element, and the NMSE
 * over the tensor at most max_nmse (0: not checked).
 *
 * max_over is a mismatch budget: that many finite elements may exceed the
 * tolerance and the check still passes (never a NaN or an Inf where the
 * reference disagrees). It is for formats whose rounding boundaries make a
 * few exact misses legitimate (a value exactly between two codes of a
 * 4-bit format rounds either way); a check that sets one says why in a
 * comment and docs/kernels.md, and the report records it (`budget`).
 * Initialise it by field name ((kt_tol){.atol = 1e-9, .rtol = 1e-5}): a
 * later kiln may add fields, and those left out are 0 (not checked). */
typedef struct kt_tol {
  double atol;
  double rtol;
  double max_nmse;
  int64_t max_over;
} kt_tol;

/* Defaults per dtype (as torch.testing.assert_close): f32 1e-5/1.3e-6,
 * f16 1e-5/1e-3, bf16 1e-5/1.6e-2; no budget. */
kt_tol kt_tol_default(ke_dtype dtype);

typedef struct kt_check_result {
  int64_t n;
  double max_abs;
  double max_rel;
  double nmse;
  int64_t worst_index;      /* element with the largest error/tolerance */
  double worst_actual;
  double worst_expected;
  int64_t over;             /* elements over tolerance */
  int64_t nan_count;        /* NaN in actual */
  int64_t inf_count;        /* Inf in actual */
  int64_t special_mismatch; /* NaN/Inf where the reference disagrees */
  int guard_damaged;        /* bytes around the output were overwritten */
  kt_tol tol;
  int pass;
  /* The relative error |a - e| / |e| over the rel_n finite elements whose
   * expected value is not zero: nearest-rank quantiles (max_rel is its
   * maximum). */
  int64_t rel_n;
  double rel_p50, rel_p90, rel_p99, rel_p999;
} kt_check_result;

/* Compares a device tensor with a reference. NaN fails unless the reference
 * has NaN there; Inf must match in sign. The tolerance may be overridden
 * from the config or --tolerance (by suite, test or check name). Records the
 * check in the report, with its error distribution (quantiles, histogram,
 * the worst elements with their indices), and returns 1 when it passes. */
int kt_check_at(const char *name, const ke_tensor *actual, const double *expected,
                kt_tol tol, kt_check_result *out, const char *file, int line);
#define kt_check(name, actual, expected, tol, out) \
  kt_check_at((name), (actual), (expected), (tol), (out), __FILE__, __LINE__)
/* One-line summary of the last kt_check on this test. */
const char *kt_last_check_summary(void);

#define kt_assert_close(name, actual, expected, tol)                          \
  ck_assert_msg(kt_check((name), (actual), (expected), (tol), NULL),          \
                "%s", kt_last_check_summary())

/* Asserts that an engine call succeeded, naming the status and detail. */
#define kt_assert_ok(expr)                                                     \
  do {                                                                        \
    int kt__st = (expr);                                                      \
    ck_assert_msg(kt__st == KE_OK, "%s returned %s: %s", #expr,               \
                  ke_status_name(kt__st), ke_last_error());                   \
  } while (0)

/* Asserts that an engine call was refused with the given status. */
#define kt_assert_status(expr, want)                                           \
  do {                                                                        \
    int kt__st = (expr);                                                      \
    ck_assert_msg(kt__st == (want), "%s returned %s, expected %s (%s)",       \
                  #expr, ke_status_name(kt__st), ke_status_name(want),        \
                  ke_last_error());                                           \
  } while (0)

/* ---- Outcomes ------------------------------------------------------------ */

/* Ends the test as skipped, with a reason for the report. */
#define KT_SKIP(...)                                                          \
  do {                                                                        \
    kt__skip(__VA_ARGS__);                                                    \
    return;                                                                   \
  } while (0)
void kt__skip(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* A free-form note in the report (key and value). */
void kt_note(const char *key, const char *value);

/* A measured figure in the report (`metrics:` of the test's record): a
 * dotted name such as "softmax.f32.GBps", the value and its unit ("GB/s",
 * "TFLOP/s", "ms", "ratio"). Information for people and for `kiln report
 * diff`: a metric never decides the test's outcome, so speed is never a
 * timed assert. A name should be unique within a test; the report keeps
 * every record as sent. */
void kt_metric(const char *name, double value, const char *unit);

#ifdef __cplusplus
}
#endif
#endif
