/* SwiGLU: the C entry point (shape checks, launch) and the double-precision
 * reference, side by side. The kernel is in kernels/swiglu.hip.
 */
#include <math.h>

#include "engine-impl.h"
#include "kiln/kernels.h"
#include "contract/launch.h"

/* out [.., F] against an input [.., F * mult]: same rank and leading
 * dimensions. */
static int ke__swiglu_shapes(const ke_tensor *in, const char *what,
                             const ke_tensor *out, int64_t mult) {
  if (in->rank != out->rank)
    return ke__fail(KE_ESHAPE, "swiglu: %s has rank %d, out rank %d", what,
                    in->rank, out->rank);
  const int last = in->rank - 1;
  for (int d = 0; d < in->rank; d++) {
    const int64_t want = d == last ? out->shape[d] * mult : out->shape[d];
    if (in->shape[d] != want)
      return ke__fail(KE_ESHAPE, "swiglu: %s dimension %d is %lld; out %s "
                                 "needs %lld", what, d,
                      (long long)in->shape[d],
                      mult == 2 ? "(fused [.., 2F])" : "", (long long)want);
  }
  return KE_OK;
}

/* out may be an input computed in place, but only with its exact layout. */
static int ke__swiglu_alias(const ke_tensor *in, int64_t in_stride,
                            const ke_tensor *out, int64_t out_stride,
                            const char *what) {
  if (in->data == out->data &&
      (in->dtype != out->dtype || in_stride != out_stride))
    return ke__fail(KE_ESHAPE, "swiglu: out shares %s's data but not its "
                               "dtype and row stride", what);
  return KE_OK;
}

int ke_swiglu(ke_context *ctx, const ke_tensor *gate, const ke_tensor *up,
              ke_tensor *out) {
  static const char op[] = "swiglu";
  if (!ctx || !gate || !out || !gate->data || !out->data ||
      (up && !up->data))
    return ke__fail(KE_EINVAL, "%s: NULL context, tensor or data", op);
  if (ke_dtype_size(gate->dtype) == 0 || ke_dtype_size(out->dtype) == 0 ||
      (up && ke_dtype_size(up->dtype) == 0))
    return ke__fail(KE_EDTYPE, "%s: dtypes must be f32, f16 or bf16", op);
  if (up && up->dtype != gate->dtype)
    return ke__fail(KE_EDTYPE, "%s: gate is %s, up %s; they must match", op,
                    ke_dtype_name(gate->dtype), ke_dtype_name(up->dtype));
  if (out->rank < 1 || out->rank > KE_MAX_RANK)
    return ke__fail(KE_ESHAPE, "%s: out has rank %d", op, out->rank);
  const int64_t cols = out->shape[out->rank - 1];
  ke_tensor up_view;
  if (up) {
    KE__TRY(ke__swiglu_shapes(gate, "gate", out, 1));
    KE__TRY(ke__swiglu_shapes(up, "up", out, 1));
  } else {
    /* Fused: up is the second half of each gate row, a view of it. */
    KE__TRY(ke__swiglu_shapes(gate, "gate", out, 2));
    up_view = *gate;
    up_view.shape[gate->rank - 1] = cols;
    up_view.data = (char *)gate->data + (size_t)cols * ke_dtype_size(gate->dtype);
    up = &up_view;
  }
  int64_t rows, n, out_stride, gate_stride, up_stride;
  KE__TRY(ke__tensor_rows(out, op, "out", &rows, &out_stride));
  KE__TRY(ke__tensor_rows(gate, op, "gate", &n, &gate_stride));
  KE__TRY(ke__tensor_rows(up, op, "up", &n, &up_stride));
  KE__TRY(ke__swiglu_alias(gate, gate_stride, out, out_stride, "gate"));
  KE__TRY(ke__swiglu_alias(up, up_stride, out, out_stride, "up"));
  KE__TIMED_LAUNCH(ctx, "swiglu",
                   ke__swiglu_launch(ctx->stream, gate->dtype, gate->data,
                                     gate_stride, up->data, up_stride,
                                     out->dtype, out->data, out_stride, rows,
                                     cols));
  return KE_OK;
}

double ke_silu_ref(double v) {
  if (isnan(v)) return v;
  if (v >= 0.0) return v / (1.0 + exp(-v));
  if (isinf(v)) return -0.0; /* the limit of v * sigmoid(v) */
  const double e = exp(v);
  return v * (e / (1.0 + e));
}

static void swiglu_ref_body(const double *gate, const double *up, double *out,
                   int64_t n) {
  for (int64_t i = 0; i < n; i++) out[i] = ke_silu_ref(gate[i]) * up[i];
}

/* The reference, timed (ke_ref_ms). */
void ke_swiglu_ref(const double *gate, const double *up, double *out,
                   int64_t n) {
  ke_ref_begin();
  swiglu_ref_body(gate, up, out, n);
  ke_ref_end();
}
