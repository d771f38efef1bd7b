/* kiln engine: SwiGLU, the gated activation of Llama-style MLPs.
 * Kernel: kernels/swiglu.hip; entry point and reference:
 * engine/src/swiglu.c; tolerances and limits: docs/kernels.md.
 */
#ifndef KILN_SWIGLU_H
#define KILN_SWIGLU_H

#include <stdint.h>

#include "kiln/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- SwiGLU --------------------------------------------------------------- */

/*   out = silu(gate) * up,   silu(v) = v * sigmoid(v) = v / (1 + exp(-v))
 *
 * This is the standard form (Shazeer 2020; Llama, Mistral, Qwen, PyTorch's
 * F.silu(gate) * up, vLLM's SiluAndMul): the swish goes on the GATE
 * projection. The original engine applied it to `up` (gate * silu(up)),
 * which is a different function: the two agree only where gate == up, so
 * weights trained for one give wrong activations under the other. Code
 * ported from that engine must swap its arguments (or its fused halves).
 *
 * Inputs, either:
 *   two tensors: gate and up of the same shape [..., F] and dtype; or
 *   fused (up == NULL): gate is one [..., 2F] tensor holding gate in
 *     [..., 0:F] and up in [..., F:2F] (the output of a merged gate_up
 *     projection, the vLLM/Phi-3/ChatGLM2 order).
 * out is [..., F]. Any rank 1..KE_MAX_RANK, any F >= 1, any number of rows;
 * each tensor's last dimension contiguous and its leading dimensions
 * collapsing to one row stride (a slice is fine). out may be gate or up
 * itself (same data, dtype and row stride), computing in place; other
 * overlaps are undefined.
 *
 * Dtypes: gate and up f32/f16/bf16 (the same), out f32/f16/bf16; math in
 * f32, one rounding at the end.
 *
 * Sigmoid is evaluated so that exp never overflows: for v >= 0 as
 * 1 / (1 + exp(-v)), for v < 0 as e / (1 + e) with e = exp(v). So
 * silu(1e4) = 1e4, silu(-1e4) = -0, no NaN or Inf for any finite input;
 * silu(+inf) = +inf, silu(-inf) = -0 (the limit), silu(NaN) = NaN. The
 * product follows IEEE: NaN in gate or up gives NaN, silu(-inf) * inf = NaN,
 * and a finite product beyond the output dtype's range rounds to Inf.
 *
 * Refused: shapes that do not match (or an odd fused last dimension),
 * non-contiguous last dimension, rows that do not collapse to one stride,
 * out sharing an input's data with another dtype or stride (KE_ESHAPE);
 * dtypes outside f32/f16/bf16, gate and up of different dtypes
 * (KE_EDTYPE); NULL tensors (KE_EINVAL). */
int ke_swiglu(ke_context *ctx, const ke_tensor *gate, const ke_tensor *up,
              ke_tensor *out);
/* Reference on n packed doubles: out[i] = silu(gate[i]) * up[i]. */
void ke_swiglu_ref(const double *gate, const double *up, double *out,
                   int64_t n);
/* silu in double with the kernel's special values. */
double ke_silu_ref(double v);

#ifdef __cplusplus
}
#endif
#endif
