/* Softmax: the C entry point (shape checks, launch) and the double-precision
 * reference, side by side. The kernel is in kernels/softmax.hip.
 */
#include <math.h>

#include "engine-impl.h"
#include "kiln/kernels.h"
#include "contract/launch.h"

void ke_softmax_params_init(ke_softmax_params *p) {
  p->scale = 1.0f;
  p->causal = 0;
  p->causal_offset = -1;
}

int ke_softmax(ke_context *ctx, const ke_tensor *x, ke_tensor *y,
               const ke_softmax_params *params) {
  ke_softmax_params defaults;
  if (!ctx || !x || !y || !x->data || !y->data)
    return ke__fail(KE_EINVAL, "softmax: NULL context, tensor or data");
  if (!params) {
    ke_softmax_params_init(&defaults);
    params = &defaults;
  }
  if (ke_dtype_size(x->dtype) == 0 || ke_dtype_size(y->dtype) == 0)
    return ke__fail(KE_EDTYPE, "softmax: dtypes must be f32, f16 or bf16");
  KE__TRY(ke__same_shape(x, y, "softmax", "x", "y"));
  int64_t cols = x->shape[x->rank - 1];
  if (cols < 1 || cols > KE__SOFTMAX_MAX_COLS)
    return ke__fail(KE_ESHAPE, "softmax: row length %lld outside 1..%lld",
                    (long long)cols, (long long)KE__SOFTMAX_MAX_COLS);
  int64_t rows, x_stride, y_rows, y_stride;
  KE__TRY(ke__tensor_rows(x, "softmax", "x", &rows, &x_stride));
  KE__TRY(ke__tensor_rows(y, "softmax", "y", &y_rows, &y_stride));
  if (!isfinite(params->scale))
    return ke__fail(KE_EINVAL, "softmax: scale %g is not finite",
                    (double)params->scale);
  int64_t sq = x->rank >= 2 ? x->shape[x->rank - 2] : 1;
  int64_t offset = params->causal_offset;
  if (params->causal && offset < 0) offset = cols - sq;
  if (params->causal && x->rank < 2)
    return ke__fail(KE_ESHAPE, "softmax: causal mask needs rank >= 2 "
                               "([.., Sq, Sk]), got rank %d", x->rank);
  KE__TIMED_LAUNCH(ctx, "softmax",
                   ke__softmax_launch(ctx->stream, x->dtype, x->data,
                                      x_stride, y->dtype, y->data, y_stride,
                                      rows, cols, params->scale,
                                      params->causal, sq, offset));
  return KE_OK;
}

/* One row per item (rows are independent). */
typedef struct softmax_ref_job {
  const double *x;
  double *y;
  int64_t cols, sq, offset;
  const ke_softmax_params *params;
} softmax_ref_job;

static void softmax_ref_row(void *arg, int64_t r) {
  const softmax_ref_job *j = arg;
  const ke_softmax_params *params = j->params;
  const int64_t cols = j->cols;
  const double *xr = j->x + r * cols;
  double *yr = j->y + r * cols;
  int64_t limit = cols; /* columns >= limit are masked */
  if (params->causal) {
    int64_t i = r % j->sq;
    limit = i + j->offset + 1;
    if (limit < 0) limit = 0;
    if (limit > cols) limit = cols;
  }
  double m = -INFINITY;
  int poisoned = 0;
  for (int64_t c = 0; c < limit; c++) {
    double v = (double)params->scale * xr[c];
    if (isnan(v) || v == INFINITY) poisoned = 1;
    else if (v > m) m = v;
  }
  if (poisoned) {
    for (int64_t c = 0; c < cols; c++) yr[c] = NAN;
    return;
  }
  if (m == -INFINITY) {
    for (int64_t c = 0; c < cols; c++) yr[c] = 0.0;
    return;
  }
  double sum = 0.0;
  for (int64_t c = 0; c < limit; c++)
    sum += exp((double)params->scale * xr[c] - m);
  for (int64_t c = 0; c < cols; c++)
    yr[c] = c < limit ? exp((double)params->scale * xr[c] - m) / sum : 0.0;
}

void ke_softmax_ref(const double *x, double *y, int64_t rows, int64_t cols,
                    const ke_softmax_params *params, int64_t sq) {
  ke_softmax_params defaults;
  if (!params) {
    ke_softmax_params_init(&defaults);
    params = &defaults;
  }
  int64_t offset = params->causal_offset;
  if (params->causal && offset < 0) offset = cols - sq;
  softmax_ref_job j = {x, y, cols, sq, offset, params};
  /* exp costs some twenty operations */
  ke_ref_parallel(rows, 20.0 * (double)rows * cols, softmax_ref_row, &j);
}
