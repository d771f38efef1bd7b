/* Tensors: dtype, shape and strides over ledger-tracked device memory, and
 * their conversion to and from host doubles for references and checks.
 */
#include <stdlib.h>
#include <string.h>

#include "engine-impl.h"
#include "arch/convert.h"

size_t ke_dtype_size(ke_dtype dtype) {
  switch (dtype) {
  case KE_F32: return 4;
  case KE_F16: return 2;
  case KE_BF16: return 2;
  }
  return 0;
}

const char *ke_dtype_name(ke_dtype dtype) {
  switch (dtype) {
  case KE_F32: return "f32";
  case KE_F16: return "f16";
  case KE_BF16: return "bf16";
  }
  return "invalid";
}

float ke_f16_to_f32(uint16_t h) { return kd_f16_bits_to_f32(h); }
uint16_t ke_f32_to_f16(float f) { return kd_f32_to_f16_bits(f); }
float ke_bf16_to_f32(uint16_t b) { return kd_bf16_bits_to_f32(b); }
uint16_t ke_f32_to_bf16(float f) { return kd_f32_to_bf16_bits(f); }

int64_t ke_tensor_numel(const ke_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

int ke_tensor_is_contiguous(const ke_tensor *t) {
  int64_t expect = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->stride[i] != expect) return 0;
    expect *= t->shape[i];
  }
  return 1;
}

int ke_tensor_init(ke_tensor *t, ke_dtype dtype, int rank,
                   const int64_t *shape) {
  if (!t) return ke__fail(KE_EINVAL, "ke_tensor_init: tensor is NULL");
  memset(t, 0, sizeof *t);
  if (ke_dtype_size(dtype) == 0)
    return ke__fail(KE_EDTYPE, "ke_tensor_init: dtype %d is not f32, f16 "
                               "or bf16", (int)dtype);
  if (rank < 1 || rank > KE_MAX_RANK || (!shape && rank > 0))
    return ke__fail(KE_EINVAL, "ke_tensor_init: rank %d outside 1..%d", rank,
                    KE_MAX_RANK);
  t->dtype = dtype;
  t->rank = rank;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; i--) {
    if (shape[i] < 1)
      return ke__fail(KE_ESHAPE, "ke_tensor_init: dimension %d is %lld; "
                                 "dimensions must be >= 1", i,
                      (long long)shape[i]);
    t->shape[i] = shape[i];
    t->stride[i] = stride;
    stride *= shape[i];
  }
  return KE_OK;
}

int ke_tensor_alloc_at(ke_context *ctx, ke_tensor *t, ke_dtype dtype,
                       int rank, const int64_t *shape, const char *file,
                       int line) {
  KE__TRY(ke_tensor_init(t, dtype, rank, shape));
  size_t bytes = (size_t)ke_tensor_numel(t) * ke_dtype_size(dtype);
  return ke_malloc_at(ctx, &t->data, bytes, file, line);
}

int ke_tensor_free(ke_context *ctx, ke_tensor *t) {
  if (!t || !t->data) return KE_OK;
  int st = ke_free(ctx, t->data);
  t->data = NULL;
  return st;
}

static double ke__load_double(ke_dtype dtype, const void *base, int64_t i) {
  switch (dtype) {
  case KE_F32: return ((const float *)base)[i];
  case KE_F16: return ke_f16_to_f32(((const uint16_t *)base)[i]);
  case KE_BF16: return ke_bf16_to_f32(((const uint16_t *)base)[i]);
  }
  return 0.0;
}

static void ke__store_double(ke_dtype dtype, void *base, int64_t i,
                             double v) {
  switch (dtype) {
  case KE_F32: ((float *)base)[i] = (float)v; break;
  case KE_F16: ((uint16_t *)base)[i] = ke_f32_to_f16((float)v); break;
  case KE_BF16: ((uint16_t *)base)[i] = ke_f32_to_bf16((float)v); break;
  }
}

int ke_tensor_from_doubles(ke_context *ctx, ke_tensor *t, const double *src) {
  if (!t || !t->data || !src)
    return ke__fail(KE_EINVAL, "ke_tensor_from_doubles: NULL argument");
  if (!ke_tensor_is_contiguous(t))
    return ke__fail(KE_ESHAPE, "ke_tensor_from_doubles: tensor must be "
                               "contiguous");
  int64_t n = ke_tensor_numel(t);
  size_t bytes = (size_t)n * ke_dtype_size(t->dtype);
  void *host = malloc(bytes);
  if (!host) return ke__fail(KE_ENOMEM, "ke_tensor_from_doubles: host memory");
  for (int64_t i = 0; i < n; i++) ke__store_double(t->dtype, host, i, src[i]);
  int st = ke_copy_to_device(ctx, t->data, host, bytes);
  free(host);
  return st;
}

int ke_tensor_to_doubles(ke_context *ctx, const ke_tensor *t, double *dst) {
  if (!t || !t->data || !dst)
    return ke__fail(KE_EINVAL, "ke_tensor_to_doubles: NULL argument");
  if (!ke_tensor_is_contiguous(t))
    return ke__fail(KE_ESHAPE, "ke_tensor_to_doubles: tensor must be "
                               "contiguous");
  int64_t n = ke_tensor_numel(t);
  size_t bytes = (size_t)n * ke_dtype_size(t->dtype);
  void *host = malloc(bytes);
  if (!host) return ke__fail(KE_ENOMEM, "ke_tensor_to_doubles: host memory");
  int st = ke_copy_to_host(ctx, host, t->data, bytes);
  if (st == KE_OK)
    for (int64_t i = 0; i < n; i++) dst[i] = ke__load_double(t->dtype, host, i);
  free(host);
  return st;
}

/* Leading dimensions must collapse into rows of one stride. */
int ke__tensor_rows(const ke_tensor *t, const char *op, const char *what,
                    int64_t *rows, int64_t *row_stride) {
  int last = t->rank - 1;
  for (int d = 0; d <= last; d++)
    if (t->shape[d] < 1)
      return ke__fail(KE_ESHAPE, "%s: %s dimension %d is %lld; dimensions "
                                 "must be >= 1", op, what, d,
                      (long long)t->shape[d]);
  if (t->stride[last] != 1 && t->shape[last] != 1)
    return ke__fail(KE_ESHAPE, "%s: %s last dimension has stride %lld; "
                               "it must be contiguous (stride 1)",
                    op, what, (long long)t->stride[last]);
  int64_t n = 1;
  int64_t stride = t->shape[last];
  if (last >= 1) stride = t->stride[last - 1];
  for (int d = last - 1; d >= 0; d--) {
    int64_t expect = d == last - 1 ? stride : t->stride[d + 1] * t->shape[d + 1];
    if (t->shape[d] != 1 && t->stride[d] != expect)
      return ke__fail(KE_ESHAPE, "%s: %s dimension %d (stride %lld) "
                                 "does not collapse into rows of stride %lld",
                      op, what, d, (long long)t->stride[d], (long long)expect);
    n *= t->shape[d];
  }
  if (last >= 1 && t->shape[last - 1] > 1 && stride < t->shape[last])
    return ke__fail(KE_ESHAPE, "%s: %s rows overlap (row stride %lld < "
                               "row length %lld)",
                    op, what, (long long)stride, (long long)t->shape[last]);
  *rows = n;
  *row_stride = stride;
  return KE_OK;
}

int ke__same_shape(const ke_tensor *a, const ke_tensor *b, const char *op,
                   const char *an, const char *bn) {
  if (a->rank != b->rank)
    return ke__fail(KE_ESHAPE, "%s: %s has rank %d, %s rank %d", op, an,
                    a->rank, bn, b->rank);
  for (int d = 0; d < a->rank; d++)
    if (a->shape[d] != b->shape[d])
      return ke__fail(KE_ESHAPE, "%s: shape mismatch in dimension %d: "
                                 "%s %lld, %s %lld", op, d, an,
                      (long long)a->shape[d], bn, (long long)b->shape[d]);
  return KE_OK;
}
