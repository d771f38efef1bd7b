/* The Check fixture around every GPU test: it opens the test's engine
 * contexts (one per device the test uses; kiln narrowed the visible
 * devices to exactly those), reports the devices, device memory and the
 * clocks at the start, then after the body the kernel timings, leaks, the
 * peak device memory, the clocks at the end and any device fault, and
 * closes the contexts (unless several tests share them: --isolation none).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "child-impl.h"

static double body_start;
static double ref_start; /* ke_ref_ms() when the body started */

int kt__devices_needed(const kt_test *t) { return t->devices > 1 ? t->devices : 1; }

/* The devices to open contexts on: under kiln, one per device it gave the
 * test (KILN_DEVICE lists them; a config's resources: may ask for more than
 * the test declares); else, and when tests share the process, the test's
 * own .devices. */
static int devices_wanted(void) {
  const char *given = getenv("KILN_DEVICE");
  if (!given || !*given || kt__state.keep_context) return kt__devices_needed(kt__state.test);
  int n = 1;
  for (const char *p = given; *p; p++) n += *p == ',';
  return n;
}

/* ---- Records ------------------------------------------------------------------ */

static void emit_phase(const char *name, double ms) {
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_phase, &(kp_phase){name, ms});
  kt__emit(&rec);
}

void kt__device_of(const ke_device_info *d, kp_device *out) {
  *out = (kp_device){ke_backend_name(), d->index, d->name, d->arch,
                     d->warp_size, d->multiprocessors, d->l2_bytes,
                     d->total_bytes, d->free_bytes, NULL, KP_NONE, NULL, KP_NONE,
                     KP_NONE};
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
  if (ke_mem_info(kt__state.ctx[0], &free_b, &total_b) != KE_OK) return;
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_memory, &(kp_memory){when, free_b, total_b, KP_UNONE});
  kt__emit(&rec);
}

/* The clocks of context i's device. A device without a clock source (the
 * host emulation, no NVML) says why once, at the start: information, not
 * a failure. */
static void emit_clocks(const char *when, int i) {
  ke_clocks c;
  int st = ke_device_clocks(kt__state.ctx[i], &c);
  if (st != KE_OK && strcmp(when, "start") != 0) return;
  kp_clocks k = {when, i, c.source ? c.source : "none", KP_NONE, KP_NONE, KP_NONE,
                 KP_NONE, c.temp_c, c.power_w, KP_NONE, NULL, KP_NONE,
                 st != KE_OK ? c.error : NULL};
  long long *mhz[] = {&k.sm_mhz, &k.mem_mhz, &k.sm_max_mhz, &k.mem_max_mhz};
  int got[] = {c.sm_mhz, c.mem_mhz, c.sm_max_mhz, c.mem_max_mhz};
  for (int m = 0; m < 4; m++)
    if (got[m] >= 0) *mhz[m] = got[m];
  char names[256];
  if (c.reasons >= 0) {
    k.reasons = c.reasons;
    kp_clock_reason_names((unsigned long long)c.reasons, names, sizeof names);
    k.reason_names = names;
    k.throttled = ((unsigned long long)c.reasons & kp_clock_slowdown_mask()) != 0;
  }
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_clocks, &k);
  kt__emit(&rec);
}

/* ---- Contexts --------------------------------------------------------------------- */

static int open_on(int device, double *ms) {
  ke_context_options opts;
  ke_context_options_init(&opts);
  opts.device = device;
  opts.poison = kt__state.poison;
  opts.cap_fraction = kt__state.cap_fraction;
  double t0 = kt__now_ms();
  int st = ke_context_open(&opts, &kt__state.ctx[device]);
  *ms = kt__now_ms() - t0;
  if (st != KE_OK) {
    kt__state.ctx[device] = NULL;
    snprintf(kt__state.setup_error, sizeof kt__state.setup_error,
             "engine context on device %d: %s: %s", device, ke_status_name(st),
             ke_last_error());
    return st;
  }
  st = kt__tuning_apply(kt__state.ctx[device]);
  if (st != KE_OK) {
    (void)ke_context_close(kt__state.ctx[device]);
    kt__state.ctx[device] = NULL;
    snprintf(kt__state.setup_error, sizeof kt__state.setup_error,
             "engine tuning on device %d: %s: %s", device, ke_status_name(st),
             ke_last_error());
    return st;
  }
  /* NVML's start-up is slow (tens of ms): paid here, with the context,
   * which a warm child does before its test is known. */
  ke_clocks c;
  t0 = kt__now_ms();
  if (ke_clocks_open(kt__state.ctx[device], &c) == KE_OK)
    kt__state.clocks_init_ms += kt__now_ms() - t0;
  if (device >= kt__state.nctx) kt__state.nctx = device + 1;
  return KE_OK;
}

int kt__context_open(void) {
  kt__state.clocks_init_ms = 0;
  int st = open_on(0, &kt__state.runtime_init_ms);
  kt__state.opened = 1;
  kt__state.open_status = st;
  return st;
}

void kt__contexts_close(void) {
  for (int i = 0; i < KT__MAX_CONTEXTS; i++) {
    if (kt__state.ctx[i]) (void)ke_context_close(kt__state.ctx[i]);
    kt__state.ctx[i] = NULL;
  }
  kt__state.nctx = 0;
}

/* A device fault the engine saw in this process (ke_device_fault), sent
 * once, with the test that met it: kiln probes the device before it gives
 * it another test. */
static void emit_device_fault(void) {
  static int sent;
  int device;
  const char *detail;
  if (sent || !ke_device_fault(&device, &detail)) return;
  sent = 1;
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_device_fault,
            &(kp_device_fault){device, ke_status_name(KE_EDEVICE), detail});
  kt__emit(&rec);
}

/* Fails the setup: the test does not run, and its result says why. */
static void setup_failed(int status) {
  kt__state.setup_failed = status;
  emit_device_fault();
  ck_abort_msg("%s", kt__state.setup_error);
}

/* Opens the contexts on the test's devices 1..n-1 (device 0 is open). */
static void open_more(int n) {
  int visible = 0;
  (void)ke_device_count(&visible);
  if (visible < n) {
    kt__state.skipped = 1;
    snprintf(kt__state.skip_reason, sizeof kt__state.skip_reason,
             "needs %d devices at once; %d visible", n, visible);
    ck_abort_msg("%s", kt__state.skip_reason);
  }
  for (int i = 1; i < n; i++) {
    if (kt__state.ctx[i]) continue;
    double ms;
    int st = open_on(i, &ms);
    if (st != KE_OK) setup_failed(st);
    emit_device(ke_context_device(kt__state.ctx[i]));
  }
}

/* ---- The fixture -------------------------------------------------------------------- */

void kt__fixture_setup(void) {
  kt__guards_reset();
  if (kt__state.test->host_only) {
    body_start = kt__now_ms();
    ref_start = ke_ref_ms();
    return;
  }
  int n = devices_wanted();
  if (n > KT__MAX_CONTEXTS) {
    kt__state.skipped = 1;
    snprintf(kt__state.skip_reason, sizeof kt__state.skip_reason,
             "needs %d devices at once; a runner opens at most %d", n, KT__MAX_CONTEXTS);
    ck_abort_msg("%s", kt__state.skip_reason);
  }
  /* A context opened before the test was known (--warm) is reported here,
   * after the test record, exactly as one opened now. */
  if (!kt__state.ctx[0] && !kt__state.opened) (void)kt__context_open();
  if (kt__state.opened) {
    kt__state.opened = 0;
    emit_phase("runtime_init", kt__state.runtime_init_ms);
    if (kt__state.open_status != KE_OK) setup_failed(kt__state.open_status);
    emit_device(ke_context_device(kt__state.ctx[0]));
  }
  open_more(n);
  if (kt__state.clocks_init_ms > 0) emit_phase("clocks_init", kt__state.clocks_init_ms);
  kt__state.clocks_init_ms = 0;
  for (int i = 0; i < n; i++) {
    ke_context *c = kt__state.ctx[i];
    /* Serials only grow: whatever this test allocates comes after the
     * newest allocation live now (one an earlier test in this process
     * left behind). */
    size_t nlive = ke_ledger_outstanding(c, NULL, 0);
    ke_allocation *all = nlive ? malloc(nlive * sizeof *all) : NULL;
    uint64_t mark = 0;
    nlive = all ? ke_ledger_outstanding(c, all, nlive) : 0;
    for (size_t k = 0; k < nlive; k++)
      if (all[k].serial + 1 > mark) mark = all[k].serial + 1;
    free(all);
    kt__state.ledger_mark[i] = mark;
    ke_timing_reset(c);
    ke_ledger_peak_reset(c);
    emit_clocks("start", i);
  }
  emit_memory("before");
  body_start = kt__now_ms();
  ref_start = ke_ref_ms();
}

static void emit_kernels(int i) {
  ke_kernel_stats stats[64];
  size_t nstats = 0;
  if (ke_timing_collect(kt__state.ctx[i], stats, 64, &nstats) != KE_OK) return;
  for (size_t k = 0; k < nstats && k < 64; k++) {
    /* Kernels of a test's further devices carry the device: name@1. */
    char name[80];
    snprintf(name, sizeof name, i ? "%s@%d" : "%s", stats[k].name, i);
    kp_kernel x = {name, stats[k].launches, stats[k].total_ms, stats[k].min_ms,
                   stats[k].median_ms, stats[k].max_ms};
    kp_record_out rec;
    kp_encode(&rec, &kp_rec_kernel, &x);
    kt__emit(&rec);
  }
}

/* Whatever this test allocated on context i and did not free is a leak.
 * Guarded buffers the test forgot count too: their call site is the
 * test's. The engine's own scratch (split decode) is the engine's, not the
 * test's: it is given back first, so that it is never counted (if that
 * fails, it stays listed, and shows as a leak). */
static void emit_leaks(int i, kp_leak_total *total) {
  ke_context *c = kt__state.ctx[i];
  (void)ke_scratch_release(c);
  size_t nlive = ke_ledger_outstanding(c, NULL, 0);
  ke_allocation *live = malloc((nlive ? nlive : 1) * sizeof *live);
  ck_assert_msg(live != NULL, "out of host memory listing %zu allocations", nlive);
  nlive = ke_ledger_outstanding(c, live, nlive);
  for (size_t k = 0; k < nlive; k++) {
    if (live[k].serial < kt__state.ledger_mark[i]) continue;
    total->count++;
    total->bytes += live[k].bytes;
    /* A record for each of the first KP_LEAKS_LISTED; the totals are exact. */
    if (total->listed == KP_LEAKS_LISTED) continue;
    total->listed++;
    kp_leak l = {live[k].bytes, live[k].file, live[k].line, live[k].serial};
    kp_record_out rec;
    kp_encode(&rec, &kp_rec_leak, &l);
    kt__emit(&rec);
  }
  free(live);
}

void kt__fixture_teardown(void) {
  emit_phase("body", kt__now_ms() - body_start);
  /* The body's share spent in the double-precision references (always
   * sent, so that a report tells 0 from not measured). */
  emit_phase("reference", ke_ref_ms() - ref_start);
  if (!kt__state.ctx[0]) {
    emit_device_fault();
    return;
  }
  double t0 = kt__now_ms();
  int n = devices_wanted();
  if (n > kt__state.nctx) n = kt__state.nctx;
  size_t peak = 0;
  kp_leak_total leaks = {0, 0, 0};
  for (int i = 0; i < n; i++) {
    if (!kt__state.ctx[i]) continue;
    emit_clocks("end", i);
    emit_kernels(i);
    /* The peak is taken before the scratch goes: the test's kernels used
     * it. One figure for the test, its busiest device's. */
    size_t p = ke_ledger_peak_bytes(kt__state.ctx[i]);
    if (p > peak) peak = p;
    emit_leaks(i, &leaks);
  }
  kp_record_out rec;
  if (leaks.count) {
    kp_encode(&rec, &kp_rec_leak_total, &leaks);
    kt__emit(&rec);
  }
  kp_encode(&rec, &kp_rec_memory, &(kp_memory){"peak", KP_UNONE, KP_UNONE, peak});
  kt__emit(&rec);
  emit_memory("after");
  emit_device_fault();
  if (!kt__state.keep_context) kt__contexts_close();
  emit_phase("teardown", kt__now_ms() - t0);
}
