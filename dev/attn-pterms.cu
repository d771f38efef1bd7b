// The Hopper attention kernel (kernels/tile/attn_sm90.h) in its variants
// (kernels/tile/attn_sm90_cfg.h: each schedule, each with P in three forms)
// on the same inputs: two 16-bit terms (p2), the kernel's own (pk: P
// rounded once to f16, its weights raised by 2^15; bf16 against V
// converted to f16) and rounded once to the input type, P in [0, 1] (p1,
// round_p's), measured against a double reference at the attention
// suites' awkward sizes and the perf suite's attention shapes
// (docs/decisions/attention.md, "P in one or two terms", "bf16: V in f16,
// P in one f16 term", "f16: P in one f16 term, weights raised by 2^15",
// "Ping-pong consumers", "Accuracy of the shipped forms"). The engine
// compiles only the default schedule's pk and p1; the other variants are
// built here. A measuring tool, not part of the engine; the same source
// builds two ways:
//
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a
//     -DKILN_BACKEND_CUDA -DKD_SM90A -Ikernels -Iengine/include
//     dev/attn-pterms.cu -o attn-pterms
//   ./attn-pterms [--sched all|NAME,...] [--only TAG] [--dump DIR]
//                 [--ref-cap N] [--quick]
//
// and on the host emulation at warp 32 (meson: attn-pterms-check, with
// --quick). --sched picks the schedules (default "default"; "all": default,
// nopp, pp, pp-serial, pp64, serial), --only the cases of one tag ("perf":
// the perf suite's shapes). Per case, schedule and form it prints
// max |x - e| / max|v|, the max relative error max |x - e| / max(|e|,
// rms(e)), the worst |x - e| / (atol + rtol |e|) against the two-term bound
// (attn_tol without a term for P's rounding,
// suites/attention/attention-check.c) and NMSE over its limit; rows that
// see no key are left out. On a GPU it also times every form at the perf
// shapes (median of 15 launches after 3 warm-ups, each between two
// events). The reference runs where Sq Sk D Hq B <= N (default 2e9; the
// perf shapes are left to dev/attn-pterms.py; the emulation skips larger
// cases). --dump writes each case's inputs and the default schedule's
// three outputs raw (not the perf suite's D 64 and D 256 shapes: their
// size), and DIR/cases.txt, for dev/attn-pterms.py (torch's
// SDPA and the float64 reference on the same inputs). Exit 1 when p2 is
// over the two-term bound, or pk over the suite's (attn_tol: 2 2^-11
// max|v| more for P in f16, and 2^-16 max|v| for bf16 V's f16 copy),
// anywhere, in any schedule.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "tile/attn_sm90_cfg.h" // the engine's configurations and variants
#include "tune-hip.h"

struct acase {
  const char *tag; // where the size comes from
  int64_t b, hq, hkv, sq, sk, d;
  int causal;
  int64_t offset; // -1: Sk - Sq
  float scale;    // 0: 1 / sqrt(D)
  float q_std;    // Q ~ N(0, q_std); K, V ~ N(0, 1)
  int uniform;    // 1: Q, K, V uniform in [-1, 1) (tests/kernels/wgmma-attn.cc)
  int no_dump;    // 1: timed and checked, left out of --dump (its size)
};

// The suites' 16-bit TILED sizes (suites/attention/attention_tiled.c,
// attention.c), the worst case of wgmma-attn, and the perf suite's
// attention shapes at S 4096 (suites/perf/cases.c).
static const acase kCases[] = {
    {"key_lengths", 1, 2, 1, 130, 17, 64, 0, -1, 0, 1, 0, 0},
    {"key_lengths", 1, 2, 1, 130, 17, 64, 1, -1, 0, 1, 0, 0},
    {"key_lengths", 1, 2, 1, 37, 17, 64, 0, -1, 0, 1, 0, 0},
    {"key_lengths", 1, 2, 1, 37, 3001, 64, 1, -1, 0, 1, 0, 0},
    {"key_lengths", 1, 2, 1, 130, 3001, 64, 0, -1, 0, 1, 0, 0},
    {"key_lengths", 1, 2, 1, 1, 3001, 64, 0, -1, 0, 1, 0, 0},
    {"wgmma-attn", 2, 4, 1, 37, 37, 40, 1, 0, 0.2f, 1, 1, 0},
    {"wgmma-attn", 2, 4, 1, 37, 37, 40, 1, 0, 0, 1, 0, 0},
    {"head_dims", 1, 2, 1, 77, 150, 72, 1, -1, 0, 1, 0, 0},
    {"head_dims", 1, 2, 1, 77, 150, 128, 0, -1, 0, 1, 0, 0},
    {"head_dims", 1, 2, 1, 77, 150, 200, 1, -1, 0, 1, 0, 0},
    {"head_dims", 1, 2, 1, 77, 150, 256, 0, -1, 0, 1, 0, 0},
    {"gqa_ratios", 2, 8, 2, 37, 150, 128, 0, -1, 0, 1, 0, 0},
    {"gqa_ratios", 1, 8, 1, 50, 90, 96, 1, -1, 0, 1, 0, 0},
    {"causal_offsets", 1, 4, 2, 150, 60, 64, 1, -1, 0, 1, 0, 0},
    {"causal_offsets", 1, 4, 2, 100, 100, 64, 1, 0, 0, 1, 0, 0},
    {"causal_offsets", 1, 4, 2, 70, 200, 64, 1, 5, 0, 1, 0, 0},
    {"sharp", 1, 2, 1, 130, 700, 128, 1, -1, -0.7f, 1, 0, 0},
    {"sharp", 1, 2, 1, 130, 700, 128, 1, -1, 0, 8, 0, 0},
    {"decode_shapes", 2, 8, 2, 1, 1000, 128, 0, -1, 0, 1, 0, 0},
    {"long", 1, 2, 1, 3001, 3001, 64, 1, -1, 0, 1, 0, 0},
    {"long", 1, 2, 2, 3001, 3001, 256, 0, -1, 0, 1, 0, 0},
    {"perf", 1, 16, 16, 4096, 4096, 128, 0, -1, 0, 1, 0, 0},
    {"perf", 1, 16, 16, 4096, 4096, 128, 1, -1, 0, 1, 0, 0},
    {"perf", 1, 16, 16, 4096, 4096, 64, 0, -1, 0, 1, 0, 1},
    {"perf", 1, 16, 16, 4096, 4096, 256, 0, -1, 0, 1, 0, 1},
};
// --quick (the host check): two small cases.
static const int kQuick[] = {0, 6};

static uint64_t g_seed = 0x9e3779b97f4a7c15ull;
static double unif() { // [0, 1)
  g_seed = g_seed * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(g_seed >> 11) * ldexp(1.0, -53);
}
static double normal() {
  const double u = unif(), v = unif();
  return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

// 16-bit values on the host, rounded to nearest even (kd_to_float and
// kd_from_float are device functions: a CUDA build's host copy of them
// does not compute).
template <typename T> static double val(uint16_t x) {
  if (std::is_same<T, kd_bf16>::value) {
    const uint32_t w = (uint32_t)x << 16;
    float f;
    memcpy(&f, &w, 4);
    return f;
  }
  const int e = (x >> 10) & 31, m = x & 1023;
  const double a = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                    : ldexp(1024 + m, e - 25);
  return x & 0x8000 ? -a : a;
}
template <typename T> static uint16_t bits(double x) {
  if (std::is_same<T, kd_bf16>::value) {
    const float f = (float)x;
    uint32_t w;
    memcpy(&w, &f, 4);
    return (uint16_t)((w + 0x7fff + ((w >> 16) & 1)) >> 16); // finite x
  }
  const uint16_t sign = x < 0 ? 0x8000 : 0;
  x = fabs(x);
  if (x < ldexp(1.0, -14)) return sign | (uint16_t)nearbyint(ldexp(x, 24));
  int ex;
  const double m = frexp(x, &ex); // x = m 2^ex, m in [0.5, 1)
  int mant = (int)nearbyint((2 * m - 1) * 1024), e = ex - 1;
  if (mant == 1024) mant = 0, e++;
  if (e > 15) return sign | 0x7c00;
  return sign | (uint16_t)((e + 15) << 10 | mant);
}

struct stats {
  double abs_v, rel, tol, nmse;
};

// Errors of got against ref over the rows that see a key (the two-term
// bound, attn_tol's, plus extra max|v|).
template <typename T>
static stats measure(const acase &c, int64_t off, float scale,
                     const std::vector<uint16_t> &q,
                     const std::vector<uint16_t> &k,
                     const std::vector<uint16_t> &v,
                     const std::vector<double> &ref,
                     const std::vector<uint16_t> &got, double extra = 0) {
  const double u = ldexp(1.0, -24), lam = 6;
  double qn = 0, kn = 0, vmax = 0;
  for (size_t r = 0; r < q.size() / c.d; r++) {
    double s = 0;
    for (int64_t e = 0; e < c.d; e++) s += val<T>(q[r * c.d + e]) * val<T>(q[r * c.d + e]);
    qn = fmax(qn, sqrt(s));
  }
  for (size_t r = 0; r < k.size() / c.d; r++) {
    double s = 0;
    for (int64_t e = 0; e < c.d; e++) {
      s += val<T>(k[r * c.d + e]) * val<T>(k[r * c.d + e]);
      vmax = fmax(vmax, fabs(val<T>(v[r * c.d + e])));
    }
    kn = fmax(kn, sqrt(s));
  }
  const double smax = fabs(scale) * qn * kn;
  const double es = lam * sqrt((double)c.d) * u * smax;
  const double atol = fmax(1e-5, (2 * (es + 3 * u * smax + 4 * u) +
                                  lam * sqrt((double)c.sk) * u + 4 * u) * vmax) +
                      extra * vmax;
  const bool bf = std::is_same<T, kd_bf16>::value;
  const double rtol = bf ? 1.6e-2 : 1e-3, max_nmse = bf ? 5e-5 : 1e-6;
  double maxe = 0, ref2 = 0, err2 = 0, tol = 0, rel = 0;
  int64_t n = 0;
  for (int64_t r = 0; r < c.b * c.hq * c.sq; r++) {
    if (c.causal && (r % c.sq) + off + 1 <= 0) continue; // sees no key
    for (int64_t e = 0; e < c.d; e++) {
      const double x = val<T>(got[r * c.d + e]), y = ref[r * c.d + e];
      const double d = isnan(x) ? INFINITY : fabs(x - y);
      maxe = fmax(maxe, d);
      tol = fmax(tol, d / (atol + rtol * fabs(y)));
      err2 += d * d, ref2 += y * y, n++;
    }
  }
  const double rms = sqrt(ref2 / (double)(n ? n : 1));
  for (int64_t r = 0; r < c.b * c.hq * c.sq; r++) {
    if (c.causal && (r % c.sq) + off + 1 <= 0) continue;
    for (int64_t e = 0; e < c.d; e++) {
      const double x = val<T>(got[r * c.d + e]), y = ref[r * c.d + e];
      rel = fmax(rel, (isnan(x) ? INFINITY : fabs(x - y)) / fmax(fabs(y), rms));
    }
  }
  return {maxe / vmax, rel, tol, (ref2 > 0 ? err2 / ref2 : 0) / max_nmse};
}

template <typename T>
static void reference(const acase &c, int64_t off, float scale,
                      const std::vector<uint16_t> &q,
                      const std::vector<uint16_t> &k,
                      const std::vector<uint16_t> &v, std::vector<double> &o) {
  std::vector<double> w((size_t)c.sk);
  for (int64_t bi = 0; bi < c.b; bi++)
    for (int64_t h = 0; h < c.hq; h++)
      for (int64_t i = 0; i < c.sq; i++) {
        const int64_t r = (bi * c.hq + h) * c.sq + i;
        const int64_t kr0 = (bi * c.hkv + h / (c.hq / c.hkv)) * c.sk;
        int64_t lim = c.sk;
        if (c.causal) lim = i + off + 1 < 0 ? 0 : i + off + 1 > c.sk ? c.sk : i + off + 1;
        double mx = -INFINITY, l = 0;
        for (int64_t j = 0; j < lim; j++) {
          double s = 0;
          for (int64_t e = 0; e < c.d; e++)
            s += val<T>(q[r * c.d + e]) * val<T>(k[(kr0 + j) * c.d + e]);
          w[j] = s * scale;
          mx = fmax(mx, w[j]);
        }
        for (int64_t j = 0; j < lim; j++) l += (w[j] = exp(w[j] - mx));
        for (int64_t e = 0; e < c.d; e++) {
          double acc = 0;
          for (int64_t j = 0; j < lim; j++) acc += w[j] * val<T>(v[(kr0 + j) * c.d + e]);
          o[r * c.d + e] = lim > 0 ? acc / l : 0.0;
        }
      }
}

static void write_raw(const char *dir, const char *name, const char *ext,
                      const std::vector<uint16_t> &x) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(x.data(), 2, x.size(), f) != x.size() || fclose(f) != 0) {
    fprintf(stderr, "attn-pterms: cannot write %s: %s\n", path, strerror(errno));
    exit(2);
  }
}

static int g_over; // cases over the bound (main's comment)

// The schedules by name (KD_ATTN_SM90_SCHEDULE_MAP) and the ones asked for.
static const char *const kSchedNames[KD_ATTN_SM90_SCHEDULES] = {
#define SCHED_NAME(e, name) name,
    KD_ATTN_SM90_SCHEDULE_MAP(SCHED_NAME)
#undef SCHED_NAME
};
static bool g_sched[KD_ATTN_SM90_SCHEDULES] = {true};

// The forms of P in the order of the columns (kFormNames).
static const int kForms[3] = {KD_ATTN_SM90_P2, KD_ATTN_SM90_PK,
                              KD_ATTN_SM90_P1};
static const char *const kFormNames[3] = {"p2", "pk", "p1"};

// Variant VAR as the engine would launch it: bf16's pk on V in f16 (the
// workspace in a->work).
typedef int (*fa3_launch)(const void *, const void *, const void *, void *,
                          const ke__attention_desc *);
template <typename T, int VAR>
static int launch_var(const void *q, const void *k, const void *v, void *o,
                      const ke__attention_desc *a) {
  if constexpr (kd_attn_sm90_v16<T, VAR>)
    return kd_attn_sm90_by_d<T, kd_half, VAR>(0, q, k, v, o, a);
  else
    return kd_attn_sm90_by_d<T, T, VAR>(0, q, k, v, o, a);
}
template <typename T, int... VAR>
static fa3_launch launch_of(int var, std::integer_sequence<int, VAR...>) {
  static const fa3_launch table[] = {launch_var<T, VAR>...};
  return table[var];
}
// Schedule sched with form f of P (kForms): every variant is built.
template <typename T>
static int launch(int sched, int f, const void *q, const void *k, const void *v,
                  void *o, const ke__attention_desc *a) {
  constexpr int n = KD_ATTN_SM90_FORMS * KD_ATTN_SM90_SCHEDULES;
  return launch_of<T>(KD_ATTN_SM90_FORMS * sched + kForms[f],
                      std::make_integer_sequence<int, n>())(q, k, v, o, a);
}

template <typename T>
static void one(const acase &c, int idx, const char *dir, double ref_cap,
                FILE *list) {
  const bool bf = std::is_same<T, kd_bf16>::value;
  const bool big = (double)(c.b * c.hq) * (double)(c.sq * c.sk) * (double)c.d > ref_cap;
  const int64_t off = c.offset == -1 ? c.sk - c.sq : c.offset;
  const float scale = c.scale != 0 ? c.scale : (float)(1.0 / sqrt((double)c.d));
  const int64_t nq = c.b * c.hq * c.sq * c.d, nk = c.b * c.hkv * c.sk * c.d;
  std::vector<uint16_t> q(nq), k(nk), v(nk), out[3];
  for (auto &x : q) x = bits<T>(c.uniform ? 2 * unif() - 1 : c.q_std * normal());
  for (auto &x : k) x = bits<T>(c.uniform ? 2 * unif() - 1 : normal());
  for (auto &x : v) x = bits<T>(c.uniform ? 2 * unif() - 1 : normal());
#if defined(KILN_BACKEND_HOST)
  if (big) { // the emulation takes minutes there (its inputs are drawn
             // all the same, so that the next cases' match a GPU run's)
    printf("| %s %s sq%lld sk%lld d%lld | (left to a GPU) |\n", bf ? "bf16" : "f16", c.tag,
           (long long)c.sq, (long long)c.sk, (long long)c.d);
    return;
  }
#endif
  char name[160];
  int len = snprintf(name, sizeof name, "%s_%s_b%lld_h%lld-%lld_sq%lld_sk%lld_d%lld%s",
                     bf ? "bf16" : "f16", c.tag, (long long)c.b, (long long)c.hq,
                     (long long)c.hkv, (long long)c.sq, (long long)c.sk, (long long)c.d,
                     c.causal ? "_causal" : "");
  if (c.causal) len += snprintf(name + len, sizeof name - len, "_off%lld", (long long)off);
  if (c.scale != 0) len += snprintf(name + len, sizeof name - len, "_scale%g", (double)c.scale);
  if (c.q_std != 1) len += snprintf(name + len, sizeof name - len, "_qstd%g", (double)c.q_std);
  if (c.uniform) snprintf(name + len, sizeof name - len, "_uniform");
  std::vector<double> ref;
  if (!big) {
    ref.resize(nq);
    reference<T>(c, off, scale, q, k, v, ref);
  }
  ke__attention_desc a = tune_attn_desc(c.b, c.hq, c.hkv, c.sq, c.sk, c.d);
  a.scale = scale, a.causal = c.causal, a.offset = off;
  void *dq, *dk, *dv, *dout, *work = nullptr;
  CHECK(hipMalloc(&dq, nq * 2));
  CHECK(hipMalloc(&dk, nk * 2));
  CHECK(hipMalloc(&dv, nk * 2));
  CHECK(hipMalloc(&dout, nq * 2));
  if (bf) { // pk's workspace, as the engine gives it
    CHECK(hipMalloc(&work, kd_attn_sm90_v16_bytes(&a)));
    a.work = work;
  }
  CHECK(hipMemcpyAsync(dq, q.data(), nq * 2, hipMemcpyHostToDevice, 0));
  CHECK(hipMemcpyAsync(dk, k.data(), nk * 2, hipMemcpyHostToDevice, 0));
  CHECK(hipMemcpyAsync(dv, v.data(), nk * 2, hipMemcpyHostToDevice, 0));
  for (int s = 0; s < KD_ATTN_SM90_SCHEDULES; s++) {
    if (!g_sched[s]) continue;
    for (int f = 0; f < 3; f++) {
      out[f].resize(nq);
      CHECK(hipMemsetAsync(dout, 0xff, nq * 2, 0)); // NaN: every row must be written
      const int rc = launch<T>(s, f, dq, dk, dv, dout, &a);
      if (rc != 0) {
        fprintf(stderr, "attn-pterms: launch refused (%d) for case %d, %s %s\n", rc, idx,
                kSchedNames[s], kFormNames[f]);
        exit(2);
      }
      CHECK(hipStreamSynchronize(0));
      CHECK(hipMemcpyAsync(out[f].data(), dout, nq * 2, hipMemcpyDeviceToHost, 0));
      CHECK(hipStreamSynchronize(0));
    }
#if !defined(KILN_BACKEND_HOST)
    if (!strcmp(c.tag, "perf")) { // the median of 15 launches after 3 warm-ups
      for (int f = 0; f < 3; f++) {
        std::vector<float> ms;
        const int rc = tune_attn_times(0, 3, 15, [&](int) {
          return launch<T>(s, f, dq, dk, dv, dout, &a);
        }, &ms);
        if (rc != 0) {
          fprintf(stderr, "attn-pterms: timed launch refused (%d) for case %d\n", rc, idx);
          exit(2);
        }
        const double flop = 4.0 * c.b * c.hq * (double)c.sq * c.sk * c.d * (c.causal ? 0.5 : 1);
        printf("time %s %s d%lld%s %s %s: %.3f ms, %.1f TFLOP/s\n", bf ? "bf16" : "f16",
               c.tag, (long long)c.d, c.causal ? " causal" : "", kSchedNames[s],
               kFormNames[f], ms[ms.size() / 2], flop / ms[ms.size() / 2] / 1e9);
      }
    }
#endif
    if (dir && s == KD_ATTN_SM90_DEFAULT && !c.no_dump) {
      write_raw(dir, name, "q", q), write_raw(dir, name, "k", k), write_raw(dir, name, "v", v);
      for (int f = 0; f < 3; f++) write_raw(dir, name, kFormNames[f], out[f]);
      fprintf(list, "%s %s %lld %lld %lld %lld %lld %lld %d %lld %.9g %.9g\n", name,
              bf ? "bf16" : "f16", (long long)c.b, (long long)c.hq, (long long)c.hkv,
              (long long)c.sq, (long long)c.sk, (long long)c.d, c.causal, (long long)off,
              (double)scale, (double)c.q_std);
      fflush(list);
    }
    // The row's label: the case, and the schedule where it is not the
    // default.
    char label[192];
    const bool other = s != KD_ATTN_SM90_DEFAULT;
    snprintf(label, sizeof label, "%s%s%s", name, other ? " " : "", other ? kSchedNames[s] : "");
    if (big) {
      printf("| %s | (reference left to attn-pterms.py) |\n", label);
      continue;
    }
    stats st[3];
    for (int f = 0; f < 3; f++) st[f] = measure<T>(c, off, scale, q, k, v, ref, out[f]);
    // pk against the suite's own bound for it (P in f16, 2 2^-11 max|v|
    // more; bf16 V's f16 copy, 2^-16 max|v|).
    const stats sk = measure<T>(c, off, scale, q, k, v, ref, out[1],
                                2 * ldexp(1.0, -11) + (bf ? ldexp(1.0, -16) : 0));
    if (!(st[0].tol <= 1.0 && st[0].nmse <= 1.0) || !(sk.tol <= 1.0 && sk.nmse <= 1.0)) g_over++;
    printf("| %s |", label);
    for (int m = 0; m < 4; m++)
      for (int f = 0; f < 3; f++)
        printf(" %.3g |", m == 0 ? st[f].abs_v : m == 1 ? st[f].rel : m == 2 ? st[f].tol : st[f].nmse);
    printf(" %.3g |\n", sk.tol);
    fflush(stdout);
  }
  CHECK(hipFree(dq));
  CHECK(hipFree(dk));
  CHECK(hipFree(dv));
  CHECK(hipFree(dout));
  if (work) CHECK(hipFree(work));
}

// --sched's list: "all", or names of KD_ATTN_SM90_SCHEDULE_MAP separated by
// commas; false for a name it does not know.
static bool pick_schedules(const char *list) {
  for (int s = 0; s < KD_ATTN_SM90_SCHEDULES; s++)
    g_sched[s] = !strcmp(list, "all");
  if (!strcmp(list, "all")) return true;
  for (const char *p = list; *p;) {
    const size_t n = strcspn(p, ",");
    int s = 0;
    while (s < KD_ATTN_SM90_SCHEDULES &&
           !(strlen(kSchedNames[s]) == n && !strncmp(p, kSchedNames[s], n)))
      s++;
    if (s == KD_ATTN_SM90_SCHEDULES) return false;
    g_sched[s] = true;
    p += n + (p[n] == ',');
  }
  return true;
}

int main(int argc, char **argv) {
  const char *dir = nullptr, *only = nullptr;
  double ref_cap = 2e9;
  bool quick = false, usage = false;
  for (int i = 1; i < argc && !usage; i++) {
    if (!strcmp(argv[i], "--dump") && i + 1 < argc) dir = argv[++i];
    else if (!strcmp(argv[i], "--ref-cap") && i + 1 < argc) ref_cap = atof(argv[++i]);
    else if (!strcmp(argv[i], "--quick")) quick = true;
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--sched") && i + 1 < argc) usage = !pick_schedules(argv[++i]);
    else usage = true;
  }
  if (usage || (dir && !g_sched[KD_ATTN_SM90_DEFAULT])) {
    fprintf(stderr, "usage: attn-pterms [--sched all|NAME,...] [--only TAG] [--dump DIR]"
                    " [--ref-cap N] [--quick]\n(--dump with the default schedule;"
                    " schedules:");
    for (int s = 0; s < KD_ATTN_SM90_SCHEDULES; s++)
      fprintf(stderr, " %s", kSchedNames[s]);
    fprintf(stderr, ")\n");
    return 2;
  }
#if defined(KILN_BACKEND_HOST)
  // The host conversions above against the kernels' own (host functions
  // in the emulation), on floats of every exponent the inputs reach; the
  // inputs' seed is put back after it.
  const uint64_t seed = g_seed;
  for (int i = 0; i < 200000; i++) {
    const float f = (float)((2 * unif() - 1) * ldexp(1.0, (int)(unif() * 40) - 30));
    if (bits<kd_half>(f) != kd_from_float<kd_half>(f).bits ||
        bits<kd_bf16>(f) != kd_from_float<kd_bf16>(f).bits ||
        val<kd_half>(bits<kd_half>(f)) != kd_to_float(kd_from_float<kd_half>(f)) ||
        val<kd_bf16>(bits<kd_bf16>(f)) != kd_to_float(kd_from_float<kd_bf16>(f))) {
      fprintf(stderr,
              "attn-pterms: host conversion of %a differs from arch/kd.h's\n",
              (double)f);
      return 1;
    }
  }
  g_seed = seed;
  if (kemu_set_warp_size(32) != hipSuccess) return 2;
  setenv("KILN_EMU_SM", "90", 1);
#endif
  if (!kd_wg_available()) {
    fprintf(stderr, "attn-pterms: no wgmma here (compute capability 9.0 with sm_90a)\n");
    return 2;
  }
  FILE *list = nullptr;
  if (dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/cases.txt", dir);
    if ((mkdir(dir, 0777) != 0 && errno != EEXIST) || !(list = fopen(path, "w"))) {
      fprintf(stderr, "attn-pterms: cannot write %s: %s\n", path, strerror(errno));
      return 2;
    }
  }
  printf("| case | abs/max|v| p2 | pk | p1 | max rel p2 | pk | p1 | err/tol p2 | pk | p1 |"
         " nmse/limit p2 | pk | p1 | pk err/its tol |\n");
  printf("| --- |");
  for (int i = 0; i < 13; i++) printf(" ---: |");
  printf("\n");
  const int n = quick ? 2 : (int)(sizeof kCases / sizeof kCases[0]);
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < n; i++) {
      const int idx = quick ? kQuick[i] : i;
      if (only && strcmp(kCases[idx].tag, only) != 0) continue;
      if (t == 0) one<kd_half>(kCases[idx], idx, dir, ref_cap, list);
      else one<kd_bf16>(kCases[idx], idx, dir, ref_cap, list);
    }
  if (list) fclose(list);
  if (g_over)
    fprintf(stderr, "attn-pterms: %d case(s) and schedule(s) over the bound (p2 or pk)\n",
            g_over);
  return g_over ? 1 : 0;
}
