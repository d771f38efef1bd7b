/* OCP Microscaling (MX v1.0) weights: MXFP4 (E2M1) and MXFP6 (E2M3, E3M2)
 * elements in blocks of 32 sharing an E8M0 scale; layout in kiln/mxfp.h.
 *
 * Decoding is integer work, exact: the element's significand and the
 * combined exponent (element exponent + scale - 127) are assembled into an
 * f32 bit pattern, normal, subnormal (down to 2^-131, exact in f32 on any
 * device whatever its denormal mode), or Inf when above 2^127; scale 0xFF
 * gives NaN. A 6-bit element is read from the one or two bytes that hold
 * it, inside its 3-byte group, so no read ever leaves its block (the
 * original engine's 6-bit kernel read one byte past its block).
 *
 * Dequantisation, vector kernel (packed data 4-byte aligned, every output
 * row start 16-byte aligned): one thread per 8 elements of MXFP4 (one
 * 4-byte load), 16 of MXFP6 into 16-bit (three 4-byte loads) or 8 of MXFP6
 * into f32 (three 2-byte loads), the scale byte read once per thread,
 * 16-byte stores. Codes decode through a per-block
 * shared-memory table of their values at unit scale, multiplied by
 * 2^(scale - 127): exact and identical to the integer decoding whenever
 * the result is normal, zero or overflows (scales 5 .. 254); the few
 * scales that can give f32 subnormals (0 .. 4) and the NaN scale take the
 * integer path, so results do not depend on the denormal mode. Scalar
 * kernel otherwise: one thread per element, grid-stride. Any rows, cols a
 * multiple of 32.
 *
 * The fused GEMM Y = X * dequant(W)^T decodes W while it is staged for
 * one of ke_gemm's kernels (tile/mx.h), so no dequantised copy of W exists:
 * bf16 X on the matrix units with W decoded to bf16 (exact), f16 and f32 X
 * on the SIMT kernel with W decoded to f32 (exact). Either way the result
 * equals dequantising to that type then ke_gemm, bit for bit.
 */
#include "tile/gemm_mma.h"
#include "tile/mx.h"

template <int F, typename Tout>
__global__ void ke_mxfp_dequant_rows(const uint8_t *__restrict__ data,
                                     const uint8_t *__restrict__ scales,
                                     int64_t rows, int64_t cols,
                                     Tout *__restrict__ out, int64_t ld) {
  const int64_t row_bytes = cols * kd_mx_traits<F>::bits / 8;
  const int64_t row_blocks = cols / KE_MX_BLOCK;
  const int64_t total = rows * cols;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t r = i / cols, c = i - r * cols;
    const unsigned code =
        kd_mx_code<kd_mx_traits<F>::bits>(data + r * row_bytes, c);
    const unsigned s = scales[r * row_blocks + c / KE_MX_BLOCK];
    out[r * ld + c] = kd_from_float<Tout>(kd_mx_decode<F>(code, s));
  }
}

/* Elements per thread of the vector dequantisation: 8 (4 bytes) of MXFP4;
 * 16 (12 bytes, three 4-byte loads) of MXFP6 into 16-bit outputs, 8 (6
 * bytes, three 2-byte loads) into f32. A thread's output is then at most
 * 32 contiguous bytes, so each 16-byte store instruction of a warp covers
 * one half of every 32-byte sector it touches: at 64 bytes per thread
 * (MXFP6 -> f32 with 16 elements) each store spans twice the cache lines
 * and the kernel ran at 57 % of copy on the H100 against 91 % for
 * MXFP4 -> f32 (docs/decisions/memory-bound.md). */
template <int Bits, typename Tout> struct ke_mxfp_vec {
  enum { n = Bits == 4 ? 8 : (sizeof(Tout) == 4 ? 8 : 16) };
};

/* Loads the packed bytes of one thread's N elements into w[] as
 * little-endian 32-bit words; bytes at p, 4-byte aligned when the thread's
 * share is a multiple of 4 bytes, else (6 bytes) 2-byte aligned. */
template <int Bytes>
__device__ __forceinline__ void ke_mxfp_load(const uint8_t *p, uint32_t *w) {
  if constexpr (Bytes % 4 == 0) {
    KD_UNROLL
    for (int k = 0; k < Bytes / 4; k++) w[k] = ((const uint32_t *)p)[k];
  } else {
    static_assert(Bytes == 6, "2-byte loads are for 6-byte shares");
    const uint16_t *h = (const uint16_t *)p;
    w[0] = (uint32_t)h[0] | (uint32_t)h[1] << 16;
    w[1] = h[2];
  }
}

template <int F, typename Tout>
__global__ void __launch_bounds__(256)
ke_mxfp_dequant_vec(const uint8_t *__restrict__ data,
                    const uint8_t *__restrict__ scales, int64_t rows,
                    int64_t cols, Tout *__restrict__ out, int64_t ld) {
  constexpr int bits = kd_mx_traits<F>::bits;
  constexpr int N = ke_mxfp_vec<bits, Tout>::n;
  __shared__ float lut[64];
  for (int i = threadIdx.x; i < (1 << bits); i += blockDim.x)
    lut[i] = kd_mx_decode<F>((unsigned)i, 127u);
  __syncthreads();
  const int64_t row_bytes = cols * bits / 8;
  const int64_t row_blocks = cols / KE_MX_BLOCK;
  const int64_t per_row = cols / N;
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  const int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  const int64_t step_r = step / per_row, step_g = step - step_r * per_row;
  int64_t r = i0 / per_row, g = i0 - r * per_row;
  while (r < rows) {
    const int64_t c = g * N;
    uint32_t w[3];
    ke_mxfp_load<N * bits / 8>(data + r * row_bytes + c * bits / 8, w);
    const unsigned sc = scales[r * row_blocks + c / KE_MX_BLOCK];
    unsigned code[N];
    KD_UNROLL
    for (int e = 0; e < N; e++) {
      /* Element e is bits e * bits .. of the little-endian packed words. */
      const int bit = e * bits, word = bit / 32, off = bit % 32;
      uint32_t u = w[word] >> off;
      if (off + bits > 32) u |= w[word + 1] << (32 - off);
      code[e] = u & ((1u << bits) - 1u);
    }
    float v[N];
    if (sc >= 5u && sc <= 254u) {
      const float mul = kd_bits_f32(sc << 23); /* 2^(sc - 127), normal */
      KD_UNROLL
      for (int e = 0; e < N; e++) v[e] = lut[code[e]] * mul;
    } else {
      KD_UNROLL
      for (int e = 0; e < N; e++) v[e] = kd_mx_decode<F>(code[e], sc);
    }
    Tout *o = out + r * ld + c;
    KD_UNROLL
    for (int k = 0; k < N / KD_VEC; k++) kd_store_vec(o + k * KD_VEC, v + k * KD_VEC);
    r += step_r;
    g += step_g;
    if (g >= per_row) {
      g -= per_row;
      r++;
    }
  }
}

/* Runs __VA_ARGS__ with F the format as a constant; KE_EDTYPE otherwise. */
#define KE_MX_DISPATCH(format, F, ...)                                        \
  switch (format) {                                                           \
  case KE_MXFP4_E2M1: { constexpr int F = KE_MXFP4_E2M1; __VA_ARGS__; break; } \
  case KE_MXFP6_E2M3: { constexpr int F = KE_MXFP6_E2M3; __VA_ARGS__; break; } \
  case KE_MXFP6_E3M2: { constexpr int F = KE_MXFP6_E3M2; __VA_ARGS__; break; } \
  default: return KE_EDTYPE;                                                  \
  }

template <int F, typename Tout>
static int ke_mxfp_dequant_typed(hipStream_t stream, const void *data,
                                 const void *scales, int64_t rows,
                                 int64_t cols, void *out, int64_t ld) {
  const int threads = 256;
  constexpr int N = ke_mxfp_vec<kd_mx_traits<F>::bits, Tout>::n;
  if ((uintptr_t)data % 4 == 0 && (uintptr_t)out % 16 == 0 &&
      (rows == 1 || (ld * (int64_t)sizeof(Tout)) % 16 == 0)) {
    int64_t blocks = (rows * (cols / N) + threads - 1) / threads;
    if (blocks > 65536) blocks = 65536;
    hipLaunchKernelGGL((ke_mxfp_dequant_vec<F, Tout>), dim3((unsigned)blocks),
                       dim3(threads), 0, stream, (const uint8_t *)data,
                       (const uint8_t *)scales, rows, cols, (Tout *)out, ld);
    return (int)hipGetLastError();
  }
  int64_t blocks = (rows * cols + threads - 1) / threads;
  if (blocks > 65536) blocks = 65536;
  hipLaunchKernelGGL((ke_mxfp_dequant_rows<F, Tout>), dim3((unsigned)blocks),
                     dim3(threads), 0, stream, (const uint8_t *)data,
                     (const uint8_t *)scales, rows, cols, (Tout *)out, ld);
  return (int)hipGetLastError();
}

extern "C" int ke__mxfp_dequant_launch(void *stream, int format,
                                       const void *data, const void *scales,
                                       int64_t rows, int64_t cols,
                                       ke_dtype out_dtype, void *out,
                                       int64_t out_ld) {
  hipStream_t s = (hipStream_t)stream;
  KE_MX_DISPATCH(format, F,
    KD_DISPATCH_IN(out_dtype, Tout,
      return ke_mxfp_dequant_typed<F, Tout>(s, data, scales, rows, cols, out,
                                            out_ld)))
  return (int)hipErrorInvalidValue;
}

/* ---- The fused GEMM ------------------------------------------------------ */

/* f32 and f16 X (and bf16 X without matrix units): the SIMT kernel with W
 * decoded to f32 as it is loaded. One block per multiprocessor's worth of
 * registers: at two (128 registers) the decoding of 6-bit codes spilled. */
typedef kd_gemm_cfg<128, 128, 8, 1> ke_mxfp_simt_cfg;

template <int F, typename Tx, typename Ty>
static int ke_mxfp_gemm_simt(hipStream_t stream, const ke__gemm_operand *x,
                             const void *w_data, const void *w_scales,
                             void *y, int64_t ldy, int64_t ybs, int64_t m,
                             int64_t n, int64_t k, int64_t batch) {
  const kd_gemm_dense<Tx> lx =
      kd_gemm_dense_of<Tx>(x->data, x->ld, x->batch_stride, 1);
  const kd_mx_operand<F> lw = {(const uint8_t *)w_data,
                               (const uint8_t *)w_scales,
                               k * kd_mx_traits<F>::bits / 8, k / KE_MX_BLOCK};
  return kd_gemm_run<kd_gemm_dense<Tx>, kd_mx_operand<F>, Ty,
                     ke_mxfp_simt_cfg>(stream, lx, lw, y, ldy, ybs, m, n, k,
                                       batch, 1.0f, 0.0f);
}

/* bf16 X on the matrix units, W decoded to bf16 (exact) as it is staged. */
template <class Arch, int F, class Cfg, bool VEC>
static int ke_mxfp_gemm_mma_cfg(hipStream_t s, const kd_gemm_mma_dense &x,
                                const kd_mx_mm &w, const kd_gemm_mma_out &y,
                                const kd_gemm_mma_dims &d) {
  constexpr int th = Cfg::WARPS * Arch::WARP;
  return kd_gemm_mma_launch<
      Arch, kd_bf16, Cfg, true, true,
      kd_gemm_mma_dense_stager<th, Cfg::BM, Cfg::BK, true, VEC>,
      kd_mx_stager<F, th, Cfg::BN, Cfg::BK>>(s, x, w, y, d);
}

template <class Arch, int F>
static int ke_mxfp_gemm_mma(hipStream_t s, const ke__gemm_operand *x,
                            const kd_mx_mm &w, const kd_gemm_mma_out &y,
                            const kd_gemm_mma_dims &d) {
  const kd_gemm_mma_dense dx = {(const uint16_t *)x->data, x->ld,
                                x->batch_stride};
  if (!kd_gemm_mma_aligned(x->data, x->ld, x->batch_stride))
    return kd_gemm_mma_with_promotion<
        Arch, typename kd_gemm_mma_configs<Arch>::small>(d.k, [&](auto cfg) {
      return ke_mxfp_gemm_mma_cfg<Arch, F, decltype(cfg), false>(s, dx, w, y,
                                                                 d);
    });
  return kd_gemm_mma_with_config<Arch>(d.m, d.n, d.k, d.batch, [&](auto cfg) {
    return ke_mxfp_gemm_mma_cfg<Arch, F, decltype(cfg), true>(s, dx, w, y, d);
  });
}

/* The matrix-core kernel for bf16 X where the device has a matrix unit;
 * -1 when it does not apply. f16 cannot hold every MX value (they reach
 * 28 * 2^127 and down to 2^-131), so f16 X stays on the SIMT kernel. */
template <int F>
static int ke_mxfp_gemm_try_mma(hipStream_t s, const ke__gemm_operand *x,
                                const void *w_data, const void *w_scales,
                                const kd_gemm_mma_out &y,
                                const kd_gemm_mma_dims &d) {
  if (x->dtype != KE_BF16) return -1;
  const kd_mma_kind kind = kd_mma_device_kind();
  const uintptr_t need = kd_mx_traits<F>::bits == 4 ? 4 : 2;
  const kd_mx_mm w = {(const uint8_t *)w_data, (const uint8_t *)w_scales,
                      d.k * kd_mx_traits<F>::bits / 8, d.k / KE_MX_BLOCK,
                      (uintptr_t)w_data % need == 0};
#if KD_MMA_HAS_NV
  if (kind == KD_MMA_NV) return ke_mxfp_gemm_mma<kd_mma_nv, F>(s, x, w, y, d);
#endif
#if KD_MMA_HAS_CDNA
  if (kind == KD_MMA_CDNA)
    return ke_mxfp_gemm_mma<kd_mma_cdna, F>(s, x, w, y, d);
#endif
  (void)kind;
  (void)w;
  return -1;
}

/* kernels/gemm_sm90.hip: bf16 X on the Hopper GEMM, -1 where it does not
 * apply. */
extern "C" int
ke__mxfp_gemm_sm90_launch(void *stream, const ke__gemm_operand *x, int format,
                          const void *w_data, const void *w_scales,
                          const kd_gemm_mma_out *y, const kd_gemm_mma_dims *d);

extern "C" int ke__mxfp_gemm_launch(void *stream, const ke__gemm_operand *x,
                                    int format, const void *w_data,
                                    const void *w_scales, ke_dtype y_dtype,
                                    void *y, int64_t ldy,
                                    int64_t y_batch_stride, int64_t m,
                                    int64_t n, int64_t k, int64_t batch) {
  hipStream_t s = (hipStream_t)stream;
  const kd_gemm_mma_out yo = {y, (int)y_dtype, ldy, y_batch_stride};
  const kd_gemm_mma_dims d = {m, n, k, batch, 1.0f, 0.0f};
  const int rc90 =
      ke__mxfp_gemm_sm90_launch(stream, x, format, w_data, w_scales, &yo, &d);
  if (rc90 >= 0) return rc90;
  KE_MX_DISPATCH(
      format, F,
      const int rc = ke_mxfp_gemm_try_mma<F>(s, x, w_data, w_scales, yo, d);
      if (rc >= 0) return rc;
      KD_DISPATCH_IN(x->dtype, Tx,
                     KD_DISPATCH_IN(y_dtype, Ty,
                                    return ke_mxfp_gemm_simt<F, Tx, Ty>(
                                        s, x, w_data, w_scales, y, ldy,
                                        y_batch_stride, m, n, k, batch))))
  return (int)hipErrorInvalidValue;
}
