// Tuning sweep for kiln's fused attention kernels (docs/performance.md):
// the matrix-core kernel (kernels/tile/attn_mma.h, NVIDIA fragment tables)
// and the register-tiled SIMT kernel (kernels/tile/attn_simt.h) in kiln's
// configurations and others, on the perf suite's shapes, each timed and
// checked against a double reference on sampled rows. A measuring tool,
// not part of the engine; the same source builds two ways:
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -DKILN_BACKEND_CUDA -Ikernels
//     -Iengine/include dev/attn-tune.cu -o attn-tune
//   ./attn-tune [--only TEXT] [--iters N]      (GPU: one line per config)
//
// and, on the host emulation (meson test attn-tune-check), `--check`: every
// configuration on small awkward shapes against the full reference, so a
// configuration is known right before a GPU ever times it.
//
// Timing as the perf suite: two rotating sets of Q/K/V/O (together more
// than twice the L2 at these sizes), warm-up, then the median of event-timed
// launches; FLOP = 4 D per visible (query, key) pair and head.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "tile/attn_mma.h"
#include "tile/attn_simt.h"
#include "kiln/attention.h"
#include "tune-hip.h"

// ---- Configurations ---------------------------------------------------------

typedef int (*launch_fn)(hipStream_t, const void *, const void *,
                         const void *, void *, const ke__attention_desc *);

struct config {
  const char *kind; // "mma" or "simt"
  ke_dtype dtype;
  int dp;
  const char *desc;
  launch_fn launch;
  const void *kernel; // for the register and occupancy report
  int threads;
  size_t smem;
  bool is_default;
  bool single_p; // P rounded once to 16 bits (PSPLIT=false): see sweep()
};

template <typename T> struct dtype_of;
template <> struct dtype_of<kd_bf16> { static constexpr ke_dtype v = KE_BF16; };
template <> struct dtype_of<kd_half> { static constexpr ke_dtype v = KE_F16; };
template <> struct dtype_of<float> { static constexpr ke_dtype v = KE_F32; };

template <typename T, class C>
static int launch_mma(hipStream_t s, const void *q, const void *k,
                      const void *v, void *o, const ke__attention_desc *a) {
  return kd_attn_mma_launch<kd_mma_nv, T, C>(s, q, k, v, o, a);
}
template <typename T, class C> static config mma_config(const char *desc) {
  typedef kd_attn_mma<kd_mma_nv, T, C> K;
  return {"mma", dtype_of<T>::v, C::DP, desc, launch_mma<T, C>,
          (const void *)kd_attn_mma_fwd<kd_mma_nv, T, C>, K::THREADS,
          K::SMEM_BYTES,
          std::is_same<C, typename kd_attn_mma_default<kd_mma_nv,
                                                       C::DP>::type>::value,
          !C::PSPLIT};
}

template <typename T, class C>
static int launch_simt(hipStream_t s, const void *q, const void *k,
                       const void *v, void *o, const ke__attention_desc *a) {
  return kd_attn_simt_launch<T, C>(s, q, k, v, o, a);
}
template <typename T, class C> static config simt_config(const char *desc) {
  typedef kd_attn_simt<T, C> K;
  return {"simt", dtype_of<T>::v, C::DP, desc, launch_simt<T, C>,
          (const void *)kd_attn_simt_fwd<T, C>, C::THREADS,
          K::SMEM_BYTES,
          std::is_same<C, typename kd_attn_simt_default<C::DP, true>::type>::value,
          false};
}

// MMA(T, DP, BN, WARPS, MU, STAGES, QREG, MINB, PSPLIT)
#define MMA(T, DP, BN, W, MU, ST, QR, MB, PS)                                 \
  mma_config<T, kd_attn_mma_cfg<DP, BN, W, MU, ST, QR, MB, PS>>(             \
      "BN" #BN " warps" #W " MU" #MU " stages" #ST " QREG=" #QR " MINB" #MB \
      " PSPLIT=" #PS)
// SIMT(T, DP, BM, BN, MINB, THREADS, UNROLL)
#define SIMT(T, DP, BM, BN, MB, TH, U)                                        \
  simt_config<T, kd_attn_simt_cfg<DP, BM, BN, MB, TH, U>>(                   \
      "BM" #BM " BN" #BN " MINB" #MB " threads" #TH " unroll" #U)

static std::vector<config> all_configs() {
  return {
      // D = 128 (the targets): kiln's (8 warps, BM 128, 3 stages), then
      // 4-warp blocks (BM 64: twice the L2 reads per FLOP, more blocks per
      // multiprocessor), stages, MU 2, Q in shared memory, and the cost of
      // the two-term P.
      MMA(kd_bf16, 128, 64, 8, 1, 3, true, 1, true),
      MMA(kd_bf16, 128, 64, 8, 1, 2, true, 1, true),
      MMA(kd_bf16, 128, 32, 8, 1, 3, true, 1, true),
      MMA(kd_bf16, 128, 64, 4, 1, 2, true, 2, true),
      MMA(kd_bf16, 128, 32, 4, 1, 2, true, 3, true),
      MMA(kd_bf16, 128, 64, 4, 1, 3, true, 2, true),
      MMA(kd_bf16, 128, 32, 4, 2, 2, false, 1, true),
      MMA(kd_bf16, 128, 64, 8, 1, 3, false, 1, true),
      MMA(kd_bf16, 128, 64, 8, 1, 3, true, 1, false),
      MMA(kd_half, 128, 64, 8, 1, 3, true, 1, true),
      MMA(kd_half, 128, 64, 4, 1, 2, true, 2, true),
      MMA(kd_half, 128, 64, 8, 1, 3, true, 1, false),
      // D = 64 and 256.
      MMA(kd_bf16, 64, 64, 8, 1, 3, true, 1, true),
      MMA(kd_bf16, 64, 128, 8, 1, 2, true, 1, true),
      MMA(kd_bf16, 64, 64, 4, 1, 2, true, 3, true),
      MMA(kd_bf16, 64, 64, 4, 2, 2, true, 2, true),
      MMA(kd_bf16, 64, 64, 8, 1, 3, true, 1, false),
      MMA(kd_bf16, 256, 32, 8, 1, 2, false, 1, true),
      MMA(kd_bf16, 256, 32, 4, 1, 2, false, 2, true),
      MMA(kd_bf16, 256, 64, 4, 1, 2, false, 1, true),
      MMA(kd_bf16, 256, 32, 8, 1, 3, false, 1, true),
      MMA(kd_bf16, 256, 32, 8, 1, 2, false, 1, false),
      // f32 on the SIMT units.
      SIMT(float, 128, 128, 64, 1, 256, 0),
      SIMT(float, 128, 128, 64, 1, 256, 2),
      SIMT(float, 128, 128, 64, 1, 256, 8),
      SIMT(float, 128, 64, 64, 2, 256, 0),
      SIMT(float, 128, 64, 64, 2, 128, 0),
      SIMT(float, 128, 32, 64, 2, 128, 0),
      SIMT(float, 64, 64, 64, 2, 128, 0),
      SIMT(float, 64, 64, 64, 2, 256, 0),
  };
}

// ---- Problems ---------------------------------------------------------------

struct problem {
  ke_dtype dtype;
  int64_t b, hq, hkv, s, d;
  int causal;
};

static const char *dt_name(ke_dtype t) {
  return t == KE_F32 ? "f32" : (t == KE_F16 ? "f16" : "bf16");
}
static size_t dt_size(ke_dtype t) { return t == KE_F32 ? 4 : 2; }
static int pad_dp(const config &c, int64_t d) {
  if (strcmp(c.kind, "simt") == 0) return (int)((d + 63) / 64 * 64);
  static const int dps[] = {32, 64, 80, 96, 128, 160, 192, 256};
  for (int p : dps)
    if (d <= p) return p;
  return 0;
}

static double pairs_of(const problem &p, int64_t i) { // keys row i sees
  if (!p.causal) return (double)p.s;
  return (double)(i + 1); // Sq == Sk: offset 0
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double normal() {
  auto u = [] {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return ((g_rng >> 11) + 0.5) / 9007199254740992.0;
  };
  return sqrt(-2.0 * log(u())) * cos(6.283185307179586 * u());
}

// A buffer of n elements of dtype t filled from N(0, 1), and its values as
// the kernel sees them (rounded to t).
static void make_input(ke_dtype t, size_t n, std::vector<unsigned char> &raw,
                       std::vector<double> &val) {
  raw.resize(n * dt_size(t));
  val.resize(n);
  for (size_t i = 0; i < n; i++) {
    const float f = (float)normal();
    if (t == KE_F32) {
      memcpy(&raw[4 * i], &f, 4);
      val[i] = f;
    } else {
      const uint16_t b =
          t == KE_BF16 ? kd_f32_to_bf16_bits(f) : kd_f32_to_f16_bits(f);
      memcpy(&raw[2 * i], &b, 2);
      val[i] = t == KE_BF16 ? kd_bf16_bits_to_f32(b) : kd_f16_bits_to_f32(b);
    }
  }
}
static double value_of(ke_dtype t, const unsigned char *p) {
  if (t == KE_F32) {
    float f;
    memcpy(&f, p, 4);
    return f;
  }
  uint16_t b;
  memcpy(&b, p, 2);
  return t == KE_BF16 ? kd_bf16_bits_to_f32(b) : kd_f16_bits_to_f32(b);
}

// One row of the reference (double) and its tolerance, the bound of
// docs/kernels-attention.md with lambda 6 (suites/perf/flop.c's
// perf_attn_tol).
static void reference_row(const problem &p, const std::vector<double> &q,
                          const std::vector<double> &k,
                          const std::vector<double> &v, int64_t b, int64_t h,
                          int64_t i, double *out, double *atol,
                          double *rtol, double *v_max) {
  const int64_t d = p.d, hk = h / (p.hq / p.hkv);
  const double *qi = &q[((b * p.hq + h) * p.s + i) * d];
  const double *kh = &k[(b * p.hkv + hk) * p.s * d];
  const double *vh = &v[(b * p.hkv + hk) * p.s * d];
  const int64_t n = (int64_t)pairs_of(p, i);
  const double scale = 1.0 / sqrt((double)d);
  std::vector<double> s(n);
  double m = -INFINITY, qn = 0, kn = 0, vmax = 0;
  for (int64_t e = 0; e < d; e++) qn += qi[e] * qi[e];
  for (int64_t j = 0; j < n; j++) {
    double dot = 0, kk = 0;
    for (int64_t e = 0; e < d; e++) {
      dot += qi[e] * kh[j * d + e];
      kk += kh[j * d + e] * kh[j * d + e];
      vmax = std::max(vmax, fabs(vh[j * d + e]));
    }
    kn = std::max(kn, kk);
    s[j] = scale * dot;
    m = std::max(m, s[j]);
  }
  double sum = 0;
  for (int64_t e = 0; e < d; e++) out[e] = 0;
  for (int64_t j = 0; j < n; j++) {
    const double w = exp(s[j] - m);
    sum += w;
    for (int64_t e = 0; e < d; e++) out[e] += w * vh[j * d + e];
  }
  for (int64_t e = 0; e < d; e++) out[e] /= sum;
  const double u = ldexp(1.0, -24), lambda = 6.0;
  const double smax = scale * sqrt(qn) * sqrt(kn);
  const double es = lambda * sqrt((double)d) * u * smax;
  const double sums = lambda * sqrt((double)n) * u;
  *v_max = vmax;
  *atol = (2 * (es + 3 * u * smax + 4 * u) + sums + 4 * u) * vmax;
  *rtol = sums;
  if (p.dtype != KE_F32) {
    *atol = std::max(*atol, 1e-5);
    *rtol = p.dtype == KE_F16 ? 1e-3 : 1.6e-2;
  }
}

struct run_opts {
  bool check_all; // every row (host check), else sampled rows
  int warmup, iters;
  double peak16, peak32; // TFLOP/s, 0 unknown
};

// Times and checks every configuration that fits the problem. Returns the
// number of configurations that failed their check.
static int sweep(const problem &p, const std::vector<config> &cfgs,
                 const run_opts &o) {
  const size_t es = dt_size(p.dtype);
  const size_t nq = (size_t)(p.b * p.hq * p.s * p.d);
  const size_t nk = (size_t)(p.b * p.hkv * p.s * p.d);
  std::vector<unsigned char> rq, rk, rv;
  std::vector<double> q, k, v;
  make_input(p.dtype, nq, rq, q);
  make_input(p.dtype, nk, rk, k);
  make_input(p.dtype, nk, rv, v);
  hipStream_t st;
  CHECK(hipStreamCreateWithFlags(&st, hipStreamNonBlocking));
  const int sets = o.check_all ? 1 : 2;
  void *dq[2], *dk[2], *dv[2], *dout[2];
  for (int i = 0; i < sets; i++) {
    CHECK(hipMalloc(&dq[i], nq * es));
    CHECK(hipMalloc(&dk[i], nk * es));
    CHECK(hipMalloc(&dv[i], nk * es));
    CHECK(hipMalloc(&dout[i], nq * es));
    CHECK(hipMemcpyAsync(dq[i], rq.data(), nq * es, hipMemcpyHostToDevice, st));
    CHECK(hipMemcpyAsync(dk[i], rk.data(), nk * es, hipMemcpyHostToDevice, st));
    CHECK(hipMemcpyAsync(dv[i], rv.data(), nk * es, hipMemcpyHostToDevice, st));
  }
  ke__attention_desc a = tune_attn_desc(p.b, p.hq, p.hkv, p.s, p.s, p.d);
  a.scale = (float)(1.0 / sqrt((double)p.d));
  a.causal = p.causal;
  a.offset = 0;
  a.kernel = KE_ATTN_KERNEL_TILED;

  // Rows to check: all, or 16 (first, last, spread).
  std::vector<int64_t> rows;
  const int64_t nrows = p.b * p.hq * p.s;
  if (o.check_all)
    for (int64_t r = 0; r < nrows; r++) rows.push_back(r);
  else
    for (int i = 0; i < 16; i++) rows.push_back(i * (nrows - 1) / 15);
  std::vector<double> ref(rows.size() * p.d), atol(rows.size()),
      rtol(rows.size()), vmax(rows.size());
  for (size_t i = 0; i < rows.size(); i++) {
    const int64_t r = rows[i];
    reference_row(p, q, k, v, r / (p.hq * p.s), r / p.s % p.hq, r % p.s,
                  &ref[i * p.d], &atol[i], &rtol[i], &vmax[i]);
  }
  /* A P rounded once to 16 bits moves each weight by up to half an ulp of
   * it, so the output by up to u16 / 2 * max|v| (u16 = 2^-8 bf16, 2^-11
   * f16): beyond kiln's tolerance near zero outputs
   * (docs/kernels-attention.md), so
   * such configurations are timed for comparison and checked against that
   * wider bound. */
  const double u16 = p.dtype == KE_BF16 ? 1.0 / 256 : 1.0 / 2048;
  double flop = 0;
  for (int64_t i = 0; i < p.s; i++) flop += pairs_of(p, i);
  flop *= 4.0 * (double)p.d * (double)(p.b * p.hq);

  char pname[96];
  snprintf(pname, sizeof pname, "%s b%lld h%lld/%lld s%lld d%lld%s",
           dt_name(p.dtype), (long long)p.b, (long long)p.hq,
           (long long)p.hkv, (long long)p.s, (long long)p.d,
           p.causal ? " causal" : "");
  int failed = 0;
  double best = 0, dflt = 0;
  std::vector<unsigned char> got(nq * es);
  for (const config &c : cfgs) {
    if (c.dtype != p.dtype || c.dp != pad_dp(c, p.d)) continue;
    std::vector<float> ms;
    const int err = tune_attn_times(st, o.warmup, o.iters, [&](int it) {
      const int set = it % sets;
      return c.launch(st, dq[set], dk[set], dv[set], dout[set], &a);
    }, &ms);
    if (err) {
      printf("%-28s | %-4s %-52s | launch failed: %s\n", pname, c.kind,
             c.desc, hipGetErrorString((hipError_t)err));
      failed++;
      continue;
    }
    const double med = ms[ms.size() / 2];
    // The check: the last launch's output (set (warmup + iters - 1) % sets).
    const int last = (o.warmup + o.iters - 1) % sets;
    CHECK(hipMemcpyAsync(got.data(), dout[last], nq * es,
                         hipMemcpyDeviceToHost, st));
    CHECK(hipStreamSynchronize(st));
    double worst = 0, worst_p = 0;
    bool nan = false;
    for (size_t i = 0; i < rows.size(); i++)
      for (int64_t e = 0; e < p.d; e++) {
        const double x = value_of(p.dtype, &got[(rows[i] * p.d + e) * es]);
        const double w = ref[i * p.d + e];
        const double tol = atol[i] + rtol[i] * fabs(w);
        if (!std::isfinite(x)) nan = true;
        worst = std::max(worst, fabs(x - w) / tol);
        worst_p = std::max(worst_p, fabs(x - w) / (tol + u16 / 2 * vmax[i]));
      }
    const bool ok = !nan && (c.single_p ? worst_p : worst) <= 1.0;
    failed += !ok;
    const double tf = flop / (med * 1e-3) / 1e12;
    const double peak = p.dtype == KE_F32 ? o.peak32 : o.peak16;
    char extra[96] = "";
#if defined(KILN_BACKEND_CUDA)
    cudaFuncAttributes fa;
    int nb = 0;
    if (cudaFuncGetAttributes(&fa, c.kernel) == cudaSuccess &&
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, c.kernel, c.threads,
                                                      c.smem) == cudaSuccess)
      snprintf(extra, sizeof extra, "regs %3d spill %4zu B  %d blk/SM  %3zu KiB",
               fa.numRegs, (size_t)fa.localSizeBytes, nb, c.smem >> 10);
#else
    snprintf(extra, sizeof extra, "%3zu KiB smem", c.smem >> 10);
#endif
    printf("%-28s | %-4s %-52s%s | %8.3f ms %7.1f TFLOP/s", pname, c.kind,
           c.desc, c.is_default ? " *" : "  ", med, tf);
    if (peak > 0) printf(" %5.1f %%", 100 * tf / peak);
    printf(" | %s | check %.3f %s", extra, worst, ok ? "ok" : "FAIL");
    if (c.single_p)
      printf(" (single-rounded P: %.3f of the wider bound)", worst_p);
    printf("\n");
    fflush(stdout);
    if (ok && !c.single_p) best = std::max(best, tf);
    if (ok && c.is_default) dflt = tf;
  }
  if (best > 0)
    printf("%-28s | best %.1f TFLOP/s, kiln's (*) %.1f\n", pname, best, dflt);
  for (int i = 0; i < sets; i++) {
    CHECK(hipFree(dq[i]));
    CHECK(hipFree(dk[i]));
    CHECK(hipFree(dv[i]));
    CHECK(hipFree(dout[i]));
  }
  CHECK(hipStreamDestroy(st));
  return failed;
}

int main(int argc, char **argv) {
  bool check = false;
  const char *only = nullptr;
  run_opts o = {false, 3, 20, 0, 0};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--check")) check = true;
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--iters") && i + 1 < argc) o.iters = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--check] [--only TEXT] [--iters N]\n", argv[0]);
      return 2;
    }
  }
  if (o.iters < 1) {
    fprintf(stderr, "attn-tune: --iters must be at least 1\n");
    return 2;
  }
  std::vector<problem> probs;
  if (check) {
#if defined(KILN_BACKEND_HOST)
    if (kemu_set_warp_size(32) != hipSuccess) return 2; // kd_mma_nv
#endif
    o.check_all = true;
    o.warmup = 0;
    o.iters = 1;
    // Every D the configurations pad from, GQA 2, a length of no tile.
    for (int64_t d : {64, 56, 128, 120, 256, 200})
      for (int causal = 0; causal < 2; causal++)
        for (ke_dtype t : {KE_BF16, KE_F16, KE_F32})
          probs.push_back({t, 1, 2, 1, 150, d, causal});
  } else {
    hipDeviceProp_t prop;
    CHECK(hipGetDeviceProperties(&prop, 0));
    printf("device: %s\n", prop.name);
    if (strstr(prop.name, "H100 PCIe")) o.peak16 = 756, o.peak32 = 51;
    else if (strstr(prop.name, "H100") || strstr(prop.name, "H200"))
      o.peak16 = 989, o.peak32 = 67;
    for (int causal = 0; causal < 2; causal++) {
      for (ke_dtype t : {KE_BF16, KE_F16, KE_F32})
        probs.push_back({t, 1, 16, 16, 4096, 128, causal});
      probs.push_back({KE_BF16, 1, 16, 16, 1024, 128, causal});
      probs.push_back({KE_F32, 1, 16, 16, 1024, 128, causal});
    }
    probs.push_back({KE_BF16, 1, 16, 16, 4096, 64, 0});
    probs.push_back({KE_BF16, 1, 16, 16, 4096, 256, 0});
    probs.push_back({KE_F32, 1, 16, 16, 4096, 64, 0});
  }
  const std::vector<config> cfgs = all_configs();
  int failed = 0;
  for (const problem &p : probs) {
    char name[64];
    snprintf(name, sizeof name, "%s s%lld d%lld%s", dt_name(p.dtype),
             (long long)p.s, (long long)p.d, p.causal ? " causal" : "");
    if (only && !strstr(name, only)) continue;
    failed += sweep(p, cfgs, o);
  }
  printf("attn-tune: %d configuration run(s) failed\n", failed);
  return failed ? 1 : 0;
}
