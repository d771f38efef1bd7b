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

/* gemm_tol's pass over one row of C (item: batch * m + row): the partial
 * sums in the kernel's order, k ascending, a row of B at a time when B is
 * not transposed (the sums are the same, and B is read along its rows). */
typedef struct tol_job {
  const ke_gemm_params *p;
  int64_t m, n, k, lda, stride_a, ldb, stride_b, ldc, stride_c;
  const double *a, *b, *c;
  double *walk, *sum, *cmax; /* per row: the maxima over its outputs */
} tol_job;

static void tol_row(void *arg, int64_t item) {
  const tol_job *t = arg;
  const ke_gemm_params *p = t->p;
  const int64_t bi = item / t->m, i = item % t->m, n = t->n;
  const double *ab = t->a + bi * t->stride_a, *bb = t->b + bi * t->stride_b;
  double *partial = calloc((size_t)(2 * n), sizeof *partial);
  if (!partial) abort(); /* a worker thread cannot fail a test */
  double *squares = partial + n;
  for (int64_t q = 0; q < t->k; q++) {
    const double av = p->trans_a ? ab[q * t->lda + i] : ab[i * t->lda + q];
    for (int64_t j = 0; j < n; j++) {
      const double bv = p->trans_b ? bb[j * t->ldb + q] : bb[q * t->ldb + j];
      const double prod = av * bv;
      if (!isfinite(prod)) continue; /* specials propagate exactly */
      partial[j] += prod;
      squares[j] += partial[j] * partial[j];
    }
  }
  double walk = 0.0, sum = 0.0, cm = 0.0;
  for (int64_t j = 0; j < n; j++) {
    if (squares[j] > walk) walk = squares[j];
    if (fabs(partial[j]) > sum) sum = fabs(partial[j]);
    if (p->beta != 0.0f) {
      double cv = fabs(t->c[bi * t->stride_c + i * t->ldc + j]);
      if (isfinite(cv) && cv > cm) cm = cv;
    }
  }
  t->walk[item] = walk, t->sum[item] = sum, t->cmax[item] = cm;
  free(partial);
}

kt_tol gemm_tol(ke_dtype out, const ke_gemm_params *p, int64_t batch,
                int64_t m, int64_t n, int64_t k, const double *a,
                int64_t lda, int64_t stride_a, const double *b, int64_t ldb,
                int64_t stride_b, const double *c, int64_t ldc,
                int64_t stride_c) {
  const double u = ldexp(1.0, -24), lambda = 8.0;
  const int64_t rows = batch * m;
  double *per_row = malloc((size_t)(3 * rows) * sizeof *per_row);
  ck_assert_ptr_nonnull(per_row);
  tol_job job = {p, m, n, k, lda, stride_a, ldb, stride_b, ldc, stride_c,
                 a, b, c, per_row, per_row + rows, per_row + 2 * rows};
  ke_ref_parallel(rows, (double)rows * n * k, tol_row, &job);
  double walk_max = 0.0, sum_max = 0.0, c_max = 0.0;
  for (int64_t r = 0; r < rows; r++) {
    if (job.walk[r] > walk_max) walk_max = job.walk[r];
    if (job.sum[r] > sum_max) sum_max = job.sum[r];
    if (job.cmax[r] > c_max) c_max = job.cmax[r];
  }
  free(per_row);
  const double alpha = fabs((double)p->alpha), beta = fabs((double)p->beta);
  kt_tol tol = kt_tol_default(out);
  tol.atol = alpha * lambda * u * sqrt(walk_max) +
             2.0 * u * (alpha * sum_max + beta * c_max);
  if (out == KE_F16) tol.atol += ldexp(1.0, -25); /* subnormal half-ulp */
  return tol;
}

/* ---- One GEMM against the reference -------------------------------------- */

typedef struct gemm_case {
  int64_t batch, m, n, k;
  int trans_a, trans_b;
  ke_dtype ta, tb, tc;
  float alpha, beta;
  int64_t pad_a, pad_b, pad_c; /* row stride minus row length */
  int64_t off_a, off_b, off_c; /* view base, elements into the backing */
  int share_a, share_b;        /* 1: batch stride 0; 2: rank-2 operand */
  int nan_c;                   /* C holds NaN before the call */
  float mean;                  /* of the operands' normal values (sd 1) */
  const char *label;           /* prefix of the check's name, or NULL */
} gemm_case;

static gemm_case base_case(int64_t m, int64_t n, int64_t k) {
  gemm_case g;
  memset(&g, 0, sizeof g);
  g.batch = 1;
  g.m = m;
  g.n = n;
  g.k = k;
  g.ta = g.tb = g.tc = KE_F32;
  g.alpha = 1.0f;
  return g;
}

/* A stored matrix in a packed backing tensor [nb, rows, cols + pad], the
 * view the kernel gets (starting `off` elements in, off <= pad), and the
 * backing contents as doubles; `at` is the view's first element there. */
typedef struct operand {
  ke_tensor full, view;
  double *host, *at;
  int64_t ld, stride; /* in the backing's elements; stride 0 = shared */
} operand;

static void operand_make(operand *o, ke_dtype dt, int64_t batch,
                         int64_t rows, int64_t cols, int64_t pad, int64_t off,
                         int share, float mean) {
  ck_assert_msg(off <= pad, "a view offset (%lld) needs as much padding",
                (long long)off);
  const int64_t nb = share ? 1 : batch;
  int64_t shape[3] = {nb, rows, cols + pad};
  kt_alloc(&o->full, dt, 3, shape);
  kt_fill_normal(&o->full, mean, 1.0f);
  o->host = kt_to_doubles(&o->full);
  o->at = o->host + off;
  o->ld = cols + pad;
  o->stride = share ? 0 : rows * o->ld;
  o->view = o->full;
  o->view.data = (char *)o->full.data + off * (int64_t)ke_dtype_size(dt);
  if (share == 2 || (batch == 1 && share == 0)) { /* rank 2 */
    o->view.rank = 2;
    o->view.shape[0] = rows;
    o->view.shape[1] = cols;
    o->view.stride[0] = o->ld;
    o->view.stride[1] = 1;
  } else {
    o->view.shape[0] = batch;
    o->view.shape[2] = cols;
    o->view.stride[0] = o->stride;
  }
}

static void operand_free(operand *o) {
  free(o->host);
  kt_free(&o->full);
}

static void check_gemm(const gemm_case *g) {
  ke_gemm_params p;
  ke_gemm_params_init(&p);
  p.trans_a = g->trans_a;
  p.trans_b = g->trans_b;
  p.alpha = g->alpha;
  p.beta = g->beta;
  operand a, b, c;
  operand_make(&a, g->ta, g->batch, g->trans_a ? g->k : g->m,
               g->trans_a ? g->m : g->k, g->pad_a, g->off_a, g->share_a,
               g->mean);
  operand_make(&b, g->tb, g->batch, g->trans_b ? g->n : g->k,
               g->trans_b ? g->k : g->n, g->pad_b, g->off_b, g->share_b,
               g->mean);
  operand_make(&c, g->tc, g->batch, g->m, g->n, g->pad_c, g->off_c, 0, 0.0f);
  const int64_t c_elems = ke_tensor_numel(&c.full);
  if (g->nan_c) {
    for (int64_t i = 0; i < c_elems; i++) c.host[i] = NAN;
    kt_from_doubles(&c.full, c.host);
  }
  kt_assert_ok(ke_gemm(kt_ctx(), &a.view, &b.view, &c.view, &p));

  /* Expected: the reference in the view, C's gap columns unchanged. */
  kt_tol tol = gemm_tol(g->tc, &p, g->batch, g->m, g->n, g->k, a.at, a.ld,
                        a.stride, b.at, b.ld, b.stride, c.at, c.ld,
                        c.stride);
  double *ref = malloc((size_t)c_elems * sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  memcpy(ref, c.host, (size_t)c_elems * sizeof *ref);
  ke_gemm_ref(&p, g->batch, g->m, g->n, g->k, a.at, a.ld, a.stride, b.at,
              b.ld, b.stride, ref + g->off_c, c.ld, c.stride);
  char name[224];
  snprintf(name, sizeof name,
           "%s%sgemm_b%lld_%lldx%lldx%lld_%s%s_%s_%s_%s%s",
           g->label ? g->label : "", g->label ? ": " : "", (long long)g->batch,
           (long long)g->m, (long long)g->n, (long long)g->k,
           g->trans_a ? "T" : "N", g->trans_b ? "T" : "N",
           ke_dtype_name(g->ta), ke_dtype_name(g->tb), ke_dtype_name(g->tc),
           g->pad_a || g->pad_b || g->pad_c ? "_views" : "");
  kt_assert_close(name, &c.full, ref, tol);
  free(ref);
  operand_free(&a);
  operand_free(&b);
  operand_free(&c);
}

/* Every transpose combination of one shape and dtype triple. */
static void check_transposes(gemm_case g) {
  for (int t = 0; t < 4; t++) {
    g.trans_a = t & 1;
    g.trans_b = t >> 1;
    check_gemm(&g);
  }
}

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
    gemm_case g = base_case(kShapes[i][0], kShapes[i][1], kShapes[i][2]);
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
    gemm_case g = base_case(37, 45, 77);
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
 * (kernels/kd-gemm-mma.h), so these sizes reach each of them at warp 32
 * (NVIDIA: 128 x 128 x 64 at 130 x 386, 128 x 128 x 32 at 129 x 129, 64 x 128
 * below) and at warp 64 (CDNA: 128 x 128 from 130 x 130, 64 x 64 below).
 * The 16-byte copies need row strides that are multiples of 8 elements:
 * the "vec" rows pad M, N and K (equal mod 8) up to that in every
 * transpose, so their edge chunks are partial copies; packed odd sizes,
 * strides off by a few elements and bases off by one take the
 * element-load staging. */
typedef struct mm_row {
  const char *what;
  int64_t batch, m, n, k;
  ke_dtype t, tc;
  float alpha, beta;
  int64_t pad_a, pad_b, pad_c, off_a, off_b, off_c;
  int share_a, share_b, nan_c;
} mm_row;

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

static void mm_row_run(const mm_row *r) {
  gemm_case g = base_case(r->m, r->n, r->k);
  g.batch = r->batch;
  g.ta = g.tb = r->t;
  g.tc = r->tc;
  g.alpha = r->alpha;
  g.beta = r->beta;
  g.pad_a = r->pad_a;
  g.pad_b = r->pad_b;
  g.pad_c = r->pad_c;
  g.off_a = r->off_a;
  g.off_b = r->off_b;
  g.off_c = r->off_c;
  g.share_a = r->share_a;
  g.share_b = r->share_b;
  g.nan_c = r->nan_c;
  g.label = r->what;
  check_transposes(g);
}

START_TEST(matrix_cores) {
  for (size_t i = 0; i < sizeof kMmRows / sizeof kMmRows[0]; i++)
    mm_row_run(&kMmRows[i]);
}
END_TEST

/* GPU-sized, awkward: 1000 and 3001 in every dimension. */
static const mm_row kMmLarge[] = {
    {"1000 cubed", 1, 1000, 1000, 1000, KE_BF16, KE_F32, 1, 0, .pad_a = 0},
    {"3001 x 1000 x 17", 1, 3001, 1000, 17, KE_F16, KE_F16, 1, 0, .pad_a = 0},
    {"17 x 3001 x 1000", 1, 17, 3001, 1000, KE_BF16, KE_BF16, 0.5f, 1, .pad_a = 0},
    {"1000 x 17 x 3001", 1, 1000, 17, 3001, KE_F16, KE_F32, 1, 0, .pad_a = 0},
    {"3001 x 3001 x 1000", 1, 3001, 3001, 1000, KE_F16, KE_F32, 1, 0, .pad_a = 0},
    {"vec 1001 cubed", 1, 1001, 1001, 1001, KE_BF16, KE_F16, 1, 0,
     .pad_a = 7, .pad_b = 7},
    {"unaligned 1000 x 1001 x 999", 2, 1000, 1001, 999, KE_BF16, KE_F32, 1,
     0, .pad_a = 1, .pad_b = 3, .off_a = 1},
};

START_TEST(matrix_cores_large) {
  for (size_t i = 0; i < sizeof kMmLarge / sizeof kMmLarge[0]; i++)
    mm_row_run(&kMmLarge[i]);
}
END_TEST

/* Operands TMA can read (16-byte bases, row and batch strides; sizes equal
 * mod 8 and padded to a multiple of 8 in every transpose): on a compute
 * capability 9.0 GPU, and in emulation with KILN_EMU_SM=90 at warp 32,
 * the Hopper kernel (kernels/kd-gemm-wgmma.h) runs every one: both tile
 * widths (128 x 256 where four tiles fill the emulation's four
 * multiprocessors, else 128 x 128), edges in M, N and K, k shorter than a
 * slab and over several, batches with own and shared operands, alpha,
 * beta and every C dtype. Elsewhere they are ordinary matrix-core cases. */
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
};

START_TEST(hopper_layouts) {
  for (size_t i = 0; i < sizeof kWgRows / sizeof kWgRows[0]; i++)
    mm_row_run(&kWgRows[i]);
}
END_TEST

/* The same rows with A stored [M, K] and B [K, N] only (K-major A and
 * MN-major B on the Hopper path, kd_mma_nv's load_a and load_b_t on the
 * mma.sync one): the layout the planted wgmma descriptor bug must fail
 * while the mma.sync kernel's planted bug (in load_b) leaves it right
 * (tests/meson.build). */
START_TEST(hopper_nn) {
  for (size_t i = 0; i < sizeof kWgRows / sizeof kWgRows[0]; i++) {
    const mm_row *r = &kWgRows[i];
    gemm_case g = base_case(r->m, r->n, r->k);
    g.batch = r->batch;
    g.ta = g.tb = r->t;
    g.tc = r->tc;
    g.alpha = r->alpha;
    g.beta = r->beta;
    g.pad_a = r->pad_a;
    g.pad_b = r->pad_b;
    g.pad_c = r->pad_c;
    g.share_a = r->share_a;
    g.share_b = r->share_b;
    g.nan_c = r->nan_c;
    g.label = r->what;
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
 * written. */
typedef struct exact_operand {
  ke_tensor mem, view;
  double *host;
} exact_operand;

static void exact_make(exact_operand *o, ke_dtype dt, int64_t rows,
                       int64_t cols, int64_t ld) {
  int64_t extent[1] = {(rows - 1) * ld + cols};
  kt_assert_ok(ke_tensor_alloc(kt_ctx(), &o->mem, dt, 1, extent));
  kt_fill_normal(&o->mem, 0.0f, 1.0f);
  o->host = kt_to_doubles(&o->mem);
  o->view = o->mem;
  o->view.rank = 2;
  o->view.shape[0] = rows;
  o->view.shape[1] = cols;
  o->view.stride[0] = ld;
  o->view.stride[1] = 1;
}

static void exact_free(exact_operand *o) {
  free(o->host);
  kt_assert_ok(ke_tensor_free(kt_ctx(), &o->mem));
}

/* C = op(A) op(B) with A and B allocated to their last element; row
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

START_TEST(batched) {
  gemm_case g = base_case(33, 17, 40);
  g.batch = 5;
  check_transposes(g);
  g = base_case(65, 66, 19);
  g.batch = 3;
  g.ta = KE_BF16;
  g.tc = KE_F16;
  check_transposes(g);
}
END_TEST

/* One weight matrix for every batch: batch stride 0, a rank-2 operand, and
 * both inputs shared (every batch computes the same product). */
START_TEST(batch_shared_operands) {
  gemm_case g = base_case(20, 24, 70);
  g.batch = 4;
  g.share_b = 1;
  check_transposes(g);
  g.share_b = 0;
  g.share_a = 1;
  check_transposes(g);
  g.share_a = 2;
  g.share_b = 0;
  check_transposes(g);
  g.share_a = 1;
  g.share_b = 2;
  check_gemm(&g);
}
END_TEST

/* Row strides wider than the rows: views of wider matrices; C's gap
 * columns must come back untouched. */
START_TEST(leading_dims) {
  gemm_case g = base_case(31, 29, 45);
  g.pad_a = 3;
  g.pad_b = 64;
  g.pad_c = 5;
  check_transposes(g);
  g.batch = 3;
  g.pad_a = 1;
  g.pad_b = 0;
  g.pad_c = 17;
  check_transposes(g);
}
END_TEST

/* ---- alpha and beta ---------------------------------------------------------- */

START_TEST(alpha_beta) {
  gemm_case g = base_case(45, 38, 50);
  g.alpha = 0.5f;
  g.beta = 2.0f;
  check_transposes(g);
  g.alpha = -1.25f;
  g.beta = -0.5f;
  g.tc = KE_BF16;
  g.batch = 2;
  check_gemm(&g);
}
END_TEST

/* beta = 0 must not read C: NaN there must not reach the result. */
START_TEST(beta_zero_ignores_nan_c) {
  gemm_case g = base_case(70, 65, 33);
  g.nan_c = 1;
  g.pad_c = 3; /* the gaps keep their NaN: the kernel must not touch them */
  check_transposes(g);
  g.alpha = 0.0f; /* C = 0 whatever it held */
  check_gemm(&g);
  g = base_case(7, 33, 113);
  g.nan_c = 1;
  g.tc = KE_F16;
  check_gemm(&g);
}
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
START_TEST(attention_shapes) {
  gemm_case qk = base_case(33, 77, 64);
  qk.batch = 6;
  qk.trans_b = 1;
  qk.alpha = 0.125f;
  qk.ta = qk.tb = KE_F16;
  check_gemm(&qk);
  qk.tc = KE_BF16;
  qk.ta = qk.tb = KE_BF16;
  check_gemm(&qk);

  gemm_case pv = base_case(33, 64, 77);
  pv.batch = 6;
  pv.tb = KE_F16;
  pv.tc = KE_F16;
  check_gemm(&pv);

  gemm_case dec = base_case(1, 1000, 128);
  dec.batch = 8;
  dec.trans_b = 1;
  dec.alpha = 0.0883883476f; /* 1/sqrt(128) */
  dec.tb = KE_F16;
  check_gemm(&dec);
  gemm_case dec_pv = base_case(1, 128, 1000);
  dec_pv.batch = 8;
  dec_pv.tb = KE_F16;
  check_gemm(&dec_pv);
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

START_TEST(large_1000) {
  gemm_case g = base_case(1000, 1000, 1000);
  check_gemm(&g);
  g = base_case(1023, 1025, 999);
  g.trans_b = 1;
  g.ta = g.tb = KE_F16;
  check_gemm(&g);
  g = base_case(1000, 1000, 1000);
  g.trans_a = 1;
  g.ta = g.tb = KE_BF16;
  g.tc = KE_BF16;
  g.beta = 1.0f;
  check_gemm(&g);
}
END_TEST

/* A long K: the tolerance grows with K (gemm-check.h); here it must still
 * hold for 65536 terms. */
START_TEST(long_k) {
  gemm_case g = base_case(17, 33, 65536);
  check_gemm(&g);
  g.trans_a = 1;
  g.ta = KE_BF16;
  check_gemm(&g);
}
END_TEST

/* A long K on the matrix units, against the plain f32-sum bound. The
 * operands' mean of 1 makes every partial sum grow the same way, so a unit
 * that truncates its f32 accumulation (NVIDIA's, modelled by the host
 * emulation at warp 32) loses about 0.7 u of it per 16 products, all in
 * one direction: 1.2x the bound at K = 65536 when one accumulator takes
 * the whole sum. The kernel's promotion of the unit's sums into a separate
 * f32 sum is what keeps it inside. */
START_TEST(matrix_cores_long_k) {
  gemm_case g = base_case(64, 64, 131072);
  g.ta = g.tb = KE_BF16;
  g.trans_b = 1;
  g.mean = 1.0f;
  check_gemm(&g);
}
END_TEST

/* More batches, and more 64-row tiles of M, than a grid dimension holds
 * (65535): the kernel walks both grid-stride. */
START_TEST(grid_stride) {
  gemm_case g = base_case(3, 5, 7);
  g.batch = 70000;
  g.share_b = 1;
  check_gemm(&g);
  g = base_case(65536 * 64 + 1, 2, 3);
  g.trans_a = 1;
  check_gemm(&g);
}
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
