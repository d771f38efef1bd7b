/* The example project's code under test: see mlp.h. */
#include "mlp.h"

#include <stdlib.h>

int mlp_activate(ke_context *ctx, const ke_tensor *gate, const ke_tensor *up,
                 ke_tensor *act, ke_tensor *probs) {
  int st = ke_swiglu(ctx, gate, up, act);
  if (st != KE_OK) return st;
  ke_softmax_params p;
  ke_softmax_params_init(&p);
  return ke_softmax(ctx, act, probs, &p);
}

void mlp_activate_ref(const double *gate, const double *up, double *probs,
                      int64_t rows, int64_t cols) {
  double *act = malloc((size_t)(rows * cols) * sizeof *act);
  if (!act) abort();
  ke_swiglu_ref(gate, up, act, rows * cols);
  ke_softmax_params p;
  ke_softmax_params_init(&p);
  ke_softmax_ref(act, probs, rows, cols, &p, rows);
  free(act);
}

int mlp_clamp_tokens(int32_t *ids, int n, int32_t vocab, int32_t unk) {
  int replaced = 0;
  for (int i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= vocab) ids[i] = unk, replaced++;
  return replaced;
}
