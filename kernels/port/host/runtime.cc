/* HIP-on-CPU runtime: the functions of hip-on-host-api.h.
 *
 * "Device" memory is C-heap memory (so AddressSanitizer sees kernels'
 * out-of-bounds accesses), charged against a simulated device size so that
 * memory info, leak checks and allocation caps behave as on a GPU. Streams
 * run their work at once and in order; events read CLOCK_MONOTONIC. The
 * environment is read once, at the first call; a bad setting is reported on
 * stderr and makes every call that needs a device fail with
 * hipErrorNotInitialized, as a broken HIP install would.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <new>
#include <unordered_set>
#include <vector>

#include "hip-on-host-impl.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define KEMU__ON_VALGRIND() RUNNING_ON_VALGRIND
#endif
#endif
#ifndef KEMU__ON_VALGRIND
#define KEMU__ON_VALGRIND() 0
#endif

/* The value behind warpSize in hip-on-host.h. */
extern "C" {
int kemu__warp_size_value = 32;
}

namespace {

/* ==== Settings =========================================================== */

struct config {
  hipError_t status;        /* hipSuccess or hipErrorNotInitialized */
  int devices;              /* visible devices */
  int physical[64];         /* visible device -> emulated physical device */
  unsigned long long broken; /* bit per physical device that cannot work */
  size_t memory_bytes;      /* per device */
  size_t stack_bytes;
  unsigned long long init_ms; /* KILN_EMU_INIT_MS: simulated context start-up */
};

/* Reads a decimal setting in [lo, hi]; false (after one line on stderr) if
 * it is set to anything else. */
bool env_number(const char *name, unsigned long long lo, unsigned long long hi,
                unsigned long long fallback, unsigned long long *out) {
  const char *text = getenv(name);
  *out = fallback;
  if (!text || !*text) return true;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno == 0 && *end == '\0' && text[0] != '-' && v >= lo && v <= hi) {
    *out = v;
    return true;
  }
  fprintf(stderr,
          "kiln host emulation: %s=\"%s\" is not valid (expected %llu..%llu); "
          "HIP calls will fail with hipErrorNotInitialized\n",
          name, text, lo, hi);
  return false;
}

/* Reads a comma-separated list of device numbers below limit into out
 * (at most 64); false (after one line on stderr) for anything else. */
bool env_list(const char *name, unsigned long long limit, int *out, int *n) {
  const char *text = getenv(name);
  *n = 0;
  if (!text) return true;
  for (const char *p = text; *p;) {
    char *end = nullptr;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno || end == p || *p == '-' || v >= limit || *n == 64 ||
        (*end && *end != ',')) {
      fprintf(stderr,
              "kiln host emulation: %s=\"%s\" is not a list of device "
              "numbers below %llu; HIP calls will fail with "
              "hipErrorNotInitialized\n",
              name, text, limit);
      return false;
    }
    out[(*n)++] = (int)v;
    p = *end ? end + 1 : end;
  }
  return true;
}

/* KILN_EMU_VISIBLE_DEVICES narrows the emulated devices as
 * CUDA_VISIBLE_DEVICES does (kiln sets it per child); KILN_EMU_BROKEN_DEVICES
 * lists physical devices that are listed but fail every stream or memory
 * call, as a GPU that is present but unusable would (kiln's own tests). */
bool read_device_lists(config &c) {
  int visible[64], nvisible = 0, broken[64], nbroken = 0;
  bool ok = env_list("KILN_EMU_VISIBLE_DEVICES", (unsigned long long)c.devices,
                     visible, &nvisible);
  ok &= env_list("KILN_EMU_BROKEN_DEVICES", 64, broken, &nbroken);
  if (!ok) return false;
  for (int i = 0; i < 64; i++) c.physical[i] = i;
  if (getenv("KILN_EMU_VISIBLE_DEVICES")) {
    c.devices = nvisible;
    for (int i = 0; i < nvisible; i++) c.physical[i] = visible[i];
  }
  for (int i = 0; i < nbroken; i++) c.broken |= 1ull << broken[i];
  return true;
}

config read_config() {
  config c = {hipSuccess, 1, {0}, 0, 0, 0, 0};
  unsigned long long warp, mb, devices, stack_kb, init_ms;
  bool ok = env_number("KILN_WARP_SIZE", 32, 64, 32, &warp);
  if (ok && warp != 32 && warp != 64) {
    fprintf(stderr,
            "kiln host emulation: KILN_WARP_SIZE=%llu is not supported (32 "
            "or 64); HIP calls will fail with hipErrorNotInitialized\n",
            warp);
    ok = false;
  }
  ok &= env_number("KILN_EMU_MEMORY_MB", 1, 1ull << 24, 8192, &mb);
  ok &= env_number("KILN_EMU_DEVICES", 0, 64, 1, &devices);
  ok &= env_number("KILN_EMU_STACK_KB", 16, 1 << 20, 256, &stack_kb);
  ok &= env_number("KILN_EMU_INIT_MS", 0, 600000, 0, &init_ms);
  if (!ok) {
    c.status = hipErrorNotInitialized;
    return c;
  }
  kemu__warp_size_value = (int)warp;
  c.devices = (int)devices;
  if (!read_device_lists(c)) {
    c.status = hipErrorNotInitialized;
    return c;
  }
  c.memory_bytes = (size_t)mb << 20;
  c.stack_bytes = (size_t)stack_kb << 10;
  c.init_ms = init_ms;
  return c;
}

const config &cfg() {
  static const config c = read_config(); /* thread-safe, once */
  return c;
}

/* Read the settings when the program loads, so that host code which reads
 * warpSize before its first HIP call (to size a launch, say) already sees
 * KILN_WARP_SIZE. */
__attribute__((constructor)) void load_settings() { (void)cfg(); }

/* ==== Shared state ======================================================= */

struct allocation {
  size_t bytes;
  int device;
  bool mapped; /* pages of its own (large_pages), not the C heap's */
};

/* A large allocation takes pages of its own, as it would from a GPU
 * driver: glibc fills every heap allocation when MALLOC_PERTURB_ is set
 * (meson test sets it), and a test allocating half the device's memory
 * then wrote 4 GiB, 6 s of page clearing, on allocation. glibc maps
 * blocks this large itself anyway, so the contents are the same; under
 * AddressSanitizer or Valgrind the heap keeps them, for its redzones. */
static bool large_pages(size_t bytes) {
  return !KEMU__ASAN && !KEMU__ON_VALGRIND() && bytes >= ((size_t)64 << 20);
}

struct kemu_state {
  std::mutex mu;
  std::map<uintptr_t, allocation> allocs; /* ordered: range lookups */
  std::vector<size_t> used;               /* live bytes per device */
  std::unordered_set<const void *> streams, events, generators;
};

/* Never destroyed, so that calls made during process exit still work. */
kemu_state &state() {
  static kemu_state *s = new kemu_state();
  return *s;
}

__thread hipError_t t_last_error = hipSuccess;
__thread int t_device = 0;

hipError_t ret(hipError_t e) { return kemu__record_error(e); }

double now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int cpu_count() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* Looks `ptr` up among live allocations; the caller holds the lock. */
const allocation *find_block(kemu_state &st, const void *ptr, size_t bytes) {
  auto it = st.allocs.upper_bound((uintptr_t)ptr);
  if (it == st.allocs.begin()) return nullptr;
  --it;
  size_t off = (uintptr_t)ptr - it->first;
  if (off >= it->second.bytes || bytes > it->second.bytes - off)
    return nullptr;
  return &it->second;
}

bool handle_live(const std::unordered_set<const void *> &set, const void *h) {
  std::lock_guard<std::mutex> lock(state().mu);
  return set.count(h) != 0;
}

} // namespace

/* ==== Internal interface (hip-on-host-impl.h) ============================ */

hipError_t kemu__runtime_ready(void) {
  const config &c = cfg();
  if (c.status != hipSuccess) return c.status;
  return c.devices > 0 ? hipSuccess : hipErrorNoDevice;
}

/* Physical devices this process lost (kemu_lose_device): every later call
 * on them fails, as a CUDA context is unusable after an Xid error. */
static std::atomic<unsigned long long> lost_here;

/* hipErrorUnknown (and a line on stderr, once) when the device is one of
 * KILN_EMU_BROKEN_DEVICES; hipErrorLaunchFailure when it was lost, by this
 * process or (KILN_EMU_STATE_DIR) by another. */
static hipError_t kemu__device_usable(int device = t_device) {
  const config &c = cfg();
  int phys = c.physical[device];
  if ((lost_here.load() >> phys & 1) || kemu__device_lost(phys)) {
    static bool said;
    if (!said)
      fprintf(stderr, "kiln host emulation: device %d (physical %d) was lost "
                      "(kemu_lose_device)\n", device, phys);
    said = true;
    return hipErrorLaunchFailure;
  }
  if (!(c.broken >> phys & 1)) return hipSuccess;
  static bool said;
  if (!said)
    fprintf(stderr, "kiln host emulation: device %d (physical %d) is listed "
                    "but unusable (KILN_EMU_BROKEN_DEVICES)\n", device, phys);
  said = true;
  return hipErrorUnknown;
}

hipError_t kemu__record_error(hipError_t error) {
  if (error != hipSuccess) t_last_error = error;
  return error;
}

bool kemu__stream_valid(hipStream_t stream) {
  return !stream || handle_live(state().streams, stream);
}

bool kemu__device_range(const void *ptr, size_t bytes) {
  kemu_state &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  return find_block(st, ptr, bytes) != nullptr;
}

size_t kemu__stack_bytes(void) {
  size_t b = cfg().stack_bytes;
  return b ? b : (size_t)256 << 10;
}

/* ==== Errors ============================================================= */

#define KEMU__ERRORS(X)                                                     \
  X(hipSuccess, "no error")                                                 \
  X(hipErrorInvalidValue, "invalid argument")                               \
  X(hipErrorOutOfMemory, "out of memory")                                   \
  X(hipErrorNotInitialized, "initialization error")                         \
  X(hipErrorInvalidDevice, "invalid device ordinal")                        \
  X(hipErrorNoDevice, "no device (KILN_EMU_DEVICES=0)")                     \
  X(hipErrorInvalidResourceHandle, "invalid resource handle")               \
  X(hipErrorNotReady, "device not ready")                                   \
  X(hipErrorIllegalAddress, "an illegal memory access was encountered")     \
  X(hipErrorAssert, "device-side assert triggered")                         \
  X(hipErrorLaunchFailure, "unspecified launch failure")                    \
  X(hipErrorInvalidConfiguration, "invalid configuration argument")         \
  X(hipErrorNotSupported, "operation not supported")                        \
  X(hipErrorUnknown, "unknown error")

const char *hipGetErrorName(hipError_t error) {
  switch (error) {
#define X(code, text) \
  case code:          \
    return #code;
    KEMU__ERRORS(X)
#undef X
  }
  return "hipErrorUnknown";
}

const char *hipGetErrorString(hipError_t error) {
  switch (error) {
#define X(code, text) \
  case code:          \
    return text;
    KEMU__ERRORS(X)
#undef X
  }
  return "unknown error";
}

hipError_t hipGetLastError(void) {
  hipError_t e = t_last_error;
  t_last_error = hipSuccess;
  return e;
}

hipError_t hipPeekAtLastError(void) { return t_last_error; }

/* ==== Devices ============================================================ */

hipError_t hipGetDeviceCount(int *count) {
  if (!count) return ret(hipErrorInvalidValue);
  const config &c = cfg();
  *count = c.status == hipSuccess ? c.devices : 0;
  if (c.status != hipSuccess) return ret(c.status);
  return ret(c.devices > 0 ? hipSuccess : hipErrorNoDevice);
}

hipError_t hipGetDeviceProperties(hipDeviceProp_t *prop, int device) {
  if (!prop) return ret(hipErrorInvalidValue);
  hipError_t e = kemu__runtime_ready();
  if (e != hipSuccess) return ret(e);
  if (device < 0 || device >= cfg().devices) return ret(hipErrorInvalidDevice);
  memset(prop, 0, sizeof *prop);
  snprintf(prop->name, sizeof prop->name, "kiln host emulation");
  prop->totalGlobalMem = cfg().memory_bytes;
  prop->sharedMemPerBlock = 65536;
  prop->warpSize = kemu__warp_size_value;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = 1024;
  prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = 65535;
  prop->maxGridSize[2] = 65535;
  prop->multiProcessorCount = cpu_count();
  snprintf(prop->gcnArchName, sizeof prop->gcnArchName, "host-wave%d",
           kemu__warp_size_value);
  return hipSuccess;
}

/* A CPU has caches but no L2 in a GPU's sense; 4 MiB is a figure of the
 * right order for a desktop CPU's last level, so that code which sizes its
 * buffers from the L2 (the perf suite) does something sensible here. */
hipError_t hipDeviceGetAttribute(int *value, hipDeviceAttribute_t attr,
                                 int device) {
  if (!value) return ret(hipErrorInvalidValue);
  hipError_t e = kemu__runtime_ready();
  if (e != hipSuccess) return ret(e);
  if (device < 0 || device >= cfg().devices) return ret(hipErrorInvalidDevice);
  switch (attr) {
  case hipDeviceAttributeL2CacheSize: *value = 4 << 20; return hipSuccess;
  case hipDeviceAttributeComputeCapabilityMajor:
    *value = kemu_warp_size() == 32 ? 8 : 0;
    return hipSuccess;
  }
  return ret(hipErrorInvalidValue);
}

hipError_t hipSetDevice(int device) {
  hipError_t e = kemu__runtime_ready();
  if (e != hipSuccess) return ret(e);
  if (device < 0 || device >= cfg().devices) return ret(hipErrorInvalidDevice);
  t_device = device;
  return hipSuccess;
}

hipError_t hipGetDevice(int *device) {
  if (!device) return ret(hipErrorInvalidValue);
  hipError_t e = kemu__runtime_ready();
  if (e != hipSuccess) return ret(e);
  *device = t_device;
  return hipSuccess;
}

hipError_t hipMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
  if (!free_bytes || !total_bytes) return ret(hipErrorInvalidValue);
  hipError_t e = kemu__runtime_ready();
  if (e != hipSuccess) return ret(e);
  kemu_state &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.used.resize((size_t)cfg().devices, 0);
  *total_bytes = cfg().memory_bytes;
  *free_bytes = kemu__shared_free(cfg().physical[t_device], st.used[(size_t)t_device],
                                  cfg().memory_bytes);
  return hipSuccess;
}

/* The emulation's own version, in HIP's major * 10^7 + minor * 10^5 form. */
hipError_t hipDriverGetVersion(int *version) {
  if (!version) return ret(hipErrorInvalidValue);
  *version = 10000000;
  return hipSuccess;
}

hipError_t hipRuntimeGetVersion(int *version) {
  return hipDriverGetVersion(version);
}

/* ==== Memory ============================================================= */

hipError_t hipMalloc(void **ptr, size_t bytes) {
  if (!ptr) return ret(hipErrorInvalidValue);
  *ptr = nullptr;
  hipError_t e = kemu__runtime_ready();
  if (e == hipSuccess) e = kemu__device_usable();
  if (e != hipSuccess) return ret(e);
  if (bytes == 0) return hipSuccess; /* as HIP: success, null pointer */

  kemu_state &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.used.resize((size_t)cfg().devices, 0);
  size_t &used = st.used[(size_t)t_device];
  int phys = cfg().physical[t_device];
  if (!kemu__shared_take(phys, used, bytes, cfg().memory_bytes))
    return ret(hipErrorOutOfMemory);
  void *p = nullptr;
  bool mapped = large_pages(bytes);
  if (mapped) {
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
             -1, 0);
    if (p == MAP_FAILED) p = nullptr;
  } else if (posix_memalign(&p, 256, bytes) != 0) {
    p = nullptr;
  }
  if (!p) {
    kemu__shared_memory_set(phys, used);
    return ret(hipErrorOutOfMemory);
  }
  /* Left as the C heap returns it, like a GPU allocator handing back memory
   * a previous allocation used: reuse without initialisation reproduces
   * here as it does on a device. The engine's poison mode (--poison) is
   * what fills new allocations with NaN bytes. */
  try {
    st.allocs.emplace((uintptr_t)p, allocation{bytes, t_device, mapped});
  } catch (const std::bad_alloc &) {
    if (mapped) munmap(p, bytes);
    else free(p);
    kemu__shared_memory_set(phys, used);
    return ret(hipErrorOutOfMemory);
  }
  used += bytes;
  *ptr = p;
  return hipSuccess;
}

hipError_t hipFree(void *ptr) {
  if (!ptr) return hipSuccess;
  kemu_state &st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  auto it = st.allocs.find((uintptr_t)ptr);
  if (it == st.allocs.end()) return ret(hipErrorInvalidValue);
  int device = it->second.device;
  size_t bytes = it->second.bytes;
  bool mapped = it->second.mapped;
  st.used[(size_t)device] -= bytes;
  kemu__shared_memory_set(cfg().physical[device], st.used[(size_t)device]);
  st.allocs.erase(it);
  if (mapped) munmap(ptr, bytes);
  else free(ptr);
  return hipSuccess;
}

hipError_t hipMemcpyAsync(void *dst, const void *src, size_t bytes,
                          hipMemcpyKind kind, hipStream_t stream) {
  hipError_t e = kemu__runtime_ready();
  if (e != hipSuccess) return ret(e);
  if (!kemu__stream_valid(stream)) return ret(hipErrorInvalidResourceHandle);
  if ((unsigned)kind > hipMemcpyDefault) return ret(hipErrorInvalidValue);
  if (bytes == 0) return hipSuccess;
  if (!dst || !src) return ret(hipErrorInvalidValue);
  /* The device side of a copy must lie inside one allocation: a GPU would
   * fault or refuse, and the host backend should not be more forgiving. */
  bool dst_dev =
      kind == hipMemcpyHostToDevice || kind == hipMemcpyDeviceToDevice;
  bool src_dev =
      kind == hipMemcpyDeviceToHost || kind == hipMemcpyDeviceToDevice;
  if ((dst_dev && !kemu__device_range(dst, bytes)) ||
      (src_dev && !kemu__device_range(src, bytes)))
    return ret(hipErrorInvalidValue);
  memcpy(dst, src, bytes);
  return hipSuccess;
}

hipError_t hipMemsetAsync(void *dst, int value, size_t bytes,
                          hipStream_t stream) {
  hipError_t e = kemu__runtime_ready();
  if (e != hipSuccess) return ret(e);
  if (!kemu__stream_valid(stream)) return ret(hipErrorInvalidResourceHandle);
  if (bytes == 0) return hipSuccess;
  if (!kemu__device_range(dst, bytes)) return ret(hipErrorInvalidValue);
  memset(dst, value, bytes);
  return hipSuccess;
}

/* ==== Streams and events ================================================= */

struct kemu_stream {
  unsigned flags;
  int device;               /* the device current when it was made */
};

struct kemu_event {
  bool recorded;
  double ms;
};

/* A GPU's context is made on first use, and that is what a process pays
 * at start-up (runtime init and context creation: 200-300 ms on an H100).
 * The emulation's first stream stands in for it: KILN_EMU_INIT_MS makes
 * it that slow, once per process, so kiln's warm children can be shown
 * to hide it. */
static void kemu__simulate_context_startup(void) {
  static std::once_flag once;
  std::call_once(once, [] {
    unsigned long long ms = cfg().init_ms;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (ms && nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  });
}

hipError_t hipStreamCreateWithFlags(hipStream_t *stream, unsigned flags) {
  if (!stream || (flags & ~(unsigned)hipStreamNonBlocking))
    return ret(hipErrorInvalidValue);
  hipError_t e = kemu__runtime_ready();
  if (e == hipSuccess) e = kemu__device_usable();
  if (e != hipSuccess) return ret(e);
  kemu__simulate_context_startup();
  kemu_stream *s = new (std::nothrow) kemu_stream{flags, t_device};
  if (!s) return ret(hipErrorOutOfMemory);
  std::lock_guard<std::mutex> lock(state().mu);
  state().streams.insert(s);
  *stream = s;
  return hipSuccess;
}

hipError_t hipStreamDestroy(hipStream_t stream) {
  if (!stream) return ret(hipErrorInvalidResourceHandle);
  {
    std::lock_guard<std::mutex> lock(state().mu);
    if (state().streams.erase(stream) == 0)
      return ret(hipErrorInvalidResourceHandle);
  }
  delete stream;
  return hipSuccess;
}

hipError_t hipStreamSynchronize(hipStream_t stream) {
  hipError_t e = kemu__runtime_ready();
  if (e != hipSuccess) return ret(e);
  /* Work ran when it was issued: nothing to wait for, but a lost
   * device's error is sticky, as on a GPU. */
  if (!kemu__stream_valid(stream)) return ret(hipErrorInvalidResourceHandle);
  if (stream && (lost_here.load() >> cfg().physical[stream->device] & 1))
    return ret(hipErrorLaunchFailure);
  return hipSuccess;
}

hipError_t hipEventCreate(hipEvent_t *event) {
  if (!event) return ret(hipErrorInvalidValue);
  hipError_t e = kemu__runtime_ready();
  if (e != hipSuccess) return ret(e);
  kemu_event *ev = new (std::nothrow) kemu_event{false, 0.0};
  if (!ev) return ret(hipErrorOutOfMemory);
  std::lock_guard<std::mutex> lock(state().mu);
  state().events.insert(ev);
  *event = ev;
  return hipSuccess;
}

hipError_t hipEventDestroy(hipEvent_t event) {
  {
    std::lock_guard<std::mutex> lock(state().mu);
    if (!event || state().events.erase(event) == 0)
      return ret(hipErrorInvalidResourceHandle);
  }
  delete event;
  return hipSuccess;
}

hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
  if (!event || !handle_live(state().events, event))
    return ret(hipErrorInvalidResourceHandle);
  if (!kemu__stream_valid(stream)) return ret(hipErrorInvalidResourceHandle);
  event->ms = now_ms();
  event->recorded = true;
  return hipSuccess;
}

hipError_t hipEventSynchronize(hipEvent_t event) {
  if (!event || !handle_live(state().events, event))
    return ret(hipErrorInvalidResourceHandle);
  return hipSuccess;
}

hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop) {
  if (!ms) return ret(hipErrorInvalidValue);
  if (!start || !stop || !handle_live(state().events, start) ||
      !handle_live(state().events, stop))
    return ret(hipErrorInvalidResourceHandle);
  /* As in HIP and CUDA, both events must have been recorded. */
  if (!start->recorded || !stop->recorded)
    return ret(hipErrorInvalidResourceHandle);
  *ms = (float)(stop->ms - start->ms);
  return hipSuccess;
}

/* ==== Emulation control ================================================== */

hipError_t kemu_set_warp_size(int warp_size) {
  /* Read the environment first, so that it cannot override this later. */
  (void)cfg();
  if (warp_size != 32 && warp_size != 64) return ret(hipErrorInvalidValue);
  kemu__warp_size_value = warp_size;
  return hipSuccess;
}

int kemu_warp_size(void) {
  (void)cfg();
  return kemu__warp_size_value;
}

hipError_t kemu_lose_device(void) {
  hipError_t e = kemu__runtime_ready();
  if (e != hipSuccess) return ret(e);
  int phys = cfg().physical[t_device];
  lost_here.fetch_or(1ull << phys);
  kemu__device_mark_lost(phys);
  return ret(hipErrorLaunchFailure);
}

/* hiprand.cc keeps its generator handles in the same registry. */
bool kemu__generator_register(const void *gen, bool add) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (add) return state().generators.insert(gen).second;
  return state().generators.erase(gen) != 0;
}

bool kemu__generator_live(const void *gen) {
  return handle_live(state().generators, gen);
}
