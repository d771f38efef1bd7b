/* Paged attention suite: block sizes, lengths, GQA ratios, head dims and
 * dtypes the kernel promises, against the double reference, with fresh
 * random inputs, shuffled physical blocks and NaN bytes in every cache slot
 * the kernel must not read; the split path; special values; each refusal.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/test-tuning.h"
#include "paged-check.h"


/* ---- Sizes --------------------------------------------------------------- */

static const int32_t kMixed[] = {1, 7, 33, 113, 8, 32, 2};

START_TEST(block_sizes) {
  static const int64_t sizes[] = {8, 16, 32};
  for (int i = 0; i < 3; i++) {
    pa_case c = pa_default(NELEM(kMixed), kMixed);
    c.block_size = sizes[i];
    pa_check(&c, "block_size");
  }
}
END_TEST

START_TEST(lengths) {
  static const int32_t lens[] = {1, 7, 33, 113, 1000};
  for (int i = 0; i < NELEM(lens); i++) {
    pa_case c = pa_default(1, &lens[i]);
    pa_check(&c, "length");
  }
}
END_TEST

/* One batch of very different lengths, for every block size. */
START_TEST(mixed_lengths) {
  static const int32_t lens[] = {1000, 1, 113, 7, 33, 512, 64, 2, 257};
  static const int64_t sizes[] = {8, 16, 32};
  for (int i = 0; i < 3; i++) {
    pa_case c = pa_default(NELEM(lens), lens);
    c.block_size = sizes[i];
    c.spare_blocks = 5;
    pa_check(&c, "mixed");
  }
}
END_TEST

/* Query heads per KV head: 1 (MHA), 4, 8, 32, and 12 (a group that is not
 * a whole number of the kernel's 8-head chunks), plus MQA. */
START_TEST(gqa_ratios) {
  static const int32_t lens[] = {33, 113, 7};
  static const int64_t ratios[] = {1, 4, 8, 32, 12};
  for (int i = 0; i < NELEM(ratios); i++) {
    pa_case c = pa_default(NELEM(lens), lens);
    c.num_kv_heads = 2;
    c.num_heads = 2 * ratios[i];
    pa_check(&c, "gqa");
  }
  pa_case mqa = pa_default(NELEM(lens), lens);
  mqa.num_kv_heads = 1;
  mqa.num_heads = 20;
  pa_check(&mqa, "mqa");
}
END_TEST

START_TEST(head_dims) {
  static const int32_t lens[] = {1, 33, 113, 200};
  static const int64_t dims[] = {64, 80, 96, 128, 256};
  static const int64_t sizes[] = {8, 16, 32};
  for (int i = 0; i < NELEM(dims); i++)
    for (int j = 0; j < 3; j++) {
      pa_case c = pa_default(NELEM(lens), lens);
      c.num_heads = 4;
      c.head_dim = dims[i];
      c.block_size = sizes[j];
      pa_check(&c, "head_dim");
    }
}
END_TEST

/* ---- Dtypes -------------------------------------------------------------- */

static void pa_dtype_sweep(ke_dtype dt) {
  static const int32_t lens[] = {1, 33, 113, 1000, 7};
  static const int64_t dims[] = {64, 80, 96, 128, 256};
  for (int i = 0; i < NELEM(dims); i++) {
    pa_case c = pa_default(NELEM(lens), lens);
    c.q_dtype = c.kv_dtype = c.out_dtype = dt;
    c.head_dim = dims[i];
    c.block_size = i % 2 ? 32 : 8;
    pa_check(&c, "dtype");
  }
}

START_TEST(dtype_f16) { pa_dtype_sweep(KE_F16); }
END_TEST

START_TEST(dtype_bf16) { pa_dtype_sweep(KE_BF16); }
END_TEST

START_TEST(mixed_dtypes) {
  static const int32_t lens[] = {1, 33, 113, 7};
  static const ke_dtype combos[][3] = {{KE_F16, KE_BF16, KE_F32},
                                       {KE_F32, KE_F16, KE_BF16},
                                       {KE_BF16, KE_F32, KE_F16},
                                       {KE_F32, KE_BF16, KE_F32}};
  for (int i = 0; i < NELEM(combos); i++) {
    pa_case c = pa_default(NELEM(lens), lens);
    c.q_dtype = combos[i][0];
    c.kv_dtype = combos[i][1];
    c.out_dtype = combos[i][2];
    pa_check(&c, "mixed_dtype");
  }
}
END_TEST

/* ---- Scale and score range ----------------------------------------------- */

START_TEST(scale) {
  static const int32_t lens[] = {33, 1000, 7};
  pa_case c = pa_default(NELEM(lens), lens);
  c.scale = 0.3f;
  pa_check(&c, "scale");
  c.scale = -0.05f;
  pa_check(&c, "negative_scale");
  /* Scores of standard deviation ~40: the softmax is nearly one-hot and
   * the running max moves by large steps, which the rescaling must follow
   * without overflow. */
  c.scale = 0.0f;
  c.q_std = 40.0f;
  pa_check(&c, "peaked");
}
END_TEST

/* ---- Split path ("flash-decoding") --------------------------------------- */

START_TEST(split) {
  static const int32_t lens[] = {511, 512, 513, 1000, 1537, 7, 1, 1024};
  pa_case c = pa_default(NELEM(lens), lens);
  c.workspace = 1;
  pa_check(&c, "split");
  c.head_dim = 80;
  c.block_size = 8;
  c.q_dtype = c.kv_dtype = c.out_dtype = KE_F16;
  pa_check(&c, "split");
  c = pa_default(NELEM(lens), lens);
  c.workspace = 1;
  c.num_heads = 64; /* GQA 32 */
  c.block_size = 32;
  c.q_dtype = KE_BF16;
  c.kv_dtype = KE_BF16;
  pa_check(&c, "split");
  /* A workspace whose table could need it, while every length fits one
   * partition: the first kernel finishes everything. */
  static const int32_t short_lens[] = {100, 7, 512};
  c = pa_default(NELEM(short_lens), short_lens);
  c.workspace = 1;
  c.table_slack = 100;
  pa_check(&c, "split_short");
}
END_TEST

/* Token ranges forced whatever the device (kiln/test-tuning.h): lengths
 * that are multiples of neither the range nor the block size, ranges of a
 * few tokens, more ranges than a short sequence has tokens, GQA groups that
 * are not a whole number of row tiles; without a workspace (partials in the
 * engine scratch, merged by the last block) and with one (the combine
 * kernel; at most ceil(longest / 512) ranges: 9 for 4097 tokens, more than
 * the combine's batch of 8). One KV head: the ranges, their counters and
 * their merge are per (sequence, KV head), and split takes two. */
START_TEST(split_ranges) {
  static const int32_t lens[] = {3001, 1, 17, 4097, 513, 100};
  static const struct {
    int64_t splits, head_dim, block_size, group;
    ke_dtype dt;
  } cfg[] = {{2, 64, 8, 1, KE_F32},   {3, 80, 16, 4, KE_F16},
             {7, 128, 32, 8, KE_BF16}, {13, 256, 16, 3, KE_F16},
             {40, 96, 8, 6, KE_F32}};
  for (int i = 0; i < NELEM(cfg); i++)
    for (int ws = 0; ws < 2; ws++) {
      pa_case c = pa_default(NELEM(lens), lens);
      c.head_dim = cfg[i].head_dim;
      c.block_size = cfg[i].block_size;
      c.num_heads = cfg[i].group;
      c.num_kv_heads = 1;
      c.q_dtype = c.kv_dtype = c.out_dtype = cfg[i].dt;
      c.workspace = ws;
      attn_force_splits(cfg[i].splits);
      pa_check(&c, "split_ranges");
      attn_force_splits(0);
    }
}
END_TEST

/* The decode knobs' other paths (kiln/test-tuning.h) on the engine-scratch
 * split: each sequence's blocks taking its tokens a step at a time from a
 * shared counter (dynamic), with 3 and 4 pipeline stages, and fixed ranges
 * with 4. Lengths shorter than one step, odd ones, more ranges than a
 * sequence has steps, the same call twice (the counters must be back at
 * 0), 16-bit and f32 caches (f32 keeps 3 stages). The matrix-unit kernels
 * are off (matrix 0): they have no step counter and would take the 16-bit
 * caches of D up to 128 at warp 32. One KV head and 1025 tokens where
 * there were 4097: the step counters are per (sequence, KV head), and the
 * longest sequence, 3001 tokens, still has 40 ranges of 2 to 5 steps. */
START_TEST(dynamic_steps) {
  static const int32_t lens[] = {3001, 1, 17, 1025, 513, 100, 31};
  static const int modes[][2] = {{2, 3}, {2, 4}, {0, 4}};
  static const struct {
    int64_t splits, head_dim, block_size, group;
    ke_dtype dt;
  } cfg[] = {{40, 128, 16, 4, KE_BF16}, {7, 64, 8, 8, KE_F16},
             {5, 256, 32, 3, KE_F16}, {3, 128, 16, 4, KE_F32}};
  for (int m = 0; m < NELEM(modes); m++) {
    ke__decode_tuning t;
    kt_assert_ok(ke__decode_tuning_get(kt_ctx(), &t));
    t.dynamic = modes[m][0];
    t.stages = modes[m][1];
    t.matrix = 0;
    kt_assert_ok(ke__decode_tuning_set(kt_ctx(), &t));
    for (int i = 0; i < NELEM(cfg); i++) {
      pa_case c = pa_default(NELEM(lens), lens);
      c.head_dim = cfg[i].head_dim;
      c.block_size = cfg[i].block_size;
      c.num_heads = cfg[i].group;
      c.num_kv_heads = 1;
      c.q_dtype = c.kv_dtype = c.out_dtype = cfg[i].dt;
      attn_force_splits(cfg[i].splits);
      pa_check(&c, "dynamic_steps");
      if (i == 0) pa_check(&c, "dynamic_steps_again");
      attn_force_splits(0);
    }
  }
  kt_assert_ok(ke__decode_tuning_set(kt_ctx(), NULL));
}
END_TEST

/* The matrix-unit kernels (tile/decode_mma.h: 16-bit caches, D up to 128
 * padded to 64 or 128) with 3 stages, the knob's other setting, then the
 * default 2: block sizes 8 to 32, lengths that end mid-tile, shorter than
 * one block, a single token, a few tiles; GQA 1, 4, 8 and 12 (a group that
 * is not a whole number of row tiles), MQA; the split path; peaked scores
 * that rescale across tiles. The caches' unused slots are NaN (pa_build),
 * so a tile read past a sequence's end fails the check. The longest
 * sequence, 1537 tokens, ends one past a 128-key step and a 512-token
 * partition. */
START_TEST(matrix_path) {
  static const int32_t lens[] = {1000, 1, 113, 7, 33, 257, 1537};
  static const int modes[] = {3, 2};
  static const struct {
    int64_t head_dim, block_size, heads, kv_heads;
    ke_dtype dt;
    int workspace;
    float q_std;
  } cfg[] = {{128, 16, 8, 2, KE_BF16, 0, 0},  {64, 8, 16, 2, KE_F16, 0, 0},
             {80, 32, 2, 2, KE_BF16, 0, 0},   {96, 16, 24, 2, KE_F16, 0, 0},
             {96, 8, 12, 1, KE_BF16, 1, 0},   {128, 32, 8, 2, KE_F16, 1, 6.0f},
             {64, 32, 20, 1, KE_BF16, 0, 0}};
  for (int m = 0; m < NELEM(modes); m++) {
    ke__decode_tuning t;
    kt_assert_ok(ke__decode_tuning_get(kt_ctx(), &t));
    t.matrix = modes[m];
    kt_assert_ok(ke__decode_tuning_set(kt_ctx(), &t));
    for (int i = 0; i < NELEM(cfg); i++) {
      pa_case c = pa_default(NELEM(lens), lens);
      c.head_dim = cfg[i].head_dim;
      c.block_size = cfg[i].block_size;
      c.num_heads = cfg[i].heads;
      c.num_kv_heads = cfg[i].kv_heads;
      c.q_dtype = c.kv_dtype = c.out_dtype = cfg[i].dt;
      c.workspace = cfg[i].workspace;
      c.q_std = cfg[i].q_std;
      pa_check(&c, modes[m] == 3 ? "matrix_3_stages" : "matrix_2_stages");
    }
  }
  kt_assert_ok(ke__decode_tuning_set(kt_ctx(), NULL));
}
END_TEST

/* ---- Long contexts (GPU-sized) ------------------------------------------- */

START_TEST(long_8192) {
  static const int32_t one[] = {8192};
  static const int32_t batch[] = {8192, 1, 4097, 33, 8000};
  static const ke_dtype dts[] = {KE_F32, KE_F16, KE_BF16};
  for (int i = 0; i < 3; i++)
    for (int ws = 0; ws < 2; ws++) {
      pa_case c = pa_default(1, one);
      c.num_heads = 32;
      c.num_kv_heads = 8;
      c.q_dtype = c.kv_dtype = c.out_dtype = dts[i];
      c.workspace = ws;
      pa_check(&c, "long");
      c.num_seqs = NELEM(batch);
      c.lens = batch;
      c.num_heads = 8;
      c.num_kv_heads = 1;
      c.head_dim = i == 1 ? 256 : 64;
      c.block_size = i == 2 ? 8 : 32;
      pa_check(&c, "long_batch");
    }
}
END_TEST

/* ---- Speed (GPU-sized) ----------------------------------------------------- */

/* Realistic decode batches (head_dim 128, blocks of 16): notes the cache
 * bandwidth each path reaches, and checks the result once. */
START_TEST(decode_bandwidth) {
  static const struct {
    const char *name;
    int64_t num_seqs, len, num_heads, num_kv_heads;
    ke_dtype dtype;
  } cfgs[] = {
      {"64x1024_gqa4_f16", 64, 1024, 32, 8, KE_F16},
      {"4x8192_gqa4_f16", 4, 8192, 32, 8, KE_F16},
      {"64x1024_gqa8_bf16", 64, 1024, 64, 8, KE_BF16},
      {"16x2048_mha_f16", 16, 2048, 32, 32, KE_F16},
      {"16x2048_gqa4_f32", 16, 2048, 32, 8, KE_F32},
  };
  for (int i = 0; i < NELEM(cfgs); i++) {
    int32_t *lens = malloc((size_t)cfgs[i].num_seqs * sizeof *lens);
    ck_assert_ptr_nonnull(lens);
    for (int64_t s = 0; s < cfgs[i].num_seqs; s++)
      lens[s] = (int32_t)cfgs[i].len;
    pa_case c = pa_default(cfgs[i].num_seqs, lens);
    c.num_heads = cfgs[i].num_heads;
    c.num_kv_heads = cfgs[i].num_kv_heads;
    c.q_dtype = c.kv_dtype = c.out_dtype = cfgs[i].dtype;
    c.workspace = 1;
    pa_inputs in;
    pa_build(&c, &in);
    double bytes = 2.0 * (double)(c.num_seqs * cfgs[i].len) *
                   (double)(c.num_kv_heads * c.head_dim) *
                   (double)ke_dtype_size(c.kv_dtype);
    ke_paged_attention_params p = pa_params(&c, &in);
    kt_assert_ok(pa_call(&in, &p)); /* warm-up */
    double ws_ms = pa_median_ms(&in, &p, 20);
    p.workspace = NULL;
    double scratch_ms = pa_median_ms(&in, &p, 20);
    char key[64], val[160];
    snprintf(key, sizeof key, "bandwidth_%s", cfgs[i].name);
    snprintf(val, sizeof val,
             "%.1f MB of K+V: workspace %.3f ms (%.0f GB/s), engine scratch "
             "%.3f ms (%.0f GB/s)",
             bytes / 1e6, ws_ms, bytes / ws_ms / 1e6, scratch_ms,
             bytes / scratch_ms / 1e6);
    kt_note(key, val);
    pa_run_check(&c, &in, cfgs[i].name);
    pa_release(&in);
    free(lens);
  }
}
END_TEST

/* ---- Layouts -------------------------------------------------------------- */

/* q as a slice of a fused [S, (Hq + 2 Hkv) * D] QKV buffer; out written
 * head-major, [Hq, S, D] memory viewed as [S, Hq, D]. */
START_TEST(strided_q_out) {
  static const int32_t lens[] = {33, 1, 200};
  pa_case c = pa_default(NELEM(lens), lens);
  pa_inputs in;
  pa_build(&c, &in);
  const int64_t S = c.num_seqs, H = c.num_heads, D = c.head_dim;
  const int64_t width = (H + 2 * c.num_kv_heads) * D;
  int64_t qkv_shape[2] = {S, width};
  int64_t out_shape[3] = {H, S, D};
  ke_tensor qkv, out_hm;
  kt_alloc(&qkv, KE_F32, 2, qkv_shape);
  kt_alloc(&out_hm, KE_F32, 3, out_shape);
  kt_fill_normal(&qkv, 0.0f, 1.0f);
  pa_fill_nan_bytes(out_hm.data, (size_t)(H * S * D) * sizeof(float));

  ke_tensor qv = {.dtype = KE_F32, .rank = 3, .shape = {S, H, D},
                  .stride = {width, D, 1}, .data = qkv.data};
  ke_tensor ov = {.dtype = KE_F32, .rank = 3, .shape = {S, H, D},
                  .stride = {D, S * D, 1}, .data = out_hm.data};
  kt_assert_ok(ke_paged_attention(kt_ctx(), &qv, &in.k, &in.v, in.d_tables,
                                  in.dims.max_blocks_per_seq, in.d_lens, &ov,
                                  NULL));

  double *qkvd = kt_to_doubles(&qkv);
  double *qd = malloc((size_t)(S * H * D) * sizeof *qd);
  double *ref = malloc((size_t)(S * H * D) * sizeof *ref);
  double *ref_hm = malloc((size_t)(S * H * D) * sizeof *ref_hm);
  ck_assert(qd && ref && ref_hm);
  for (int64_t s = 0; s < S; s++)
    memcpy(qd + s * H * D, qkvd + s * width, (size_t)(H * D) * sizeof *qd);
  double *kd = kt_to_doubles(&in.k);
  double *vd = kt_to_doubles(&in.v);
  ke_paged_attention_ref(&in.dims, qd, kd, vd, in.tables, in.lens, ref, NULL);
  for (int64_t s = 0; s < S; s++)
    for (int64_t h = 0; h < H; h++)
      memcpy(ref_hm + (h * S + s) * D, ref + (s * H + h) * D,
             (size_t)D * sizeof *ref);
  kt_assert_close("strided_q_head_major_out", &out_hm, ref_hm,
                  pa_tol(KE_F32, 1.0));
  free(kd);
  free(vd);
  free(ref_hm);
  free(ref);
  free(qd);
  free(qkvd);
  kt_free(&qkv);
  kt_free(&out_hm);
  pa_release(&in);
}
END_TEST

/* ---- Special values ---------------------------------------------------- */

/* Unused slots and blocks are NaN bytes in every test; here they are the
 * bulk of the cache (blocks of 32 with lengths 1 past a boundary, many
 * spare blocks) and the result must still be the finite reference. */
START_TEST(nan_unused_slots) {
  static const int32_t lens[] = {1, 33, 2, 65, 31};
  static const ke_dtype dts[] = {KE_F32, KE_F16, KE_BF16};
  for (int i = 0; i < 3; i++) {
    pa_case c = pa_default(NELEM(lens), lens);
    c.block_size = 32;
    c.spare_blocks = 9;
    c.table_slack = 4;
    c.q_dtype = c.kv_dtype = c.out_dtype = dts[i];
    pa_inputs in;
    pa_build(&c, &in);
    pa_run_check(&c, &in, "nan_unused");
    double *o = kt_to_doubles(&in.out);
    for (int64_t j = 0; j < ke_tensor_numel(&in.out); j++)
      ck_assert_msg(isfinite(o[j]), "out[%lld] = %g", (long long)j, o[j]);
    free(o);
    pa_release(&in);
  }
}
END_TEST

/* A NaN in a real K row makes the whole group of heads that read it NaN; a
 * NaN in a real V row makes that dimension NaN for the group; an Inf in K
 * gives +-inf scores (+inf: NaN heads; -inf: weight 0). The reference, run
 * on the same values, says exactly which outputs are NaN. */
static void pa_special(int workspace) {
  static const int32_t lens[] = {40, 17, 9, 1000};
  pa_case c = pa_default(NELEM(lens), lens);
  c.workspace = workspace;
  pa_inputs in;
  pa_build(&c, &in);
  pa_poke(&in.k, pa_index(&in, 0, 1, 5, 7), NAN);
  pa_poke(&in.v, pa_index(&in, 1, 0, 16, 3), NAN); /* the last real slot */
  pa_poke(&in.k, pa_index(&in, 2, 0, 0, 0), INFINITY);
  pa_poke(&in.k, pa_index(&in, 2, 1, 8, 0), -INFINITY);
  pa_poke(&in.v, pa_index(&in, 3, 1, 700, 100), NAN); /* second partition */
  pa_run_check(&c, &in, "special");
  double *o = kt_to_doubles(&in.out);
  const int64_t H = c.num_heads, D = c.head_dim;
  ck_assert_msg(isnan(o[(0 * H + 4) * D + 0]), "K NaN did not reach head 4");
  ck_assert_msg(isnan(o[(1 * H + 0) * D + 3]), "V NaN did not reach dim 3");
  ck_assert_msg(!isnan(o[(1 * H + 0) * D + 2]), "V NaN spread to dim 2");
  ck_assert_msg(isnan(o[(3 * H + 7) * D + 100]), "V NaN lost when split");
  free(o);
  pa_release(&in);
}

START_TEST(nan_in_real_kv) { pa_special(0); }
END_TEST

START_TEST(nan_in_real_kv_split) { pa_special(1); }
END_TEST

/* ---- Refusals (paged-refusals.c) ---------------------------------------- */

START_TEST(refusals) { pa_refusals(); }
END_TEST

START_TEST(workspace_refusals) { pa_workspace_refusals(); }
END_TEST

START_TEST(host_tables) { pa_host_tables(); }
END_TEST

static const kt_test paged_attention_tests[] = {
    KT_TEST(block_sizes),
    KT_TEST(lengths),
    KT_TEST(mixed_lengths),
    KT_TEST(gqa_ratios),
    KT_TEST(head_dims),
    KT_TEST(dtype_f16),
    KT_TEST(dtype_bf16),
    KT_TEST(mixed_dtypes),
    KT_TEST(scale),
    KT_TEST(split),
    KT_TEST(split_ranges),
    KT_TEST(dynamic_steps),
    KT_TEST(matrix_path),
    KT_TEST(long_8192, .tags = "slow", .timeout_s = 600),
    KT_TEST(decode_bandwidth, .tags = "slow,perf", .timeout_s = 600),
    KT_TEST(strided_q_out),
    KT_TEST(nan_unused_slots),
    KT_TEST(nan_in_real_kv),
    KT_TEST(nan_in_real_kv_split),
    KT_TEST(refusals),
    KT_TEST(workspace_refusals),
    KT_TEST(host_tables),
};

KT_SUITE(kt_suite_paged_attention, "paged_attention", "gpu,kernel",
         paged_attention_tests);
