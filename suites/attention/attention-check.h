/* What the attention suites share (defined in suites/attention.c): a case,
 * its tolerance (docs/kernels.md, fused attention), and running one case
 * through ke_attention against the double reference.
 */
#ifndef KILN_SUITES_ATTENTION_CHECK_H
#define KILN_SUITES_ATTENTION_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

typedef struct attn_case {
  ke_dtype dtype;
  int64_t b, hq, hkv, sq, sk, d;
  int causal;
  int64_t offset;          /* -1: default */
  float scale;             /* 0: default */
  float q_std;             /* spread of Q: larger makes sharper softmax */
  ke_attention_kernel kernel; /* AUTO unless a test pins one */
} attn_case;

kt_tol attn_tol(const attn_case *c, const double *q, const double *k,
                const double *v);
ke_attention_params attn_params(const attn_case *c);
/* attn_<dtype>_b.._h<hq>/<hkv>_sq.._sk.._d..[_causal][_off..][_tiled|_rows] */
void attn_case_name(const attn_case *c, char *buf, size_t n);
/* Fresh inputs, the kernel, the reference on the inputs read back; returns
 * the reference output (caller frees) when want_ref is set. */
double *attn_run(const attn_case *c, int want_ref);

/* Q and O of shape qs, K and V of shape ks, all of dtype dt (kt_alloc:
 * guard bytes, poison); freed together. */
void attn_alloc_qkvo(ke_tensor *q, ke_tensor *k, ke_tensor *v, ke_tensor *o,
                     ke_dtype dt, const int64_t qs[4], const int64_t ks[4]);
void attn_free_qkvo(ke_tensor *q, ke_tensor *k, ke_tensor *v, ke_tensor *o);

/* The packed [b, h, s, d] copy of a view into a buffer read back whole. */
double *attn_gather(const double *buf, const ke_tensor *base,
                    const ke_tensor *view);
/* A [B, H, S, D] view of a [B, S, H, D] region starting `first` elements
 * into buf, whose S step is s_step and B step b_step elements. */
ke_tensor attn_bshd_view(const ke_tensor *buf, int64_t first, int64_t b,
                         int64_t h, int64_t s, int64_t d, int64_t s_step,
                         int64_t b_step);

#endif
