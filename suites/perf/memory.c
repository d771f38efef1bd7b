/* The perf suite's memory-bound benchmarks: the copy (the bandwidth
 * reference) and the write-only fill, the row kernels (softmax, RMSNorm,
 * SwiGLU), RoPE, K/V replication and MX dequantisation. Each is sized so
 * that one launch moves the target's bytes, and records GB/s and its ratio
 * to the copy; the bytes that count are the ones that must move.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf/perf.h"

/* ---- Copy and fill: the bandwidth reference ---------------------------------- */

typedef struct copy_bench {
  perf_set src, dst;
  size_t bytes;             /* of one tensor */
} copy_bench;

static void copy_launch(void *b, int s) {
  copy_bench *c = b;
  kt_assert_ok(ke_copy_device_async(kt_ctx(), c->dst.t[s].data,
                                    c->src.t[s].data, c->bytes));
}

static void fill_launch(void *b, int s) {
  copy_bench *c = b;
  /* 0x3f: every f32 word 0.747, not zero. */
  kt_assert_ok(ke_fill_device_async(kt_ctx(), c->dst.t[s].data, 0x3f,
                                    c->bytes));
}

/* Device-to-device copy of [rows, cols] f32 random data, rows so that read
 * + written reach the target; returns GB/s (bytes read + written over the
 * median). With r, records it (the ratio's base is this copy) and checks
 * the copy bit for bit. */
static double copy_run(const perf_cfg *c, const perf_case *pc, perf_run *r) {
  const int64_t cols = pc->cols;
  int64_t rows = perf_rows(c, 2 * cols * 4);
  int64_t shape[2] = {rows, cols};
  copy_bench b;
  b.bytes = (size_t)(rows * cols * 4);
  perf_run tmp;
  if (!r) {
    memset(&tmp, 0, sizeof tmp);
    snprintf(tmp.bench, sizeof tmp.bench, "%s", pc->bench);
  }
  perf_run *q = r ? r : &tmp;
  q->set_bytes = 2 * (int64_t)b.bytes;
  perf_sets(c, q);
  perf_set_alloc(&b.src, q->nsets, KE_F32, 2, shape, 1);
  perf_set_alloc(&b.dst, q->nsets, KE_F32, 2, shape, 0);
  double ms = perf_time(c, "copy", copy_launch, &b, q->nsets);
  double gbps = 2.0 * (double)b.bytes / (ms * 1e-3) / 1e9;
  if (r) {
    *r->copy_gbps = gbps;
    snprintf(r->shape, sizeof r->shape, "%lldx%lld", (long long)rows,
             (long long)cols);
    r->bytes = 2.0 * (double)b.bytes;
    perf_record(r, ms);
    int64_t idx[64];
    perf_sample(rows, c->samples, idx);
    double *ref = perf_rows_doubles(&b.src.t[0], cols, idx, c->samples);
    copy_launch(&b, 0);
    perf_check(r, &b.dst.t[0], cols, idx, c->samples, ref,
               (kt_tol){0, 0, 0, 0});
    free(ref);
  }
  perf_set_free(&b.src);
  perf_set_free(&b.dst);
  return gbps;
}

double perf_copy_gbps(const perf_cfg *c) {
  size_t i = 0;
  const perf_case *pc = perf_next_case("copy", &i);
  ck_assert_msg(pc != NULL && strcmp(pc->bench, "copy") == 0,
                "the perf table's first copy row is not the copy");
  return copy_run(c, pc, NULL);
}

/* Write-only bandwidth (a memset of [rows, cols] f32, rows as the copy's):
 * the roof for kernels that mostly write, e.g. KV replication writes Hq/Hkv
 * bytes for every byte it reads. Its ratio is to the copy of this test. */
static void fill_run(const perf_cfg *c, perf_run *r) {
  const int64_t cols = r->pc->cols;
  int64_t rows = perf_rows(c, 2 * cols * 4);
  int64_t shape[2] = {rows, cols};
  copy_bench b;
  b.bytes = (size_t)(rows * cols * 4);
  b.src.n = 0;
  r->set_bytes = (int64_t)b.bytes;
  perf_sets(c, r);
  perf_set_alloc(&b.dst, r->nsets, KE_F32, 2, shape, 0);
  double ms = perf_time(c, "fill", fill_launch, &b, r->nsets);
  snprintf(r->shape, sizeof r->shape, "%lldx%lld", (long long)rows,
           (long long)cols);
  r->bytes = (double)b.bytes;
  perf_record(r, ms);
  /* The fill's output: every f32 word 0x3f3f3f3f. */
  int64_t idx[64];
  perf_sample(rows, c->samples, idx);
  const int n = c->samples;
  double *ref = perf_doubles((size_t)n * (size_t)cols);
  const unsigned char word[4] = {0x3f, 0x3f, 0x3f, 0x3f};
  float v;
  memcpy(&v, word, sizeof v);
  for (size_t j = 0; j < (size_t)n * (size_t)cols; j++) ref[j] = v;
  perf_check(r, &b.dst.t[0], cols, idx, n, ref, (kt_tol){0, 0, 0, 0});
  free(ref);
  perf_set_free(&b.dst);
}

void perf_copy_case(const perf_cfg *c, perf_run *r) {
  if (strcmp(r->pc->bench, "fill") == 0) {
    ck_assert_msg(*r->copy_gbps > 0.0,
                  "the perf table's fill row comes before its copy row");
    fill_run(c, r);
  } else {
    (void)copy_run(c, r->pc, r);
  }
}

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

/* By bench name; scripts/torch-compare.py's ROW_KERNELS holds the same
 * counts for its plan. */
static const struct {
  const char *bench, *kernel;
  int moved;                /* [rows, cols] tensors that move per launch */
  int held;                 /* distinct tensors of one rotation set */
  int second_input;         /* r is allocated */
  int weight;               /* a [cols] weight is read */
} kRowInfo[] = {
    [ROW_SOFTMAX] = {"softmax", "softmax", 2, 2, 0, 0},     /* x, y */
    [ROW_RMSNORM] = {"rmsnorm", "rmsnorm", 2, 2, 0, 1},     /* x, y */
    [ROW_RMSNORM_RES] = {"rmsnorm_residual", "rmsnorm", 4, 3, 1, 1},
    /* x, r read; x (x + r) and y written */
    [ROW_SWIGLU] = {"swiglu", "swiglu", 3, 3, 1, 0},        /* gate, up, out */
};

static row_kind row_kind_of(const perf_case *pc) {
  for (size_t k = 0; k < sizeof kRowInfo / sizeof kRowInfo[0]; k++)
    if (strcmp(kRowInfo[k].bench, pc->bench) == 0) return (row_kind)k;
  ck_abort_msg("perf table row %s is not a row kernel", pc->bench);
  return ROW_SOFTMAX;
}

static kt_tol row_tol(row_kind kind, ke_dtype dt) {
  if (kind != ROW_SOFTMAX) return kt_tol_default(dt);
  /* As the softmax suite: outputs of 4096-long rows are all below 1e-3, so
   * atol is far below the default; rtol covers the row sum's rounding. */
  switch (dt) {
  case KE_F16: return (kt_tol){1e-7, 1e-3, 0.0, 0};
  case KE_BF16: return (kt_tol){1e-9, 1.6e-2, 0.0, 0};
  default: return (kt_tol){1e-9, 1e-5, 0.0, 0};
  }
}

/* The reference for sampled rows: takes the inputs before the launch. */
static double *row_reference(row_bench *b, int64_t cols, const int64_t *idx,
                             int n) {
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

void perf_row_case(const perf_cfg *c, perf_run *r) {
  const row_kind kind = row_kind_of(r->pc);
  const int64_t cols = r->pc->cols, es = (int64_t)ke_dtype_size(r->dt);
  const int moved = kRowInfo[kind].moved;
  int64_t rows = perf_rows(c, moved * cols * es);
  int64_t shape[2] = {rows, cols}, wshape[1] = {cols};
  r->set_bytes = kRowInfo[kind].held * rows * cols * es;
  perf_sets(c, r);
  row_bench b;
  memset(&b, 0, sizeof b);
  b.kind = kind;
  perf_set_alloc(&b.x, r->nsets, r->dt, 2, shape, 1);
  if (kRowInfo[kind].second_input)
    perf_set_alloc(&b.r, r->nsets, r->dt, 2, shape, 1);
  perf_set_alloc(&b.y, r->nsets, r->dt, 2, shape, 0);
  const int has_w = kRowInfo[kind].weight;
  if (has_w) {
    kt_alloc(&b.w, r->dt, 1, wshape);
    kt_fill_uniform(&b.w, 0.5f, 1.5f);
  }

  double ms = perf_time(c, kRowInfo[kind].kernel, row_launch, &b, r->nsets);
  r->bytes = (double)moved * (double)(rows * cols * es) +
             (has_w ? (double)(cols * es) : 0.0);
  snprintf(r->shape, sizeof r->shape, "%lldx%lld", (long long)rows,
           (long long)cols);
  perf_record(r, ms);

  /* One more launch on set 0, checked on sampled rows. */
  int64_t idx[64];
  perf_sample(rows, c->samples, idx);
  double *ref = row_reference(&b, cols, idx, c->samples);
  row_launch(&b, 0);
  perf_check(r, &b.y.t[0], cols, idx, c->samples, ref, row_tol(kind, r->dt));
  free(ref);
  if (has_w) kt_free(&b.w);
  perf_set_free(&b.x);
  perf_set_free(&b.r);
  perf_set_free(&b.y);
}

/* ---- RoPE (NeoX pairing, in place) and K/V replication ---------------------- */

typedef struct rope_bench {
  perf_set x;
  ke_tensor ids;            /* i32 positions, as f32 words (guarded) */
  ke_positions pos;
} rope_bench;

static void rope_launch(void *p, int s) {
  rope_bench *b = p;
  kt_assert_ok(ke_rope(kt_ctx(), &b->x.t[s], &b->x.t[s], &b->pos, NULL, NULL));
}

void perf_rope_case(const perf_cfg *c, perf_run *r) {
  const int64_t H = r->heads, D = r->pc->head_dim;
  const int64_t es = (int64_t)ke_dtype_size(r->dt);
  int64_t S = perf_rows(c, 2 * H * D * es);   /* x read and written */
  int64_t shape[4] = {1, H, S, D};
  r->set_bytes = H * S * D * es;
  perf_sets(c, r);
  rope_bench b;
  memset(&b, 0, sizeof b);
  perf_set_alloc(&b.x, r->nsets, r->dt, 4, shape, 1);
  kt_alloc(&b.ids, KE_F32, 1, &S);
  b.pos = (ke_positions){.dtype = KE_POS_I32, .count = S, .data = b.ids.data};
  kt_assert_ok(ke_position_ids_causal(kt_ctx(), &b.pos, S, 0));

  double ms = perf_time(c, "rope", rope_launch, &b, r->nsets);
  r->bytes = 2.0 * (double)(H * S * D * es) + 4.0 * (double)S;
  snprintf(r->shape, sizeof r->shape, "1x%lldx%lldx%lld", (long long)H,
           (long long)S, (long long)D);
  perf_record(r, ms);

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
  perf_check(r, &b.x.t[0], D, idx, n, ref, kt_tol_default(r->dt));
  free(ref);
  free(x);
  kt_free(&b.ids);
  perf_set_free(&b.x);
}

typedef struct kv_bench {
  perf_set in, out;
} kv_bench;

static void kv_launch(void *p, int s) {
  kv_bench *b = p;
  kt_assert_ok(ke_kv_repeat(kt_ctx(), &b->in.t[s], &b->out.t[s]));
}

void perf_kv_case(const perf_cfg *c, perf_run *r) {
  const int64_t HKV = r->pc->kv_heads, HQ = r->heads, D = r->pc->head_dim;
  const int64_t es = (int64_t)ke_dtype_size(r->dt);
  int64_t S = perf_rows(c, (HKV + HQ) * D * es);  /* in read, out written */
  int64_t in_shape[4] = {1, HKV, S, D}, out_shape[4] = {1, HQ, S, D};
  r->set_bytes = (HKV + HQ) * S * D * es;
  perf_sets(c, r);
  kv_bench b;
  perf_set_alloc(&b.in, r->nsets, r->dt, 4, in_shape, 1);
  perf_set_alloc(&b.out, r->nsets, r->dt, 4, out_shape, 0);

  double ms = perf_time(c, "kv_repeat", kv_launch, &b, r->nsets);
  r->bytes = (double)((HKV + HQ) * S * D * es);
  snprintf(r->shape, sizeof r->shape, "1x%lldx%lldx%lld->1x%lldx%lldx%lld",
           (long long)HKV, (long long)S, (long long)D, (long long)HQ,
           (long long)S, (long long)D);
  perf_record(r, ms);

  /* Output vector (h, s) is input vector (h / (HQ / HKV), s), bit for bit. */
  int n = c->samples;
  int64_t oidx[64], iidx[64];
  perf_sample(HQ * S, n, oidx);
  for (int i = 0; i < n; i++)
    iidx[i] = (oidx[i] / S) / (HQ / HKV) * S + oidx[i] % S;
  double *ref = perf_rows_doubles(&b.in.t[0], D, iidx, n);
  kv_launch(&b, 0);
  perf_check(r, &b.out.t[0], D, oidx, n, ref, (kt_tol){0, 0, 0, 0});
  free(ref);
  perf_set_free(&b.in);
  perf_set_free(&b.out);
}

/* ---- MXFP dequantisation ------------------------------------------------------ */

typedef struct mx_bench {
  perf_mx_sets w;
  perf_set out;
} mx_bench;

static void mx_launch(void *p, int s) {
  mx_bench *b = p;
  kt_assert_ok(ke_mxfp_dequant(kt_ctx(), &b->w.w[s], &b->out.t[s]));
}

static double mx_round(ke_dtype dt, double v) {
  float f = (float)v;
  if (dt == KE_F16) return ke_f16_to_f32(ke_f32_to_f16(f));
  if (dt == KE_BF16) return ke_bf16_to_f32(ke_f32_to_bf16(f));
  return f;
}

/* [rows, cols] MX codes and scales decoded into the dtype: the bytes that
 * move are the codes, the scales and the output. */
void perf_mx_dequant_case(const perf_cfg *c, perf_run *r) {
  const ke_mxfp_format fmt = perf_mx_format(r->pc);
  const int64_t C = r->pc->cols, es = (int64_t)ke_dtype_size(r->dt);
  int64_t row_bytes = (int64_t)ke_mxfp_data_bytes(fmt, 1, C) +
                      (int64_t)ke_mxfp_scale_bytes(1, C) + C * es;
  int64_t rows = perf_rows(c, row_bytes);
  size_t nd = ke_mxfp_data_bytes(fmt, rows, C);
  size_t ns = ke_mxfp_scale_bytes(rows, C);
  int64_t shape[2] = {rows, C};
  r->set_bytes = rows * row_bytes;
  perf_sets(c, r);
  mx_bench b;
  memset(&b, 0, sizeof b);
  unsigned char *hd = malloc(nd), *hs = malloc(ns);
  ck_assert_msg(hd && hs, "out of host memory for %zu MX bytes", nd);
  perf_mx_alloc(&b.w, r->nsets, fmt, rows, C, hd, hs);
  perf_set_alloc(&b.out, r->nsets, r->dt, 2, shape, 0);

  double ms = perf_time(c, "mxfp_dequant", mx_launch, &b, r->nsets);
  r->bytes = (double)(rows * row_bytes);
  snprintf(r->shape, sizeof r->shape, "%lldx%lld", (long long)rows,
           (long long)C);
  perf_record(r, ms);

  /* Decoding is exact: the reference of each sampled row of the last set
   * (whose bytes hd, hs hold), rounded once to the output dtype, with
   * atol = rtol = 0. */
  const int n = c->samples, last = r->nsets - 1;
  int64_t idx[64];
  perf_sample(rows, n, idx);
  double *ref = perf_doubles((size_t)n * (size_t)C);
  for (int i = 0; i < n; i++) {
    ke_mxfp_matrix row = {
        .format = fmt, .rows = 1, .cols = C,
        .data = hd + (size_t)idx[i] * ke_mxfp_data_bytes(fmt, 1, C),
        .scales = hs + (size_t)idx[i] * ke_mxfp_scale_bytes(1, C)};
    double *out = ref + (size_t)i * (size_t)C;
    kt_assert_ok(ke_mxfp_dequant_ref(&row, out));
    for (int64_t j = 0; j < C; j++) out[j] = mx_round(r->dt, out[j]);
  }
  mx_launch(&b, last);
  perf_check(r, &b.out.t[last], C, idx, n, ref, (kt_tol){0, 0, 0, 0});
  free(ref);
  free(hd);
  free(hs);
  perf_mx_free(&b.w);
  perf_set_free(&b.out);
}
