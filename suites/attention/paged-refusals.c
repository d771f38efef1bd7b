/* The paged attention suite's refusals (paged_attention.c runs them):
 * each bad argument on an otherwise valid call, which must pass; a
 * workspace too small or misaligned; the host copies of the lengths and
 * tables, which are what is checked.
 */
#include <stdlib.h>
#include <string.h>

#include "paged-check.h"

/* Each refusal is checked on an otherwise valid call, which must pass. */
void pa_refusals(void) {
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

/* A workspace smaller than the lengths need is refused; the size query
 * gives enough for the table's capacity. */
void pa_workspace_refusals(void) {
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

/* Host copies of the lengths and tables in params: the read-back path's
 * result, the copies are what is checked (a bad value there is refused
 * while the device arrays are right), and one without the other is
 * refused. */
void pa_host_tables(void) {
  static const int32_t lens[] = {1000, 7, 300};
  pa_case c = pa_default(NELEM(lens), lens);
  pa_inputs in;
  pa_build(&c, &in);
  ke_paged_attention_params p;
  ke_paged_attention_params_init(&p);
  p.host_seq_lens = in.lens;
  p.host_block_tables = in.tables;
  kt_assert_ok(pa_call(&in, &p));
  double *ref = pa_reference(&in, &p);
  /* spread: scale 1/sqrt(128) times |q| ~ sqrt(128) */
  kt_assert_close("host_tables", &in.out, ref, pa_tol(c.out_dtype, 1.0));
  free(ref);

  const int64_t mb = in.dims.max_blocks_per_seq;
  int32_t bad_lens[NELEM(lens)] = {1000, 0, 300};
  p.host_seq_lens = bad_lens;
  kt_assert_status(pa_call(&in, &p), KE_EINVAL);
  bad_lens[1] = (int32_t)(mb * c.block_size + 1);
  kt_assert_status(pa_call(&in, &p), KE_EINVAL);
  p.host_seq_lens = in.lens;
  int32_t *tbl = malloc((size_t)(NELEM(lens) * mb) * sizeof *tbl);
  ck_assert_ptr_nonnull(tbl);
  memcpy(tbl, in.tables, (size_t)(NELEM(lens) * mb) * sizeof *tbl);
  tbl[2 * mb + 1] = (int32_t)in.dims.num_blocks; /* used by length 300 */
  p.host_block_tables = tbl;
  kt_assert_status(pa_call(&in, &p), KE_EINVAL);
  free(tbl);
  p.host_block_tables = NULL;
  kt_assert_status(pa_call(&in, &p), KE_EINVAL);
  p.host_seq_lens = NULL;
  p.host_block_tables = in.tables;
  kt_assert_status(pa_call(&in, &p), KE_EINVAL);
  pa_release(&in);
}

