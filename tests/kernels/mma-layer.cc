/* The matrix-core layer (kernels/arch/mma.h) on the host emulation, at warp
 * 32 (kd_mma_nv, NVIDIA's fragment tables) and 64 (kd_mma_cdna, AMD's):
 * every load form (A and B, stored either way, in padded and swizzled
 * tiles), the multiply, the C element ownership, the row reduction and the
 * C -> A conversion of attention, each against a double reference. Run
 * a second time with `--planted layer` (a wrong fragment layout in the
 * layer, planted.h), where it must fail (meson: should_fail).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "arch/mma.h"
#include "planted.h"

static int g_failures;
#define CHECK(cond, ...)                                                     \
  do {                                                                       \
    if (!(cond)) {                                                           \
      if (g_failures++ < 20) {                                               \
        fprintf(stderr, "mma-layer: ");                                      \
        fprintf(stderr, __VA_ARGS__);                                        \
        fprintf(stderr, "\n");                                               \
      }                                                                      \
    }                                                                        \
  } while (0)

/* The product: C[M x N] = A[M x K] * B[K x N], two warps, each 16 rows. */
enum { M = 32, N = 32, K = 48 };

/* Element (r, c) of a tile stored with rows r and columns c (c along the
 * chunks). */
template <class Tile>
__device__ uint16_t &tile_at(const Tile &t, int r, int c) {
  return t.chunk(r, c / 8)[c % 8];
}

/* A is [M][K] in memory; a_t: staged [k][m]. B is [K][N] in memory;
 * b_t: staged [k][n] (else [n][k]). */
template <class Arch, typename T, bool AT, bool BT>
__global__ void product(const uint16_t *a, const uint16_t *b, float *c) {
  typedef kd_mma_tile<(AT ? M : K) / 8> TA;
  typedef kd_mma_tile<(BT ? N : K) / 8> TB;
  __shared__ uint16_t sa[(AT ? K : M) * TA::STRIDE * 8];
  __shared__ uint16_t sb[(BT ? K : N) * TB::STRIDE * 8];
  const TA ta = {sa};
  const TB tb = {sb};
  for (int i = threadIdx.x; i < M * K; i += blockDim.x) {
    const int m = i / K, k = i % K;
    if (AT) tile_at(ta, k, m) = a[i];
    else tile_at(ta, m, k) = a[i];
  }
  for (int i = threadIdx.x; i < K * N; i += blockDim.x) {
    const int k = i / N, n = i % N;
    if (BT) tile_at(tb, k, n) = b[i];
    else tile_at(tb, n, k) = b[i];
  }
  __syncthreads();

  const int w = threadIdx.x / Arch::WARP;
  typename Arch::frag_c acc[N / 16];
  for (int j = 0; j < N / 16; j++)
    for (int e = 0; e < Arch::C_ELEMS; e++) acc[j].v[e] = 0.0f;
  for (int ks = 0; ks < K / 16; ks++) {
    typename Arch::frag_a fa;
    if (AT) Arch::load_a_t(fa, ta, 16 * ks, 2 * w);
    else Arch::load_a(fa, ta, 16 * w, 2 * ks);
    for (int j = 0; j < N / 16; j++) {
      typename Arch::frag_b fb;
      if (BT) Arch::load_b_t(fb, tb, 16 * ks, 2 * j);
      else Arch::load_b(fb, tb, 16 * j, 2 * ks);
      Arch::template mma<T>(acc[j], fa, fb);
    }
  }
  for (int j = 0; j < N / 16; j++)
    for (int e = 0; e < Arch::C_ELEMS; e++)
      c[(16 * w + Arch::c_row(e)) * N + 16 * j + Arch::c_col(e)] = acc[j].v[e];
}

/* Attention's two steps on one 16 x 16 unit: S = A B (A [16][16], B stored
 * [n][k]), the row maxima of S through row_reduce, then O = round(S) V with
 * S as the A fragment (c_to_a) and V stored [k][n]. */
template <class Arch, typename T>
__global__ void two_step(const uint16_t *a, const uint16_t *b,
                         const uint16_t *v, float *o, float *rowmax,
                         float *rowget) {
  typedef kd_mma_tile<2> T16;
  __shared__ uint16_t sa[16 * 16], sb[16 * 16], sv[16 * 16];
  const T16 ta = {sa}, tb = {sb}, tv = {sv};
  for (int i = threadIdx.x; i < 256; i += blockDim.x) {
    tile_at(ta, i / 16, i % 16) = a[i];
    tile_at(tb, i % 16, i / 16) = b[i]; /* b[k][n] staged [n][k] */
    tile_at(tv, i / 16, i % 16) = v[i]; /* v[k][n] staged [k][n] */
  }
  __syncthreads();
  typename Arch::frag_a fa;
  typename Arch::frag_b fb;
  typename Arch::frag_c s = {}, out = {};
  Arch::load_a(fa, ta, 0, 0);
  Arch::load_b(fb, tb, 0, 0);
  Arch::template mma<T>(s, fa, fb);

  float part[Arch::ROW_SLOTS];
  for (int r = 0; r < Arch::ROW_SLOTS; r++) part[r] = -INFINITY;
  for (int e = 0; e < Arch::C_ELEMS; e++)
    part[Arch::c_slot(e)] = fmaxf(part[Arch::c_slot(e)], s.v[e]);
  for (int r = 0; r < Arch::ROW_SLOTS; r++) {
    const float m = Arch::row_reduce(part[r], kd_max_op());
    rowmax[Arch::lane() * Arch::ROW_SLOTS + r] = m;
    for (int col = 0; col < 16; col++)
      rowget[(Arch::lane() * Arch::ROW_SLOTS + r) * 16 + col] =
          Arch::row_get(s, r, col);
  }

  typename Arch::frag_a p;
  Arch::template c_to_a<T>(p, s);
  Arch::load_b_t(fb, tv, 0, 0);
  Arch::template mma<T>(out, p, fb);
  for (int e = 0; e < Arch::C_ELEMS; e++)
    o[Arch::c_row(e) * 16 + Arch::c_col(e)] = out.v[e];
}

template <typename T> static uint16_t to_bits(float f);
template <> uint16_t to_bits<kd_bf16>(float f) { return kd_f32_to_bf16_bits(f); }
template <> uint16_t to_bits<kd_half>(float f) { return kd_f32_to_f16_bits(f); }
template <typename T> static float of_bits(uint16_t b) {
  return kd_mma__cvt<T>::f32(b);
}

static uint16_t *dev16(size_t n) {
  void *p = nullptr;
  if (hipMalloc(&p, n * 2) != hipSuccess) abort();
  return (uint16_t *)p;
}
static float *devf(size_t n) {
  void *p = nullptr;
  if (hipMalloc(&p, n * 4) != hipSuccess) abort();
  return (float *)p;
}

static unsigned g_seed = 12345;
static float draw() { /* uniform in [-2, 2), fresh per call */
  g_seed = g_seed * 1664525u + 1013904223u;
  return (float)(g_seed >> 8) / (float)(1u << 24) * 4.0f - 2.0f;
}

template <class Arch, typename T, bool AT, bool BT>
static void check_product(const char *arch, const char *dt) {
  uint16_t *a = dev16(M * K), *b = dev16(K * N);
  float *c = devf(M * N);
  for (int i = 0; i < M * K; i++) a[i] = to_bits<T>(draw());
  for (int i = 0; i < K * N; i++) b[i] = to_bits<T>(draw());
  for (int i = 0; i < M * N; i++) c[i] = NAN;
  hipLaunchKernelGGL((product<Arch, T, AT, BT>), 1, 2 * Arch::WARP, 0, 0, a,
                     b, c);
  CHECK(hipGetLastError() == hipSuccess, "%s launch failed", arch);
  int bad = 0;
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      double want = 0;
      for (int k = 0; k < K; k++)
        want += (double)of_bits<T>(a[m * K + k]) * of_bits<T>(b[k * N + n]);
      const double got = c[m * N + n];
      if (!(fabs(got - want) <= 1e-5 * (1 + fabs(want))) && bad++ < 3)
        CHECK(false, "%s %s A%s B%s: C[%d][%d] = %g, want %g", arch, dt,
              AT ? "[k][m]" : "[m][k]", BT ? "[k][n]" : "[n][k]", m, n, got,
              want);
    }
  hipFree(a);
  hipFree(b);
  hipFree(c);
}

template <class Arch, typename T>
static void check_two_step(const char *arch, const char *dt) {
  uint16_t *a = dev16(256), *b = dev16(256), *v = dev16(256);
  float *o = devf(256), *rowmax = devf(Arch::WARP * Arch::ROW_SLOTS);
  float *rowget = devf(Arch::WARP * Arch::ROW_SLOTS * 16);
  for (int i = 0; i < 256; i++) {
    a[i] = to_bits<T>(draw());
    b[i] = to_bits<T>(draw());
    v[i] = to_bits<T>(draw());
  }
  hipLaunchKernelGGL((two_step<Arch, T>), 1, Arch::WARP, 0, 0, a, b, v, o,
                     rowmax, rowget);
  CHECK(hipGetLastError() == hipSuccess, "%s launch failed", arch);
  /* S as the emulated unit computes it, for row_get's bit-for-bit check:
   * NVIDIA's mma.sync sums the 16 products exactly and truncates to f32
   * (matrix-on-host.h), the MFMA adds them in k order with fused
   * multiply-add. */
  float s[256];
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      float acc = 0;
      double exact = 0;
      for (int k = 0; k < 16; k++) {
        const float x = of_bits<T>(a[i * 16 + k]), y = of_bits<T>(b[k * 16 + j]);
        acc = fmaf(x, y, acc);
        exact += (double)x * y;
      }
      if (Arch::WARP == 32) {
        acc = (float)exact;
        if (fabs((double)acc) > fabs(exact)) acc = nextafterf(acc, 0.0f);
      }
      s[i * 16 + j] = acc;
    }
  int bad = 0;
  for (int l = 0; l < Arch::WARP; l++)
    for (int r = 0; r < Arch::ROW_SLOTS; r++) {
      /* slot_row is the row lane l holds in slot r: recompute it here from
       * the same vendor table the layer documents. */
      const int row = Arch::WARP == 32 ? l / 4 + 8 * r : 4 * (l / 16) + r;
      float want = -INFINITY;
      for (int j = 0; j < 16; j++) want = fmaxf(want, s[row * 16 + j]);
      const float got = rowmax[l * Arch::ROW_SLOTS + r];
      if (!(fabsf(got - want) <= 1e-5f * (1 + fabsf(want))) && bad++ < 3)
        CHECK(false, "%s %s row max lane %d slot %d: %g, want %g", arch, dt,
              l, r, got, want);
      /* row_get: every element of the lane's row, bit for bit. */
      for (int col = 0; col < 16; col++) {
        const float g = rowget[(l * Arch::ROW_SLOTS + r) * 16 + col];
        if (g != s[row * 16 + col] && bad++ < 3)
          CHECK(false, "%s %s row_get lane %d slot %d col %d: %g, want %g",
                arch, dt, l, r, col, g, s[row * 16 + col]);
      }
    }
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 16; j++) {
      double want = 0;
      for (int k = 0; k < 16; k++)
        want += (double)of_bits<T>(to_bits<T>(s[i * 16 + k])) *
                of_bits<T>(v[k * 16 + j]);
      const double got = o[i * 16 + j];
      if (!(fabs(got - want) <= 1e-4 * (1 + fabs(want))) && bad++ < 3)
        CHECK(false, "%s %s P V: O[%d][%d] = %g, want %g", arch, dt, i, j,
              got, want);
    }
  hipFree(a);
  hipFree(b);
  hipFree(v);
  hipFree(o);
  hipFree(rowmax);
  hipFree(rowget);
}

template <class Arch, typename T>
static void check_arch(const char *arch, const char *dt) {
  check_product<Arch, T, false, false>(arch, dt);
  kt_planted_stop("mma-layer", g_failures);
  check_product<Arch, T, false, true>(arch, dt);
  kt_planted_stop("mma-layer", g_failures);
  check_product<Arch, T, true, false>(arch, dt);
  kt_planted_stop("mma-layer", g_failures);
  check_product<Arch, T, true, true>(arch, dt);
  kt_planted_stop("mma-layer", g_failures);
  check_two_step<Arch, T>(arch, dt);
  kt_planted_stop("mma-layer", g_failures);
}

int main(int argc, char **argv) {
  kt_planted_args("mma-layer", argc, argv, KD_PLANT_LAYER);
  if (kemu_set_warp_size(32) != hipSuccess) return 2;
  check_arch<kd_mma_nv, kd_bf16>("nv", "bf16");
  check_arch<kd_mma_nv, kd_half>("nv", "f16");
  if (kemu_set_warp_size(64) != hipSuccess) return 2;
  check_arch<kd_mma_cdna, kd_bf16>("cdna", "bf16");
  check_arch<kd_mma_cdna, kd_half>("cdna", "f16");
  if (g_failures) {
    fprintf(stderr, "mma-layer: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("mma-layer: every load form, product, row reduction, row_get and "
         "C->A conversion agrees at warp 32 and 64\n");
  return 0;
}
