// The Hopper GEMM (kernels/tile/gemm_sm90.h) measured on an H100 beside the
// mma.sync kernel: every variant of kernels/tile/gemm_sm90_variants.h
// (promotion mode and interval, tile, L2 grouping of the tile walk,
// staggered consumers, the measuring-only ones) swept with sampled checks
// against double, and the inputs and outputs of the long-K accuracy table
// for each promotion interval, written for dev/gemm-hopper.py (which
// adds float64 and torch on the same inputs). A measuring tool for
// docs/performance.md, not part of the engine.
//
//   built by `scripts/gpu.sh stage` into .device/gemm-hopper:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
//        -DKILN_BACKEND_CUDA -DKD_SM90A -Ikernels -Iengine/include \
//        dev/gemm-hopper.cu -o gemm-hopper
//   ./gemm-hopper [--quick] [--dump DIR] [--only TAG[,TAG...]] [--once]
//                 [--shape MxNxK] [--mx]
// --dump creates DIR (not its parents) if missing.
// --only runs the variants whose tag contains one of the TAGs (printed);
// --once launches each once at 4096^3 bf16, untimed (for a profiler).
// --shape times one problem (bf16 and f16, B [K, N]) instead of the sweep's.
// --mx times the MX GEMM's Hopper kernel (tile/mx_sm90.h: bf16 X, W
// of each MX format decoded by the producer, bf16 Y) beside the engine's
// 128 x 128 dense kernel on B [N, K], at --shape's problem or 4096^3; no
// check (the suites check it: mxfp/gemm_*).
//
// Timing as the perf suite's and scripts/torch-compare.py's: operand sets
// over 2x L2, 5 warm-ups, then 30 launches queued back to back, each
// between two events, the median (tune_times_queued). One variant
// (256s4-serial-e2) is also timed as gemm-tune times (a synchronize after
// each launch: its host setup inside the events), marked "synced".
#define GEMM_TUNE_LIBRARY
#include "gemm-tune.cu"

#include <errno.h>
#include <sys/stat.h>

#include "tile/mx_sm90.h"
#include "tile/gemm_sm90_variants.h"

static const char *g_only;
static bool g_once;

template <typename T> static int dt_of() {
  return std::is_same<T, kd_half>::value ? KE_F16 : KE_BF16;
}

// C (of Tc) = A B with the Hopper kernel: A [M, K] row-major, B [K, N]
// (NN) or [N, K] (NT).
template <class Cfg, typename T, bool BKC>
static int wg_launch(const void *a, const void *b, void *c, int cdt,
                     int64_t m, int64_t n, int64_t k) {
  const kd_gemm_mma_dense da = {(const uint16_t *)a, k, 0};
  const kd_gemm_mma_dense db = {(const uint16_t *)b, BKC ? k : n, 0};
  const kd_gemm_mma_out co = {c, cdt, n, 0};
  const kd_gemm_mma_dims d = {m, n, k, 1, 1.0f, 0.0f};
  kd_tmap ta, tb, tc;
  int ab, bb, ct;
  if (kd_gemm_sm90_maps<Cfg>(da, true, db, BKC, co, d, &ta, &tb, &tc, &ab, &bb,
                             &ct) != 0) {
    fprintf(stderr, "tensor maps refused\n");
    exit(1);
  }
  /* A [M, K] only: kd_gemm_sm90_run would build all four layouts. */
  return kd_gemm_sm90_launch<T, Cfg, true, BKC>(0, ta, tb, tc, co, d, ab, bb,
                                                ct);
}

// --only's comma-separated list: a tag is wanted where it contains one.
static bool wanted(const char *tag) {
  if (!g_only) return true;
  for (const char *p = g_only; *p;) {
    const char *e = strchr(p, ',');
    const size_t len = e ? (size_t)(e - p) : strlen(p);
    for (const char *t = tag; len && strlen(t) >= len; t++)
      if (!strncmp(t, p, len)) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

template <class Cfg, typename T, bool BKC>
static void run_wg(const char *tag, problem<T> &p,
                   const std::vector<float> &bh) {
  if (!wanted(tag)) return;
  auto launch = [&](int s) {
    return wg_launch<Cfg, T, BKC>(p.a[s], p.b[s], p.c[s], dt_of<T>(), p.m,
                                  p.n, p.k);
  };
  if (g_once) {
    CHECK((cudaError_t)launch(0));
    CHECK(cudaDeviceSynchronize());
    printf("launched %s once\n", tag);
    return;
  }
  auto checked = [&](int s) { CHECK((cudaError_t)launch(s)); };
  const float ms = tune_times_queued(p.sets, 5, g_iters, checked)[g_iters / 2];
  const bool synced = std::is_same<Cfg, kd_gemm_sm90_v256_e2>::value;
  const float ms_synced =
      synced ? tune_times(p.sets, 5, g_iters, checked)[g_iters / 2] : 0;
  CHECK((cudaError_t)launch(0));
  CHECK(cudaDeviceSynchronize());
  const double err = check_rows(p, p.c[0], dt_of<T>() == KE_F16 ? 1e-3 : 1.6e-2, bh);
  const char *layout = BKC ? "NT" : "NN";
  report("wgmma", tag, dtype_name<T>(), layout, p.m, p.n, p.k, ms, err);
  if (synced) {
    char name[64];
    snprintf(name, sizeof name, "%s synced", tag);
    report("wgmma", name, dtype_name<T>(), layout, p.m, p.n, p.k, ms_synced,
           err);
  }
}

// Every variant of the Hopper kernel on one problem; `all` adds the
// mma.sync kernel.
template <typename T, bool BKC>
static void sweep(int64_t m, int64_t n, int64_t k, bool all) {
  problem<T> p = make_problem<T>(m, n, k, false, BKC, !g_once);
  const std::vector<float> bh = g_once ? std::vector<float>() : host_b(p);
#define KD_GEMM_SM90_RUN(cfg, tag) run_wg<cfg, T, BKC>(tag, p, bh);
  KD_GEMM_SM90_VARIANTS(KD_GEMM_SM90_RUN)
#undef KD_GEMM_SM90_RUN
  if (all && !g_once && !g_only)
    run_mm<kd_gemm_mma_nv_large, T, true, BKC>("mma.sync 128x128x64 s3", p, bh);
  free_problem(p);
}

// --mx: the MX GEMM beside the dense kernel on the same tile, NT. W's
// codes random bytes, scales 2^-2 .. 2^2 (the table path); operand sets
// over 2x L2 as the sweep's.
template <int F, int PROBE = 0> static void mx_one(problem<kd_bf16> &p) {
  constexpr int BITS = kd_mx_traits<F>::bits;
  const int64_t rb = p.k * BITS / 8, nb = p.k / KE_MX_BLOCK;
  std::vector<uint8_t *> codes, scales;
  std::vector<uint8_t> h((size_t)(p.n * rb)), hs((size_t)(p.n * nb));
  uint64_t r = 12345 + F;
  for (auto &x : h) x = (uint8_t)((r = r * 6364136223846793005ull + 1) >> 56);
  for (auto &x : hs) x = (uint8_t)(125 + ((r = r * 6364136223846793005ull + 1) >> 61) % 5);
  for (int s = 0; s < p.sets; s++) {
    uint8_t *c, *sc;
    CHECK(cudaMalloc(&c, h.size()));
    CHECK(cudaMalloc(&sc, hs.size()));
    CHECK(cudaMemcpy(c, h.data(), h.size(), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(sc, hs.data(), hs.size(), cudaMemcpyHostToDevice));
    codes.push_back(c);
    scales.push_back(sc);
  }
  auto launch = [&](int s) {
    const kd_gemm_mma_dense dx = {(const uint16_t *)p.a[s], p.k, 0};
    const kd_mx_mm w = {codes[s], scales[s], rb, nb, 1};
    const kd_gemm_mma_out y = {p.c[s], KE_BF16, p.n, 0};
    const kd_gemm_mma_dims d = {p.m, p.n, p.k, 1, 1.0f, 0.0f};
    const int rc =
        kd_mx_sm90_run<F, kd_gemm_sm90_v128_e2_pp_tma, PROBE>(0, dx, w, y, d);
    CHECK((cudaError_t)rc);
  };
  const float ms = tune_times_queued(p.sets, 5, g_iters, launch)[g_iters / 2];
  static const char *const names[] = {"mx e2m1 128s6-pp-tma", "mx e2m3 128s6-pp-tma",
                                      "mx e3m2 128s6-pp-tma"};
  static const char *const probes[] = {"", " no-W-loads", " no-decode",
                                       " no-fence"};
  char name[64];
  snprintf(name, sizeof name, "%s%s", names[F], probes[PROBE]);
  report("wgmma", name, "bf16", "NT", p.m, p.n, p.k, ms, 0.0);
  for (int s = 0; s < p.sets; s++) {
    CHECK(cudaFree(codes[s]));
    CHECK(cudaFree(scales[s]));
  }
}

static void mx(int64_t m, int64_t n, int64_t k) {
  problem<kd_bf16> p = make_problem<kd_bf16>(m, n, k, false, true, true);
  const std::vector<float> bh = host_b(p);
  run_wg<kd_gemm_sm90_v128_e2_pp_tma, kd_bf16, true>("128s6-serial-e2-pp-tma",
                                                     p, bh);
  mx_one<KE_MXFP4_E2M1>(p);
  mx_one<KE_MXFP6_E2M3>(p);
  mx_one<KE_MXFP6_E3M2>(p);
  /* Measuring probes (kd_mx_sm90_b's PROBE; wrong results, unchecked): the
   * producer without W's loads, without the decode, without the fence. */
  mx_one<KE_MXFP4_E2M1, 1>(p);
  mx_one<KE_MXFP4_E2M1, 2>(p);
  mx_one<KE_MXFP4_E2M1, 3>(p);
  mx_one<KE_MXFP6_E2M3, 1>(p);
  mx_one<KE_MXFP6_E2M3, 2>(p);
  free_problem(p);
}

// Accuracy inputs: A [256, K], B [K, 256] of T from the tool's generator;
// C in f32 from the Hopper kernel promoting every 1, 2 and 4 slabs, every
// 2 staggered (consumer 1's intervals a slab later) and unpromoted (128 x
// 256 tiles, serial: the arithmetic is the intervals', not the mode's),
// and from the mma.sync kernel. Written raw to
// DIR/acc-<dtype>-<K>.{a,b,wg-e1,wg-e2,wg-e4,wg-e2-stagger,wg-raw,mma}.
template <typename T> static void dump(const char *dir, int64_t k) {
  const int64_t m = 256, n = 256;
  problem<T> p = make_problem<T>(m, n, k, false, false, false);
  float *c;
  CHECK(cudaMalloc(&c, (size_t)(m * n) * 4));
  std::vector<uint16_t> ha((size_t)(m * k)), hb((size_t)(k * n));
  std::vector<float> hc((size_t)(m * n));
  char path[512];
  auto put = [&](const char *ext, const void *data, size_t bytes) {
    snprintf(path, sizeof path, "%s/acc-%s-%lld.%s", dir, dtype_name<T>(),
             (long long)k, ext);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, bytes, f) != bytes || fclose(f) != 0) {
      fprintf(stderr, "cannot write %s\n", path);
      exit(1);
    }
  };
  auto fetch = [&](const char *ext) {
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(hc.data(), c, hc.size() * 4, cudaMemcpyDeviceToHost));
    put(ext, hc.data(), hc.size() * 4);
    CHECK(cudaMemset(c, 0xff, hc.size() * 4)); /* NaN for the next */
  };
  CHECK(cudaMemcpy(ha.data(), p.a[0], ha.size() * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hb.data(), p.b[0], hb.size() * 2, cudaMemcpyDeviceToHost));
  put("a", ha.data(), ha.size() * 2);
  put("b", hb.data(), hb.size() * 2);
  CHECK(cudaMemset(c, 0xff, hc.size() * 4));
  auto wg = [&](auto cfg, const char *ext) {
    typedef decltype(cfg) Cfg;
    const int rc = wg_launch<Cfg, T, false>(p.a[0], p.b[0], c, KE_F32, m, n, k);
    CHECK((cudaError_t)rc);
    fetch(ext);
  };
  wg(kd_gemm_sm90_v256_e1(), "wg-e1");
  wg(kd_gemm_sm90_v256_e2(), "wg-e2");
  wg(kd_gemm_sm90_v256_e4(), "wg-e4");
  wg(kd_gemm_sm90_v256_e2_stagger(), "wg-e2-stagger");
  wg(kd_gemm_sm90_v256_raw(), "wg-raw");
  {
    typedef kd_gemm_mma_nv_small Cfg;
    typedef kd_gemm_mma_dense_stager<Cfg::WARPS * 32, Cfg::BM, Cfg::BK, true,
                                     true>
        SA;
    typedef kd_gemm_mma_dense_stager<Cfg::WARPS * 32, Cfg::BN, Cfg::BK, false,
                                     true>
        SB;
    const kd_gemm_mma_dense a = {(const uint16_t *)p.a[0], k, 0};
    const kd_gemm_mma_dense b = {(const uint16_t *)p.b[0], n, 0};
    const kd_gemm_mma_out co = {c, KE_F32, n, 0};
    const kd_gemm_mma_dims d = {m, n, k, 1, 1.0f, 0.0f};
    const int rm = kd_gemm_mma_launch<kd_mma_nv, T, Cfg, true, false, SA, SB>(
        0, a, b, co, d);
    CHECK((cudaError_t)rm);
  }
  fetch("mma");
  printf("dumped %s K %lld\n", dtype_name<T>(), (long long)k);
  CHECK(cudaFree(c));
  free_problem(p);
}

int main(int argc, char **argv) {
  bool quick = false, do_mx = false;
  const char *dir = nullptr;
  long long sm = 0, sn = 0, sk = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) quick = true;
    else if (!strcmp(argv[i], "--shape") && i + 1 < argc) {
      if (sscanf(argv[++i], "%lldx%lldx%lld", &sm, &sn, &sk) != 3 || sm < 1 ||
          sn < 1 || sk < 1) {
        fprintf(stderr, "--shape %s: expected MxNxK, each at least 1\n", argv[i]);
        return 2;
      }
    }
    else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) g_only = argv[++i];
    else if (!strcmp(argv[i], "--once")) g_once = true;
    else if (!strcmp(argv[i], "--mx")) do_mx = true;
    else {
      fprintf(stderr,
              "usage: %s [--quick] [--dump DIR] [--only TAG[,TAG...]] "
              "[--once] [--shape MxNxK] [--mx]\n",
              argv[0]);
      return 2;
    }
  }
  int l2 = 0;
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  g_l2 = (size_t)l2;
  if (dir) {
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
      fprintf(stderr, "cannot create %s: %s\n", dir, strerror(errno));
      return 1;
    }
    for (int64_t k : {1024, 4096, 16384, 65536}) {
      dump<kd_bf16>(dir, k);
      dump<kd_half>(dir, k);
    }
  }
  if (do_mx) {
    if (sm) mx(sm, sn, sk);
    else mx(4096, 4096, 4096);
    return 0;
  }
  if (g_once) {
    sweep<kd_bf16, false>(4096, 4096, 4096, false);
    return 0;
  }
  if (sm) { /* one problem, both dtypes, instead of the sweep's */
    sweep<kd_bf16, false>(sm, sn, sk, false);
    sweep<kd_half, false>(sm, sn, sk, false);
    return 0;
  }
  sweep<kd_bf16, false>(4096, 4096, 4096, true);
  sweep<kd_half, false>(4096, 4096, 4096, !quick);
  sweep<kd_bf16, false>(8192, 8192, 8192, !quick);
  sweep<kd_half, false>(8192, 8192, 8192, false);
  if (!quick) {
    sweep<kd_bf16, true>(4096, 4096, 4096, false);
    sweep<kd_bf16, false>(3001, 3000, 3000, false);
    /* The first problem again: the spread between two timings of one
     * variant. */
    sweep<kd_bf16, false>(4096, 4096, 4096, false);
  }
  return 0;
}
