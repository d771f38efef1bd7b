/* Tensor layout checks for strided views (see layout.h). */
#include <stdint.h>

#include "layout.h"

int ke__has_negative_stride(const ke_tensor *t) {
  for (int d = 0; d < t->rank; d++)
    if (t->shape[d] > 1 && t->stride[d] < 0) return 1;
  return 0;
}

int ke__no_self_overlap(const ke_tensor *t) {
  int dims[KE_MAX_RANK], n = 0;
  for (int d = 0; d < t->rank; d++) {
    if (t->shape[d] <= 1) continue;
    int k = n++;
    while (k > 0 && t->stride[dims[k - 1]] > t->stride[d]) {
      dims[k] = dims[k - 1];
      k--;
    }
    dims[k] = d;
  }
  int64_t span = 1; /* elements covered so far: last offset + 1 */
  for (int k = 0; k < n; k++) {
    const int d = dims[k];
    if (t->stride[d] < span) return 0;
    span += t->stride[d] * (t->shape[d] - 1);
  }
  return 1;
}

/* First and one-past-last byte of t (non-negative strides). */
static void ke__byte_range(const ke_tensor *t, uintptr_t *lo,
                           uintptr_t *hi) {
  int64_t last = 0;
  for (int d = 0; d < t->rank; d++)
    if (t->shape[d] > 1) last += t->stride[d] * (t->shape[d] - 1);
  *lo = (uintptr_t)t->data;
  *hi = *lo + (uintptr_t)(last + 1) * ke_dtype_size(t->dtype);
}

int ke__ranges_meet(const ke_tensor *a, const ke_tensor *b) {
  uintptr_t alo, ahi, blo, bhi;
  ke__byte_range(a, &alo, &ahi);
  ke__byte_range(b, &blo, &bhi);
  return alo < bhi && blo < ahi;
}
