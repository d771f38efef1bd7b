// Decode and paged-decode timing for kiln's split-key kernels (NVIDIA
// only; a measuring tool for docs/performance.md, not part of the engine).
//
// It includes the kernels' own sources (kernels/attention_decode.hip,
// kernels/paged_attention.hip), so building it against two trees times two
// versions of the kernels side by side. For the perf suite's decode shapes
// (q [B, 32, 1, 128], K/V [B, 8, S, 128], f16 and bf16; paged: blocks of 16
// tokens, a shuffled table) it prints the K+V bandwidth (2 B 8 S 128 2
// bytes over the median time) of each kernel setting (kModes: the SIMT
// core with fixed ranges, with steps from a counter and 4 stages, the
// matrix-unit core with 2 or 3 stages) at 1 and 2 blocks per
// multiprocessor for the split (engine/src/decode.c's rule), the
// device-to-device copy roof (bytes read and written), and the worst error
// of head 0's four rows of sequence 0 against a double reference (the
// output poisoned before the checked launch).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -DKILN_BACKEND_CUDA -Ikernels \
//        -Iengine/include dev/decode-tune.cu -o decode-tune
//   ./decode-tune [dense|paged B S BPM MODE f16|bf16]   (one case, for ncu)
//
// Method as the perf suite's: operand sets rotated over >= 2x L2, 5
// warm-up launches, then the median of 30 event-timed ones.
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "attention_decode.hip"
#include "paged_attention.hip"

#include "tune.h"

enum { HQ = 32, HKV = 8, D = 128, BS = 16 };

template <typename T>
__global__ void fill16(T *p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    uint64_t x = (seed + i) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    p[i] = kd_from_float<T>((float)(x >> 40) * (2.0f / 16777216.0f) - 1.0f);
  }
}

static int g_sms;
static size_t g_l2;
static bool g_f16; /* the dtype of this run: f16, else bf16 */

static int64_t splits_for(int64_t pairs, int64_t keys, int bpm) {
  const int64_t slots = (int64_t)g_sms * bpm;
  int64_t s = pairs >= slots ? 1 : slots / pairs;
  const int64_t by_keys = (keys + 255) / 256;
  if (s > by_keys) s = by_keys;
  return std::max<int64_t>(1, std::min(s, keys));
}

// The median of 30 event-timed launches after 5 warm-up ones.
template <class F> static float median_ms(int sets, F &&launch) {
  return tune_times(sets, 5, 30, [&](int set) { CHECK(launch(set)); })[15];
}

static float f16v(uint16_t x) {
  return g_f16 ? kd_f16_bits_to_f32(x) : kd_bf16_bits_to_f32(x);
}

// Worst |o - ref| over query heads 0..3 (KV head 0) of sequence 0; keys at
// host rows loc(t) (element offsets).
template <class Loc>
static double check(const void *dq, const void *dk, const void *dv,
                    const void *dout, size_t kv_elems, int64_t s, Loc loc,
                    float scale) {
  std::vector<uint16_t> q(4 * D), o(4 * D), k(kv_elems), v(kv_elems);
  CHECK(cudaMemcpy(q.data(), dq, 8 * D, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(o.data(), dout, 8 * D, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(k.data(), dk, kv_elems * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(v.data(), dv, kv_elems * 2, cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int h = 0; h < 4; h++) {
    std::vector<double> sc(s);
    double mx = -INFINITY;
    for (int64_t t = 0; t < s; t++) {
      double dot = 0;
      for (int d = 0; d < D; d++)
        dot += (double)f16v(q[h * D + d]) * f16v(k[loc(t) + d]);
      sc[t] = dot * scale;
      mx = std::max(mx, sc[t]);
    }
    double l = 0;
    std::vector<double> acc(D, 0.0);
    for (int64_t t = 0; t < s; t++) {
      const double w = exp(sc[t] - mx);
      l += w;
      for (int d = 0; d < D; d++) acc[d] += w * f16v(v[loc(t) + d]);
    }
    for (int d = 0; d < D; d++)
      worst = std::max(worst, fabs(acc[d] / l - f16v(o[h * D + d])));
  }
  return worst;
}

// The kernels timed: the SIMT core with fixed ranges and 3 stages, the
// SIMT core with steps from a counter and 4 stages (dense bf16's default
// before the matrix path), and the matrix-unit core with 2 or 3 stages.
struct mode { const char *name; int dyn, stages, mma; };
static const mode kModes[] = {{"simt", 0, 3, 0},
                              {"simt-dyn-s4", 1, 4, 0},
                              {"mma-s2", 0, 3, 2},
                              {"mma-s3", 0, 3, 3}};

static void run(bool paged, int64_t b, int64_t s, double copy_gbps,
                int only_bpm, int only_mode) {
  const size_t kv = (size_t)(b * HKV * s * D); // elements of K (and of V)
  const double bytes = 2.0 * kv * 2;
  const int sets = (int)std::max<size_t>(2, (2 * g_l2 + (size_t)bytes - 1) /
                                                (size_t)bytes);
  std::vector<uint16_t *> q(sets), k(sets), v(sets), o(sets);
  const int64_t nblk = b * ((s + BS - 1) / BS);
  std::vector<int32_t> table(nblk);
  for (int64_t i = 0; i < nblk; i++) table[i] = (int32_t)i;
  srand(7);
  for (int64_t i = nblk - 1; i > 0; i--)
    std::swap(table[i], table[rand() % (i + 1)]);
  int32_t *dtable, *dlens;
  CHECK(cudaMalloc(&dtable, nblk * 4));
  CHECK(cudaMemcpy(dtable, table.data(), nblk * 4, cudaMemcpyHostToDevice));
  std::vector<int32_t> lens(b, (int32_t)s);
  CHECK(cudaMalloc(&dlens, b * 4));
  CHECK(cudaMemcpy(dlens, lens.data(), b * 4, cudaMemcpyHostToDevice));
  auto fill = [&](uint16_t *p, size_t n, uint64_t seed) {
    if (g_f16) fill16<<<1024, 256>>>((kd_half *)p, n, seed);
    else fill16<<<1024, 256>>>((kd_bf16 *)p, n, seed);
  };
  for (int i = 0; i < sets; i++) {
    CHECK(cudaMalloc(&q[i], b * HQ * D * 2));
    CHECK(cudaMalloc(&o[i], b * HQ * D * 2));
    CHECK(cudaMalloc(&k[i], kv * 2));
    CHECK(cudaMalloc(&v[i], kv * 2));
    fill(q[i], b * HQ * D, 1 + i);
    fill(k[i], kv, 100 + i);
    fill(v[i], kv, 200 + i);
  }
  const ke_dtype dt = g_f16 ? KE_F16 : KE_BF16;
  const int64_t pairs = b * HKV; // one row tile of 4 per KV head
  float *partials;
  unsigned *counters;
  const int64_t max_splits = splits_for(pairs, s, 4);
  CHECK(cudaMalloc(&partials, b * HQ * max_splits * (D + 2) * 4));
  CHECK(cudaMalloc(&counters, 2 * pairs * 4));
  CHECK(cudaMemset(counters, 0, 2 * pairs * 4));
  const float scale = 1.0f / sqrtf((float)D);
  for (int mi = 0; mi < (int)(sizeof kModes / sizeof kModes[0]); mi++) {
    if (only_mode >= 0 && mi != only_mode) continue;
    const mode &md = kModes[mi];
    // Paged decode never took the dynamic scan by default: skip it there.
    if (paged && md.dyn) continue;
    for (int bpm = 1; bpm <= 2; bpm++) {
      if (only_bpm && bpm != only_bpm) continue;
      const int64_t splits = splits_for(pairs, s, bpm);
      const ke__decode_ext ext = {md.dyn && splits > 1 ? counters + pairs
                                                       : nullptr,
                                  md.stages, md.mma};
      auto launch = [&](int i) {
        if (!paged) {
          ke__attention_desc a = {};
          a.b = b, a.hq = HQ, a.hkv = HKV, a.sq = 1, a.sk = s, a.d = D;
          const int64_t qs[3] = {HQ * D, D, D},
                        ks[3] = {HKV * s * D, s * D, D};
          for (int j = 0; j < 3; j++) {
            a.q_stride[j] = a.o_stride[j] = qs[j];
            a.k_stride[j] = a.v_stride[j] = ks[j];
          }
          a.scale = scale;
          ke__decode_split sp = {splits, 256, partials, counters};
          return ke__attention_decode_launch_ext(0, dt, q[i], k[i], v[i],
                                                 o[i], &a, &sp, &ext);
        }
        ke__paged_attention_args a = {};
        a.q_dtype = a.kv_dtype = a.out_dtype = dt;
        a.q = q[i], a.q_seq_stride = HQ * D, a.q_head_stride = D;
        a.k_cache = k[i], a.v_cache = v[i], a.block_tables = dtable;
        a.seq_lens = dlens, a.out = o[i], a.out_seq_stride = HQ * D;
        a.out_head_stride = D, a.partials = splits > 1 ? partials : nullptr;
        a.counters = splits > 1 ? counters : nullptr;
        a.num_seqs = b, a.max_blocks_per_seq = (s + BS - 1) / BS;
        a.splits = splits, a.chunk = (s + splits - 1) / splits,
        a.cap = splits;
        a.num_heads = HQ, a.num_kv_heads = HKV, a.head_dim = D;
        a.block_size = BS, a.scale = scale;
        return ke__paged_attention_launch_ext(0, &a, &ext);
      };
      // Poison the output first: an unwritten element fails the check.
      CHECK(cudaMemset(o[0], 0xff, b * HQ * D * 2));
      CHECK(launch(0));
      CHECK(cudaDeviceSynchronize());
      double err;
      if (!paged)
        err = check(q[0], k[0], v[0], o[0], (size_t)(s * D), s,
                    [](int64_t t) { return (size_t)(t * D); }, scale);
      else
        err = check(q[0], k[0], v[0], o[0], kv, s,
                    [&](int64_t t) {
                      return (size_t)(((int64_t)table[t / BS] * HKV * BS +
                                       t % BS) * D);
                    },
                    scale);
      const float ms = median_ms(sets, launch);
      const double gbps = bytes / (ms * 1e6);
      printf("%-5s %-4s B%-2lld S%-6lld %-11s bpm %d splits %-3lld %8.1f us "
             "%7.0f GB/s %3.0f%% of copy  max err %.2g%s\n",
             paged ? "paged" : "dense", g_f16 ? "f16" : "bf16", (long long)b,
             (long long)s, md.name, bpm, (long long)splits, ms * 1e3, gbps,
             100 * gbps / copy_gbps, err, err > 0.02 ? "  WRONG" : "");
      fflush(stdout);
    }
  }
  for (int i = 0; i < sets; i++) {
    CHECK(cudaFree(q[i]));
    CHECK(cudaFree(k[i]));
    CHECK(cudaFree(v[i]));
    CHECK(cudaFree(o[i]));
  }
  CHECK(cudaFree(partials));
  CHECK(cudaFree(counters));
  CHECK(cudaFree(dtable));
  CHECK(cudaFree(dlens));
}

int main(int argc, char **argv) {
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  g_sms = prop.multiProcessorCount;
  g_l2 = prop.l2CacheSize;
  const size_t cb = (size_t)256 << 20;
  std::vector<void *> src(2), dst(2);
  for (int i = 0; i < 2; i++) {
    CHECK(cudaMalloc(&src[i], cb));
    CHECK(cudaMalloc(&dst[i], cb));
  }
  const float cms = median_ms(2, [&](int i) {
    return cudaMemcpyAsync(dst[i], src[i], cb, cudaMemcpyDeviceToDevice);
  });
  const double copy = 2.0 * cb / (cms * 1e6);
  printf("decode-tune on %s (%d SMs); copy of 256 MB: %.0f GB/s (read + "
         "written)\n",
         prop.name, g_sms, copy);
  for (int i = 0; i < 2; i++) {
    CHECK(cudaFree(src[i]));
    CHECK(cudaFree(dst[i]));
  }
  if (argc == 7) {
    const int64_t b = atoll(argv[2]), s = atoll(argv[3]);
    const int bpm = atoi(argv[4]), md = atoi(argv[5]);
    g_f16 = strcmp(argv[6], "f16") == 0;
    if (b < 1 || s < 1 || bpm < 1 || bpm > 2 || md < 0 || md > 3) {
      fprintf(stderr, "decode-tune: B %s, S %s, BPM %s, MODE %s: want B, S "
                      ">= 1, BPM 1..2, MODE 0..3\n", argv[2], argv[3],
              argv[4], argv[5]);
      return 2;
    }
    run(strcmp(argv[1], "paged") == 0, b, s, copy, bpm, md);
    return 0;
  }
  for (int f = 0; f < 2; f++) {
    g_f16 = f == 1;
    for (int paged = 0; paged < 2; paged++)
      for (int64_t b : {1, 8})
        for (int64_t s : {4096, 32768}) run(paged, b, s, copy, 0, -1);
  }
  return 0;
}
