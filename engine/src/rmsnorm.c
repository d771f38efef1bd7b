/* RMSNorm: the C entry point (shape checks, launch) and the double-precision
 * reference, side by side. The kernel is in kernels/rmsnorm.hip.
 */
#include <math.h>

#include "engine-impl.h"
#include "kiln/kernels.h"
#include "contract/launch.h"

void ke_rmsnorm_params_init(ke_rmsnorm_params *p) { p->eps = 1e-6f; }

int ke_rmsnorm(ke_context *ctx, ke_tensor *x, const ke_tensor *residual,
               const ke_tensor *weight, ke_tensor *y,
               const ke_rmsnorm_params *params) {
  static const char op[] = "rmsnorm";
  ke_rmsnorm_params defaults;
  if (!params) {
    ke_rmsnorm_params_init(&defaults);
    params = &defaults;
  }
  if (!ctx || !x || !y || !x->data || !y->data ||
      (residual && !residual->data) || (weight && !weight->data))
    return ke__fail(KE_EINVAL, "%s: NULL context, tensor or data", op);
  if (ke_dtype_size(x->dtype) == 0 || ke_dtype_size(y->dtype) == 0 ||
      (weight && ke_dtype_size(weight->dtype) == 0))
    return ke__fail(KE_EDTYPE, "%s: dtypes must be f32, f16 or bf16", op);
  if (residual && residual->dtype != x->dtype)
    return ke__fail(KE_EDTYPE, "%s: residual is %s but x is %s; they must "
                               "match (the sum is stored in x)", op,
                    ke_dtype_name(residual->dtype), ke_dtype_name(x->dtype));
  if (x->rank < 1 || x->rank > KE_MAX_RANK)
    return ke__fail(KE_ESHAPE, "%s: x has rank %d", op, x->rank);
  KE__TRY(ke__same_shape(x, y, op, "x", "y"));
  if (residual) KE__TRY(ke__same_shape(x, residual, op, "x", "residual"));
  const int64_t cols = x->shape[x->rank - 1];
  if (weight && (weight->rank != 1 || weight->shape[0] != cols ||
                 (weight->stride[0] != 1 && cols != 1)))
    return ke__fail(KE_ESHAPE, "%s: weight must be a contiguous [%lld]", op,
                    (long long)cols);
  int64_t rows, x_stride, y_rows, y_stride, r_rows, r_stride = 0;
  KE__TRY(ke__tensor_rows(x, op, "x", &rows, &x_stride));
  KE__TRY(ke__tensor_rows(y, op, "y", &y_rows, &y_stride));
  if (residual)
    KE__TRY(ke__tensor_rows(residual, op, "residual", &r_rows, &r_stride));
  if (x->data == y->data && (x->dtype != y->dtype || x_stride != y_stride))
    return ke__fail(KE_ESHAPE, "%s: y shares x's data but not its dtype and "
                               "row stride", op);
  if (!isfinite(params->eps) || params->eps <= 0.0f)
    return ke__fail(KE_EINVAL, "%s: eps %g must be finite and > 0", op,
                    (double)params->eps);
  KE__TIMED_LAUNCH(ctx, "rmsnorm",
                   ke__rmsnorm_launch(ctx->stream, x->dtype, x->data,
                                      x_stride,
                                      residual ? residual->data : NULL,
                                      r_stride,
                                      weight ? weight->dtype : KE_F32,
                                      weight ? weight->data : NULL,
                                      y->dtype, y->data, y_stride, rows,
                                      cols, params->eps));
  return KE_OK;
}

static void rmsnorm_ref_body(double *x, const double *residual, const double *weight,
                    double *y, int64_t rows, int64_t cols, double eps) {
  for (int64_t r = 0; r < rows; r++) {
    double *xr = x + r * cols;
    double *yr = y + r * cols;
    if (residual)
      for (int64_t c = 0; c < cols; c++) xr[c] += residual[r * cols + c];
    double ss = 0.0;
    for (int64_t c = 0; c < cols; c++) ss += xr[c] * xr[c];
    const double inv = 1.0 / sqrt(ss / (double)cols + eps);
    for (int64_t c = 0; c < cols; c++)
      yr[c] = xr[c] * inv * (weight ? weight[c] : 1.0);
  }
}

/* The reference, timed (ke_ref_ms). */
void ke_rmsnorm_ref(double *x, const double *residual, const double *weight,
                    double *y, int64_t rows, int64_t cols, double eps) {
  ke_ref_begin();
  rmsnorm_ref_body(x, residual, weight, y, rows, cols, eps);
  ke_ref_end();
}
