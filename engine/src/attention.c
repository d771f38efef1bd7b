/* Fused attention: the C entry point (shape, stride and dtype checks, the
 * kernel family, its tuning knobs, launch) and the double-precision
 * reference, side by side.
 * The kernels are in kernels/attention.hip (the launcher and ROWS),
 * kernels/tile/attn_mma.h and kernels/tile/attn_simt.h (TILED).
 */
#include <math.h>
#include <stdlib.h>

#include "decode.h"
#include "engine-impl.h"
#include "kiln/kernels.h"
#include "contract/launch.h"
#include "layout.h"

#define KE__ATTN_MAX_D 256
#define KE__ATTN_MAX_SEQ (((int64_t)1 << 31) - 1)
#define KE__ATTN_MAX_GRID_YZ 65535   /* Hkv and B map to grid y and z */
#define KE__ATTN_MAX_OFFSET ((int64_t)1 << 61)
/* Query rows per kv head: the ROWS kernel's tiles of >= 32 rows then stay
 * within a grid x of 2^23 blocks, whose 256-thread total fits HIP's 32-bit
 * limit (a tiled launch that would not takes ROWS; kernels/attention.hip). */
#define KE__ATTN_MAX_ROWS ((int64_t)1 << 28)
/* AUTO takes the tiled kernels from this many query rows per kv head: one
 * full row tile of the matrix-core kernel (kiln/attention.h). */
#define KE__ATTN_TILED_MIN_ROWS 64

void ke__attention_tuning_defaults(ke__attention_tuning *t) {
  t->hopper = 1;
  t->v16 = -1;
}

int ke__attention_tuning_get(const ke_context *ctx, ke__attention_tuning *t) {
  if (!ctx || !t)
    return ke__fail(KE_EINVAL, "ke__attention_tuning_get: NULL argument");
  *t = ctx->attention_tuning;
  return KE_OK;
}

int ke__attention_tuning_set(ke_context *ctx, const ke__attention_tuning *t) {
  if (!ctx)
    return ke__fail(KE_EINVAL, "ke__attention_tuning_set: ctx is NULL");
  if (!t) {
    ke__attention_tuning_defaults(&ctx->attention_tuning);
    return KE_OK;
  }
  if (t->hopper < 0 || t->hopper > 1 || t->v16 < -1 || t->v16 > 1)
    return ke__fail(KE_EINVAL, "ke__attention_tuning_set: hopper %lld (0 or "
                               "1), v16 %lld (-1, 0 or 1)",
                    (long long)t->hopper, (long long)t->v16);
  ctx->attention_tuning = *t;
  return KE_OK;
}

void ke_attention_params_init(ke_attention_params *p) {
  p->scale = 0.0f;
  p->causal = 0;
  p->causal_offset = -1;
  p->kernel = KE_ATTN_KERNEL_AUTO;
  p->round_p = 0;
}

/* The kernel family that runs: the caller's, or by rows per kv head. */
static int ke__attention_kernel(const ke_attention_params *p,
                                const ke__attention_desc *a) {
  if (p->kernel != KE_ATTN_KERNEL_AUTO) return p->kernel;
  return a->hq / a->hkv * a->sq >= KE__ATTN_TILED_MIN_ROWS
             ? KE_ATTN_KERNEL_TILED
             : KE_ATTN_KERNEL_ROWS;
}

/* The scale the kernel uses: the caller's, or 1/sqrt(D) rounded to f32. */
static float ke__attention_scale(const ke_attention_params *p, int64_t d) {
  return p->scale != 0.0f ? p->scale : (float)(1.0 / sqrt((double)d));
}

/* Rank 4, dimensions >= 1, D contiguous, no negative stride. */
static int ke__attention_view(const ke_tensor *t, const char *what) {
  if (t->rank != 4)
    return ke__fail(KE_ESHAPE, "attention: %s has rank %d; it must be rank "
                               "4 ([B, H, S, D])", what, t->rank);
  for (int d = 0; d < 4; d++)
    if (t->shape[d] < 1)
      return ke__fail(KE_ESHAPE, "attention: %s dimension %d is %lld; "
                                 "dimensions must be >= 1",
                      what, d, (long long)t->shape[d]);
  if (t->shape[3] > 1 && t->stride[3] != 1)
    return ke__fail(KE_ESHAPE, "attention: %s has D stride %lld; the D "
                               "dimension must be contiguous (stride 1)",
                    what, (long long)t->stride[3]);
  if (ke__has_negative_stride(t))
    return ke__fail(KE_ESHAPE, "attention: %s has a negative stride", what);
  return KE_OK;
}

static int ke__same_dim(const ke_tensor *a, const char *an,
                        const ke_tensor *b, const char *bn, int d,
                        const char *dim) {
  if (a->shape[d] != b->shape[d])
    return ke__fail(KE_ESHAPE, "attention: %s (%s %lld) and %s (%s %lld) "
                               "differ",
                    dim, an, (long long)a->shape[d], dim, bn,
                    (long long)b->shape[d]);
  return KE_OK;
}

static int ke__attention_check(const ke_tensor *q, const ke_tensor *k,
                               const ke_tensor *v, const ke_tensor *o,
                               const ke_attention_params *p) {
  const ke_tensor *all[4] = {q, k, v, o};
  const char *names[4] = {"q", "k", "v", "o"};
  for (int t = 0; t < 4; t++)
    if (ke_dtype_size(all[t]->dtype) == 0)
      return ke__fail(KE_EDTYPE, "attention: %s dtype %d is not f32, f16 or "
                                 "bf16", names[t], (int)all[t]->dtype);
  for (int t = 1; t < 4; t++)
    if (all[t]->dtype != q->dtype)
      return ke__fail(KE_EDTYPE, "attention: q is %s but %s is %s; q, k, v "
                                 "and o must share one dtype",
                      ke_dtype_name(q->dtype), names[t],
                      ke_dtype_name(all[t]->dtype));
  for (int t = 0; t < 4; t++) KE__TRY(ke__attention_view(all[t], names[t]));

  for (int d = 0; d < 4; d++) {
    static const char *dims[4] = {"B", "Hq", "Sq", "D"};
    KE__TRY(ke__same_dim(q, "q", o, "o", d, dims[d]));
  }
  for (int d = 0; d < 4; d++) {
    static const char *dims[4] = {"B", "Hkv", "Sk", "D"};
    KE__TRY(ke__same_dim(k, "k", v, "v", d, dims[d]));
  }
  KE__TRY(ke__same_dim(q, "q", k, "k", 0, "B"));
  KE__TRY(ke__same_dim(q, "q", k, "k", 3, "D"));

  const int64_t b = q->shape[0], hq = q->shape[1], sq = q->shape[2];
  const int64_t hkv = k->shape[1], sk = k->shape[2], d = q->shape[3];
  if (hq % hkv != 0)
    return ke__fail(KE_ESHAPE, "attention: Hq %lld is not a multiple of "
                               "Hkv %lld", (long long)hq, (long long)hkv);
  if (d > KE__ATTN_MAX_D)
    return ke__fail(KE_ESHAPE, "attention: head dimension D = %lld; "
                               "supported: 1..%d", (long long)d,
                    KE__ATTN_MAX_D);
  if (sq > KE__ATTN_MAX_SEQ || sk > KE__ATTN_MAX_SEQ)
    return ke__fail(KE_ESHAPE, "attention: Sq %lld or Sk %lld above 2^31 - "
                               "1", (long long)sq, (long long)sk);
  if (b > KE__ATTN_MAX_GRID_YZ || hkv > KE__ATTN_MAX_GRID_YZ)
    return ke__fail(KE_ESHAPE, "attention: B %lld or Hkv %lld above %d",
                    (long long)b, (long long)hkv, KE__ATTN_MAX_GRID_YZ);
  if (hq / hkv * sq > KE__ATTN_MAX_ROWS)
    return ke__fail(KE_ESHAPE, "attention: (Hq / Hkv) * Sq = %lld query "
                               "rows per kv head, above 2^28",
                    (long long)(hq / hkv * sq));

  if (!ke__no_self_overlap(o))
    return ke__fail(KE_ESHAPE, "attention: the strides make elements of o "
                               "share memory");
  for (int t = 0; t < 3; t++)
    if (ke__ranges_meet(o, all[t]))
      return ke__fail(KE_ESHAPE, "attention: o overlaps %s; the output must "
                                 "not share memory with an input",
                      names[t]);

  if (!isfinite(p->scale))
    return ke__fail(KE_EINVAL, "attention: scale %g is not finite",
                    (double)p->scale);
  if (p->causal && p->causal_offset > KE__ATTN_MAX_OFFSET)
    return ke__fail(KE_EINVAL, "attention: causal_offset %lld above 2^61",
                    (long long)p->causal_offset);
  if (p->kernel != KE_ATTN_KERNEL_AUTO && p->kernel != KE_ATTN_KERNEL_TILED &&
      p->kernel != KE_ATTN_KERNEL_ROWS)
    return ke__fail(KE_EINVAL, "attention: kernel %d is not AUTO (0), TILED "
                               "(1) or ROWS (2)", (int)p->kernel);
  if (p->round_p != 0 && p->round_p != 1)
    return ke__fail(KE_EINVAL, "attention: round_p %d is not 0 or 1",
                    p->round_p);
  return KE_OK;
}

int ke_attention(ke_context *ctx, const ke_tensor *q, const ke_tensor *k,
                 const ke_tensor *v, ke_tensor *o,
                 const ke_attention_params *params) {
  ke_attention_params defaults;
  if (!ctx || !q || !k || !v || !o || !q->data || !k->data || !v->data ||
      !o->data)
    return ke__fail(KE_EINVAL, "attention: NULL context, tensor or data");
  if (!params) {
    ke_attention_params_init(&defaults);
    params = &defaults;
  }
  KE__TRY(ke__attention_check(q, k, v, o, params));

  ke__attention_desc a = {0};
  a.b = q->shape[0];
  a.hq = q->shape[1];
  a.sq = q->shape[2];
  a.d = q->shape[3];
  a.hkv = k->shape[1];
  a.sk = k->shape[2];
  for (int d = 0; d < 3; d++) {
    a.q_stride[d] = q->stride[d];
    a.k_stride[d] = k->stride[d];
    a.v_stride[d] = v->stride[d];
    a.o_stride[d] = o->stride[d];
  }
  a.scale = ke__attention_scale(params, a.d);
  a.causal = params->causal != 0;
  a.offset = params->causal_offset < 0 ? a.sk - a.sq : params->causal_offset;
  a.round_p = params->round_p;
  a.no_hopper = ctx->attention_tuning.hopper == 0;
  /* -1 (by size), 0 (never), 1 (always) -> 0, 1, 2: zero the default. */
  a.v16 = ctx->attention_tuning.v16 < 0 ? 0
                                        : (int)ctx->attention_tuning.v16 + 1;
  /* Few query rows per KV head (decode), unless the caller pinned a
   * kernel: the split-key kernel. */
  if (params->kernel == KE_ATTN_KERNEL_AUTO &&
      ke__attention_decode_fits(ctx, &a))
    return ke__attention_decode(ctx, q->dtype, q->data, k->data, v->data,
                                o->data, &a);
  a.kernel = ke__attention_kernel(params, &a);
  /* The Hopper kernel's workspace for bf16 (V in f16); where the cap
   * refuses it the launch runs without, slower, not wrong. */
  const size_t work = ke__attention_work_bytes(q->dtype, &a);
  if (work) {
    unsigned *counters;
    float *room;
    const int st = ke__scratch_get(ctx, 0, work, &counters, &room);
    if (st == KE_OK)
      a.work = room;
    else if (st != KE_ECAP && st != KE_ENOMEM)
      return st;
  }
  KE__TIMED_LAUNCH(ctx, "attention",
                   ke__attention_launch(ctx->stream, q->dtype, q->data,
                                        k->data, v->data, o->data, &a));
  KE__PLANTED_ONE_ELEMENT(ctx, o);
  return KE_OK;
}

/* Per row: the visible keys' scores in double; a NaN or +inf score makes
 * the row NaN; no score above -inf (nothing visible) makes it zeros;
 * otherwise the weights exp(s - max) normalise a sum of V rows in which
 * 0 * NaN stays NaN, as in the kernel. */
/* One query row (batch, head, i) per item: rows are independent, and
 * causal rows differ in cost, which the pool's item-at-a-time hand-out
 * balances. */
typedef struct attention_ref_job {
  const double *q, *k, *v;
  double *o;
  int64_t hq, hkv, sq, sk, d, offset;
  double scale;
  int causal;
} attention_ref_job;

static void attention_ref_row(void *arg, int64_t item) {
  const attention_ref_job *a = arg;
  const int64_t sk = a->sk, d = a->d, ratio = a->hq / a->hkv;
  const int64_t i = item % a->sq, h = (item / a->sq) % a->hq,
                bb = item / (a->sq * a->hq);
  const double *kh = a->k + (bb * a->hkv + h / ratio) * sk * d;
  const double *vh = a->v + (bb * a->hkv + h / ratio) * sk * d;
  const double *qi = a->q + item * d;
  double *oi = a->o + item * d;
  int64_t visible = sk;
  if (a->causal) {
    visible = a->offset + i + 1;
    visible = visible < 0 ? 0 : (visible > sk ? sk : visible);
  }
  double *s = malloc((size_t)(sk + d) * sizeof *s);
  if (!s) abort(); /* a reference has no status to return */
  double *acc = s + sk;
  double m = -INFINITY;
  int poisoned = 0;
  for (int64_t j = 0; j < visible; j++) {
    double dot = 0.0;
    for (int64_t e = 0; e < d; e++) dot += qi[e] * kh[j * d + e];
    s[j] = a->scale * dot;
    if (isnan(s[j]) || s[j] == INFINITY) poisoned = 1;
    else if (s[j] > m) m = s[j];
  }
  if (poisoned || m == -INFINITY) {
    for (int64_t e = 0; e < d; e++) oi[e] = poisoned ? NAN : 0.0;
    free(s);
    return;
  }
  double sum = 0.0;
  for (int64_t e = 0; e < d; e++) acc[e] = 0.0;
  for (int64_t j = 0; j < visible; j++) {
    const double w = exp(s[j] - m);
    sum += w;
    for (int64_t e = 0; e < d; e++) acc[e] += w * vh[j * d + e];
  }
  for (int64_t e = 0; e < d; e++) oi[e] = acc[e] / sum;
  free(s);
}

void ke_attention_ref(const double *q, const double *k, const double *v,
                      double *o, int64_t b, int64_t hq, int64_t hkv,
                      int64_t sq, int64_t sk, int64_t d,
                      const ke_attention_params *params) {
  ke_attention_params defaults;
  if (!params) {
    ke_attention_params_init(&defaults);
    params = &defaults;
  }
  attention_ref_job a = {q, k, v, o, hq, hkv, sq, sk, d,
                         params->causal_offset < 0 ? sk - sq
                                                   : params->causal_offset,
                         ke__attention_scale(params, d), params->causal};
  const int64_t rows = b * hq * sq;
  ke_ref_parallel(rows, 2.0 * (double)rows * sk * (d + 10), attention_ref_row,
                  &a);
}
