/* HIP-on-CPU launches: runs a grid block after block on the calling OS
 * thread, each block's threads as cooperative fibers (fiber.cc).
 *
 * Scheduling is a FIFO run queue: a thread runs until it finishes or waits
 * at a barrier, then the next ready thread runs. A thread takes a stack
 * when it first runs; one that returns hands it to the next thread if that
 * one has not started, with no switch. A barrier releases when
 * every live thread of its scope (block or warp) has arrived; a thread that
 * returned counts as arrived, as on hardware. Warp operations exchange
 * values through per-warp slots around a warp barrier. Named barriers
 * (bar.sync / bar.arrive with an id and a thread count) release when that
 * many arrivals are in, waiters or not. If a thread must wait while no
 * thread is ready, no barrier can ever release: that is a deadlock,
 * reported and aborted.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mutex>
#include <new>

#include "hip-on-host.h"
#include "hip-on-host-impl.h"

#if KEMU__ASAN
#include <sanitizer/common_interface_defs.h>
#endif

/* The built-in variables of hip-on-host.h, rewritten at every switch. */
__thread uint3 threadIdx;
__thread uint3 blockIdx;
__thread dim3 blockDim;
__thread dim3 gridDim;
__thread unsigned int kemu__lane;
__thread unsigned long kemu__block_seq;

namespace {

enum {
  MAX_THREADS = KEMU__MAX_FIBERS,
  MAX_WARPS = MAX_THREADS / 32,
  MAX_LANES = 64
};

enum fiber_state : uint8_t {
  READY, RUNNING, AT_BLOCK, AT_WARP, AT_NAMED, DONE
};

struct fiber {
  kemu__ctx *ctx; /* its stack's context; null until it first runs */
  /* Stack k's context in fibers[k], whichever thread runs on it: with
   * barriers thread k keeps stack k, in the same cache line. */
  kemu__ctx stack_ctx;
  uint3 tid;
  uint16_t lane, warp;
  uint16_t stack; /* which stack it holds, while ctx is set */
  fiber_state state;
  uint8_t named; /* the named barrier it waits at (AT_NAMED) */
};

/* A named barrier (PTX bar.sync / bar.arrive id, count): the thread count
 * its current phase was opened with and the arrivals so far; a phase
 * releases at `count` arrivals and the next starts empty. Ids 1-15: id 0 is
 * __syncthreads's barrier, which the emulation keeps to it. */
enum { NAMED_BARS = 16 };
struct named_bar {
  unsigned int count, arrived;
};

/* A warp's barrier and exchange slots. The slots are double-buffered by the
 * barrier generation's parity: operation g writes and reads slot[g & 1],
 * and no lane can write slot[g & 1] again (operation g + 2) before every
 * lane has passed barrier g + 1, i.e. finished reading operation g. So one
 * barrier per operation suffices. participants[g & 1] is the set of lanes
 * that were live when operation g released; a lane that returns right after
 * it does not make its value unreadable to the others. */
struct warp_state {
  unsigned int first, lanes, live, arrived, gen;
  uint64_t live_mask;
  uint64_t participants[2];
  uint64_t slot[2][MAX_LANES];
  /* Wider per-lane records for the emulated matrix instructions
   * (kemu__warp_gather), double-buffered like slot. */
  unsigned char gather[2][MAX_LANES][KEMU__GATHER_BYTES];
  /* The generation each of kemu__warp_scratch's two buffers (sched's
   * scratch) was last filled for. */
  unsigned int scratch_gen[2];
};

/* Everything one OS thread needs to run blocks; created on its first launch
 * and kept, with its fiber stacks, until the thread exits. */
struct sched {
  kemu__ctx main_ctx;                 /* the launching thread's context */
  fiber *cur;                         /* running emulated thread, or null */
  const kemu__launch_desc *desc;
  void *dyn_shared;
  size_t dyn_bytes;
  unsigned int warp_size, nthreads, nwarps;
  unsigned int live, arrived;         /* block barrier */
  unsigned int rq_head, rq_tail;      /* run queue ring, counters mod 2^32 */
  /* The stacks no started thread holds: a LIFO, so that the stack used
   * last, still in cache, is used next. */
  unsigned int nfree, free_stack[MAX_THREADS];
  fiber *runq[MAX_THREADS];
  fiber fibers[MAX_THREADS];
  warp_state warps[MAX_WARPS];
  named_bar named[NAMED_BARS];
  /* kemu__warp_scratch's buffers, double-buffered like the gather records;
   * apart from warps, whose hot fields they would spread over more pages. */
  alignas(16) unsigned char scratch[MAX_WARPS][2][KEMU__SCRATCH_BYTES];
  kemu__stack_pool stacks;
  void *alt_stack; /* signal stack this thread got from us, or null */
};

enum { ALT_STACK_BYTES = 64 << 10 };

struct sched_owner {
  sched *s = nullptr;
  ~sched_owner() {
    if (!s) return;
    if (s->alt_stack) {
      stack_t off = {};
      off.ss_flags = SS_DISABLE;
      sigaltstack(&off, nullptr);
      munmap(s->alt_stack, ALT_STACK_BYTES);
    }
    kemu__stack_pool_release(&s->stacks);
    delete s;
  }
};

thread_local sched_owner t_owner;
/* A plain copy of t_owner.s for the hot paths (no TLS wrapper call). */
__thread sched *t_sched;

const uint64_t POISON = ~(uint64_t)0; /* NaN as float or double, -1 as int */

/* ==== Fault report ====================================================== */

/* A kernel that faults (a wild pointer, or a stack overflow into a fiber's
 * guard page) would otherwise die with a bare SIGSEGV. Where nobody else
 * handles SIGSEGV and SIGBUS, a one-shot handler first names the kernel,
 * block and thread, then lets the default action kill the process as
 * before. It runs on an alternate signal stack, as the faulting stack may
 * be full. Under ASan, ASan reports faults and kemu__report_position adds
 * the position. */
#if !KEMU__ASAN
void on_fault(int sig, siginfo_t *info, void *) {
  const sched *s = t_sched;
  if (s && s->cur) {
    const kemu__stack_pool *p = &s->stacks;
    const uintptr_t a = (uintptr_t)info->si_addr, base = (uintptr_t)p->region;
    const bool guard = p->region && a >= base &&
                       a - base < p->stride * KEMU__MAX_FIBERS &&
                       (a - base) % p->stride < p->stride - p->stack_bytes;
    char msg[384];
    int n = snprintf(msg, sizeof msg,
                     "kiln host emulation: %s in kernel %s block (%u,%u,%u) "
                     "thread (%u,%u,%u)%s\n",
                     sig == SIGBUS ? "SIGBUS" : "SIGSEGV", s->desc->kernel,
                     blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x,
                     threadIdx.y, threadIdx.z,
                     guard ? ": stack overflow, raise KILN_EMU_STACK_KB" : "");
    if (n > 0)
      (void)!write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
  }
  /* SA_RESETHAND has restored the default action: returning re-runs the
   * faulting instruction, which now ends the process with this signal. */
}
#endif

void watch_faults(sched *s) {
#if !KEMU__ASAN
  stack_t cur;
  if (sigaltstack(nullptr, &cur) == 0 && (cur.ss_flags & SS_DISABLE)) {
    void *mem = mmap(nullptr, ALT_STACK_BYTES, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem != MAP_FAILED) {
      stack_t alt = {};
      alt.ss_sp = mem;
      alt.ss_size = ALT_STACK_BYTES;
      if (sigaltstack(&alt, nullptr) == 0)
        s->alt_stack = mem;
      else
        munmap(mem, ALT_STACK_BYTES);
    }
  }
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGSEGV, SIGBUS}) {
      struct sigaction old;
      if (sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
          old.sa_handler != SIG_DFL)
        continue; /* someone else's handler: leave it alone */
      struct sigaction sa = {};
      sa.sa_sigaction = on_fault;
      sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
      sigemptyset(&sa.sa_mask);
      sigaction(sig, &sa, nullptr);
    }
  });
#else
  (void)s;
#endif
}

sched *get_sched() {
  if (!t_sched) {
    sched *s = new (std::nothrow) sched();
    if (!s) return nullptr;
    t_owner.s = s;
    t_sched = s;
    watch_faults(s);
  }
  return t_sched;
}

[[noreturn]] __attribute__((format(printf, 1, 2))) void die(const char *fmt,
                                                            ...) {
  va_list ap;
  va_start(ap, fmt);
  fflush(stdout);
  fprintf(stderr, "kiln host emulation: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}

/* The scheduler of the running kernel; aborts outside a kernel, where a
 * barrier or warp operation has no meaning. */
inline sched *running(const char *what) {
  sched *s = t_sched;
  if (__builtin_expect(!s || !s->cur, 0))
    die("%s called outside a kernel launch", what);
  return s;
}

inline void rq_push(sched *s, fiber *f) {
  f->state = READY;
  s->runq[s->rq_tail++ % MAX_THREADS] = f;
}

inline fiber *rq_pop(sched *s) {
  if (s->rq_head == s->rq_tail) return nullptr;
  return s->runq[s->rq_head++ % MAX_THREADS];
}

/* Makes `f` the running thread as seen by kernel code. */
inline void enter(sched *s, fiber *f) {
  s->cur = f;
  f->state = RUNNING;
  threadIdx = f->tid;
  kemu__lane = f->lane;
}

void release_block(sched *s) {
  s->arrived = 0;
  for (unsigned int i = 0; i < s->nthreads; i++)
    if (s->fibers[i].state == AT_BLOCK) rq_push(s, &s->fibers[i]);
}

void release_warp(sched *s, warp_state *w) {
  w->participants[w->gen & 1] = w->live_mask;
  w->gen++;
  w->arrived = 0;
  for (unsigned int l = 0; l < w->lanes; l++) {
    fiber *f = &s->fibers[w->first + l];
    if (f->state == AT_WARP) rq_push(s, f);
  }
}

/* `spinner`: the one thread still able to run spins on an mbarrier phase
 * that only another thread could complete. */
[[noreturn]] void deadlock(sched *s, const fiber *spinner = nullptr) {
  unsigned int at_block = 0, at_warp = 0, at_named = 0, done = 0;
  for (unsigned int i = 0; i < s->nthreads; i++) {
    at_block += s->fibers[i].state == AT_BLOCK;
    at_warp += s->fibers[i].state == AT_WARP;
    at_named += s->fibers[i].state == AT_NAMED;
    done += s->fibers[i].state == DONE;
  }
  /* Name the first warp whose lanes wait at different barriers: usually
   * the divergent branch to look at. */
  char detail[128] = "";
  for (unsigned int w = 0; w < s->nwarps; w++) {
    const warp_state *ws = &s->warps[w];
    unsigned int b = 0, x = 0;
    for (unsigned int l = 0; l < ws->lanes; l++) {
      b += s->fibers[ws->first + l].state == AT_BLOCK;
      x += s->fibers[ws->first + l].state == AT_WARP;
    }
    if (b && x) {
      snprintf(detail, sizeof detail,
               "; warp %u is split: %u lanes at __syncthreads, %u at a warp "
               "operation",
               w, b, x);
      break;
    }
  }
  /* Else the named barriers still open: each one's arrivals and count. */
  for (unsigned int id = 1; id < NAMED_BARS && !detail[0]; id++) {
    const named_bar *b = &s->named[id];
    if (b->arrived)
      snprintf(detail, sizeof detail,
               "; named barrier %u has %u of %u arrivals", id, b->arrived,
               b->count);
  }
  char spin[96] = "";
  if (spinner)
    snprintf(spin, sizeof spin,
             "; thread %u, the only one able to run, waits on an mbarrier",
             spinner->tid.x);
  fflush(stdout);
  fprintf(stderr,
          "kiln host emulation: deadlock in kernel %s block (%u,%u,%u): %u "
          "threads at __syncthreads, %u at warp barrier, %u at named "
          "barriers (bar.sync), %u returned (of %u)%s%s\n",
          s->desc->kernel, blockIdx.x, blockIdx.y, blockIdx.z, at_block,
          at_warp, at_named, done, s->nthreads, detail, spin);
  abort();
}

void fiber_main(void) noexcept;

/* Stacks sit a fixed stride apart, so their tops would all map to the same
 * L1 cache set; shifting each top by a few cache lines spreads the fibers'
 * hot frames over 64 sets. */
inline size_t stack_size(const sched *s, unsigned int k) {
  return s->stacks.stack_bytes - (k % 64) * 64;
}

/* Switches from context `from` to thread `next`, giving it a free stack
 * with a fresh frame if it has not run yet. */
inline __attribute__((always_inline)) void resume(sched *s, kemu__ctx *from,
                                                fiber *next) {
  if (!next->ctx) {
    const unsigned int k = s->free_stack[--s->nfree];
    next->stack = (uint16_t)k;
    next->ctx = &s->fibers[k].stack_ctx;
    kemu__ctx_make(next->ctx, kemu__stack_lo(&s->stacks, k), stack_size(s, k),
                   fiber_main);
  }
  enter(s, next);
  kemu__ctx_switch(from, next->ctx);
}

/* Parks the running thread `me` and runs the next ready one; returns when
 * `me` has been released and scheduled again. */
void park(sched *s, fiber *me, fiber_state why) {
  me->state = why;
  fiber *next = rq_pop(s);
  if (!next) deadlock(s);
  resume(s, me->ctx, next);
}

inline void warp_arrive(sched *s, fiber *me, warp_state *w) {
  if (++w->arrived == w->live)
    release_warp(s, w);
  else
    park(s, me, AT_WARP);
}

/* A thread's function returned: it counts as arrived at every barrier from
 * now on, which may release one. If the next thread to run has not
 * started, it takes over this stack: finish returns and the caller runs
 * it. Otherwise finish never returns: it frees the stack and switches to
 * the next thread, or the last thread of the block goes back to the
 * launching context. */
KEMU__NO_ASAN void finish(sched *s) {
  fiber *me = s->cur;
  kemu__ctx *stack = me->ctx;
  me->state = DONE;
  s->live--;
  warp_state *w = &s->warps[me->warp];
  w->live--;
  w->live_mask &= ~((uint64_t)1 << me->lane);
  if (s->arrived && s->arrived == s->live) release_block(s);
  if (w->arrived && w->arrived == w->live) release_warp(s, w);
  fiber *next = rq_pop(s);
  if (next && !next->ctx) {
    next->ctx = stack;
    next->stack = me->stack;
    enter(s, next);
    return;
  }
  s->free_stack[s->nfree++] = me->stack;
  if (next) {
    enter(s, next);
    kemu__ctx_exit(stack, next->ctx);
  }
  if (s->live) deadlock(s);
  s->cur = nullptr;
  kemu__ctx_exit(stack, &s->main_ctx);
}

/* The entry of every stack: runs threads until one has to leave it. */
KEMU__NO_ASAN void fiber_main(void) noexcept {
  sched *s = t_sched;
  kemu__ctx_entered(s->cur->ctx);
  for (;;) {
    s->desc->body(s->desc->ctx);
    finish(s);
  }
}

void run_block(sched *s, unsigned int bx, unsigned int by, unsigned int bz) {
  blockIdx = {bx, by, bz};
  kemu__block_seq++;
  if (s->dyn_bytes) memset(s->dyn_shared, 0xFF, s->dyn_bytes);

  const unsigned int n = s->nthreads;
  s->live = n;
  s->arrived = 0;
  s->rq_head = s->rq_tail = 0;
  for (unsigned int w = 0; w < s->nwarps; w++) {
    warp_state *st = &s->warps[w];
    st->live = st->lanes;
    st->live_mask =
        st->lanes == 64 ? ~(uint64_t)0 : ((uint64_t)1 << st->lanes) - 1;
    st->participants[0] = st->participants[1] = 0;
    st->scratch_gen[0] = st->scratch_gen[1] = 0;
    st->arrived = 0;
    st->gen = 0;
  }
  memset(s->named, 0, sizeof s->named);

  for (unsigned int i = 0; i < n; i++) {
    fiber *f = &s->fibers[i];
    f->ctx = nullptr;
    rq_push(s, f);
    /* Popped from the end: thread 0 takes stack 0. */
    s->free_stack[n - 1 - i] = i;
    /* Its stack's first frame, in cache before the thread starts. */
    __builtin_prefetch((char *)kemu__stack_lo(&s->stacks, i) +
                           stack_size(s, i) - 64,
                       1);
  }
  s->nfree = n;

  resume(s, &s->main_ctx, rq_pop(s));
  /* Back here once every thread of the block has returned. */
}

/* Each thread's index, lane and warp, and each warp's lanes: the same for
 * every block of a launch, so set once (two divisions per thread). */
void set_geometry(sched *s) {
  const dim3 b = s->desc->block;
  const unsigned int n = s->nthreads, ws = s->warp_size;
  unsigned int i = 0;
  for (unsigned int z = 0; z < b.z; z++)
    for (unsigned int y = 0; y < b.y; y++)
      for (unsigned int x = 0; x < b.x; x++, i++) {
        s->fibers[i].tid = {x, y, z};
        s->fibers[i].lane = (uint16_t)(i % ws);
        s->fibers[i].warp = (uint16_t)(i / ws);
      }
  for (unsigned int w = 0; w < s->nwarps; w++) {
    s->warps[w].first = w * ws;
    s->warps[w].lanes = n - w * ws < ws ? n - w * ws : ws;
  }
}

bool config_ok(const kemu__launch_desc *d) {
  const dim3 g = d->grid, b = d->block;
  if (b.x < 1 || b.y < 1 || b.z < 1) return false;
  if (b.x > 1024 || b.y > 1024 || b.z > 64) return false;
  if ((uint64_t)b.x * b.y * b.z > MAX_THREADS) return false;
  if (g.x < 1 || g.y < 1 || g.z < 1) return false;
  if (g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535) return false;
  return d->shared_bytes <= kemu__dyn_shared_limit(d->func);
}

} // namespace

/* ==== Entry points used by hip-on-host.h ================================= */

void kemu__launch(const kemu__launch_desc *d) {
  if (t_sched && t_sched->cur)
    die("kernel %s launched from inside a kernel (dynamic parallelism) "
        "is not supported",
        d->kernel);
  hipError_t e = kemu__runtime_ready();
  if (e != hipSuccess) {
    kemu__record_error(e);
    return;
  }
  if (!kemu__stream_valid(d->stream)) {
    kemu__record_error(hipErrorInvalidResourceHandle);
    return;
  }
  if (!config_ok(d)) {
    kemu__record_error(hipErrorInvalidConfiguration);
    return;
  }
  /* One grid at a time in the process: __shared__ arrays have one copy
   * (hip-on-host.h). Launches from several OS threads take turns, as
   * kernels on different streams may on a GPU. */
  static std::mutex grid_lock;
  std::lock_guard<std::mutex> hold(grid_lock);
  const unsigned int n = d->block.x * d->block.y * d->block.z;
  sched *s = get_sched();
  void *dyn = nullptr;
  if (!s || !kemu__stack_pool_reserve(&s->stacks, n) ||
      posix_memalign(&dyn, 1024, d->shared_bytes) != 0) {
    kemu__record_error(hipErrorOutOfMemory);
    return;
  }

  kemu__ctx_capture_fpenv();
  s->desc = d;
  s->dyn_shared = dyn;
  s->dyn_bytes = d->shared_bytes;
  s->warp_size = (unsigned int)kemu__warp_size_value;
  s->nthreads = n;
  s->nwarps = (n + s->warp_size - 1) / s->warp_size;
  blockDim = d->block;
  gridDim = d->grid;
  set_geometry(s);
  for (unsigned int z = 0; z < d->grid.z; z++)
    for (unsigned int y = 0; y < d->grid.y; y++)
      for (unsigned int x = 0; x < d->grid.x; x++) run_block(s, x, y, z);
  free(dyn);
  s->desc = nullptr;
  s->dyn_shared = nullptr;
  s->dyn_bytes = 0;
}

void kemu__syncthreads() {
  sched *s = running("__syncthreads");
  if (++s->arrived == s->live)
    release_block(s);
  else
    park(s, s->cur, AT_BLOCK);
}

/* bar.sync (wait) or bar.arrive id, count: counts this thread's arrival at
 * named barrier `id`; the arrival that makes `count` releases the phase's
 * waiters. A count that differs from the one the phase opened with is
 * undefined on the GPU and an abort here. */
void kemu_bar_named(int id, int count, bool wait) {
  const char *op = wait ? "bar.sync" : "bar.arrive";
  sched *s = running(op);
  fiber *me = s->cur;
  if (id < 1 || id >= NAMED_BARS)
    die("%s %d, %d in kernel %s thread %u: the emulation has barrier ids "
        "1-%d (0 is __syncthreads's)",
        op, id, count, s->desc->kernel, threadIdx.x, NAMED_BARS - 1);
  if (count < 1 || (unsigned)count % s->warp_size ||
      (unsigned)count > s->nthreads)
    die("%s %d, %d in kernel %s thread %u: the thread count must be a "
        "multiple of the warp size (%u) and at most the block's %u threads",
        op, id, count, s->desc->kernel, threadIdx.x, s->warp_size,
        s->nthreads);
  named_bar *b = &s->named[id];
  if (b->arrived == 0)
    b->count = (unsigned)count;
  else if (b->count != (unsigned)count)
    die("%s %d, %d in kernel %s thread %u: this phase opened with a count "
        "of %u",
        op, id, count, s->desc->kernel, threadIdx.x, b->count);
  if (++b->arrived == b->count) {
    b->arrived = 0;
    for (unsigned int i = 0; i < s->nthreads; i++)
      if (s->fibers[i].state == AT_NAMED && s->fibers[i].named == id)
        rq_push(s, &s->fibers[i]);
  } else if (wait) {
    me->named = (uint8_t)id;
    park(s, me, AT_NAMED);
  }
}

/* A thread spinning on a condition that other threads must make true (an
 * mbarrier phase): the others run first. */
void kemu__yield() {
  sched *s = running("an mbarrier wait");
  fiber *me = s->cur;
  rq_push(s, me);
  fiber *next = rq_pop(s);
  /* No other thread can run: none can complete the phase (TMA copies and
   * wgmma complete at issue here). */
  if (next == me) deadlock(s, me);
  me->state = READY;
  resume(s, me->ctx, next);
}

void kemu__die_op(const char *what) {
  sched *s = t_sched;
  die("%s (kernel %s, thread %u)", what,
      s && s->desc ? s->desc->kernel : "?", threadIdx.x);
}

void kemu__syncwarp() {
  sched *s = running("__syncwarp");
  fiber *me = s->cur;
  warp_arrive(s, me, &s->warps[me->warp]);
}

uint64_t kemu__warp_exchange(uint64_t bits, unsigned int src) {
  sched *s = running("a warp shuffle");
  fiber *me = s->cur;
  warp_state *w = &s->warps[me->warp];
  const unsigned int p = w->gen & 1;
  w->slot[p][me->lane] = bits;
  warp_arrive(s, me, w);
  if (src < MAX_LANES && (w->participants[p] >> src & 1))
    return w->slot[p][src];
  return POISON;
}

uint64_t kemu__warp_ballot(int pred, uint64_t *participants) {
  sched *s = running("a warp vote");
  fiber *me = s->cur;
  warp_state *w = &s->warps[me->warp];
  const unsigned int p = w->gen & 1;
  w->slot[p][me->lane] = pred != 0;
  warp_arrive(s, me, w);
  const uint64_t part = w->participants[p];
  uint64_t mask = 0;
  for (unsigned int l = 0; l < w->lanes; l++)
    if ((part >> l & 1) && w->slot[p][l]) mask |= (uint64_t)1 << l;
  if (participants) *participants = part;
  return mask;
}

const unsigned char *kemu__warp_gather(const char *op, const void *mine,
                                       unsigned int bytes) {
  sched *s = running(op);
  fiber *me = s->cur;
  warp_state *w = &s->warps[me->warp];
  if (bytes > KEMU__GATHER_BYTES)
    die("%s: %u bytes per lane exceed the emulation's %d", op, bytes,
        KEMU__GATHER_BYTES);
  const unsigned int p = w->gen & 1;
  memcpy(w->gather[p][me->lane], mine, bytes);
  warp_arrive(s, me, w);
  /* Matrix instructions are .aligned: every lane of a whole warp executes
   * them together. A partial warp or a lane that has returned would leave
   * part of the matrices undefined on a GPU. */
  const uint64_t all = s->warp_size == 64 ? ~(uint64_t)0
                                          : ((uint64_t)1 << s->warp_size) - 1;
  if (w->lanes != s->warp_size || w->participants[p] != all)
    die("%s in kernel %s needs all %u lanes of warp %u; %d took part", op,
        s->desc->kernel, s->warp_size, me->warp,
        __builtin_popcountll(w->participants[p]));
  return &w->gather[p][0][0];
}

/* The gather this lane took part in last used slot parity gen - 1 (the
 * warp's generation cannot move on before this lane's next operation). */
void *kemu__warp_scratch(bool *fill) {
  sched *s = running("a warp gather");
  const unsigned int warp = s->cur->warp;
  warp_state *w = &s->warps[warp];
  const unsigned int p = (w->gen - 1) & 1;
  *fill = w->scratch_gen[p] != w->gen;
  w->scratch_gen[p] = w->gen;
  return s->scratch[warp][p];
}

void kemu__bad_warp(const char *op, int needs) {
  die("%s in kernel %s needs a warp of %d lanes; this emulation runs %d "
      "(KILN_WARP_SIZE)",
      op, t_sched && t_sched->desc ? t_sched->desc->kernel : "?", needs,
      kemu__warp_size_value);
}

void *kemu__dynamic_shared() {
  return running("HIP_DYNAMIC_SHARED")->dyn_shared;
}

const char *kemu__running_kernel() {
  const sched *s = t_sched;
  return s && s->cur ? s->desc->kernel : nullptr;
}

#if KEMU__ASAN
/* A sanitizer's report names the kernel function in its stack trace but not
 * which GPU thread was running; say so once the report is out. Installed at
 * program load, so that a program which sets its own death callback later
 * keeps it (there is only one). */
static void kemu__report_position(void) {
  const char *kernel = kemu__running_kernel();
  if (kernel)
    fprintf(stderr,
            "kiln host emulation: the sanitizer report above is from kernel "
            "%s block (%u,%u,%u) thread (%u,%u,%u)\n",
            kernel, blockIdx.x, blockIdx.y, blockIdx.z, threadIdx.x,
            threadIdx.y, threadIdx.z);
}

__attribute__((constructor)) static void kemu__install_report(void) {
  __sanitizer_set_death_callback(kemu__report_position);
}
#endif
