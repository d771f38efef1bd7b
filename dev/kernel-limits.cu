// Memory-pattern roofs for kiln's memory-bound kernels (NVIDIA only; a
// measuring tool for docs/performance.md, not part of the engine).
//
// Each probe keeps one kernel's memory access pattern and launch shape
// (the same loads and stores per thread, the same block, the same
// barriers) but replaces its math with a bit copy. If a kernel misses a
// bandwidth target while its probe reaches it, the gap is the kernel's
// instructions and their latency; if the probe misses too, the access
// pattern itself is the limit on this GPU.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 dev/kernel-limits.cu -o kernel-limits
//   ./kernel-limits > limits.txt
//
// Method as the perf suite's: buffers rotated over >= 2x L2 so no launch
// finds its input in L2, inputs random (never zeros), 5 warm-up launches
// then the median of 50 event-timed ones, bandwidth = bytes that must move
// / median time, next to cudaMemcpyAsync's device-to-device copy.
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

#include "tune.h"

static const size_t kTarget = (size_t)256 << 20; // bytes moved per launch

__device__ __forceinline__ void st16(void *p, uint4 v) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p),
               "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// --- softmax shape: one block per row, each thread VPT 16-byte chunks held
// in registers, then (optionally) the two block reductions, then stored.
template <int VPT, int BARRIERS>
__global__ void probe_rows(const uint4 *in, uint4 *out, int64_t row_chunks) {
  __shared__ float part[2][32];
  const uint4 *x = in + (int64_t)blockIdx.x * row_chunks;
  uint4 *y = out + (int64_t)blockIdx.x * row_chunks;
  uint4 v[VPT];
#pragma unroll
  for (int k = 0; k < VPT; k++) {
    const int64_t c = threadIdx.x + (int64_t)k * blockDim.x;
    if (c < row_chunks) v[k] = x[c];
  }
  uint32_t fold = 0;
#pragma unroll
  for (int b = 0; b < BARRIERS; b++) {
    // A reduction's worth of dependence: shuffles, one barrier, every
    // thread reads every warp's partial.
    float f = __uint_as_float((v[0].x ^ fold) & 0x3f7fffffu);
    for (int o = 16; o > 0; o /= 2) f = fmaxf(f, __shfl_xor_sync(~0u, f, o));
    if (threadIdx.x % 32 == 0) part[b & 1][threadIdx.x / 32] = f;
    __syncthreads();
    float r = 0.0f;
    for (int w = 0; w < (int)blockDim.x / 32; w++) r = fmaxf(r, part[b & 1][w]);
    fold ^= __float_as_uint(r) & 1u; // a dependence the compiler keeps
  }
#pragma unroll
  for (int k = 0; k < VPT; k++) {
    const int64_t c = threadIdx.x + (int64_t)k * blockDim.x;
    if (c < row_chunks) {
      uint4 w = v[k];
      w.x ^= fold;
      y[c] = w;
    }
  }
}

// --- SwiGLU shape: grid-stride over chunks, U chunks of gate and of up
// loaded per thread, one chunk of out stored per pair.
template <int U>
__global__ void probe_swiglu(const uint4 *g, const uint4 *u, uint4 *o,
                             int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < n;
       i0 += U * step) {
    uint4 a[U], b[U];
#pragma unroll
    for (int k = 0; k < U; k++)
      if (i0 + k * step < n) {
        a[k] = g[i0 + k * step];
        b[k] = u[i0 + k * step];
      }
#pragma unroll
    for (int k = 0; k < U; k++)
      if (i0 + k * step < n)
        st16(o + i0 + k * step, make_uint4(a[k].x ^ b[k].x, a[k].y ^ b[k].y,
                                           a[k].z ^ b[k].z, a[k].w ^ b[k].w));
  }
}

// --- KV replication shapes, planes of `plane` chunks: walk the output, one
// load per output chunk (the input re-read per replica), or walk the input,
// one load and RATIO stores.
template <bool WalkInput>
__global__ void probe_kv(const uint4 *in, uint4 *out, int64_t plane,
                         int ratio, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i0 < n;
       i0 += 4 * step) {
    uint4 v[4];
    int64_t d[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
      const int64_t i = i0 + k * step;
      d[k] = -1;
      if (i < n) {
        const int64_t p = i / plane, q = i - p * plane;
        v[k] = in[WalkInput ? i : (p / ratio) * plane + q];
        d[k] = WalkInput ? p * ratio * plane + q : i;
      }
    }
    for (int j = 0; j < (WalkInput ? ratio : 1); j++)
#pragma unroll
      for (int k = 0; k < 4; k++)
        if (d[k] >= 0) st16(out + d[k] + j * plane, v[k]);
  }
}

// --- dequantisation shape: each thread reads IN bytes (as 2- or 4-byte
// words) and writes OUT contiguous bytes as 16-byte stores.
template <int IN, int OUT>
__global__ void probe_dequant(const uint8_t *in, uint8_t *out, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += step) {
    uint32_t w = 0;
    if (IN % 4 == 0) {
      const uint32_t *p = (const uint32_t *)(in + i * IN);
#pragma unroll
      for (int k = 0; k < IN / 4; k++) w ^= p[k];
    } else {
      const uint16_t *p = (const uint16_t *)(in + i * IN);
#pragma unroll
      for (int k = 0; k < IN / 2; k++) w ^= (uint32_t)p[k] << (16 * (k & 1));
    }
    uint8_t *o = out + i * OUT;
#pragma unroll
    for (int k = 0; k < OUT / 16; k++)
      st16(o + 16 * k, make_uint4(w, w + 1, w + 2, w + 3));
  }
}

// ---------------------------------------------------------------------------

struct Sets {
  std::vector<void *> in, in2, out;
};

static int nsets_for(size_t bytes_per_set, size_t l2) {
  size_t want = 2 * l2;
  int n = (int)((want + bytes_per_set - 1) / bytes_per_set);
  return n < 1 ? 1 : (n > 64 ? 64 : n);
}

static void *alloc_random(size_t bytes) {
  void *p;
  CHECK(cudaMalloc(&p, bytes));
  std::vector<uint32_t> h((bytes + 3) / 4);
  uint64_t x = 0x9e3779b97f4a7c15ull ^ bytes ^ (uintptr_t)p;
  for (auto &v : h) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v = (uint32_t)(x >> 16) | 0x01000100u; // never zero
  }
  CHECK(cudaMemcpy(p, h.data(), bytes, cudaMemcpyHostToDevice));
  return p;
}

template <typename F> static double median_ms(int nsets, F launch) {
  std::vector<float> t = tune_times(nsets, 5, 50, launch);
  return (t[24] + t[25]) / 2;
}

static double g_copy;

static void report(const char *name, double bytes, double ms) {
  const double gbps = bytes / ms / 1e6;
  if (g_copy == 0) g_copy = gbps;
  printf("%-44s %8.1f GB/s  %5.1f %% of copy  (%.3f ms)\n", name, gbps,
         100 * gbps / g_copy, ms);
  fflush(stdout);
}

int main() {
  int dev = 0;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  const size_t l2 = (size_t)prop.l2CacheSize;
  printf("device: %s, L2 %zu MiB, %d SMs\n", prop.name, l2 >> 20,
         prop.multiProcessorCount);

  // Reference: device-to-device copy of 128 MiB (256 MiB moved).
  {
    const size_t half = kTarget / 2;
    int n = nsets_for(kTarget, l2);
    std::vector<void *> s(n), d(n);
    for (int i = 0; i < n; i++) {
      s[i] = alloc_random(half);
      CHECK(cudaMalloc(&d[i], half));
    }
    double ms = median_ms(n, [&](int i) {
      CHECK(cudaMemcpyAsync(d[i], s[i], half, cudaMemcpyDeviceToDevice));
    });
    report("copy (cudaMemcpyAsync D2D)", 2.0 * half, ms);
    for (int i = 0; i < n; i++) {
      cudaFree(s[i]);
      cudaFree(d[i]);
    }
  }

  // Softmax rows of 4096 elements: f32 (16 KiB rows) and 16-bit (8 KiB).
  for (int es : {4, 2}) {
    const int64_t cols = 4096, row_chunks = cols * es / 16;
    const int64_t rows = (int64_t)(kTarget / 2 / (cols * es));
    const size_t bytes = (size_t)rows * cols * es;
    int n = nsets_for(2 * bytes, l2);
    std::vector<void *> x(n), y(n);
    for (int i = 0; i < n; i++) {
      x[i] = alloc_random(bytes);
      CHECK(cudaMalloc(&y[i], bytes));
    }
    // The engine's block: chunks / 4 threads (4 chunks each, KD_VEC = 8
    // elements per chunk, so f32 chunks are two 16-byte loads).
    const int threads_kernel = (int)(cols / 8 / 4); // 128
    char name[96];
    for (int bar : {0, 2}) {
      double ms;
      if (es == 4)
        ms = median_ms(n, [&](int i) {
          if (bar)
            probe_rows<8, 2><<<rows, threads_kernel>>>((const uint4 *)x[i],
                                                       (uint4 *)y[i], row_chunks);
          else
            probe_rows<8, 0><<<rows, threads_kernel>>>((const uint4 *)x[i],
                                                       (uint4 *)y[i], row_chunks);
        });
      else
        ms = median_ms(n, [&](int i) {
          if (bar)
            probe_rows<4, 2><<<rows, threads_kernel>>>((const uint4 *)x[i],
                                                       (uint4 *)y[i], row_chunks);
          else
            probe_rows<4, 0><<<rows, threads_kernel>>>((const uint4 *)x[i],
                                                       (uint4 *)y[i], row_chunks);
        });
      snprintf(name, sizeof name, "softmax rows %s, %d thr, %d barriers",
               es == 4 ? "f32" : "16-bit", threads_kernel, bar);
      report(name, 2.0 * bytes, ms);
    }
    // Same bytes per thread as f32 for 16-bit rows: 64 threads, 8 chunks.
    if (es == 2) {
      double ms = median_ms(n, [&](int i) {
        probe_rows<8, 2><<<rows, 64>>>((const uint4 *)x[i], (uint4 *)y[i],
                                       row_chunks);
      });
      report("softmax rows 16-bit, 64 thr x 8 chunks, 2 barriers", 2.0 * bytes,
             ms);
    }
    for (int i = 0; i < n; i++) {
      cudaFree(x[i]);
      cudaFree(y[i]);
    }
  }

  // SwiGLU: gate, up read, out written; 16-byte chunks, the engine's grid.
  {
    const size_t each = kTarget / 3;
    const int64_t n_chunks = (int64_t)(each / 16);
    int n = nsets_for(3 * each, l2);
    std::vector<void *> g(n), u(n), o(n);
    for (int i = 0; i < n; i++) {
      g[i] = alloc_random(each);
      u[i] = alloc_random(each);
      CHECK(cudaMalloc(&o[i], each));
    }
    for (int U : {1, 2, 4}) {
      const int64_t blocks = std::min<int64_t>((n_chunks + 256 * U - 1) / (256 * U), 65536);
      double ms = median_ms(n, [&](int i) {
        if (U == 1)
          probe_swiglu<1><<<blocks, 256>>>((const uint4 *)g[i], (const uint4 *)u[i],
                                           (uint4 *)o[i], n_chunks);
        else if (U == 2)
          probe_swiglu<2><<<blocks, 256>>>((const uint4 *)g[i], (const uint4 *)u[i],
                                           (uint4 *)o[i], n_chunks);
        else
          probe_swiglu<4><<<blocks, 256>>>((const uint4 *)g[i], (const uint4 *)u[i],
                                           (uint4 *)o[i], n_chunks);
      });
      char name[96];
      snprintf(name, sizeof name, "swiglu streams 2 in : 1 out, %d chunk/thr", U);
      report(name, 3.0 * each, ms);
    }
    for (int i = 0; i < n; i++) {
      cudaFree(g[i]);
      cudaFree(u[i]);
      cudaFree(o[i]);
    }
  }

  // KV replication 8 -> 32 heads of [S, 128] f32 (plane = S * 512 bytes).
  {
    const int hkv = 8, ratio = 4;
    const int64_t row = 128 * 4;
    const int64_t S = (int64_t)(kTarget / ((hkv + hkv * ratio) * row));
    const int64_t plane = S * row / 16;
    const size_t in_b = (size_t)hkv * plane * 16, out_b = in_b * ratio;
    int n = nsets_for(in_b + out_b, l2);
    std::vector<void *> in(n), out(n);
    for (int i = 0; i < n; i++) {
      in[i] = alloc_random(in_b);
      CHECK(cudaMalloc(&out[i], out_b));
    }
    const int64_t n_out = hkv * ratio * plane, n_in = hkv * plane;
    double ms = median_ms(n, [&](int i) {
      probe_kv<false><<<std::min<int64_t>((n_out + 1023) / 1024, 65536), 256>>>(
          (const uint4 *)in[i], (uint4 *)out[i], plane, ratio, n_out);
    });
    report("kv 8->32 walk output (input re-read x4)", (double)(in_b + out_b), ms);
    printf("%-44s %8.1f GB/s  (in read 4x + out written)\n",
           "  same launch, bytes actually requested",
           (double)(ratio * in_b + out_b) / ms / 1e6);
    ms = median_ms(n, [&](int i) {
      probe_kv<true><<<std::min<int64_t>((n_in + 1023) / 1024, 65536), 256>>>(
          (const uint4 *)in[i], (uint4 *)out[i], plane, ratio, n_in);
    });
    report("kv 8->32 walk input (read once, 4 stores)", (double)(in_b + out_b), ms);
    for (int i = 0; i < n; i++) {
      cudaFree(in[i]);
      cudaFree(out[i]);
    }
  }

  // Dequantisation: bytes in : bytes out per thread.
  {
    struct Shape {
      int in, out;
      const char *name;
    };
    for (Shape sh : {Shape{4, 32, "dequant 4 B -> 32 B/thr (mxfp4 -> f32)"},
                     Shape{12, 32, "dequant 12 B -> 32 B/thr (mxfp6 -> 16-bit)"},
                     Shape{12, 64, "dequant 12 B -> 64 B/thr (mxfp6 -> f32, old)"},
                     Shape{6, 32, "dequant 6 B -> 32 B/thr (mxfp6 -> f32, new)"}}) {
      const int64_t threads = (int64_t)(kTarget / (sh.in + sh.out));
      const size_t in_b = (size_t)threads * sh.in, out_b = (size_t)threads * sh.out;
      int n = nsets_for(in_b + out_b, l2);
      std::vector<void *> in(n), out(n);
      for (int i = 0; i < n; i++) {
        in[i] = alloc_random(in_b);
        CHECK(cudaMalloc(&out[i], out_b));
      }
      const int64_t blocks = std::min<int64_t>((threads + 255) / 256, 65536);
      double ms = median_ms(n, [&](int i) {
        const uint8_t *a = (const uint8_t *)in[i];
        uint8_t *b = (uint8_t *)out[i];
        if (sh.in == 4) probe_dequant<4, 32><<<blocks, 256>>>(a, b, threads);
        else if (sh.in == 6) probe_dequant<6, 32><<<blocks, 256>>>(a, b, threads);
        else if (sh.out == 32) probe_dequant<12, 32><<<blocks, 256>>>(a, b, threads);
        else probe_dequant<12, 64><<<blocks, 256>>>(a, b, threads);
      });
      report(sh.name, (double)(in_b + out_b), ms);
      for (int i = 0; i < n; i++) {
        cudaFree(in[i]);
        cudaFree(out[i]);
      }
    }
  }
  return 0;
}
