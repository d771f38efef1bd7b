/* kiln engine: OCP Microscaling (MX v1.0) weights: MXFP4 and MXFP6 blocks,
 * device dequantisation, the dequantise-in-the-tile GEMM, and the double
 * reference encoder and decoder. Kernels: kernels/mxfp.hip and
 * kernels/tile/mx.h; entry points and references: engine/src/mxfp.c;
 * tolerances: docs/kernels-gemm.md.
 */
#ifndef KILN_MXFP_H
#define KILN_MXFP_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Formats ------------------------------------------------------------ */

/* Element formats. A code is sign, exponent, mantissa from the most
 * significant bit down; exponent field 0 is subnormal, value
 * (-1)^s * 2^(1 - bias) * m / 2^mbits; otherwise (-1)^s * 2^(e - bias) *
 * (1 + m / 2^mbits). No code is Inf or NaN.
 *
 *   format         bits  bias  emax  max normal  min normal  min subnormal
 *   MXFP4  E2M1     4     1     2      6.0         1.0         0.5
 *   MXFP6  E2M3     6     1     2      7.5         1.0         0.125
 *   MXFP6  E3M2     6     3     4     28.0         0.25        0.0625
 *
 * Every block of 32 consecutive elements of a row shares one E8M0 scale
 * byte s: the block's values are element * 2^(s - 127) for s = 0..254, and
 * s = 0xFF is NaN: every element of that block decodes to NaN. */
typedef enum {
  KE_MXFP4_E2M1 = 0,
  KE_MXFP6_E2M3 = 1,
  KE_MXFP6_E3M2 = 2,
} ke_mxfp_format;

#define KE_MX_BLOCK 32      /* elements per scale */
#define KE_MX_SCALE_NAN 0xFF

/* ---- Layout ------------------------------------------------------------- */

/* A rows x cols matrix of MX elements, cols a multiple of 32. The same
 * descriptor describes device memory (ke_mxfp_dequant, ke_mxfp_gemm) and
 * host memory (the references).
 *
 * data: rows back to back, row r at byte r * cols * bits / 8. Within a row,
 * block j (elements 32j .. 32j + 31) is bytes [j * B, (j + 1) * B) with
 * B = 16 (MXFP4) or 24 (MXFP6): blocks are whole bytes, back to back.
 *   MXFP4: element i is in byte i / 2: even i in the low nibble (bits 0-3),
 *          odd i in the high nibble (bits 4-7).
 *   MXFP6: elements 4g .. 4g + 3 are in bytes 3g, 3g + 1, 3g + 2, read as
 *          the little-endian 24-bit word w = b0 | b1 << 8 | b2 << 16;
 *          element 4g + j is bits 6j .. 6j + 5 of w (element 4g + 1 is the
 *          top two bits of b0 and the low four of b1).
 * scales: one E8M0 byte per block, row-major [rows, cols / 32]: block j of
 * row r at scales[r * cols / 32 + j].
 * Neither pointer needs any alignment. The kernels read only the bytes
 * above: never a byte past a block, a row or the matrix. */
typedef struct ke_mxfp_matrix {
  ke_mxfp_format format;
  int64_t rows;
  int64_t cols;            /* multiple of KE_MX_BLOCK */
  void *data;              /* packed elements */
  void *scales;            /* E8M0 bytes */
} ke_mxfp_matrix;

/* "e2m1", "e2m3", "e3m2"; "invalid" otherwise. */
const char *ke_mxfp_format_name(ke_mxfp_format format);
/* 4 or 6; 0 for an invalid format. */
int ke_mxfp_element_bits(ke_mxfp_format format);
/* Bytes of data and of scales for rows x cols; 0 when the format is
 * invalid, cols is not a positive multiple of 32 or rows < 1. */
size_t ke_mxfp_data_bytes(ke_mxfp_format format, int64_t rows, int64_t cols);
size_t ke_mxfp_scale_bytes(int64_t rows, int64_t cols);

/* ---- Device ------------------------------------------------------------- */

/* out[r, c] = element(r, c) * 2^(s - 127), out a [rows, cols] tensor of
 * f32, f16 or bf16 with a contiguous last dimension (the row stride may be
 * wider). Each value is exact before it is rounded once, to nearest even,
 * to out's dtype: it becomes +-Inf beyond that dtype's range (2.0 with
 * s = 254 is 2^128, Inf in f32) and a subnormal or zero below it. A NaN
 * scale gives NaN for its whole block.
 *
 * Refuses: cols not a multiple of 32, rows < 1, shape mismatch, a bad row
 * stride (KE_ESHAPE); a format or dtype outside the lists (KE_EDTYPE);
 * NULL pointers (KE_EINVAL). */
int ke_mxfp_dequant(ke_context *ctx, const ke_mxfp_matrix *w, ke_tensor *out);

/* Y = X * dequant(W)^T, the linear layer with MX weights:
 *
 *   Y[b, m, n] = sum_k X[b, m, k] * dequant(W)[n, k]
 *
 * X: [M, K] or [batch, M, K], f32/f16/bf16, laid out as ke_gemm's A (last
 * dimension contiguous, row and batch strides free); W: N rows of K
 * elements (K a multiple of 32), shared by every batch; Y: [M, N] or
 * [batch, M, N], any of the three dtypes, written and never read.
 *
 * Fused: W's elements (code and block scale) are decoded while they are
 * staged for one of ke_gemm's kernels, so no dequantised copy of W is ever
 * made. bf16 X (on a device with matrix units): the matrix-core kernel,
 * W decoded to bf16, which holds every MX value exactly; the result equals
 * ke_mxfp_dequant to bf16 followed by ke_gemm (trans_b = 1), bit for bit.
 * f16 and f32 X: the SIMT kernel, W decoded to f32 (f16 cannot hold every
 * MX value); the result equals ke_mxfp_dequant to f32 followed by ke_gemm,
 * bit for bit. Refuses as ke_gemm and ke_mxfp_dequant do (K of X must
 * equal W's cols). */
int ke_mxfp_gemm(ke_context *ctx, const ke_tensor *x, const ke_mxfp_matrix *w,
                 ke_tensor *y);

/* ---- References (host memory) ------------------------------------------- */

/* The value of one element code under an E8M0 scale, in double (exact):
 * NaN when scale is 0xFF. */
double ke_mxfp_value_ref(ke_mxfp_format format, unsigned code,
                         unsigned scale);

/* Decodes w (host memory) into out[rows * cols], packed row-major. */
int ke_mxfp_dequant_ref(const ke_mxfp_matrix *w, double *out);

/* The reference encoder (OCP MX v1.0, section 6.3), x[rows * cols] packed
 * row-major into w->data and w->scales (host memory). Per block of 32:
 *   - any NaN or +-Inf: scale 0xFF (the block is NaN; no element format
 *     here has Inf), element codes 0;
 *   - otherwise shared_exp = floor(log2(max |x|)) - emax (2 for E2M1 and
 *     E2M3, 4 for E3M2), -127 for an all-zero block, raised to -127 when
 *     below it (scale byte 0); above 127, reachable only from doubles
 *     beyond the f32 range, the block is NaN as in the spec's reference
 *     code (microxcaling);
 *   - each element x / 2^shared_exp rounded to nearest, ties to even, in
 *     the element format, subnormals included; magnitudes beyond the max
 *     normal saturate to +-max (6.0, 7.5, 28.0). The sign is kept (-0.0
 *     and negatives that round to zero get the sign bit).
 * Refuses cols not a positive multiple of 32 (KE_ESHAPE), a bad format
 * (KE_EDTYPE), NULL pointers (KE_EINVAL). */
int ke_mxfp_quantize_ref(const double *x, const ke_mxfp_matrix *w);

#ifdef __cplusplus
}
#endif
#endif
