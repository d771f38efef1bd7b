/* Paged attention suite: block sizes, lengths, GQA ratios, head dims and
 * dtypes the kernel promises, against the double reference, with fresh
 * random inputs, shuffled physical blocks and NaN bytes in every cache slot
 * the kernel must not read; the split path; special values; each refusal.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kernels.h"
#include "kiln/test-tuning.h"
#include "kiln/test.h"

/* Tolerances by output dtype; f32's grow with the scores' spread.
 *
 * f32: the error that dominates is the scores' own rounding. A score is a
 * head_dim-term f32 dot product, off by a few ulp of scale * sum_d |q_d k_d|
 * (about 7 for unit-normal q and k at the default scale); exp turns that
 * into the same relative error in the token's weight, and so into an
 * absolute error of about that size times |v| in the output, however small
 * the output is (outputs near 0, where V rows cancel, get it all; hence an
 * atol, and rtol alone would not do). Observed in host emulation over many
 * seeds: at most 9e-7 for unit scores, with NMSE up to 3e-12; summing up to
 * 8192 weighted V rows in f32 (per tile, then rescaled) stays below that
 * (2.5e-7 at 8192 tokens). atol 5e-6 and rtol 1e-5 leave a 5x margin, and
 * NMSE 1e-10 fails any systematic error (a dropped or extra token, a wrong
 * weight: 1e-4 and up). Scores wider than unit-normal (a larger scale or
 * q) scale the dot products' error with them, so atol and rtol are
 * multiplied by the scores' standard deviation spread = |scale| * q_std *
 * sqrt(head_dim) when it is above 1, and the NMSE bound by its square.
 * f16/bf16: the output's own rounding (half an ulp: 4.9e-4, 3.9e-3
 * relative) dominates; the defaults' rtol covers it and atol 1e-5 covers the
 * f32 error above plus f16's subnormal spacing (6e-8). Rounding alone gives
 * an NMSE of about ulp^2 / 12 (8e-8 for f16, 5e-6 for bf16; observed 4e-8
 * and 3e-6), bounded here at 1e-6 and 3e-5. */
static kt_tol pa_tol(ke_dtype out, double spread) {
  switch (out) {
  case KE_F16: return (kt_tol){1e-5, 1e-3, 1e-6, 0};
  case KE_BF16: return (kt_tol){1e-5, 1.6e-2, 3e-5, 0};
  default: {
    double f = spread > 1.0 ? spread : 1.0;
    return (kt_tol){5e-6 * f, 1e-5 * f, 1e-10 * f * f, 0};
  }
  }
}

/* ---- Building a batch -------------------------------------------------- */

typedef struct pa_case {
  int64_t num_seqs;
  const int32_t *lens;
  int64_t num_heads, num_kv_heads, head_dim, block_size;
  ke_dtype q_dtype, kv_dtype, out_dtype;
  int64_t spare_blocks;   /* physical blocks no table names */
  int64_t table_slack;    /* table columns past the longest sequence */
  int workspace;          /* pass a workspace: the split path */
  float scale;            /* 0: the default 1/sqrt(head_dim) */
  float q_std;            /* 0: 1 */
} pa_case;

typedef struct pa_inputs {
  ke_paged_attention_dims dims;
  int32_t *lens, *tables;        /* host copies */
  int32_t *d_lens, *d_tables;    /* device */
  ke_tensor q, k, v, out;
  void *ws;
  size_t ws_bytes;
} pa_inputs;

static int64_t pa_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Writes 0xFF bytes (NaN in f32, f16 and bf16) over n bytes of device
 * memory with a plain copy: no kernel is involved in the poisoning. */
static void pa_fill_nan_bytes(void *dst, size_t n) {
  unsigned char *ff = malloc(n);
  ck_assert_ptr_nonnull(ff);
  memset(ff, 0xFF, n);
  kt_assert_ok(ke_copy_to_device(kt_ctx(), dst, ff, n));
  free(ff);
}

/* Replaces every cache slot that no sequence's length reaches (the tail of
 * each last block, and every block no table names) with NaN bytes. */
static void pa_poison_unused(const pa_inputs *in, ke_tensor *cache) {
  const ke_paged_attention_dims *dm = &in->dims;
  const int64_t bs = dm->block_size, hkv = dm->num_kv_heads;
  const size_t row = (size_t)dm->head_dim * ke_dtype_size(cache->dtype);
  const size_t bytes = (size_t)(dm->num_blocks * hkv * bs) * row;
  unsigned char *used = calloc((size_t)(dm->num_blocks * bs), 1);
  unsigned char *img = malloc(bytes);
  ck_assert_ptr_nonnull(used);
  ck_assert_ptr_nonnull(img);
  for (int64_t s = 0; s < dm->num_seqs; s++)
    for (int64_t t = 0; t < in->lens[s]; t++)
      used[in->tables[s * dm->max_blocks_per_seq + t / bs] * bs + t % bs] = 1;
  kt_assert_ok(ke_copy_to_host(kt_ctx(), img, cache->data, bytes));
  for (int64_t b = 0; b < dm->num_blocks; b++)
    for (int64_t slot = 0; slot < bs; slot++)
      if (!used[b * bs + slot])
        for (int64_t h = 0; h < hkv; h++)
          memset(img + (size_t)((b * hkv + h) * bs + slot) * row, 0xFF, row);
  kt_assert_ok(ke_copy_to_device(kt_ctx(), cache->data, img, bytes));
  free(img);
  free(used);
}

static void pa_build(const pa_case *c, pa_inputs *in) {
  memset(in, 0, sizeof *in);
  const int64_t bs = c->block_size, S = c->num_seqs;
  int64_t used_blocks = 0, widest = 1;
  for (int64_t s = 0; s < S; s++) {
    int64_t nb = pa_ceil_div(c->lens[s] > 0 ? c->lens[s] : 1, bs);
    used_blocks += nb;
    if (nb > widest) widest = nb;
  }
  ke_paged_attention_dims *dm = &in->dims;
  *dm = (ke_paged_attention_dims){
      .num_seqs = S, .num_heads = c->num_heads,
      .num_kv_heads = c->num_kv_heads, .head_dim = c->head_dim,
      .num_blocks = used_blocks + c->spare_blocks, .block_size = bs,
      .max_blocks_per_seq = widest + (c->table_slack ? c->table_slack : 1)};

  /* A random permutation of the physical blocks (kt_seed() draws, so a run
   * seed replays it), dealt out in order: no block serves two sequences,
   * and the spare ones serve none. Entries past a sequence's blocks point
   * far outside the cache: reading one would fault or show. */
  int32_t *perm = malloc((size_t)dm->num_blocks * sizeof *perm);
  in->lens = malloc((size_t)S * sizeof *in->lens);
  in->tables = malloc((size_t)(S * dm->max_blocks_per_seq) * sizeof *in->tables);
  ck_assert(perm && in->lens && in->tables);
  for (int64_t i = 0; i < dm->num_blocks; i++) perm[i] = (int32_t)i;
  for (int64_t i = dm->num_blocks - 1; i > 0; i--) {
    int64_t j = (int64_t)(kt_seed() % (uint64_t)(i + 1));
    int32_t tmp = perm[i];
    perm[i] = perm[j];
    perm[j] = tmp;
  }
  int64_t next = 0;
  for (int64_t s = 0; s < S; s++) {
    in->lens[s] = c->lens[s];
    int64_t nb = pa_ceil_div(c->lens[s] > 0 ? c->lens[s] : 1, bs);
    for (int64_t b = 0; b < dm->max_blocks_per_seq; b++)
      in->tables[s * dm->max_blocks_per_seq + b] =
          b < nb ? perm[next++]
                 : (int32_t)(dm->num_blocks + 100000 + kt_seed() % 1000);
  }
  free(perm);

  size_t lbytes = (size_t)S * sizeof(int32_t);
  size_t tbytes = (size_t)(S * dm->max_blocks_per_seq) * sizeof(int32_t);
  kt_assert_ok(ke_malloc(kt_ctx(), (void **)&in->d_lens, lbytes));
  kt_assert_ok(ke_malloc(kt_ctx(), (void **)&in->d_tables, tbytes));
  kt_assert_ok(ke_copy_to_device(kt_ctx(), in->d_lens, in->lens, lbytes));
  kt_assert_ok(ke_copy_to_device(kt_ctx(), in->d_tables, in->tables, tbytes));

  int64_t qshape[3] = {S, c->num_heads, c->head_dim};
  int64_t cshape[4] = {dm->num_blocks, c->num_kv_heads, bs, c->head_dim};
  kt_alloc(&in->q, c->q_dtype, 3, qshape);
  kt_alloc(&in->k, c->kv_dtype, 4, cshape);
  kt_alloc(&in->v, c->kv_dtype, 4, cshape);
  kt_alloc(&in->out, c->out_dtype, 3, qshape);
  kt_fill_normal(&in->q, 0.0f, c->q_std > 0.0f ? c->q_std : 1.0f);
  kt_fill_normal(&in->k, 0.0f, 1.0f);
  kt_fill_normal(&in->v, 0.0f, 1.0f);
  pa_poison_unused(in, &in->k);
  pa_poison_unused(in, &in->v);
  /* An output the kernel forgets to write reads as NaN. */
  pa_fill_nan_bytes(in->out.data, (size_t)ke_tensor_numel(&in->out) *
                                      ke_dtype_size(in->out.dtype));
  if (c->workspace) {
    in->ws_bytes = ke_paged_attention_workspace_bytes(dm);
    if (in->ws_bytes) {
      kt_assert_ok(ke_malloc(kt_ctx(), &in->ws, in->ws_bytes));
      pa_fill_nan_bytes(in->ws, in->ws_bytes);
    }
  }
}

static void pa_release(pa_inputs *in) {
  kt_free(&in->q);
  kt_free(&in->k);
  kt_free(&in->v);
  kt_free(&in->out);
  if (in->ws) kt_assert_ok(ke_free(kt_ctx(), in->ws));
  kt_assert_ok(ke_free(kt_ctx(), in->d_lens));
  kt_assert_ok(ke_free(kt_ctx(), in->d_tables));
  free(in->lens);
  free(in->tables);
}

static ke_paged_attention_params pa_params(const pa_case *c,
                                           const pa_inputs *in) {
  ke_paged_attention_params p;
  ke_paged_attention_params_init(&p);
  p.scale = c->scale;
  p.workspace = in->ws;
  p.workspace_bytes = in->ws_bytes;
  return p;
}

static int pa_call(const pa_inputs *in, const ke_paged_attention_params *p) {
  ke_tensor out = in->out;
  return ke_paged_attention(kt_ctx(), &in->q, &in->k, &in->v, in->d_tables,
                            in->dims.max_blocks_per_seq, in->d_lens, &out, p);
}

/* The reference on the inputs as the device holds them (so that their
 * rounding to f16/bf16 is not counted as error); malloc'd. */
static double *pa_reference(const pa_inputs *in,
                            const ke_paged_attention_params *p) {
  double *qd = kt_to_doubles(&in->q);
  double *kd = kt_to_doubles(&in->k);
  double *vd = kt_to_doubles(&in->v);
  double *ref = malloc((size_t)ke_tensor_numel(&in->out) * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  ke_paged_attention_ref(&in->dims, qd, kd, vd, in->tables, in->lens, ref, p);
  free(qd);
  free(kd);
  free(vd);
  return ref;
}

static void pa_run_check(const pa_case *c, pa_inputs *in, const char *what) {
  ke_paged_attention_params p = pa_params(c, in);
  kt_assert_ok(pa_call(in, &p));
  double *ref = pa_reference(in, &p);
  char name[160];
  snprintf(name, sizeof name, "%s_s%lld_h%lldkv%lld_d%lld_b%lld_%s%s%s%s",
           what, (long long)c->num_seqs, (long long)c->num_heads,
           (long long)c->num_kv_heads, (long long)c->head_dim,
           (long long)c->block_size, ke_dtype_name(c->q_dtype),
           ke_dtype_name(c->kv_dtype), ke_dtype_name(c->out_dtype),
           in->ws ? "_split" : "");
  double scale = c->scale != 0.0f ? fabs(c->scale) : 1.0 / sqrt(c->head_dim);
  double spread = scale * (c->q_std > 0.0f ? c->q_std : 1.0) *
                  sqrt((double)c->head_dim);
  kt_assert_close(name, &in->out, ref, pa_tol(c->out_dtype, spread));
  free(ref);
}

static void pa_check(const pa_case *c, const char *what) {
  pa_inputs in;
  pa_build(c, &in);
  pa_run_check(c, &in, what);
  pa_release(&in);
}

/* A case with the suite's usual shape: GQA 4 (8 query heads over 2 KV
 * heads), head_dim 128, block_size 16, f32, three spare blocks. */
static pa_case pa_default(int64_t num_seqs, const int32_t *lens) {
  return (pa_case){.num_seqs = num_seqs, .lens = lens, .num_heads = 8,
                   .num_kv_heads = 2, .head_dim = 128, .block_size = 16,
                   .q_dtype = KE_F32, .kv_dtype = KE_F32,
                   .out_dtype = KE_F32, .spare_blocks = 3};
}

#define NELEM(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))

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
 * kernel; at most ceil(longest / 512) ranges). */
static void pa_force_splits(int64_t splits) {
  ke__decode_tuning t;
  kt_assert_ok(ke__decode_tuning_get(kt_ctx(), &t));
  t.force_splits = splits;
  kt_assert_ok(ke__decode_tuning_set(kt_ctx(), &t));
}

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
      c.num_heads = 2 * cfg[i].group;
      c.q_dtype = c.kv_dtype = c.out_dtype = cfg[i].dt;
      c.workspace = ws;
      pa_force_splits(cfg[i].splits);
      pa_check(&c, "split_ranges");
      pa_force_splits(0);
    }
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

/* Median time of n calls on the same inputs, as the engine's event timing
 * sees it (the attention kernel plus, on the split path, the combine). */
static double pa_median_ms(const pa_inputs *in,
                           const ke_paged_attention_params *p, int n) {
  ke_timing_reset(kt_ctx());
  for (int i = 0; i < n; i++) kt_assert_ok(pa_call(in, p));
  ke_kernel_stats stats[8];
  size_t count = 0;
  kt_assert_ok(ke_timing_collect(kt_ctx(), stats, 8, &count));
  double ms = 0.0;
  for (size_t i = 0; i < count && i < 8; i++)
    if (strncmp(stats[i].name, "paged_attention", 15) == 0)
      ms += stats[i].median_ms;
  return ms;
}

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

/* Writes one element of a cache in its own dtype with a plain copy. */
static void pa_poke(ke_tensor *t, int64_t index, float value) {
  size_t size = ke_dtype_size(t->dtype);
  unsigned char bytes[4];
  if (t->dtype == KE_F32) {
    memcpy(bytes, &value, 4);
  } else {
    uint16_t h = t->dtype == KE_F16 ? ke_f32_to_f16(value)
                                    : ke_f32_to_bf16(value);
    memcpy(bytes, &h, 2);
  }
  kt_assert_ok(ke_copy_to_device(kt_ctx(), (unsigned char *)t->data +
                                               (size_t)index * size,
                                 bytes, size));
}

/* Element (kv_head, token, d) of sequence s in a cache. */
static int64_t pa_index(const pa_inputs *in, int64_t s, int64_t kv_head,
                        int64_t token, int64_t d) {
  const ke_paged_attention_dims *dm = &in->dims;
  int64_t blk = in->tables[s * dm->max_blocks_per_seq + token / dm->block_size];
  return ((blk * dm->num_kv_heads + kv_head) * dm->block_size +
          token % dm->block_size) * dm->head_dim + d;
}

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

/* ---- Refusals ------------------------------------------------------------- */

/* Each refusal is checked on an otherwise valid call, which must pass. */
START_TEST(refusals) {
  static const int32_t lens[] = {33, 7};
  pa_case c = pa_default(NELEM(lens), lens);
  pa_inputs in;
  pa_build(&c, &in);
  ke_context *ctx = kt_ctx();
  const int64_t mb = in.dims.max_blocks_per_seq;
  kt_assert_ok(pa_call(&in, NULL));

  /* Lengths: 0, negative, one past the table's capacity. */
  const int32_t bad_lens[] = {0, -3, (int32_t)(mb * c.block_size + 1)};
  for (int i = 0; i < 3; i++) {
    int32_t l[2] = {33, bad_lens[i]};
    kt_assert_ok(ke_copy_to_device(ctx, in.d_lens, l, sizeof l));
    kt_assert_status(pa_call(&in, NULL), KE_EINVAL);
  }
  int32_t full[2] = {33, (int32_t)(mb * c.block_size)}; /* at capacity: ok */
  int32_t *tbl = malloc((size_t)(2 * mb) * sizeof *tbl);
  ck_assert_ptr_nonnull(tbl);
  memcpy(tbl, in.tables, (size_t)(2 * mb) * sizeof *tbl);
  for (int64_t b = 0; b < mb; b++) tbl[mb + b] = (int32_t)b;
  kt_assert_ok(ke_copy_to_device(ctx, in.d_tables, tbl,
                                 (size_t)(2 * mb) * sizeof *tbl));
  kt_assert_ok(ke_copy_to_device(ctx, in.d_lens, full, sizeof full));
  kt_assert_ok(pa_call(&in, NULL));
  /* A used table entry outside the cache. */
  tbl[mb + 1] = (int32_t)in.dims.num_blocks;
  kt_assert_ok(ke_copy_to_device(ctx, in.d_tables, tbl,
                                 (size_t)(2 * mb) * sizeof *tbl));
  kt_assert_status(pa_call(&in, NULL), KE_EINVAL);
  tbl[mb + 1] = -1;
  kt_assert_ok(ke_copy_to_device(ctx, in.d_tables, tbl,
                                 (size_t)(2 * mb) * sizeof *tbl));
  kt_assert_status(pa_call(&in, NULL), KE_EINVAL);
  free(tbl);
  kt_assert_ok(ke_copy_to_device(ctx, in.d_tables, in.tables,
                                 (size_t)(2 * mb) * sizeof(int32_t)));
  kt_assert_ok(ke_copy_to_device(ctx, in.d_lens, in.lens, sizeof lens));
  kt_assert_ok(pa_call(&in, NULL));

  ke_tensor out = in.out, k = in.k, v = in.v, q = in.q;
  /* Block sizes other than 8, 16, 32 (the same bytes, reshaped). */
  static const int64_t bad_bs[] = {4, 64, 12, 1};
  for (int i = 0; i < NELEM(bad_bs); i++) {
    ke_tensor k2 = k, v2 = v;
    k2.shape[2] = v2.shape[2] = bad_bs[i];
    k2.shape[0] = v2.shape[0] = 1;
    k2.stride[1] = v2.stride[1] = bad_bs[i] * k.shape[3];
    k2.stride[0] = v2.stride[0] = k2.shape[1] * k2.stride[1];
    kt_assert_status(ke_paged_attention(ctx, &q, &k2, &v2, in.d_tables, mb,
                                        in.d_lens, &out, NULL),
                     KE_ESHAPE);
  }
  /* Query heads not a multiple of KV heads: 8 over 3. */
  {
    ke_tensor k3 = k, v3 = v;
    k3.shape[1] = v3.shape[1] = 3;
    k3.shape[0] = v3.shape[0] = 1;
    k3.stride[0] = v3.stride[0] = 3 * k.stride[1];
    kt_assert_status(ke_paged_attention(ctx, &q, &k3, &v3, in.d_tables, mb,
                                        in.d_lens, &out, NULL),
                     KE_ESHAPE);
  }
  /* Head dims outside the list, on q, out and the caches alike. */
  static const int64_t bad_d[] = {32, 112, 160, 512, 65};
  for (int i = 0; i < NELEM(bad_d); i++) {
    ke_tensor q2 = q, o2 = out, k2 = k, v2 = v;
    q2.shape[2] = o2.shape[2] = k2.shape[3] = v2.shape[3] = bad_d[i];
    q2.shape[0] = o2.shape[0] = 1;
    q2.shape[1] = o2.shape[1] = 1;
    k2.shape[0] = v2.shape[0] = 1;
    k2.shape[1] = v2.shape[1] = 1;
    k2.stride[2] = v2.stride[2] = bad_d[i];
    kt_assert_status(ke_paged_attention(ctx, &q2, &k2, &v2, in.d_tables, mb,
                                        in.d_lens, &o2, NULL),
                     KE_ESHAPE);
  }
  /* Dtypes: not a dtype, and k/v that differ. */
  {
    ke_tensor q2 = q, k2 = k, o2 = out;
    q2.dtype = (ke_dtype)7;
    kt_assert_status(ke_paged_attention(ctx, &q2, &k, &v, in.d_tables, mb,
                                        in.d_lens, &out, NULL),
                     KE_EDTYPE);
    o2.dtype = (ke_dtype)-1;
    kt_assert_status(ke_paged_attention(ctx, &q, &k, &v, in.d_tables, mb,
                                        in.d_lens, &o2, NULL),
                     KE_EDTYPE);
    k2.dtype = KE_F16;
    kt_assert_status(ke_paged_attention(ctx, &q, &k2, &v, in.d_tables, mb,
                                        in.d_lens, &out, NULL),
                     KE_EDTYPE);
  }
  /* Shapes and layouts. */
  {
    ke_tensor o2 = out, k2 = k, q2 = q;
    o2.shape[1] = 4; /* out heads differ from q */
    kt_assert_status(ke_paged_attention(ctx, &q, &k, &v, in.d_tables, mb,
                                        in.d_lens, &o2, NULL),
                     KE_ESHAPE);
    k2.stride[3] = 2; /* cache not packed */
    kt_assert_status(ke_paged_attention(ctx, &q, &k2, &v, in.d_tables, mb,
                                        in.d_lens, &out, NULL),
                     KE_ESHAPE);
    k2 = k;
    k2.data = (char *)k.data + 4; /* cache not 16-byte aligned */
    kt_assert_status(ke_paged_attention(ctx, &q, &k2, &v, in.d_tables, mb,
                                        in.d_lens, &out, NULL),
                     KE_ESHAPE);
    o2 = out;
    o2.stride[1] = 64; /* rows overlap */
    kt_assert_status(ke_paged_attention(ctx, &q, &k, &v, in.d_tables, mb,
                                        in.d_lens, &o2, NULL),
                     KE_ESHAPE);
    q2.rank = 2;
    kt_assert_status(ke_paged_attention(ctx, &q2, &k, &v, in.d_tables, mb,
                                        in.d_lens, &out, NULL),
                     KE_ESHAPE);
  }
  /* Arguments. */
  ke_paged_attention_params p;
  ke_paged_attention_params_init(&p);
  p.scale = NAN;
  kt_assert_status(pa_call(&in, &p), KE_EINVAL);
  kt_assert_status(ke_paged_attention(ctx, &q, &k, &v, NULL, mb, in.d_lens,
                                      &out, NULL),
                   KE_EINVAL);
  kt_assert_status(ke_paged_attention(ctx, &q, &k, &v, in.d_tables, mb, NULL,
                                      &out, NULL),
                   KE_EINVAL);
  kt_assert_status(ke_paged_attention(ctx, &q, &k, &v, in.d_tables, 0,
                                      in.d_lens, &out, NULL),
                   KE_EINVAL);
  kt_assert_status(ke_paged_attention(ctx, &q, &k, NULL, in.d_tables, mb,
                                      in.d_lens, &out, NULL),
                   KE_EINVAL);
  pa_release(&in);
}
END_TEST

/* A workspace smaller than the lengths need is refused; the size query
 * gives enough for the table's capacity. */
START_TEST(workspace_refusals) {
  static const int32_t lens[] = {1000, 7};
  pa_case c = pa_default(NELEM(lens), lens);
  c.workspace = 1;
  pa_inputs in;
  pa_build(&c, &in);
  ck_assert_uint_gt(in.ws_bytes, 0);
  ke_paged_attention_params p = pa_params(&c, &in);
  p.workspace_bytes = 2 * 8 * 2 * (128 + 2) * sizeof(float) - 1;
  kt_assert_status(pa_call(&in, &p), KE_EINVAL);
  p.workspace_bytes += 1; /* exactly what 2 partitions need */
  kt_assert_ok(pa_call(&in, &p));
  p.workspace = (char *)in.ws + 2; /* misaligned */
  kt_assert_status(pa_call(&in, &p), KE_EINVAL);
  ke_paged_attention_dims small = in.dims;
  small.max_blocks_per_seq = 512 / 16; /* never split: none needed */
  ck_assert_uint_eq(ke_paged_attention_workspace_bytes(&small), 0);
  pa_release(&in);
}
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
    KT_TEST(long_8192, .tags = "slow", .timeout_s = 600),
    KT_TEST(decode_bandwidth, .tags = "slow,perf", .timeout_s = 600),
    KT_TEST(strided_q_out),
    KT_TEST(nan_unused_slots),
    KT_TEST(nan_in_real_kv),
    KT_TEST(nan_in_real_kv_split),
    KT_TEST(refusals),
    KT_TEST(workspace_refusals),
};

KT_SUITE(kt_suite_paged_attention, "paged_attention", "gpu,kernel",
         paged_attention_tests);
