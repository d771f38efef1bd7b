/* The Hopper attention kernel (kernels/tile/attn_sm90.h) on the host
 * emulation at warp 32, called directly (no engine, no opt-in): every
 * configuration (D padded to 64, 128, 192, 256), f16 and bf16, causal
 * with negative, zero and positive offsets and not, GQA and MQA, a
 * [B, S, H, D] layout, row and key counts off the tiles, and a NaN in V at
 * a key hidden from some rows of a warpgroup (the lane-by-lane P V, also
 * followed by a tile the warpgroup sees), the timing variants
 * (tile/attn_sm90_cfg.h; the engine compiles only the default schedule,
 * dev/attn-pterms.cu the rest), against a double reference with the
 * attention suite's bound. It runs wgmma (SS for Q K^T, RS for P V with
 * P in registers), TMA of rank-4 maps and the mbarriers as
 * port/host/hopper-on-host.h executes them. One case
 * goes through the engine's entry (ke__attention_sm90_launch) with
 * KILN_EMU_SM=90 and the default tuning, where the kernel is the default,
 * and one checks that the tuning's hopper 0 (a desc's no_hopper, which
 * the engine sets from the context; the runner from KILN_HOPPER_ATTN=0)
 * turns it off. Run
 * again with each of its planted bugs (planted.h: `rs`, P's A registers 1
 * and 2 swapped in kd_wg_acc_to_a; `wait`, O rescaled before its P V
 * lands; `pingpong`, each consumer warpgroup arriving on its own ping-pong
 * barrier: a deadlock the emulation reports), where it must fail (meson:
 * should_fail). The schedules: ping-pong between the consumer
 * warpgroups (named barriers) and the one before it, the timing variants.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "attention_sm90.hip" /* the engine's entry, with tile/attn_sm90.h */
#include "planted.h"

static int g_failures, g_cases;

static float rnd(uint64_t &s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((s >> 40) & 0xffff) / 32768.0f - 1.0f;
}

struct shape {
  int64_t b, hq, hkv, sq, sk, d;
  int causal;
  int64_t offset;
  bool bshd;   /* [B, S, H, D] storage instead of [B, H, S, D] */
  int nan_key; /* >= 0: V[0, 0, key, 3] is NaN */
};

/* Strides {B, H, S} of a [B, H, S, D] view over either storage, rows
 * padded to a multiple of 8 elements. */
static void strides(const shape &p, int64_t h, int64_t s, int64_t out[3],
                    int64_t *total) {
  const int64_t dd = (p.d + 7) / 8 * 8;
  if (p.bshd) {
    out[0] = s * h * dd, out[1] = dd, out[2] = h * dd;
  } else {
    out[0] = h * s * dd, out[1] = s * dd, out[2] = dd;
  }
  *total = p.b * h * s * dd;
}

/* entry: through ke__attention_sm90_launch (which picks C itself) rather
 * than kd_attn_sm90_run<T, C, TV>. TV kd_half (bf16 T): V in f16, with the
 * workspace the engine would give (also given to the entry with v16).
 * vexp: V times 2^vexp, 2^-vexp for odd kv heads (bf16: far outside f16's
 * range, each head its own scale). */
template <typename T, class C, typename TV = T>
static void one(const shape &p, float scale, bool entry = false,
                int vexp = 0, bool v16 = false) {
  const bool use_v16 = v16 || !std::is_same<T, TV>::value;
  ke__attention_desc a = {};
  a.b = p.b, a.hq = p.hq, a.hkv = p.hkv, a.sq = p.sq, a.sk = p.sk, a.d = p.d;
  a.scale = scale, a.causal = p.causal, a.offset = p.offset;
  int64_t nq, nk;
  strides(p, p.hq, p.sq, a.q_stride, &nq);
  strides(p, p.hkv, p.sk, a.k_stride, &nk);
  for (int i = 0; i < 3; i++) {
    a.v_stride[i] = a.k_stride[i];
    a.o_stride[i] = a.q_stride[i];
  }
  uint16_t *q, *k, *v, *o;
  hipMalloc((void **)&q, (size_t)nq * 2);
  hipMalloc((void **)&k, (size_t)nk * 2);
  hipMalloc((void **)&v, (size_t)nk * 2);
  hipMalloc((void **)&o, (size_t)nq * 2);
  uint64_t seed = (uint64_t)(p.sq * 131 + p.sk * 17 + p.d);
  for (int64_t i = 0; i < nq; i++) q[i] = kd_from_float<T>(rnd(seed)).bits;
  for (int64_t i = 0; i < nk; i++) k[i] = kd_from_float<T>(rnd(seed)).bits;
  for (int64_t i = 0; i < nk; i++) {
    const int64_t hk = i / a.k_stride[1] % p.hkv;
    v[i] = kd_from_float<T>(ldexpf(rnd(seed), hk % 2 ? -vexp : vexp)).bits;
  }
  for (int64_t i = 0; i < nq; i++) o[i] = 0x7fff; /* NaN: every row written */
  if (p.nan_key >= 0) v[p.nan_key * a.k_stride[2] + 3] = 0x7fff;
  auto val = [](uint16_t x) {
    T t;
    t.bits = x;
    return (double)kd_to_float(t);
  };
  void *work = nullptr;
  if (use_v16) {
    hipMalloc(&work, kd_attn_sm90_v16_bytes(&a));
    a.work = work;
  }
  const int rc =
      entry ? ke__attention_sm90_launch(
                  0, std::is_same<T, kd_bf16>::value ? KE_BF16 : KE_F16, q,
                  k, v, o, &a)
            : kd_attn_sm90_run<T, C, TV>(0, q, k, v, o, &a, work);
  if (rc != 0 || hipStreamSynchronize(0) != hipSuccess) {
    fprintf(stderr, "wgmma-attn: launch failed (%d)\n", rc);
    g_failures++;
    kt_planted_stop("wgmma-attn", g_failures);
    return;
  }
  /* The suite's bound (suites/attention.c, attn_tol). */
  const double u = ldexp(1.0, -24), lam = 6;
  double qmax = 0, kmax = 0, vmax = 0;
  for (int64_t i = 0; i < nq; i += (p.d + 7) / 8 * 8) {
    double s2 = 0;
    for (int64_t e = 0; e < p.d; e++) s2 += val(q[i + e]) * val(q[i + e]);
    qmax = fmax(qmax, sqrt(s2));
  }
  for (int64_t i = 0; i < nk; i += (p.d + 7) / 8 * 8) {
    double s2 = 0;
    for (int64_t e = 0; e < p.d; e++) {
      s2 += val(k[i + e]) * val(k[i + e]);
      if (isfinite(val(v[i + e]))) vmax = fmax(vmax, fabs(val(v[i + e])));
    }
    kmax = fmax(kmax, sqrt(s2));
  }
  const double es = lam * sqrt((double)p.d) * u * fabs(scale) * qmax * kmax;
  /* P in one term (a timing variant, outside the suite's bound): each
   * weight rounded to T once more, at most uT of it, so O moves by at most
   * uT vmax: added to the bound, which then checks the indexing. */
  const double ut = std::is_same<T, kd_bf16>::value ? ldexp(1.0, -8)
                                                     : ldexp(1.0, -11);
  /* P rounded once to f16 (the kernel's form where V is f16), and V's f16
   * copy: 2 2^-11 vmax, and 2^-16 vmax for the copy, as attn_tol has
   * them. */
  const bool one16 = kd_attn_sm90<T, C, TV>::ONE16 || (entry && use_v16);
  const double u16 = (one16 ? 2 * ldexp(1.0, -11) : 0) +
                     (use_v16 ? ldexp(1.0, -16) : 0);
  const double smax = fabs(scale) * qmax * kmax;
  const double atol = fmax(1e-5, (2 * (es + 3 * u * smax + 4 * u) +
                                  lam * sqrt((double)p.sk) * u +
                                  4 * u + (C::PTERMS == 1 ? ut : u16)) * vmax);
  const double rtol = std::is_same<T, kd_bf16>::value ? 1.6e-2 : 1e-3;
  /* With vexp each kv head is held to its own vmax (one over all would
   * hide a wrong scale on the small ones). */
  std::vector<double> head_vmax((size_t)(p.b * p.hkv), 0.0);
  for (int64_t bi = 0; bi < p.b; bi++)
    for (int64_t hk = 0; hk < p.hkv; hk++)
      for (int64_t j = 0; j < p.sk; j++)
        for (int64_t e = 0; e < p.d; e++) {
          const double x = val(v[bi * a.k_stride[0] + hk * a.k_stride[1] +
                                 j * a.k_stride[2] + e]);
          if (isfinite(x))
            head_vmax[bi * p.hkv + hk] = fmax(head_vmax[bi * p.hkv + hk], fabs(x));
        }
  double worst = 0;
  bool nan_bad = false;
  const int64_t ratio = p.hq / p.hkv;
  std::vector<double> w((size_t)p.sk);
  for (int64_t bi = 0; bi < p.b; bi++)
    for (int64_t h = 0; h < p.hq; h++)
      for (int64_t i = 0; i < p.sq; i++) {
        const uint16_t *qr = q + bi * a.q_stride[0] + h * a.q_stride[1] +
                             i * a.q_stride[2];
        const int64_t hk = h / ratio;
        int64_t lim = p.sk;
        if (p.causal) {
          lim = i + p.offset + 1;
          lim = lim < 0 ? 0 : (lim > p.sk ? p.sk : lim);
        }
        double mx = -INFINITY, l = 0;
        for (int64_t j = 0; j < lim; j++) {
          const uint16_t *kr = k + bi * a.k_stride[0] + hk * a.k_stride[1] +
                               j * a.k_stride[2];
          double s = 0;
          for (int64_t e = 0; e < p.d; e++) s += val(qr[e]) * val(kr[e]);
          w[j] = s * scale;
          mx = fmax(mx, w[j]);
        }
        for (int64_t j = 0; j < lim; j++) l += (w[j] = exp(w[j] - mx));
        const uint16_t *orow = o + bi * a.o_stride[0] + h * a.o_stride[1] +
                               i * a.o_stride[2];
        for (int64_t e = 0; e < p.d; e++) {
          double ref = 0;
          for (int64_t j = 0; j < lim; j++)
            ref += w[j] * val(v[bi * a.k_stride[0] + hk * a.k_stride[1] +
                                j * a.k_stride[2] + e]);
          ref = lim > 0 ? ref / l : 0.0;
          const double got = val(orow[e]);
          if (isnan(ref) || isnan(got)) {
            nan_bad = nan_bad || isnan(ref) != isnan(got);
            continue;
          }
          const double hs = vexp ? head_vmax[bi * p.hkv + hk] / vmax : 1.0;
          const double err = fabs(got - ref) / (atol * hs + rtol * fabs(ref));
          if (!(err <= worst)) worst = err;
        }
      }
  g_cases++;
  if (!(worst <= 1.0) || nan_bad) {
    if (g_failures < 20)
      fprintf(stderr,
              "wgmma-attn: %s DP %d BN %d, B %lld Hq %lld Hkv %lld Sq %lld "
              "Sk %lld D %lld causal %d offset %lld%s%s%s%s: worst error %.3g "
              "of the tolerance%s\n",
              std::is_same<T, kd_bf16>::value ? "bf16" : "f16", C::DP, C::BN,
              (long long)p.b, (long long)p.hq, (long long)p.hkv,
              (long long)p.sq, (long long)p.sk, (long long)p.d, p.causal,
              (long long)p.offset, p.bshd ? " BSHD" : "",
              p.nan_key >= 0 ? " NaN in V" : "",
              C::PINGPONG ? " ping-pong" : "", use_v16 ? " V16" : "", worst,
              nan_bad ? ", NaN where the reference has none or the reverse"
                      : "");
    g_failures++;
  } else {
    printf("ok  %s DP %d BN %d%s%s%s D %lld Sq %lld Sk %lld causal %d: worst "
           "%.3f of the tolerance\n",
           std::is_same<T, kd_bf16>::value ? "bf16" : "f16", C::DP, C::BN,
           C::PINGPONG ? " ping-pong" : "", C::PTERMS == 1 ? " P1" :
           one16 ? " P16" : "", use_v16 ? " V16" : "",
           (long long)p.d, (long long)p.sq, (long long)p.sk, p.causal, worst);
  }
  hipFree(q);
  hipFree(k);
  hipFree(v);
  hipFree(o);
  if (work) hipFree(work);
  kt_planted_stop("wgmma-attn", g_failures);
}

template <typename T> static void all() {
  /* The engine's configurations (tile/attn_sm90_cfg.h: the default
   * schedule, attention_sm90.hip). */
  typedef kd_attn_sm90_d64<> c64;
  typedef kd_attn_sm90_d128<> c128;
  typedef kd_attn_sm90_d192<> c192;
  typedef kd_attn_sm90_d256<> c256;
  /* b hq hkv sq sk d causal offset bshd nan */
  one<T, c64>({1, 2, 2, 130, 300, 64, 0, 0, false, -1}, 0.125f);
  one<T, c64>({2, 4, 1, 37, 37, 40, 1, 0, true, -1}, 0.2f);
  one<T, c128>({1, 4, 2, 200, 200, 128, 1, 0, false, -1}, 0.0884f);
  one<T, c128>({1, 1, 1, 70, 17, 80, 0, 0, false, -1}, 0.11f);
  one<T, c128>({1, 8, 2, 33, 150, 128, 1, 100, true, -1}, 0.5f);
  one<T, c128>({1, 2, 2, 40, 30, 128, 1, -12, false, -1}, 0.0884f);
  one<T, c192>({1, 3, 1, 45, 129, 192, 1, 0, false, -1}, 0.07f);
  one<T, c256>({1, 2, 1, 66, 1, 256, 0, 0, false, -1}, 0.0625f);
  one<T, c256>({1, 2, 2, 130, 130, 200, 1, 5, true, -1}, 0.0625f);
  /* A negative scale: the kernel scales by its magnitude and stages Q
   * negated (kd_attn_sm90::load_q); without that its max would be a min. */
  one<T, c128>({1, 2, 1, 70, 150, 128, 1, 80, false, -1}, -0.3f);
  one<T, c64>({1, 2, 2, 50, 90, 64, 0, 0, false, -1}, -0.125f);
  /* Key 20 is hidden from rows 0-19 of the first warpgroup and seen by
   * its others: the lane-by-lane P V. */
  one<T, c128>({1, 1, 1, 64, 64, 128, 1, 0, false, 20}, 0.0884f);
  one<T, c64>({1, 2, 1, 96, 96, 64, 1, 0, false, 50}, 0.125f);
  /* The tile done lane by lane is followed by one the warpgroup sees: its
   * P V in the next round goes against the zero tile. */
  one<T, c128>({1, 1, 1, 64, 300, 128, 1, 100, false, 110}, 0.0884f);
  one<T, c256>({1, 2, 1, 64, 130, 256, 1, 5, false, 20}, 0.0625f);
  /* The schedules the timing variants select (tile/attn_sm90_cfg.h): without
   * ping-pong (the schedule before it), ping-pong with P V waited for, on
   * 64-key tiles, without the softmax / P V overlap; here the two
   * warpgroups see different numbers of 64-key tiles (causal), so one
   * takes empty turns. */
  one<T, c64>({1, 2, 2, 130, 300, 64, 1, 40, false, -1}, 0.125f);
  one<T, kd_attn_sm90_d64<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_NOPP>>(
      {1, 2, 2, 130, 300, 64, 1, 40, false, -1}, 0.125f);
  one<T, kd_attn_sm90_d128<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_NOPP>>(
      {1, 4, 2, 200, 200, 128, 1, 0, false, -1}, 0.0884f);
  one<T, kd_attn_sm90_d256<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_NOPP>>(
      {1, 2, 2, 130, 130, 200, 1, 5, true, -1}, 0.0625f);
  one<T, kd_attn_sm90_d128<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_PP_SERIAL>>(
      {1, 8, 2, 33, 150, 128, 1, 100, true, -1}, 0.5f);
  one<T, kd_attn_sm90_d128<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_PP64>>(
      {1, 4, 2, 200, 200, 128, 1, 0, false, -1}, 0.0884f);
  one<T, kd_attn_sm90_d128<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_PP64>>(
      {1, 1, 1, 64, 300, 128, 1, 100, false, 110}, 0.0884f);
  one<T, kd_attn_sm90_d192<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_PP>>(
      {1, 2, 1, 200, 260, 192, 1, 0, false, -1}, 0.07f);
  one<T, kd_attn_sm90_d128<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_SERIAL>>(
      {1, 4, 2, 200, 200, 128, 1, 0, false, -1}, 0.0884f);
  /* P in one term, with and without ping-pong (the bound widened by its
   * rounding, in one()); the default schedule's is round_p's, which the
   * engine ships for every D. */
  one<T, kd_attn_sm90_d128<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_PP + KD_ATTN_SM90_P1>>(
      {1, 4, 2, 200, 200, 128, 1, 0, false, -1}, 0.0884f);
  one<T, kd_attn_sm90_d64<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_NOPP + KD_ATTN_SM90_P1>>(
      {1, 2, 2, 130, 300, 64, 1, 40, false, -1}, 0.125f);
  one<T, kd_attn_sm90_d256<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_PP + KD_ATTN_SM90_P1>>(
      {1, 2, 2, 130, 130, 200, 1, 5, true, -1}, 0.0625f);
  one<T, kd_attn_sm90_d64<KD_ATTN_SM90_P1>>({1, 2, 2, 130, 300, 64, 1, 40, false, -1},
                                0.125f);
  one<T, kd_attn_sm90_d192<KD_ATTN_SM90_P1>>({1, 3, 1, 45, 129, 192, 1, 0, false, -1},
                                 0.07f);
  /* P in two terms for f16 too (the "p2" variant), with and without
   * ping-pong. */
  one<T, kd_attn_sm90_d128<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_PP + KD_ATTN_SM90_P2>>(
      {1, 4, 2, 200, 200, 128, 1, 0, false, -1}, 0.0884f);
  one<T, kd_attn_sm90_d64<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_NOPP + KD_ATTN_SM90_P2>>(
      {1, 2, 2, 130, 300, 64, 1, 40, false, -1}, 0.125f);
  one<T, kd_attn_sm90_d256<KD_ATTN_SM90_FORMS * KD_ATTN_SM90_PP + KD_ATTN_SM90_P2>>(
      {1, 2, 1, 64, 130, 256, 1, 5, false, 20}, 0.0625f);
  /* Other shapes of the loop, in the kernel's form: D 128 on 64-key tiles
   * in two loops, D 64 in one, D 256 overlapped in one loop and in two (no
   * ping-pong). */
  one<T, kd_attn_sm90_cfg<128, 64, 4, 0, true, true>>(
      {1, 4, 2, 200, 200, 128, 1, 0, false, -1}, 0.0884f);
  one<T, kd_attn_sm90_cfg<128, 64, 4, 0, true, true>>(
      {1, 1, 1, 64, 300, 128, 1, 100, false, 110}, 0.0884f);
  one<T, kd_attn_sm90_cfg<64, 128, 3, 0, true, false>>(
      {1, 2, 2, 130, 300, 64, 1, 40, false, -1}, 0.125f);
  one<T, kd_attn_sm90_cfg<256, 64, 2, 0, true, false>>(
      {1, 2, 2, 130, 130, 200, 1, 5, true, -1}, 0.0625f);
  one<T, kd_attn_sm90_cfg<256, 64, 2, 0, true, true>>(
      {1, 2, 2, 130, 130, 200, 1, 5, true, -1}, 0.0625f);
  if constexpr (std::is_same<T, kd_bf16>::value) {
    /* bf16 with V in f16 (the kernel's form, kd_attn_sm90<T, C, TV>): every
     * configuration, a NaN at a partly hidden key (the lane-by-lane P V on
     * the f16 tile), and V far outside f16's range, 2^50 and 2^-90 in
     * alternate kv heads. */
    one<T, c64, kd_half>({1, 2, 2, 130, 300, 64, 1, 40, false, -1}, 0.125f);
    one<T, c64, kd_half>({2, 4, 1, 37, 37, 40, 1, 0, true, -1}, 0.2f);
    one<T, c128, kd_half>({1, 4, 2, 200, 200, 128, 1, 0, false, -1}, 0.0884f);
    one<T, c128, kd_half>({1, 8, 2, 33, 150, 128, 1, 100, true, -1}, 0.5f);
    one<T, c128, kd_half>({1, 2, 1, 70, 150, 128, 1, 80, false, -1}, -0.3f);
    one<T, c128, kd_half>({1, 1, 1, 64, 300, 128, 1, 100, false, 110}, 0.0884f);
    one<T, c192, kd_half>({1, 3, 1, 45, 129, 192, 1, 0, false, -1}, 0.07f);
    one<T, c256, kd_half>({1, 2, 2, 130, 130, 200, 1, 5, true, -1}, 0.0625f);
    one<T, c256, kd_half>({1, 2, 1, 64, 130, 256, 1, 5, false, 20}, 0.0625f);
    one<T, c128, kd_half>({2, 4, 2, 70, 300, 128, 0, 0, false, -1}, 0.0884f,
                          false, 50);
    one<T, c128, kd_half>({2, 4, 2, 70, 300, 128, 1, 230, true, -1}, 0.0884f,
                          false, 90);
  }
}

/* The engine's choice: the Hopper kernel by default where kd_wg_available()
 * (here KILN_EMU_SM=90 at warp 32), none where the context's tuning says
 * hopper 0 (the desc's no_hopper). */
static void routing() {
  setenv("KILN_EMU_SM", "90", 1);
  ke__attention_desc a = {};
  a.b = a.hq = a.hkv = a.sq = a.sk = 1;
  a.d = 64;
  a.no_hopper = 1;
  g_cases++;
  const int rc = ke__attention_sm90_launch(0, KE_F16, 0, 0, 0, 0, &a);
  if (rc != -1) {
    fprintf(stderr, "wgmma-attn: the tuning's hopper 0 did not turn the "
                    "Hopper kernel off (launch returned %d)\n", rc);
    g_failures++;
    kt_planted_stop("wgmma-attn", g_failures);
  } else {
    printf("ok  the tuning's hopper 0 turns the Hopper kernel off\n");
  }
  one<kd_bf16, kd_attn_sm90_d128<>>({1, 2, 1, 70, 90, 128, 1, 0, false, -1},
                              0.0884f, true);
  one<kd_half, kd_attn_sm90_d128<>>({1, 2, 1, 70, 90, 128, 1, 0, false, -1},
                              0.0884f, true);
  /* With the workspace, as the engine gives it: V in f16. */
  one<kd_bf16, kd_attn_sm90_d128<>>({1, 2, 2, 70, 90, 128, 1, 0, false, -1},
                              0.0884f, true, 40, true);
  unsetenv("KILN_EMU_SM");
}

int main(int argc, char **argv) {
  kt_planted_args("wgmma-attn", argc, argv, KD_PLANT_RS | KD_PLANT_WAIT | KD_PLANT_PINGPONG);
  if (kemu_set_warp_size(32) != hipSuccess) return 2;
  routing();
  all<kd_bf16>();
  all<kd_half>();
  if (g_failures) {
    fprintf(stderr, "wgmma-attn: %d of %d cases failed\n", g_failures,
            g_cases);
    return 1;
  }
  printf("wgmma-attn: %d cases within the attention bound\n", g_cases);
  return 0;
}
