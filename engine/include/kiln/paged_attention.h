/* kiln engine: paged attention for decode (one query token per sequence,
 * keys and values in a block-paged cache). Kernel:
 * kernels/paged_attention.hip; entry point and reference:
 * engine/src/paged_attention.c; tolerances and limits:
 * docs/kernels-decode.md.
 */
#ifndef KILN_PAGED_ATTENTION_H
#define KILN_PAGED_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Paged attention (decode) -------------------------------------------- */

/* For each sequence s and query head h, with L = seq_lens[s] and g = the
 * number of query heads per KV head (num_heads / num_kv_heads):
 *
 *   score[t] = scale * sum_d q[s, h, d] * K(s, h / g, t)[d]     t < L
 *   out[s, h, :] = sum_t softmax(score)[t] * V(s, h / g, t)[:]
 *
 * a real softmax over exactly the sequence's L tokens. Token t of sequence
 * s is slot t % block_size of physical block
 * block_tables[s * max_blocks_per_seq + t / block_size].
 *
 * Layouts (elements):
 *   q, out          [num_seqs, num_heads, head_dim]; last dimension
 *                   contiguous, any seq and head strides that do not make
 *                   rows overlap (q may be a slice of a fused QKV buffer)
 *   k_cache,        [num_blocks, num_kv_heads, block_size, head_dim], packed
 *   v_cache         and 16-byte aligned (any ke_malloc'd buffer is)
 *   block_tables    device int32 [num_seqs, max_blocks_per_seq], packed
 *   seq_lens        device int32 [num_seqs]
 *
 * Why [num_blocks, num_kv_heads, block_size, head_dim] ("HND") rather than
 * [num_blocks, block_size, num_kv_heads, head_dim]: the kernel works on one
 * KV head at a time, and in this layout each (physical block, KV head) is a
 * single contiguous block_size x head_dim run (block_size * head_dim *
 * dtype-size bytes, 1-32 KiB), which the kernel reads with full-width
 * coalesced loads. The price is paid when a new token is appended: its K
 * and V rows land in num_kv_heads places block_size * head_dim apart,
 * instead of one contiguous row; that is one small write per token, against
 * a read of the whole context per token here.
 *
 * Supported: head_dim 64, 80, 96, 128, 256; block_size 8, 16, 32;
 * num_heads a multiple of num_kv_heads (GQA/MQA, any ratio; query head h
 * uses KV head h / g); lengths 1 .. max_blocks_per_seq * block_size (any
 * int32). q, the caches (k and v alike) and out are each f32, f16 or bf16;
 * all arithmetic is f32.
 *
 * Only the sequence's tokens are read: slots past the length in its last
 * block, table entries past ceil(L / block_size) and blocks no table names
 * are never touched, so they may hold anything, NaN included.
 *
 * Special values follow the formula: a NaN in a real K row (or in q) makes
 * the head's scores NaN and its whole output NaN; a NaN in a real V row
 * makes the outputs that weight it NaN (every weight multiplies it, even one
 * that underflowed to 0). A +inf score makes the head NaN (inf - inf); -inf
 * scores get weight 0; a head whose scores are all -inf is NaN (0/0).
 *
 * Refused: a dtype outside f32/f16/bf16, or k and v of different dtypes
 * (KE_EDTYPE); ranks, mismatched shapes, an unsupported head_dim or
 * block_size, num_heads not a multiple of num_kv_heads, more than 65535
 * query heads or 2^31-1 sequences, non-packed or misaligned caches,
 * overlapping q/out rows (KE_ESHAPE); NULL pointers, a non-finite scale, a
 * length of 0 or above max_blocks_per_seq * block_size, a used table entry
 * outside 0 .. num_blocks-1, a workspace smaller than needed (KE_EINVAL).
 *
 * Validation reads seq_lens and block_tables back to the host (one
 * stream-synchronised copy of num_seqs * (max_blocks_per_seq + 1) int32s
 * per call) so that a bad length or block index is a refusal, never an
 * out-of-bounds read. A caller that keeps host copies of both (a serving
 * loop's scheduler does) passes them in params instead: they are checked
 * the same way, nothing is read back, and the call does not synchronise
 * the stream (the wait and the launch that follows it on an idle device
 * cost several microseconds a call, docs/decisions/decode.md). The caller
 * vouches that they hold what the device arrays hold when the kernel
 * runs; a difference is an out-of-bounds read the check cannot see.
 *
 * Split over the tokens: a long sequence on a small batch is cut into
 * token ranges computed in parallel and merged ("flash-decoding"), as many
 * as fill the GPU. Workspace (optional): without one, the partial results
 * live in the engine's scratch (kiln/engine.h, ke_scratch_release: allocated
 * through the ledger on first need; if the cap refuses it, each sequence
 * runs as one range) and the last block of a sequence merges them. With one
 * of at least ke_paged_attention_workspace_bytes() bytes, they go there and
 * a second kernel merges them: the call allocates nothing, the workspace
 * needs no initialisation and is scratch afterwards, and sequences are cut
 * into at most ceil(longest / 512) ranges. */
typedef struct ke_paged_attention_params {
  float scale;             /* default 0: 1 / sqrt(head_dim) */
  void *workspace;         /* (optional) device scratch; default NULL */
  size_t workspace_bytes;
  /* (optional) host copies of seq_lens [num_seqs] and block_tables
   * [num_seqs, max_blocks_per_seq], both or neither; default NULL: the
   * device arrays are read back (above). */
  const int32_t *host_seq_lens;
  const int32_t *host_block_tables;
} ke_paged_attention_params;

/* The sizes the reference and the workspace query take. */
typedef struct ke_paged_attention_dims {
  int64_t num_seqs;
  int64_t num_heads;         /* query heads */
  int64_t num_kv_heads;
  int64_t head_dim;
  int64_t num_blocks;        /* physical blocks in each cache */
  int64_t block_size;        /* tokens per block */
  int64_t max_blocks_per_seq;
} ke_paged_attention_dims;

void ke_paged_attention_params_init(ke_paged_attention_params *p);
int ke_paged_attention(ke_context *ctx, const ke_tensor *q,
                       const ke_tensor *k_cache, const ke_tensor *v_cache,
                       const int32_t *block_tables,
                       int64_t max_blocks_per_seq, const int32_t *seq_lens,
                       ke_tensor *out,
                       const ke_paged_attention_params *params);
/* Workspace that lets every sequence of up to max_blocks_per_seq *
 * block_size tokens take the split path. */
size_t ke_paged_attention_workspace_bytes(const ke_paged_attention_dims *dims);
/* Reference on host arrays: q and out packed [num_seqs, num_heads,
 * head_dim], caches packed [num_blocks, num_kv_heads, block_size, head_dim],
 * block_tables and seq_lens as for the kernel. Reads only the sequences'
 * own tokens; a sequence with an invalid length or block gets NaN. */
void ke_paged_attention_ref(const ke_paged_attention_dims *dims,
                            const double *q, const double *k_cache,
                            const double *v_cache,
                            const int32_t *block_tables,
                            const int32_t *seq_lens, double *out,
                            const ke_paged_attention_params *params);

#ifdef __cplusplus
}
#endif
#endif
