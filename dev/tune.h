// What the CUDA-only tuning tools share (gemm-tune.cu, kernel-limits.cu,
// decode-tune.cu):
// one check around every runtime call, and launches timed with events.
// dev/attn-tune.cu and dev/attn-pterms.cu are built for the host backend
// too (tests/meson.build), so they share dev/tune-hip.h, in HIP spelling,
// instead.
// Each tool keeps its kernels and tables.
#ifndef KILN_DEV_TUNE_H
#define KILN_DEV_TUNE_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

// The exit status of a failed runtime call (a tool may say otherwise).
#ifndef TUNE_EXIT_RUNTIME
#define TUNE_EXIT_RUNTIME 1
#endif

#define CHECK(x)                                                          \
  do {                                                                    \
    cudaError_t e_ = (cudaError_t)(x);                                    \
    if (e_ != cudaSuccess) {                                              \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,          \
              cudaGetErrorString(e_));                                    \
      exit(TUNE_EXIT_RUNTIME);                                            \
    }                                                                     \
  } while (0)

// launch(set) warmup times, then iters times each between two events on
// the default stream, input sets taken in turn; the times in ms, sorted.
template <class F>
static std::vector<float> tune_times(int sets, int warmup, int iters, F launch) {
  for (int i = 0; i < warmup; i++) launch(i % sets);
  std::vector<float> t;
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  for (int i = 0; i < iters; i++) {
    CHECK(cudaEventRecord(e0));
    launch((warmup + i) % sets);
    CHECK(cudaEventRecord(e1));
    CHECK(cudaEventSynchronize(e1));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    t.push_back(ms);
  }
  CHECK(cudaGetLastError());
  CHECK(cudaEventDestroy(e0));
  CHECK(cudaEventDestroy(e1));
  std::sort(t.begin(), t.end());
  return t;
}

// As tune_times, but the launches queued back to back (all events
// recorded, one synchronize at the end), as the perf suite and
// scripts/torch-compare.py time: each figure is then the kernel's time on
// the device, with no host time (a launch's own setup, a Python call)
// between its first event and its kernel.
template <class F>
static std::vector<float> tune_times_queued(int sets, int warmup, int iters,
                                            F launch) {
  for (int i = 0; i < warmup; i++) launch(i % sets);
  std::vector<cudaEvent_t> e((size_t)(2 * iters));
  for (auto &x : e) CHECK(cudaEventCreate(&x));
  for (int i = 0; i < iters; i++) {
    CHECK(cudaEventRecord(e[2 * i]));
    launch((warmup + i) % sets);
    CHECK(cudaEventRecord(e[2 * i + 1]));
  }
  CHECK(cudaEventSynchronize(e.back()));
  CHECK(cudaGetLastError());
  std::vector<float> t;
  for (int i = 0; i < iters; i++) {
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e[2 * i], e[2 * i + 1]));
    t.push_back(ms);
  }
  for (auto &x : e) CHECK(cudaEventDestroy(x));
  std::sort(t.begin(), t.end());
  return t;
}

#endif
