/* The runner's probes: processes that open the engine context on device 0
 * and report on it, without a test. --context-probe measures what a
 * process that only opens and closes a context costs (`kiln bench`'s
 * ceiling); --health-probe checks that a device still works after a test
 * on it crashed, timed out or met a device fault (kiln takes a device that
 * fails it out of the run: docs/devices.md, "Device health").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child-impl.h"
#include "kiln/softmax.h"

/* Records go to --result-fd when given, else to stdout. */
static void probe_send(const kp_rdesc *d, const void *rec) {
  kp_record_out out;
  kp_encode(&out, d, rec);
  kp_send(&out, kt__state.result_fd >= 0 ? kt__state.result_fd : STDOUT_FILENO);
}

static void phase(const char *name, double ms) {
  probe_send(&kp_rec_phase, &(kp_phase){name, ms});
}

static int finish(const char *status, const char *message) {
  probe_send(&kp_rec_result, &(kp_result){status, message, NULL, 0});
  probe_send(&kp_rec_end, &(kp_end){0});
  return strcmp(status, "pass") == 0 ? 0 : 3;
}

/* Opens the context on device 0; its time is the phase runtime_init. */
static ke_context *open_device0(void) {
  ke_context_options opts;
  ke_context_options_init(&opts);
  ke_context *ctx = NULL;
  double t0 = kt__now_ms();
  int st = ke_context_open(&opts, &ctx);
  phase("runtime_init", kt__now_ms() - t0);
  if (st != KE_OK) return NULL;
  kp_device dev;
  kt__device_of(ke_context_device(ctx), &dev);
  probe_send(&kp_rec_device, &dev);
  return ctx;
}

/* What a process costs that only opens the engine context and exits,
 * nothing else (`kiln bench` measures the ceiling for isolated tests with
 * it). Records on stdout: phase runtime_init (context open, runtime start
 * included), the device, phase teardown (close), result, end. */
int kt__context_probe(double main_ms) {
  /* KILN_SPAWN_MS: CLOCK_MONOTONIC ms when the caller started us; the gap
   * to main() is process creation, exec, dynamic linking, initialisers. */
  const char *spawn = getenv("KILN_SPAWN_MS");
  char *end;
  double spawn_ms = spawn ? strtod(spawn, &end) : 0;
  if (spawn && *spawn && !*end && spawn_ms > 0) phase("process_start", main_ms - spawn_ms);
  ke_context *ctx = open_device0();
  if (!ctx) return finish("error", ke_last_error());
  double t0 = kt__now_ms();
  int st = ke_context_close(ctx);
  phase("teardown", kt__now_ms() - t0);
  return finish(st == KE_OK ? "pass" : "error", st == KE_OK ? "" : ke_last_error());
}

/* ---- --health-probe -------------------------------------------------------------- */

enum { ROWS = 8, COLS = 256 };

/* A small softmax on known inputs against the engine's double reference,
 * and its result copied back through the device: the device computes, its
 * memory holds what was written, and its stream completes. 0, or -1 with
 * why. */
static int known_kernel(ke_context *ctx, char *why, size_t n) {
  static double x[ROWS * COLS], want[ROWS * COLS], got[ROWS * COLS];
  for (int i = 0; i < ROWS * COLS; i++) x[i] = 4.0 * sin(0.37 * i);
  ke_softmax_params p;
  ke_softmax_params_init(&p);
  ke_softmax_ref(x, want, ROWS, COLS, &p, ROWS);
  int64_t shape[2] = {ROWS, COLS};
  ke_tensor tx = {0}, ty = {0};
  int st = ke_tensor_alloc(ctx, &tx, KE_F32, 2, shape);
  if (st == KE_OK) st = ke_tensor_alloc(ctx, &ty, KE_F32, 2, shape);
  if (st == KE_OK) st = ke_tensor_from_doubles(ctx, &tx, x);
  if (st == KE_OK) st = ke_softmax(ctx, &tx, &ty, &p);
  if (st == KE_OK) st = ke_tensor_to_doubles(ctx, &ty, got);
  if (st != KE_OK) {
    snprintf(why, n, "softmax of %dx%d: %s: %s", ROWS, COLS, ke_status_name(st),
             ke_last_error());
    return -1;
  }
  for (int i = 0; i < ROWS * COLS; i++)
    if (!(fabs(got[i] - want[i]) <= 1e-6 + 1e-4 * fabs(want[i]))) {
      snprintf(why, n, "softmax of %dx%d: element %d is %.9g, expected %.9g", ROWS,
               COLS, i, got[i], want[i]);
      return -1;
    }
  (void)ke_tensor_free(ctx, &tx);
  (void)ke_tensor_free(ctx, &ty);
  return 0;
}

/* Is device 0 fit for another test? A fresh context, a known kernel and
 * its answer, and a clean close. Exit 0 with result pass; 3 with result
 * error and why (the parent's timeout covers a probe that hangs). */
int kt__health_probe(void) {
  ke_context *ctx = open_device0();
  if (!ctx) return finish("error", ke_last_error());
  char why[1024];
  double t0 = kt__now_ms();
  int bad = known_kernel(ctx, why, sizeof why);
  phase("body", kt__now_ms() - t0);
  int st = ke_context_close(ctx);
  if (bad) return finish("error", why);
  if (st != KE_OK) return finish("error", ke_last_error());
  return finish("pass", "");
}
