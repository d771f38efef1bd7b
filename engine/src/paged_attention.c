/* Paged attention (decode): the C entry point (checks, launches) and the
 * double-precision reference, side by side. The kernels are in
 * kernels/paged_attention.hip; the API contract in kiln/paged_attention.h.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "contract/decode.h"
#include "decode.h"
#include "engine-impl.h"
#include "kiln/kernels.h"
#include "contract/launch.h"

void ke_paged_attention_params_init(ke_paged_attention_params *p) {
  p->scale = 0.0f;
  p->workspace = NULL;
  p->workspace_bytes = 0;
  p->host_seq_lens = NULL;
  p->host_block_tables = NULL;
}

/* The scale the kernel multiplies by, so that the reference uses the very
 * same (float) value. */
static float ke__paged_scale(const ke_paged_attention_params *p,
                             int64_t head_dim) {
  if (p && p->scale != 0.0f) return p->scale;
  return (float)(1.0 / sqrt((double)head_dim));
}

static int ke__paged_head_dim_ok(int64_t d) {
  return d == 64 || d == 80 || d == 96 || d == 128 || d == 256;
}

static int64_t ke__ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Workspace floats per (sequence, head, partition): max, sum, p*V. */
static size_t ke__paged_ws_bytes(int64_t num_seqs, int64_t num_heads,
                                 int64_t head_dim, int64_t splits) {
  return (size_t)(num_seqs * num_heads * splits * (head_dim + 2)) *
         sizeof(float);
}

size_t ke_paged_attention_workspace_bytes(const ke_paged_attention_dims *d) {
  if (!d || d->block_size < 1 || d->max_blocks_per_seq < 1) return 0;
  int64_t splits = ke__ceil_div(d->max_blocks_per_seq * d->block_size,
                                KE__PAGED_PARTITION);
  if (splits <= 1) return 0; /* nothing is ever split */
  return ke__paged_ws_bytes(d->num_seqs, d->num_heads, d->head_dim, splits);
}

/* q or out: [S, H, D], last dimension contiguous, and rows that do not
 * overlap with either seq-major or head-major row order. */
static int ke__paged_rows_ok(const ke_tensor *t, const char *what) {
  int64_t s = t->shape[0], h = t->shape[1], d = t->shape[2];
  int64_t ss = t->stride[0], hs = t->stride[1];
  if (t->stride[2] != 1)
    return ke__fail(KE_ESHAPE, "paged_attention: %s last dimension has "
                               "stride %lld; it must be contiguous",
                    what, (long long)t->stride[2]);
  if ((s > 1 && ss < 0) || (h > 1 && hs < 0))
    return ke__fail(KE_ESHAPE, "paged_attention: %s has a negative stride",
                    what);
  int seq_major = (h == 1 || hs >= d) && (s == 1 || ss >= (h - 1) * hs + d);
  int head_major = (s == 1 || ss >= d) && (h == 1 || hs >= (s - 1) * ss + d);
  if (!seq_major && !head_major)
    return ke__fail(KE_ESHAPE, "paged_attention: %s rows overlap (strides "
                               "%lld, %lld for shape [%lld, %lld, %lld])",
                    what, (long long)ss, (long long)hs, (long long)s,
                    (long long)h, (long long)d);
  return KE_OK;
}

static int ke__paged_check_tensors(const ke_tensor *q, const ke_tensor *k,
                                   const ke_tensor *v, const ke_tensor *out) {
  if (ke_dtype_size(q->dtype) == 0 || ke_dtype_size(k->dtype) == 0 ||
      ke_dtype_size(v->dtype) == 0 || ke_dtype_size(out->dtype) == 0)
    return ke__fail(KE_EDTYPE, "paged_attention: dtypes must be f32, f16 or "
                               "bf16 (q %d, k %d, v %d, out %d)",
                    (int)q->dtype, (int)k->dtype, (int)v->dtype,
                    (int)out->dtype);
  if (k->dtype != v->dtype)
    return ke__fail(KE_EDTYPE, "paged_attention: k cache is %s, v cache %s; "
                               "they must match",
                    ke_dtype_name(k->dtype), ke_dtype_name(v->dtype));
  if (q->rank != 3 || out->rank != 3 || k->rank != 4 || v->rank != 4)
    return ke__fail(KE_ESHAPE, "paged_attention: ranks q %d, out %d, k %d, "
                               "v %d; expected 3, 3, 4, 4",
                    q->rank, out->rank, k->rank, v->rank);
  for (int d = 0; d < 4; d++) {
    if (k->shape[d] != v->shape[d])
      return ke__fail(KE_ESHAPE, "paged_attention: k and v caches differ in "
                                 "dimension %d (%lld vs %lld)",
                      d, (long long)k->shape[d], (long long)v->shape[d]);
    if (k->shape[d] < 1)
      return ke__fail(KE_ESHAPE, "paged_attention: cache dimension %d is "
                                 "%lld", d, (long long)k->shape[d]);
  }
  for (int d = 0; d < 3; d++) {
    if (q->shape[d] != out->shape[d])
      return ke__fail(KE_ESHAPE, "paged_attention: q and out differ in "
                                 "dimension %d (%lld vs %lld)",
                      d, (long long)q->shape[d], (long long)out->shape[d]);
    if (q->shape[d] < 1)
      return ke__fail(KE_ESHAPE, "paged_attention: q dimension %d is %lld",
                      d, (long long)q->shape[d]);
  }
  int64_t head_dim = q->shape[2], block_size = k->shape[2];
  int64_t num_heads = q->shape[1], num_kv_heads = k->shape[1];
  if (!ke__paged_head_dim_ok(head_dim))
    return ke__fail(KE_ESHAPE, "paged_attention: head_dim %lld is not "
                               "supported (64, 80, 96, 128 or 256)",
                    (long long)head_dim);
  if (k->shape[3] != head_dim)
    return ke__fail(KE_ESHAPE, "paged_attention: cache head_dim %lld, q "
                               "head_dim %lld",
                    (long long)k->shape[3], (long long)head_dim);
  if (block_size != 8 && block_size != 16 && block_size != 32)
    return ke__fail(KE_ESHAPE, "paged_attention: block_size %lld is not "
                               "supported (8, 16 or 32)",
                    (long long)block_size);
  if (num_heads % num_kv_heads != 0)
    return ke__fail(KE_ESHAPE, "paged_attention: %lld query heads are not a "
                               "multiple of %lld KV heads",
                    (long long)num_heads, (long long)num_kv_heads);
  if (num_heads > 65535 || q->shape[0] > INT32_MAX)
    return ke__fail(KE_ESHAPE, "paged_attention: %lld heads x %lld "
                               "sequences is above the launch limits "
                               "(65535 heads, 2^31-1 sequences)",
                    (long long)num_heads, (long long)q->shape[0]);
  if (!ke_tensor_is_contiguous(k) || !ke_tensor_is_contiguous(v))
    return ke__fail(KE_ESHAPE, "paged_attention: k and v caches must be "
                               "packed [num_blocks, num_kv_heads, "
                               "block_size, head_dim]");
  if ((uintptr_t)k->data % 16 != 0 || (uintptr_t)v->data % 16 != 0)
    return ke__fail(KE_ESHAPE, "paged_attention: k and v caches must be "
                               "16-byte aligned (k at %p, v at %p)",
                    k->data, v->data);
  KE__TRY(ke__paged_rows_ok(q, "q"));
  return ke__paged_rows_ok(out, "out");
}

/* Checks every length and every table entry a length uses, on the
 * caller's host copies when params has them, else on the device arrays
 * read back; gives the longest length. */
static int ke__paged_check_tables(ke_context *ctx, const int32_t *tables,
                                  const int32_t *lens, int64_t num_seqs,
                                  int64_t max_blocks, int64_t block_size,
                                  int64_t num_blocks,
                                  const ke_paged_attention_params *params,
                                  int64_t *max_len) {
  int32_t *own_lens = NULL, *own_tables = NULL;
  const int32_t *h_lens = params->host_seq_lens;
  const int32_t *h_tables = params->host_block_tables;
  int st = KE_OK;
  if (!h_lens != !h_tables)
    return ke__fail(KE_EINVAL, "paged_attention: params give host_seq_lens "
                               "%p and host_block_tables %p; give both or "
                               "neither",
                    (const void *)h_lens, (const void *)h_tables);
  if (!h_lens) {
    own_lens = malloc((size_t)num_seqs * sizeof *own_lens);
    own_tables = malloc((size_t)(num_seqs * max_blocks) * sizeof *own_tables);
    if (!own_lens || !own_tables) {
      st = ke__fail(KE_ENOMEM, "paged_attention: host memory for the block "
                               "table check");
      goto done;
    }
    st = ke_copy_to_host(ctx, own_lens, lens,
                         (size_t)num_seqs * sizeof *own_lens);
    if (st != KE_OK) goto done;
    st = ke_copy_to_host(ctx, own_tables, tables,
                         (size_t)(num_seqs * max_blocks) * sizeof *own_tables);
    if (st != KE_OK) goto done;
    h_lens = own_lens;
    h_tables = own_tables;
  }
  const char *from = own_lens ? "" : "host_"; /* which arrays said so */
  *max_len = 0;
  for (int64_t s = 0; s < num_seqs; s++) {
    int64_t len = h_lens[s];
    if (len < 1 || len > max_blocks * block_size) {
      st = ke__fail(KE_EINVAL, "paged_attention: %sseq_lens[%lld] = %lld; "
                               "lengths must be 1..%lld (max_blocks_per_seq "
                               "%lld x block_size %lld)",
                    from, (long long)s, (long long)len,
                    (long long)(max_blocks * block_size),
                    (long long)max_blocks, (long long)block_size);
      goto done;
    }
    for (int64_t b = 0; b < ke__ceil_div(len, block_size); b++) {
      int32_t blk = h_tables[s * max_blocks + b];
      if (blk < 0 || blk >= num_blocks) {
        st = ke__fail(KE_EINVAL, "paged_attention: %sblock_tables[%lld]"
                                 "[%lld] = %d is outside the cache's %lld "
                                 "blocks",
                      from, (long long)s, (long long)b, (int)blk,
                      (long long)num_blocks);
        goto done;
      }
    }
    if (len > *max_len) *max_len = len;
  }
done:
  free(own_lens);
  free(own_tables);
  return st;
}

/* Cuts the sequences into token ranges (ke__decode_splits: enough blocks
 * for the device) and finds the partials' memory: the caller's workspace,
 * merged by the combine kernel, or else the engine's scratch, merged by the
 * last block of each sequence. Without either (the cap refused the
 * scratch) every sequence runs as one range. */
static int ke__paged_plan(ke_context *ctx,
                          const ke_paged_attention_params *params,
                          int64_t max_len, ke__paged_attention_args *a,
                          ke__decode_ext *ext) {
  const int64_t group = a->num_heads / a->num_kv_heads;
  const int64_t tile = ke__decode_tile_rows(group);
  const int64_t pairs = a->num_seqs * a->num_kv_heads * ((group + tile - 1) /
                                                         tile);
  int64_t min_chunk; /* ranges of equal length: not needed here */
  int64_t splits = ke__decode_splits(ctx, pairs, max_len, &min_chunk,
                                     ke__paged_attention_takes_mma(a, ext->mma));
  if (splits > KE__PAGED_MAX_SPLITS) splits = KE__PAGED_MAX_SPLITS;
  a->splits = 1;
  a->chunk = max_len;
  a->cap = 1;
  if (params->workspace && max_len > KE__PAGED_PARTITION) {
    const int64_t cap = ke__ceil_div(max_len, KE__PAGED_PARTITION);
    const size_t need = ke__paged_ws_bytes(a->num_seqs, a->num_heads,
                                           a->head_dim, cap);
    if (params->workspace_bytes < need ||
        (uintptr_t)params->workspace % sizeof(float) != 0)
      return ke__fail(KE_EINVAL, "paged_attention: workspace of %zu bytes at "
                                 "%p: %zu bytes, 4-byte aligned, needed for "
                                 "sequences of up to %lld tokens",
                      params->workspace_bytes, params->workspace, need,
                      (long long)max_len);
    if (splits > cap) splits = cap;
    if (splits > 1) {
      a->partials = params->workspace;
      a->cap = cap;
    }
  } else if (splits > 1 && !params->workspace) {
    const size_t partial_bytes =
        ke__paged_ws_bytes(a->num_seqs, a->num_heads, a->head_dim, splits);
    /* Done counters, then the dynamic scan's step counters. */
    const int dyn = (ctx->decode_tuning.dynamic & 2) != 0;
    const int st = ke__scratch_get(
        ctx, (size_t)pairs * (dyn ? 2 : 1) * sizeof(unsigned), partial_bytes,
        &a->counters, &a->partials);
    if (st != KE_OK && st != KE_ECAP && st != KE_ENOMEM) return st;
    if (st == KE_OK) {
      a->cap = splits;
      if (dyn) ext->grabs = a->counters + pairs;
    }
  } else {
    splits = 1;
  }
  if (!a->partials) return KE_OK;
  a->splits = splits;
  a->chunk = ke__ceil_div(max_len, splits);
  return KE_OK;
}

int ke_paged_attention(ke_context *ctx, const ke_tensor *q,
                       const ke_tensor *k_cache, const ke_tensor *v_cache,
                       const int32_t *block_tables,
                       int64_t max_blocks_per_seq, const int32_t *seq_lens,
                       ke_tensor *out,
                       const ke_paged_attention_params *params) {
  ke_paged_attention_params defaults;
  if (!ctx || !q || !k_cache || !v_cache || !out || !q->data ||
      !k_cache->data || !v_cache->data || !out->data || !block_tables ||
      !seq_lens)
    return ke__fail(KE_EINVAL, "paged_attention: NULL context, tensor, data, "
                               "block table or lengths");
  if (!params) {
    ke_paged_attention_params_init(&defaults);
    params = &defaults;
  }
  KE__TRY(ke__paged_check_tensors(q, k_cache, v_cache, out));
  if (max_blocks_per_seq < 1 || max_blocks_per_seq > INT32_MAX)
    return ke__fail(KE_EINVAL, "paged_attention: max_blocks_per_seq %lld "
                               "outside 1..2^31-1",
                    (long long)max_blocks_per_seq);
  if (!isfinite(params->scale))
    return ke__fail(KE_EINVAL, "paged_attention: scale %g is not finite",
                    (double)params->scale);

  ke__paged_attention_args a = {
      .q_dtype = q->dtype,
      .kv_dtype = k_cache->dtype,
      .out_dtype = out->dtype,
      .q = q->data,
      .q_seq_stride = q->stride[0],
      .q_head_stride = q->stride[1],
      .k_cache = k_cache->data,
      .v_cache = v_cache->data,
      .block_tables = block_tables,
      .seq_lens = seq_lens,
      .out = out->data,
      .out_seq_stride = out->stride[0],
      .out_head_stride = out->stride[1],
      .num_seqs = q->shape[0],
      .max_blocks_per_seq = max_blocks_per_seq,
      .num_heads = (int)q->shape[1],
      .num_kv_heads = (int)k_cache->shape[1],
      .head_dim = (int)q->shape[2],
      .block_size = (int)k_cache->shape[2],
      .scale = ke__paged_scale(params, q->shape[2]),
  };
  /* Stages by default (0): 3 (4 measured slower for paged decode). */
  ke__decode_ext ext = {NULL, ctx->decode_tuning.stages == 4 ? 4 : 3,
                        (int)ctx->decode_tuning.matrix};
  int64_t max_len = 0;
  KE__TRY(ke__paged_check_tables(ctx, block_tables, seq_lens, a.num_seqs,
                                 max_blocks_per_seq, a.block_size,
                                 k_cache->shape[0], params, &max_len));
  KE__TRY(ke__paged_plan(ctx, params, max_len, &a, &ext));
  KE__TIMED_LAUNCH(ctx, "paged_attention",
                   ke__paged_attention_launch_ext(ctx->stream, &a, &ext));
  if (a.splits > 1 && !a.counters)
    KE__TIMED_LAUNCH(ctx, "paged_attention_combine",
                     ke__paged_attention_combine_launch(ctx->stream, &a));
  return KE_OK;
}

/* ---- Reference ----------------------------------------------------------- */

/* One head of one sequence: a plain softmax over the L scores (NaN and Inf
 * follow from the formula), then the weighted sum of V rows. */
static void ke__paged_ref_head(const ke_paged_attention_dims *dm,
                               const double *qh, const double *k,
                               const double *v, const int32_t *table,
                               int64_t len, int64_t kv_head, double scale,
                               double *scores, double *oh) {
  const int64_t D = dm->head_dim, bs = dm->block_size;
  for (int64_t t = 0; t < len; t++) {
    int64_t blk = table[t / bs];
    const double *kr = k + ((blk * dm->num_kv_heads + kv_head) * bs + t % bs) * D;
    double dot = 0.0;
    for (int64_t d = 0; d < D; d++) dot += qh[d] * kr[d];
    scores[t] = scale * dot;
  }
  double m = -INFINITY;
  for (int64_t t = 0; t < len; t++)
    if (scores[t] > m) m = scores[t];
  double sum = 0.0;
  for (int64_t t = 0; t < len; t++) {
    scores[t] = exp(scores[t] - m);
    sum += scores[t];
  }
  for (int64_t d = 0; d < D; d++) oh[d] = 0.0;
  for (int64_t t = 0; t < len; t++) {
    int64_t blk = table[t / bs];
    const double *vr = v + ((blk * dm->num_kv_heads + kv_head) * bs + t % bs) * D;
    for (int64_t d = 0; d < D; d++) oh[d] += scores[t] * vr[d];
  }
  for (int64_t d = 0; d < D; d++) oh[d] /= sum;
}

/* 1 when the sequence's length and the table entries it uses are valid. */
static int ke__paged_ref_seq_ok(const ke_paged_attention_dims *dm,
                                const int32_t *table, int64_t len) {
  if (len < 1 || len > dm->max_blocks_per_seq * dm->block_size) return 0;
  for (int64_t b = 0; b < ke__ceil_div(len, dm->block_size); b++)
    if (table[b] < 0 || table[b] >= dm->num_blocks) return 0;
  return 1;
}

static void paged_attention_ref_body(const ke_paged_attention_dims *dims,
                            const double *q, const double *k_cache,
                            const double *v_cache,
                            const int32_t *block_tables,
                            const int32_t *seq_lens, double *out,
                            const ke_paged_attention_params *params) {
  const int64_t H = dims->num_heads, D = dims->head_dim;
  const int64_t group = dims->num_heads / dims->num_kv_heads;
  const double scale = ke__paged_scale(params, D);
  int64_t max_len = 1;
  for (int64_t s = 0; s < dims->num_seqs; s++)
    if (seq_lens[s] > max_len) max_len = seq_lens[s];
  double *scores = malloc((size_t)max_len * sizeof *scores);
  for (int64_t s = 0; s < dims->num_seqs; s++) {
    const int32_t *table = block_tables + s * dims->max_blocks_per_seq;
    const int ok = scores && ke__paged_ref_seq_ok(dims, table, seq_lens[s]);
    for (int64_t h = 0; h < H; h++) {
      double *oh = out + (s * H + h) * D;
      if (!ok) {
        for (int64_t d = 0; d < D; d++) oh[d] = NAN;
        continue;
      }
      ke__paged_ref_head(dims, q + (s * H + h) * D, k_cache, v_cache, table,
                         seq_lens[s], h / group, scale, scores, oh);
    }
  }
  free(scores);
}

/* The reference, timed (ke_ref_ms). */
void ke_paged_attention_ref(const ke_paged_attention_dims *dims,
                            const double *q, const double *k_cache,
                            const double *v_cache,
                            const int32_t *block_tables,
                            const int32_t *seq_lens, double *out,
                            const ke_paged_attention_params *params) {
  ke_ref_begin();
  paged_attention_ref_body(dims, q, k_cache, v_cache, block_tables, seq_lens, out, params);
  ke_ref_end();
}
