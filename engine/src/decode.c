/* Decode attention split over the keys: how many ranges each KV head's keys
 * are cut into (shared by dense and paged decode), the test-only knobs
 * that steer it, and the dense decode path of ke_attention (kernel:
 * kernels/attention_decode.hip; reference: ke_attention_ref).
 */
#include "decode.h"

#include "contract/decode.h"

#include "kiln/kernels.h"

void ke__decode_tuning_defaults(ke__decode_tuning *t) {
  t->blocks_per_mp = 2;
  t->min_chunk = 256;
  t->max_rows = 16;
  t->force_splits = 0;
  t->dynamic = 1;
  t->stages = 0;
  t->matrix = 2;
}

int ke__decode_tuning_get(const ke_context *ctx, ke__decode_tuning *t) {
  if (!ctx || !t)
    return ke__fail(KE_EINVAL, "ke__decode_tuning_get: NULL argument");
  *t = ctx->decode_tuning;
  return KE_OK;
}

int ke__decode_tuning_set(ke_context *ctx, const ke__decode_tuning *t) {
  if (!ctx) return ke__fail(KE_EINVAL, "ke__decode_tuning_set: ctx is NULL");
  if (!t) {
    ke__decode_tuning_defaults(&ctx->decode_tuning);
    return KE_OK;
  }
  if (t->blocks_per_mp < 1 || t->blocks_per_mp > 64 || t->min_chunk < 1 ||
      t->max_rows < 0 || t->force_splits < 0 ||
      t->force_splits > ((int64_t)1 << 20) || t->dynamic < 0 ||
      t->dynamic > 3 || (t->stages != 0 && t->stages != 3 && t->stages != 4) ||
      (t->matrix != 0 && t->matrix != 2 && t->matrix != 3))
    return ke__fail(KE_EINVAL, "ke__decode_tuning_set: blocks_per_mp %lld "
                               "(1..64), min_chunk %lld (>= 1), max_rows "
                               "%lld (>= 0), force_splits %lld (0..2^20), "
                               "dynamic %lld (0..3), stages %lld (0, 3 or 4), "
                               "matrix %lld (0, 2 or 3)",
                    (long long)t->blocks_per_mp, (long long)t->min_chunk,
                    (long long)t->max_rows, (long long)t->force_splits,
                    (long long)t->dynamic, (long long)t->stages,
                    (long long)t->matrix);
  ctx->decode_tuning = *t;
  return KE_OK;
}

int64_t ke__decode_splits(const ke_context *ctx, int64_t pairs, int64_t keys,
                          int64_t *min_chunk, int mma) {
  const ke__decode_tuning *t = &ctx->decode_tuning;
  int64_t splits;
  if (t->force_splits > 0) {
    splits = t->force_splits;
    *min_chunk = 1;
  } else {
    const int64_t mps = ctx->device.multiprocessors > 0
                            ? ctx->device.multiprocessors : 1;
    const int64_t bpm = mma ? (t->blocks_per_mp > 1 ? t->blocks_per_mp / 2
                                                    : 1)
                            : t->blocks_per_mp;
    const int64_t slots = mps * bpm;
    splits = pairs >= slots ? 1 : slots / pairs;
    const int64_t by_keys = (keys + t->min_chunk - 1) / t->min_chunk;
    if (splits > by_keys) splits = by_keys;
    *min_chunk = t->min_chunk;
  }
  if (splits > keys) splits = keys;
  return splits < 1 ? 1 : splits;
}

/* ---- Dense decode ----------------------------------------------------- */

int ke__attention_decode_fits(const ke_context *ctx,
                              const ke__attention_desc *a) {
  return a->hq / a->hkv * a->sq <= ctx->decode_tuning.max_rows;
}

int ke__attention_decode(ke_context *ctx, ke_dtype dtype, const void *q,
                         const void *k, const void *v, void *o,
                         const ke__attention_desc *a) {
  const int64_t rows = a->hq / a->hkv * a->sq;
  const int64_t tile = ke__decode_tile_rows(rows);
  const int64_t pairs = (rows + tile - 1) / tile * a->hkv * a->b;
  ke__decode_split sp = {1, 1, NULL, NULL};
  /* Stages by default (0): 4 for bf16, whose dynamic scan ran 7-13 %
   * slower with 3 on the H100 (docs/decisions/decode.md), 3 otherwise. */
  const int64_t stages = ctx->decode_tuning.stages;
  ke__decode_ext ext = {NULL,
                        (int)(stages ? stages : dtype == KE_BF16 ? 4 : 3),
                        (int)ctx->decode_tuning.matrix};
  const int64_t splits = ke__decode_splits(
      ctx, pairs, a->sk, &sp.min_chunk,
      ke__attention_decode_takes_mma(dtype, k, v, a, ext.mma));
  if (splits > 1) {
    /* Partial rows for every (output row, range); without the scratch (the
     * cap refused it) the call runs unsplit, which is slower, not wrong. */
    const size_t partial_bytes = (size_t)(a->b * a->hq * a->sq) *
                                 (size_t)splits * (size_t)(a->d + 2) *
                                 sizeof(float);
    /* Counters for tiles of one row: the kernel takes those for unaligned
     * views; the dynamic scan's step counters after them. */
    const size_t tiles1 = (size_t)(rows * a->hkv * a->b);
    const int dyn = (ctx->decode_tuning.dynamic & 1) != 0;
    const size_t counters = tiles1 * (dyn ? 2 : 1) * sizeof(unsigned);
    const int st = ke__scratch_get(ctx, counters, partial_bytes, &sp.counters,
                                   &sp.partials);
    if (st == KE_OK) {
      sp.splits = splits;
      if (dyn) ext.grabs = sp.counters + tiles1;
    } else if (st != KE_ECAP && st != KE_ENOMEM) {
      return st;
    }
  }
  KE__TIMED_LAUNCH(ctx, "attention_decode",
                   ke__attention_decode_launch_ext(ctx->stream, dtype, q, k,
                                                   v, o, a, &sp, &ext));
  return KE_OK;
}
