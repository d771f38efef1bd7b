/* RoPE suite: both pairings, partial rotary dims, both layouts and strided
 * views, in place and out of place, every dtype, large positions, GLM 2-D
 * RoPE, the position-id generators, special values and each refusal, against
 * the double references with fresh random inputs and positions.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kernels.h"
#include "kiln/test.h"
#include "rope-check.h"

/* Shapes with non-power-of-two and length-1 sizes, both layouts. */
static const int64_t kShapes[][4] = {
    /* b, s, h, d */
    {1, 1, 1, 2},   {1, 7, 3, 64}, {2, 33, 2, 128}, {1, 113, 4, 80},
    {3, 1000, 1, 32}, {2, 7, 33, 8},
};

static void sweep(ke_dtype in, ke_dtype out) {
  for (size_t i = 0; i < sizeof kShapes / sizeof kShapes[0]; i++)
    for (int pairing = 0; pairing < 2; pairing++)
      for (int rank = 3; rank <= 4; rank++) {
        rope_case c = {.rank = rank,
                       .b = rank == 4 ? kShapes[i][0] : 1,
                       .s = kShapes[i][1],
                       .h = kShapes[i][2],
                       .d = kShapes[i][3],
                       .pairing = (ke_rope_pairing)pairing,
                       .in = in,
                       .out = out,
                       .per_batch = rank == 4 && (i % 2 == 0),
                       .pos_dtype = i % 2 ? KE_POS_I64 : KE_POS_I32,
                       .pos_max = 4096};
        check_rope(&c);
      }
}

START_TEST(sizes_f32) { sweep(KE_F32, KE_F32); }
END_TEST

START_TEST(sizes_f16) { sweep(KE_F16, KE_F16); }
END_TEST

START_TEST(sizes_bf16) { sweep(KE_BF16, KE_BF16); }
END_TEST

START_TEST(mixed_dtypes) {
  rope_case c = {.rank = 4, .b = 2, .s = 33, .h = 3, .d = 64,
                 .in = KE_F16, .out = KE_F32, .pos_max = 4096};
  check_rope(&c);
  c.in = KE_F32;
  c.out = KE_BF16;
  c.pairing = KE_ROPE_INTERLEAVED;
  check_rope(&c);
  c.in = KE_BF16;
  c.out = KE_F16;
  check_rope(&c);
}
END_TEST

/* rot < D: the rest of the head is copied out of place, untouched in place
 * (the out-of-place y starts as random values, so a missed copy shows). */
START_TEST(partial_rotary) {
  static const int64_t dims[][2] = {{64, 32}, {80, 20}, {128, 2}, {8, 4},
                                    {113 + 1, 100}};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
    for (int pairing = 0; pairing < 2; pairing++)
      for (int in_place = 0; in_place < 2; in_place++) {
        rope_case c = {.rank = 3, .b = 1, .s = 7, .h = 3, .d = dims[i][0],
                       .rot = dims[i][1],
                       .pairing = (ke_rope_pairing)pairing, .in = KE_F32,
                       .out = KE_F32, .in_place = in_place, .pos_max = 4096};
        check_rope(&c);
        c.in = c.out = KE_BF16;
        c.rank = 4;
        c.b = 2;
        check_rope(&c);
      }
}
END_TEST

START_TEST(in_place) {
  for (int pairing = 0; pairing < 2; pairing++) {
    rope_case c = {.rank = 4, .b = 2, .s = 113, .h = 4, .d = 64,
                   .pairing = (ke_rope_pairing)pairing, .in = KE_F32,
                   .out = KE_F32, .in_place = 1, .per_batch = 1,
                   .pos_max = 65536};
    check_rope(&c);
    c.in = c.out = KE_F16;
    check_rope(&c);
    c.in = c.out = KE_BF16;
    check_rope(&c);
  }
}
END_TEST

START_TEST(theta) {
  static const double thetas[] = {500000.0, 1e6, 10.0, 1.0};
  for (size_t i = 0; i < sizeof thetas / sizeof thetas[0]; i++) {
    rope_case c = {.rank = 3, .b = 1, .s = 33, .h = 2, .d = 128,
                   .in = KE_F32, .out = KE_F32, .pos_max = 131072,
                   .theta = thetas[i]};
    check_rope(&c);
  }
}
END_TEST

/* Positions well past 65536, up to the i32 limit and beyond in i64: the
 * angle must stay precise (an f32 angle fails here). */
static const int64_t kLargePos[] = {
    0,          1,          4095,       65535,         65536,
    65537,      100000,     1000000,    (1 << 24) - 1, 1 << 24,
    123456789,  1073741824, 2147483647, 2000000011,    99999};
static const int64_t kLargePos64[] = {
    2147483648LL, 3000000000LL, 4294967301LL, 65536, 1 << 20, 7};

START_TEST(large_positions) {
  for (int pairing = 0; pairing < 2; pairing++) {
    rope_case c = {.rank = 3, .b = 1, .s = 15, .h = 2, .d = 128,
                   .pairing = (ke_rope_pairing)pairing, .in = KE_F32,
                   .out = KE_F32, .fixed = kLargePos};
    check_rope(&c);
    c.in = c.out = KE_BF16;
    check_rope(&c);
    c.in = c.out = KE_F16;
    check_rope(&c);
    c.in = c.out = KE_F32;
    c.fixed = kLargePos64;
    c.s = 6;
    c.pos_dtype = KE_POS_I64;
    check_rope(&c);
    /* Random positions up to 2^24 across a batch. */
    rope_case r = {.rank = 4, .b = 2, .s = 113, .h = 2, .d = 64,
                   .pairing = (ke_rope_pairing)pairing, .in = KE_F32,
                   .out = KE_F32, .per_batch = 1, .pos_max = 16777216.0};
    check_rope(&r);
  }
}
END_TEST

/* A [B, S, H, D] buffer as a [B, H, S, D] view (swapped strides), out of
 * place into a packed tensor and in place on the view itself. */
START_TEST(strided_bshd) {
  const int64_t B = 2, S = 33, H = 3, D = 64;
  int64_t mshape[4] = {B, S, H, D}, pshape[4] = {B, H, S, D};
  for (int in_place = 0; in_place < 2; in_place++) {
    ke_tensor m, y;
    kt_alloc(&m, KE_F32, 4, mshape);
    kt_fill_normal(&m, 0.0f, 1.0f);
    double *md = kt_to_doubles(&m);
    ke_tensor view = m;
    for (int i = 0; i < 4; i++) view.shape[i] = pshape[i];
    view.stride[0] = S * H * D;
    view.stride[1] = D;
    view.stride[2] = H * D;
    view.stride[3] = 1;
    if (!in_place) kt_alloc(&y, KE_F32, 4, pshape);
    int64_t *pos = random_positions(B * S, 65536);
    dev_ids d;
    ids_alloc(&d, KE_POS_I64, B * S);
    ids_upload(&d, pos);
    kt_assert_ok(ke_rope(kt_ctx(), &view, in_place ? &view : &y, &d.pos,
                         NULL, NULL));

    /* Reference over the buffer's own [B, S, H, D] order. */
    int64_t *vp = malloc((size_t)(B * S * H) * sizeof *vp);
    double *ref = malloc((size_t)(B * S * H * D) * sizeof *ref);
    ck_assert_ptr_nonnull(vp);
    ck_assert_ptr_nonnull(ref);
    for (int64_t v = 0; v < B * S * H; v++) vp[v] = pos[v / H];
    ke_rope_ref(md, ref, B * S * H, D, vp, NULL, NULL);
    if (in_place) {
      kt_assert_close("bshd_view_inplace", &m, ref, rope_tol(KE_F32));
    } else {
      double *packed = malloc((size_t)(B * S * H * D) * sizeof *packed);
      ck_assert_ptr_nonnull(packed);
      for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < S; s++)
          for (int64_t h = 0; h < H; h++)
            memcpy(packed + ((b * H + h) * S + s) * D,
                   ref + ((b * S + s) * H + h) * D, (size_t)D * sizeof *ref);
      kt_assert_close("bshd_view_to_bhsd", &y, packed, rope_tol(KE_F32));
      free(packed);
      kt_free(&y);
    }
    free(ref);
    free(vp);
    free(pos);
    free(md);
    ids_free(&d);
    kt_free(&m);
  }
}
END_TEST

/* The K heads of a fused [S, 3H, D] QKV buffer, rotated in place as a view:
 * Q and V must be left exactly as they were. */
START_TEST(strided_qkv_slice) {
  const int64_t S = 7, H = 4, D = 32, rot = 16;
  int64_t shape[3] = {S, 3 * H, D};
  ke_tensor qkv;
  kt_alloc(&qkv, KE_BF16, 3, shape);
  kt_fill_normal(&qkv, 0.0f, 1.0f);
  double *before = kt_to_doubles(&qkv);
  ke_tensor k = qkv;
  k.shape[1] = H;
  k.data = (char *)qkv.data + (size_t)(H * D) * ke_dtype_size(KE_BF16);
  int64_t *pos = random_positions(S, 65536);
  dev_ids d;
  ids_alloc(&d, KE_POS_I32, S);
  ids_upload(&d, pos);
  ke_rope_params p;
  ke_rope_params_init(&p);
  p.rot = rot;
  p.pairing = KE_ROPE_INTERLEAVED;
  kt_assert_ok(ke_rope(kt_ctx(), &k, &k, &d.pos, NULL, &p));

  double *ref = malloc((size_t)(S * 3 * H * D) * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  memcpy(ref, before, (size_t)(S * 3 * H * D) * sizeof *ref);
  for (int64_t s = 0; s < S; s++)
    for (int64_t h = 0; h < H; h++) {
      const int64_t off = (s * 3 * H + H + h) * D;
      ke_rope_ref(before + off, ref + off, 1, D, &pos[s], NULL, &p);
    }
  kt_assert_close("qkv_k_slice_inplace", &qkv, ref, rope_tol(KE_BF16));
  free(ref);
  free(pos);
  free(before);
  ids_free(&d);
  kt_free(&qkv);
}
END_TEST

/* ---- GLM 2-D ----------------------------------------------------------------- */

START_TEST(glm_2d) {
  for (int pairing = 0; pairing < 2; pairing++) {
    rope_case c = {.rank = 4, .b = 2, .s = 33, .h = 3, .d = 64,
                   .pairing = (ke_rope_pairing)pairing, .in = KE_F32,
                   .out = KE_F32, .two_d = 1, .per_batch = 1,
                   .pos_max = 65536};
    check_rope(&c);
    c.rot = 32; /* 2-D on part of the head */
    check_rope(&c);
    c.rot = 4;  /* one pair per half */
    c.in = c.out = KE_BF16;
    c.in_place = 1;
    c.rank = 3;
    c.b = 1;
    c.per_batch = 0;
    check_rope(&c);
  }
}
END_TEST

/* GLM end to end: the bidirectional generator feeds 2-D RoPE directly, as
 * ChatGLM-6B does (rotate_half, rot = D). */
START_TEST(glm_2d_generated_ids) {
  const int64_t B = 2, S = 33, H = 2, D = 64, P = 20;
  for (int pd = 0; pd < 2; pd++) {
    dev_ids ids, blk;
    ids_alloc(&ids, (ke_pos_dtype)pd, B * S);
    ids_alloc(&blk, (ke_pos_dtype)pd, B * S);
    kt_assert_ok(ke_position_ids_bidirectional(kt_ctx(), &ids.pos, &blk.pos,
                                               S, 0, P, -1));
    int64_t *hp = ids_download(&ids), *hb = ids_download(&blk);
    rope_case c = {.rank = 4, .b = B, .s = S, .h = H, .d = D,
                   .in = KE_F16, .out = KE_F16, .per_batch = 1,
                   .two_d = 1};
    int64_t shape[4] = {B, H, S, D};
    ke_tensor x, y;
    kt_alloc(&x, KE_F16, 4, shape);
    kt_alloc(&y, KE_F16, 4, shape);
    kt_fill_normal(&x, 0.0f, 1.0f);
    double *xd = kt_to_doubles(&x);
    kt_assert_ok(ke_rope(kt_ctx(), &x, &y, &ids.pos, &blk.pos, NULL));
    int64_t *v0 = per_vector(&c, hp), *v1 = per_vector(&c, hb);
    double *ref = malloc((size_t)(B * H * S * D) * sizeof *ref);
    ck_assert_ptr_nonnull(ref);
    ke_rope_ref(xd, ref, B * H * S, D, v0, v1, NULL);
    kt_assert_close("glm_generated", &y, ref, rope_tol(KE_F16));
    free(ref);
    free(v0);
    free(v1);
    free(hp);
    free(hb);
    free(xd);
    kt_free(&x);
    kt_free(&y);
    ids_free(&ids);
    ids_free(&blk);
  }
}
END_TEST

/* ---- Position ids ------------------------------------------------------------- */

/* The reference against hand-written ids: what the header promises. */
START_TEST(position_ids_definitions) {
  int64_t ids[16], blk[16];
  ke_position_ids_spec s = {.kind = KE_POSITION_IDS_CAUSAL, .seq_len = 4,
                            .start = 3};
  ke_position_ids_ref(&s, 8, ids, NULL);
  const int64_t causal[8] = {3, 4, 5, 6, 3, 4, 5, 6};
  ck_assert_mem_eq(ids, causal, sizeof causal);

  s = (ke_position_ids_spec){.kind = KE_POSITION_IDS_BIDIRECTIONAL,
                             .seq_len = 8, .prefix_len = 5, .mask_pos = -1};
  ke_position_ids_ref(&s, 8, ids, blk);
  const int64_t glm[8] = {0, 1, 2, 3, 4, 4, 4, 4};
  const int64_t glm_blk[8] = {0, 0, 0, 0, 0, 1, 2, 3};
  ck_assert_mem_eq(ids, glm, sizeof glm);
  ck_assert_mem_eq(blk, glm_blk, sizeof glm_blk);
  s.mask_pos = 2;
  s.start = 6;
  s.seq_len = 2; /* decode: tokens 6 and 7 of the text */
  ke_position_ids_ref(&s, 2, ids, blk);
  ck_assert_int_eq(ids[0], 2);
  ck_assert_int_eq(ids[1], 2);
  ck_assert_int_eq(blk[0], 2);
  ck_assert_int_eq(blk[1], 3);

  s = (ke_position_ids_spec){.kind = KE_POSITION_IDS_LOCAL, .seq_len = 10,
                             .window = 4};
  ke_position_ids_ref(&s, 10, ids, NULL);
  const int64_t local[10] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1};
  ck_assert_mem_eq(ids, local, sizeof local);

  s = (ke_position_ids_spec){.kind = KE_POSITION_IDS_GLOBAL_LOCAL,
                             .seq_len = 10, .n_global = 3, .window = 3};
  ke_position_ids_ref(&s, 10, ids, NULL);
  const int64_t gl[10] = {0, 1, 2, 3, 4, 5, 3, 4, 5, 3};
  ck_assert_mem_eq(ids, gl, sizeof gl);
}
END_TEST

START_TEST(position_ids) {
  const ke_position_ids_spec specs[] = {
      {.kind = KE_POSITION_IDS_CAUSAL, .seq_len = 7},
      {.kind = KE_POSITION_IDS_CAUSAL, .seq_len = 1, .start = 4095},
      {.kind = KE_POSITION_IDS_CAUSAL, .seq_len = 1000, .start = 100},
      {.kind = KE_POSITION_IDS_BIDIRECTIONAL, .seq_len = 33, .prefix_len = 20,
       .mask_pos = -1},
      {.kind = KE_POSITION_IDS_BIDIRECTIONAL, .seq_len = 33, .prefix_len = 20,
       .mask_pos = 7},
      {.kind = KE_POSITION_IDS_BIDIRECTIONAL, .seq_len = 7, .start = 25,
       .prefix_len = 20, .mask_pos = 19},
      {.kind = KE_POSITION_IDS_BIDIRECTIONAL, .seq_len = 7, .prefix_len = 113,
       .mask_pos = -1},
      {.kind = KE_POSITION_IDS_LOCAL, .seq_len = 113, .window = 16},
      {.kind = KE_POSITION_IDS_LOCAL, .seq_len = 113, .start = 1000,
       .window = 7},
      {.kind = KE_POSITION_IDS_LOCAL, .seq_len = 33, .window = 1},
      {.kind = KE_POSITION_IDS_GLOBAL_LOCAL, .seq_len = 113, .n_global = 4,
       .window = 16},
      {.kind = KE_POSITION_IDS_GLOBAL_LOCAL, .seq_len = 113, .start = 50,
       .n_global = 0, .window = 33},
      {.kind = KE_POSITION_IDS_GLOBAL_LOCAL, .seq_len = 33, .n_global = 40,
       .window = 8},
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    for (int dt = 0; dt < 2; dt++) {
      check_ids(&specs[i], specs[i].seq_len, (ke_pos_dtype)dt);
      check_ids(&specs[i], 3 * specs[i].seq_len, (ke_pos_dtype)dt);
    }
  /* Ids beyond i32 in an i64 array. */
  ke_position_ids_spec big = {.kind = KE_POSITION_IDS_CAUSAL, .seq_len = 7,
                              .start = 3000000000LL};
  check_ids(&big, 14, KE_POS_I64);
}
END_TEST

/* Each wrapper is the spec it names. */
START_TEST(position_ids_wrappers) {
  const int64_t S = 33, n = 2 * S;
  dev_ids a, b;
  ids_alloc(&a, KE_POS_I32, n);
  ids_alloc(&b, KE_POS_I64, n);
  int64_t want[66], want_blk[66];
  ke_position_ids_spec s = {.kind = KE_POSITION_IDS_CAUSAL, .seq_len = S,
                            .start = 5};
  kt_assert_ok(ke_position_ids_causal(kt_ctx(), &a.pos, S, 5));
  ke_position_ids_ref(&s, n, want, NULL);
  int64_t *got = ids_download(&a);
  ck_assert_mem_eq(got, want, sizeof want);
  free(got);

  s = (ke_position_ids_spec){.kind = KE_POSITION_IDS_BIDIRECTIONAL,
                             .seq_len = S, .start = 2, .prefix_len = 9,
                             .mask_pos = 3};
  kt_assert_ok(ke_position_ids_bidirectional(kt_ctx(), &a.pos, &b.pos, S, 2,
                                             9, 3));
  ke_position_ids_ref(&s, n, want, want_blk);
  got = ids_download(&a);
  ck_assert_mem_eq(got, want, sizeof want);
  free(got);
  got = ids_download(&b);
  ck_assert_mem_eq(got, want_blk, sizeof want_blk);
  free(got);

  s = (ke_position_ids_spec){.kind = KE_POSITION_IDS_LOCAL, .seq_len = S,
                             .start = 1, .window = 5};
  kt_assert_ok(ke_position_ids_local(kt_ctx(), &b.pos, S, 1, 5));
  ke_position_ids_ref(&s, n, want, NULL);
  got = ids_download(&b);
  ck_assert_mem_eq(got, want, sizeof want);
  free(got);

  s = (ke_position_ids_spec){.kind = KE_POSITION_IDS_GLOBAL_LOCAL,
                             .seq_len = S, .start = 1, .n_global = 4,
                             .window = 5};
  kt_assert_ok(ke_position_ids_global_local(kt_ctx(), &a.pos, S, 1, 4, 5));
  ke_position_ids_ref(&s, n, want, NULL);
  got = ids_download(&a);
  ck_assert_mem_eq(got, want, sizeof want);
  free(got);
  ids_free(&a);
  ids_free(&b);
}
END_TEST

/* ---- Special values ------------------------------------------------------------ */

/* NaN and Inf stay in their own pair (or pass-through element); position 0
 * (angle 0) still gives Inf * sin 0 = NaN, as the formula says. */
START_TEST(nan_propagates) {
  const int64_t S = 3, H = 2, D = 8, rot = 4;
  int64_t shape[3] = {S, H, D};
  ke_tensor x, y;
  kt_alloc(&x, KE_F32, 3, shape);
  kt_alloc(&y, KE_F32, 3, shape);
  kt_fill_normal(&x, 0.0f, 1.0f);
  double *xd = kt_to_doubles(&x);
  xd[(0 * H + 0) * D + 1] = NAN;       /* rotary, pair (1, 3) */
  xd[(1 * H + 1) * D + 6] = NAN;       /* pass-through: copied */
  xd[(2 * H + 0) * D + 0] = INFINITY;  /* rotary at position 0 */
  xd[(1 * H + 0) * D + 2] = -INFINITY; /* rotary at position 5 */
  kt_from_doubles(&x, xd);
  const int64_t pos[3] = {17, 5, 0};
  dev_ids d;
  ids_alloc(&d, KE_POS_I32, S);
  ids_upload(&d, pos);
  for (int pairing = 0; pairing < 2; pairing++) {
    ke_rope_params p;
    ke_rope_params_init(&p);
    p.rot = rot;
    p.pairing = (ke_rope_pairing)pairing;
    kt_assert_ok(ke_rope(kt_ctx(), &x, &y, &d.pos, NULL, &p));
    int64_t vp[6];
    for (int v = 0; v < 6; v++) vp[v] = pos[v / H];
    double ref[3 * 2 * 8];
    ke_rope_ref(xd, ref, S * H, D, vp, NULL, &p);
    int nans = 0;
    for (int i = 0; i < 48; i++) nans += isnan(ref[i]) != 0;
    ck_assert_int_eq(nans, 4); /* the test plants what it means to */
    kt_assert_close(pairing ? "specials_inter" : "specials_half", &y, ref,
                    rope_tol(KE_F32));
  }
  free(xd);
  ids_free(&d);
  kt_free(&x);
  kt_free(&y);
}
END_TEST

/* ---- Refusals --------------------------------------------------------------------- */

START_TEST(refusals) {
  ke_context *ctx = kt_ctx();
  int64_t shape[3] = {7, 2, 8}, other[3] = {7, 2, 6};
  ke_tensor x, y, z;
  kt_alloc(&x, KE_F32, 3, shape);
  kt_alloc(&y, KE_F32, 3, shape);
  kt_alloc(&z, KE_F32, 3, other);
  dev_ids d;
  ids_alloc(&d, KE_POS_I32, 7);
  int64_t zeros[7] = {0};
  ids_upload(&d, zeros);
  ke_rope_params p;

  ke_rope_params_init(&p);
  p.rot = 3; /* odd */
  kt_assert_status(ke_rope(ctx, &x, &y, &d.pos, NULL, &p), KE_ESHAPE);
  p.rot = 10; /* > D */
  kt_assert_status(ke_rope(ctx, &x, &y, &d.pos, NULL, &p), KE_ESHAPE);
  p.rot = -2;
  kt_assert_status(ke_rope(ctx, &x, &y, &d.pos, NULL, &p), KE_ESHAPE);
  p.rot = 6; /* 2-D needs a multiple of 4 */
  kt_assert_status(ke_rope(ctx, &x, &y, &d.pos, &d.pos, &p), KE_ESHAPE);
  ke_rope_params_init(&p);
  p.theta = 0.0;
  kt_assert_status(ke_rope(ctx, &x, &y, &d.pos, NULL, &p), KE_EINVAL);
  p.theta = NAN;
  kt_assert_status(ke_rope(ctx, &x, &y, &d.pos, NULL, &p), KE_EINVAL);
  p.theta = -10000.0;
  kt_assert_status(ke_rope(ctx, &x, &y, &d.pos, NULL, &p), KE_EINVAL);
  ke_rope_params_init(&p);
  p.pairing = (ke_rope_pairing)5;
  kt_assert_status(ke_rope(ctx, &x, &y, &d.pos, NULL, &p), KE_EINVAL);

  /* Shapes. */
  kt_assert_status(ke_rope(ctx, &x, &z, &d.pos, NULL, NULL), KE_ESHAPE);
  ke_tensor r2 = x;
  r2.rank = 2;
  kt_assert_status(ke_rope(ctx, &r2, &r2, &d.pos, NULL, NULL), KE_ESHAPE);
  ke_tensor ns = x;
  ns.stride[2] = 2; /* head dimension not contiguous */
  ns.shape[2] = 4;
  ke_tensor ys = y;
  ys.shape[2] = 4;
  kt_assert_status(ke_rope(ctx, &ns, &ys, &d.pos, NULL, NULL), KE_ESHAPE);
  ke_tensor yb = x; /* in place, other strides */
  yb.stride[0] = 8;
  yb.stride[1] = 56;
  kt_assert_status(ke_rope(ctx, &x, &yb, &d.pos, NULL, NULL), KE_ESHAPE);
  ke_positions few = d.pos;
  few.count = 6;
  kt_assert_status(ke_rope(ctx, &x, &y, &few, NULL, NULL), KE_ESHAPE);
  kt_assert_status(ke_rope(ctx, &x, &y, &d.pos, &few, NULL), KE_ESHAPE);

  /* Dtypes. */
  ke_tensor bad = x;
  bad.dtype = (ke_dtype)7;
  kt_assert_status(ke_rope(ctx, &bad, &y, &d.pos, NULL, NULL), KE_EDTYPE);
  kt_assert_status(ke_rope(ctx, &x, &bad, &d.pos, NULL, NULL), KE_EDTYPE);
  ke_positions badpos = d.pos;
  badpos.dtype = (ke_pos_dtype)3;
  kt_assert_status(ke_rope(ctx, &x, &y, &badpos, NULL, NULL), KE_EDTYPE);
  ke_positions pos64 = d.pos;
  pos64.dtype = KE_POS_I64;
  kt_assert_status(ke_rope(ctx, &x, &y, &d.pos, &pos64, NULL), KE_EDTYPE);
  ke_tensor xh = x; /* in place across dtypes */
  xh.dtype = KE_F16;
  kt_assert_status(ke_rope(ctx, &x, &xh, &d.pos, NULL, NULL), KE_ESHAPE);

  /* NULLs. */
  kt_assert_status(ke_rope(ctx, &x, &y, NULL, NULL, NULL), KE_EINVAL);
  kt_assert_status(ke_rope(ctx, &x, NULL, &d.pos, NULL, NULL), KE_EINVAL);
  kt_assert_status(ke_rope(NULL, &x, &y, &d.pos, NULL, NULL), KE_EINVAL);

  /* Generators. */
  dev_ids e;
  ids_alloc(&e, KE_POS_I64, 14);
  kt_assert_status(ke_position_ids_causal(ctx, &e.pos, 0, 0), KE_EINVAL);
  kt_assert_status(ke_position_ids_causal(ctx, &e.pos, 3, 0), KE_EINVAL);
  kt_assert_status(ke_position_ids_causal(ctx, &e.pos, 7, -1), KE_EINVAL);
  kt_assert_status(ke_position_ids_causal(ctx, &d.pos, 7, INT32_MAX),
                   KE_EINVAL); /* i32 overflow */
  kt_assert_ok(ke_position_ids_causal(ctx, &e.pos, 7, INT32_MAX));
  kt_assert_status(ke_position_ids_local(ctx, &e.pos, 7, 0, 0), KE_EINVAL);
  kt_assert_status(ke_position_ids_global_local(ctx, &e.pos, 7, 0, -1, 4),
                   KE_EINVAL);
  kt_assert_status(ke_position_ids_global_local(ctx, &e.pos, 7, 0, 2, 0),
                   KE_EINVAL);
  kt_assert_status(ke_position_ids_bidirectional(ctx, &e.pos, &d.pos, 7, 0,
                                                 3, -1),
                   KE_EINVAL); /* 7 block ids for 14 ids */
  dev_ids f;
  ids_alloc(&f, KE_POS_I32, 14);
  kt_assert_status(ke_position_ids_bidirectional(ctx, &e.pos, &f.pos, 7, 0,
                                                 0, -1),
                   KE_EINVAL); /* no prefix */
  kt_assert_status(ke_position_ids_bidirectional(ctx, &e.pos, &f.pos, 7, 0,
                                                 3, 3),
                   KE_EINVAL); /* mask outside the prefix */
  kt_assert_status(ke_position_ids_bidirectional(ctx, &e.pos, NULL, 7, 0, 3,
                                                 -1),
                   KE_EINVAL);
  ke_position_ids_spec sp = {.kind = KE_POSITION_IDS_CAUSAL, .seq_len = 7};
  kt_assert_status(ke_position_ids(ctx, &sp, &e.pos, &f.pos), KE_EINVAL);
  sp.kind = (ke_position_ids_kind)9;
  kt_assert_status(ke_position_ids(ctx, &sp, &e.pos, NULL), KE_EINVAL);
  ke_positions badids = e.pos;
  badids.dtype = (ke_pos_dtype)2;
  kt_assert_status(ke_position_ids_causal(ctx, &badids, 7, 0), KE_EDTYPE);

  ids_free(&f);
  ids_free(&e);
  ids_free(&d);
  kt_free(&x);
  kt_free(&y);
  kt_free(&z);
}
END_TEST

/* ---- GPU-sized ------------------------------------------------------------------- */

START_TEST(large) {
  rope_case c = {.rank = 4, .b = 4, .s = 2048, .h = 32, .d = 128,
                 .in = KE_BF16, .out = KE_BF16, .in_place = 1,
                 .per_batch = 1, .pos_max = 131072};
  check_rope(&c);
  c.in = c.out = KE_F32;
  c.in_place = 0;
  c.pairing = KE_ROPE_INTERLEAVED;
  c.rot = 64;
  check_rope(&c);
}
END_TEST

/* Heads wider than one table chunk (256 pairs), 1-D and 2-D, including a
 * 2-D section boundary that falls inside a chunk. */
START_TEST(wide_heads) {
  static const int64_t dims[][3] = {
      /* d, rot, two_d */
      {1024, 0, 0}, {1000, 600, 0}, {1024, 0, 1}, {1032, 0, 1}, {520, 516, 1},
  };
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
    for (int pairing = 0; pairing < 2; pairing++) {
      rope_case c = {.rank = 3, .b = 1, .s = 7, .h = 3, .d = dims[i][0],
                     .rot = dims[i][1], .two_d = (int)dims[i][2],
                     .pairing = (ke_rope_pairing)pairing, .in = KE_F32,
                     .out = KE_F32, .pos_max = 65536};
      check_rope(&c);
    }
}
END_TEST

static const kt_test rope_tests[] = {
    KT_TEST(sizes_f32),
    KT_TEST(sizes_f16),
    KT_TEST(sizes_bf16),
    KT_TEST(mixed_dtypes),
    KT_TEST(partial_rotary),
    KT_TEST(in_place),
    KT_TEST(theta),
    KT_TEST(wide_heads),
    KT_TEST(large_positions),
    KT_TEST(strided_bshd),
    KT_TEST(strided_qkv_slice),
    KT_TEST(glm_2d),
    KT_TEST(glm_2d_generated_ids),
    KT_TEST(position_ids_definitions, .host_only = 1),
    KT_TEST(position_ids),
    KT_TEST(position_ids_wrappers),
    KT_TEST(nan_propagates),
    KT_TEST(refusals),
    KT_TEST(large, .tags = "slow", .timeout_s = 600),
};

KT_SUITE(kt_suite_rope, "rope", "gpu,kernel", rope_tests);
