/* The emulation's test (test-emulation.h), part two: the runtime around
 * the kernels. Atomics, dynamic shared memory and thread geometry, launch
 * configurations a GPU refuses, streams, events, memory, the Philox
 * generator, and launches from several OS threads.
 */
#include <thread>

#include "hip-on-host-impl.h"
#include "test-emulation.h"

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

void test_atomics() {
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

void test_dynamic_shared() {
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

void test_geometry(dim3 grid, dim3 block) {
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

void test_launch_config() {
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

void test_memory() {
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

/* The normals' shape, not only their moments: counts in bins of width 1/4
 * sigma out to 4 sigma and beyond, against the normal distribution's
 * (chi-square, 33 degrees of freedom: about 33 +- 8 for a right
 * generator), and the two tails past 3.654 sigma, where the ziggurat's
 * base layer hands over to its tail method, each within 5 sigma of what
 * they should hold. */
static void check_normal_shape(const float *a, size_t n, double mean,
                               double stddev) {
  enum { BINS = 34 };
  double count[BINS] = {};
  size_t tail_lo = 0, tail_hi = 0;
  const double r = 3.6541528853610088;
  for (size_t i = 0; i < n; i++) {
    const double z = (a[i] - mean) / stddev;
    const int b = z < -4.0   ? 0
                  : z >= 4.0 ? BINS - 1
                             : 1 + (int)((z + 4.0) * 4.0);
    count[b]++;
    tail_lo += z < -r;
    tail_hi += z > r;
  }
  auto cdf = [](double z) { return 0.5 * erfc(-z / sqrt(2.0)); };
  double chi2 = 0.0;
  for (int b = 0; b < BINS; b++) {
    const double lo = b == 0 ? -INFINITY : -4.0 + (b - 1) * 0.25;
    const double hi = b == BINS - 1 ? INFINITY : -4.0 + b * 0.25;
    const double want = (double)n * (cdf(hi) - cdf(lo));
    chi2 += (count[b] - want) * (count[b] - want) / want;
  }
  CHECK(chi2 < 80.0, "normal shape: chi-square %.1f over %d bins", chi2, BINS);
  const double tail = (double)n * cdf(-r), sd = sqrt(tail);
  CHECK(fabs((double)tail_lo - tail) < 5 * sd &&
            fabs((double)tail_hi - tail) < 5 * sd,
        "normal tails past %.3f sigma: %zu and %zu, expected %.0f each", r,
        tail_lo, tail_hi, tail);
}

/* The batched Philox (AVX2 where the CPU has it) gives the words of the
 * single-block function, across a carry into the counter's high word. */
static void check_philox_batch() {
  const uint32_t key[2] = {0x243f6a88, 0x85a308d3};
  const unsigned long long firsts[] = {0, 5, (1ull << 32) - 3, ~0ull - 4};
  for (unsigned long long first : firsts) {
    uint32_t fast[4 * KEMU__PHILOX_BATCH], slow[4 * KEMU__PHILOX_BATCH];
    kemu__philox_batch(first, key, fast);
    kemu__philox_batch_scalar(first, key, slow);
    CHECK(memcmp(fast, slow, sizeof fast) == 0,
          "philox batch from %llu differs from the scalar blocks", first);
    for (int j = 0; j < KEMU__PHILOX_BATCH; j++) {
      const unsigned long long b = first + (unsigned)j;
      uint32_t c[4] = {(uint32_t)b, (uint32_t)(b >> 32), 0, 0};
      kemu__philox4x32_10(c, key);
      CHECK(memcmp(c, slow + 4 * j, sizeof c) == 0,
            "scalar batch block %llu differs", b);
    }
  }
}

void test_philox() {
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
  check_normal_shape(a, n, 2.0, 3.0);
  /* Normals are a function of the seed and their place in the stream. */
  CHECK(hiprandSetPseudoRandomGeneratorSeed(g2, 0) == 0, "seed");
  CHECK(hiprandGenerateUniform(g2, b, 4) == 0, "uniform");
  CHECK(hiprandGenerateNormal(g2, b, n, 2.0f, 3.0f) == 0, "normal");
  CHECK(memcmp(a, b, n * sizeof(float)) == 0, "same seed, different normals");
  CHECK(hiprandGenerateNormal(g2, b, n, 2.0f, 3.0f) == 0, "normal");
  CHECK(memcmp(a, b, n * sizeof(float)) != 0, "a second call repeats normals");
  check_philox_batch();
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

void test_threads() {
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
