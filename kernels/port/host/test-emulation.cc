/* Test of the HIP-on-CPU emulation itself (meson test --suite emulation).
 *
 * Plain C++, no test framework: each CHECK prints what failed and the
 * program exits non-zero if any did. Kernels here are written as kiln's are
 * (hipLaunchKernelGGL, __shared__, HIP_DYNAMIC_SHARED, warp operations) and
 * their results are compared with independent host models. Cases that must
 * kill the process (deadlock, __trap, bad settings) run in child processes.
 *
 *   test-emulation          run every check
 *   test-emulation --bench  only time the benchmark launch
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "hip-on-host.h"
#include "hip-on-host-impl.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

/* ==== Checks ============================================================= */

static std::atomic<int> g_failures;
static const char *g_argv0 = "";

#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__,     \
              #cond);                                                      \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
      g_failures++;                                                        \
    }                                                                      \
  } while (0)

#define HIP_OK(expr)                                                       \
  do {                                                                     \
    hipError_t e_ = (expr);                                                \
    CHECK(e_ == hipSuccess, "%s returned %s", #expr, hipGetErrorName(e_)); \
  } while (0)

/* Device memory, used directly from the host (it is host memory). */
template <class T>
static T *dev_alloc(size_t n) {
  void *p = nullptr;
  HIP_OK(hipMalloc(&p, n * sizeof(T)));
  return static_cast<T *>(p);
}

static void dev_free(void *p) { HIP_OK(hipFree(p)); }

/* A small deterministic generator for test inputs (not the one under test). */
static uint32_t lcg(uint64_t *state) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(*state >> 33);
}

static double now_s() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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

static void run_block_sum(unsigned n, unsigned blocks, uint64_t seed,
                          int *bad) {
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

static void test_barriers() {
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

static void test_early_exit() {
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

enum { SHFL_OPS = 8 };

template <class T>
__global__ void shuffles(T *out, int width) {
  const unsigned t = threadIdx.x;
  const T v = (T)(t * 3 + 1);
  T *o = out + (size_t)t * SHFL_OPS;
  o[0] = __shfl(v, 5, width);
  o[1] = __shfl(v, 37, width);
  o[2] = __shfl_up(v, 1, width);
  o[3] = __shfl_up(v, 3, width);
  o[4] = __shfl_down(v, 1, width);
  o[5] = __shfl_down(v, 7, width);
  o[6] = __shfl_xor(v, 1, width);
  o[7] = __shfl_xor(v, 6, width);
}

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

static void test_matrix() {
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

static void test_warps(unsigned ws) {
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

/* ==== Atomics ============================================================ */

struct atomic_box {
  int i, imax, imin, cas, sub, exch, exch_first;
  unsigned u, umax, umin, orbits, andbits, xorbits;
  unsigned long long ull, ull_cas;
  float f, fexch;
  double d;
};

__global__ void atomics(atomic_box *b) {
  const int gid = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  atomicAdd(&b->i, 1);
  atomicAdd(&b->u, 2u);
  atomicAdd(&b->ull, 1ull << 33);
  atomicAdd(&b->f, 1.0f);
  atomicAdd(&b->d, 0.5);
  atomicMax(&b->imax, gid - 5000);
  atomicMin(&b->imin, gid - 5000);
  atomicMax(&b->umax, (unsigned)gid);
  atomicMin(&b->umin, (unsigned)gid + 7);
  int old = b->cas, assumed;
  do {
    assumed = old;
    old = atomicCAS(&b->cas, assumed, assumed + 1);
  } while (old != assumed);
  unsigned long long o2 = b->ull_cas, a2;
  do {
    a2 = o2;
    o2 = atomicCAS(&b->ull_cas, a2, a2 + 3);
  } while (o2 != a2);
  atomicOr(&b->orbits, 1u << (gid % 32));
  atomicAnd(&b->andbits, ~(1u << (gid % 32)));
  atomicXor(&b->xorbits, 1u << (gid % 5));
  atomicSub(&b->sub, 3);
  if (atomicExch(&b->exch, gid) == -1) atomicAdd(&b->exch_first, 1);
  atomicExch(&b->fexch, (float)gid);
  __syncthreads();
}

static void test_atomics() {
  atomic_box *b = dev_alloc<atomic_box>(1);
  memset(b, 0, sizeof *b);
  b->imax = INT32_MIN;
  b->imin = INT32_MAX;
  b->umin = ~0u;
  b->andbits = ~0u;
  b->exch = -1;
  b->fexch = -1.0f;
  const int blocks = 64, threads = 256, n = blocks * threads;
  hipLaunchKernelGGL(atomics, blocks, threads, 0, 0, b);
  HIP_OK(hipGetLastError());
  CHECK(b->i == n, "atomicAdd int %d", b->i);
  CHECK(b->u == 2u * n, "atomicAdd unsigned %u", b->u);
  CHECK(b->ull == (unsigned long long)n << 33, "atomicAdd ull %llu", b->ull);
  CHECK(b->f == (float)n, "atomicAdd float %g", b->f);
  CHECK(b->d == n * 0.5, "atomicAdd double %g", b->d);
  CHECK(b->imax == n - 1 - 5000, "atomicMax int %d", b->imax);
  CHECK(b->imin == -5000, "atomicMin int %d", b->imin);
  CHECK(b->umax == (unsigned)n - 1, "atomicMax unsigned %u", b->umax);
  CHECK(b->umin == 7, "atomicMin unsigned %u", b->umin);
  CHECK(b->cas == n, "atomicCAS int %d", b->cas);
  CHECK(b->ull_cas == 3ull * n, "atomicCAS ull %llu", b->ull_cas);
  CHECK(b->orbits == ~0u, "atomicOr %x", b->orbits);
  CHECK(b->andbits == 0, "atomicAnd %x", b->andbits);
  CHECK(b->xorbits == 15, "atomicXor %x", b->xorbits);
  CHECK(b->sub == -3 * n, "atomicSub %d", b->sub);
  CHECK(b->exch_first == 1 && b->exch >= 0 && b->exch < n,
        "atomicExch int first=%d last=%d", b->exch_first, b->exch);
  CHECK(b->fexch >= 0.0f && b->fexch < (float)n, "atomicExch float %g",
        b->fexch);
  dev_free(b);
}

/* ==== Shared memory, thread geometry ===================================== */

__global__ void dyn_shared(unsigned *seen, float *echo) {
  HIP_DYNAMIC_SHARED(float, smem);
  const unsigned t = threadIdx.x, n = blockDim.x;
  seen[blockIdx.x * n + t] = __float_as_uint(smem[t]) |
                             ((uintptr_t)smem % 16 != 0 ? 1u : 0u);
  __syncthreads();
  smem[t] = 1.0f + (float)t;
  __syncthreads();
  echo[blockIdx.x * n + t] = smem[n - 1 - t];
}

static void test_dynamic_shared() {
  const unsigned n = 256, blocks = 3;
  unsigned *seen = dev_alloc<unsigned>(n * blocks);
  float *echo = dev_alloc<float>(n * blocks);
  hipLaunchKernelGGL(dyn_shared, blocks, n, n * sizeof(float), 0, seen, echo);
  HIP_OK(hipGetLastError());
  for (unsigned i = 0; i < n * blocks; i++) {
    /* Every block, not only the first, starts from 0xFF bytes. */
    CHECK(seen[i] == 0xFFFFFFFFu, "dynamic shared before write, block %u "
          "thread %u: %08x", i / n, i % n, seen[i]);
    CHECK(echo[i] == 1.0f + (float)(n - 1 - i % n), "dynamic shared echo %u",
          i);
    if (g_failures) break;
  }
  dev_free(seen);
  dev_free(echo);
}

__global__ void geometry(unsigned *out) {
  __shared__ unsigned s[1024];
  const unsigned nthr = blockDim.x * blockDim.y * blockDim.z;
  const unsigned lin = threadIdx.x + threadIdx.y * blockDim.x +
                       threadIdx.z * blockDim.x * blockDim.y;
  const unsigned blk = blockIdx.x + blockIdx.y * gridDim.x +
                       blockIdx.z * gridDim.x * gridDim.y;
  s[lin] = lin * 7;
  __syncthreads();
  unsigned *o = out + ((size_t)blk * nthr + lin) * 4;
  o[0] = s[nthr - 1 - lin];
  o[1] = __lane_id();
  o[2] = (unsigned)__shfl((int)lin, 0); /* lane 0 of this thread's warp */
  o[3] = blk;
}

static void test_geometry(dim3 grid, dim3 block) {
  const unsigned nthr = block.x * block.y * block.z;
  const unsigned nblk = grid.x * grid.y * grid.z;
  const unsigned ws = (unsigned)warpSize;
  unsigned *out = dev_alloc<unsigned>((size_t)nthr * nblk * 4);
  hipLaunchKernelGGL(geometry, grid, block, 0, 0, out);
  HIP_OK(hipGetLastError());
  for (unsigned b = 0; b < nblk; b++)
    for (unsigned l = 0; l < nthr; l++) {
      const unsigned *o = out + ((size_t)b * nthr + l) * 4;
      bool ok = o[0] == (nthr - 1 - l) * 7 && o[1] == l % ws &&
                o[2] == l - l % ws && o[3] == b;
      CHECK(ok, "geometry block (%u,%u,%u) grid (%u,%u,%u): block %u thread "
            "%u got %u %u %u %u", block.x, block.y, block.z, grid.x, grid.y,
            grid.z, b, l, o[0], o[1], o[2], o[3]);
      if (!ok) {
        dev_free(out);
        return;
      }
    }
  dev_free(out);
}

/* A kernel with a large stack frame: fiber stacks are 256 KiB by default. */
__global__ void big_frame(int *out) {
  volatile int buf[16384];
  for (int i = 0; i < 16384; i++) buf[i] = i;
  out[threadIdx.x] = buf[16383 - (int)threadIdx.x];
}

/* ==== Launch configuration, streams, events ============================== */

__global__ void set_flag(int *flag) { *flag = 1; }

template <class T, int N>
__global__ void add_to(T *p) {
  atomicAdd(p, (T)N);
}

static void expect_config_error(const char *what, dim3 grid, dim3 block,
                                size_t shmem) {
  int *flag = dev_alloc<int>(1);
  *flag = 0;
  hipLaunchKernelGGL(set_flag, grid, block, shmem, 0, flag);
  hipError_t e = hipGetLastError();
  CHECK(e == hipErrorInvalidConfiguration, "%s: %s", what,
        hipGetErrorName(e));
  CHECK(*flag == 0, "%s: the kernel ran", what);
  CHECK(hipGetLastError() == hipSuccess, "%s: error not cleared", what);
  dev_free(flag);
}

static void test_launch_config() {
  expect_config_error("1025 threads", 1, 1025, 0);
  expect_config_error("block 32x33", 1, dim3(32, 33), 0);
  expect_config_error("block z 65", 1, dim3(1, 1, 65), 0);
  expect_config_error("block x 0", 1, dim3(0), 0);
  expect_config_error("grid x 0", dim3(0), 32, 0);
  expect_config_error("grid y 65536", dim3(1, 65536), 32, 0);
  expect_config_error("grid x 2^31", dim3(0x80000000u), 32, 0);
  /* Dynamic shared memory as on the emulated GPU: at warp 32 (NVIDIA)
   * 48 KiB unless the kernel's limit is raised, at most 227 KiB. */
  expect_config_error("48 KiB + 1 shared", 1, 32, (48 << 10) + 1);
  CHECK(hipFuncSetAttribute((const void *)set_flag,
                            hipFuncAttributeMaxDynamicSharedMemorySize,
                            (227 << 10) + 1) == hipErrorInvalidValue,
        "a limit above 227 KiB was accepted");
  CHECK(hipGetLastError() == hipErrorInvalidValue, "error not recorded");
  HIP_OK(hipFuncSetAttribute((const void *)set_flag,
                             hipFuncAttributeMaxDynamicSharedMemorySize,
                             96 << 10));
  expect_config_error("raised limit + 1", 1, 32, (96 << 10) + 1);

  int *flag = dev_alloc<int>(1);
  *flag = 0;
  hipLaunchKernelGGL(set_flag, dim3(1, 1, 1), dim3(1024), 96 << 10, 0, flag);
  CHECK(hipGetLastError() == hipSuccess && *flag == 1,
        "largest valid configuration did not run");
  /* At warp 64 (AMD CDNA) the ceiling is 64 KiB, whatever was set. */
  HIP_OK(kemu_set_warp_size(64));
  expect_config_error("64 KiB + 1 shared at warp 64", 1, 64, 65537);
  *flag = 0;
  hipLaunchKernelGGL(set_flag, dim3(1, 1, 1), dim3(1024), 65536, 0, flag);
  CHECK(hipGetLastError() == hipSuccess && *flag == 1,
        "64 KiB at warp 64 did not run");
  HIP_OK(kemu_set_warp_size(32));

  /* Streams: work runs at once; a destroyed stream is refused. */
  hipStream_t st = nullptr;
  HIP_OK(hipStreamCreateWithFlags(&st, hipStreamNonBlocking));
  *flag = 0;
  hipLaunchKernelGGL(set_flag, 1, 1, 0, st, flag);
  HIP_OK(hipStreamSynchronize(st));
  CHECK(*flag == 1, "launch on a stream did not run");
  HIP_OK(hipStreamDestroy(st));
  *flag = 0;
  hipLaunchKernelGGL(set_flag, 1, 1, 0, st, flag);
  CHECK(hipGetLastError() == hipErrorInvalidResourceHandle && *flag == 0,
        "launch on a destroyed stream was not refused");
  CHECK(hipStreamDestroy(st) == hipErrorInvalidResourceHandle,
        "double stream destroy");
  (void)hipGetLastError();

  /* Events time the work between them. */
  hipEvent_t a, b, never;
  HIP_OK(hipEventCreate(&a));
  HIP_OK(hipEventCreate(&b));
  HIP_OK(hipEventCreate(&never));
  HIP_OK(hipEventRecord(a, 0));
  int bad = 0;
  run_block_sum(256, 64, 1, &bad);
  HIP_OK(hipEventRecord(b, 0));
  HIP_OK(hipEventSynchronize(b));
  float ms = -1.0f;
  HIP_OK(hipEventElapsedTime(&ms, a, b));
  CHECK(ms >= 0.0f && ms < 60000.0f, "elapsed %g ms", ms);
  CHECK(hipEventElapsedTime(&ms, a, never) == hipErrorInvalidResourceHandle,
        "elapsed time to an unrecorded event");
  HIP_OK(hipEventDestroy(a));
  HIP_OK(hipEventDestroy(b));
  HIP_OK(hipEventDestroy(never));
  CHECK(hipEventDestroy(a) == hipErrorInvalidResourceHandle,
        "double event destroy");
  (void)hipGetLastError();

  /* A template kernel whose name holds a comma. */
  *flag = 0;
  hipLaunchKernelGGL(HIP_KERNEL_NAME(add_to<int, 3>), 2, 4, 0, 0, flag);
  CHECK(hipGetLastError() == hipSuccess && *flag == 24,
        "template kernel: %d", *flag);
  dev_free(flag);

  CHECK(strcmp(hipGetErrorName(hipErrorInvalidConfiguration),
               "hipErrorInvalidConfiguration") == 0,
        "hipGetErrorName: %s", hipGetErrorName(hipErrorInvalidConfiguration));
  CHECK(strcmp(hipGetErrorString(hipErrorOutOfMemory), "out of memory") == 0,
        "hipGetErrorString: %s", hipGetErrorString(hipErrorOutOfMemory));
}

/* ==== Memory ============================================================= */

static void test_memory() {
  size_t free0 = 0, total = 0, free1 = 0;
  HIP_OK(hipMemGetInfo(&free0, &total));
  CHECK(free0 <= total && total > 0, "free %zu total %zu", free0, total);

  const size_t bytes = 3u << 20;
  unsigned char *p = dev_alloc<unsigned char>(bytes);
  CHECK((uintptr_t)p % 256 == 0, "hipMalloc alignment %p", (void *)p);
  HIP_OK(hipMemGetInfo(&free1, &total));
  CHECK(free0 - free1 == bytes, "free dropped by %zu, want %zu",
        free0 - free1, bytes);
  /* Memory is not cleared on allocation, as on a GPU: a block the heap hands
   * back after a free still holds what was written (the engine's poison
   * mode, not the runtime, fills new allocations). */
  {
    unsigned char *a = dev_alloc<unsigned char>(4096);
    HIP_OK(hipMemsetAsync(a, 0x5A, 4096, nullptr));
    HIP_OK(hipFree(a));
    unsigned char *b = dev_alloc<unsigned char>(4096);
    if (b == a) {
      bool kept = true;
      for (size_t i = 64; i < 4096; i += 97) kept &= b[i] == 0x5A;
      CHECK(kept, "a reused allocation was cleared");
    }
    HIP_OK(hipFree(b));
  }

  void *q = (void *)0x1;
  CHECK(hipMalloc(&q, total + 1) == hipErrorOutOfMemory && q == nullptr,
        "over-size hipMalloc");
  CHECK(hipGetLastError() == hipErrorOutOfMemory, "last error after OOM");
  CHECK(hipMalloc(&q, 0) == hipSuccess && q == nullptr, "hipMalloc of 0");

  /* Copies and sets are checked against the allocation they touch. */
  unsigned char host[64];
  memset(host, 7, sizeof host);
  HIP_OK(hipMemcpyAsync(p, host, sizeof host, hipMemcpyHostToDevice, 0));
  CHECK(p[63] == 7, "copy to device");
  CHECK(hipMemcpyAsync(p + bytes - 32, host, 64, hipMemcpyHostToDevice, 0) ==
            hipErrorInvalidValue,
        "copy past the end of an allocation");
  CHECK(hipMemcpyAsync(host, host + 32, 16, hipMemcpyHostToDevice, 0) ==
            hipErrorInvalidValue,
        "host pointer as device destination");
  HIP_OK(hipMemsetAsync(p, 0, bytes, 0));
  CHECK(p[0] == 0 && p[bytes - 1] == 0, "memset");
  CHECK(hipMemsetAsync(host, 0, 8, 0) == hipErrorInvalidValue,
        "memset of host memory");
  (void)hipGetLastError();

  HIP_OK(hipFree(p));
  HIP_OK(hipMemGetInfo(&free1, &total));
  CHECK(free1 == free0, "free after hipFree %zu, want %zu", free1, free0);
  CHECK(hipFree(p) == hipErrorInvalidValue, "double hipFree");
  CHECK(hipFree(host) == hipErrorInvalidValue, "hipFree of a host pointer");
  (void)hipGetLastError();

  hipDeviceProp_t prop;
  HIP_OK(hipGetDeviceProperties(&prop, 0));
  CHECK(strcmp(prop.name, "kiln host emulation") == 0, "name %s", prop.name);
  CHECK(prop.warpSize == warpSize, "prop warpSize %d", prop.warpSize);
  char arch[32];
  snprintf(arch, sizeof arch, "host-wave%d", warpSize);
  CHECK(strcmp(prop.gcnArchName, arch) == 0, "arch %s", prop.gcnArchName);
  CHECK(prop.sharedMemPerBlock == 65536 && prop.maxThreadsPerBlock == 1024 &&
            prop.multiProcessorCount >= 1 && prop.totalGlobalMem == total,
        "device properties");
  CHECK(hipGetDeviceProperties(&prop, 1) == hipErrorInvalidDevice,
        "properties of device 1");
  CHECK(kemu_set_warp_size(48) == hipErrorInvalidValue, "warp size 48");
  (void)hipGetLastError();
}

/* ==== Random numbers ===================================================== */

static void test_philox() {
  /* Known answers from Random123's kat_vectors for philox4x32-10. */
  struct {
    uint32_t ctr[4], key[2], want[4];
  } kat[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{~0u, ~0u, ~0u, ~0u},
       {~0u, ~0u},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (auto &k : kat) {
    kemu__philox4x32_10(k.ctr, k.key);
    CHECK(memcmp(k.ctr, k.want, sizeof k.want) == 0,
          "philox KAT: %08x %08x %08x %08x", k.ctr[0], k.ctr[1], k.ctr[2],
          k.ctr[3]);
  }

  const size_t n = 1 << 20;
  float *a = dev_alloc<float>(n), *b = dev_alloc<float>(n);
  hiprandGenerator_t g1, g2;
  CHECK(hiprandCreateGenerator(&g1, HIPRAND_RNG_PSEUDO_PHILOX4_32_10) == 0,
        "create generator");
  CHECK(hiprandCreateGenerator(&g2, HIPRAND_RNG_PSEUDO_PHILOX4_32_10) == 0,
        "create generator");
  CHECK(hiprandSetPseudoRandomGeneratorSeed(g1, 1234) == 0, "seed");
  CHECK(hiprandSetPseudoRandomGeneratorSeed(g2, 1234) == 0, "seed");
  CHECK(hiprandGenerateUniform(g1, a, n) == 0, "uniform");
  CHECK(hiprandGenerateUniform(g2, b, n) == 0, "uniform");
  CHECK(memcmp(a, b, n * sizeof(float)) == 0, "same seed, different output");
  CHECK(hiprandGenerateUniform(g2, b, n) == 0, "uniform");
  CHECK(memcmp(a, b, n * sizeof(float)) != 0, "second call repeats the first");
  CHECK(hiprandSetPseudoRandomGeneratorSeed(g2, 1234) == 0, "seed");
  CHECK(hiprandGenerateUniform(g2, b, 1000) == 0, "uniform");
  CHECK(memcmp(a, b, 1000 * sizeof(float)) == 0, "reseeding does not restart");

  double sum = 0, sq = 0;
  float lo = 2, hi = -1;
  for (size_t i = 0; i < n; i++) {
    sum += a[i];
    sq += (double)a[i] * a[i];
    lo = a[i] < lo ? a[i] : lo;
    hi = a[i] > hi ? a[i] : hi;
  }
  double mean = sum / n, var = sq / n - mean * mean;
  CHECK(fabs(mean - 0.5) < 0.002 && fabs(var - 1.0 / 12) < 0.002,
        "uniform mean %g var %g", mean, var);
  CHECK(lo > 0.0f && hi <= 1.0f, "uniform range [%g, %g]", lo, hi);

  /* Seed 0's first outputs are the first known answer, mapped to (0, 1]. */
  CHECK(hiprandSetPseudoRandomGeneratorSeed(g1, 0) == 0, "seed");
  CHECK(hiprandGenerateUniform(g1, a, 4) == 0, "uniform");
  for (int i = 0; i < 4; i++) {
    float want = (float)kat[0].want[i] * 2.3283064365386963e-10f +
                 1.1641532182693481e-10f;
    CHECK(a[i] == want, "uniform[%d] %.9g want %.9g", i, a[i], want);
  }

  CHECK(hiprandGenerateNormal(g1, a, n, 2.0f, 3.0f) == 0, "normal");
  sum = sq = 0;
  for (size_t i = 0; i < n; i++) {
    sum += a[i];
    sq += (double)a[i] * a[i];
  }
  mean = sum / n;
  var = sq / n - mean * mean;
  CHECK(fabs(mean - 2.0) < 0.02 && fabs(sqrt(var) - 3.0) < 0.02,
        "normal mean %g stddev %g", mean, sqrt(var));
  CHECK(hiprandGenerateNormal(g1, a, 7, 0.0f, 1.0f) ==
            HIPRAND_STATUS_LENGTH_NOT_MULTIPLE,
        "odd normal count");
  float host[8];
  CHECK(hiprandGenerateUniform(g1, host, 8) == HIPRAND_STATUS_LAUNCH_FAILURE,
        "uniform into host memory");
  CHECK(hiprandGenerateUniform(g1, a + n - 4, 8) ==
            HIPRAND_STATUS_LAUNCH_FAILURE,
        "uniform past the end of an allocation");
  CHECK(hiprandDestroyGenerator(g1) == 0, "destroy");
  CHECK(hiprandDestroyGenerator(g2) == 0, "destroy");
  CHECK(hiprandDestroyGenerator(g1) == HIPRAND_STATUS_NOT_INITIALIZED,
        "double destroy");
  dev_free(a);
  dev_free(b);
}

/* ==== Several OS threads ================================================= */

/* Each OS thread has its own scheduler; __shared__ memory has one copy and
 * launches take turns. Launches from two threads at once must not disturb
 * each other, and atomics from both must all land. */
__global__ void count_up(int *counter) {
  __shared__ int local;
  if (threadIdx.x == 0) local = 0;
  __syncthreads();
  atomicAdd(&local, 1);
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(counter, local);
}

static void test_threads() {
  int *counter = dev_alloc<int>(1);
  *counter = 0;
  int bad[2] = {0, 0};
  auto work = [&](int id) {
    for (int rep = 0; rep < 20; rep++) {
      run_block_sum(200 + 37 * id, 8, (uint64_t)rep * 31 + id, &bad[id]);
      hipLaunchKernelGGL(count_up, 4, 128, 0, 0, counter);
    }
  };
  std::thread t0(work, 0), t1(work, 1);
  t0.join();
  t1.join();
  CHECK(bad[0] == 0 && bad[1] == 0, "concurrent block sums failed");
  CHECK(*counter == 2 * 20 * 4 * 128, "concurrent atomics: %d", *counter);
  dev_free(counter);
}

/* ==== Fatal cases, in child processes ==================================== */

/* Runs `fn` in a child; returns its wait status and its stderr. */
static int in_child(const std::function<void()> &fn, std::string *err) {
  int pfd[2];
  if (pipe(pfd) != 0) return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    dup2(pfd[1], 2);
    fn();
    _exit(0);
  }
  close(pfd[1]);
  char buf[4096];
  ssize_t got;
  while ((got = read(pfd[0], buf, sizeof buf)) != 0) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    err->append(buf, (size_t)got);
  }
  close(pfd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

/* Half of each warp waits at __syncthreads, the other half at a shuffle:
 * neither barrier can ever release. */
__global__ void deadlock_kernel(int *out) {
  int v = (int)threadIdx.x;
  if (__lane_id() < 16)
    __syncthreads();
  else
    v = __shfl_xor(v, 1);
  out[threadIdx.x] = v;
}

/* Deep enough recursion that the fiber's stack overflows into its guard. */
__device__ int dig(volatile int *sink, int depth, int limit) {
  if (depth >= limit) return 0;
  volatile char frame[1024];
  frame[0] = (char)depth;
  int below = dig(sink, depth + 1, limit); /* used below: no tail call */
  *sink = frame[0] + below;
  return below + 1;
}

__global__ void overflow_kernel(int *out, int limit) {
  if (threadIdx.x == 3) out[0] = dig(out, 0, limit);
}

__global__ void trap_kernel(int *out) {
  if (threadIdx.x == 5) __trap();
  out[threadIdx.x] = 1;
}

static void expect_abort(const char *what, const std::function<void()> &fn,
                         const char *needle) {
  std::string err;
  int status = in_child(fn, &err);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
        "%s: child status %#x, stderr: %s", what, status, err.c_str());
  CHECK(err.find(needle) != std::string::npos,
        "%s: stderr lacks \"%s\": %s", what, needle, err.c_str());
}

static void test_fatal() {
  int *out = dev_alloc<int>(64);
  expect_abort("deadlock",
               [&] { hipLaunchKernelGGL(deadlock_kernel, 1, 64, 0, 0, out); },
               "deadlock in kernel deadlock_kernel block (0,0,0)");
  expect_abort("__trap",
               [&] { hipLaunchKernelGGL(trap_kernel, 2, 64, 0, 0, out); },
               "__trap() in kernel trap_kernel block (0,0,0) thread (5,0,0)");
  {
    /* SIGSEGV with our line, or under ASan its stack-overflow report
     * preceded by our line: either way the thread is named. */
    std::string err;
    int status = in_child(
        [&] {
          hipLaunchKernelGGL(overflow_kernel, 1, 32, 0, 0, out, 1 << 30);
        },
        &err);
    CHECK(!(WIFEXITED(status) && WEXITSTATUS(status) == 0),
          "stack overflow: the child survived");
    CHECK(err.find("kernel overflow_kernel block (0,0,0) thread (3,0,0)") !=
                  std::string::npos &&
              (err.find("stack overflow") != std::string::npos ||
               err.find("stack-overflow") != std::string::npos),
          "stack overflow report: %s", err.c_str());
  }
  expect_abort("shuffle width",
               [&] {
                 hipLaunchKernelGGL(shuffles<int>, 1, 64, 0, 0, out, 3);
               },
               "width 3");
  dev_free(out);
}

/* Settings are read once per process, so each case re-executes this
 * program with the variable set and asks it to report what it sees. */
static void expect_probe(const char *var, const char *value,
                         const char *want) {
  std::string err;
  int status = in_child(
      [&] {
        setenv(var, value, 1);
        /* argv[0] rather than /proc/self/exe, which is Valgrind's own
         * binary when the test runs under it. */
        const char *self =
            strchr(g_argv0, '/') ? g_argv0 : "/proc/self/exe";
        execl(self, "test-emulation", "--probe", (char *)nullptr);
        _exit(127);
      },
      &err);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s=%s: status %#x",
        var, value, status);
  CHECK(err.find(want) != std::string::npos, "%s=%s: want \"%s\" in: %s", var,
        value, want, err.c_str());
}

static int probe() {
  int count = -1;
  hipError_t e = hipGetDeviceCount(&count);
  void *p = nullptr, *q = nullptr;
  hipError_t m = hipMalloc(&p, 3 << 20);
  /* With KILN_EMU_MEMORY_MB=4 the second block does not fit. */
  hipError_t m2 = hipMalloc(&q, 2 << 20);
  size_t free_bytes = 0, total = 0;
  (void)hipMemGetInfo(&free_bytes, &total);
  fprintf(stderr, "probe: count=%s/%d malloc=%s/%s free=%zu/%zu warp=%d\n",
          hipGetErrorName(e), count, hipGetErrorName(m), hipGetErrorName(m2),
          free_bytes, total, kemu_warp_size());
  if (p) hipFree(p);
  if (q) hipFree(q);
  return 0;
}

static void test_settings() {
  expect_probe("KILN_EMU_DEVICES", "0",
               "probe: count=hipErrorNoDevice/0 malloc=hipErrorNoDevice");
  expect_probe("KILN_EMU_DEVICES", "2", "probe: count=hipSuccess/2");
  expect_probe("KILN_WARP_SIZE", "64", "warp=64");
  expect_probe("KILN_WARP_SIZE", "48",
               "probe: count=hipErrorNotInitialized/0 "
               "malloc=hipErrorNotInitialized");
  expect_probe("KILN_EMU_MEMORY_MB", "4",
               "malloc=hipSuccess/hipErrorOutOfMemory free=1048576/4194304");
  expect_probe("KILN_EMU_MEMORY_MB", "lots", "KILN_EMU_MEMORY_MB=\"lots\"");
}

/* ==== Benchmark ========================================================== */

__global__ void bench_kernel(const float *in, float *out) {
  __shared__ float s[1024];
  const unsigned t = threadIdx.x, n = blockDim.x;
  float v = in[blockIdx.x * n + t];
  s[t] = v;
  __syncthreads();
  v += s[(t + 1) % n];
  __syncthreads();
  s[t] = v;
  __syncthreads();
  v += s[n - 1 - t];
  __syncthreads();
  for (int m = warpSize / 2; m > 0; m /= 2) v += __shfl_xor(v, m);
  if (__lane_id() == 0) out[blockIdx.x * (n / warpSize) + t / warpSize] = v;
}

static double bench(int reps) {
  const unsigned blocks = 1024, threads = 256, ws = (unsigned)warpSize;
  float *in = dev_alloc<float>(blocks * threads);
  float *out = dev_alloc<float>(blocks * threads / ws);
  for (unsigned i = 0; i < blocks * threads; i++) in[i] = (float)(i % 17);
  double best = 1e9;
  for (int rep = 0; rep < reps; rep++) {
    double t0 = now_s();
    hipLaunchKernelGGL(bench_kernel, blocks, threads, 0, 0, in, out);
    best = std::min(best, now_s() - t0);
    HIP_OK(hipGetLastError());
  }
  /* The result, so that the stress test checks something. */
  for (unsigned b = 0; b < blocks; b++)
    for (unsigned w = 0; w < threads / ws; w++) {
      const float *a = in + b * threads;
      float want = 0;
      for (unsigned t = w * ws; t < (w + 1) * ws; t++) {
        float v = a[t] + a[(t + 1) % threads];
        float u = a[threads - 1 - t] + a[(threads - t) % threads];
        want += v + u;
      }
      float got = out[b * (threads / ws) + w];
      if (got != want) {
        CHECK(got == want, "bench block %u warp %u: %g want %g", b, w, got,
              want);
        b = blocks;
        break;
      }
    }
  printf("bench: %u blocks x %u threads (warp %u), 4 __syncthreads + warp "
         "shuffle reduction: %.1f ms per launch (%.0f ns per thread)\n",
         blocks, threads, ws, best * 1e3, best * 1e9 / (blocks * threads));
  dev_free(in);
  dev_free(out);
  return best;
}

int main(int argc, char **argv) {
  g_argv0 = argv[0];
  if (argc > 1 && strcmp(argv[1], "--probe") == 0) return probe();
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
    bench(5);
    return g_failures ? 1 : 0;
  }
  HIP_OK(kemu_set_warp_size(32));
  test_barriers();
  test_early_exit();
  test_warps(32);
  test_warps(64);
  test_matrix();
  HIP_OK(kemu_set_warp_size(32));
  test_atomics();
  test_dynamic_shared();
  test_geometry(dim3(3, 2, 2), dim3(8, 4, 2));
  test_geometry(dim3(2, 1, 3), dim3(5, 7, 3));
  HIP_OK(kemu_set_warp_size(64));
  test_geometry(dim3(2, 2, 1), dim3(5, 7, 3));
  HIP_OK(kemu_set_warp_size(32));
  if (kemu__stack_bytes() >= (128u << 10)) { /* KILN_EMU_STACK_KB >= 128 */
    int *out = dev_alloc<int>(64);
    hipLaunchKernelGGL(big_frame, 2, 64, 0, 0, out);
    HIP_OK(hipGetLastError());
    CHECK(out[3] == 16380, "big_frame %d", out[3]);
    dev_free(out);
  }
  test_launch_config();
  test_memory();
  test_philox();
  test_threads();
  test_fatal();
  test_settings();
  /* Also a stress test (262144 threads, 2.6 million switches); a minute
   * under Valgrind, so skipped there. */
  if (!RUNNING_ON_VALGRIND) bench(1);
  if (g_failures) {
    fprintf(stderr, "test-emulation: %d check(s) failed\n", g_failures.load());
    return 1;
  }
  printf("test-emulation: all checks passed\n");
  return 0;
}
