/* RoPE and position ids: the C entry points (checks, launch) and the
 * double-precision references, side by side. Kernels: kernels/rope.hip.
 */
#include <math.h>
#include <stdint.h>

#include "engine-impl.h"
#include "kiln/kernels.h"
#include "contract/launch.h"

/* ---- Position ids ---------------------------------------------------------- */

static int ke__positions_ok(const ke_positions *p, const char *op,
                            const char *what) {
  if (!p || !p->data)
    return ke__fail(KE_EINVAL, "%s: %s is NULL or has no data", op, what);
  if (p->dtype != KE_POS_I32 && p->dtype != KE_POS_I64)
    return ke__fail(KE_EDTYPE, "%s: %s dtype %d is not i32 or i64", op, what,
                    (int)p->dtype);
  return KE_OK;
}

/* Largest id (and block id) the spec produces over tokens start..pmax. */
static void ke__position_ids_max(const ke_position_ids_spec *s,
                                 int64_t mask_pos, int64_t *max_id,
                                 int64_t *max_block) {
  const int64_t pmax = s->start + s->seq_len - 1;
  *max_id = pmax;
  *max_block = 0;
  switch (s->kind) {
  case KE_POSITION_IDS_BIDIRECTIONAL:
    *max_id = pmax < s->prefix_len ? pmax : s->prefix_len - 1;
    if (pmax >= s->prefix_len) {
      if (mask_pos > *max_id) *max_id = mask_pos;
      *max_block = pmax - s->prefix_len + 1;
    }
    break;
  case KE_POSITION_IDS_LOCAL:
    if (s->window - 1 < pmax) *max_id = s->window - 1;
    break;
  case KE_POSITION_IDS_GLOBAL_LOCAL:
    if (s->n_global + s->window - 1 < pmax)
      *max_id = s->n_global + s->window - 1;
    break;
  case KE_POSITION_IDS_CAUSAL:
    break;
  }
}

int ke_position_ids(ke_context *ctx, const ke_position_ids_spec *spec,
                    ke_positions *ids, ke_positions *block_ids) {
  static const char op[] = "position_ids";
  if (!ctx || !spec)
    return ke__fail(KE_EINVAL, "%s: NULL context or spec", op);
  KE__TRY(ke__positions_ok(ids, op, "ids"));
  const int bidir = spec->kind == KE_POSITION_IDS_BIDIRECTIONAL;
  if (spec->kind < KE_POSITION_IDS_CAUSAL ||
      spec->kind > KE_POSITION_IDS_GLOBAL_LOCAL)
    return ke__fail(KE_EINVAL, "%s: unknown kind %d", op, (int)spec->kind);
  if (bidir) {
    KE__TRY(ke__positions_ok(block_ids, op, "block_ids"));
    if (block_ids->count != ids->count)
      return ke__fail(KE_EINVAL, "%s: %lld block ids for %lld ids", op,
                      (long long)block_ids->count, (long long)ids->count);
  } else if (block_ids) {
    return ke__fail(KE_EINVAL, "%s: only bidirectional writes block ids",
                    op);
  }
  if (spec->seq_len < 1)
    return ke__fail(KE_EINVAL, "%s: seq_len %lld < 1", op,
                    (long long)spec->seq_len);
  if (ids->count < 1 || ids->count % spec->seq_len != 0)
    return ke__fail(KE_EINVAL, "%s: count %lld is not a positive multiple "
                               "of seq_len %lld",
                    op, (long long)ids->count, (long long)spec->seq_len);
  if (spec->start < 0 || spec->start > INT64_MAX - spec->seq_len)
    return ke__fail(KE_EINVAL, "%s: start %lld out of range", op,
                    (long long)spec->start);
  int64_t mask_pos = spec->mask_pos;
  if (bidir) {
    if (spec->prefix_len < 1)
      return ke__fail(KE_EINVAL, "%s: prefix_len %lld < 1 (GLM's prefix "
                                 "holds at least the [MASK] token)",
                      op, (long long)spec->prefix_len);
    if (mask_pos < 0) mask_pos = spec->prefix_len - 1;
    if (mask_pos >= spec->prefix_len)
      return ke__fail(KE_EINVAL, "%s: mask_pos %lld is not inside the "
                                 "prefix [0, %lld)",
                      op, (long long)mask_pos, (long long)spec->prefix_len);
  }
  if ((spec->kind == KE_POSITION_IDS_LOCAL ||
       spec->kind == KE_POSITION_IDS_GLOBAL_LOCAL) && spec->window < 1)
    return ke__fail(KE_EINVAL, "%s: window %lld < 1", op,
                    (long long)spec->window);
  if (spec->kind == KE_POSITION_IDS_GLOBAL_LOCAL &&
      (spec->n_global < 0 || spec->n_global > INT64_MAX - spec->window))
    return ke__fail(KE_EINVAL, "%s: n_global %lld out of range", op,
                    (long long)spec->n_global);
  int64_t max_id, max_block;
  ke__position_ids_max(spec, mask_pos, &max_id, &max_block);
  if (ids->dtype == KE_POS_I32 && max_id > INT32_MAX)
    return ke__fail(KE_EINVAL, "%s: id %lld does not fit in i32 ids", op,
                    (long long)max_id);
  if (bidir && block_ids->dtype == KE_POS_I32 && max_block > INT32_MAX)
    return ke__fail(KE_EINVAL, "%s: block id %lld does not fit in i32", op,
                    (long long)max_block);

  ke__position_ids_args a = {
      .kind = spec->kind,
      .count = ids->count,
      .seq_len = spec->seq_len,
      .start = spec->start,
      .prefix_len = spec->prefix_len,
      .mask_pos = mask_pos,
      .window = spec->window,
      .n_global = spec->n_global,
      .ids = ids->data,
      .block_ids = bidir ? block_ids->data : NULL,
      .ids_i64 = ids->dtype == KE_POS_I64,
      .block_ids_i64 = bidir && block_ids->dtype == KE_POS_I64,
  };
  KE__TIMED_LAUNCH(ctx, "position_ids",
                   ke__position_ids_launch(ctx->stream, &a));
  return KE_OK;
}

int ke_position_ids_causal(ke_context *ctx, ke_positions *ids,
                           int64_t seq_len, int64_t start) {
  ke_position_ids_spec s = {.kind = KE_POSITION_IDS_CAUSAL,
                            .seq_len = seq_len, .start = start};
  return ke_position_ids(ctx, &s, ids, NULL);
}

int ke_position_ids_bidirectional(ke_context *ctx, ke_positions *ids,
                                  ke_positions *block_ids, int64_t seq_len,
                                  int64_t start, int64_t prefix_len,
                                  int64_t mask_pos) {
  ke_position_ids_spec s = {.kind = KE_POSITION_IDS_BIDIRECTIONAL,
                            .seq_len = seq_len, .start = start,
                            .prefix_len = prefix_len, .mask_pos = mask_pos};
  return ke_position_ids(ctx, &s, ids, block_ids);
}

int ke_position_ids_local(ke_context *ctx, ke_positions *ids,
                          int64_t seq_len, int64_t start, int64_t window) {
  ke_position_ids_spec s = {.kind = KE_POSITION_IDS_LOCAL,
                            .seq_len = seq_len, .start = start,
                            .window = window};
  return ke_position_ids(ctx, &s, ids, NULL);
}

int ke_position_ids_global_local(ke_context *ctx, ke_positions *ids,
                                 int64_t seq_len, int64_t start,
                                 int64_t n_global, int64_t window) {
  ke_position_ids_spec s = {.kind = KE_POSITION_IDS_GLOBAL_LOCAL,
                            .seq_len = seq_len, .start = start,
                            .window = window, .n_global = n_global};
  return ke_position_ids(ctx, &s, ids, NULL);
}

void ke_position_ids_ref(const ke_position_ids_spec *spec, int64_t count,
                         int64_t *ids, int64_t *block_ids) {
  const int64_t mask = spec->mask_pos < 0 ? spec->prefix_len - 1
                                          : spec->mask_pos;
  for (int64_t i = 0; i < count; i++) {
    const int64_t p = spec->start + i % spec->seq_len;
    int64_t id = p, block = 0;
    if (spec->kind == KE_POSITION_IDS_BIDIRECTIONAL && p >= spec->prefix_len) {
      id = mask;
      block = p - spec->prefix_len + 1;
    } else if (spec->kind == KE_POSITION_IDS_LOCAL) {
      id = p % spec->window;
    } else if (spec->kind == KE_POSITION_IDS_GLOBAL_LOCAL &&
               p >= spec->n_global) {
      id = spec->n_global + (p - spec->n_global) % spec->window;
    }
    ids[i] = id;
    if (block_ids) block_ids[i] = block;
  }
}

/* ---- RoPE ------------------------------------------------------------------ */

void ke_rope_params_init(ke_rope_params *p) {
  p->rot = 0;
  p->theta = 10000.0;
  p->pairing = KE_ROPE_ROTATE_HALF;
}

/* Batch, sequence and head strides of a [S, H, D] or [B, H, S, D] tensor. */
static void ke__rope_strides(const ke_tensor *t, int64_t out[3]) {
  if (t->rank == 3) {
    out[0] = 0;
    out[1] = t->stride[0];
    out[2] = t->stride[1];
  } else {
    out[0] = t->stride[0];
    out[1] = t->stride[2];
    out[2] = t->stride[1];
  }
}

int ke_rope(ke_context *ctx, const ke_tensor *x, ke_tensor *y,
            const ke_positions *positions,
            const ke_positions *block_positions,
            const ke_rope_params *params) {
  static const char op[] = "rope";
  ke_rope_params defaults;
  if (!params) {
    ke_rope_params_init(&defaults);
    params = &defaults;
  }
  if (!ctx || !x || !y || !x->data || !y->data)
    return ke__fail(KE_EINVAL, "%s: NULL context, tensor or data", op);
  KE__TRY(ke__positions_ok(positions, op, "positions"));
  if (block_positions) {
    KE__TRY(ke__positions_ok(block_positions, op, "block_positions"));
    if (block_positions->dtype != positions->dtype)
      return ke__fail(KE_EDTYPE, "%s: positions and block_positions differ "
                                 "in dtype", op);
  }
  if (ke_dtype_size(x->dtype) == 0 || ke_dtype_size(y->dtype) == 0)
    return ke__fail(KE_EDTYPE, "%s: dtypes must be f32, f16 or bf16", op);
  if (x->rank != 3 && x->rank != 4)
    return ke__fail(KE_ESHAPE, "%s: x has rank %d; it must be [S, H, D] or "
                               "[B, H, S, D]", op, x->rank);
  KE__TRY(ke__same_shape(x, y, op, "x", "y"));
  for (int d = 0; d < x->rank; d++)
    if (x->shape[d] < 1)
      return ke__fail(KE_ESHAPE, "%s: dimension %d is %lld", op, d,
                      (long long)x->shape[d]);
  const int last = x->rank - 1;
  const int64_t batch = x->rank == 4 ? x->shape[0] : 1;
  const int64_t seq = x->shape[x->rank == 4 ? 2 : 0];
  const int64_t heads = x->shape[1];
  const int64_t dim = x->shape[last];
  if ((x->stride[last] != 1 || y->stride[last] != 1) && dim != 1)
    return ke__fail(KE_ESHAPE, "%s: the head dimension must be contiguous "
                               "(x stride %lld, y stride %lld)", op,
                    (long long)x->stride[last], (long long)y->stride[last]);
  const int64_t rot = params->rot ? params->rot : dim;
  if (rot < 2 || rot % 2 != 0 || rot > dim)
    return ke__fail(KE_ESHAPE, "%s: rotary dimension %lld must be even and "
                               "in 2..D (D = %lld)", op, (long long)rot,
                    (long long)dim);
  if (block_positions && rot % 4 != 0)
    return ke__fail(KE_ESHAPE, "%s: 2-D RoPE needs rot %% 4 == 0 (two "
                               "halves of pairs); rot is %lld", op,
                    (long long)rot);
  if (heads > KE__ROPE_MAX_HEADS)
    return ke__fail(KE_ESHAPE, "%s: %lld heads > %lld", op, (long long)heads,
                    (long long)KE__ROPE_MAX_HEADS);
  if (params->pairing != KE_ROPE_ROTATE_HALF &&
      params->pairing != KE_ROPE_INTERLEAVED)
    return ke__fail(KE_EINVAL, "%s: unknown pairing %d", op,
                    (int)params->pairing);
  if (!isfinite(params->theta) || params->theta <= 0.0)
    return ke__fail(KE_EINVAL, "%s: theta %g must be finite and > 0", op,
                    params->theta);
  int64_t pos_batch_stride;
  if (positions->count == seq) pos_batch_stride = 0;
  else if (positions->count == batch * seq) pos_batch_stride = seq;
  else
    return ke__fail(KE_ESHAPE, "%s: %lld positions; need S = %lld or "
                               "B * S = %lld", op,
                    (long long)positions->count, (long long)seq,
                    (long long)(batch * seq));
  if (block_positions && block_positions->count != positions->count)
    return ke__fail(KE_ESHAPE, "%s: %lld block positions for %lld "
                               "positions", op,
                    (long long)block_positions->count,
                    (long long)positions->count);
  const int in_place = x->data == y->data;
  if (in_place) {
    if (x->dtype != y->dtype)
      return ke__fail(KE_ESHAPE, "%s: in place (x and y share data) needs "
                                 "one dtype", op);
    for (int d = 0; d < x->rank; d++)
      if (x->stride[d] != y->stride[d])
        return ke__fail(KE_ESHAPE, "%s: in place (x and y share data) needs "
                                   "the same strides; dimension %d differs",
                        op, d);
  }

  ke__rope_args a = {
      .x_dtype = x->dtype,
      .y_dtype = y->dtype,
      .x = x->data,
      .y = y->data,
      .batch = batch,
      .seq = seq,
      .heads = heads,
      .dim = dim,
      .rot = rot,
      .sec_pairs = block_positions ? rot / 4 : rot / 2,
      .interleaved = params->pairing == KE_ROPE_INTERLEAVED,
      .copy_rest = !in_place && rot < dim,
      .pos = positions->data,
      .pos2 = block_positions ? block_positions->data : positions->data,
      .pos_i64 = positions->dtype == KE_POS_I64,
      .pos_batch_stride = pos_batch_stride,
      .theta = params->theta,
  };
  ke__rope_strides(x, a.x_stride);
  ke__rope_strides(y, a.y_stride);
  KE__TIMED_LAUNCH(ctx, "rope", ke__rope_launch(ctx->stream, &a));
  return KE_OK;
}

static void rope_ref_body(const double *x, double *y, int64_t nvec, int64_t dim,
                 const int64_t *pos, const int64_t *pos2,
                 const ke_rope_params *params) {
  ke_rope_params defaults;
  if (!params) {
    ke_rope_params_init(&defaults);
    params = &defaults;
  }
  const int64_t rot = params->rot ? params->rot : dim;
  const int nsec = pos2 ? 2 : 1;
  const int64_t w = rot / nsec, half = w / 2;
  for (int64_t v = 0; v < nvec; v++) {
    const double *xv = x + v * dim;
    double *yv = y + v * dim;
    for (int64_t d = rot; d < dim; d++) yv[d] = xv[d];
    for (int sec = 0; sec < nsec; sec++) {
      const double p = (double)(sec ? pos2[v] : pos[v]);
      for (int64_t j = 0; j < half; j++) {
        const double angle = p * pow(params->theta, -(2.0 * (double)j) /
                                                        (double)w);
        const double c = cos(angle), s = sin(angle);
        const int64_t d1 = params->pairing == KE_ROPE_INTERLEAVED
                               ? sec * w + 2 * j
                               : sec * w + j;
        const int64_t d2 = params->pairing == KE_ROPE_INTERLEAVED
                               ? d1 + 1
                               : d1 + half;
        const double x1 = xv[d1], x2 = xv[d2];
        yv[d1] = x1 * c - x2 * s;
        yv[d2] = x2 * c + x1 * s;
      }
    }
  }
}

/* The reference, timed (ke_ref_ms). */
void ke_rope_ref(const double *x, double *y, int64_t nvec, int64_t dim,
                 const int64_t *pos, const int64_t *pos2,
                 const ke_rope_params *params) {
  ke_ref_begin();
  rope_ref_body(x, y, nvec, dim, pos, pos2, params);
  ke_ref_end();
}
