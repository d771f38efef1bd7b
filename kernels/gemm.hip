/* Batched GEMM: C = alpha * op(A) * op(B) + beta * C over a batch of
 * matrices, A, B and C each f32, f16 or bf16, f32 accumulation.
 *
 * Algorithm: the 64 x 64 x 16 shared-memory tile kernel of kd-gemm.h with
 * both operands dense. The engine (engine/src/gemm.c) turns op(B) into the
 * kernel's [N, K] view, so trans_b = 1 (B stored [N, K], attention's K) is
 * the k-contiguous load and trans_b = 0 the row-contiguous one; likewise
 * for A with the flag inverted. Any M, N, K >= 1, any batch count, any row
 * and batch strides (0 shares a matrix across the batch); the engine
 * refuses the layouts the kernel cannot write safely. 27 dtype triples are
 * instantiated; transposition is a run-time flag of the loads.
 */
#include "kd-gemm.h"

template <typename Ta, typename Tb, typename Tc>
static int ke_gemm_launch_typed(hipStream_t stream, const ke__gemm_operand *a,
                                const ke__gemm_operand *b, void *c,
                                int64_t ldc, int64_t cbs, int64_t m,
                                int64_t n, int64_t k, int64_t batch,
                                float alpha, float beta) {
  kd_gemm_dense<Ta> la = {(const Ta *)a->data, a->ld, a->batch_stride,
                          a->k_contiguous};
  kd_gemm_dense<Tb> lb = {(const Tb *)b->data, b->ld, b->batch_stride,
                          b->k_contiguous};
  return kd_gemm_run<kd_gemm_dense<Ta>, kd_gemm_dense<Tb>, Tc>(
      stream, la, lb, c, ldc, cbs, m, n, k, batch, alpha, beta);
}

extern "C" int ke__gemm_launch(void *stream, const ke__gemm_operand *a,
                               const ke__gemm_operand *b, ke_dtype c_dtype,
                               void *c, int64_t ldc, int64_t c_batch_stride,
                               int64_t m, int64_t n, int64_t k,
                               int64_t batch, float alpha, float beta) {
  hipStream_t s = (hipStream_t)stream;
  KD_DISPATCH_IN(a->dtype, Ta,
    KD_DISPATCH_IN(b->dtype, Tb,
      KD_DISPATCH_IN(c_dtype, Tc,
        return ke_gemm_launch_typed<Ta, Tb, Tc>(s, a, b, c, ldc,
                                                c_batch_stride, m, n, k,
                                                batch, alpha, beta))))
  return (int)hipErrorInvalidValue;
}
