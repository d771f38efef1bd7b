/* The Hopper GEMM (kernels/tile/gemm_sm90.h) on the host emulation at warp
 * 32, called directly (no engine): both tile configurations, the
 * promotion's intervals and modes (serial, staggered, overlapped), the
 * tile walk's L2 groups (tile/gemm_sm90_variants.h), every layout
 * of A and B, edges in M, N and K, a batch with one operand shared, alpha
 * and beta, against a double reference with the GEMM suite's f32-sum
 * bound. It runs wgmma through its descriptors and swizzle, TMA and the
 * mbarriers as port/host/hopper-on-host.h executes them. Run again with
 * each of its planted bugs (planted.h: `layer`, a wrong descriptor stride
 * in arch/sm90.h; `wait`, a partial read before its group is waited for;
 * `epi`, an epilogue buffer refilled while its TMA store reads it), where
 * it must fail (meson: should_fail).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <vector>

#include "tile/gemm_sm90_variants.h"
#include "planted.h"

static int g_failures;

static float rnd(uint64_t &s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((s >> 40) & 0xffff) / 32768.0f - 1.0f;
}

/* C[b] (of Tc, ldc n + 3: rows of either parity, so paired stores meet
 * aligned and unaligned pairs; with c16, rows of a multiple of 16 bytes
 * past n, which TMA can write) = alpha A[b] B[b] + beta C[b]; A stored
 * [M][K] (akc) or [K][M], B [N][K] (bkc) or [K][N], rows padded to a
 * multiple of 8 elements. */
template <typename T, class Cfg, typename Tc = float>
static void one(int64_t batch, int64_t m, int64_t n, int64_t k, bool akc,
                bool bkc, bool share_b, float alpha, float beta, bool c16) {
  const int64_t lda = ((akc ? k : m) + 7) / 8 * 8;
  const int64_t ldb = ((bkc ? k : n) + 7) / 8 * 8;
  const int64_t ldc = c16 ? (n + 7) / 8 * 8 + 8 : n + 3;
  const int64_t sa = lda * (akc ? m : k), sb = share_b ? 0 : ldb * (bkc ? n : k);
  const int64_t sc = ldc * m;
  uint16_t *a, *b;
  Tc *c;
  hipMalloc((void **)&a, (size_t)(sa * batch) * 2);
  hipMalloc((void **)&b, (size_t)((share_b ? ldb * (bkc ? n : k) : sb * batch)) * 2);
  hipMalloc((void **)&c, (size_t)(sc * batch) * sizeof(Tc));
  uint64_t seed = (uint64_t)(m * 131 + n * 17 + k);
  const int64_t na = sa * batch, nb = share_b ? ldb * (bkc ? n : k) : sb * batch;
  for (int64_t i = 0; i < na; i++) a[i] = kd_from_float<T>(rnd(seed)).bits;
  for (int64_t i = 0; i < nb; i++) b[i] = kd_from_float<T>(rnd(seed)).bits;
  std::vector<double> c0((size_t)(sc * batch));
  for (int64_t i = 0; i < sc * batch; i++) {
    c[i] = kd_from_float<Tc>(rnd(seed));
    c0[(size_t)i] = kd_to_float(c[i]);
  }
  auto val = [](uint16_t x) {
    T t;
    t.bits = x;
    return (double)kd_to_float(t);
  };
  const kd_gemm_mma_dense da = {a, lda, sa}, db = {b, ldb, sb};
  const int cdt = sizeof(Tc) == 4 ? KE_F32
                  : (std::is_same<Tc, kd_half>::value ? KE_F16 : KE_BF16);
  /* Tc's own rounding of the result, half an ulp (f32: inside 2 u). */
  const double out_u = sizeof(Tc) == 4 ? 0 : (cdt == KE_F16 ? ldexp(1.0, -11)
                                                            : ldexp(1.0, -8));
  const kd_gemm_mma_out co = {c, cdt, ldc, sc};
  const kd_gemm_mma_dims d = {m, n, k, batch, alpha, beta};
  const int rc = kd_gemm_sm90_run<T, Cfg>(0, da, akc, db, bkc, co, d);
  if (rc != 0 || hipStreamSynchronize(0) != hipSuccess) {
    fprintf(stderr, "wgmma-gemm: launch failed (%d)\n", rc);
    g_failures++;
    return;
  }
  const double u = ldexp(1.0, -24);
  double worst = 0;
  for (int64_t bi = 0; bi < batch; bi++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        double s = 0, sq = 0;
        for (int64_t q = 0; q < k; q++) {
          const double x = val(a[bi * sa + (akc ? i * lda + q : q * lda + i)]);
          const double y = val(b[bi * sb + (bkc ? j * ldb + q : q * ldb + j)]);
          s += x * y;
          sq += s * s;
        }
        const double e = alpha * s + beta * c0[bi * sc + i * ldc + j];
        const double tol = fabs(alpha) * 8 * u * sqrt(sq) +
                           2 * u * (fabs(alpha * s) + fabs(beta) * 1.0) +
                           out_u * fabs(e) + 1e-30;
        const double err = fabs(kd_to_float(c[bi * sc + i * ldc + j]) - e) / tol;
        if (!(err <= worst)) worst = err;
      }
  if (!(worst <= 1.0)) {
    if (g_failures < 20)
      fprintf(stderr,
              "wgmma-gemm: BN %d, chunks of %d, mode %d, every %d slabs, "
              "group %d, flags %d, C of %d bytes (ldc %lld), batch %lld, "
              "%lldx%lldx%lld, A %s, B %s: worst error %.3g of the tolerance\n",
              Cfg::BN, Cfg::CW, Cfg::MODE, Cfg::EVERY, Cfg::GROUP,
              Cfg::FLAGS, (int)sizeof(Tc), (long long)ldc, (long long)batch,
              (long long)m, (long long)n,
              (long long)k, akc ? "[M][K]" : "[K][M]", bkc ? "[N][K]" : "[K][N]",
              worst);
    g_failures++;
  }
  hipFree(a);
  hipFree(b);
  hipFree(c);
}

template <typename T, class Cfg, typename Tc = float>
static void layouts(int64_t batch, int64_t m, int64_t n, int64_t k,
                    bool share_b, bool c16 = false) {
  for (int l = 0; l < 4; l++) {
    one<T, Cfg, Tc>(batch, m, n, k, l & 1, l >> 1, share_b,
                    l == 3 ? -0.5f : (l == 2 ? 0.75f : 1.0f),
                    l == 3 ? 0.25f : 0.0f, c16);
    kt_planted_stop("wgmma-gemm", g_failures);
  }
}

int main(int argc, char **argv) {
  kt_planted_args("wgmma-gemm", argc, argv, KD_PLANT_LAYER | KD_PLANT_WAIT | KD_PLANT_EPI);
  if (kemu_set_warp_size(32) != hipSuccess) return 2;
  typedef kd_gemm_sm90_cfg<256, 3> big;
  typedef kd_gemm_sm90_cfg<128, 2> small;
  layouts<kd_bf16, big>(1, 130, 300, 70, false);
  layouts<kd_half, small>(1, 64, 128, 64, false);
  layouts<kd_half, small>(2, 70, 20, 136, true);
  layouts<kd_bf16, small>(1, 5, 9, 3, false);
  /* Longer promotion intervals (K of 3, 5 and 9 slabs: a short last
   * group) and the overlapped promotion: two partials of 64 columns over
   * a 256-column tile, or of the whole 128 columns, the ring position
   * carried across a block's tiles. The UNPROMOTED measuring variant too,
   * for its indexing. */
  typedef kd_gemm_sm90_cfg<256, 3, 128, KD_GEMM_SM90_UNPROMOTED> big_raw;
  layouts<kd_bf16, kd_gemm_sm90_v256_e2>(1, 130, 300, 300, false);
  layouts<kd_half, kd_gemm_sm90_v256_e4>(2, 70, 20, 136, true);
  layouts<kd_bf16, kd_gemm_sm90_v256_ovl_e1>(1, 130, 300, 300, false);
  layouts<kd_half, kd_gemm_sm90_v256_ovl_e2>(2, 70, 20, 560, true);
  layouts<kd_bf16, kd_gemm_sm90_v128_ovl_e1>(1, 200, 300, 300, false);
  layouts<kd_half, kd_gemm_sm90_v128_ovl_e2>(2, 70, 20, 560, true);
  layouts<kd_bf16, kd_gemm_sm90_v128_ovl_e3>(1, 5, 9, 3, false);
  layouts<kd_bf16, big_raw>(1, 130, 300, 136, false);
  /* The staggered promotion (consumer 1's groups a slab later: K of 1, 5
   * and 6 slabs, so a group of one at either end) over several tiles a
   * block, and the tile walk in L2 groups of 4 and 16 tile rows with a
   * short last group (6 x 3 tiles batched, 9 x 2), edges in M and N. */
  layouts<kd_bf16, kd_gemm_sm90_v256_e2_stagger>(1, 130, 300, 300, false);
  layouts<kd_half, kd_gemm_sm90_v256_e2_g16_stagger>(2, 70, 20, 64, true);
  layouts<kd_half, kd_gemm_sm90_v256_e2_stagger>(3, 130, 520, 384, false);
  layouts<kd_bf16, kd_gemm_sm90_v256_e2_g4>(2, 700, 600, 70, false);
  layouts<kd_bf16, kd_gemm_sm90_v256_e2_g16>(1, 1100, 300, 70, false);
  /* Paired stores: C in f32, f16 and bf16, N odd (a last column alone),
   * beta on and off (layouts' fourth case). */
  layouts<kd_bf16, kd_gemm_sm90_v256_e2_g16_vec>(1, 130, 301, 136, false);
  layouts<kd_half, kd_gemm_sm90_v256_e2_g16_vec, kd_half>(2, 70, 263, 72, false);
  layouts<kd_bf16, kd_gemm_sm90_v256_e2_g16_vec, kd_bf16>(1, 130, 300, 136, false);
  layouts<kd_bf16, kd_gemm_sm90_v256_e2_g16, kd_bf16>(1, 130, 300, 136, false);
  /* The consumers' turns in ping-pong (K of 1 to 5 slabs, several tiles a
   * block), and the epilogue through TMA stores: C in f16 and bf16 with
   * rows TMA can write, several tiles a block (each consumer's two
   * buffers reused across them), M and N off the tile edges, batched;
   * beta (layouts' fourth case), f32 C, rows TMA cannot write (ldc n + 3)
   * and N not a multiple of 8 (a row ending inside 16 bytes) through the
   * register epilogue instead. */
  layouts<kd_bf16, kd_gemm_sm90_v256_e2_g16_pp>(1, 130, 300, 300, false);
  layouts<kd_half, kd_gemm_sm90_v256_e2_g16_pp, kd_half>(3, 70, 520, 64, false, true);
  layouts<kd_bf16, kd_gemm_sm90_v256_e2_g16_pp>(2, 700, 600, 70, true);
  layouts<kd_bf16, kd_gemm_sm90_v256_e2_g16_tma, kd_bf16>(1, 700, 608, 136, false,
                                                   true);
  layouts<kd_bf16, kd_gemm_sm90_v256_e2_g16_tma, kd_bf16>(1, 700, 601, 136, false,
                                                   true);
  layouts<kd_half, kd_gemm_sm90_v256_e2_g16_tma, kd_half>(2, 70, 263, 72, true, true);
  layouts<kd_half, kd_gemm_sm90_v256_e2_g16_tma, kd_half>(1, 130, 300, 136, false);
  layouts<kd_bf16, kd_gemm_sm90_v256_e2_g16_tma>(1, 130, 301, 136, false, true);
  layouts<kd_bf16, kd_gemm_sm90_v256_e2_g16_pp_tma, kd_bf16>(3, 130, 520, 330, false,
                                                      true);
  layouts<kd_half, kd_gemm_sm90_v256_e2_g16_pp_tma, kd_half>(1, 700, 600, 64, false,
                                                      true);
  layouts<kd_bf16, kd_gemm_sm90_v256_raw_tma, kd_bf16>(1, 300, 304, 136, false, true);
  /* Every 3 slabs (K of 1 to 6 slabs: groups of 1 and 2 at the end), and
   * the 128 x 128 tile's two TMA-store forms. */
  layouts<kd_half, kd_gemm_sm90_v256_e3_g16_pp_tma, kd_half>(2, 130, 296, 330, false,
                                                      true);
  layouts<kd_bf16, kd_gemm_sm90_v256_e3_g16_pp_tma>(1, 700, 600, 64, false);
  layouts<kd_bf16, kd_gemm_sm90_v128_ovl_e2_tma, kd_bf16>(2, 200, 296, 300, false,
                                                   true);
  layouts<kd_half, kd_gemm_sm90_v128_e2_pp_tma, kd_half>(1, 330, 264, 200, true,
                                                  true);
  if (g_failures) {
    fprintf(stderr, "wgmma-gemm: %d cases failed\n", g_failures);
    return 1;
  }
  printf("wgmma-gemm: all cases within the f32-sum bound\n");
  return 0;
}
