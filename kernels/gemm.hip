/* Batched GEMM: C = alpha * op(A) * op(B) + beta * C over a batch of
 * matrices, A, B and C each f32, f16 or bf16, f32 accumulation.
 *
 * Three kernels. A and B both f16 or both bf16 on a compute capability 9.0
 * GPU (kiln built for sm_90a) with operands TMA can read: the Hopper kernel
 * of tile/gemm_sm90.h (kernels/gemm_sm90.hip). Else, on a device with matrix
 * units: the matrix-core kernel of tile/gemm_mma.h, in one of a few tile
 * configurations chosen by the size of the grid, with the layouts of A and
 * B (which of their indices is contiguous) as template arguments and C's
 * dtype a run-time switch of the epilogue. Everything else (f32, mixed
 * dtypes, a device without matrix units): the SIMT tile kernel of
 * tile/gemm.h (f32 x f32 in a larger tile on large problems). The engine
 * (engine/src/gemm.c) turns op(B) into the kernels' [N, K] view, so trans_b = 1
 * (B stored [N, K], attention's K) is the k-contiguous layout and trans_b = 0
 * the other; likewise for A with the flag inverted. Any M, N, K >= 1, any batch
 * count, any row and batch strides (0 shares a matrix across the batch); the
 * engine refuses the layouts the kernels cannot write safely.
 */
#include "tile/gemm_mma.h"

template <typename Ta, typename Tb, typename Tc>
static int ke_gemm_launch_typed(hipStream_t stream, const ke__gemm_operand *a,
                                const ke__gemm_operand *b, void *c,
                                int64_t ldc, int64_t cbs, int64_t m,
                                int64_t n, int64_t k, int64_t batch,
                                float alpha, float beta) {
  const kd_gemm_dense<Ta> la =
      kd_gemm_dense_of<Ta>(a->data, a->ld, a->batch_stride, a->k_contiguous);
  const kd_gemm_dense<Tb> lb =
      kd_gemm_dense_of<Tb>(b->data, b->ld, b->batch_stride, b->k_contiguous);
  if constexpr (sizeof(Ta) == 4 && sizeof(Tb) == 4)
    return kd_gemm_run_f32<Tc>(stream, la, lb, c, ldc, cbs, m, n, k, batch,
                               alpha, beta, kd_gemm_mma_multiprocessors());
  else
    return kd_gemm_run<kd_gemm_dense<Ta>, kd_gemm_dense<Tb>, Tc>(
      stream, la, lb, c, ldc, cbs, m, n, k, batch, alpha, beta);
}

/* ---- Matrix units ------------------------------------------------------- */

static kd_gemm_mma_dense ke_gemm_mma_operand(const ke__gemm_operand *o) {
  return {(const uint16_t *)o->data, o->ld, o->batch_stride};
}
static bool ke_gemm_mma_aligned(const ke__gemm_operand *o) {
  return kd_gemm_mma_aligned(o->data, o->ld, o->batch_stride);
}

template <class Arch, typename T, class Cfg, bool VEC>
static int ke_gemm_mma_layout(hipStream_t s, const ke__gemm_operand *a,
                              const ke__gemm_operand *b,
                              const kd_gemm_mma_out &c,
                              const kd_gemm_mma_dims &d) {
  constexpr int th = Cfg::WARPS * Arch::WARP;
  const kd_gemm_mma_dense da = ke_gemm_mma_operand(a),
                          db = ke_gemm_mma_operand(b);
#define KE_GEMM_MM(AKC, BKC)                                                   \
  return kd_gemm_mma_launch<                                                   \
      Arch, T, Cfg, AKC, BKC,                                                  \
      kd_gemm_mma_dense_stager<th, Cfg::BM, Cfg::BK, AKC, VEC>,                \
      kd_gemm_mma_dense_stager<th, Cfg::BN, Cfg::BK, BKC, VEC>>(s, da, db, c,  \
                                                                d)
  if (a->k_contiguous) {
    if (b->k_contiguous) KE_GEMM_MM(true, true);
    KE_GEMM_MM(true, false);
  }
  if (b->k_contiguous) KE_GEMM_MM(false, true);
  KE_GEMM_MM(false, false);
#undef KE_GEMM_MM
}

/* Aligned operands: the configuration chosen for the grid. Others: the
 * small configuration with element loads, which is slower but the same
 * arithmetic in the same order. */
template <class Arch, typename T>
static int ke_gemm_mma(hipStream_t s, const ke__gemm_operand *a,
                       const ke__gemm_operand *b, const kd_gemm_mma_out &c,
                       const kd_gemm_mma_dims &d) {
  if (!ke_gemm_mma_aligned(a) || !ke_gemm_mma_aligned(b))
    return kd_gemm_mma_with_promotion<
        Arch, typename kd_gemm_mma_configs<Arch>::small>(d.k, [&](auto cfg) {
      return ke_gemm_mma_layout<Arch, T, decltype(cfg), false>(s, a, b, c, d);
    });
  return kd_gemm_mma_with_config<Arch>(d.m, d.n, d.k, d.batch, [&](auto cfg) {
    return ke_gemm_mma_layout<Arch, T, decltype(cfg), true>(s, a, b, c, d);
  });
}

/* The matrix-core kernel for f16 x f16 and bf16 x bf16 where the device
 * has a matrix unit; -1 when it does not apply. */
static int ke_gemm_try_mma(hipStream_t s, const ke__gemm_operand *a,
                           const ke__gemm_operand *b, const kd_gemm_mma_out &c,
                           const kd_gemm_mma_dims &d) {
  if (a->dtype != b->dtype || (a->dtype != KE_F16 && a->dtype != KE_BF16))
    return -1;
  const kd_mma_kind kind = kd_mma_device_kind();
  const bool f16 = a->dtype == KE_F16;
#if KD_MMA_HAS_NV
  if (kind == KD_MMA_NV)
    return f16 ? ke_gemm_mma<kd_mma_nv, kd_half>(s, a, b, c, d)
               : ke_gemm_mma<kd_mma_nv, kd_bf16>(s, a, b, c, d);
#endif
#if KD_MMA_HAS_CDNA
  if (kind == KD_MMA_CDNA)
    return f16 ? ke_gemm_mma<kd_mma_cdna, kd_half>(s, a, b, c, d)
               : ke_gemm_mma<kd_mma_cdna, kd_bf16>(s, a, b, c, d);
#endif
  (void)kind;
  (void)f16;
  return -1;
}

/* kernels/gemm_sm90.hip: the Hopper kernel, -1 where it does not apply. */
extern "C" int ke__gemm_sm90_launch(void *stream, const ke__gemm_operand *a,
                                    const ke__gemm_operand *b,
                                    const kd_gemm_mma_out *c,
                                    const kd_gemm_mma_dims *d);

/* ---- Entry ---------------------------------------------------------------- */

extern "C" int ke__gemm_launch(void *stream, const ke__gemm_operand *a,
                               const ke__gemm_operand *b, ke_dtype c_dtype,
                               void *c, int64_t ldc, int64_t c_batch_stride,
                               int64_t m, int64_t n, int64_t k,
                               int64_t batch, float alpha, float beta) {
  hipStream_t s = (hipStream_t)stream;
  const kd_gemm_mma_out co = {c, (int)c_dtype, ldc, c_batch_stride};
  const kd_gemm_mma_dims d = {m, n, k, batch, alpha, beta};
  int rc = ke__gemm_sm90_launch(stream, a, b, &co, &d);
  if (rc >= 0) return rc;
  rc = ke_gemm_try_mma(s, a, b, co, d);
  if (rc >= 0) return rc;
  KD_DISPATCH_IN(a->dtype, Ta,
    KD_DISPATCH_IN(b->dtype, Tb,
      KD_DISPATCH_IN(c_dtype, Tc,
        return ke_gemm_launch_typed<Ta, Tb, Tc>(s, a, b, c, ldc,
                                                c_batch_stride, m, n, k,
                                                batch, alpha, beta))))
  return (int)hipErrorInvalidValue;
}
