/* Launchers: the C boundary between the engine and the device code.
 *
 * Each kernel family in kernels/<family>.hip defines its launchers here with C
 * linkage. A launcher has already been handed validated shapes by its engine
 * entry point; it picks a grid, launches on the given stream and returns the
 * runtime's error code (0 on success) as an int, so that this header stays
 * free of any vendor type. Internal to the engine.
 */
#ifndef KILN_ENGINE_LAUNCH_H
#define KILN_ENGINE_LAUNCH_H

#include <stdint.h>

#include "kiln/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[r, :] = softmax(scale * x[r, :]) over rows of cols elements; row r
 * starts at r * x_row_stride (y_row_stride), elements are contiguous. With
 * causal != 0, rows come in groups of sq queries and column c of row r is
 * masked when c > (r % sq) + causal_offset. */
int ke__softmax_launch(void *stream, ke_dtype in_dtype, const void *x,
                       int64_t x_row_stride, ke_dtype out_dtype, void *y,
                       int64_t y_row_stride, int64_t rows, int64_t cols,
                       float scale, int causal, int64_t sq,
                       int64_t causal_offset);

/* out[i] = convert(a * in[i] + b) for i < n: f32 in, any dtype out. Used
 * to turn f32 random draws into the range and dtype asked for. */
int ke__affine_convert_launch(void *stream, const float *in,
                              ke_dtype out_dtype, void *out, int64_t n,
                              float a, float b);

/* Largest row length the softmax kernel accepts (documented limit). */
#define KE__SOFTMAX_MAX_COLS ((int64_t)1 << 31)

/* Paged attention (decode), one query token per sequence. The caches are
 * [num_blocks, num_kv_heads, block_size, head_dim], packed and 16-byte
 * aligned; q and out are [num_seqs, num_heads, head_dim] with the given seq
 * and head strides (elements, last dimension contiguous). block_tables is
 * [num_seqs, max_blocks_per_seq] int32 and seq_lens [num_seqs] int32, both
 * on the device and already checked (every length in 1..max_blocks *
 * block_size, every used table entry in 0..num_blocks-1). splits is the
 * number of KE__PAGED_PARTITION-token partitions the longest sequence
 * spans when workspace is not NULL (the split, "flash-decoding" path), and
 * 1 otherwise. */
typedef struct ke__paged_attention_args {
  ke_dtype q_dtype, kv_dtype, out_dtype;
  const void *q;
  int64_t q_seq_stride, q_head_stride;
  const void *k_cache, *v_cache;
  const int32_t *block_tables;
  const int32_t *seq_lens;
  void *out;
  int64_t out_seq_stride, out_head_stride;
  float *workspace;
  int64_t num_seqs, max_blocks_per_seq, splits;
  int num_heads, num_kv_heads, head_dim, block_size;
  float scale;
} ke__paged_attention_args;

/* The attention pass: every (sequence, KV head, partition); finishes the
 * sequences that fit in one partition and leaves partials in the workspace
 * for the others. */
int ke__paged_attention_launch(void *stream,
                               const ke__paged_attention_args *args);
/* The combine pass of the split path: merges each (sequence, head)'s
 * partials into out. Only launched when args->splits > 1. */
int ke__paged_attention_combine_launch(void *stream,
                                       const ke__paged_attention_args *args);

/* Tokens per partition of the split path; a multiple of every tile size. */
#define KE__PAGED_PARTITION 512
/* Largest grid z (partitions in flight per sequence); more are looped. */
#define KE__PAGED_MAX_GRID_Z 65535

#ifdef __cplusplus
}
#endif
#endif
