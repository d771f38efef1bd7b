/* kiln engine: rotary position embedding (RoPE), GLM's 2-D variant, and the
 * position-id generators that feed it.
 * Kernels: kernels/rope.hip; entry points and references: engine/src/rope.c;
 * tolerances and limits: docs/kernels.md.
 */
#ifndef KILN_ROPE_H
#define KILN_ROPE_H

#include <stdint.h>

#include "kiln/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Position ids --------------------------------------------------------- */

/* A contiguous device array of integer ids, one per token. */
typedef enum { KE_POS_I32 = 0, KE_POS_I64 = 1 } ke_pos_dtype;

typedef struct ke_positions {
  ke_pos_dtype dtype;
  int64_t count;           /* number of ids */
  void *data;              /* device memory, count ids, packed */
} ke_positions;

/* Generators run on the device and write `ids->count` ids (and, for
 * bidirectional, as many block ids): the ids of count / seq_len sequences of
 * seq_len tokens each, sequence after sequence. Token s of every sequence
 * (0 <= s < seq_len) is token p = start + s of its text (start = tokens
 * already in the KV cache; 0 for a prefill) and gets:
 *
 *   causal          id = p. The ordinary decoder.
 *   bidirectional   GLM's 2-D positions (Du et al. 2022; ChatGLM-6B's
 *                   get_position_ids): the first prefix_len tokens are the
 *                   bidirectional context (GLM's Part A, ending with the
 *                   [MASK]/[gMASK] token), the rest is the block being
 *                   generated (Part B, starting with <sop>).
 *                     p <  prefix_len: id = p,        block id = 0
 *                     p >= prefix_len: id = mask_pos, block id = p - prefix_len + 1
 *                   Every generated token sits at the [MASK]'s position in
 *                   the first stream, so the model learns where the span
 *                   goes, not how long it is; the second stream orders the
 *                   tokens inside the span, and is 0 over the whole prefix.
 *                   mask_pos < 0 means prefix_len - 1 (ChatGLM-6B: [gMASK]
 *                   is the prefix's last token).
 *   local           id = p mod window. Chunked encoding: the text is cut
 *                   into chunks of `window` tokens that each attend only
 *                   within themselves (chunked local attention, parallel
 *                   context windows). RoPE scores depend only on position
 *                   differences, so within a chunk nothing changes, but every
 *                   chunk is encoded at positions 0..window-1: angles stay in
 *                   the range the model was trained on, and a chunk's keys
 *                   are the same wherever it sits, so they can be cached and
 *                   reused.
 *   global_local    id = p for p < n_global, else
 *                   n_global + (p - n_global) mod window. As local, after a
 *                   global prefix of n_global tokens (a system prompt, an
 *                   instruction, attention sinks) that every chunk sees: each
 *                   chunk is positioned as if it came right after the prefix,
 *                   the way parallel-context and block-attention RAG encode
 *                   retrieved passages independently behind a shared prompt.
 *
 * Refused (KE_EINVAL): NULL ids, seq_len < 1, a count that is not a
 * positive multiple of seq_len, start < 0, window < 1, n_global < 0,
 * prefix_len < 1, mask_pos >= prefix_len, block ids passed to a generator
 * that has none (or missing for bidirectional), block ids of another count;
 * KE_EDTYPE: ids dtype other than i32/i64; KE_EINVAL as well when the
 * largest id does not fit in an i32 array. Ids and block ids may differ in
 * dtype. */
typedef enum {
  KE_POSITION_IDS_CAUSAL = 0,
  KE_POSITION_IDS_BIDIRECTIONAL = 1,
  KE_POSITION_IDS_LOCAL = 2,
  KE_POSITION_IDS_GLOBAL_LOCAL = 3,
} ke_position_ids_kind;

typedef struct ke_position_ids_spec {
  ke_position_ids_kind kind;
  int64_t seq_len;         /* tokens per sequence */
  int64_t start;           /* index in its text of each sequence's token 0 */
  int64_t prefix_len;      /* bidirectional: Part A length */
  int64_t mask_pos;        /* bidirectional: [MASK] position; < 0: prefix_len - 1 */
  int64_t window;          /* local, global_local: chunk length */
  int64_t n_global;        /* global_local: global prefix length */
} ke_position_ids_spec;

int ke_position_ids(ke_context *ctx, const ke_position_ids_spec *spec,
                    ke_positions *ids, ke_positions *block_ids);
int ke_position_ids_causal(ke_context *ctx, ke_positions *ids,
                           int64_t seq_len, int64_t start);
int ke_position_ids_bidirectional(ke_context *ctx, ke_positions *ids,
                                  ke_positions *block_ids, int64_t seq_len,
                                  int64_t start, int64_t prefix_len,
                                  int64_t mask_pos);
int ke_position_ids_local(ke_context *ctx, ke_positions *ids,
                          int64_t seq_len, int64_t start, int64_t window);
int ke_position_ids_global_local(ke_context *ctx, ke_positions *ids,
                                 int64_t seq_len, int64_t start,
                                 int64_t n_global, int64_t window);
/* Reference on the host: count ids (and block ids for bidirectional;
 * block_ids may be NULL otherwise). The spec must be valid. */
void ke_position_ids_ref(const ke_position_ids_spec *spec, int64_t count,
                         int64_t *ids, int64_t *block_ids);

/* ---- RoPE ----------------------------------------------------------------- */

/* Rotates pairs of the head dimension by position-dependent angles:
 *
 *   (y_a, y_b) = (x_a cos t - x_b sin t,  x_b cos t + x_a sin t)
 *   t = position * theta^(-2j / rot),  j = 0 .. rot/2 - 1 (the pair index)
 *
 * rotate_half (GPT-NeoX, Llama): pair j is (j, j + rot/2).
 * interleaved (GPT-J, GPT-NeoX-J): pair j is (2j, 2j + 1).
 * Dimensions rot..D-1 are not rotated: copied to y out of place, untouched
 * in place. rot = 0 means D.
 *
 * GLM 2-D (block_positions != NULL): the rotary dimensions are cut in two
 * halves of rot/2 = w; each half is rotated as a RoPE of its own with
 * rotary dimension w, the first half [0, w) by `positions` and the second
 * half [w, rot) by `block_positions`:
 *   t = position_h * theta^(-2j / w),  j = 0 .. w/2 - 1, pairs inside the
 *   half: rotate_half (base + j, base + j + w/2), interleaved
 *   (base + 2j, base + 2j + 1), base = 0 or w.
 * This is ChatGLM-6B's scheme (rotate_half, rot = D, theta 10000); rot must
 * be a multiple of 4. ChatGLM2/3's RoPE is 1-D: interleaved, rot = D/2.
 *
 * Layouts: x and y of rank 3, [S, H, D], or rank 4, [B, H, S, D], the same
 * shape; any strides except that the last dimension is contiguous (so a
 * [B, S, H, D] buffer is passed as a [B, H, S, D] view with swapped strides,
 * and the K heads of a fused QKV tensor as a view). In place: pass the same
 * tensor (or same data and strides) as x and y; other overlaps of x and y
 * are undefined. Dtypes f32, f16, bf16, independently for x and y (not in
 * place), math in f32.
 *
 * Positions: count == S (shared by every batch row) or B * S (token (b, s)
 * reads positions[b * S + s]); i32 or i64. block_positions of the same count
 * and dtype.
 *
 * Angle precision: theta^(-2j/rot) and position * that are computed in
 * double, reduced modulo 2 pi in double, and only the reduced angle
 * (|r| <= pi) goes to f32 sinf/cosf. The angle is thus good to about
 * 2e-7 rad plus |position| * 2^-52 (1e-6 rad at position 2^31), where an
 * f32 product would be off by 4e-3 rad already at position 65536.
 *
 * Refused: rank other than 3/4, x/y shape mismatch, non-contiguous last
 * dimension, odd rot, rot > D, rot not a multiple of 4 in 2-D, positions of
 * another count, H > 2^23, in place with different strides or dtypes
 * (KE_ESHAPE); dtypes outside f32/f16/bf16 or positions dtype outside
 * i32/i64 (KE_EDTYPE); NULL, theta not finite or <= 0 (KE_EINVAL). */
typedef enum {
  KE_ROPE_ROTATE_HALF = 0, /* NeoX / Llama: pairs (j, j + rot/2) */
  KE_ROPE_INTERLEAVED = 1, /* GPT-J: pairs (2j, 2j + 1) */
} ke_rope_pairing;

typedef struct ke_rope_params {
  int64_t rot;             /* rotary dimensions; default 0 = D */
  double theta;            /* default 10000 */
  ke_rope_pairing pairing; /* default KE_ROPE_ROTATE_HALF */
} ke_rope_params;

void ke_rope_params_init(ke_rope_params *p);
int ke_rope(ke_context *ctx, const ke_tensor *x, ke_tensor *y,
            const ke_positions *positions,
            const ke_positions *block_positions,
            const ke_rope_params *params);
/* Reference on nvec packed vectors of dim doubles: vector v rotated by
 * pos[v] (and pos2[v] for the second half in 2-D; pos2 NULL for 1-D). */
void ke_rope_ref(const double *x, double *y, int64_t nvec, int64_t dim,
                 const int64_t *pos, const int64_t *pos2,
                 const ke_rope_params *params);

#ifdef __cplusplus
}
#endif
#endif
