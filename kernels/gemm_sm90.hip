/* The Hopper GEMM (kernels/tile/gemm_sm90.h) behind ke__gemm_launch
 * (kernels/gemm.hip): f16 x f16 or bf16 x bf16 on a compute capability 9.0
 * device. Its own translation unit so that the cuda build compiles it for
 * sm_90a only (meson's nvidia_archs), the rest of the kernels for the
 * plain targets. Returns -1 where it does not apply (another dtype or
 * device, or operands TMA cannot read), and the caller goes on to the
 * mma.sync kernel.
 */
#include "tile/mx_sm90.h"
#include "tile/gemm_sm90_variants.h"

/* 128 x 256 tiles in 4 slots where they fill every multiprocessor, else
 * 128 x 128 in 6; both promote every 128 k (two slabs) serially, their
 * consumers taking turns (ping-pong), so that one's promotion adds run
 * under the other's multiplies, and write 16-bit C through shared memory
 * and TMA stores while the next tile starts (elsewhere in aligned pairs);
 * the large one walks its tiles in L2 groups of 16 tile rows. The fastest
 * variants measured on an H100 whose error stays under torch's at every K
 * (docs/decisions/gemm.md, "The Hopper GEMM: promotion every 128 k, L2
 * groups of 16", "Ping-pong consumers and TMA stores" and "The small
 * tile"): +17-19 % at 4096^3 and +27-37 % on the
 * small tiles' shapes over the schedules before. */
struct kd_gemm_sm90_large : kd_gemm_sm90_v256_e2_g16_pp_tma {};
struct kd_gemm_sm90_small : kd_gemm_sm90_v128_e2_pp_tma {};

template <typename T>
static int ke_gemm_sm90(hipStream_t s, const kd_gemm_mma_dense &a, bool akc,
                        const kd_gemm_mma_dense &b, bool bkc,
                        const kd_gemm_mma_out &c, const kd_gemm_mma_dims &d) {
  const int64_t tiles_large = ((d.m + 127) / 128) * ((d.n + 255) / 256) *
                              d.batch;
  if (tiles_large >= kd_gemm_mma_multiprocessors())
    return kd_gemm_sm90_run<T, kd_gemm_sm90_large>(s, a, akc, b, bkc, c, d);
  return kd_gemm_sm90_run<T, kd_gemm_sm90_small>(s, a, akc, b, bkc, c, d);
}

extern "C" int ke__gemm_sm90_launch(void *stream, const ke__gemm_operand *a,
                                    const ke__gemm_operand *b,
                                    const kd_gemm_mma_out *c,
                                    const kd_gemm_mma_dims *d) {
#if defined(KILN_BACKEND_HIP)
  (void)stream, (void)a, (void)b, (void)c, (void)d;
  return -1;
#else
  if (a->dtype != b->dtype || (a->dtype != KE_F16 && a->dtype != KE_BF16) ||
      !kd_wg_available())
    return -1;
  const kd_gemm_mma_dense da = {(const uint16_t *)a->data, a->ld,
                                a->batch_stride};
  const kd_gemm_mma_dense db = {(const uint16_t *)b->data, b->ld,
                                b->batch_stride};
  hipStream_t s = (hipStream_t)stream;
  if (a->dtype == KE_F16)
    return ke_gemm_sm90<kd_half>(s, da, a->k_contiguous != 0, db,
                                 b->k_contiguous != 0, *c, *d);
  return ke_gemm_sm90<kd_bf16>(s, da, a->k_contiguous != 0, db,
                               b->k_contiguous != 0, *c, *d);
#endif
}

/* The MX GEMM (kernels/mxfp.hip) on the Hopper GEMM: bf16 X, W decoded by
 * the producer warpgroup (tile/mx_sm90.h), on the 128 x 128 tile at
 * every size: its producer threads own one row of W each, and the codes
 * of two rows a thread, a slab ahead, would not fit the producer's
 * registers. -1 where it does not apply. */
extern "C" int
ke__mxfp_gemm_sm90_launch(void *stream, const ke__gemm_operand *x, int format,
                          const void *w_data, const void *w_scales,
                          const kd_gemm_mma_out *y, const kd_gemm_mma_dims *d) {
#if defined(KILN_BACKEND_HIP)
  (void)stream, (void)x, (void)format, (void)w_data, (void)w_scales;
  (void)y, (void)d;
  return -1;
#else
  if (x->dtype != KE_BF16 || !x->k_contiguous || !kd_wg_available())
    return -1;
  const kd_gemm_mma_dense dx = {(const uint16_t *)x->data, x->ld,
                                x->batch_stride};
  hipStream_t s = (hipStream_t)stream;
  auto run = [&](auto f) {
    constexpr int F = decltype(f)::value;
    const kd_mx_mm w = {(const uint8_t *)w_data, (const uint8_t *)w_scales,
                        d->k * kd_mx_traits<F>::bits / 8, d->k / KE_MX_BLOCK,
                        1};
    return kd_mx_sm90_run<F, kd_gemm_sm90_small>(s, dx, w, *y, *d);
  };
  switch (format) {
  case KE_MXFP4_E2M1: return run(std::integral_constant<int, KE_MXFP4_E2M1>());
  case KE_MXFP6_E2M3: return run(std::integral_constant<int, KE_MXFP6_E2M3>());
  case KE_MXFP6_E3M2: return run(std::integral_constant<int, KE_MXFP6_E3M2>());
  default: return -1;
  }
#endif
}
