// What the attention tools built both with nvcc and on the host emulation
// share (attn-tune.cu, attn-pterms.cu; tests/meson.build builds them on
// the host), in HIP spelling: one check around every runtime call, the
// descriptor of packed [B, H, S, D] tensors, and launches timed with
// events. The CUDA-only tools share dev/tune.h instead.
#ifndef KILN_DEV_TUNE_HIP_H
#define KILN_DEV_TUNE_HIP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "arch/kd.h" // the runtime and ke__attention_desc

#define CHECK(x)                                                             \
  do {                                                                       \
    hipError_t e_ = (x);                                                     \
    if (e_ != hipSuccess) {                                                  \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,             \
              hipGetErrorString(e_));                                        \
      exit(2);                                                               \
    }                                                                        \
  } while (0)

// Attention over packed q/o [b, hq, sq, d] and k/v [b, hkv, sk, d]; the
// caller sets scale, causal, offset and kernel.
static inline ke__attention_desc tune_attn_desc(int64_t b, int64_t hq,
                                                int64_t hkv, int64_t sq,
                                                int64_t sk, int64_t d) {
  ke__attention_desc a = {};
  a.b = b, a.hq = hq, a.hkv = hkv, a.sq = sq, a.sk = sk, a.d = d;
  const int64_t qs[3] = {hq * sq * d, sq * d, d};
  const int64_t ks[3] = {hkv * sk * d, sk * d, d};
  memcpy(a.q_stride, qs, sizeof qs), memcpy(a.o_stride, qs, sizeof qs);
  memcpy(a.k_stride, ks, sizeof ks), memcpy(a.v_stride, ks, sizeof ks);
  return a;
}

// launch(i) for i = 0 .. warmup + iters - 1, each between two events on
// stream st; the times of the last iters in ms, sorted, in *ms. Stops at
// the first launch that returns non-zero and returns that.
template <class F>
static int tune_attn_times(hipStream_t st, int warmup, int iters, F launch,
                           std::vector<float> *ms) {
  hipEvent_t e0, e1;
  CHECK(hipEventCreate(&e0));
  CHECK(hipEventCreate(&e1));
  int err = 0;
  for (int it = 0; it < warmup + iters && !err; it++) {
    CHECK(hipEventRecord(e0, st));
    err = launch(it);
    CHECK(hipEventRecord(e1, st));
    CHECK(hipEventSynchronize(e1));
    float t = 0;
    CHECK(hipEventElapsedTime(&t, e0, e1));
    if (it >= warmup) ms->push_back(t);
  }
  CHECK(hipEventDestroy(e0));
  CHECK(hipEventDestroy(e1));
  std::sort(ms->begin(), ms->end());
  return err;
}

#endif
