// Decode and paged-decode timing for kiln's split-key kernels (NVIDIA
// only; a measuring tool for docs/performance.md, not part of the engine).
//
// It includes the kernels' own sources (kernels/attention_decode.hip,
// kernels/paged_attention.hip), so building it against two trees times two
// versions of the kernels side by side. For the perf suite's decode shapes
// (q [B, 32, 1, 128], K/V [B, 8, S, 128], bf16; paged: blocks of 16 tokens,
// a shuffled table) it prints the K+V bandwidth (2 B 8 S 128 2 bytes over
// the median time) for blocks per multiprocessor 1-4 (the engine's split
// rule, engine/src/decode.c, default 2), the device-to-device copy roof
// (bytes read and written), and the worst error of head 0's four rows of
// sequence 0 against a double reference.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -DKILN_BACKEND_CUDA -Ikernels \
//        -Iengine/include -Iengine/src scripts/decode-tune.cu -o decode-tune
//   ./decode-tune [dense|paged B S BPM]    (one case only, e.g. for ncu)
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

__global__ void fill_bf16(kd_bf16 *p, size_t n, uint64_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    uint64_t x = (seed + i) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 29;
    p[i] = kd_from_float<kd_bf16>((float)(x >> 40) * (2.0f / 16777216.0f) -
                                  1.0f);
  }
}

static int g_sms;
static size_t g_l2;

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

static float bf(const kd_bf16 &x) { return kd_bf16_bits_to_f32(x.bits); }

// Worst |o - ref| over query heads 0..3 (KV head 0) of sequence 0; keys at
// host rows krow(t), vrow(t) (element offsets).
template <class Loc>
static double check(const kd_bf16 *dq, const kd_bf16 *dk, const kd_bf16 *dv,
                    const kd_bf16 *dout, size_t kv_elems, int64_t s, Loc loc,
                    float scale) {
  std::vector<kd_bf16> q(4 * D), o(4 * D), k(kv_elems), v(kv_elems);
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
        dot += (double)bf(q[h * D + d]) * bf(k[loc(t) + d]);
      sc[t] = dot * scale;
      mx = std::max(mx, sc[t]);
    }
    double l = 0;
    std::vector<double> acc(D, 0.0);
    for (int64_t t = 0; t < s; t++) {
      const double w = exp(sc[t] - mx);
      l += w;
      for (int d = 0; d < D; d++) acc[d] += w * bf(v[loc(t) + d]);
    }
    for (int d = 0; d < D; d++)
      worst = std::max(worst, fabs(acc[d] / l - bf(o[h * D + d])));
  }
  return worst;
}

static void run(bool paged, int64_t b, int64_t s, double copy_gbps,
                int only_bpm) {
  const size_t kv = (size_t)(b * HKV * s * D); // elements of K (and of V)
  const double bytes = 2.0 * kv * 2;
  const int sets = (int)std::max<size_t>(2, (2 * g_l2 + (size_t)bytes - 1) /
                                                (size_t)bytes);
  std::vector<kd_bf16 *> q(sets), k(sets), v(sets), o(sets);
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
  for (int i = 0; i < sets; i++) {
    CHECK(cudaMalloc(&q[i], b * HQ * D * 2));
    CHECK(cudaMalloc(&o[i], b * HQ * D * 2));
    CHECK(cudaMalloc(&k[i], kv * 2));
    CHECK(cudaMalloc(&v[i], kv * 2));
    fill_bf16<<<1024, 256>>>(q[i], b * HQ * D, 1 + i);
    fill_bf16<<<1024, 256>>>(k[i], kv, 100 + i);
    fill_bf16<<<1024, 256>>>(v[i], kv, 200 + i);
  }
  const int64_t pairs = b * HKV; // one row tile of 4 per KV head
  float *partials;
  unsigned *counters;
  const int64_t max_splits = splits_for(pairs, s, 4);
  CHECK(cudaMalloc(&partials, b * HQ * max_splits * (D + 2) * 4));
  CHECK(cudaMalloc(&counters, pairs * 4));
  CHECK(cudaMemset(counters, 0, pairs * 4));
  const float scale = 1.0f / sqrtf((float)D);
  for (int bpm = 1; bpm <= 4; bpm++) {
    if (only_bpm && bpm != only_bpm) continue;
    const int64_t splits = splits_for(pairs, s, bpm);
    auto launch = [&](int i) {
      if (!paged) {
        ke__attention_desc a = {};
        a.b = b, a.hq = HQ, a.hkv = HKV, a.sq = 1, a.sk = s, a.d = D;
        const int64_t qs[3] = {HQ * D, D, D}, ks[3] = {HKV * s * D, s * D, D};
        for (int j = 0; j < 3; j++) {
          a.q_stride[j] = a.o_stride[j] = qs[j];
          a.k_stride[j] = a.v_stride[j] = ks[j];
        }
        a.scale = scale;
        ke__decode_split sp = {splits, 256, partials, counters};
        return ke__attention_decode_launch(0, KE_BF16, q[i], k[i], v[i], o[i],
                                           &a, &sp);
      }
      ke__paged_attention_args a = {};
      a.q_dtype = a.kv_dtype = a.out_dtype = KE_BF16;
      a.q = q[i], a.q_seq_stride = HQ * D, a.q_head_stride = D;
      a.k_cache = k[i], a.v_cache = v[i], a.block_tables = dtable;
      a.seq_lens = dlens, a.out = o[i], a.out_seq_stride = HQ * D;
      a.out_head_stride = D, a.partials = splits > 1 ? partials : nullptr;
      a.counters = splits > 1 ? counters : nullptr;
      a.num_seqs = b, a.max_blocks_per_seq = (s + BS - 1) / BS;
      a.splits = splits, a.chunk = (s + splits - 1) / splits, a.cap = splits;
      a.num_heads = HQ, a.num_kv_heads = HKV, a.head_dim = D;
      a.block_size = BS, a.scale = scale;
      return ke__paged_attention_launch(0, &a);
    };
    const float ms = median_ms(sets, launch);
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
    const double gbps = bytes / (ms * 1e6);
    printf("%-6s B%-2lld S%-6lld bpm %d splits %-3lld  %8.1f us  %7.0f GB/s  "
           "%3.0f%% of copy  max err %.2g%s\n",
           paged ? "paged" : "dense", (long long)b, (long long)s, bpm,
           (long long)splits, ms * 1e3, gbps, 100 * gbps / copy_gbps, err,
           bpm == 2 ? "  (default)" : "");
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
  if (argc == 5) {
    const int64_t b = atoll(argv[2]), s = atoll(argv[3]);
    const int bpm = atoi(argv[4]);
    if (b < 1 || s < 1 || bpm < 1 || bpm > 4) {
      fprintf(stderr, "decode-tune: B %s, S %s, BPM %s: want B, S >= 1 and "
                      "BPM 1..4\n", argv[2], argv[3], argv[4]);
      return 2;
    }
    run(strcmp(argv[1], "paged") == 0, b, s, copy, bpm);
    return 0;
  }
  for (int paged = 0; paged < 2; paged++)
    for (int64_t b : {1, 8})
      for (int64_t s : {4096, 32768}) run(paged, b, s, copy, 0);
  return 0;
}
