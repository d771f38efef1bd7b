// GEMM tile sweep for kiln's matrix-core and SIMT GEMM kernels (NVIDIA
// only; a measuring tool for docs/performance.md, not part of the engine).
//
// It includes the engine's own kernel headers (kernels/tile/gemm_mma.h,
// tile/gemm.h, tile/mx.h), instantiates them in several tile configurations
// beside the ones the engine picks, and for each configuration and shape
// prints the median time, TFLOP/s, and the worst sampled error as a
// fraction of the GEMM tolerance (a wrong configuration fails loudly).
// A last section measures how the matrix unit's own rounding sits inside
// the GEMM tolerance at long K (docs/kernels-gemm.md, GEMM, Tolerances).
//
//   built by `scripts/gpu.sh stage` into .device/gemm-tune:
//   nvcc -O3 -std=c++17 -arch=sm_90 -DKILN_BACKEND_CUDA -Ikernels \
//        -Iengine/include dev/gemm-tune.cu -o gemm-tune
//   ./gemm-tune [--quick]          (about two minutes on an H100)
//   ./gemm-tune --simt             (the f32 SIMT configurations alone)
//
// Method as the perf suite's: operand sets rotated over >= 2x L2 so no
// launch finds its inputs in L2, random inputs, 5 warm-up launches then
// the median of 30 event-timed ones; FLOP = 2 M N K.
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "tile/gemm_mma.h"
#include "tile/mx.h"
#include "tune.h"


static int g_iters = 30;
static size_t g_l2;

// ---- Inputs ---------------------------------------------------------------

// Uniform in [-1, 1) from a hash of (seed, i): fresh, reproducible.
__device__ __forceinline__ float tune_rand(uint64_t seed, uint64_t i) {
  uint64_t x = (seed + i) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return (float)(x >> 40) * (2.0f / 16777216.0f) - 1.0f;
}
template <typename T>
__global__ void tune_fill(T *p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    p[i] = kd_from_float<T>(tune_rand(seed, i));
}
__global__ void tune_fill_bytes(uint8_t *p, size_t n, uint64_t seed,
                                int lo, int span) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const float u = tune_rand(seed, i) * 0.5f + 0.5f;
    p[i] = (uint8_t)(span ? lo + (int)(u * span) % span : (int)(u * 256));
  }
}

template <typename T> static float host_value(const void *p, size_t i) {
  if constexpr (sizeof(T) == 4) return ((const float *)p)[i];
  else if constexpr (std::is_same<T, kd_half>::value)
    return kd_f16_bits_to_f32(((const uint16_t *)p)[i]);
  else return kd_bf16_bits_to_f32(((const uint16_t *)p)[i]);
}
template <typename T> static const char *dtype_name() {
  if constexpr (sizeof(T) == 4) return "f32";
  else if constexpr (std::is_same<T, kd_half>::value) return "f16";
  else return "bf16";
}

// ---- One problem: operand sets, timing, sampled check --------------------

// A [M, K] (row-major, or [K, M] when a_t), B [K, N] (or [N, K] when
// b_t), C [M, N], all of T, `sets` copies each.
template <typename T> struct problem {
  int64_t m, n, k;
  bool a_t, b_t;
  int sets;
  std::vector<T *> a, b, c;
};

template <typename T>
static problem<T> make_problem(int64_t m, int64_t n, int64_t k, bool a_t,
                               bool b_t, bool timed = true) {
  problem<T> p{m, n, k, a_t, b_t, 0, {}, {}, {}};
  const size_t set = (size_t)(m * k + k * n + m * n) * sizeof(T);
  p.sets = timed ? (int)std::max<size_t>(2, (2 * g_l2 + set - 1) / set) : 1;
  for (int s = 0; s < p.sets; s++) {
    T *x, *y, *z;
    CHECK(cudaMalloc(&x, (size_t)(m * k) * sizeof(T)));
    CHECK(cudaMalloc(&y, (size_t)(k * n) * sizeof(T)));
    CHECK(cudaMalloc(&z, (size_t)(m * n) * sizeof(T)));
    tune_fill<T><<<1024, 256>>>(x, (size_t)(m * k), 1000 + 3 * s);
    tune_fill<T><<<1024, 256>>>(y, (size_t)(k * n), 1001 + 3 * s);
    p.a.push_back(x);
    p.b.push_back(y);
    p.c.push_back(z);
  }
  CHECK(cudaDeviceSynchronize());
  return p;
}
template <typename T> static void free_problem(problem<T> &p) {
  for (int s = 0; s < p.sets; s++) {
    CHECK(cudaFree(p.a[s]));
    CHECK(cudaFree(p.b[s]));
    CHECK(cudaFree(p.c[s]));
  }
}

// Median ms of launch(set) over g_iters launches after 5 warm-ups.
template <class F> static float time_ms(int sets, F launch) {
  std::vector<float> t =
      tune_times(sets, 5, g_iters, [&](int set) { CHECK(launch(set)); });
  return t[t.size() / 2];
}

// Worst |got - ref| / tol over 8 sampled rows of an m x n x k product,
// the reference in double from a(i, q) b(j, q); tol as suites/gemm's
// gemm_tol (8 u sqrt(sum of squared partial sums) + 2 u |sum|) plus
// rtol |ref| per element. NaN propagates.
template <class A, class B, class Got>
static double worst_rows(int64_t m, int64_t n, int64_t k, double rtol, A &&a,
                         B &&b, Got &&got) {
  const double u = ldexp(1.0, -24);
  double worst = 0;
  for (int r = 0; r < 8; r++) {
    const int64_t i = r == 0 ? 0 : (r == 7 ? m - 1 : (m * r) / 7 + 3);
    for (int64_t j = 0; j < n; j++) {
      double s = 0, sq = 0;
      for (int64_t q = 0; q < k; q++) {
        s += a(i, q) * b(j, q);
        sq += s * s;
      }
      const double e = fabs(got(i, j) - s) /
                       (8 * u * sqrt(sq) + 2 * u * fabs(s) + rtol * fabs(s));
      if (!(e <= worst)) worst = e;
    }
  }
  return worst;
}

// worst_rows of set 0's C.
template <typename T>
static double check_rows(const problem<T> &p, const void *c, double rtol,
                         const std::vector<float> &bh) {
  const int64_t m = p.m, n = p.n, k = p.k;
  std::vector<float> ah((size_t)(m * k));
  std::vector<T> araw((size_t)(m * k));
  CHECK(cudaMemcpy(araw.data(), p.a[0], araw.size() * sizeof(T),
                   cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < ah.size(); i++) ah[i] = host_value<T>(araw.data(), i);
  std::vector<T> craw((size_t)(m * n));
  CHECK(cudaMemcpy(craw.data(), c, craw.size() * sizeof(T),
                   cudaMemcpyDeviceToHost));
  return worst_rows(
      m, n, k, rtol,
      [&](int64_t i, int64_t q) -> double { return p.a_t ? ah[q * m + i] : ah[i * k + q]; },
      [&](int64_t j, int64_t q) -> double { return p.b_t ? bh[j * k + q] : bh[q * n + j]; },
      [&](int64_t i, int64_t j) -> double { return host_value<T>(craw.data(), i * n + j); });
}

template <typename T> static std::vector<float> host_b(const problem<T> &p) {
  std::vector<T> raw((size_t)(p.k * p.n));
  CHECK(cudaMemcpy(raw.data(), p.b[0], raw.size() * sizeof(T),
                   cudaMemcpyDeviceToHost));
  std::vector<float> out(raw.size());
  for (size_t i = 0; i < raw.size(); i++) out[i] = host_value<T>(raw.data(), i);
  return out;
}

static void report(const char *kernel, const char *cfg, const char *dt,
                   const char *layout, int64_t m, int64_t n, int64_t k,
                   float ms, double err) {
  const double tflops = 2.0 * m * n * k / (ms * 1e-3) / 1e12;
  printf("%-6s %-28s %-4s %-2s %5lldx%5lldx%5lld %9.4f ms %7.1f TFLOP/s"
         "  err/tol %.3f%s\n",
         kernel, cfg, dt, layout, (long long)m, (long long)n, (long long)k,
         ms, tflops, err, err <= 1.0 ? "" : "  FAIL");
  fflush(stdout);
}

// ---- Matrix-core configurations --------------------------------------------

template <class Cfg, typename T, bool AKC, bool BKC>
static void run_mm(const char *name, problem<T> &p,
                   const std::vector<float> &bh) {
  constexpr int th = Cfg::WARPS * 32;
  typedef kd_gemm_mma_dense_stager<th, Cfg::BM, Cfg::BK, AKC, true> SA;
  typedef kd_gemm_mma_dense_stager<th, Cfg::BN, Cfg::BK, BKC, true> SB;
  const kd_gemm_mma_dims d = {p.m, p.n, p.k, 1, 1.0f, 0.0f};
  const int dt = sizeof(T) == 4 ? KE_F32 : (std::is_same<T, kd_half>::value
                                                 ? KE_F16 : KE_BF16);
  auto launch = [&](int s) {
    const kd_gemm_mma_dense a = {(const uint16_t *)p.a[s], AKC ? p.k : p.m, 0};
    const kd_gemm_mma_dense b = {(const uint16_t *)p.b[s], BKC ? p.k : p.n, 0};
    const kd_gemm_mma_out c = {p.c[s], dt, p.n, 0};
    return kd_gemm_mma_launch<kd_mma_nv, T, Cfg, AKC, BKC, SA, SB>(0, a, b, c,
                                                                   d);
  };
  const float ms = time_ms(p.sets, launch);
  CHECK((cudaError_t)launch(0));
  CHECK(cudaDeviceSynchronize());
  const double err = check_rows(p, p.c[0], sizeof(T) == 4 ? 1.3e-6
                                : (dt == KE_F16 ? 1e-3 : 1.6e-2), bh);
  report("mma", name, dtype_name<T>(), AKC ? (BKC ? "NT" : "NN")
                                           : (BKC ? "TT" : "TN"),
         p.m, p.n, p.k, ms, err);
}

// The engine's three NVIDIA configurations and candidates around them.
typedef kd_gemm_mma_cfg<128, 256, 64, 64, 64, 3> mm_128x256x64_s3;
typedef kd_gemm_mma_cfg<128, 256, 32, 64, 64, 4> mm_128x256x32_s4;
typedef kd_gemm_mma_cfg<256, 128, 32, 64, 64, 3> mm_256x128x32_s3;
typedef kd_gemm_mma_cfg<128, 128, 32, 32, 64, 4> mm_128x128_w8_s4;
typedef kd_gemm_mma_cfg<128, 128, 64, 64, 64, 3> mm_128x128x64_s3;
typedef kd_gemm_mma_cfg<64, 64, 32, 32, 32, 4> mm_64x64_s4;

template <typename T, bool AKC, bool BKC>
static void sweep_mm(int64_t m, int64_t n, int64_t k, bool all) {
  problem<T> p = make_problem<T>(m, n, k, !AKC, BKC);
  const std::vector<float> bh = host_b(p);
  run_mm<kd_gemm_mma_nv_large, T, AKC, BKC>("128x128x64 s3 (large)", p, bh);
  run_mm<kd_gemm_mma_nv_medium, T, AKC, BKC>("128x128x32 s4 (medium)", p, bh);
  run_mm<kd_gemm_mma_nv_small, T, AKC, BKC>("64x128x32 s4 (small)", p, bh);
  if (all) {
    run_mm<mm_128x256x32_s4, T, AKC, BKC>("128x256x32 s4", p, bh);
    run_mm<mm_128x256x64_s3, T, AKC, BKC>("128x256x64 s3", p, bh);
    run_mm<mm_256x128x32_s3, T, AKC, BKC>("256x128x32 s3", p, bh);
    run_mm<mm_128x128_w8_s4, T, AKC, BKC>("128x128x32 s4 8 warps", p, bh);
    run_mm<mm_128x128x64_s3, T, AKC, BKC>("128x128x64 s3", p, bh);
    run_mm<mm_64x64_s4, T, AKC, BKC>("64x64x32 s4 4 warps", p, bh);
  }
  free_problem(p);
}

// ---- SIMT configurations (f32) ---------------------------------------------

template <class Cfg>
static void run_simt(const char *name, problem<float> &p,
                     const std::vector<float> &bh) {
  auto launch = [&](int s) {
    const kd_gemm_dense<float> a =
        kd_gemm_dense_of<float>(p.a[s], p.a_t ? p.m : p.k, 0, !p.a_t);
    const kd_gemm_dense<float> b =
        kd_gemm_dense_of<float>(p.b[s], p.b_t ? p.k : p.n, 0, p.b_t);
    return kd_gemm_run<kd_gemm_dense<float>, kd_gemm_dense<float>, float,
                       Cfg>(0, a, b, p.c[s], p.n, 0, p.m, p.n, p.k, 1, 1.0f,
                            0.0f);
  };
  const float ms = time_ms(p.sets, launch);
  CHECK((cudaError_t)launch(0));
  CHECK(cudaDeviceSynchronize());
  report("simt", name, "f32", p.a_t ? (p.b_t ? "TT" : "TN")
                                    : (p.b_t ? "NT" : "NN"),
         p.m, p.n, p.k, ms, check_rows(p, p.c[0], 1.3e-6, bh));
}

static void sweep_simt(int64_t s, bool a_t, bool b_t, bool all) {
  problem<float> p = make_problem<float>(s, s, s, a_t, b_t);
  const std::vector<float> bh = host_b(p);
  run_simt<kd_gemm_default>("128x128x8 (engine small)", p, bh);
  run_simt<kd_gemm_f32_large>("256x128x8 w4x8 (engine large)", p, bh);
  if (all) {
    run_simt<kd_gemm_cfg<128, 128, 8, 2, true>>("128x128x8 warp 4x8", p, bh);
    run_simt<kd_gemm_cfg<128, 256, 8, 1>>("128x256x8, 1 block/SM", p, bh);
    run_simt<kd_gemm_cfg<128, 256, 8, 1, true>>("128x256x8 warp 4x8, 1 blk", p,
                                                bh);
    run_simt<kd_gemm_cfg<256, 128, 8, 1>>("256x128x8, 1 block/SM", p, bh);
    run_simt<kd_gemm_cfg<128, 128, 16, 1, true>>("128x128x16 warp 4x8, 1 blk",
                                                 p, bh);
    run_simt<kd_gemm_cfg<128, 128, 8, 1>>("128x128x8, 1 block/SM", p, bh);
  }
  free_problem(p);
}

// ---- MX GEMM: bf16 X x MXFP4 W on the matrix units -------------------------

/* E2M1 values at unit scale, codes 0..7 (8..15: their negatives). */
static const float kE2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

/* check_rows for Y = X W^T with W MXFP4 [N, K] (bf16 Y): 8 sampled rows. */
static double check_mx(const void *x, const void *w, const void *sc,
                       const void *y, int64_t m, int64_t n, int64_t k) {
  std::vector<uint16_t> xh((size_t)(m * k)), yh((size_t)(m * n));
  std::vector<uint8_t> wh((size_t)(n * k / 2)), sh((size_t)(n * k / 32));
  CHECK(cudaMemcpy(xh.data(), x, xh.size() * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(yh.data(), y, yh.size() * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(wh.data(), w, wh.size(), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(sh.data(), sc, sh.size(), cudaMemcpyDeviceToHost));
  std::vector<double> wd((size_t)(n * k));
  for (int64_t j = 0; j < n; j++)
    for (int64_t q = 0; q < k; q++) {
      const unsigned byte = wh[(size_t)(j * k + q) / 2];
      const unsigned code = q % 2 ? byte >> 4 : byte & 15u;
      const double v = ldexp(kE2m1[code & 7u], (int)sh[j * (k / 32) + q / 32] - 127);
      wd[j * k + q] = code & 8u ? -v : v;
    }
  return worst_rows(
      m, n, k, 1.6e-2,
      [&](int64_t i, int64_t q) -> double { return kd_bf16_bits_to_f32(xh[i * k + q]); },
      [&](int64_t j, int64_t q) { return wd[j * k + q]; },
      [&](int64_t i, int64_t j) -> double { return kd_bf16_bits_to_f32(yh[i * n + j]); });
}

template <class Cfg>
static void run_mx(const char *name, int64_t m, int64_t n, int64_t k) {
  constexpr int th = Cfg::WARPS * 32;
  typedef kd_gemm_mma_dense_stager<th, Cfg::BM, Cfg::BK, true, true> SA;
  typedef kd_mx_stager<KE_MXFP4_E2M1, th, Cfg::BN, Cfg::BK> SB;
  const size_t xb = (size_t)(m * k) * 2, wb = (size_t)(n * k) / 2,
               sb = (size_t)(n * k) / 32, yb = (size_t)(m * n) * 2;
  const int sets =
      (int)std::max<size_t>(2, (2 * g_l2 + xb + wb + sb + yb - 1) /
                                   (xb + wb + sb + yb));
  std::vector<void *> x(sets), w(sets), sc(sets), y(sets);
  for (int s = 0; s < sets; s++) {
    CHECK(cudaMalloc(&x[s], xb));
    CHECK(cudaMalloc(&w[s], wb));
    CHECK(cudaMalloc(&sc[s], sb));
    CHECK(cudaMalloc(&y[s], yb));
    tune_fill<kd_bf16><<<1024, 256>>>((kd_bf16 *)x[s], (size_t)(m * k), 7 + s);
    tune_fill_bytes<<<1024, 256>>>((uint8_t *)w[s], wb, 11 + s, 0, 0);
    tune_fill_bytes<<<1024, 256>>>((uint8_t *)sc[s], sb, 13 + s, 120, 15);
  }
  const kd_gemm_mma_dims d = {m, n, k, 1, 1.0f, 0.0f};
  auto launch = [&](int s) {
    const kd_gemm_mma_dense xa = {(const uint16_t *)x[s], k, 0};
    const kd_mx_mm wm = {(const uint8_t *)w[s], (const uint8_t *)sc[s], k / 2,
                         k / 32, 1};
    const kd_gemm_mma_out yo = {y[s], KE_BF16, n, 0};
    return kd_gemm_mma_launch<kd_mma_nv, kd_bf16, Cfg, true, true, SA, SB>(
        0, xa, wm, yo, d);
  };
  const float ms = time_ms(sets, launch);
  CHECK((cudaError_t)launch(0));
  CHECK(cudaDeviceSynchronize());
  report("mx", name, "bf16", "NT", m, n, k, ms,
         check_mx(x[0], w[0], sc[0], y[0], m, n, k));
  for (int s = 0; s < sets; s++) {
    CHECK(cudaFree(x[s]));
    CHECK(cudaFree(w[s]));
    CHECK(cudaFree(sc[s]));
    CHECK(cudaFree(y[s]));
  }
}

// ---- The matrix unit's rounding against the GEMM tolerance -----------------

// C (f32) = A B for bf16 inputs with a long K, M = N = 64: the worst error
// over all outputs as a fraction of gemm_tol's bound (atol from the partial
// sums in k order, rtol 1.3e-6). The bound assumes the mean-zero rounding
// of an in-order f32 sum; the matrix unit sums 16 products at a time with
// its own alignment and truncation (the kernel promotes each 16-k product
// into its f32 sum past KD_GEMM_MMA_PROMOTE_K), so this is where a difference
// would show.
static void numerics(int64_t k) {
  problem<kd_bf16> p = make_problem<kd_bf16>(64, 64, k, false, true, false);
  const std::vector<float> bh = host_b(p);
  float *c;
  CHECK(cudaMalloc(&c, 64 * 64 * sizeof(float)));
  const kd_gemm_mma_dense a = {(const uint16_t *)p.a[0], k, 0};
  const kd_gemm_mma_dense b = {(const uint16_t *)p.b[0], k, 0};
  const kd_gemm_mma_out co = {c, KE_F32, 64, 0};
  const kd_gemm_mma_dims d = {64, 64, k, 1, 1.0f, 0.0f};
  // The small configuration, promoted past KD_GEMM_MMA_PROMOTE_K as ke_gemm's.
  bool promoted = false;
  const int rc = kd_gemm_mma_with_promotion<kd_mma_nv, kd_gemm_mma_nv_small>(
      k, [&](auto cfg) {
        typedef decltype(cfg) Cfg;
        typedef kd_gemm_mma_dense_stager<128, Cfg::BM, Cfg::BK, true, true> SA;
        typedef kd_gemm_mma_dense_stager<128, Cfg::BN, Cfg::BK, true, true> SB;
        promoted = Cfg::PROMOTE;
        return kd_gemm_mma_launch<kd_mma_nv, kd_bf16, Cfg, true, true, SA, SB>(
            0, a, b, co, d);
      });
  CHECK((cudaError_t)rc);
  CHECK(cudaDeviceSynchronize());
  std::vector<float> ch(64 * 64);
  CHECK(cudaMemcpy(ch.data(), c, ch.size() * 4, cudaMemcpyDeviceToHost));
  std::vector<kd_bf16> araw((size_t)(64 * k));
  CHECK(cudaMemcpy(araw.data(), p.a[0], araw.size() * 2,
                   cudaMemcpyDeviceToHost));
  const double u = ldexp(1.0, -24);
  double walk_max = 0, sum_max = 0, worst_err = 0, worst_ratio = 0;
  std::vector<double> ref(64 * 64);
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 64; j++) {
      double s = 0, sq = 0;
      for (int64_t q = 0; q < k; q++) {
        s += (double)kd_bf16_bits_to_f32(araw[i * k + q].bits) * bh[j * k + q];
        sq += s * s;
      }
      ref[i * 64 + j] = s;
      walk_max = std::max(walk_max, sq);
      sum_max = std::max(sum_max, fabs(s));
    }
  const double atol = 8 * u * sqrt(walk_max) + 2 * u * sum_max;
  for (int i = 0; i < 64 * 64; i++) {
    const double e = fabs(ch[i] - ref[i]);
    worst_err = std::max(worst_err, e);
    worst_ratio = std::max(worst_ratio, e / (atol + 1.3e-6 * fabs(ref[i])));
  }
  printf("numerics bf16 64x64x%-6lld  worst |err| %.3g  atol %.3g  "
         "worst err/tol %.3f%s%s\n",
         (long long)k, worst_err, atol, worst_ratio,
         worst_ratio <= 1.0 ? "" : "  OVER", promoted ? "  (promoted)" : "");
  CHECK(cudaFree(c));
  free_problem(p);
}

#ifndef GEMM_TUNE_LIBRARY /* dev/gemm-hopper.cu includes the helpers */
int main(int argc, char **argv) {
  const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  const bool simt = argc > 1 && strcmp(argv[1], "--simt") == 0;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  g_l2 = (size_t)prop.l2CacheSize;
  if (quick) g_iters = 10;
  printf("gemm-tune on %s (%d SMs, L2 %zu MB); median of %d launches\n",
         prop.name, prop.multiProcessorCount, g_l2 >> 20, g_iters);
  printf("%-6s %-28s %-4s %-2s %17s %12s %15s\n", "kernel", "config", "dt",
         "AB", "M x N x K", "time", "rate");
  if (simt) { // the f32 SIMT configurations alone
    sweep_simt(4096, false, false, true);
    for (int64_t s : {8192, 2048, 1024}) sweep_simt(s, false, false, false);
    sweep_simt(4096, true, true, false);
    sweep_simt(4096, false, true, false);
    return 0;
  }
  for (int64_t s : {4096, 1024}) {
    sweep_mm<kd_bf16, true, false>(s, s, s, true);
    sweep_mm<kd_half, true, false>(s, s, s, !quick);
    sweep_mm<kd_bf16, true, true>(s, s, s, false);
  }
  sweep_mm<kd_bf16, true, false>(2048, 2048, 2048, false);
  sweep_mm<kd_bf16, true, false>(8192, 8192, 8192, false);
  for (int64_t s : {4096, 1024}) sweep_simt(s, false, false, true);
  sweep_simt(4096, true, true, false);
  run_mx<kd_gemm_mma_nv_large>("128x128x64 s3 (large) mxfp4", 4096, 4096, 4096);
  run_mx<kd_gemm_mma_nv_medium>("128x128x32 s4 (medium) mxfp4", 4096, 4096,
                                4096);
  for (int64_t k : {1024, 4096, 16384, 65536}) numerics(k);
  return 0;
}
#endif
