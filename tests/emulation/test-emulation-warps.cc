/* The emulation's test (test-emulation.h), part one: __syncthreads and
 * early returns, the warp operations at warp 32 and 64 against HIP's
 * definitions, and the matrix instructions (matrix-on-host.h) against the
 * vendors' fragment tables.
 */
#include <vector>

#include "test-emulation.h"

/* A small deterministic generator for test inputs (not the one under test). */
static uint32_t lcg(uint64_t *state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*state >> 33);
}

/* ==== Barriers =========================================================== */

/* Tree reduction through shared memory; correct only if __syncthreads
 * really holds every thread until all have written. */
__global__ void block_sum(const int *in, int *out) {
  __shared__ int s[1024];
  const unsigned n = blockDim.x;
  const unsigned t = threadIdx.x;
  s[t] = in[blockIdx.x * n + t];
  __syncthreads();
  unsigned p = 1;
  while (p < n) p <<= 1;
  for (unsigned stride = p / 2; stride > 0; stride >>= 1) {
    if (t < stride && t + stride < n) s[t] += s[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

void run_block_sum(unsigned n, unsigned blocks, uint64_t seed, int *bad) {
  int *in = dev_alloc<int>((size_t)n * blocks);
  int *out = dev_alloc<int>(blocks);
  std::vector<long> want(blocks, 0);
  for (unsigned i = 0; i < n * blocks; i++) {
    in[i] = (int)(lcg(&seed) % 2001) - 1000;
    want[i / n] += in[i];
  }
  hipLaunchKernelGGL(block_sum, dim3(blocks), dim3(n), 0, 0, in, out);
  HIP_OK(hipGetLastError());
  for (unsigned b = 0; b < blocks; b++)
    if (out[b] != want[b]) {
      CHECK(out[b] == want[b], "block_sum n=%u block %u: got %d want %ld", n,
            b, out[b], want[b]);
      (*bad)++;
    }
  dev_free(in);
  dev_free(out);
}

void test_barriers() {
  const unsigned sizes[] = {1,  2,   3,   7,   31,  32,   33,   63,  64,
                            65, 100, 255, 256, 257, 1000, 1023, 1024};
  int bad = 0;
  for (unsigned n : sizes) run_block_sum(n, 3, n * 7919u, &bad);
}

/* A third of the threads return at once, and the last two return after
 * everyone else has arrived: the barrier must still release (returned
 * threads count as arrived) and the others must see each other's writes. */
__global__ void early_exit(int *out) {
  __shared__ int s[1024];
  const unsigned t = threadIdx.x;
  if (t % 3 == 1) return;
  if (t >= blockDim.x - 2) return;
  s[t] = (int)t * 10;
  __syncthreads();
  out[t] = s[((t / 3 + 1) % 32) * 3]; /* written by a later thread */
  __syncthreads();
}

void test_early_exit() {
  const unsigned n = 99;
  int *out = dev_alloc<int>(n);
  HIP_OK(hipMemsetAsync(out, 0, n * sizeof(int), 0));
  hipLaunchKernelGGL(early_exit, 2, n, 0, 0, out);
  HIP_OK(hipGetLastError());
  for (unsigned t = 0; t < n; t++) {
    const bool gone = t % 3 == 1 || t >= n - 2;
    const int want = gone ? 0 : (int)((t / 3 + 1) % 32) * 30;
    CHECK(out[t] == want, "early_exit t=%u: got %d want %d", t, out[t], want);
  }
  dev_free(out);
}

/* ==== Warp operations ==================================================== */

/* The lane each operation reads, by HIP's definition. */
static unsigned shfl_model(unsigned op, unsigned lane, unsigned width) {
  const unsigned seg = lane & ~(width - 1), pos = lane - seg;
  switch (op) {
  case 0: return seg + (5 & (width - 1));
  case 1: return seg + (37 & (width - 1));
  case 2: return pos >= 1 ? lane - 1 : lane;
  case 3: return pos >= 3 ? lane - 3 : lane;
  case 4: return pos + 1 < width ? lane + 1 : lane;
  case 5: return pos + 7 < width ? lane + 7 : lane;
  case 6: return (lane ^ 1) < seg + width ? lane ^ 1 : lane;
  default: return (lane ^ 6) < seg + width ? lane ^ 6 : lane;
  }
}

template <class T>
static void check_shuffles(const char *type, unsigned ws) {
  const unsigned n = 128;
  T *out = dev_alloc<T>((size_t)n * SHFL_OPS);
  bool ok = true; /* report the first mismatch only */
  for (int width : {(int)ws, 16, 4, 2}) {
    hipLaunchKernelGGL(shuffles<T>, 1, n, 0, 0, out, width);
    HIP_OK(hipGetLastError());
    for (unsigned t = 0; t < n && ok; t++) {
      const unsigned lane = t % ws, base = t - lane;
      for (unsigned op = 0; op < SHFL_OPS && ok; op++) {
        T want = (T)((base + shfl_model(op, lane, (unsigned)width)) * 3 + 1);
        T got = out[t * SHFL_OPS + op];
        ok = got == want;
        CHECK(ok, "%s warp %u width %d op %u thread %u: got %g want %g", type,
              ws, width, op, t, (double)got, (double)want);
      }
    }
  }
  dev_free(out);
}

/* Butterfly and shift-down reductions, the two patterns kernels use. */
__global__ void warp_reductions(float *xor_sum, float *down_sum) {
  const unsigned t = threadIdx.x;
  float a = (float)t, b = (float)t;
  for (int m = warpSize / 2; m > 0; m /= 2) a += __shfl_xor(a, m);
  for (int d = warpSize / 2; d > 0; d /= 2) b += __shfl_down(b, d);
  xor_sum[t] = a;
  if (__lane_id() == 0) down_sum[t / warpSize] = b;
}

/* Partial warps and returned lanes: a read from a lane that does not exist
 * or has returned yields the poison pattern (NaN, -1), never stale data. */
__global__ void absent_lanes(int *out, unsigned long long *ballot) {
  const unsigned t = threadIdx.x;
  (void)__ballot(1); /* every lane's vote slot now holds a 1 */
  if (t % 2 == 1 && t < 64) return; /* odd lanes of the first warps leave */
  out[t * 3 + 0] = __shfl_xor((int)t, 2);  /* partner alive (same parity) */
  out[t * 3 + 1] = __shfl_xor((int)t, 1);  /* partner gone */
  out[t * 3 + 2] = __shfl((int)t, 31);     /* lane 31 of this warp */
  ballot[t] = __ballot(1);                 /* only the lanes still here */
}

__global__ void votes(unsigned long long *ballot, int *flags) {
  const unsigned t = threadIdx.x, lane = __lane_id();
  ballot[t] = __ballot(lane % 3 == 0);
  flags[t * 5 + 0] = __any(lane == 5);
  flags[t * 5 + 1] = __all(lane < (unsigned)warpSize);
  flags[t * 5 + 2] = __all(lane < 5);
  flags[t * 5 + 3] = __any(0);
  flags[t * 5 + 4] = (int)lane;
}

/* ---- Matrix instructions (matrix-on-host.h) ------------------------------ */

/* 16-bit "elements" here are small integer codes, so that the products and
 * sums are exact and the test checks where each element went, whatever the
 * float format. */
struct code_cvt {
  static float f32(uint16_t p) { return (float)p - 300.0f; }
};

static uint32_t pack2(uint16_t lo, uint16_t hi) {
  return (uint32_t)lo | (uint32_t)hi << 16;
}

/* NVIDIA m16n8k16: a is 16 x 16, b is 16 x 8 ([k][n]), d = 0.5 + a * b,
 * fragments placed by the PTX ISA's tables, written out here on their own. */
__global__ void mma_nv(const uint16_t *a, const uint16_t *b, float *d) {
  const unsigned l = threadIdx.x, g = l / 4, t = l % 4;
  uint32_t fa[4], fb[2];
  float fd[4];
  for (unsigned r = 0; r < 4; r++) {
    const unsigned row = g + 8 * (r % 2), col = 2 * t + 8 * (r / 2);
    fa[r] = pack2(a[row * 16 + col], a[row * 16 + col + 1]);
  }
  for (unsigned r = 0; r < 2; r++) {
    const unsigned k = 2 * t + 8 * r;
    fb[r] = pack2(b[k * 8 + g], b[(k + 1) * 8 + g]);
  }
  for (int i = 0; i < 4; i++) fd[i] = 0.5f;
  kemu_mma_m16n8k16<code_cvt>(fd, fa, fb);
  for (unsigned i = 0; i < 4; i++)
    d[(g + 8 * (i / 2)) * 8 + 2 * t + i % 2] = fd[i];
}

/* AMD 16x16x16: a, b and d all 16 x 16, by the CDNA instruction tables. */
__global__ void mfma_cdna(const uint16_t *a, const uint16_t *b, float *d) {
  const unsigned l = threadIdx.x, q = l / 16, c = l % 16;
  uint32_t fa[2], fb[2];
  float fd[4];
  for (unsigned r = 0; r < 2; r++) {
    fa[r] = pack2(a[c * 16 + 4 * q + 2 * r], a[c * 16 + 4 * q + 2 * r + 1]);
    fb[r] = pack2(b[(4 * q + 2 * r) * 16 + c], b[(4 * q + 2 * r + 1) * 16 + c]);
  }
  for (int i = 0; i < 4; i++) fd[i] = 0.5f;
  kemu_mfma_16x16x16<code_cvt>(fd, fa, fb);
  for (unsigned i = 0; i < 4; i++) d[(4 * q + i) * 16 + c] = fd[i];
}

/* ldmatrix x4 over four 8 x 8 matrices m[q][r][c]: lane l points at row
 * l % 8 of matrix l / 8; out[l][q] is what lane l received for matrix q. */
__global__ void ldmatrix_x4(const uint16_t *m, int trans, uint32_t *out) {
  const unsigned l = threadIdx.x;
  uint32_t r[4];
  kemu_ldmatrix_x4(r, m + (l / 8) * 64 + (l % 8) * 8, trans != 0);
  for (int q = 0; q < 4; q++) out[l * 4 + q] = r[q];
}

void test_matrix() {
  uint16_t *a = dev_alloc<uint16_t>(256), *b = dev_alloc<uint16_t>(256);
  float *d = dev_alloc<float>(256);
  for (unsigned i = 0; i < 256; i++) {
    a[i] = (uint16_t)(300 + (i * 37 + 11) % 23 - 11);
    b[i] = (uint16_t)(300 + (i * 53 + 5) % 19 - 9);
  }
  HIP_OK(kemu_set_warp_size(32));
  hipLaunchKernelGGL(mma_nv, 1, 32, 0, 0, a, b, d);
  HIP_OK(hipGetLastError());
  for (unsigned m = 0; m < 16; m++)
    for (unsigned n = 0; n < 8; n++) {
      float want = 0.5f;
      for (unsigned k = 0; k < 16; k++)
        want += code_cvt::f32(a[m * 16 + k]) * code_cvt::f32(b[k * 8 + n]);
      CHECK(d[m * 8 + n] == want, "mma.m16n8k16 d[%u][%u] = %g, want %g", m,
            n, d[m * 8 + n], want);
    }

  uint32_t *out = dev_alloc<uint32_t>(128);
  for (int trans = 0; trans < 2; trans++) {
    hipLaunchKernelGGL(ldmatrix_x4, 1, 32, 0, 0, a, trans, out);
    HIP_OK(hipGetLastError());
    for (unsigned l = 0; l < 32; l++)
      for (unsigned q = 0; q < 4; q++) {
        const uint16_t *mq = a + q * 64;
        const unsigned r0 = trans ? 2 * (l % 4) : l / 4;
        const unsigned c0 = trans ? l / 4 : 2 * (l % 4);
        const unsigned r1 = trans ? r0 + 1 : r0, c1 = trans ? c0 : c0 + 1;
        CHECK(out[l * 4 + q] == pack2(mq[r0 * 8 + c0], mq[r1 * 8 + c1]),
              "ldmatrix%s lane %u matrix %u", trans ? ".trans" : "", l, q);
      }
  }

  HIP_OK(kemu_set_warp_size(64));
  hipLaunchKernelGGL(mfma_cdna, 1, 64, 0, 0, a, b, d);
  HIP_OK(hipGetLastError());
  for (unsigned m = 0; m < 16; m++)
    for (unsigned n = 0; n < 16; n++) {
      float want = 0.5f;
      for (unsigned k = 0; k < 16; k++)
        want += code_cvt::f32(a[m * 16 + k]) * code_cvt::f32(b[k * 16 + n]);
      CHECK(d[m * 16 + n] == want, "mfma.16x16x16 d[%u][%u] = %g, want %g",
            m, n, d[m * 16 + n], want);
    }
  HIP_OK(kemu_set_warp_size(32));
  dev_free(a);
  dev_free(b);
  dev_free(d);
  dev_free(out);
}

void test_warps(unsigned ws) {
  HIP_OK(kemu_set_warp_size((int)ws));
  CHECK(warpSize == (int)ws, "warpSize %d after kemu_set_warp_size(%u)",
        warpSize, ws);
  check_shuffles<int>("int", ws);
  check_shuffles<unsigned>("unsigned", ws);
  check_shuffles<float>("float", ws);
  check_shuffles<double>("double", ws);
  check_shuffles<long long>("long long", ws);
  check_shuffles<unsigned long long>("unsigned long long", ws);

  const unsigned n = 256;
  float *xs = dev_alloc<float>(n), *ds = dev_alloc<float>(n / 32);
  hipLaunchKernelGGL(warp_reductions, 1, n, 0, 0, xs, ds);
  HIP_OK(hipGetLastError());
  for (unsigned t = 0; t < n; t++) {
    const unsigned base = t - t % ws;
    const float want = (float)(ws * base + ws * (ws - 1) / 2);
    CHECK(xs[t] == want, "xor reduction warp %u t=%u: %g want %g", ws, t,
          xs[t], want);
    if (t % ws == 0)
      CHECK(ds[t / ws] == want, "down reduction warp %u: %g want %g", ws,
            ds[t / ws], want);
  }
  dev_free(xs);
  dev_free(ds);

  /* 100 threads: the last warp is partial (4 lanes for 32, 36 for 64). */
  const unsigned m = 100;
  int *ab = dev_alloc<int>(m * 3);
  unsigned long long *alive_votes = dev_alloc<unsigned long long>(m);
  hipLaunchKernelGGL(absent_lanes, 1, m, 0, 0, ab, alive_votes);
  HIP_OK(hipGetLastError());
  for (unsigned t = 0; t < m; t++) {
    if (t % 2 == 1 && t < 64) continue;
    const unsigned lane = t % ws, base = t - lane;
    const unsigned lanes = m - base < ws ? m - base : ws;
    auto alive = [&](unsigned l) {
      unsigned id = base + l;
      return l < lanes && !(id % 2 == 1 && id < 64);
    };
    const unsigned p2 = lane ^ 2, p1 = lane ^ 1;
    int w0 = alive(p2) ? (int)(base + p2) : -1;
    int w1 = alive(p1) ? (int)(base + p1) : -1;
    int w2 = alive(31) ? (int)(base + 31) : -1;
    CHECK(ab[t * 3] == w0 && ab[t * 3 + 1] == w1 && ab[t * 3 + 2] == w2,
          "absent lanes warp %u t=%u: got %d %d %d want %d %d %d", ws, t,
          ab[t * 3], ab[t * 3 + 1], ab[t * 3 + 2], w0, w1, w2);
    unsigned long long votes_want = 0;
    for (unsigned l = 0; l < ws; l++)
      if (alive(l)) votes_want |= 1ull << l;
    CHECK(alive_votes[t] == votes_want,
          "ballot after lanes left, warp %u t=%u: %llx want %llx", ws, t,
          alive_votes[t], votes_want);
  }
  dev_free(ab);
  dev_free(alive_votes);

  unsigned long long *bal = dev_alloc<unsigned long long>(m);
  int *fl = dev_alloc<int>(m * 5);
  hipLaunchKernelGGL(votes, 1, m, 0, 0, bal, fl);
  HIP_OK(hipGetLastError());
  for (unsigned t = 0; t < m; t++) {
    const unsigned lane = t % ws, base = t - lane;
    const unsigned lanes = m - base < ws ? m - base : ws;
    unsigned long long want = 0;
    for (unsigned l = 0; l < lanes; l += 3) want |= 1ull << l;
    CHECK(bal[t] == want, "ballot warp %u t=%u: %llx want %llx", ws, t,
          bal[t], want);
    const int *f = fl + t * 5;
    CHECK(f[0] == (lanes > 5), "any(lane==5) warp %u t=%u: %d", ws, t, f[0]);
    CHECK(f[1] == 1, "all(lane<warpSize) warp %u t=%u: %d", ws, t, f[1]);
    CHECK(f[2] == (lanes <= 5), "all(lane<5) warp %u t=%u: %d", ws, t, f[2]);
    CHECK(f[3] == 0, "any(0) warp %u t=%u: %d", ws, t, f[3]);
    CHECK(f[4] == (int)lane, "__lane_id warp %u t=%u: %d", ws, t, f[4]);
  }
  dev_free(bal);
  dev_free(fl);
}
