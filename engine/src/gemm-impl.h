/* GEMM internals shared by the entry points that launch the GEMM kernels
 * (engine/src/gemm.c, engine/src/mxfp.c): how a tensor is read as a
 * batch of row-major matrices, and the checks every such view must pass.
 */
#ifndef KILN_GEMM_IMPL_H
#define KILN_GEMM_IMPL_H

#include <stdint.h>

#include "kiln/engine.h"

/* A rank-2 or rank-3 tensor as a batch of [rows, cols] matrices: element
 * (b, r, c) at b * batch_stride + r * ld + c elements from data. */
typedef struct ke__matrix_view {
  int64_t batch;           /* 1 for rank 2 */
  int64_t rows;
  int64_t cols;
  int64_t ld;
  int64_t batch_stride;    /* 0 when batch is 1 or the tensor says 0 */
  int64_t extent;          /* elements spanned: last element + 1 */
} ke__matrix_view;

/* Reads t as a matrix view, refusing with KE_ESHAPE (message prefixed with
 * `who` and naming `what`) a rank other than 2 or 3, a dimension < 1 or
 * above KE__GEMM_MAX_DIM, a non-contiguous last dimension, negative
 * strides, a row stride below the row length, or an extent that overflows
 * 64-bit byte offsets; KE_EDTYPE for a dtype outside f32/f16/bf16. */
int ke__matrix_view_of(const ke_tensor *t, const char *who, const char *what,
                       ke__matrix_view *v);

/* Refuses (KE_ESHAPE) an output view whose batches overlap, so that no two
 * outputs share an address. */
int ke__matrix_view_writable(const ke__matrix_view *v, const char *who,
                             const char *what);

/* 1 when the byte ranges of two views' memory intersect. */
int ke__views_overlap(const void *a, const ke__matrix_view *va, ke_dtype da,
                      const void *b, const ke__matrix_view *vb, ke_dtype db);

#endif
