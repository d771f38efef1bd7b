/* Score masks: the C entry point (shape checks, launch), the predicate and
 * the double-precision reference, side by side. The kernel is in
 * kernels/masks.hip.
 */
#include <math.h>

#include "engine-impl.h"
#include "kiln/kernels.h"
#include "contract/launch.h"
#include "layout.h"

/* Offsets and windows above this are refused or clamped, so that position
 * arithmetic never overflows int64. */
#define KE__MASK_POS_MAX ((int64_t)1 << 61)

void ke_mask_params_init(ke_mask_params *p) {
  p->causal = 0;
  p->window = -1;
  p->n_global = 0;
  p->offset = -1;
}

int ke_mask_allows(const ke_mask_params *p, int64_t sq, int64_t sk,
                   int64_t i, int64_t j) {
  const int64_t pos = (p->offset < 0 ? sk - sq : p->offset) + i;
  if (p->causal && j > pos) return 0;
  if (p->window < 0) return 1;
  if (pos < p->n_global || j < p->n_global) return 1;
  const int64_t dist = pos > j ? pos - j : j - pos;
  return dist <= p->window;
}

int ke_mask_apply(ke_context *ctx, ke_tensor *scores,
                  const ke_mask_params *params) {
  ke_mask_params defaults;
  if (!ctx || !scores || !scores->data)
    return ke__fail(KE_EINVAL, "mask_apply: NULL context, tensor or data");
  if (!params) {
    ke_mask_params_init(&defaults);
    params = &defaults;
  }
  if (ke_dtype_size(scores->dtype) == 0)
    return ke__fail(KE_EDTYPE, "mask_apply: dtype %d is not f32, f16 or "
                               "bf16", (int)scores->dtype);
  if (scores->rank < 2 || scores->rank > KE_MAX_RANK)
    return ke__fail(KE_ESHAPE, "mask_apply: scores have rank %d; they need "
                               "rank 2..%d ([.., Sq, Sk])",
                    scores->rank, KE_MAX_RANK);
  for (int d = 0; d < scores->rank; d++)
    if (scores->shape[d] < 1)
      return ke__fail(KE_ESHAPE, "mask_apply: dimension %d is %lld; "
                                 "dimensions must be >= 1",
                      d, (long long)scores->shape[d]);
  if (ke__has_negative_stride(scores))
    return ke__fail(KE_ESHAPE, "mask_apply: negative strides are not "
                               "supported");
  if (!ke__no_self_overlap(scores))
    return ke__fail(KE_ESHAPE, "mask_apply: the strides make elements of "
                               "scores share memory");
  if (params->n_global < 0)
    return ke__fail(KE_EINVAL, "mask_apply: n_global %lld is negative",
                    (long long)params->n_global);
  if (params->offset > KE__MASK_POS_MAX)
    return ke__fail(KE_EINVAL, "mask_apply: offset %lld above 2^61",
                    (long long)params->offset);

  const int r = scores->rank;
  ke__mask_desc m = {0};
  m.sq = scores->shape[r - 2];
  m.sk = scores->shape[r - 1];
  m.row_stride = scores->stride[r - 2];
  m.col_stride = scores->stride[r - 1];
  m.matrices = 1;
  m.nlead = r - 2;
  for (int d = 0; d < m.nlead; d++) {
    m.lead_shape[d] = scores->shape[d];
    m.lead_stride[d] = scores->stride[d];
    m.matrices *= scores->shape[d];
  }
  m.causal = params->causal != 0;
  m.n_global = params->n_global;
  m.offset = params->offset < 0 ? m.sk - m.sq : params->offset;
  /* |p - j| < sq + sk + |offset| always: a window that wide masks nothing,
   * and clamping it keeps p +- window inside int64. */
  const int64_t reach = m.sq + m.sk + (m.offset < 0 ? -m.offset : m.offset);
  m.window = params->window < 0 || params->window >= reach ? -1
                                                           : params->window;
  KE__TIMED_LAUNCH(ctx, "mask_apply",
                   ke__mask_launch(ctx->stream, scores->dtype, scores->data,
                                   &m));
  return KE_OK;
}

static void mask_apply_ref_body(double *scores, int64_t matrices, int64_t sq,
                       int64_t sk, const ke_mask_params *params) {
  ke_mask_params defaults;
  if (!params) {
    ke_mask_params_init(&defaults);
    params = &defaults;
  }
  for (int64_t n = 0; n < matrices; n++)
    for (int64_t i = 0; i < sq; i++)
      for (int64_t j = 0; j < sk; j++)
        if (!ke_mask_allows(params, sq, sk, i, j))
          scores[(n * sq + i) * sk + j] = -INFINITY;
}

/* The reference, timed (ke_ref_ms). */
void ke_mask_apply_ref(double *scores, int64_t matrices, int64_t sq,
                       int64_t sk, const ke_mask_params *params) {
  ke_ref_begin();
  mask_apply_ref_body(scores, matrices, sq, sk, params);
  ke_ref_end();
}
