/* K/V head replication: the C entry point (shape and stride checks,
 * launch) and the reference. The kernel is in kernels/kv_repeat.hip.
 */
#include "engine-impl.h"
#include "kiln/kernels.h"
#include "contract/launch.h"
#include "layout.h"

int ke_kv_repeat(ke_context *ctx, const ke_tensor *in, ke_tensor *out) {
  if (!ctx || !in || !out || !in->data || !out->data)
    return ke__fail(KE_EINVAL, "kv_repeat: NULL context, tensor or data");
  if (ke_dtype_size(in->dtype) == 0 || ke_dtype_size(out->dtype) == 0)
    return ke__fail(KE_EDTYPE, "kv_repeat: dtypes must be f32, f16 or bf16 "
                               "(in %d, out %d)",
                    (int)in->dtype, (int)out->dtype);
  if (in->dtype != out->dtype)
    return ke__fail(KE_EDTYPE, "kv_repeat: in is %s, out is %s; they must "
                               "match", ke_dtype_name(in->dtype),
                    ke_dtype_name(out->dtype));
  if (in->rank != 4 || out->rank != 4)
    return ke__fail(KE_ESHAPE, "kv_repeat: in has rank %d, out rank %d; "
                               "both must be rank 4 ([B, H, S, D])",
                    in->rank, out->rank);
  static const char *dims[4] = {"B", "H", "S", "D"};
  for (int d = 0; d < 4; d++) {
    if (in->shape[d] < 1 || out->shape[d] < 1)
      return ke__fail(KE_ESHAPE, "kv_repeat: %s is %lld in, %lld out; "
                                 "dimensions must be >= 1",
                      dims[d], (long long)in->shape[d],
                      (long long)out->shape[d]);
    if (d != 1 && in->shape[d] != out->shape[d])
      return ke__fail(KE_ESHAPE, "kv_repeat: %s differs: in %lld, out %lld",
                      dims[d], (long long)in->shape[d],
                      (long long)out->shape[d]);
  }
  if (out->shape[1] % in->shape[1] != 0)
    return ke__fail(KE_ESHAPE, "kv_repeat: out heads %lld are not a "
                               "multiple of in heads %lld",
                    (long long)out->shape[1], (long long)in->shape[1]);
  if (ke__has_negative_stride(in) || ke__has_negative_stride(out))
    return ke__fail(KE_ESHAPE, "kv_repeat: negative strides are not "
                               "supported");
  if (!ke__no_self_overlap(out))
    return ke__fail(KE_ESHAPE, "kv_repeat: the strides make elements of out "
                               "share memory");
  if (ke__ranges_meet(in, out))
    return ke__fail(KE_ESHAPE, "kv_repeat: out overlaps in");

  ke__kv_repeat_desc r;
  r.hkv = in->shape[1];
  for (int d = 0; d < 4; d++) {
    r.shape[d] = out->shape[d];
    r.in_stride[d] = in->stride[d];
    r.out_stride[d] = out->stride[d];
  }
  KE__TIMED_LAUNCH(ctx, "kv_repeat",
                   ke__kv_repeat_launch(ctx->stream, in->dtype, in->data,
                                        out->data, &r));
  return KE_OK;
}

static void kv_repeat_ref_body(const double *in, double *out, int64_t b, int64_t hkv,
                      int64_t hq, int64_t s, int64_t d) {
  const int64_t ratio = hq / hkv, row = s * d;
  for (int64_t bb = 0; bb < b; bb++)
    for (int64_t h = 0; h < hq; h++) {
      const double *src = in + (bb * hkv + h / ratio) * row;
      double *dst = out + (bb * hq + h) * row;
      for (int64_t x = 0; x < row; x++) dst[x] = src[x];
    }
}

/* The reference, timed (ke_ref_ms). */
void ke_kv_repeat_ref(const double *in, double *out, int64_t b, int64_t hkv,
                      int64_t hq, int64_t s, int64_t d) {
  ke_ref_begin();
  kv_repeat_ref_body(in, out, b, hkv, hq, s, d);
  ke_ref_end();
}
