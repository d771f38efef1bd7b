/* Launchers: the C boundary between the engine and the device code.
 *
 * Each kernel family in kernels/<family>.hip defines its launchers here with C
 * linkage. A launcher has already been handed validated shapes by its engine
 * entry point; it picks a grid, launches on the given stream and returns the
 * runtime's error code (0 on success) as an int, so that this header stays
 * free of any vendor type. Internal to the engine.
 */
#ifndef KILN_KERNELS_CONTRACT_LAUNCH_H
#define KILN_KERNELS_CONTRACT_LAUNCH_H

#include <stdint.h>

#include "kiln/engine.h"
#include "kiln/rope.h"

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

/* ---- RoPE (kernels/rope.hip) ---- */

/* A RoPE launch, shapes validated. Tokens are (b, s), b < batch, s < seq;
 * head h of token (b, s) starts at b * stride[0] + s * stride[1] +
 * h * stride[2] elements; its dim elements are contiguous. The rot rotary
 * dimensions form rot / (2 * sec_pairs) sections (1 or 2) of sec_pairs
 * pairs; section 0 turns by pos, section 1 by pos2. Position of token
 * (b, s): pos[b * pos_batch_stride + s]. */
typedef struct ke__rope_args {
  ke_dtype x_dtype, y_dtype;
  const void *x;
  void *y;
  int64_t x_stride[3], y_stride[3];
  int64_t batch, seq, heads, dim, rot, sec_pairs;
  int interleaved;
  int copy_rest;               /* copy dims rot..dim-1 (out of place) */
  const void *pos, *pos2;      /* pos2 == pos in 1-D */
  int pos_i64;
  int64_t pos_batch_stride;    /* 0 or seq */
  double theta;
} ke__rope_args;

int ke__rope_launch(void *stream, const ke__rope_args *args);

/* Writes the ids of a validated spec (kiln/rope.h); block_ids may be NULL
 * except for bidirectional. */
typedef struct ke__position_ids_args {
  ke_position_ids_kind kind;
  int64_t count, seq_len, start, prefix_len, mask_pos, window, n_global;
  void *ids, *block_ids;
  int ids_i64, block_ids_i64;
} ke__position_ids_args;

int ke__position_ids_launch(void *stream, const ke__position_ids_args *args);

/* Most heads a RoPE launch takes: heads * pairs-per-chunk stays in int. */
#define KE__ROPE_MAX_HEADS ((int64_t)1 << 23)

/* ---- RMSNorm (kernels/rmsnorm.hip) ---- */

/* Rows of cols elements, row r of each tensor at r * its stride, elements
 * contiguous. residual (x's dtype) may be NULL: no add; otherwise
 * x += residual is stored into x first. weight may be NULL: all ones. */
int ke__rmsnorm_launch(void *stream, ke_dtype x_dtype, void *x,
                       int64_t x_stride, const void *residual,
                       int64_t residual_stride, ke_dtype w_dtype,
                       const void *weight, ke_dtype y_dtype, void *y,
                       int64_t y_stride, int64_t rows, int64_t cols,
                       float eps);

/* ---- SwiGLU (kernels/swiglu.hip) ---- */

/* out[r, c] = silu(gate[r, c]) * up[r, c] over rows of cols elements, row r
 * of each at r * its stride, elements contiguous; gate and up share
 * in_dtype. */
int ke__swiglu_launch(void *stream, ke_dtype in_dtype, const void *gate,
                      int64_t gate_stride, const void *up, int64_t up_stride,
                      ke_dtype out_dtype, void *out, int64_t out_stride,
                      int64_t rows, int64_t cols);
/* One GEMM input as the GEMM kernels see it: a [rows, K] matrix per batch
 * (rows = M for A, N for B), element (b, r, k) at
 * data[b * batch_stride + r * ld + k] when k_contiguous, else at
 * data[b * batch_stride + k * ld + r]. */
typedef struct ke__gemm_operand {
  ke_dtype dtype;
  const void *data;
  int64_t ld;
  int64_t batch_stride;    /* 0: shared by every batch */
  int k_contiguous;
} ke__gemm_operand;

/* c[b][m * ldc + n] = alpha * sum_k a(b, m, k) * b(b, n, k)
 *                    + beta * c[b][m * ldc + n]   (c not read when beta = 0;
 * the sum is skipped when alpha = 0), c[b] at b * c_batch_stride. */
int ke__gemm_launch(void *stream, const ke__gemm_operand *a,
                    const ke__gemm_operand *b, ke_dtype c_dtype, void *c,
                    int64_t ldc, int64_t c_batch_stride, int64_t m, int64_t n,
                    int64_t k, int64_t batch, float alpha, float beta);

/* out[r * out_ld + c] = decode(element (r, c)) for the MX matrix of the
 * given format (kiln/mxfp.h layout); cols is a multiple of 32. */
int ke__mxfp_dequant_launch(void *stream, int format, const void *data,
                            const void *scales, int64_t rows, int64_t cols,
                            ke_dtype out_dtype, void *out, int64_t out_ld);

/* y[b][m * ldy + n] = sum_k x(b, m, k) * decode(w[n, k]); w has n rows of k
 * elements (k a multiple of 32), shared by every batch; y is not read. */
int ke__mxfp_gemm_launch(void *stream, const ke__gemm_operand *x, int format,
                         const void *w_data, const void *w_scales,
                         ke_dtype y_dtype, void *y, int64_t ldy,
                         int64_t y_batch_stride, int64_t m, int64_t n,
                         int64_t k, int64_t batch);
/* ---- Attention family (kernels/masks.hip, attention.hip, kv_repeat.hip) */

/* Masks: `matrices` [sq, sk] score matrices. Matrix number n decomposes
 * over lead_shape (row-major, nlead <= 4 dimensions) into the element
 * offset sum(index[d] * lead_stride[d]); row i and column j add
 * i * row_stride + j * col_stride. offset is resolved (never the -1
 * default) and window is < 0 (none) or below sq + sk + |offset|. */
typedef struct ke__mask_desc {
  int64_t lead_shape[4];
  int64_t lead_stride[4];
  int nlead;
  int64_t matrices, sq, sk, row_stride, col_stride;
  int causal;
  int64_t window, n_global, offset;
} ke__mask_desc;
int ke__mask_launch(void *stream, ke_dtype dtype, void *scores,
                    const ke__mask_desc *desc);

/* Fused attention: q/o [b, hq, sq, d], k/v [b, hkv, sk, d]; strides in
 * elements for the B, H and S dimensions (D is contiguous); 1 <= d <= 256,
 * hq a multiple of hkv; scale resolved; offset resolved when causal;
 * kernel resolved (KE_ATTN_KERNEL_TILED or KE_ATTN_KERNEL_ROWS). */
typedef struct ke__attention_desc {
  int64_t b, hq, hkv, sq, sk, d;
  int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];
  float scale;
  int causal;
  int64_t offset;
  int kernel;
  int round_p; /* P may be rounded once to the input dtype (kiln/attention.h) */
  void *work;  /* NULL, or ke__attention_work_bytes of device workspace */
  /* The context's attention tuning (kiln/test-tuning.h), zero where it
   * holds the default, so that a desc made by hand runs the defaults. */
  int no_hopper; /* 1: not the Hopper kernel (tuning hopper 0) */
  int v16;       /* the Hopper kernel's f16 V: 0 where it pays, 1 never,
                    2 always (tuning v16 -1, 0, 1) */
} ke__attention_desc;
int ke__attention_launch(void *stream, ke_dtype dtype, const void *q,
                         const void *k, const void *v, void *o,
                         const ke__attention_desc *desc);
/* Device workspace the launch of desc (kernel resolved) would use: the
 * Hopper kernel's f16 copy of bf16 V (kernels/tile/attn_sm90.h); 0 for
 * none. Without it the launch still runs (P then in two bf16 terms). */
size_t ke__attention_work_bytes(ke_dtype dtype, const ke__attention_desc *desc);

/* ---- Decode, split over the keys (kernels/tile/decode.h) ---- */

/* Query rows a decode block takes (its row tile) when `rows` rows read one
 * KV head: 1, 2 or 4. */
static inline int ke__decode_tile_rows(int64_t rows) {
  return rows <= 1 ? 1 : (rows <= 2 ? 2 : 4);
}

/* How a decode launch cuts each row tile's keys: into at most `splits`
 * ranges of at least min_chunk keys. With splits > 1, partials holds
 * splits partial rows of (d + 2) floats per output row (row id * splits +
 * range), and counters one zero word per (row tile, KV head, batch), which
 * every launch leaves zero. */
typedef struct ke__decode_split {
  int64_t splits;
  int64_t min_chunk;
  float *partials;
  unsigned *counters;
} ke__decode_split;

/* Dense decode (kernels/attention_decode.hip): the shapes of a validated
 * ke_attention call. */
int ke__attention_decode_launch(void *stream, ke_dtype dtype, const void *q,
                                const void *k, const void *v, void *o,
                                const ke__attention_desc *desc,
                                const ke__decode_split *split);

/* K/V replication: shape is the output's [b, hq, s, d]; input head
 * h / (hq / hkv) feeds output head h. Strides in elements. */
typedef struct ke__kv_repeat_desc {
  int64_t shape[4];
  int64_t hkv;
  int64_t in_stride[4];
  int64_t out_stride[4];
} ke__kv_repeat_desc;
int ke__kv_repeat_launch(void *stream, ke_dtype dtype, const void *in,
                         void *out, const ke__kv_repeat_desc *desc);

/* Largest row length the softmax kernel accepts (documented limit). */
#define KE__SOFTMAX_MAX_COLS ((int64_t)1 << 31)
/* Largest M, N or K the GEMM kernels accept (documented limit). */
#define KE__GEMM_MAX_DIM ((int64_t)0x7fffffff)

/* Paged attention (decode), one query token per sequence. The caches are
 * [num_blocks, num_kv_heads, block_size, head_dim], packed and 16-byte
 * aligned; q and out are [num_seqs, num_heads, head_dim] with the given seq
 * and head strides (elements, last dimension contiguous). block_tables is
 * [num_seqs, max_blocks_per_seq] int32 and seq_lens [num_seqs] int32, both
 * on the device and already checked (every length in 1..max_blocks *
 * block_size, every used table entry in 0..num_blocks-1). A sequence of
 * length len is cut into ceil(len / chunk) token ranges, at most splits of
 * them (1: chunk covers every sequence, nothing is partial). partials holds
 * cap >= splits partial rows of head_dim + 2 floats per (sequence, query
 * head): ((seq * num_heads + h) * cap + range) * (head_dim + 2). counters
 * (one zero word per (sequence, KV head, row tile), left zero) lets the last
 * range's block merge; NULL leaves the merge to the combine kernel. */
typedef struct ke__paged_attention_args {
  ke_dtype q_dtype, kv_dtype, out_dtype;
  const void *q;
  int64_t q_seq_stride, q_head_stride;
  const void *k_cache, *v_cache;
  const int32_t *block_tables;
  const int32_t *seq_lens;
  void *out;
  int64_t out_seq_stride, out_head_stride;
  float *partials;
  unsigned *counters;
  int64_t num_seqs, max_blocks_per_seq, splits, chunk, cap;
  int num_heads, num_kv_heads, head_dim, block_size;
  float scale;
} ke__paged_attention_args;

/* The attention pass: every (sequence, KV head, row tile, range). */
int ke__paged_attention_launch(void *stream,
                               const ke__paged_attention_args *args);
/* The workspace path's merge (counters NULL, splits > 1): one block per
 * (sequence, query head) merges its partial rows into out. */
int ke__paged_attention_combine_launch(void *stream,
                                       const ke__paged_attention_args *args);

/* The caller's workspace holds ceil(longest length / KE__PAGED_PARTITION)
 * partial rows per query head: the workspace path cuts sequences into at
 * most that many ranges. */
#define KE__PAGED_PARTITION 512
/* Most ranges per sequence (grid z). */
#define KE__PAGED_MAX_SPLITS 65535

#ifdef __cplusplus
}
#endif
#endif
