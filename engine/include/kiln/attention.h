/* kiln engine: attention — score masks, fused (flash-style) attention with
 * MHA/GQA/MQA, and K/V head replication.
 * Kernels: kernels/masks.hip, kernels/attention.hip, kernels/kv_repeat.hip;
 * entry points and references: engine/src/{masks,attention,kv_repeat}.c;
 * tolerances and limits: docs/kernels-attention.md.
 */
#ifndef KILN_ATTENTION_H
#define KILN_ATTENTION_H

#include <stdint.h>

#include "kiln/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Positions. Every function here places key j at position j and query i at
 * position offset + i, where offset is the one given or, when it is
 * negative, Sk - Sq: the queries are the last Sq positions of the keys
 * (prefill when Sq == Sk, decode when Sq == 1). The default can itself be
 * negative (Sq > Sk); then the first Sq - Sk queries precede every key. */

/* ---- Masks -------------------------------------------------------------- */

/* Which (query i, key j) pairs are allowed; p = offset + i is the query's
 * position. The fields compose:
 *
 *   allowed = (!causal || j <= p) && band
 *   band    = window < 0 || |p - j| <= window || p < n_global || j < n_global
 *
 * so the masks by name are
 *   causal:        causal = 1, window = -1
 *   local window:  window = w       (|p - j| > w masked; symmetric)
 *   global+local:  window = w, n_global = g: the first g positions are
 *                  global (a count of leading global tokens, not a flag
 *                  array); a pair is allowed when either position is
 *                  global, otherwise when it is within the window
 *   causal sliding window (Mistral) or attention sinks (StreamingLLM):
 *                  causal = 1 with a window (and n_global sinks).
 * n_global only widens a window: without one it changes nothing. */
typedef struct ke_mask_params {
  int causal;              /* default 0 */
  int64_t window;          /* default -1: no window */
  int64_t n_global;        /* default 0; must be >= 0 */
  int64_t offset;          /* default -1: Sk - Sq */
} ke_mask_params;

void ke_mask_params_init(ke_mask_params *p);

/* The mask predicate: 1 when query i may attend to key j. Host-side, for
 * callers and tests; it spells out the formula above. */
int ke_mask_allows(const ke_mask_params *p, int64_t sq, int64_t sk,
                   int64_t i, int64_t j);

/* Sets every masked entry of scores to -inf, in place; allowed entries are
 * not touched (not even read). scores has rank 2..6, its last two
 * dimensions [Sq, Sk] (e.g. [B, H, Sq, Sk]); f32, f16 or bf16; any strides,
 * as long as no two elements share memory. */
int ke_mask_apply(ke_context *ctx, ke_tensor *scores,
                  const ke_mask_params *params);
/* Reference on packed doubles: `matrices` consecutive [sq, sk] matrices,
 * masked entries set to -inf in place. */
void ke_mask_apply_ref(double *scores, int64_t matrices, int64_t sq,
                       int64_t sk, const ke_mask_params *params);

/* ---- Fused attention ---------------------------------------------------- */

/* O = softmax(scale * Q K^T + mask) V, flash-style: one pass over K and V
 * with an online softmax; the Sq x Sk scores never exist in memory.
 *
 * Layouts: Q and O [B, Hq, Sq, D], K and V [B, Hkv, Sk, D], rank 4, as
 * views: the B, H and S dimensions take any strides (so a [B, S, H, D]
 * buffer is passed as the view with shape [B, H, S, D] and strides
 * {S*H*D, D, H*D, 1}); the D dimension must be contiguous. K and V may be
 * interleaved views of one buffer; O must not overlap itself or Q, K, V
 * (their byte ranges must be disjoint).
 *
 * Heads: Hq must be a multiple of Hkv. Query head h reads kv head
 * h / (Hq / Hkv) directly (MHA when equal, GQA, MQA when Hkv = 1); K and V
 * are never replicated.
 *
 * Sizes: D any of 1..256 (64, 80, 96, 128, 256 and every other value);
 * Sk from 1 to 2^31 - 1; Sq from 1 with (Hq / Hkv) * Sq at most 2^28;
 * B and Hkv at most 65535.
 * Dtypes: Q, K, V and O all f32, all f16 or all bf16; f32 accumulation.
 *
 * Mask: with causal, query i sees key j only when j <= offset + i (offset =
 * causal_offset, or Sk - Sq when negative; see Positions above).
 *
 * Special values: a row with no visible key gives zeros (so does one whose
 * visible scores are all -inf). A NaN or +inf score at a visible key (from
 * Q or K) makes the whole output row NaN; a NaN in V[j, e] at a visible key
 * j makes element e of the row NaN however small the key's weight (the
 * whole row when the V row is NaN). Masked keys are never read, so a NaN
 * there does nothing. An Inf in V at a visible key gives +-Inf in that
 * element, or NaN on the matrix units (docs/kernels-attention.md).
 *
 * Kernels: every kernel family computes the same function for every shape
 * (to the tolerances of docs/kernels-attention.md); `kernel` pins one, as
 * PyTorch's sdpa_kernel does, for benchmarks and tests. AUTO takes the
 * decode kernel below at most 16 query rows per KV head ((Hq / Hkv) * Sq),
 * TILED from 64, ROWS in between.
 *
 * Decode: with at most 16 query rows per KV head and kernel AUTO, the
 * call takes a kernel that splits each KV head's keys across blocks and
 * merges their partial results (docs/kernels-decode.md, "Decode"): same
 * semantics and sizes as above. Its partial results live in the engine's
 * scratch (kiln/engine.h, ke_scratch_release), allocated on first need; if
 * the allocation cap refuses it, the call runs unsplit.
 *
 * bf16 on the Hopper kernel (compute capability 9.0): an f16 copy of V
 * (values scaled by a power of two per batch and KV head where they need
 * it) lives in the same scratch for the call; if the cap refuses it, P
 * stays in two bf16 terms (slower, and more exact). */
typedef enum ke_attention_kernel {
  KE_ATTN_KERNEL_AUTO = 0,
  /* Tiles of query rows against tiles of keys (prefill): f16/bf16 on the
   * matrix units where the device has them and rows are 16-byte aligned
   * with D a multiple of 8, register-tiled f32 SIMT otherwise. */
  KE_ATTN_KERNEL_TILED = 1,
  /* A few lanes per query row, keys split inside a block (any shape): the
   * general SIMT kernel. */
  KE_ATTN_KERNEL_ROWS = 2,
} ke_attention_kernel;

typedef struct ke_attention_params {
  float scale;             /* default 0: 1 / sqrt(D) */
  int causal;              /* default 0 */
  int64_t causal_offset;   /* default -1: Sk - Sq */
  ke_attention_kernel kernel; /* default KE_ATTN_KERNEL_AUTO */
  /* default 0: the softmax weights P reach P·V to f32 accuracy (two 16-bit
   * terms on the matrix units), except on the Hopper kernel: P rounded
   * once to f16 (bf16: against V's f16 copy), its weights raised so that
   * none is an f16 subnormal above 2^-29 of the largest; each output off
   * by at most 2 2^-11 max|V| more (bf16: + 2^-16 max|V|), eight times
   * less than one bf16 rounding. 1 lets a kernel round P once to the
   * input dtype first, weights in [0, 1], as FlashAttention and PyTorch's
   * fused kernels do: faster for bf16 on the Hopper path (the only kernel
   * that takes it today), with each output off by at most 2 u max|V| more
   * (u: the dtype's unit roundoff; docs/kernels-attention.md, "Rounded P
   * on request"). f32 inputs ignore it. */
  int round_p;
} ke_attention_params;

void ke_attention_params_init(ke_attention_params *p);
int ke_attention(ke_context *ctx, const ke_tensor *q, const ke_tensor *k,
                 const ke_tensor *v, ke_tensor *o,
                 const ke_attention_params *params);
/* Reference on packed doubles: q and o [b, hq, sq, d], k and v
 * [b, hkv, sk, d]. */
void ke_attention_ref(const double *q, const double *k, const double *v,
                      double *o, int64_t b, int64_t hq, int64_t hkv,
                      int64_t sq, int64_t sk, int64_t d,
                      const ke_attention_params *params);

/* ---- K/V head replication ----------------------------------------------- */

/* out[b, h, s, :] = in[b, h / (Hq / Hkv), s, :]: expands K or V of
 * [B, Hkv, S, D] to [B, Hq, S, D] for callers that need the heads
 * materialised (ke_attention does not). Rank 4; Hq a multiple of Hkv; any
 * strides on both (out must not overlap itself or in); in and out of the
 * same dtype, f32, f16 or bf16 (a copy: values, NaN included, are kept
 * bit for bit). */
int ke_kv_repeat(ke_context *ctx, const ke_tensor *in, ke_tensor *out);
/* Reference on packed doubles. */
void ke_kv_repeat_ref(const double *in, double *out, int64_t b, int64_t hkv,
                      int64_t hq, int64_t s, int64_t d);

#ifdef __cplusplus
}
#endif
#endif
