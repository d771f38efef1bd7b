/* Perf suite: one benchmark per kernel family (tag `perf`, held back from a
 * plain `kiln run`; `kiln run @perf`). Each measures the median of many
 * event-timed launches over rotating buffers that together are at least
 * twice the device's L2, records bandwidth (or FLOP/s) as report metrics,
 * and checks one output against the double reference on sampled rows, so a
 * fast wrong kernel fails. Figures are never asserted. Method, shapes and
 * which bytes count: docs/performance.md. On the host backend every size is
 * scaled down so that CI runs the same code in seconds.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/gemm-check.h"
#include "kiln/kernels.h"
#include "kiln/test-tuning.h"
#include "kiln/test.h"

/* ---- Method ---------------------------------------------------------------- */

#define PERF_COLS 4096      /* row length of the row kernels */
#define PERF_MAX_SETS 64    /* rotation sets at most */

typedef struct perf_cfg {
  int host;                 /* host emulation: small sizes, few launches */
  size_t l2_bytes;
  int64_t target;           /* bytes a memory-bound launch must move */
  int warmup, iters;        /* launches before timing, launches timed */
  int samples;              /* rows the correctness check compares */
} perf_cfg;

static perf_cfg perf_config(void) {
  const ke_device_info *d = ke_context_device(kt_ctx());
  perf_cfg c;
  c.host = strcmp(ke_backend_name(), "host") == 0;
  /* A runtime that reports no L2 gets a figure above any current GPU's. */
  c.l2_bytes = d->l2_bytes ? d->l2_bytes : (size_t)256 << 20;
  c.target = c.host ? (int64_t)2 << 20 : (int64_t)256 << 20;
  c.warmup = c.host ? 1 : 5;
  c.iters = c.host ? 3 : 50;
  c.samples = c.host ? 4 : 16;
  return c;
}

/* Rows so that rows * bytes_per_row >= the target. */
static int64_t perf_rows(const perf_cfg *c, int64_t bytes_per_row) {
  return (c->target + bytes_per_row - 1) / bytes_per_row;
}

/* How many copies of a launch's buffers rotate: together at least twice the
 * L2 and never fewer than two, so no launch finds its inputs in L2. Host
 * emulation has no L2 to defeat: there the count is only capped. */
static int perf_sets(const perf_cfg *c, int64_t set_bytes) {
  int64_t n = (2 * (int64_t)c->l2_bytes + set_bytes - 1) / set_bytes;
  if (n < 2) n = 2;
  if (c->host && n > PERF_MAX_SETS) n = PERF_MAX_SETS;
  ck_assert_msg(n <= PERF_MAX_SETS,
                "a launch's buffers (%lld bytes) need %lld rotation sets to "
                "cover twice the L2 (%zu bytes); at most %d are kept",
                (long long)set_bytes, (long long)n, c->l2_bytes,
                PERF_MAX_SETS);
  return (int)n;
}

typedef void (*perf_launch_fn)(void *bench, int set);

/* Median event time (ms) of `kernel` over c->iters launches that follow
 * c->warmup untimed ones, cycling through nsets buffer sets. Resets the
 * engine's timings: the test's `kernels:` list keeps the last measurement
 * only, the metrics keep every one. */
static double perf_time(const perf_cfg *c, const char *kernel,
                        perf_launch_fn fn, void *bench, int nsets) {
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

/* Metrics are BENCH.DTYPE.QUANTITY; the shape goes with them as a note. */
static void perf_metric(const char *bench, const char *dt, const char *what,
                        double value, const char *unit) {
  char name[128];
  snprintf(name, sizeof name, "%s.%s.%s", bench, dt, what);
  kt_metric(name, value, unit);
}

/* Records how much memory the rotation covered (bytes of all its sets). */
static void perf_rotation(const char *bench, ke_dtype dt, int nsets,
                          int64_t set_bytes) {
  perf_metric(bench, ke_dtype_name(dt), "rotation_bytes",
              (double)nsets * (double)set_bytes, "B");
}

static void perf_shape(const char *bench, const char *dt, const char *shape) {
  char key[128];
  snprintf(key, sizeof key, "%s.%s.shape", bench, dt);
  kt_note(key, shape);
}

/* Bandwidth metrics of a memory-bound launch: bytes that must move over the
 * median time, and that as a fraction of the copy measured in this test. */
static void perf_report_bw(const char *bench, ke_dtype dt, const char *shape,
                           double bytes, double ms, double copy_gbps) {
  const char *d = ke_dtype_name(dt);
  double gbps = bytes / (ms * 1e-3) / 1e9;
  perf_shape(bench, d, shape);
  perf_metric(bench, d, "bytes", bytes, "B");
  perf_metric(bench, d, "ms", ms, "ms");
  perf_metric(bench, d, "GBps", gbps, "GB/s");
  perf_metric(bench, d, "ratio_to_copy", gbps / copy_gbps, "ratio");
}

static void perf_report_flops(const char *bench, ke_dtype dt,
                              const char *shape, double flop, double ms) {
  const char *d = ke_dtype_name(dt);
  perf_shape(bench, d, shape);
  perf_metric(bench, d, "flop", flop, "FLOP");
  perf_metric(bench, d, "ms", ms, "ms");
  perf_metric(bench, d, "TFLOPs", flop / (ms * 1e-3) / 1e12, "TFLOP/s");
}

/* ---- Buffers and sampled checks --------------------------------------------- */

/* One tensor per rotation set. The big buffers are plain engine tensors;
 * the small ones the checks compare are guarded (kt_alloc). */
typedef struct perf_set {
  ke_tensor t[PERF_MAX_SETS];
  int n;
} perf_set;

static void set_alloc(perf_set *s, int n, ke_dtype dt, int rank,
                      const int64_t *shape, int fill) {
  s->n = n;
  for (int i = 0; i < n; i++) {
    kt_assert_ok(ke_tensor_alloc(kt_ctx(), &s->t[i], dt, rank, shape));
    if (fill) kt_fill_normal(&s->t[i], 0.0f, 1.0f);
  }
}

static void set_free(perf_set *s) {
  for (int i = 0; i < s->n; i++)
    kt_assert_ok(ke_tensor_free(kt_ctx(), &s->t[i]));
  s->n = 0;
}

/* n row indices of a matrix of `rows`: the first, the last, and random
 * ones between (fresh each call). */
static void perf_sample(int64_t rows, int n, int64_t *idx) {
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

/* The sampled rows as doubles. */
static double *perf_rows_doubles(const ke_tensor *from, int64_t cols,
                                 const int64_t *idx, int n) {
  ke_tensor t;
  perf_gather(from, cols, idx, n, &t);
  double *d = kt_to_doubles(&t);
  kt_free(&t);
  return d;
}

/* Checks the sampled rows of `out` against ref. */
static void perf_check(const char *name, const ke_tensor *out, int64_t cols,
                       const int64_t *idx, int n, const double *ref,
                       kt_tol tol) {
  ke_tensor t;
  perf_gather(out, cols, idx, n, &t);
  kt_assert_close(name, &t, ref, tol);
  kt_free(&t);
}

static double *perf_doubles(size_t n) {
  double *d = malloc(n * sizeof *d);
  ck_assert_msg(d != NULL, "out of host memory (%zu doubles)", n);
  return d;
}

static const ke_dtype kDtypes[] = {KE_F32, KE_F16, KE_BF16};
#define NDTYPES (sizeof kDtypes / sizeof kDtypes[0])

/* ---- Copy: the bandwidth reference ----------------------------------------- */

typedef struct copy_bench {
  perf_set src, dst;
  size_t bytes;
} copy_bench;

static void copy_launch(void *b, int s) {
  copy_bench *c = b;
  kt_assert_ok(ke_copy_device_async(kt_ctx(), c->dst.t[s].data,
                                    c->src.t[s].data, c->bytes));
}

/* Device-to-device copy of target/2 bytes (read + write = target), f32
 * random data. Returns GB/s (bytes read + written over the median); with
 * report, records the copy's metrics and checks the copy. */
static void fill_launch(void *b, int s) {
  copy_bench *c = b;
  /* 0x3f: every f32 word 0.747, not zero. */
  kt_assert_ok(ke_fill_device_async(kt_ctx(), c->dst.t[s].data, 0x3f,
                                    c->bytes));
}

static double perf_copy(const perf_cfg *c, int report) {
  int64_t rows = perf_rows(c, 2 * PERF_COLS * 4);
  int64_t shape[2] = {rows, PERF_COLS};
  copy_bench b;
  b.bytes = (size_t)rows * PERF_COLS * 4;
  int nsets = perf_sets(c, 2 * (int64_t)b.bytes);
  set_alloc(&b.src, nsets, KE_F32, 2, shape, 1);
  set_alloc(&b.dst, nsets, KE_F32, 2, shape, 0);
  double ms = perf_time(c, "copy", copy_launch, &b, nsets);
  double gbps = 2.0 * (double)b.bytes / (ms * 1e-3) / 1e9;
  if (report) {
    char sh[64];
    snprintf(sh, sizeof sh, "%lldx%d", (long long)rows, PERF_COLS);
    perf_report_bw("copy", KE_F32, sh, 2.0 * (double)b.bytes, ms, gbps);
    perf_rotation("copy", KE_F32, nsets, 2 * (int64_t)b.bytes);
    /* Write-only bandwidth (a memset of the same buffers): the roof for
     * kernels that mostly write, e.g. KV replication writes Hq/Hkv bytes
     * for every byte it reads. */
    double fill_ms = perf_time(c, "fill", fill_launch, &b, nsets);
    perf_report_bw("fill", KE_F32, sh, (double)b.bytes, fill_ms, gbps);
    int64_t idx[64];
    perf_sample(rows, c->samples, idx);
    double *ref = perf_rows_doubles(&b.src.t[0], PERF_COLS, idx, c->samples);
    copy_launch(&b, 0);
    perf_check("copy_f32", &b.dst.t[0], PERF_COLS, idx, c->samples, ref,
               (kt_tol){0, 0, 0, 0});
    free(ref);
  }
  set_free(&b.src);
  set_free(&b.dst);
  return gbps;
}

START_TEST(copy) {
  perf_cfg c = perf_config();
  (void)perf_copy(&c, 1);
}
END_TEST

/* ---- Row kernels: softmax, RMSNorm, SwiGLU ---------------------------------- */

typedef enum { ROW_SOFTMAX, ROW_RMSNORM, ROW_RMSNORM_RES, ROW_SWIGLU } row_kind;

typedef struct row_bench {
  row_kind kind;
  perf_set x, r, y;         /* r: residual or up; unused for softmax */
  ke_tensor w;              /* RMSNorm weight [cols] */
} row_bench;

static void row_launch(void *p, int s) {
  row_bench *b = p;
  ke_context *ctx = kt_ctx();
  switch (b->kind) {
  case ROW_SOFTMAX:
    kt_assert_ok(ke_softmax(ctx, &b->x.t[s], &b->y.t[s], NULL));
    break;
  case ROW_RMSNORM:
    kt_assert_ok(ke_rmsnorm(ctx, &b->x.t[s], NULL, &b->w, &b->y.t[s], NULL));
    break;
  case ROW_RMSNORM_RES:
    kt_assert_ok(
        ke_rmsnorm(ctx, &b->x.t[s], &b->r.t[s], &b->w, &b->y.t[s], NULL));
    break;
  case ROW_SWIGLU:
    kt_assert_ok(ke_swiglu(ctx, &b->x.t[s], &b->r.t[s], &b->y.t[s]));
    break;
  }
}

static const struct {
  const char *bench, *kernel;
  int tensors;              /* [rows, cols] tensors that move per launch */
  int second_input;         /* r is allocated */
} kRowInfo[] = {
    [ROW_SOFTMAX] = {"softmax", "softmax", 2, 0},          /* x, y */
    [ROW_RMSNORM] = {"rmsnorm", "rmsnorm", 2, 0},          /* x, y */
    [ROW_RMSNORM_RES] = {"rmsnorm_residual", "rmsnorm", 4, 1}, /* x, r, x, y */
    [ROW_SWIGLU] = {"swiglu", "swiglu", 3, 1},             /* gate, up, out */
};

static kt_tol row_tol(row_kind kind, ke_dtype dt) {
  if (kind != ROW_SOFTMAX) return kt_tol_default(dt);
  /* As suites/softmax.c: outputs of 4096-long rows are all below 1e-3, so
   * atol is far below the default; rtol covers the row sum's rounding. */
  switch (dt) {
  case KE_F16: return (kt_tol){1e-7, 1e-3, 0.0, 0};
  case KE_BF16: return (kt_tol){1e-9, 1.6e-2, 0.0, 0};
  default: return (kt_tol){1e-9, 1e-5, 0.0, 0};
  }
}

/* The reference for sampled rows: takes the inputs before the launch. */
static double *row_reference(row_bench *b, const int64_t *idx, int n) {
  int64_t cols = PERF_COLS;
  double *x = perf_rows_doubles(&b->x.t[0], cols, idx, n);
  double *r = kRowInfo[b->kind].second_input
                  ? perf_rows_doubles(&b->r.t[0], cols, idx, n) : NULL;
  double *ref = perf_doubles((size_t)n * (size_t)cols);
  if (b->kind == ROW_SOFTMAX) {
    ke_softmax_params p;
    ke_softmax_params_init(&p);
    ke_softmax_ref(x, ref, n, cols, &p, n);
  } else if (b->kind == ROW_SWIGLU) {
    ke_swiglu_ref(x, r, ref, (int64_t)n * cols);
  } else {
    double *w = kt_to_doubles(&b->w);
    ke_rmsnorm_ref(x, r, w, ref, n, cols, 1e-6);
    free(w);
  }
  free(x);
  free(r);
  return ref;
}

static void row_run(const perf_cfg *c, row_kind kind, ke_dtype dt,
                    double copy_gbps) {
  int64_t es = (int64_t)ke_dtype_size(dt);
  int per_row = kRowInfo[kind].tensors;
  int64_t rows = perf_rows(c, per_row * PERF_COLS * es);
  int64_t shape[2] = {rows, PERF_COLS}, wshape[1] = {PERF_COLS};
  int distinct = kind == ROW_RMSNORM_RES ? 3 : per_row;  /* x, r, y */
  int nsets = perf_sets(c, distinct * rows * PERF_COLS * es);
  row_bench b;
  memset(&b, 0, sizeof b);
  b.kind = kind;
  set_alloc(&b.x, nsets, dt, 2, shape, 1);
  if (kRowInfo[kind].second_input) set_alloc(&b.r, nsets, dt, 2, shape, 1);
  set_alloc(&b.y, nsets, dt, 2, shape, 0);
  int has_w = kind == ROW_RMSNORM || kind == ROW_RMSNORM_RES;
  if (has_w) {
    kt_alloc(&b.w, dt, 1, wshape);
    kt_fill_uniform(&b.w, 0.5f, 1.5f);
  }

  double ms = perf_time(c, kRowInfo[kind].kernel, row_launch, &b, nsets);
  double bytes = (double)per_row * (double)(rows * PERF_COLS * es) +
                 (has_w ? (double)(PERF_COLS * es) : 0.0);
  char sh[64];
  snprintf(sh, sizeof sh, "%lldx%d", (long long)rows, PERF_COLS);
  perf_report_bw(kRowInfo[kind].bench, dt, sh, bytes, ms, copy_gbps);
  perf_rotation(kRowInfo[kind].bench, dt, nsets,
                distinct * rows * PERF_COLS * es);

  /* One more launch on set 0, checked on sampled rows. */
  int64_t idx[64];
  perf_sample(rows, c->samples, idx);
  double *ref = row_reference(&b, idx, c->samples);
  row_launch(&b, 0);
  char name[96];
  snprintf(name, sizeof name, "%s_%s", kRowInfo[kind].bench,
           ke_dtype_name(dt));
  perf_check(name, &b.y.t[0], PERF_COLS, idx, c->samples, ref,
             row_tol(kind, dt));
  free(ref);
  if (has_w) kt_free(&b.w);
  set_free(&b.x);
  set_free(&b.r);
  set_free(&b.y);
}

static void row_suite(row_kind kind) {
  perf_cfg c = perf_config();
  double copy_gbps = perf_copy(&c, 0);
  for (size_t i = 0; i < NDTYPES; i++) row_run(&c, kind, kDtypes[i], copy_gbps);
}

START_TEST(softmax) { row_suite(ROW_SOFTMAX); }
END_TEST

START_TEST(rmsnorm) { row_suite(ROW_RMSNORM); }
END_TEST

START_TEST(rmsnorm_residual) { row_suite(ROW_RMSNORM_RES); }
END_TEST

START_TEST(swiglu) { row_suite(ROW_SWIGLU); }
END_TEST

/* ---- RoPE (NeoX pairing, in place) and K/V replication ---------------------- */

#define PERF_HEAD_DIM 128
#define PERF_ROPE_HEADS 32
#define PERF_KV_HEADS 8
#define PERF_Q_HEADS 32

typedef struct rope_bench {
  perf_set x;
  ke_tensor ids;            /* i32 positions, as f32 words (guarded) */
  ke_positions pos;
} rope_bench;

static void rope_launch(void *p, int s) {
  rope_bench *b = p;
  kt_assert_ok(ke_rope(kt_ctx(), &b->x.t[s], &b->x.t[s], &b->pos, NULL, NULL));
}

static void rope_run(const perf_cfg *c, ke_dtype dt, double copy_gbps) {
  const int64_t H = PERF_ROPE_HEADS, D = PERF_HEAD_DIM;
  int64_t es = (int64_t)ke_dtype_size(dt);
  int64_t S = perf_rows(c, 2 * H * D * es);   /* x read and written */
  int64_t shape[4] = {1, H, S, D};
  int nsets = perf_sets(c, H * S * D * es);
  rope_bench b;
  memset(&b, 0, sizeof b);
  set_alloc(&b.x, nsets, dt, 4, shape, 1);
  kt_alloc(&b.ids, KE_F32, 1, &S);
  b.pos = (ke_positions){.dtype = KE_POS_I32, .count = S, .data = b.ids.data};
  kt_assert_ok(ke_position_ids_causal(kt_ctx(), &b.pos, S, 0));

  double ms = perf_time(c, "rope", rope_launch, &b, nsets);
  double bytes = 2.0 * (double)(H * S * D * es) + 4.0 * (double)S;
  char sh[64];
  snprintf(sh, sizeof sh, "1x%lldx%lldx%lld", (long long)H, (long long)S,
           (long long)D);
  perf_report_bw("rope", dt, sh, bytes, ms, copy_gbps);
  perf_rotation("rope", dt, nsets, H * S * D * es);

  /* Vectors (h, s) are rows of D; each turns by its position s. In place:
   * the reference takes the rows before the checked launch. */
  int n = c->samples;
  int64_t idx[64], pos[64];
  perf_sample(H * S, n, idx);
  for (int i = 0; i < n; i++) pos[i] = idx[i] % S;
  double *x = perf_rows_doubles(&b.x.t[0], D, idx, n);
  double *ref = perf_doubles((size_t)n * (size_t)D);
  ke_rope_params p;
  ke_rope_params_init(&p);
  ke_rope_ref(x, ref, n, D, pos, NULL, &p);
  rope_launch(&b, 0);
  char name[64];
  snprintf(name, sizeof name, "rope_%s", ke_dtype_name(dt));
  perf_check(name, &b.x.t[0], D, idx, n, ref, kt_tol_default(dt));
  free(ref);
  free(x);
  kt_free(&b.ids);
  set_free(&b.x);
}

START_TEST(rope) {
  perf_cfg c = perf_config();
  double copy_gbps = perf_copy(&c, 0);
  for (size_t i = 0; i < NDTYPES; i++) rope_run(&c, kDtypes[i], copy_gbps);
}
END_TEST

typedef struct kv_bench {
  perf_set in, out;
} kv_bench;

static void kv_launch(void *p, int s) {
  kv_bench *b = p;
  kt_assert_ok(ke_kv_repeat(kt_ctx(), &b->in.t[s], &b->out.t[s]));
}

static void kv_run(const perf_cfg *c, ke_dtype dt, double copy_gbps) {
  const int64_t HKV = PERF_KV_HEADS, HQ = PERF_Q_HEADS, D = PERF_HEAD_DIM;
  int64_t es = (int64_t)ke_dtype_size(dt);
  int64_t S = perf_rows(c, (HKV + HQ) * D * es);  /* in read, out written */
  int64_t in_shape[4] = {1, HKV, S, D}, out_shape[4] = {1, HQ, S, D};
  int nsets = perf_sets(c, (HKV + HQ) * S * D * es);
  kv_bench b;
  set_alloc(&b.in, nsets, dt, 4, in_shape, 1);
  set_alloc(&b.out, nsets, dt, 4, out_shape, 0);

  double ms = perf_time(c, "kv_repeat", kv_launch, &b, nsets);
  double bytes = (double)((HKV + HQ) * S * D * es);
  char sh[96];
  snprintf(sh, sizeof sh, "1x%lldx%lldx%lld->1x%lldx%lldx%lld",
           (long long)HKV, (long long)S, (long long)D, (long long)HQ,
           (long long)S, (long long)D);
  perf_report_bw("kv_repeat", dt, sh, bytes, ms, copy_gbps);
  perf_rotation("kv_repeat", dt, nsets, (HKV + HQ) * S * D * es);

  /* Output vector (h, s) is input vector (h / (HQ / HKV), s), bit for bit. */
  int n = c->samples;
  int64_t oidx[64], iidx[64];
  perf_sample(HQ * S, n, oidx);
  for (int i = 0; i < n; i++)
    iidx[i] = (oidx[i] / S) / (HQ / HKV) * S + oidx[i] % S;
  double *ref = perf_rows_doubles(&b.in.t[0], D, iidx, n);
  kv_launch(&b, 0);
  char name[64];
  snprintf(name, sizeof name, "kv_repeat_%s", ke_dtype_name(dt));
  perf_check(name, &b.out.t[0], D, oidx, n, ref, (kt_tol){0, 0, 0, 0});
  free(ref);
  set_free(&b.in);
  set_free(&b.out);
}

START_TEST(kv_repeat) {
  perf_cfg c = perf_config();
  double copy_gbps = perf_copy(&c, 0);
  for (size_t i = 0; i < NDTYPES; i++) kv_run(&c, kDtypes[i], copy_gbps);
}
END_TEST

/* ---- MXFP dequantisation ------------------------------------------------------ */

/* The engine has MXFP4 (E2M1) and both MXFP6 formats; E2M3 stands for
 * MXFP6 here. There is no MXFP8 in the engine. */
static const ke_mxfp_format kMxFormats[] = {KE_MXFP4_E2M1, KE_MXFP6_E2M3};

typedef struct mx_bench {
  ke_mxfp_matrix w[PERF_MAX_SETS];
  unsigned char *host_data, *host_scales;  /* set 0's bytes, for the check */
  perf_set out;
} mx_bench;

static void mx_launch(void *p, int s) {
  mx_bench *b = p;
  kt_assert_ok(ke_mxfp_dequant(kt_ctx(), &b->w[s], &b->out.t[s]));
}

/* Random bytes: every element code is valid, and scales in 117..137
 * (2^-10 .. 2^10) keep every value finite in every output dtype. */
static void mx_random(unsigned char *data, size_t nd, unsigned char *scales,
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

static double mx_round(ke_dtype dt, double v) {
  float f = (float)v;
  if (dt == KE_F16) return ke_f16_to_f32(ke_f32_to_f16(f));
  if (dt == KE_BF16) return ke_bf16_to_f32(ke_f32_to_bf16(f));
  return f;
}

static void mx_run(const perf_cfg *c, ke_mxfp_format fmt, ke_dtype dt,
                   double copy_gbps) {
  const int64_t C = PERF_COLS;
  int64_t es = (int64_t)ke_dtype_size(dt);
  int64_t row_bytes = (int64_t)ke_mxfp_data_bytes(fmt, 1, C) +
                      (int64_t)ke_mxfp_scale_bytes(1, C) + C * es;
  int64_t rows = perf_rows(c, row_bytes);
  size_t nd = ke_mxfp_data_bytes(fmt, rows, C);
  size_t ns = ke_mxfp_scale_bytes(rows, C);
  int64_t shape[2] = {rows, C};
  int nsets = perf_sets(c, rows * row_bytes);
  mx_bench b;
  memset(&b, 0, sizeof b);
  b.host_data = malloc(nd);
  b.host_scales = malloc(ns);
  unsigned char *tmp_d = malloc(nd), *tmp_s = malloc(ns);
  ck_assert_msg(b.host_data && b.host_scales && tmp_d && tmp_s,
                "out of host memory for %zu MX bytes", nd);
  for (int s = 0; s < nsets; s++) {
    unsigned char *d = s == 0 ? b.host_data : tmp_d;
    unsigned char *sc = s == 0 ? b.host_scales : tmp_s;
    mx_random(d, nd, sc, ns);
    b.w[s] = (ke_mxfp_matrix){.format = fmt, .rows = rows, .cols = C};
    kt_assert_ok(ke_malloc(kt_ctx(), &b.w[s].data, nd));
    kt_assert_ok(ke_malloc(kt_ctx(), &b.w[s].scales, ns));
    kt_assert_ok(ke_copy_to_device(kt_ctx(), b.w[s].data, d, nd));
    kt_assert_ok(ke_copy_to_device(kt_ctx(), b.w[s].scales, sc, ns));
  }
  free(tmp_d);
  free(tmp_s);
  set_alloc(&b.out, nsets, dt, 2, shape, 0);

  double ms = perf_time(c, "mxfp_dequant", mx_launch, &b, nsets);
  char bench[64], sh[64];
  snprintf(bench, sizeof bench, "%s_dequant",
           fmt == KE_MXFP4_E2M1 ? "mxfp4" : "mxfp6_e2m3");
  snprintf(sh, sizeof sh, "%lldx%lld", (long long)rows, (long long)C);
  perf_report_bw(bench, dt, sh, (double)(rows * row_bytes), ms, copy_gbps);
  perf_rotation(bench, dt, nsets, rows * row_bytes);

  /* Decoding is exact: the reference of each sampled row, rounded once to
   * the output dtype, with atol = rtol = 0. */
  int n = c->samples;
  int64_t idx[64];
  perf_sample(rows, n, idx);
  double *ref = perf_doubles((size_t)n * (size_t)C);
  for (int i = 0; i < n; i++) {
    ke_mxfp_matrix row = {
        .format = fmt, .rows = 1, .cols = C,
        .data = b.host_data + (size_t)idx[i] * ke_mxfp_data_bytes(fmt, 1, C),
        .scales = b.host_scales + (size_t)idx[i] * ke_mxfp_scale_bytes(1, C)};
    kt_assert_ok(ke_mxfp_dequant_ref(&row, ref + (size_t)i * (size_t)C));
    for (int64_t j = 0; j < C; j++)
      ref[(size_t)i * (size_t)C + (size_t)j] =
          mx_round(dt, ref[(size_t)i * (size_t)C + (size_t)j]);
  }
  mx_launch(&b, 0);
  char name[96];
  snprintf(name, sizeof name, "%s_%s", bench, ke_dtype_name(dt));
  perf_check(name, &b.out.t[0], C, idx, n, ref, (kt_tol){0, 0, 0, 0});
  free(ref);
  for (int s = 0; s < nsets; s++) {
    kt_assert_ok(ke_free(kt_ctx(), b.w[s].data));
    kt_assert_ok(ke_free(kt_ctx(), b.w[s].scales));
  }
  free(b.host_data);
  free(b.host_scales);
  set_free(&b.out);
}

START_TEST(mxfp_dequant) {
  perf_cfg c = perf_config();
  double copy_gbps = perf_copy(&c, 0);
  for (size_t f = 0; f < sizeof kMxFormats / sizeof kMxFormats[0]; f++)
    for (size_t i = 0; i < NDTYPES; i++)
      mx_run(&c, kMxFormats[f], kDtypes[i], copy_gbps);
}
END_TEST

/* ---- GEMM and fused attention: FLOP/s ------------------------------------------ */

/* Sequence lengths: S = 1024 and 4096 on a GPU (64 and 128 in emulation). */
static void perf_lengths(const perf_cfg *c, int64_t len[2]) {
  len[0] = c->host ? 64 : 1024;
  len[1] = c->host ? 128 : 4096;
}

/* ---- Device peaks ------------------------------------------------------------- */

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

/* Records BENCH.DTYPE.ratio_to_peak (TFLOP/s over the dense peak) and the
 * peak's source as a note, where the device is in the table. */
static void perf_report_peak(const char *bench, ke_dtype dt, double flop,
                             double ms) {
  const char *source;
  const double peak = perf_peak_tflops(dt, &source);
  if (peak <= 0.0) return;
  const char *d = ke_dtype_name(dt);
  perf_metric(bench, d, "peak_TFLOPs", peak, "TFLOP/s");
  perf_metric(bench, d, "ratio_to_peak", flop / (ms * 1e-3) / 1e12 / peak,
              "ratio");
  char key[128];
  snprintf(key, sizeof key, "%s.%s.peak_source", bench, d);
  kt_note(key, source);
}

/* ---- GEMM ----------------------------------------------------------------------- */

static const ke_dtype kGemmDtypes[] = {KE_F32, KE_F16, KE_BF16};

typedef struct gemm_bench {
  perf_set a, b, c;
} gemm_bench;

static void gemm_launch(void *p, int s) {
  gemm_bench *g = p;
  kt_assert_ok(ke_gemm(kt_ctx(), &g->a.t[s], &g->b.t[s], &g->c.t[s], NULL));
}

/* Square C[S, S] = A[S, S] B[S, S], no transposes, all of one dtype (f16
 * and bf16 on the matrix units, f32 on the SIMT kernel): 2 S^3 FLOP. */
static void gemm_run(const perf_cfg *c, int64_t S, ke_dtype dt) {
  int64_t es = (int64_t)ke_dtype_size(dt);
  int64_t shape[2] = {S, S};
  int nsets = perf_sets(c, 3 * S * S * es);
  gemm_bench g;
  set_alloc(&g.a, nsets, dt, 2, shape, 1);
  set_alloc(&g.b, nsets, dt, 2, shape, 1);
  set_alloc(&g.c, nsets, dt, 2, shape, 0);

  double ms = perf_time(c, "gemm", gemm_launch, &g, nsets);
  char bench[32], sh[64];
  snprintf(bench, sizeof bench, "gemm_s%lld", (long long)S);
  snprintf(sh, sizeof sh, "%lldx%lldx%lld", (long long)S, (long long)S,
           (long long)S);
  const double flop = 2.0 * (double)S * (double)S * (double)S;
  perf_report_flops(bench, dt, sh, flop, ms);
  perf_report_peak(bench, dt, flop, ms);
  perf_rotation(bench, dt, nsets, 3 * S * S * es);

  /* Sampled rows of C from the same rows of A and all of B. */
  int n = c->host ? c->samples : 8;
  int64_t idx[64];
  perf_sample(S, n, idx);
  double *ad = perf_rows_doubles(&g.a.t[0], S, idx, n);
  double *bd = kt_to_doubles(&g.b.t[0]);
  double *ref = perf_doubles((size_t)n * (size_t)S);
  ke_gemm_params p;
  ke_gemm_params_init(&p);
  ke_gemm_ref(&p, 1, n, S, S, ad, S, 0, bd, S, 0, ref, S, 0);
  kt_tol tol = gemm_tol(dt, &p, 1, n, S, S, ad, S, 0, bd, S, 0, NULL, S, 0);
  gemm_launch(&g, 0);
  char name[64];
  snprintf(name, sizeof name, "%s_%s", bench, ke_dtype_name(dt));
  perf_check(name, &g.c.t[0], S, idx, n, ref, tol);
  free(ref);
  free(bd);
  free(ad);
  set_free(&g.a);
  set_free(&g.b);
  set_free(&g.c);
}

START_TEST(gemm) {
  perf_cfg c = perf_config();
  int64_t len[2];
  perf_lengths(&c, len);
  for (int l = 0; l < 2; l++)
    for (size_t i = 0; i < sizeof kGemmDtypes / sizeof kGemmDtypes[0]; i++)
      gemm_run(&c, len[l], kGemmDtypes[i]);
}
END_TEST

/* ---- MX GEMM -------------------------------------------------------------------- */

typedef struct mxgemm_bench {
  perf_set x, y;
  ke_mxfp_matrix w[PERF_MAX_SETS];
} mxgemm_bench;

static void mxgemm_launch(void *p, int s) {
  mxgemm_bench *b = p;
  kt_assert_ok(ke_mxfp_gemm(kt_ctx(), &b->x.t[s], &b->w[s], &b->y.t[s]));
}

/* The linear layer Y[S, S] = X[S, S] dequant(W)^T with W MXFP4 [S, S]
 * (random codes, scales 2^-10 .. 2^10), X and Y bf16: the matrix-core
 * kernel decoding W as it stages it. 2 S^3 FLOP. */
static void mxgemm_run(const perf_cfg *c, int64_t S) {
  const ke_mxfp_format fmt = KE_MXFP4_E2M1;
  const ke_dtype dt = KE_BF16;
  const size_t nd = ke_mxfp_data_bytes(fmt, S, S);
  const size_t ns = ke_mxfp_scale_bytes(S, S);
  const int64_t set_bytes = 2 * S * S * 2 + (int64_t)(nd + ns);
  const int nsets = perf_sets(c, set_bytes);
  int64_t shape[2] = {S, S};
  mxgemm_bench b;
  memset(&b, 0, sizeof b);
  set_alloc(&b.x, nsets, dt, 2, shape, 1);
  set_alloc(&b.y, nsets, dt, 2, shape, 0);
  unsigned char *hd = malloc(nd), *hs = malloc(ns);
  ck_assert_msg(hd && hs, "out of host memory for %zu MX bytes", nd);
  for (int s = 0; s < nsets; s++) {
    mx_random(hd, nd, hs, ns);
    b.w[s] = (ke_mxfp_matrix){.format = fmt, .rows = S, .cols = S};
    kt_assert_ok(ke_malloc(kt_ctx(), &b.w[s].data, nd));
    kt_assert_ok(ke_malloc(kt_ctx(), &b.w[s].scales, ns));
    kt_assert_ok(ke_copy_to_device(kt_ctx(), b.w[s].data, hd, nd));
    kt_assert_ok(ke_copy_to_device(kt_ctx(), b.w[s].scales, hs, ns));
  }

  double ms = perf_time(c, "mxfp_gemm", mxgemm_launch, &b, nsets);
  char bench[48], sh[64];
  snprintf(bench, sizeof bench, "mxfp4_gemm_s%lld", (long long)S);
  snprintf(sh, sizeof sh, "%lldx%lldx%lld", (long long)S, (long long)S,
           (long long)S);
  const double flop = 2.0 * (double)S * (double)S * (double)S;
  perf_report_flops(bench, dt, sh, flop, ms);
  perf_report_peak(bench, dt, flop, ms);
  perf_rotation(bench, dt, nsets, set_bytes);

  /* Sampled rows of Y against the decoded W of the last set (hd, hs). */
  int n = c->host ? c->samples : 8;
  int64_t idx[64];
  perf_sample(S, n, idx);
  const ke_mxfp_matrix wh = {fmt, S, S, hd, hs};
  double *wd = perf_doubles((size_t)S * (size_t)S);
  kt_assert_ok(ke_mxfp_dequant_ref(&wh, wd));
  double *xd = perf_rows_doubles(&b.x.t[nsets - 1], S, idx, n);
  double *ref = perf_doubles((size_t)n * (size_t)S);
  ke_gemm_params p;
  ke_gemm_params_init(&p);
  p.trans_b = 1;
  ke_gemm_ref(&p, 1, n, S, S, xd, S, 0, wd, S, 0, ref, S, 0);
  kt_tol tol = gemm_tol(dt, &p, 1, n, S, S, xd, S, 0, wd, S, 0, NULL, S, 0);
  mxgemm_launch(&b, nsets - 1);
  char name[64];
  snprintf(name, sizeof name, "%s_%s", bench, ke_dtype_name(dt));
  perf_check(name, &b.y.t[nsets - 1], S, idx, n, ref, tol);
  free(ref);
  free(xd);
  free(wd);
  free(hd);
  free(hs);
  for (int s = 0; s < nsets; s++) {
    kt_assert_ok(ke_free(kt_ctx(), b.w[s].data));
    kt_assert_ok(ke_free(kt_ctx(), b.w[s].scales));
  }
  set_free(&b.x);
  set_free(&b.y);
}

START_TEST(mxfp_gemm) {
  perf_cfg c = perf_config();
  int64_t len[2];
  perf_lengths(&c, len);
  mxgemm_run(&c, len[1]);
}
END_TEST

/* ---- Fused attention ------------------------------------------------------------- */

/* B = 1, H = 16 (2 in emulation), Sq = Sk = S: S = 1024 and 4096 on a GPU
 * (64 and 128 in emulation). FLOP = 4 D per visible (query, key) pair per
 * head (Q K^T and P V): H S^2 pairs, H S (S + 1) / 2 when causal, so a
 * causal figure counts only the work the mask leaves. */
typedef struct attn_perf {
  const char *bench;        /* metric prefix; "_s<S>" is appended */
  int64_t s_gpu, s_host, d;
  int causal;
  int all_dtypes;           /* f32, f16 and bf16; else bf16 only */
} attn_perf;

static const attn_perf kAttnPerf[] = {
    {"attention", 1024, 64, 128, 0, 1},
    {"attention", 4096, 128, 128, 0, 1},
    {"attention_causal", 1024, 64, 128, 1, 1},
    {"attention_causal", 4096, 128, 128, 1, 1},
    {"attention_d64", 4096, 128, 64, 0, 0},
    {"attention_d256", 4096, 128, 256, 0, 0},
};

typedef struct attn_bench {
  perf_set q, k, v, o;
  ke_attention_params p;
} attn_bench;

static void attn_launch(void *p, int s) {
  attn_bench *a = p;
  kt_assert_ok(ke_attention(kt_ctx(), &a->q.t[s], &a->k.t[s], &a->v.t[s],
                            &a->o.t[s], &a->p));
}

static double perf_max_norm(const double *x, int64_t rows, int64_t d) {
  double m = 0.0;
  for (int64_t r = 0; r < rows; r++) {
    double s = 0.0;
    for (int64_t j = 0; j < d; j++) s += x[r * d + j] * x[r * d + j];
    if (sqrt(s) > m) m = sqrt(s);
  }
  return m;
}

/* The bound of docs/kernels.md (fused attention, Tolerances) with lambda 6:
 * score error e_s = 6 sqrt(D) u |scale| max|q| max|k|, sums over Sk keys
 * 6 sqrt(Sk) u; f16/bf16 are their output rounding. */
static kt_tol perf_attn_tol(ke_dtype dt, const double *q, int nq,
                            const double *k, const double *v, int64_t sk,
                            int64_t d) {
  const double u = ldexp(1.0, -24), lambda = 6.0;
  double scale = 1.0 / sqrt((double)d);
  double s_max = scale * perf_max_norm(q, nq, d) * perf_max_norm(k, sk, d);
  double v_max = 0.0;
  for (int64_t i = 0; i < sk * d; i++)
    if (fabs(v[i]) > v_max) v_max = fabs(v[i]);
  double e_s = lambda * sqrt((double)d) * u * s_max;
  double sums = lambda * sqrt((double)sk) * u;
  kt_tol t = {(2.0 * (e_s + 2.0 * u) + sums + 4.0 * u) * v_max, sums, 0.0, 0};
  if (dt != KE_F32) {
    t.atol = t.atol > 1e-5 ? t.atol : 1e-5;
    t.rtol = kt_tol_default(dt).rtol;
  }
  return t;
}

static void attn_run(const perf_cfg *c, const attn_perf *ap, ke_dtype dt) {
  const int64_t H = c->host ? 2 : 16, D = ap->d;
  const int64_t S = c->host ? ap->s_host : ap->s_gpu;
  int64_t es = (int64_t)ke_dtype_size(dt);
  int64_t shape[4] = {1, H, S, D};
  int nsets = perf_sets(c, 4 * H * S * D * es);
  attn_bench a;
  set_alloc(&a.q, nsets, dt, 4, shape, 1);
  set_alloc(&a.k, nsets, dt, 4, shape, 1);
  set_alloc(&a.v, nsets, dt, 4, shape, 1);
  set_alloc(&a.o, nsets, dt, 4, shape, 0);
  ke_attention_params_init(&a.p);
  a.p.causal = ap->causal;

  double ms = perf_time(c, "attention", attn_launch, &a, nsets);
  char bench[48], sh[64];
  snprintf(bench, sizeof bench, "%s_s%lld", ap->bench, (long long)S);
  snprintf(sh, sizeof sh, "1x%lldx%lldx%lld", (long long)H, (long long)S,
           (long long)D);
  const double pairs = ap->causal ? (double)S * (double)(S + 1) / 2.0
                                  : (double)S * (double)S;
  const double flop = 4.0 * (double)H * pairs * (double)D;
  perf_report_flops(bench, dt, sh, flop, ms);
  perf_report_peak(bench, dt, flop, ms);
  perf_rotation(bench, dt, nsets, 4 * H * S * D * es);

  /* Sampled query rows (h, s), each against the keys it sees (all, or
   * 0..s when causal) of its head. */
  int n = c->host ? c->samples : 8;
  int64_t idx[64];
  perf_sample(H * S, n, idx);
  double *qd = perf_rows_doubles(&a.q.t[0], D, idx, n);
  double *kd = kt_to_doubles(&a.k.t[0]);
  double *vd = kt_to_doubles(&a.v.t[0]);
  double *ref = perf_doubles((size_t)n * (size_t)D);
  kt_tol tol = {0, 0, 0, 0};
  ke_attention_params p;
  ke_attention_params_init(&p);
  for (int i = 0; i < n; i++) {
    int64_t h = idx[i] / S, sk = ap->causal ? idx[i] % S + 1 : S;
    const double *kh = kd + (size_t)(h * S * D), *vh = vd + (size_t)(h * S * D);
    ke_attention_ref(qd + (size_t)i * D, kh, vh, ref + (size_t)i * D, 1, 1, 1,
                     1, sk, D, &p);
    kt_tol t = perf_attn_tol(dt, qd + (size_t)i * D, 1, kh, vh, sk, D);
    if (t.atol > tol.atol) tol.atol = t.atol;
    if (t.rtol > tol.rtol) tol.rtol = t.rtol;
  }
  attn_launch(&a, 0);
  char name[64];
  snprintf(name, sizeof name, "%s_%s", bench, ke_dtype_name(dt));
  perf_check(name, &a.o.t[0], D, idx, n, ref, tol);
  free(ref);
  free(vd);
  free(kd);
  free(qd);
  set_free(&a.q);
  set_free(&a.k);
  set_free(&a.v);
  set_free(&a.o);
}

START_TEST(attention) {
  perf_cfg c = perf_config();
  for (size_t i = 0; i < sizeof kAttnPerf / sizeof kAttnPerf[0]; i++)
    for (size_t t = 0; t < NDTYPES; t++)
      if (kAttnPerf[i].all_dtypes || kDtypes[t] == KE_BF16)
        attn_run(&c, &kAttnPerf[i], kDtypes[t]);
}
END_TEST

/* ---- Decode: dense and paged, K/V bandwidth ---------------------------------- */

/* One query token per sequence over a long KV cache, Hq 32 over Hkv 8,
 * D 128 (PERF_Q_HEADS, PERF_KV_HEADS, PERF_HEAD_DIM): B 1 and 8, contexts
 * 4096 and 32768 (host: 32 and 256), f16 and bf16. Dense is ke_attention
 * ([B, H, S, D] tensors, the split-key decode kernel); paged is
 * ke_paged_attention without a workspace (blocks of 16 tokens in a
 * shuffled physical order, the engine's scratch). The bytes that count are
 * the K and V caches, read once: 2 B Hkv S D element sizes (q and o are
 * 1/S of that). */
#define PERF_DEC_BLOCK 16

static const ke_dtype kDecDtypes[] = {KE_F16, KE_BF16};

typedef struct dec_bench {
  int paged;
  int64_t b, s;
  perf_set q, k, v, o;
  int32_t *tables, *lens;      /* host */
  int32_t *d_tables, *d_lens;  /* device, shared by the sets */
  int64_t blocks_per_seq;
} dec_bench;

static void dec_launch(void *p, int set) {
  dec_bench *d = p;
  ke_context *ctx = kt_ctx();
  if (!d->paged) {
    kt_assert_ok(ke_attention(ctx, &d->q.t[set], &d->k.t[set], &d->v.t[set],
                              &d->o.t[set], NULL));
    return;
  }
  kt_assert_ok(ke_paged_attention(ctx, &d->q.t[set], &d->k.t[set],
                                  &d->v.t[set], d->d_tables,
                                  d->blocks_per_seq, d->d_lens, &d->o.t[set],
                                  NULL));
}

/* Elements [first, first + n) of a tensor as doubles, in one copy. */
static double *perf_span_doubles(const ke_tensor *t, int64_t first,
                                 int64_t n) {
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

/* K or V of (sequence b, KV head hk) of set 0 as packed [S, D] doubles. */
static double *dec_kv_doubles(const dec_bench *d, const ke_tensor *t,
                              int64_t b, int64_t hk) {
  const int64_t S = d->s, D = PERF_HEAD_DIM, HKV = PERF_KV_HEADS;
  if (!d->paged) return perf_span_doubles(t, (b * HKV + hk) * S * D, S * D);
  double *out = perf_doubles((size_t)(S * D));
  for (int64_t i = 0; i * PERF_DEC_BLOCK < S; i++) {
    const int64_t blk = d->tables[b * d->blocks_per_seq + i];
    const int64_t n = S - i * PERF_DEC_BLOCK < PERF_DEC_BLOCK
                          ? S - i * PERF_DEC_BLOCK : PERF_DEC_BLOCK;
    double *part = perf_span_doubles(
        t, (blk * HKV + hk) * PERF_DEC_BLOCK * D, n * D);
    memcpy(out + i * PERF_DEC_BLOCK * D, part, (size_t)(n * D) * sizeof *out);
    free(part);
  }
  return out;
}

/* Measures one case; with the knobs away from their defaults (the sweep)
 * it records only BENCH.DTYPE.bpmN_mcM_GBps. */
static void dec_run(const perf_cfg *c, int paged, int64_t B, int64_t S,
                    ke_dtype dt, double copy_gbps) {
  const int64_t HQ = PERF_Q_HEADS, HKV = PERF_KV_HEADS, D = PERF_HEAD_DIM;
  const int64_t es = (int64_t)ke_dtype_size(dt);
  const int64_t kv_bytes = 2 * B * HKV * S * D * es;
  dec_bench d;
  memset(&d, 0, sizeof d);
  d.paged = paged;
  d.b = B;
  d.s = S;
  int nsets = perf_sets(c, kv_bytes + 2 * B * HQ * D * es);
  if (!paged) {
    int64_t qs[4] = {B, HQ, 1, D}, ks[4] = {B, HKV, S, D};
    set_alloc(&d.q, nsets, dt, 4, qs, 1);
    set_alloc(&d.k, nsets, dt, 4, ks, 1);
    set_alloc(&d.v, nsets, dt, 4, ks, 1);
    set_alloc(&d.o, nsets, dt, 4, qs, 0);
  } else {
    /* Physical blocks dealt out in a random order (kt_seed draws). */
    d.blocks_per_seq = (S + PERF_DEC_BLOCK - 1) / PERF_DEC_BLOCK;
    const int64_t nblocks = B * d.blocks_per_seq;
    d.tables = malloc((size_t)nblocks * sizeof *d.tables);
    d.lens = malloc((size_t)B * sizeof *d.lens);
    ck_assert(d.tables && d.lens);
    for (int64_t i = 0; i < nblocks; i++) d.tables[i] = (int32_t)i;
    for (int64_t i = nblocks - 1; i > 0; i--) {
      const int64_t j = (int64_t)(kt_seed() % (uint64_t)(i + 1));
      const int32_t t = d.tables[i];
      d.tables[i] = d.tables[j];
      d.tables[j] = t;
    }
    for (int64_t b = 0; b < B; b++) d.lens[b] = (int32_t)S;
    kt_assert_ok(ke_malloc(kt_ctx(), (void **)&d.d_tables,
                           (size_t)nblocks * sizeof(int32_t)));
    kt_assert_ok(ke_malloc(kt_ctx(), (void **)&d.d_lens,
                           (size_t)B * sizeof(int32_t)));
    kt_assert_ok(ke_copy_to_device(kt_ctx(), d.d_tables, d.tables,
                                   (size_t)nblocks * sizeof(int32_t)));
    kt_assert_ok(ke_copy_to_device(kt_ctx(), d.d_lens, d.lens,
                                   (size_t)B * sizeof(int32_t)));
    int64_t qs[3] = {B, HQ, D}, cs[4] = {nblocks, HKV, PERF_DEC_BLOCK, D};
    set_alloc(&d.q, nsets, dt, 3, qs, 1);
    set_alloc(&d.k, nsets, dt, 4, cs, 1);
    set_alloc(&d.v, nsets, dt, 4, cs, 1);
    set_alloc(&d.o, nsets, dt, 3, qs, 0);
  }

  double ms = perf_time(c, paged ? "paged_attention" : "attention_decode",
                        dec_launch, &d, nsets);
  char bench[48], sh[96];
  snprintf(bench, sizeof bench, "%sdecode_b%lld_s%lld", paged ? "paged_" : "",
           (long long)B, (long long)S);
  snprintf(sh, sizeof sh, "q %lldx%lldx1x%lld, kv %lldx%lldx%lldx%lld",
           (long long)B, (long long)HQ, (long long)D, (long long)B,
           (long long)HKV, (long long)S, (long long)D);
  ke__decode_tuning tun, def;
  kt_assert_ok(ke__decode_tuning_get(kt_ctx(), &tun));
  ke__decode_tuning_defaults(&def);
  if (memcmp(&tun, &def, sizeof tun) == 0) {
    perf_report_bw(bench, dt, sh, (double)kv_bytes, ms, copy_gbps);
    perf_rotation(bench, dt, nsets, kv_bytes + 2 * B * HQ * D * es);
  } else {
    char what[64];
    snprintf(what, sizeof what, "bpm%lld_mc%lld_GBps",
             (long long)tun.blocks_per_mp, (long long)tun.min_chunk);
    perf_metric(bench, ke_dtype_name(dt), what,
                (double)kv_bytes / (ms * 1e-3) / 1e9, "GB/s");
  }

  /* Sampled query rows (b, h), each against its KV head's whole cache. */
  const int n = c->host || c->samples < 8 ? c->samples : 8;
  int64_t idx[64];
  perf_sample(B * HQ, n, idx);
  dec_launch(&d, 0);
  double *qd = perf_rows_doubles(&d.q.t[0], D, idx, n);
  double *ref = perf_doubles((size_t)n * (size_t)D);
  kt_tol tol = {0, 0, 0, 0};
  ke_attention_params p;
  ke_attention_params_init(&p);
  for (int i = 0; i < n; i++) {
    const int64_t b = idx[i] / HQ, hk = idx[i] % HQ / (HQ / HKV);
    double *kd = dec_kv_doubles(&d, &d.k.t[0], b, hk);
    double *vd = dec_kv_doubles(&d, &d.v.t[0], b, hk);
    ke_attention_ref(qd + (size_t)i * D, kd, vd, ref + (size_t)i * D, 1, 1, 1,
                     1, S, D, &p);
    kt_tol t = perf_attn_tol(dt, qd + (size_t)i * D, 1, kd, vd, S, D);
    if (t.atol > tol.atol) tol.atol = t.atol;
    if (t.rtol > tol.rtol) tol.rtol = t.rtol;
    free(vd);
    free(kd);
  }
  char name[96];
  snprintf(name, sizeof name, "%s_%s", bench, ke_dtype_name(dt));
  perf_check(name, &d.o.t[0], D, idx, n, ref, tol);
  free(ref);
  free(qd);
  set_free(&d.q);
  set_free(&d.k);
  set_free(&d.v);
  set_free(&d.o);
  if (paged) {
    kt_assert_ok(ke_free(kt_ctx(), d.d_tables));
    kt_assert_ok(ke_free(kt_ctx(), d.d_lens));
    free(d.tables);
    free(d.lens);
  }
}

static void dec_suite(int paged) {
  perf_cfg c = perf_config();
  double copy_gbps = perf_copy(&c, 0);
  const int64_t batches[] = {1, 8};
  const int64_t lens[] = {c.host ? 32 : 4096, c.host ? 256 : 32768};
  for (int l = 0; l < 2; l++)
    for (int b = 0; b < 2; b++)
      for (size_t i = 0; i < sizeof kDecDtypes / sizeof kDecDtypes[0]; i++)
        dec_run(&c, paged, batches[b], lens[l], kDecDtypes[i], copy_gbps);
}

START_TEST(decode) { dec_suite(0); }
END_TEST

START_TEST(paged_decode) { dec_suite(1); }
END_TEST

/* The split's knobs (kiln/test-tuning.h) swept on the bf16 cases, so that
 * one GPU run compares them without a rebuild: blocks per multiprocessor
 * the ranges aim for (1..4) and the fewest keys per range (128..1024).
 * Metrics BENCH.bf16.bpmN_mcM_GBps (not picked up by the perf table); the
 * default is bpm2_mc256. Each setting is also checked against the
 * reference. */
START_TEST(decode_sweep) {
  perf_cfg c = perf_config();
  double copy_gbps = perf_copy(&c, 0);
  const int64_t bpms[] = {1, 2, 3, 4}, chunks[] = {128, 256, 512, 1024};
  const int64_t lens[] = {4096, 32768}, batches[] = {1, 8};
  /* Host emulation: one small case over two settings of each knob. */
  const int nl = c.host ? 1 : 2, nk = c.host ? 2 : 4;
  c.samples = 2;
  for (int paged = 0; paged < 2; paged++)
    for (int l = 0; l < nl; l++)
      for (int b = 0; b < nl; b++)
        for (int i = 0; i < nk; i++)
          for (int j = 0; j < nk; j++) {
            ke__decode_tuning t;
            ke__decode_tuning_defaults(&t);
            t.blocks_per_mp = bpms[i];
            t.min_chunk = chunks[j];
            kt_assert_ok(ke__decode_tuning_set(kt_ctx(), &t));
            dec_run(&c, paged, batches[b], c.host ? 32 : lens[l], KE_BF16,
                    copy_gbps);
          }
  kt_assert_ok(ke__decode_tuning_set(kt_ctx(), NULL));
}
END_TEST

/* ---- Registry ------------------------------------------------------------------- */

#define PERF_TEST(fn) KT_TEST(fn, .slots = KT_WHOLE_DEVICE, .timeout_s = 600)

static const kt_test kPerfTests[] = {
    PERF_TEST(copy),    PERF_TEST(softmax),      PERF_TEST(rmsnorm),
    PERF_TEST(rmsnorm_residual), PERF_TEST(swiglu), PERF_TEST(rope),
    PERF_TEST(kv_repeat), PERF_TEST(mxfp_dequant), PERF_TEST(gemm),
    PERF_TEST(mxfp_gemm), PERF_TEST(attention), PERF_TEST(decode),
    PERF_TEST(paged_decode), PERF_TEST(decode_sweep),
};
KT_SUITE(kt_suite_perf, "perf", "perf", kPerfTests);
