/* The perf suite's method, shared by every benchmark: sizes from the
 * target, rotation sets that defeat the L2, the median of event-timed
 * launches, the metrics a case records, and the sampled check of its
 * output. docs/measuring.md describes it; cases.c holds what it runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf/perf.h"

/* ---- Configuration and the table's rows ------------------------------------- */

perf_cfg perf_config(void) {
  const ke_device_info *d = ke_context_device(kt_ctx());
  perf_cfg c;
  c.host = strcmp(ke_backend_name(), "host") == 0;
  /* A runtime that reports no L2 gets a figure above any current GPU's. */
  c.l2_bytes = d->l2_bytes ? d->l2_bytes : (size_t)256 << 20;
  c.target = (c.host ? perf_target_mib_host : perf_target_mib) << 20;
  c.warmup = c.host ? 1 : 5;
  c.iters = c.host ? 3 : 50;
  c.samples = c.host ? 4 : 16;
  return c;
}

const perf_case *perf_next_case(const char *test, size_t *i) {
  while (*i < perf_ncases) {
    const perf_case *pc = &perf_cases[(*i)++];
    if (strcmp(pc->test, test) == 0) return pc;
  }
  return NULL;
}

void perf_run_init(perf_run *r, const perf_cfg *c, const perf_case *pc,
                   ke_dtype dt, double *copy_gbps) {
  memset(r, 0, sizeof *r);
  r->pc = pc;
  r->dt = dt;
  r->seq = c->host && pc->seq_host ? pc->seq_host : pc->seq;
  r->heads = c->host && pc->heads_host ? pc->heads_host : pc->heads;
  r->copy_gbps = copy_gbps;
  int n = snprintf(r->bench, sizeof r->bench, "%s", pc->bench);
  if (pc->batch)
    n += snprintf(r->bench + n, sizeof r->bench - (size_t)n, "_b%lld",
                  (long long)pc->batch);
  if (pc->seq)
    snprintf(r->bench + n, sizeof r->bench - (size_t)n, "_s%lld",
             (long long)r->seq);
}

void perf_run_cases(const char *test, perf_case_fn fn, int vs_copy) {
  static const struct {
    unsigned bit;
    ke_dtype dt;
  } kDtypes[] = {{PERF_F32, KE_F32}, {PERF_F16, KE_F16}, {PERF_BF16, KE_BF16}};
  perf_cfg c = perf_config();
  double copy_gbps = vs_copy ? perf_copy_gbps(&c) : 0.0;
  size_t i = 0, rows = 0;
  for (const perf_case *pc; (pc = perf_next_case(test, &i)) != NULL; rows++)
    for (size_t d = 0; d < sizeof kDtypes / sizeof kDtypes[0]; d++) {
      if (!(pc->dtypes & kDtypes[d].bit)) continue;
      perf_run r;
      perf_run_init(&r, &c, pc, kDtypes[d].dt, &copy_gbps);
      fn(&c, &r);
    }
  ck_assert_msg(rows > 0, "the perf table (cases.c) has no row for test %s",
                test);
}

/* ---- Sizes, rotation and timing ---------------------------------------------- */

int64_t perf_rows(const perf_cfg *c, int64_t bytes_per_row) {
  return (c->target + bytes_per_row - 1) / bytes_per_row;
}

/* How many copies of a launch's buffers rotate: together at least twice the
 * L2 and never fewer than two, so no launch finds its inputs in L2. Host
 * emulation has no L2 to defeat: there the count is only capped. */
void perf_sets(const perf_cfg *c, perf_run *r) {
  int64_t n = (2 * (int64_t)c->l2_bytes + r->set_bytes - 1) / r->set_bytes;
  if (n < 2) n = 2;
  if (c->host && n > PERF_MAX_SETS) n = PERF_MAX_SETS;
  ck_assert_msg(n <= PERF_MAX_SETS,
                "%s: a launch's buffers (%lld bytes) need %lld rotation sets "
                "to cover twice the L2 (%zu bytes); at most %d are kept",
                r->bench, (long long)r->set_bytes, (long long)n, c->l2_bytes,
                PERF_MAX_SETS);
  r->nsets = (int)n;
}

/* Median event time (ms) of `kernel` over c->iters launches that follow
 * c->warmup untimed ones, cycling through nsets buffer sets. Resets the
 * engine's timings: the test's `kernels:` list keeps the last measurement
 * only, the metrics keep every one. */
double perf_time(const perf_cfg *c, const char *kernel, perf_launch_fn fn,
                 void *bench, int nsets) {
  ke_context *ctx = kt_ctx();
  for (int i = 0; i < c->warmup; i++) fn(bench, i % nsets);
  ke_timing_reset(ctx);
  for (int i = 0; i < c->iters; i++) fn(bench, (c->warmup + i) % nsets);
  ke_kernel_stats st[16];
  size_t n = 0;
  kt_assert_ok(ke_timing_collect(ctx, st, 16, &n));
  for (size_t i = 0; i < n && i < 16; i++) {
    if (strcmp(st[i].name, kernel) != 0) continue;
    ck_assert_msg(st[i].launches == (uint64_t)c->iters,
                  "kernel %s: %llu timed launches, expected %d", kernel,
                  (unsigned long long)st[i].launches, c->iters);
    ck_assert_msg(st[i].median_ms > 0.0, "kernel %s: median time %g ms",
                  kernel, st[i].median_ms);
    return st[i].median_ms;
  }
  ck_abort_msg("no event timings for kernel %s", kernel);
  return 0.0;
}

/* ---- Metrics ------------------------------------------------------------------ */

void perf_metric(const perf_run *r, const char *what, double value,
                 const char *unit) {
  char name[128];
  snprintf(name, sizeof name, "%s.%s.%s", r->bench, ke_dtype_name(r->dt),
           what);
  kt_metric(name, value, unit);
}

/* Dense (no sparsity) peak TFLOP/s of the device for dtype's GEMM inputs,
 * from the vendor's datasheet, with that source in *source; 0 for a device
 * not in the table (the host emulation included). f16/bf16 is the tensor
 * core rate with f32 accumulation, f32 the CUDA cores' FMA rate (no TF32). */
static double perf_peak_tflops(ke_dtype dt, const char **source) {
  static const struct {
    const char *name; /* substring of the device name, first match wins */
    double f16, f32;
    const char *source;
  } kPeaks[] = {
      {"H100 PCIe", 756.5, 51.0, "NVIDIA H100 datasheet, PCIe"},
      {"H100", 989.4, 67.0, "NVIDIA H100 datasheet, SXM5"},
      {"A100", 312.0, 19.5, "NVIDIA A100 datasheet"},
  };
  const char *name = ke_context_device(kt_ctx())->name;
  for (size_t i = 0; i < sizeof kPeaks / sizeof kPeaks[0]; i++)
    if (strstr(name, kPeaks[i].name)) {
      *source = kPeaks[i].source;
      return dt == KE_F32 ? kPeaks[i].f32 : kPeaks[i].f16;
    }
  *source = NULL;
  return 0.0;
}

/* Memory bound: the bytes that must move over the median time, and that as
 * a fraction of the copy measured in this test. Else FLOP/s, and that as a
 * fraction of the device's dense peak where the device is in the table. The
 * shape goes with the figures as a note. */
void perf_record(const perf_run *r, double ms) {
  char key[128];
  snprintf(key, sizeof key, "%s.%s.shape", r->bench, ke_dtype_name(r->dt));
  kt_note(key, r->shape);
  if (r->flop <= 0.0) {
    double gbps = r->bytes / (ms * 1e-3) / 1e9;
    perf_metric(r, "bytes", r->bytes, "B");
    perf_metric(r, "ms", ms, "ms");
    perf_metric(r, "GBps", gbps, "GB/s");
    perf_metric(r, "ratio_to_copy", gbps / *r->copy_gbps, "ratio");
  } else {
    const double tflops = r->flop / (ms * 1e-3) / 1e12;
    perf_metric(r, "flop", r->flop, "FLOP");
    perf_metric(r, "ms", ms, "ms");
    perf_metric(r, "TFLOPs", tflops, "TFLOP/s");
    const char *source;
    const double peak = perf_peak_tflops(r->dt, &source);
    if (peak > 0.0) {
      perf_metric(r, "peak_TFLOPs", peak, "TFLOP/s");
      perf_metric(r, "ratio_to_peak", tflops / peak, "ratio");
      snprintf(key, sizeof key, "%s.%s.peak_source", r->bench,
               ke_dtype_name(r->dt));
      kt_note(key, source);
    }
  }
  /* How much memory the rotation covered (bytes of all its sets). */
  perf_metric(r, "rotation_bytes", (double)r->nsets * (double)r->set_bytes,
              "B");
}

/* ---- Buffers ------------------------------------------------------------------- */

void perf_set_alloc(perf_set *s, int n, ke_dtype dt, int rank,
                    const int64_t *shape, int fill) {
  s->n = n;
  for (int i = 0; i < n; i++) {
    kt_assert_ok(ke_tensor_alloc(kt_ctx(), &s->t[i], dt, rank, shape));
    if (fill) kt_fill_normal(&s->t[i], 0.0f, 1.0f);
  }
}

void perf_set_free(perf_set *s) {
  for (int i = 0; i < s->n; i++)
    kt_assert_ok(ke_tensor_free(kt_ctx(), &s->t[i]));
  s->n = 0;
}

void perf_mx_random(unsigned char *data, size_t nd, unsigned char *scales,
                    size_t ns) {
  uint64_t x = kt_seed();
  for (size_t i = 0; i < nd; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    data[i] = (unsigned char)(x >> 56);
  }
  for (size_t i = 0; i < ns; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    scales[i] = (unsigned char)(117 + (x >> 33) % 21);
  }
}

void perf_mx_alloc(perf_mx_sets *m, int n, ke_mxfp_format fmt, int64_t rows,
                   int64_t cols, unsigned char *data, unsigned char *scales) {
  const size_t nd = ke_mxfp_data_bytes(fmt, rows, cols);
  const size_t ns = ke_mxfp_scale_bytes(rows, cols);
  m->n = n;
  for (int s = 0; s < n; s++) {
    perf_mx_random(data, nd, scales, ns);
    m->w[s] = (ke_mxfp_matrix){.format = fmt, .rows = rows, .cols = cols};
    kt_assert_ok(ke_malloc(kt_ctx(), &m->w[s].data, nd));
    kt_assert_ok(ke_malloc(kt_ctx(), &m->w[s].scales, ns));
    kt_assert_ok(ke_copy_to_device(kt_ctx(), m->w[s].data, data, nd));
    kt_assert_ok(ke_copy_to_device(kt_ctx(), m->w[s].scales, scales, ns));
  }
}

void perf_mx_free(perf_mx_sets *m) {
  for (int s = 0; s < m->n; s++) {
    kt_assert_ok(ke_free(kt_ctx(), m->w[s].data));
    kt_assert_ok(ke_free(kt_ctx(), m->w[s].scales));
  }
  m->n = 0;
}

ke_mxfp_format perf_mx_format(const perf_case *pc) {
  if (pc->fmt && strcmp(pc->fmt, "mxfp4") == 0) return KE_MXFP4_E2M1;
  if (pc->fmt && strcmp(pc->fmt, "mxfp6_e2m3") == 0) return KE_MXFP6_E2M3;
  ck_abort_msg("perf table row %s: MX format '%s' is not mxfp4 or mxfp6_e2m3",
               pc->bench, pc->fmt ? pc->fmt : "(none)");
  return KE_MXFP4_E2M1;
}

/* ---- Sampled checks ------------------------------------------------------------ */

void perf_sample(int64_t rows, int n, int64_t *idx) {
  uint64_t x = kt_seed();
  for (int i = 0; i < n; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    idx[i] = (int64_t)((x >> 17) % (uint64_t)rows);
  }
  idx[0] = 0;
  if (n > 1) idx[n - 1] = rows - 1;
}

/* Copies rows idx[] (of cols elements, packed at base) into out, a guarded
 * [n, cols] tensor allocated here. */
static void perf_gather(const ke_tensor *from, int64_t cols,
                        const int64_t *idx, int n, ke_tensor *out) {
  int64_t shape[2] = {n, cols};
  kt_alloc(out, from->dtype, 2, shape);
  size_t row = (size_t)cols * ke_dtype_size(from->dtype);
  for (int i = 0; i < n; i++)
    kt_assert_ok(ke_copy_device(kt_ctx(), (char *)out->data + (size_t)i * row,
                                (const char *)from->data + (size_t)idx[i] * row,
                                row));
}

double *perf_rows_doubles(const ke_tensor *from, int64_t cols,
                          const int64_t *idx, int n) {
  ke_tensor t;
  perf_gather(from, cols, idx, n, &t);
  double *d = kt_to_doubles(&t);
  kt_free(&t);
  return d;
}

double *perf_span_doubles(const ke_tensor *t, int64_t first, int64_t n) {
  ke_tensor tmp;
  int64_t shape[1] = {n};
  kt_alloc(&tmp, t->dtype, 1, shape);
  const size_t es = ke_dtype_size(t->dtype);
  kt_assert_ok(ke_copy_device(kt_ctx(), tmp.data,
                              (const char *)t->data + (size_t)first * es,
                              (size_t)n * es));
  double *d = kt_to_doubles(&tmp);
  kt_free(&tmp);
  return d;
}

double *perf_doubles(size_t n) {
  double *d = malloc(n * sizeof *d);
  ck_assert_msg(d != NULL, "out of host memory (%zu doubles)", n);
  return d;
}

void perf_check(const perf_run *r, const ke_tensor *out, int64_t cols,
                const int64_t *idx, int n, const double *ref, kt_tol tol) {
  char name[96];
  snprintf(name, sizeof name, "%s_%s", r->bench, ke_dtype_name(r->dt));
  ke_tensor t;
  perf_gather(out, cols, idx, n, &t);
  kt_assert_close(name, &t, ref, tol);
  kt_free(&t);
}
