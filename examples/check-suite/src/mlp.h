/* The example project's code: the gated MLP activation of a transformer
 * block, out = silu(gate) * up, then a softmax over each row, on kiln's
 * engine; and a host-side helper that clamps token ids. */
#ifndef MLP_H
#define MLP_H

#include <stdint.h>

#include "kiln/kernels.h"

/* Runs the activation and the softmax on the context's stream; a kiln
 * status (KE_OK, or why not, as ke_strerror says). */
int mlp_activate(ke_context *ctx, const ke_tensor *gate, const ke_tensor *up,
                 ke_tensor *act, ke_tensor *probs);
/* The same in double precision on the host: the reference. */
void mlp_activate_ref(const double *gate, const double *up, double *probs,
                      int64_t rows, int64_t cols);
/* Replaces ids outside [0, vocab) by unk; returns how many it replaced. */
int mlp_clamp_tokens(int32_t *ids, int n, int32_t vocab, int32_t unk);

#endif
