/* The paged attention suite's shared part (paged-check.h): its
 * tolerance, building a batch of sequences over shuffled cache blocks with
 * every slot the kernel must not read poisoned, and one case against the
 * double reference.
 */
#include "paged-check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
kt_tol pa_tol(ke_dtype out, double spread) {
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

static int64_t pa_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Writes 0xFF bytes (NaN in f32, f16 and bf16) over n bytes of device
 * memory with a plain copy: no kernel is involved in the poisoning. */
void pa_fill_nan_bytes(void *dst, size_t n) {
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

void pa_build(const pa_case *c, pa_inputs *in) {
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

void pa_release(pa_inputs *in) {
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

ke_paged_attention_params pa_params(const pa_case *c, const pa_inputs *in) {
  ke_paged_attention_params p;
  ke_paged_attention_params_init(&p);
  p.scale = c->scale;
  p.workspace = in->ws;
  p.workspace_bytes = in->ws_bytes;
  return p;
}

int pa_call(const pa_inputs *in, const ke_paged_attention_params *p) {
  ke_tensor out = in->out;
  return ke_paged_attention(kt_ctx(), &in->q, &in->k, &in->v, in->d_tables,
                            in->dims.max_blocks_per_seq, in->d_lens, &out, p);
}

/* The reference on the inputs as the device holds them (so that their
 * rounding to f16/bf16 is not counted as error); malloc'd. */
double *pa_reference(const pa_inputs *in,
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

void pa_run_check(const pa_case *c, pa_inputs *in, const char *what) {
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

void pa_check(const pa_case *c, const char *what) {
  pa_inputs in;
  pa_build(c, &in);
  pa_run_check(c, &in, what);
  pa_release(&in);
}

/* A case with the suite's usual shape: GQA 4 (8 query heads over 2 KV
 * heads), head_dim 128, block_size 16, f32, three spare blocks. */
pa_case pa_default(int64_t num_seqs, const int32_t *lens) {
  return (pa_case){.num_seqs = num_seqs, .lens = lens, .num_heads = 8,
                   .num_kv_heads = 2, .head_dim = 128, .block_size = 16,
                   .q_dtype = KE_F32, .kv_dtype = KE_F32,
                   .out_dtype = KE_F32, .spare_blocks = 3};
}

/* Median time of n calls on the same inputs, as the engine's event timing
 * sees it (the attention kernel plus, on the split path, the combine). */
double pa_median_ms(const pa_inputs *in, const ke_paged_attention_params *p,
                    int n) {
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

/* Writes one element of a cache in its own dtype with a plain copy. */
void pa_poke(ke_tensor *t, int64_t index, float value) {
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
int64_t pa_index(const pa_inputs *in, int64_t s, int64_t kv_head,
                 int64_t token, int64_t d) {
  const ke_paged_attention_dims *dm = &in->dims;
  int64_t blk = in->tables[s * dm->max_blocks_per_seq + token / dm->block_size];
  return ((blk * dm->num_kv_heads + kv_head) * dm->block_size +
          token % dm->block_size) * dm->head_dim + d;
}

