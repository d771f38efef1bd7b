/* GEMM suite: shapes from 1x1x1 to GPU-sized, every transpose, batches with
 * shared (stride 0) operands, row strides wider than rows, alpha and beta
 * (beta = 0 with NaN in C, alpha = 0 with NaN in A), every dtype mix,
 * attention's two products, special values and each refusal, against the
 * double reference on fresh random inputs. f16 x f16 and bf16 x bf16 run
 * on the matrix units where the device has them (every tile configuration
 * and layout, aligned and not: the table of matrix-core cases below), the
 * rest on the SIMT kernel.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm-check.h"
#include "kiln/kernels.h"
#include "kiln/test.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Shapes ---------------------------------------------------------------- */

/* Below, at and across the tiles in every dimension: the SIMT kernel's
 * 128 x 128 x 8 and the matrix-core kernel's 64 x 128 x 32 (the
 * configuration these sizes reach). */
static const int64_t kShapes[][3] = {
    {1, 1, 1},    {7, 33, 113},  {64, 64, 16}, {65, 63, 17}, {1, 130, 31},
    {129, 1, 65}, {33, 7, 1},    {2, 3, 200},  {100, 70, 48},
    {128, 128, 8}, {129, 127, 9},
};

static void sweep_shapes(ke_dtype ta, ke_dtype tb, ke_dtype tc) {
  for (size_t i = 0; i < sizeof kShapes / sizeof kShapes[0]; i++) {
    gemm_case g = gemm_base(kShapes[i][0], kShapes[i][1], kShapes[i][2]);
    g.ta = ta;
    g.tb = tb;
    g.tc = tc;
    check_transposes(g);
  }
}

START_TEST(shapes_f32) { sweep_shapes(KE_F32, KE_F32, KE_F32); }
END_TEST

START_TEST(shapes_f16) { sweep_shapes(KE_F16, KE_F16, KE_F16); }
END_TEST

START_TEST(shapes_bf16) { sweep_shapes(KE_BF16, KE_BF16, KE_BF16); }
END_TEST

START_TEST(mixed_dtypes) {
  static const ke_dtype mixes[][3] = {
      {KE_F16, KE_BF16, KE_F32}, {KE_BF16, KE_F32, KE_F16},
      {KE_F32, KE_F16, KE_BF16}, {KE_F16, KE_F16, KE_F32},
      {KE_BF16, KE_BF16, KE_F32}, {KE_F32, KE_F32, KE_F16},
  };
  for (size_t i = 0; i < sizeof mixes / sizeof mixes[0]; i++) {
    gemm_case g = gemm_base(37, 45, 77);
    g.ta = mixes[i][0];
    g.tb = mixes[i][1];
    g.tc = mixes[i][2];
    check_transposes(g);
  }
}
END_TEST

/* ---- The matrix-core path ----------------------------------------------------- */

/* f16 x f16 and bf16 x bf16 GEMMs, each in every transpose. The host
 * emulation picks tile configurations as for 4 multiprocessors
 * (kernels/tile/gemm_mma.h), so these sizes reach each of them at warp 32
 * (NVIDIA: 128 x 128 x 64 at 130 x 386, 128 x 128 x 32 at 129 x 129, 64 x 128
 * below) and at warp 64 (CDNA: 128 x 128 from 130 x 130, 64 x 64 below).
 * The 16-byte copies need row strides that are multiples of 8 elements:
 * the "vec" rows pad M, N and K (equal mod 8) up to that in every
 * transpose, so their edge chunks are partial copies; packed odd sizes,
 * strides off by a few elements and bases off by one take the
 * element-load staging. */
static const mm_row kMmRows[] = {
    {"vec 45x29x37", 1, 45, 29, 37, KE_F16, KE_F32, 1, 0, .pad_a = 3,
     .pad_b = 3},
    {"vec nv large", 1, 130, 386, 42, KE_BF16, KE_F32, 1, 0, .pad_a = 6,
     .pad_b = 6},
    {"vec nv 128x128", 1, 129, 129, 65, KE_F16, KE_BF16, 1, 0, .pad_a = 7,
     .pad_b = 7},
    {"vec k 1", 1, 17, 33, 1, KE_BF16, KE_F16, 1, 0, .pad_a = 7, .pad_b = 7},
    {"vec long k", 1, 9, 17, 1001, KE_F16, KE_F32, 1, 0, .pad_a = 7,
     .pad_b = 7},
    {"vec whole tiles", 1, 128, 256, 64, KE_BF16, KE_F32, 1, 0, .pad_a = 0},
    {"one element", 1, 1, 1, 1, KE_F16, KE_F32, 1, 0, .pad_a = 0},
    {"17 cubed", 1, 17, 17, 17, KE_BF16, KE_BF16, 1, 0, .pad_a = 0},
    {"one row, k 1000", 1, 1, 17, 1000, KE_F16, KE_F16, 1, 0, .pad_a = 0},
    {"one column, k 3001", 1, 17, 1, 3001, KE_BF16, KE_F32, 1, 0, .pad_a = 0},
    {"tall", 1, 1000, 17, 17, KE_F16, KE_BF16, 1, 0, .pad_a = 0},
    {"wide, k 1", 1, 17, 1000, 1, KE_BF16, KE_F16, 1, 0, .pad_a = 0},
    {"alpha, beta", 1, 45, 37, 29, KE_F16, KE_F32, 0.5f, 2.0f, .pad_a = 3,
     .pad_b = 3, .pad_c = 3},
    {"alpha, beta, bf16 C", 2, 70, 65, 33, KE_BF16, KE_BF16, -1.25f, -0.5f, .pad_a = 0},
    {"beta 1, f16 C", 1, 33, 17, 70, KE_F16, KE_F16, 1, 1, .pad_a = 7,
     .pad_b = 7},
    {"beta 0, NaN in C", 1, 70, 65, 33, KE_BF16, KE_F32, 1, 0, .pad_c = 3,
     .nan_c = 1},
    {"batch, B shared (stride 0)", 4, 24, 32, 72, KE_F16, KE_F32, 1, 0,
     .share_b = 1},
    {"batch, A rank 2", 3, 24, 40, 16, KE_BF16, KE_F16, 1, 0, .share_a = 2},
    {"batch, both shared", 3, 33, 17, 21, KE_F16, KE_F32, 1, 0, .share_a = 1,
     .share_b = 2},
    {"batch, configs", 3, 66, 130, 42, KE_BF16, KE_F32, 1, 0, .pad_a = 6,
     .pad_b = 6, .pad_c = 1},
    {"strided views", 2, 32, 24, 48, KE_F16, KE_F32, 1, 0, .pad_a = 8,
     .pad_b = 16, .pad_c = 5},
    {"row strides + 3 and + 1", 2, 31, 29, 45, KE_BF16, KE_F32, 1, 0,
     .pad_a = 3, .pad_b = 1, .pad_c = 17},
    {"bases off by one", 2, 40, 72, 48, KE_F16, KE_BF16, 1, 0, .pad_a = 8,
     .pad_b = 8, .pad_c = 8, .off_a = 1, .off_b = 1, .off_c = 1},
    {"only A off by one, large", 1, 130, 258, 42, KE_BF16, KE_F32, 1, 0,
     .pad_a = 6, .pad_b = 6, .off_a = 1},
};

START_TEST(matrix_cores) { mm_rows_run(kMmRows, NELEM(kMmRows)); }
END_TEST

/* GPU-sized, awkward: 1000 and 3001 in every dimension (kMmLarge,
 * gemm-check.c). */
START_TEST(matrix_cores_large) { mm_rows_run(kMmLarge, kMmLargeN); }
END_TEST

/* Operands TMA can read (16-byte bases, row and batch strides; sizes equal
 * mod 8 and padded to a multiple of 8 in every transpose): on a compute
 * capability 9.0 GPU, and in emulation with KILN_EMU_SM=90 at warp 32,
 * the Hopper kernel (kernels/tile/gemm_sm90.h) runs every one: both tile
 * widths (128 x 256 where four tiles fill the emulation's four
 * multiprocessors, else 128 x 128), edges in M, N and K, k shorter than a
 * slab and over several, batches with own and shared operands, alpha,
 * beta and every C dtype, 16-bit C in rows TMA can write (the epilogue
 * stores those with TMA) and in rows whose last column ends inside 16
 * bytes (written from registers: TMA would write past it, and C's gaps
 * are checked). Elsewhere they are ordinary matrix-core cases. */
static const mm_row kWgRows[] = {
    {"wg 130x290x66, 128x256 tiles", 1, 130, 290, 66, KE_BF16, KE_F32, 1, 0,
     .pad_a = 6, .pad_b = 6},
    {"wg whole tiles", 1, 256, 512, 128, KE_F16, KE_BF16, 1, 0, .pad_a = 0},
    {"wg 42x130x202, 128x128 tiles", 1, 42, 130, 202, KE_F16, KE_F32, 1, 0,
     .pad_a = 6, .pad_b = 6},
    {"wg k 8", 1, 16, 24, 8, KE_BF16, KE_F32, 1, 0, .pad_a = 0},
    {"wg long k", 1, 16, 16, 1000, KE_BF16, KE_F32, 1, 0, .pad_a = 0},
    {"wg alpha, beta, f16 C", 2, 66, 130, 98, KE_F16, KE_F16, -1.25f, 0.5f,
     .pad_a = 6, .pad_b = 6, .pad_c = 3},
    {"wg beta 0, NaN in C", 1, 64, 64, 64, KE_BF16, KE_F32, 1, 0,
     .pad_c = 3, .nan_c = 1},
    {"wg batch, B shared", 4, 24, 32, 72, KE_BF16, KE_F32, 1, 0,
     .share_b = 1},
    {"wg batch, A rank 2", 3, 40, 136, 16, KE_F16, KE_BF16, 1, 0,
     .share_a = 2},
    {"wg batch, strided", 2, 32, 24, 48, KE_F16, KE_F32, 1, 0, .pad_a = 8,
     .pad_b = 16, .pad_c = 5},
    {"wg 16-bit C by TMA stores, batch, edges", 2, 136, 296, 72, KE_BF16,
     KE_F16, 0.5f, 0, .pad_a = 8, .pad_b = 8, .pad_c = 8},
    {"wg 16-bit C, rows ending inside 16 bytes", 2, 130, 290, 66, KE_BF16,
     KE_F16, 0.5f, 0, .pad_a = 6, .pad_b = 6, .pad_c = 6},
};

START_TEST(hopper_layouts) { mm_rows_run(kWgRows, NELEM(kWgRows)); }
END_TEST

/* The same rows with A stored [M, K] and B [K, N] only (K-major A and
 * MN-major B on the Hopper path, kd_mma_nv's load_a and load_b_t on the
 * mma.sync one): the layout the planted wgmma descriptor bug must fail
 * while the mma.sync kernel's planted bug (in load_b) leaves it right
 * (tests/meson.build). */
START_TEST(hopper_nn) {
  for (size_t i = 0; i < NELEM(kWgRows); i++) {
    const gemm_case g = mm_row_case(&kWgRows[i]);
    check_gemm(&g);
  }
}
END_TEST

/* Operands whose memory ends at their last element: a [rows, cols] view
 * with row stride ld over exactly (rows - 1) * ld + cols elements (the
 * host emulation allocates to the byte), so that a kernel reading past a
 * row's end reads past its allocation in the last row: an error under
 * ASan (CI's sanitizer pass runs this suite) and under compute-sanitizer,
 * even where the values read would only reach outputs that are never
 * written.
 *
 * C = op(A) op(B) with A and B allocated to their last element; row
 * strides padded to a multiple of 8 (pad8: the 16-byte copies) or packed
 * (the element loads), M, N, K = 45, 29, 37 so that every edge chunk is
 * partial. */
static void exact_case(ke_dtype dt, int trans_a, int trans_b, int pad8) {
  const int64_t m = 45, n = 29, k = 37;
  const int64_t ar = trans_a ? k : m, ac = trans_a ? m : k;
  const int64_t br = trans_b ? n : k, bc = trans_b ? k : n;
  const int64_t lda = pad8 ? (ac + 7) / 8 * 8 : ac;
  const int64_t ldb = pad8 ? (bc + 7) / 8 * 8 : bc;
  exact_operand a, b;
  exact_make(&a, dt, ar, ac, lda);
  exact_make(&b, dt, br, bc, ldb);
  int64_t sc[2] = {m, n};
  ke_tensor c;
  kt_alloc(&c, KE_F32, 2, sc);
  ke_gemm_params p;
  ke_gemm_params_init(&p);
  p.trans_a = trans_a;
  p.trans_b = trans_b;
  kt_assert_ok(ke_gemm(kt_ctx(), &a.view, &b.view, &c, &p));
  double ref[45 * 29];
  ke_gemm_ref(&p, 1, m, n, k, a.host, lda, 0, b.host, ldb, 0, ref, n, 0);
  kt_tol tol = gemm_tol(KE_F32, &p, 1, m, n, k, a.host, lda, 0, b.host, ldb,
                        0, ref, n, 0);
  char name[96];
  snprintf(name, sizeof name, "exact_%s_%s%s_%s", ke_dtype_name(dt),
           trans_a ? "T" : "N", trans_b ? "T" : "N",
           pad8 ? "ld8" : "packed");
  kt_assert_close(name, &c, ref, tol);
  kt_free(&c);
  exact_free(&a);
  exact_free(&b);
}

START_TEST(exact_extents) {
  static const ke_dtype dts[] = {KE_F16, KE_BF16, KE_F32};
  for (size_t i = 0; i < 3; i++)
    for (int t = 0; t < 4; t++)
      for (int pad8 = 0; pad8 < 2; pad8++)
        exact_case(dts[i], t & 1, t >> 1, pad8);
}
END_TEST

/* ---- Batches and strides ------------------------------------------------------ */

static const gemm_case kBatched[] = {
    {.batch = 5, .m = 33, .n = 17, .k = 40, .alpha = 1, .all_t = 1},
    {.batch = 3, .m = 65, .n = 66, .k = 19, .ta = KE_BF16, .tc = KE_F16,
     .alpha = 1, .all_t = 1},
};

START_TEST(batched) { gemm_cases_run(kBatched, NELEM(kBatched)); }
END_TEST

/* One weight matrix for every batch: batch stride 0, a rank-2 operand, and
 * both inputs shared (every batch computes the same product). */
static const gemm_case kShared[] = {
    {.batch = 4, .m = 20, .n = 24, .k = 70, .alpha = 1, .share_b = 1,
     .all_t = 1},
    {.batch = 4, .m = 20, .n = 24, .k = 70, .alpha = 1, .share_a = 1,
     .all_t = 1},
    {.batch = 4, .m = 20, .n = 24, .k = 70, .alpha = 1, .share_a = 2,
     .all_t = 1},
    {.batch = 4, .m = 20, .n = 24, .k = 70, .alpha = 1, .share_a = 1,
     .share_b = 2},
};

START_TEST(batch_shared_operands) { gemm_cases_run(kShared, NELEM(kShared)); }
END_TEST

/* Row strides wider than the rows: views of wider matrices; C's gap
 * columns must come back untouched. */
static const gemm_case kLeading[] = {
    {.batch = 1, .m = 31, .n = 29, .k = 45, .alpha = 1, .pad_a = 3,
     .pad_b = 64, .pad_c = 5, .all_t = 1},
    {.batch = 3, .m = 31, .n = 29, .k = 45, .alpha = 1, .pad_a = 1,
     .pad_c = 17, .all_t = 1},
};

START_TEST(leading_dims) { gemm_cases_run(kLeading, NELEM(kLeading)); }
END_TEST

/* f32 x f32 takes a 256 x 128 tile of 16 x 8 blocks per thread where the
 * tiles cover every multiprocessor at least half (kernels/tile/gemm.h; the
 * host emulation counts 4, so these shapes reach it) and 128 x 128 of
 * 8 x 8 below: M and N past the tile edges in both, K over many slabs with
 * a partial last one, 16-byte loads (aligned rows) and element loads
 * (bases off by one element), K below one slab with a shared operand,
 * alpha and beta. */
static const gemm_case kF32Tiles[] = {
    {.batch = 1, .m = 300, .n = 134, .k = 77, .alpha = 1, .pad_a = 3,
     .pad_b = 2, .pad_c = 2, .label = "large tile, aligned", .all_t = 1},
    {.batch = 2, .m = 267, .n = 70, .k = 61, .alpha = 1, .pad_a = 4,
     .pad_b = 4, .pad_c = 4, .off_a = 1, .off_b = 1, .off_c = 1,
     .label = "large tile, bases off by one", .all_t = 1},
    {.batch = 3, .m = 33, .n = 40, .k = 3, .alpha = 1, .share_b = 1,
     .label = "k below a slab", .all_t = 1},
    {.batch = 1, .m = 129, .n = 65, .k = 200, .alpha = 0.5f, .beta = 2.0f,
     .pad_c = 1, .label = "small tile, alpha beta", .all_t = 1},
};

START_TEST(f32_tiles) { gemm_cases_run(kF32Tiles, NELEM(kF32Tiles)); }
END_TEST

/* ---- alpha and beta ---------------------------------------------------------- */

static const gemm_case kAlphaBeta[] = {
    {.batch = 1, .m = 45, .n = 38, .k = 50, .alpha = 0.5f, .beta = 2.0f,
     .all_t = 1},
    {.batch = 2, .m = 45, .n = 38, .k = 50, .tc = KE_BF16, .alpha = -1.25f,
     .beta = -0.5f},
};

START_TEST(alpha_beta) { gemm_cases_run(kAlphaBeta, NELEM(kAlphaBeta)); }
END_TEST

/* beta = 0 must not read C: NaN there must not reach the result. */
static const gemm_case kNanC[] = {
    /* the gaps keep their NaN: the kernel must not touch them */
    {.batch = 1, .m = 70, .n = 65, .k = 33, .alpha = 1, .pad_c = 3,
     .nan_c = 1, .all_t = 1},
    /* alpha 0: C = 0 whatever it held */
    {.batch = 1, .m = 70, .n = 65, .k = 33, .alpha = 0, .pad_c = 3,
     .nan_c = 1},
    {.batch = 1, .m = 7, .n = 33, .k = 113, .tc = KE_F16, .alpha = 1,
     .nan_c = 1},
};

START_TEST(beta_zero_ignores_nan_c) { gemm_cases_run(kNanC, NELEM(kNanC)); }
END_TEST

/* alpha = 0: C = beta * C, A and B unread (as BLAS), so NaN in them does
 * not propagate; on the SIMT kernel (f32) and the matrix-core one (f16,
 * bf16). */
static void alpha_zero_case(ke_dtype dt) {
  const int64_t m = 9, n = 70, k = 20;
  int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
  ke_tensor a, b, c;
  kt_alloc(&a, dt, 2, sa);
  kt_alloc(&b, dt, 2, sb);
  kt_alloc(&c, KE_F32, 2, sc);
  double *nan_a = malloc((size_t)(m * k) * sizeof *nan_a);
  ck_assert_ptr_nonnull(nan_a);
  for (int64_t i = 0; i < m * k; i++) nan_a[i] = NAN;
  kt_from_doubles(&a, nan_a);
  kt_fill_normal(&b, 0.0f, 1.0f);
  kt_fill_normal(&c, 0.0f, 1.0f);
  double *ref = kt_to_doubles(&c);
  for (int64_t i = 0; i < m * n; i++) ref[i] *= 1.5;
  ke_gemm_params p;
  ke_gemm_params_init(&p);
  p.alpha = 0.0f;
  p.beta = 1.5f;
  kt_assert_ok(ke_gemm(kt_ctx(), &a, &b, &c, &p));
  char name[64];
  snprintf(name, sizeof name, "alpha0_beta1.5_%s", ke_dtype_name(dt));
  kt_assert_close(name, &c, ref, kt_tol_default(KE_F32));
  free(ref);
  free(nan_a);
  kt_free(&a);
  kt_free(&b);
  kt_free(&c);
}

START_TEST(alpha_zero_skips_product) {
  alpha_zero_case(KE_F32);
  alpha_zero_case(KE_F16);
  alpha_zero_case(KE_BF16);
}
END_TEST

/* ---- Attention's products -------------------------------------------------- */

/* Scores = Q K^T / sqrt(d) over batch x heads, then weights V; prefill and
 * decode (one query against 1000 keys). */
static const gemm_case kAttention[] = {
    {.batch = 6, .m = 33, .n = 77, .k = 64, .trans_b = 1, .ta = KE_F16,
     .tb = KE_F16, .alpha = 0.125f},
    {.batch = 6, .m = 33, .n = 77, .k = 64, .trans_b = 1, .ta = KE_BF16,
     .tb = KE_BF16, .tc = KE_BF16, .alpha = 0.125f},
    {.batch = 6, .m = 33, .n = 64, .k = 77, .tb = KE_F16, .tc = KE_F16,
     .alpha = 1},
    {.batch = 8, .m = 1, .n = 1000, .k = 128, .trans_b = 1, .tb = KE_F16,
     .alpha = 0.0883883476f}, /* 1/sqrt(128) */
    {.batch = 8, .m = 1, .n = 128, .k = 1000, .tb = KE_F16, .alpha = 1},
};

START_TEST(attention_shapes) {
  gemm_cases_run(kAttention, NELEM(kAttention));
}
END_TEST

/* ---- Special values ------------------------------------------------------- */

/* NaN in A row 2 makes C row 2 NaN; +Inf in B column 5 makes C column 5
 * +-Inf by the sign of A's entries (NaN where signs mix), exactly as the
 * double reference computes: in f32 (SIMT) and in f16 and bf16 (matrix
 * units), in both layouts of B. */
static void special_case(ke_dtype dt, int trans_b) {
  const int64_t m = 6, n = 9, k = 40;
  int64_t sa[2] = {m, k}, sb[2] = {trans_b ? n : k, trans_b ? k : n};
  int64_t sc[2] = {m, n};
  ke_tensor a, b, c;
  kt_alloc(&a, dt, 2, sa);
  kt_alloc(&b, dt, 2, sb);
  kt_alloc(&c, KE_F32, 2, sc);
  kt_fill_uniform(&a, 0.5f, 1.0f); /* positive: Inf keeps its sign */
  kt_fill_normal(&b, 0.0f, 1.0f);
  double *ah = kt_to_doubles(&a), *bh = kt_to_doubles(&b);
  const int64_t ldb = trans_b ? k : n;
#define B_AT(kk, nn) bh[trans_b ? (nn) * ldb + (kk) : (kk) * ldb + (nn)]
  ah[2 * k + 17] = NAN;
  ah[4 * k + 3] = -ah[4 * k + 3]; /* row 4 mixes signs against B[3][5] */
  B_AT(3, 5) = INFINITY;
  B_AT(7, 5) = INFINITY;
#undef B_AT
  kt_from_doubles(&a, ah);
  kt_from_doubles(&b, bh);
  ke_gemm_params p;
  ke_gemm_params_init(&p);
  p.trans_b = trans_b;
  kt_assert_ok(ke_gemm(kt_ctx(), &a, &b, &c, &p));
  double ref[6 * 9];
  ke_gemm_ref(&p, 1, m, n, k, ah, k, 0, bh, ldb, 0, ref, n, 0);
  ck_assert_msg(isnan(ref[2 * n + 0]) && isinf(ref[0 * n + 5]) &&
                    isnan(ref[4 * n + 5]),
                "reference lost the special values it should carry");
  kt_tol tol =
      gemm_tol(KE_F32, &p, 1, m, n, k, ah, k, 0, bh, ldb, 0, ref, n, 0);
  char name[64];
  snprintf(name, sizeof name, "nan_row_inf_col_%s_%s", ke_dtype_name(dt),
           trans_b ? "NT" : "NN");
  kt_assert_close(name, &c, ref, tol);
  free(ah);
  free(bh);
  kt_free(&a);
  kt_free(&b);
  kt_free(&c);
}

START_TEST(special_values) {
  static const ke_dtype dts[] = {KE_F32, KE_F16, KE_BF16};
  for (size_t i = 0; i < 3; i++)
    for (int t = 0; t < 2; t++) special_case(dts[i], t);
}
END_TEST

/* ---- GPU-sized ------------------------------------------------------------ */

static const gemm_case kLarge[] = {
    {.batch = 1, .m = 1000, .n = 1000, .k = 1000, .alpha = 1},
    {.batch = 1, .m = 1023, .n = 1025, .k = 999, .trans_b = 1, .ta = KE_F16,
     .tb = KE_F16, .alpha = 1},
    {.batch = 1, .m = 1000, .n = 1000, .k = 1000, .trans_a = 1,
     .ta = KE_BF16, .tb = KE_BF16, .tc = KE_BF16, .alpha = 1, .beta = 1},
};

START_TEST(large_1000) { gemm_cases_run(kLarge, NELEM(kLarge)); }
END_TEST

/* A long K: the tolerance grows with K (gemm-check.h); here it must still
 * hold for 65536 terms. */
static const gemm_case kLongK[] = {
    {.batch = 1, .m = 17, .n = 33, .k = 65536, .alpha = 1},
    {.batch = 1, .m = 17, .n = 33, .k = 65536, .trans_a = 1, .ta = KE_BF16,
     .alpha = 1},
};

START_TEST(long_k) { gemm_cases_run(kLongK, NELEM(kLongK)); }
END_TEST

/* A long K on the matrix units, against the plain f32-sum bound. The
 * operands' mean of 1 makes every partial sum grow the same way, so a unit
 * that truncates its f32 accumulation (NVIDIA's, modelled by the host
 * emulation at warp 32) loses about 0.7 u of it per 16 products, all in
 * one direction: 1.2x the bound at K = 65536 when one accumulator takes
 * the whole sum. The kernel's promotion of the unit's sums into a separate
 * f32 sum is what keeps it inside. */
static const gemm_case kMmLongK = {
    .batch = 1, .m = 64, .n = 64, .k = 131072, .trans_b = 1, .ta = KE_BF16,
    .tb = KE_BF16, .alpha = 1, .mean = 1.0f};

START_TEST(matrix_cores_long_k) { check_gemm(&kMmLongK); }
END_TEST

/* More batches, and more 64-row tiles of M, than a grid dimension holds
 * (65535): the kernel walks both grid-stride. */
static const gemm_case kGridStride[] = {
    {.batch = 70000, .m = 3, .n = 5, .k = 7, .alpha = 1, .share_b = 1},
    {.batch = 1, .m = 65536 * 64 + 1, .n = 2, .k = 3, .trans_a = 1,
     .alpha = 1},
};

START_TEST(grid_stride) { gemm_cases_run(kGridStride, NELEM(kGridStride)); }
END_TEST

/* ---- Refusals -------------------------------------------------------------- */

START_TEST(refusals) {
  ke_context *ctx = kt_ctx();
  int64_t sa[2] = {4, 6}, sb[2] = {6, 5}, sc[2] = {4, 5}, s3[3] = {2, 4, 5};
  ke_tensor a, b, c, c3;
  kt_alloc(&a, KE_F32, 2, sa);
  kt_alloc(&b, KE_F32, 2, sb);
  kt_alloc(&c, KE_F32, 2, sc);
  kt_alloc(&c3, KE_F32, 3, s3);
  ke_gemm_params p;
  ke_gemm_params_init(&p);
  kt_assert_ok(ke_gemm(ctx, &a, &b, &c, &p));

  ke_tensor t = a;
  t.shape[1] = 0; /* K = 0 */
  kt_assert_status(ke_gemm(ctx, &t, &b, &c, &p), KE_ESHAPE);
  t = c;
  t.shape[0] = 0; /* M = 0 */
  kt_assert_status(ke_gemm(ctx, &a, &b, &t, &p), KE_ESHAPE);
  t = b;
  t.shape[0] = 5; /* K of B differs from K of A */
  kt_assert_status(ke_gemm(ctx, &a, &t, &c, &p), KE_ESHAPE);
  p.trans_b = 1; /* B [6, 5] transposed is [5, 6]: K 6 vs 5 */
  kt_assert_status(ke_gemm(ctx, &a, &b, &c, &p), KE_ESHAPE);
  p.trans_b = 2;
  kt_assert_status(ke_gemm(ctx, &a, &b, &c, &p), KE_EINVAL);
  p.trans_b = 0;
  t = a;
  t.stride[1] = 2; /* last dimension not contiguous */
  kt_assert_status(ke_gemm(ctx, &t, &b, &c, &p), KE_ESHAPE);
  t = a;
  t.stride[0] = 5; /* row stride below the row length */
  kt_assert_status(ke_gemm(ctx, &t, &b, &c, &p), KE_ESHAPE);
  t = a;
  t.stride[0] = -6;
  kt_assert_status(ke_gemm(ctx, &t, &b, &c, &p), KE_ESHAPE);
  t = a;
  t.stride[0] = INT64_MAX / 2; /* absurd: offsets overflow */
  kt_assert_status(ke_gemm(ctx, &t, &b, &c, &p), KE_ESHAPE);
  t = c3;
  t.stride[0] = 0; /* C batches would overlap */
  kt_assert_status(ke_gemm(ctx, &a, &b, &t, &p), KE_ESHAPE);
  t = c3;
  t.stride[0] = 19; /* below one matrix (20 elements) */
  kt_assert_status(ke_gemm(ctx, &a, &b, &t, &p), KE_ESHAPE);
  ke_tensor a3 = c3; /* A with batch 2 against a C of batch 1 */
  a3.shape[1] = 4;
  a3.shape[2] = 6;
  a3.stride[0] = 24;
  a3.stride[1] = 6;
  kt_assert_status(ke_gemm(ctx, &a3, &b, &c, &p), KE_ESHAPE);
  t = a;
  t.rank = 1;
  kt_assert_status(ke_gemm(ctx, &t, &b, &c, &p), KE_ESHAPE);
  t = a;
  t.dtype = (ke_dtype)9;
  kt_assert_status(ke_gemm(ctx, &t, &b, &c, &p), KE_EDTYPE);
  t = a; /* C aliases A: in-place is refused */
  t.shape[1] = 5;
  t.stride[0] = 5;
  kt_assert_status(ke_gemm(ctx, &a, &b, &t, &p), KE_EINVAL);
  p.alpha = NAN;
  kt_assert_status(ke_gemm(ctx, &a, &b, &c, &p), KE_EINVAL);
  p.alpha = 1.0f;
  p.beta = INFINITY;
  kt_assert_status(ke_gemm(ctx, &a, &b, &c, &p), KE_EINVAL);
  p.beta = 0.0f;
  kt_assert_status(ke_gemm(ctx, &a, NULL, &c, &p), KE_EINVAL);
  kt_assert_status(ke_gemm(NULL, &a, &b, &c, &p), KE_EINVAL);
  kt_free(&a);
  kt_free(&b);
  kt_free(&c);
  kt_free(&c3);
}
END_TEST

static const kt_test gemm_tests[] = {
    KT_TEST(shapes_f32),
    KT_TEST(shapes_f16),
    KT_TEST(shapes_bf16),
    KT_TEST(mixed_dtypes),
    KT_TEST(matrix_cores),
    KT_TEST(matrix_cores_large, .tags = "slow", .timeout_s = 600),
    KT_TEST(hopper_layouts),
    KT_TEST(hopper_nn),
    KT_TEST(exact_extents),
    KT_TEST(batched),
    KT_TEST(batch_shared_operands),
    KT_TEST(leading_dims),
    KT_TEST(f32_tiles),
    KT_TEST(alpha_beta),
    KT_TEST(beta_zero_ignores_nan_c),
    KT_TEST(alpha_zero_skips_product),
    KT_TEST(attention_shapes),
    KT_TEST(special_values),
    KT_TEST(large_1000, .tags = "slow", .timeout_s = 600),
    KT_TEST(long_k, .tags = "slow", .timeout_s = 600),
    KT_TEST(matrix_cores_long_k, .tags = "slow", .timeout_s = 600),
    KT_TEST(grid_stride, .tags = "slow", .timeout_s = 600),
    KT_TEST(refusals),
};

KT_SUITE(kt_suite_gemm, "gemm", "gpu,kernel", gemm_tests);
