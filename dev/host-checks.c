/* The host side of kiln's two longest GPU-suite tests, timed at their real
 * sizes: gemm/matrix_cores_large (the tolerance walk gemm_tol, the float64
 * reference ke_gemm_ref and the check of each kMmLarge row in its four
 * transposes) and softmax/sizes_large_f32 (input fill, copy to doubles,
 * reference and check per shape). The kernels are left out: on the host
 * emulation they would take hours, so the output checked is the reference
 * rounded to the output dtype, written by kt_from_doubles (not timed).
 * Each piece prints wall and CPU seconds; a 64-bit FNV-1a hash of the raw
 * bytes of every reference, tolerance and check result shows that a faster
 * version computes the same bits. Built as its own runner (not by default,
 * never run by meson test):
 *   ninja -C build dev/kiln-host-checks
 *   KILN_REF_THREADS=1 build/dev/kiln-host-checks hostbench/gemm_large
 *   KILN_REF_THREADS=2 build/dev/kiln-host-checks hostbench/softmax_large
 * KILN_HOSTBENCH_ROWS=0,4 narrows the GEMM rows (indices into kMmLarge).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gemm/gemm-check.h"
#include "kiln/kernels.h"
#include "kiln/test.h"

/* ---- Clocks and hashes ----------------------------------------------------- */

typedef struct piece {
  const char *name;
  double wall, cpu; /* seconds, summed over calls */
} piece;

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct stamp {
  double wall, cpu;
} stamp;

static stamp start(void) {
  return (stamp){clock_s(CLOCK_MONOTONIC), clock_s(CLOCK_PROCESS_CPUTIME_ID)};
}

static void stop(piece *p, stamp s) {
  p->wall += clock_s(CLOCK_MONOTONIC) - s.wall;
  p->cpu += clock_s(CLOCK_PROCESS_CPUTIME_ID) - s.cpu;
}

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const unsigned char *b = data;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

#define FNV0 0xcbf29ce484222325ull

/* The fields of a check result one by one (the struct has padding). */
static uint64_t hash_result(uint64_t h, const kt_check_result *r) {
  const double d[] = {r->max_abs, r->max_rel, r->nmse, r->worst_actual,
                      r->worst_expected, r->rel_p50, r->rel_p90, r->rel_p99,
                      r->rel_p999, r->tol.atol, r->tol.rtol};
  const int64_t i[] = {r->n, r->worst_index, r->over, r->nan_count,
                       r->inf_count, r->special_mismatch, r->rel_n,
                       r->guard_damaged, r->pass};
  return fnv(fnv(h, d, sizeof d), i, sizeof i);
}

static void report(const piece *p, int n, const char *what, uint64_t h[],
                   const char *const hname[], int nh) {
  printf("%s (KILN_REF_THREADS=%d):\n", what, ke_ref_threads());
  double wall = 0.0, cpu = 0.0;
  for (int i = 0; i < n; i++) {
    printf("  %-14s wall %8.3f s  cpu %8.3f s\n", p[i].name, p[i].wall,
           p[i].cpu);
    wall += p[i].wall, cpu += p[i].cpu;
  }
  printf("  %-14s wall %8.3f s  cpu %8.3f s\n", "total", wall, cpu);
  for (int i = 0; i < nh; i++)
    printf("  hash %-9s %016llx\n", hname[i], (unsigned long long)h[i]);
  fflush(stdout);
}

/* Deterministic inputs in [-2, 2), rounded to dt as a device operand would
 * hold them (the fill itself is not the piece measured here). */
static void fill_host(double *v, int64_t n, ke_dtype dt, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    float f = (float)((double)(s >> 11) * 0x1p-53 * 4.0 - 2.0);
    if (dt == KE_F16) f = ke_f16_to_f32(ke_f32_to_f16(f));
    if (dt == KE_BF16) f = ke_bf16_to_f32(ke_f32_to_bf16(f));
    v[i] = f;
  }
}

/* ---- gemm/matrix_cores_large ------------------------------------------------- */

#define NROWS ((int)kMmLargeN)

/* A stored operand as check_gemm lays it out: [nb, rows, cols + pad]. */
typedef struct hmat {
  double *host, *at;
  int64_t ld, stride, elems;
} hmat;

static hmat hmat_make(ke_dtype dt, int64_t batch, int64_t rows, int64_t cols,
                      int64_t pad, int64_t off, int share, uint64_t seed) {
  hmat o;
  const int64_t nb = share ? 1 : batch;
  o.ld = cols + pad;
  o.elems = nb * rows * o.ld;
  o.host = malloc((size_t)o.elems * sizeof *o.host);
  ck_assert_ptr_nonnull(o.host);
  fill_host(o.host, o.elems, dt, seed);
  o.at = o.host + off;
  o.stride = share ? 0 : rows * o.ld;
  return o;
}

static int row_selected(int i) {
  const char *env = getenv("KILN_HOSTBENCH_ROWS");
  if (!env || !*env) return 1;
  for (const char *p = env; *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p) break;
    if (v == i) return 1;
    p = *end == ',' ? end + 1 : end;
  }
  return 0;
}

START_TEST(gemm_large) {
  piece pc[] = {{"gemm_tol", 0, 0}, {"ke_gemm_ref", 0, 0}, {"kt_check", 0, 0}};
  uint64_t h[3] = {FNV0, FNV0, FNV0};
  for (int ri = 0; ri < NROWS; ri++) {
    if (!row_selected(ri)) continue;
    const gemm_case g0 = mm_row_case(&kMmLarge[ri]);
    for (int t = 0; t < 4; t++) {
      gemm_case g = g0;
      g.trans_a = t & 1, g.trans_b = t >> 1;
      ke_gemm_params p;
      ke_gemm_params_init(&p);
      p.trans_a = g.trans_a, p.trans_b = g.trans_b;
      p.alpha = g.alpha, p.beta = g.beta;
      const uint64_t seed = (uint64_t)(ri * 4 + t) * 3;
      hmat a = hmat_make(g.ta, g.batch, g.trans_a ? g.k : g.m,
                         g.trans_a ? g.m : g.k, g.pad_a, g.off_a, g.share_a,
                         seed);
      hmat b = hmat_make(g.tb, g.batch, g.trans_b ? g.n : g.k,
                         g.trans_b ? g.k : g.n, g.pad_b, g.off_b, g.share_b,
                         seed + 1);
      hmat c = hmat_make(g.tc, g.batch, g.m, g.n, g.pad_c, g.off_c, 0,
                         seed + 2);

      stamp s = start();
      kt_tol tol = gemm_tol(g.tc, &p, g.batch, g.m, g.n, g.k, a.at, a.ld,
                            a.stride, b.at, b.ld, b.stride, c.at, c.ld,
                            c.stride);
      stop(&pc[0], s);
      h[0] = fnv(h[0], &tol.atol, sizeof tol.atol);

      double *ref = malloc((size_t)c.elems * sizeof *ref);
      ck_assert_ptr_nonnull(ref);
      memcpy(ref, c.host, (size_t)c.elems * sizeof *ref);
      s = start();
      ke_gemm_ref(&p, g.batch, g.m, g.n, g.k, a.at, a.ld, a.stride, b.at,
                  b.ld, b.stride, ref + g.off_c, c.ld, c.stride);
      stop(&pc[1], s);
      h[1] = fnv(h[1], ref, (size_t)c.elems * sizeof *ref);

      /* The kernel's stand-in: the reference rounded to C's dtype. */
      int64_t shape[3] = {c.stride ? g.batch : 1, g.m, c.ld};
      ke_tensor out;
      kt_alloc(&out, g.tc, 3, shape);
      kt_from_doubles(&out, ref);
      kt_check_result r;
      s = start();
      kt_check("gemm_large", &out, ref, tol, &r);
      stop(&pc[2], s);
      h[2] = hash_result(h[2], &r);
      kt_free(&out);
      free(ref);
      free(a.host), free(b.host), free(c.host);
    }
  }
  static const char *const names[] = {"tol", "ref", "check"};
  report(pc, 3, "gemm/matrix_cores_large host pieces", h, names, 3);
}
END_TEST

/* ---- softmax/sizes_large_f32 -------------------------------------------------- */

START_TEST(softmax_large) {
  static const int64_t shapes[][2] = {{1024, 4096}, {1024, 65536},
                                      {1024, 262144}};
  piece pc[] = {{"fill", 0, 0},   {"to_doubles", 0, 0}, {"softmax_ref", 0, 0},
                {"kt_check", 0, 0}, {"free", 0, 0}};
  uint64_t h[2] = {FNV0, FNV0};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    const int64_t rows = shapes[si][0], cols = shapes[si][1];
    int64_t shape[2] = {rows, cols};
    ke_tensor x, y;
    stamp s = start();
    kt_alloc(&x, KE_F32, 2, shape);
    kt_alloc(&y, KE_F32, 2, shape);
    kt_fill_normal(&x, 0.0f, 2.0f);
    stop(&pc[0], s);

    s = start();
    double *xd = kt_to_doubles(&x);
    stop(&pc[1], s);

    s = start();
    double *ref = malloc((size_t)(rows * cols) * sizeof *ref);
    ck_assert_ptr_nonnull(ref);
    ke_softmax_ref(xd, ref, rows, cols, NULL, rows);
    stop(&pc[2], s);
    h[0] = fnv(h[0], ref, (size_t)(rows * cols) * sizeof *ref);

    /* The kernel's stand-in, not timed. */
    kt_from_doubles(&y, ref);
    const kt_tol tol = {.atol = 1e-9, .rtol = 1e-5}; /* softmax_tol(f32) */
    kt_check_result r;
    s = start();
    kt_check("softmax_large", &y, ref, tol, &r);
    stop(&pc[3], s);
    h[1] = hash_result(h[1], &r);

    s = start();
    free(ref);
    free(xd);
    kt_free(&x);
    kt_free(&y);
    stop(&pc[4], s);
  }
  static const char *const names[] = {"ref", "check"};
  report(pc, 5, "softmax/sizes_large_f32 host pieces", h, names, 2);
}
END_TEST

static const kt_test hostbench_tests[] = {
    KT_TEST(gemm_large, .timeout_s = 3600),
    KT_TEST(softmax_large, .timeout_s = 3600),
};

KT_SUITE(kt_suite_hostbench, "hostbench", "bench", hostbench_tests);
