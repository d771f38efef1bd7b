/* HIP-on-CPU fibers: the context switch and the stack pool under launch.cc.
 *
 * Every emulated GPU thread is a fiber; a block of 256 threads with a few
 * barriers switches thousands of times, so a switch must cost nanoseconds.
 * On x86-64 it is a dozen instructions of assembly that save only what the
 * SysV ABI says a callee must preserve (rsp, rbx, rbp, r12-r15, MXCSR and the
 * x87 control word); elsewhere ucontext does the job, slowly (swapcontext
 * makes a signal-mask system call per switch). Under AddressSanitizer every
 * switch is announced with __sanitizer_{start,finish}_switch_fiber so that
 * ASan knows which stack is live and reports no false positives.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hip-on-host-impl.h"

#if KEMU__ASAN
#include <sanitizer/common_interface_defs.h>
#endif

/* Valgrind takes a small stack-pointer jump for a stack frame and marks the
 * memory in between undefined, which corrupts the other fibers' stacks:
 * registered stacks make it see a switch. The macros cost a few no-op
 * instructions outside Valgrind. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define KEMU__VALGRIND 1
#endif
#endif

/* ==== Context switch ===================================================== */

#if KEMU__X86_SWITCH

/* kemu__switch_x86(void **save_sp, void *new_sp): pushes the callee-saved
 * registers and the FP control state, stores rsp, loads the other stack and
 * pops the same layout from it. The initial frame built in kemu__ctx_make
 * has that layout too, with the entry function as the return address.
 * (Skipping the MXCSR/control-word loads when unchanged was measured: no
 * gain, so the switch stays branch-free.) */
__asm__(
    ".text\n"
    ".globl kemu__switch_x86\n"
    ".hidden kemu__switch_x86\n"
    ".type kemu__switch_x86, @function\n"
    ".p2align 4\n"
    "kemu__switch_x86:\n"
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  subq $8, %rsp\n" /* FP slot: MXCSR at 0, control word at 4 */
    "  stmxcsr (%rsp)\n"
    "  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n"
    "  fldcw 4(%rsp)\n"
    "  addq $8, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    ".size kemu__switch_x86, .-kemu__switch_x86\n");
extern "C" void kemu__switch_x86(void **save_sp, void *new_sp);

/* The FP control state new fibers start with (see kemu__ctx_capture_fpenv). */
static __thread uint32_t t_mxcsr = 0x1f80;   /* power-on default */
static __thread uint16_t t_fpucw = 0x037f;

void kemu__ctx_capture_fpenv(void) {
  uint32_t mxcsr;
  uint16_t cw;
  __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
  __asm__ volatile("fnstcw %0" : "=m"(cw));
  t_mxcsr = mxcsr;
  t_fpucw = cw;
}

void kemu__ctx_make(kemu__ctx *c, void *stack_lo, size_t stack_size,
                    void (*entry)(void)) {
  /* From the 16-byte aligned top down: a zero "return address" where the
   * ABI expects one on entry (rsp % 16 == 8), the entry address that the
   * switch's ret jumps to, zeroed rbp/rbx/r12-r15 (rbp = 0 ends frame-pointer
   * backtraces), then the MXCSR and control word slot. */
  uintptr_t top = ((uintptr_t)stack_lo + stack_size) & ~(uintptr_t)15;
  uint64_t *sp = (uint64_t *)top;
  *--sp = 0;
  *--sp = (uint64_t)(uintptr_t)entry;
  for (int i = 0; i < 6; i++) *--sp = 0;
  *--sp = (uint64_t)t_mxcsr | ((uint64_t)t_fpucw << 32);
  c->sp = sp;
  c->stack_lo = stack_lo;
  c->stack_size = stack_size;
  /* asan_fake_stack is kept: see kemu__ctx_exit. */
}

static inline void kemu__raw_switch(kemu__ctx *from, kemu__ctx *to) {
  kemu__switch_x86(&from->sp, to->sp);
}

#else /* other architectures: ucontext */

void kemu__ctx_capture_fpenv(void) {
  /* getcontext in kemu__ctx_make captures the FP state already. */
}

void kemu__ctx_make(kemu__ctx *c, void *stack_lo, size_t stack_size,
                    void (*entry)(void)) {
  if (getcontext(&c->uc) != 0) abort();
  c->uc.uc_stack.ss_sp = stack_lo;
  c->uc.uc_stack.ss_size = stack_size;
  c->uc.uc_link = nullptr;
  makecontext(&c->uc, entry, 0);
  c->stack_lo = stack_lo;
  c->stack_size = stack_size;
  /* asan_fake_stack is kept: see kemu__ctx_exit. */
}

static inline void kemu__raw_switch(kemu__ctx *from, kemu__ctx *to) {
  if (swapcontext(&from->uc, &to->uc) != 0) abort();
}

#endif

/* ==== Switching with sanitizer annotations =============================== */

#if KEMU__ASAN
/* The context being left, so that the one resuming can store the stack
 * bounds ASan hands back: that is how the OS thread's own stack (which no
 * one allocated here) becomes known before the first switch back to it. */
static __thread kemu__ctx *t_leaving;

KEMU__NO_ASAN static void kemu__asan_arrived(void *fake_stack) {
  const void *lo = nullptr;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(fake_stack, &lo, &size);
  t_leaving->stack_lo = lo;
  t_leaving->stack_size = size;
}
#endif

void kemu__ctx_switch(kemu__ctx *from, kemu__ctx *to) {
#if KEMU__ASAN
  t_leaving = from;
  __sanitizer_start_switch_fiber(&from->asan_fake_stack, to->stack_lo,
                                 to->stack_size);
#endif
  kemu__raw_switch(from, to);
#if KEMU__ASAN
  kemu__asan_arrived(from->asan_fake_stack);
#endif
}

/* Not instrumented: this frame never returns, and an instrumented frame
 * would leave its redzones poisoned on a stack that the next block reuses. */
KEMU__NO_ASAN void kemu__ctx_exit(kemu__ctx *from, kemu__ctx *to) {
#if KEMU__ASAN
  t_leaving = from;
  /* Passing a null save slot would tell ASan the fiber is gone, and ASan
   * would unmap its fake stack (used when detect_stack_use_after_return is
   * on) only to map a new one for the next thread on this stack: an mmap
   * and munmap per emulated thread. Every instrumented frame of the fiber
   * has returned by now, so its fake stack is empty and the slot's next
   * fiber takes it over in kemu__ctx_entered. */
  __sanitizer_start_switch_fiber(&from->asan_fake_stack, to->stack_lo,
                                 to->stack_size);
#endif
  kemu__raw_switch(from, to);
  __builtin_trap(); /* nothing ever switches back to a finished fiber */
}

KEMU__NO_ASAN void kemu__ctx_entered(kemu__ctx *self) {
#if KEMU__ASAN
  kemu__asan_arrived(self->asan_fake_stack);
#else
  (void)self;
#endif
}

/* ==== Stack pool ========================================================= */

static size_t kemu__page_size(void) {
  long page = sysconf(_SC_PAGESIZE);
  return page > 0 ? (size_t)page : 4096;
}

bool kemu__stack_pool_reserve(kemu__stack_pool *pool, unsigned count) {
  if (count <= pool->ready) return true;
  size_t page = kemu__page_size();
  if (!pool->region) {
    /* Address space for every slot at once, inaccessible until needed: the
     * inaccessible part under each stack is its guard. 64 KiB of guard, so
     * that a kernel frame with a large local array cannot step over it into
     * the next fiber's stack; it costs address space only. */
    size_t bytes = (kemu__stack_bytes() + page - 1) & ~(page - 1);
    size_t guard = ((size_t)64 << 10) > page ? (size_t)64 << 10 : page;
    size_t stride = bytes + guard;
    void *region = mmap(nullptr, stride * KEMU__MAX_FIBERS, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED) return false;
    pool->region = (char *)region;
    pool->stack_bytes = bytes;
    pool->stride = stride;
    pool->ready = 0;
  }
  for (; pool->ready < count; pool->ready++) {
    char *lo = (char *)kemu__stack_lo(pool, pool->ready);
    if (mprotect(lo, pool->stack_bytes, PROT_READ | PROT_WRITE) != 0)
      return false;
#ifdef KEMU__VALGRIND
    pool->valgrind_id[pool->ready] =
        VALGRIND_STACK_REGISTER(lo, lo + pool->stack_bytes);
#endif
  }
  return true;
}

void kemu__stack_pool_release(kemu__stack_pool *pool) {
#ifdef KEMU__VALGRIND
  for (unsigned i = 0; i < pool->ready; i++)
    VALGRIND_STACK_DEREGISTER(pool->valgrind_id[i]);
#endif
  if (pool->region)
    munmap(pool->region, pool->stride * KEMU__MAX_FIBERS);
  memset(pool, 0, sizeof *pool);
}
