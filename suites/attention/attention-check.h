/* What the attention suites share (attention-check.c): a case, its
 * tolerance (docs/kernels-attention.md, "Tolerances"), inputs read back
 * to the host, and running one case through ke_attention against the
 * double reference, on packed tensors or on views of larger buffers.
 */
#ifndef KILN_SUITES_ATTENTION_CHECK_H
#define KILN_SUITES_ATTENTION_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

#define NELEM(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))

typedef struct attn_case {
  ke_dtype dtype;
  int64_t b, hq, hkv, sq, sk, d;
  int causal;
  int64_t offset;          /* -1: default */
  float scale;             /* 0: default */
  float q_std;             /* spread of Q: larger makes sharper softmax; 0: 1 */
  ke_attention_kernel kernel; /* AUTO unless a test pins one */
  int64_t splits;          /* key ranges forced on the decode kernel
                              (kiln/test-tuning.h); 0: the engine's choice */
  int round_p;             /* kiln/attention.h: P may be rounded once */
} attn_case;

kt_tol attn_tol(const attn_case *c, const double *q, const double *k,
                const double *v);
/* The f32 bound (atol, rtol, NMSE 1e-10) for scores whose magnitudes sum
 * to at most s_max (|scale| max||q|| max||k||), V's finite values at most
 * v_max, head dimension d and n keys; attn_tol builds on it. */
kt_tol attn_tol_f32(double s_max, double v_max, int64_t d, int64_t n);
/* The f16 or bf16 bound built on the f32 one t: the output's rounding, and
 * P's where a kernel rounds it once (round_p; bf16 P in f16). */
kt_tol attn_tol_16(kt_tol t, ke_dtype dt, int round_p, double v_max);
ke_attention_params attn_params(const attn_case *c);
/* attn_<dtype>_b.._h<hq>/<hkv>_sq.._sk.._d..[_causal][_off..][_tiled|_rows][_round_p] */
void attn_case_name(const attn_case *c, char *buf, size_t n);

/* Q and O of shape qs, K and V of shape ks, all of dtype dt (kt_alloc:
 * guard bytes, poison); freed together. */
void attn_alloc_qkvo(ke_tensor *q, ke_tensor *k, ke_tensor *v, ke_tensor *o,
                     ke_dtype dt, const int64_t qs[4], const int64_t ks[4]);
void attn_free_qkvo(ke_tensor *q, ke_tensor *k, ke_tensor *v, ke_tensor *o);
/* Fresh N(0, q_std) Q (q_std 0: 1) and N(0, 1) K and V. */
void attn_fill_qkv(ke_tensor *q, ke_tensor *k, ke_tensor *v, float q_std);

/* Q, K and V as packed [b, h, s, d] doubles on the host. */
typedef struct attn_host {
  double *q, *k, *v;
} attn_host;
void attn_host_read(attn_host *h, const ke_tensor *q, const ke_tensor *k,
                    const ke_tensor *v);
/* The views q, k, v of the buffers qbuf, kbuf, vbuf, packed. */
void attn_host_gather(attn_host *h, const ke_tensor *qbuf, const ke_tensor *q,
                      const ke_tensor *kbuf, const ke_tensor *k,
                      const ke_tensor *vbuf, const ke_tensor *v);
/* Writes the host values (planted specials) back to packed q, k, v. */
void attn_host_write(const attn_host *h, ke_tensor *q, ke_tensor *k,
                     ke_tensor *v);
void attn_host_free(attn_host *h);

/* The reference output of c on h under p, packed (caller frees). */
double *attn_ref(const attn_case *c, const attn_host *h,
                 const ke_attention_params *p);

/* Runs ke_attention on the views q, k, v, o (o inside obuf; obuf == o when
 * o is packed) with c's splits forced, and holds all of obuf against the
 * reference of h (the packed inputs): o's rows against the reference, the
 * rest of obuf against what it held before the call. Returns the
 * reference (caller frees). */
double *attn_check_views(const attn_case *c, const char *name,
                         const ke_tensor *q, const ke_tensor *k,
                         const ke_tensor *v, ke_tensor *o,
                         const ke_tensor *obuf, const attn_host *h);

/* Fresh inputs, the kernel, the reference on the inputs read back; returns
 * the reference output (caller frees) when want_ref is set. */
double *attn_run(const attn_case *c, int want_ref);

/* Forces `splits` key ranges on the decode kernels (0: the engine's own
 * choice) for the calls that follow. */
void attn_force_splits(int64_t splits);

/* The packed [b, h, s, d] copy of a view into a buffer read back whole. */
double *attn_gather(const double *buf, const ke_tensor *base,
                    const ke_tensor *view);
/* A [B, H, S, D] view of a [B, S, H, D] region starting `first` elements
 * into buf, whose S step is s_step and B step b_step elements. */
ke_tensor attn_bshd_view(const ke_tensor *buf, int64_t first, int64_t b,
                         int64_t h, int64_t s, int64_t d, int64_t s_step,
                         int64_t b_step);

#endif
