/* The MX GEMM on the Hopper GEMM (kernels/tile/mx_sm90.h) on the host
 * emulation at warp 32, called directly (no engine): each MX element
 * format, W's rows past N and a last slab of one block (K = 32 mod 64),
 * scales on the table path and on the integer one (0 .. 4), X batched
 * and shared, f32 and bf16 Y (the register and the TMA-store epilogue),
 * several tiles a block. Each case must equal, bit for bit, the Hopper
 * GEMM on W dequantised to bf16 by the host (kd_mx_decode, exact in
 * bf16), and lie within the f32-sum bound of a double reference. Run
 * again with `--planted mx` (the producer writes W's chunks without the
 * swizzle, planted.h), where it must fail (meson: should_fail).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "tile/mx_sm90.h"
#include "tile/gemm_sm90_variants.h"
#include "planted.h"

static int g_failures;

static uint64_t next(uint64_t &s) {
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return s >> 33;
}

template <int F, class Cfg, typename Ty>
static void one(int64_t batch, int64_t m, int64_t n, int64_t k, bool share_x) {
  constexpr int BITS = kd_mx_traits<F>::bits;
  const int64_t ldx = k + 8, sx = share_x ? 0 : ldx * m;
  const int64_t row_bytes = k * BITS / 8, row_blocks = k / KE_MX_BLOCK;
  const int64_t ldy = (n + 7) / 8 * 8 + 8, sy = ldy * m;
  uint16_t *x, *wd;
  uint8_t *codes, *scales;
  Ty *y1, *y2;
  const int64_t nx = share_x ? ldx * m : sx * batch;
  hipMalloc((void **)&x, (size_t)nx * 2);
  hipMalloc((void **)&codes, (size_t)(n * row_bytes));
  hipMalloc((void **)&scales, (size_t)(n * row_blocks));
  hipMalloc((void **)&wd, (size_t)(n * k) * 2);
  hipMalloc((void **)&y1, (size_t)(sy * batch) * sizeof(Ty));
  hipMalloc((void **)&y2, (size_t)(sy * batch) * sizeof(Ty));
  uint64_t seed = (uint64_t)(m * 131 + n * 17 + k + F);
  for (int64_t i = 0; i < nx; i++)
    x[i] = kd_from_float<kd_bf16>((float)(next(seed) % 2001) / 1000.0f - 1.0f)
               .bits;
  for (int64_t i = 0; i < n * row_bytes; i++) codes[i] = (uint8_t)next(seed);
  /* Scales 2^-6 .. 2^6 on the table path; one block in 16 at 0 .. 4 (the
   * integer path, subnormal values). */
  for (int64_t i = 0; i < n * row_blocks; i++)
    scales[i] = (uint8_t)(next(seed) % 16 == 0 ? next(seed) % 5
                                               : 121 + next(seed) % 13);
  for (int64_t r = 0; r < n; r++)
    for (int64_t q = 0; q < k; q++) {
      const unsigned c = kd_mx_code<BITS>(codes + r * row_bytes, q);
      const float v = kd_mx_decode<F>(c, scales[r * row_blocks + q / KE_MX_BLOCK]);
      wd[r * k + q] = (uint16_t)(kd_f32_bits(v) >> 16);
    }
  memset(y1, 0xff, (size_t)(sy * batch) * sizeof(Ty));
  memset(y2, 0xff, (size_t)(sy * batch) * sizeof(Ty));
  const int ydt = sizeof(Ty) == 4 ? KE_F32 : KE_BF16;
  const kd_gemm_mma_dense dx = {x, ldx, sx}, dw = {wd, k, 0};
  const kd_mx_mm w = {codes, scales, row_bytes, row_blocks, 1};
  const kd_gemm_mma_dims d = {m, n, k, batch, 1.0f, 0.0f};
  const kd_gemm_mma_out o1 = {y1, ydt, ldy, sy}, o2 = {y2, ydt, ldy, sy};
  const int rc1 = kd_mx_sm90_run<F, Cfg>(0, dx, w, o1, d);
  const int rc2 = kd_gemm_sm90_run<kd_bf16, Cfg>(0, dx, true, dw, true, o2, d);
  if (rc1 != 0 || rc2 != 0 || hipStreamSynchronize(0) != hipSuccess) {
    fprintf(stderr, "wgmma-mx: launch failed (%d, %d)\n", rc1, rc2);
    g_failures++;
    kt_planted_stop("wgmma-mx", g_failures);
    return;
  }
  auto xval = [&](int64_t bi, int64_t i, int64_t q) {
    kd_bf16 t;
    t.bits = x[bi * sx + i * ldx + q];
    return (double)kd_to_float(t);
  };
  auto wval = [&](int64_t j, int64_t q) {
    kd_bf16 t;
    t.bits = wd[j * k + q];
    return (double)kd_to_float(t);
  };
  const double u = ldexp(1.0, -24), out_u = sizeof(Ty) == 4 ? 0 : ldexp(1.0, -8);
  int64_t differ = 0, first = -1;
  double worst = 0;
  for (int64_t bi = 0; bi < batch; bi++)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        const int64_t at = bi * sy + i * ldy + j;
        if (memcmp(&y1[at], &y2[at], sizeof(Ty)) != 0 && differ++ == 0)
          first = at;
        double s = 0, sq = 0;
        for (int64_t q = 0; q < k; q++) {
          s += xval(bi, i, q) * wval(j, q);
          sq += s * s;
        }
        const double tol = 8 * u * sqrt(sq) + 2 * u * fabs(s) +
                           out_u * fabs(s) + 1e-30;
        const double err = fabs(kd_to_float(y1[at]) - s) / tol;
        if (!(err <= worst)) worst = err;
      }
  if (differ || !(worst <= 1.0)) {
    fprintf(stderr,
            "wgmma-mx: format %d, BN %d, Y of %d bytes, batch %lld%s, "
            "%lldx%lldx%lld: %lld elements differ from the GEMM on the "
            "dequantised W (first at %lld: %.9g against %.9g), worst error "
            "%.3g of the tolerance\n",
            F, Cfg::BN, (int)sizeof(Ty), (long long)batch,
            share_x ? " (X shared)" : "", (long long)m, (long long)n,
            (long long)k, (long long)differ, (long long)first,
            first >= 0 ? kd_to_float(y1[first]) : 0.0,
            first >= 0 ? kd_to_float(y2[first]) : 0.0, worst);
    g_failures++;
  }
  hipFree(x);
  hipFree(codes);
  hipFree(scales);
  hipFree(wd);
  hipFree(y1);
  hipFree(y2);
  kt_planted_stop("wgmma-mx", g_failures);
}

int main(int argc, char **argv) {
  kt_planted_args("wgmma-mx", argc, argv, KD_PLANT_MX);
  if (kemu_set_warp_size(32) != hipSuccess) return 2;
  typedef kd_gemm_sm90_v128_e2_pp_tma cfg; /* the engine's (gemm_sm90.hip) */
  one<KE_MXFP4_E2M1, cfg, float>(1, 130, 300, 96, false);
  one<KE_MXFP4_E2M1, cfg, kd_bf16>(2, 70, 136, 224, false);
  one<KE_MXFP6_E2M3, cfg, float>(2, 70, 260, 160, true);
  one<KE_MXFP6_E2M3, cfg, kd_bf16>(1, 5, 9, 32, false);
  one<KE_MXFP6_E3M2, cfg, kd_bf16>(1, 300, 264, 320, false);
  one<KE_MXFP6_E3M2, cfg, float>(3, 33, 70, 224, false);
  if (g_failures) {
    fprintf(stderr, "wgmma-mx: %d cases failed\n", g_failures);
    return 1;
  }
  printf("wgmma-mx: every case equals the GEMM on the dequantised W and is "
         "within the f32-sum bound\n");
  return 0;
}
