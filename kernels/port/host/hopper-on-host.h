/* NVIDIA Hopper's asynchronous operations, executed lane by lane on the host.
 *
 * kernels/arch/sm90.h (the Hopper half of the matrix-core layer) calls the
 * real instructions on an sm_90a GPU and these functions on the host:
 *
 *   mbarrier    an 8-byte object in shared memory with the hardware's
 *               contract: an expected arrival count, pending arrivals, a
 *               pending transaction byte count and a phase bit. A phase
 *               completes when its arrivals are all in and its byte count
 *               is back to zero; try_wait.parity(p) is true once the phase
 *               of parity p has completed. A waiting thread yields its
 *               fiber to the others (launch.cc) until then.
 *   TMA         cp.async.bulk.tensor of a box of a 1- to 5-dimensional
 *               tensor of 16-bit elements: out-of-range elements are zero,
 *               the box is written to shared memory with the tensor map's
 *               swizzle (128-byte only), and the copy completes its full
 *               box size of bytes on the mbarrier. On the host it is done
 *               at issue.
 *   TMA stores  the same box from shared memory to the tensor, elements out
 *               of range not written, in bulk groups (commit_group,
 *               wait_group.read N); a box that crosses an inner edge
 *               ending inside 16 bytes aborts (an H100 wrote past such
 *               an edge up to the 16-byte boundary). The global writes
 *               are done at issue; the source must still hold the same
 *               bytes when its group is waited for (the GPU reads it at
 *               some time in between), and must be waited for before the
 *               block ends: either mistake aborts, naming it.
 *   wgmma       wgmma.mma_async m64nNk16 f32 += f16/bf16 x f16/bf16, both
 *               operands read from shared memory through 64-bit matrix
 *               descriptors (start address, leading and stride byte
 *               offsets, swizzle mode), K-major or MN-major (transposed) as
 *               the instruction's imm-trans says. Each of a warpgroup's 128
 *               threads computes exactly the accumulator elements the
 *               hardware's fragment table gives it, from the element
 *               addresses its descriptors decode to, so wrong descriptor
 *               strides or a wrong swizzle give wrong sums here as on the
 *               GPU. The RS form (kemu_wgmma_rs) takes A from registers:
 *               each thread gathers its rows' elements from the four lanes
 *               of its quad that hold them, so a wrong register layout
 *               gives wrong sums too. The products are computed at
 *               issue, but the accumulator registers receive them only
 *               when wgmma.wait_group completes the group they were
 *               committed in (kemu_wgmma_commit, kemu_wgmma_wait): until
 *               then they read as NaN, as an in-flight accumulator is
 *               undefined on the GPU, so a kernel that reads one a group
 *               too early gives wrong sums here. A wgmma chained on a
 *               pending accumulator starts from its pending value, as the
 *               hardware chains them.
 *   named       bar.sync / bar.arrive id, count (launch.cc): barrier `id`
 *   barriers    (1-15) completes a phase when `count` thread arrivals are
 *               in; bar.arrive counts and goes on, bar.sync counts and
 *               waits (its fiber parked) until the phase completes; the
 *               next phase starts empty. A wait that can never complete is
 *               reported as a deadlock, naming the barrier.
 *
 * Shared-memory addresses are offsets in the block's dynamic shared memory
 * (kemu__dynamic_shared, 1024-byte aligned), as the GPU's shared window.
 */
#ifndef KILN_HOPPER_ON_HOST_H
#define KILN_HOPPER_ON_HOST_H

#include <stdint.h>
#include <string.h>

void kemu__yield();
[[noreturn]] void kemu__die_op(const char *what);
void kemu_bar_named(int id, int count, bool wait);

inline unsigned char *kemu__smem_at(uint32_t addr) {
  return (unsigned char *)kemu__dynamic_shared() + addr;
}
inline uint32_t kemu_smem_addr(const void *p) {
  return (uint32_t)((const unsigned char *)p -
                    (const unsigned char *)kemu__dynamic_shared());
}

/* ---- mbarrier ------------------------------------------------------------ */

struct kemu_mbar {
  uint16_t expected, pending;
  int32_t tx : 31;
  uint32_t phase : 1;
};
static_assert(sizeof(kemu_mbar) == 8, "an mbarrier is 8 bytes");

inline kemu_mbar kemu__mbar_get(uint32_t addr) {
  kemu_mbar b;
  memcpy(&b, kemu__smem_at(addr), 8);
  return b;
}
inline void kemu__mbar_put(uint32_t addr, kemu_mbar b) {
  if (b.pending == 0 && b.tx == 0) { /* the phase completes */
    b.phase ^= 1u;
    b.pending = b.expected;
  }
  memcpy(kemu__smem_at(addr), &b, 8);
}
inline void kemu_mbar_init(uint32_t addr, int count) {
  if (count < 1 || count > 0xffff) kemu__die_op("mbarrier.init: bad count");
  kemu_mbar b;
  b.expected = b.pending = (uint16_t)count;
  b.tx = 0;
  b.phase = 0;
  memcpy(kemu__smem_at(addr), &b, 8);
}
inline void kemu_mbar_arrive(uint32_t addr, int expect_tx) {
  kemu_mbar b = kemu__mbar_get(addr);
  if (b.pending == 0) kemu__die_op("mbarrier.arrive: more arrivals than its count");
  b.tx += expect_tx;
  b.pending--;
  kemu__mbar_put(addr, b);
}
inline void kemu_mbar_complete_tx(uint32_t addr, int bytes) {
  kemu_mbar b = kemu__mbar_get(addr);
  b.tx -= bytes;
  kemu__mbar_put(addr, b);
}
inline bool kemu_mbar_test(uint32_t addr, int parity) {
  return (int)kemu__mbar_get(addr).phase != (parity & 1);
}
/* A phase that never completes is a hang on the GPU; here it is an abort:
 * the scheduler's deadlock report once no other thread can run, else
 * after every other thread had a few million chances to complete it. */
inline void kemu_mbar_wait(uint32_t addr, int parity) {
  for (long spins = 0; !kemu_mbar_test(addr, parity); spins++) {
    if (spins > (1L << 22))
      kemu__die_op("mbarrier wait: the phase never completes (deadlock)");
    kemu__yield();
  }
}

/* ---- Tensor maps and TMA ---------------------------------------------------- */

/* What the host's tensor-map encoder stores in the 128-byte map. */
struct kemu_tmap {
  const void *base;
  uint64_t dims[5];    /* elements, innermost first */
  uint64_t strides[5]; /* bytes; strides[0] is the element size */
  uint32_t box[5];
  uint32_t rank, elem_bytes, swizzle; /* swizzle: bytes of its span, 0 none */
};

/* Swizzle of a shared-memory byte address by the 128-byte pattern: its
 * 16-byte chunk (bits 4-6) XOR its 128-byte row mod 8 (bits 7-9). */
inline uint32_t kemu_swizzle128(uint32_t addr) {
  return addr ^ (((addr >> 7) & 7u) << 4);
}

/* The box of map at coord as TMA walks it: calls f(shared-memory byte
 * address of the element, its global address or null where out of
 * range), innermost first. */
template <class F>
inline uint32_t kemu__tma_box(const kemu_tmap &m, uint32_t smem,
                              const int32_t *coord, F f) {
  if (m.elem_bytes != 2 || m.rank < 1 || m.rank > 5)
    kemu__die_op("cp.async.bulk.tensor: the emulation has 16-bit maps of rank 1-5");
  if (m.swizzle != 128 && m.swizzle != 0)
    kemu__die_op("cp.async.bulk.tensor: the emulation has the 128-byte swizzle only");
  if (m.swizzle && (smem % 1024 != 0 || m.box[0] * m.elem_bytes != 128))
    kemu__die_op("cp.async.bulk.tensor: 128-byte swizzle needs 128-byte box "
                 "rows at a 1024-byte aligned address");
  uint32_t box[5] = {1, 1, 1, 1, 1};
  uint32_t bytes = m.elem_bytes;
  for (uint32_t i = 0; i < m.rank; i++) {
    box[i] = m.box[i];
    bytes *= box[i];
  }
  /* The box in order, innermost first; ix counts it as an odometer. */
  uint32_t ix[5] = {0, 0, 0, 0, 0};
  for (uint32_t off = 0; off < bytes; off += 2) {
    bool in = true;
    unsigned char *g = (unsigned char *)m.base;
    for (uint32_t i = 0; i < m.rank; i++) {
      const int64_t c = (int64_t)coord[i] + ix[i];
      in = in && c >= 0 && (uint64_t)c < m.dims[i];
      g += (uint64_t)(in ? c : 0) * (i ? m.strides[i] : m.elem_bytes);
    }
    const uint32_t a = smem + off;
    f(m.swizzle ? kemu_swizzle128(a) : a, in ? g : nullptr);
    for (uint32_t i = 0; i < 5 && ++ix[i] == box[i]; i++) ix[i] = 0;
  }
  return bytes;
}

/* cp.async.bulk.tensor shared <- global: the box, zeros out of range,
 * its bytes completed on the mbarrier at issue. */
inline void kemu_tma_load(uint32_t dst, const void *map, const int32_t *coord,
                          uint32_t mbar) {
  kemu_tmap m;
  memcpy(&m, map, sizeof m);
  const uint32_t bytes = kemu__tma_box(
      m, dst, coord, [](uint32_t a, const unsigned char *g) {
        uint16_t v = 0;
        if (g) memcpy(&v, g, 2);
        memcpy(kemu__smem_at(a), &v, 2);
      });
  kemu_mbar_complete_tx(mbar, (int)bytes);
}

/* ---- Per-thread state of the asynchronous units ---------------------------- */

/* One T per emulated thread of a block (T has a `block` field), made on
 * first use; self() hands this thread's, first passing it to reset when a
 * new block started on it. Bulk stores and wgmma groups keep theirs here. */
template <class T> struct kemu__per_thread {
  T *t[1024] = {}; /* a block's most threads */
  ~kemu__per_thread() {
    for (T *p : t) delete p;
  }
  template <class R> T &self(R reset) {
    const unsigned i =
        threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    T *&p = t[i];
    if (!p) p = new T();
    if (p->block != kemu__block_seq) {
      reset(*p);
      p->block = kemu__block_seq;
    }
    return *p;
  }
};

/* ---- TMA stores and their bulk groups --------------------------------------- */

/* A thread's bulk stores not yet waited for: the source's shared-memory
 * range and its bytes as they were at issue, and the group that commits
 * them (`open` while not yet committed). */
struct kemu__bulk_store {
  uint32_t smem, bytes, group;
  unsigned char data[16384];
};
enum { KEMU__BULK_PENDING = 8 };
struct kemu__bulk_thread {
  unsigned long block;
  uint32_t open;
  int n;
  kemu__bulk_store s[KEMU__BULK_PENDING];
};
inline thread_local kemu__per_thread<kemu__bulk_thread> kemu__bulk_states;

inline kemu__bulk_thread &kemu__bulk_self() {
  return kemu__bulk_states.self([](kemu__bulk_thread &p) {
    /* The GPU frees a block's shared memory when it ends: a store still
     * reading it then reads whatever comes next. */
    if (p.n > 0)
      kemu__die_op("cp.async.bulk: a block ended with a store's shared-memory "
                   "source not waited for (cp.async.bulk.wait_group.read)");
    p.open = 0;
  });
}

/* cp.async.bulk.tensor global <- shared::cta, bulk_group: the box from
 * shared memory at src (the map's swizzle) to the tensor at coord; elements
 * out of range are not written. The global writes are done at issue; the
 * source is also remembered, and must read the same when the group is
 * waited for: the GPU reads it at some time in between, so a kernel that
 * writes it before cp.async.bulk.wait_group.read aborts here. */
inline void kemu_tma_store(const void *map, const int32_t *coord,
                           uint32_t src) {
  kemu_tmap m;
  memcpy(&m, map, sizeof m);
  /* An H100 wrote a store's columns past the tensor's inner edge up to the
   * next 16 bytes where that edge ends inside them (C's gap columns
   * overwritten, 2026-11-27); here such a store is refused, not emulated. */
  if (m.rank >= 1 && (m.dims[0] * m.elem_bytes) % 16 != 0 &&
      (int64_t)coord[0] + m.box[0] > (int64_t)m.dims[0])
    kemu__die_op("cp.async.bulk.tensor store: a box past an inner edge that "
                 "ends inside 16 bytes (the GPU writes past it)");
  kemu__bulk_thread &t = kemu__bulk_self();
  if (t.n == KEMU__BULK_PENDING)
    kemu__die_op("cp.async.bulk: more stores in flight than the emulation holds");
  kemu__bulk_store &st = t.s[t.n];
  uint32_t lo = UINT32_MAX, hi = 0;
  const uint32_t bytes = kemu__tma_box(
      m, src, coord, [&](uint32_t a, unsigned char *g) {
        if (g) memcpy(g, kemu__smem_at(a), 2);
        lo = a < lo ? a : lo;
        hi = a + 2 > hi ? a + 2 : hi;
      });
  if (hi - lo != bytes || bytes > sizeof st.data)
    kemu__die_op("cp.async.bulk: a store's source is not one range the emulation holds");
  st.smem = lo;
  st.bytes = bytes;
  st.group = t.open;
  memcpy(st.data, kemu__smem_at(lo), bytes);
  t.n++;
}

/* cp.async.bulk.commit_group: closes this thread's open bulk group. */
inline void kemu_bulk_commit() { kemu__bulk_self().open++; }

/* cp.async.bulk.wait_group.read N: every committed group but the newest N
 * is done reading its sources, which must still hold what they held at
 * issue. */
inline void kemu_bulk_wait_read(int n) {
  kemu__bulk_thread &t = kemu__bulk_self();
  for (int e = 0; e < t.n;) {
    kemu__bulk_store &st = t.s[e];
    if (st.group + (uint32_t)n < t.open) {
      if (memcmp(st.data, kemu__smem_at(st.smem), st.bytes) != 0)
        kemu__die_op("cp.async.bulk: a store's shared-memory source was "
                     "written before cp.async.bulk.wait_group.read");
      t.n--;
      if (e != t.n) memcpy(&st, &t.s[t.n], sizeof st);
    } else {
      e++;
    }
  }
}

/* ---- wgmma ------------------------------------------------------------------- */

/* Fields of a matrix descriptor: byte addresses and offsets (the hardware
 * keeps them divided by 16), swizzle mode 1 = 128 bytes. */
struct kemu_gmma_desc {
  uint32_t start, lbo, sbo, mode;
};
inline kemu_gmma_desc kemu__desc(uint64_t d) {
  return {(uint32_t)(d & 0x3fff) << 4, (uint32_t)(d >> 16 & 0x3fff) << 4,
          (uint32_t)(d >> 32 & 0x3fff) << 4, (uint32_t)(d >> 62)};
}

/* Byte address of element (i, k) of an operand, i along M (A) or N (B),
 * k < 16. K-major with the 128-byte swizzle: rows of 128 bytes, eight
 * rows a core group at SBO. MN-major: 64 elements of i contiguous, blocks
 * of 64 at LBO; k rows 128 bytes apart, groups of eight k at SBO. */
inline uint32_t kemu__operand_addr(const kemu_gmma_desc &d, bool mn_major,
                                   int i, int k) {
  if (d.mode != 1)
    kemu__die_op("wgmma: the emulation has the 128-byte swizzle only");
  uint32_t a;
  if (!mn_major)
    a = d.start + (uint32_t)(i / 8) * d.sbo + (uint32_t)(i % 8) * 128 +
        (uint32_t)k * 2;
  else
    a = d.start + (uint32_t)(i / 64) * d.lbo + (uint32_t)(i % 64) * 2 +
        (uint32_t)(k / 8) * d.sbo + (uint32_t)(k % 8) * 128;
  return kemu_swizzle128(a);
}

/* ---- wgmma's asynchronous groups ------------------------------------------ */

/* A thread's accumulators with results in flight: the registers' address,
 * the pending values, and the commit group that completes them (that of
 * the last wgmma that wrote them; `open` while not yet committed). */
enum { KEMU__WG_PENDING = 8, KEMU__WG_MAXD = 128 };
struct kemu__wg_thread {
  unsigned long block; /* kemu__block_seq the state belongs to */
  uint32_t open;       /* groups committed so far = the open group's id */
  int n;
  float *d[KEMU__WG_PENDING];
  int width[KEMU__WG_PENDING];
  uint32_t group[KEMU__WG_PENDING];
  float v[KEMU__WG_PENDING][KEMU__WG_MAXD];
};
inline thread_local kemu__per_thread<kemu__wg_thread> kemu__wg_states;

/* This emulated thread's state, reset when a new block started. */
inline kemu__wg_thread &kemu__wg_self() {
  return kemu__wg_states.self([](kemu__wg_thread &p) {
    p.open = 0;
    p.n = 0;
  });
}

/* The pending values of accumulator d (n floats), created from the
 * registers if d has none in flight: a chained multiply starts from them.
 * The registers read as NaN until the group completes. */
inline float *kemu__wg_pend(float *d, int n) {
  if (n > KEMU__WG_MAXD) kemu__die_op("wgmma: accumulator wider than the emulation's");
  kemu__wg_thread &t = kemu__wg_self();
  int e = 0;
  while (e < t.n && t.d[e] != d) e++;
  if (e == t.n) {
    if (t.n == KEMU__WG_PENDING)
      kemu__die_op("wgmma: more accumulators in flight than the emulation holds");
    t.n++;
    t.d[e] = d;
    t.width[e] = n;
    memcpy(t.v[e], d, sizeof(float) * (size_t)n);
  } else if (t.width[e] != n) {
    kemu__die_op("wgmma: one accumulator used at two widths while in flight");
  }
  t.group[e] = t.open;
  for (int i = 0; i < n; i++) d[i] = __builtin_nanf("");
  return t.v[e];
}

/* wgmma.commit_group: closes the open group. */
inline void kemu_wgmma_commit() { kemu__wg_self().open++; }

/* wgmma.wait_group N: completes every committed group but the newest N,
 * writing their results into the accumulator registers. Results of
 * multiplies never committed stay pending. */
inline void kemu_wgmma_wait(int n) {
  kemu__wg_thread &t = kemu__wg_self();
  for (int e = 0; e < t.n;) {
    if (t.group[e] + (uint32_t)n < t.open) {
      memcpy(t.d[e], t.v[e], sizeof(float) * (size_t)t.width[e]);
      t.n--;
      t.d[e] = t.d[t.n];
      t.width[e] = t.width[t.n];
      t.group[e] = t.group[t.n];
      memcpy(t.v[e], t.v[t.n], sizeof t.v[e]);
    } else {
      e++;
    }
  }
}

/* wgmma.mma_async.sync.aligned.m64nNk16.f32: thread t of the warpgroup
 * (warp w = t / 32, lane l) holds in d[i], i < N / 2, the element at row
 * 16 w + l / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (l % 4) + i % 2.
 * scale_d 0 starts from zero. Sums in k order, one rounding per term; d
 * receives them when the group completes (kemu_wgmma_wait). */
template <class Cvt, int N>
inline void kemu_wgmma(float *d, uint64_t da, uint64_t db, bool trans_a,
                       bool trans_b, int scale_d) {
  kemu__require_warp("wgmma", 32);
  const kemu_gmma_desc a = kemu__desc(da), b = kemu__desc(db);
  const int t = (int)(threadIdx.x % 128), w = t / 32, l = t % 32;
  float ar[2][16], bc[N / 8][2][16];
  for (int h = 0; h < 2; h++)
    for (int k = 0; k < 16; k++) {
      uint16_t v;
      memcpy(&v, kemu__smem_at(kemu__operand_addr(a, trans_a,
                                                  16 * w + l / 4 + 8 * h, k)),
             2);
      ar[h][k] = Cvt::f32(v);
    }
  for (int j = 0; j < N / 8; j++)
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 16; k++) {
        uint16_t v;
        memcpy(&v, kemu__smem_at(kemu__operand_addr(b, trans_b,
                                                    8 * j + 2 * (l % 4) + h, k)),
               2);
        bc[j][h][k] = Cvt::f32(v);
      }
  const bool plain = kemu__plain_products(&ar[0][0], 32) &&
                     kemu__plain_products(&bc[0][0][0], N * 4);
  float *p = kemu__wg_pend(d, N / 2);
  for (int i = 0; i < N / 2; i++) {
    const float start = scale_d ? p[i] : 0.0f;
    p[i] = kemu__dot16(start, ar[(i / 2) % 2], bc[i / 4][i % 2], plain);
  }
}

/* wgmma.mma_async.sync.aligned.m64nNk16.f32 with A from registers: a[r]
 * of lane l of warp w holds the two 16-bit elements (row 16 w + l / 4 +
 * 8 (r % 2), columns 2 (l % 4) + 8 (r / 2) + {0, 1}); a thread's rows are
 * gathered from the four lanes of its quad, as the hardware reads them. B
 * through its descriptor; d (pending until its group completes) as
 * kemu_wgmma. The sum of each 16 products
 * is added to d truncated toward zero, as mma.sync's (kemu__nv_step): the
 * matrix unit's f32 accumulation does not round to nearest. */
template <class Cvt, int N>
inline void kemu_wgmma_rs(float *d, const uint32_t a[4], uint64_t db,
                          bool trans_b, int scale_d) {
  kemu__require_warp("wgmma", 32);
  const unsigned char *g = kemu__warp_gather("wgmma", a, 16);
  const kemu_gmma_desc b = kemu__desc(db);
  const int l = (int)(threadIdx.x % 32);
  float ar[2][16], bc[N / 8][2][16];
  for (int h = 0; h < 2; h++)
    for (int k = 0; k < 16; k++) {
      const int lane = 4 * (l / 4) + (k % 8) / 2, r = h + 2 * (k / 8);
      uint32_t v;
      memcpy(&v, g + lane * KEMU__GATHER_BYTES + 4 * r, 4);
      ar[h][k] = Cvt::f32(kemu__half_of(v, k % 2));
    }
  for (int j = 0; j < N / 8; j++)
    for (int h = 0; h < 2; h++)
      for (int k = 0; k < 16; k++) {
        uint16_t v;
        memcpy(&v, kemu__smem_at(kemu__operand_addr(b, trans_b,
                                                    8 * j + 2 * (l % 4) + h, k)),
               2);
        bc[j][h][k] = Cvt::f32(v);
      }
  float *p = kemu__wg_pend(d, N / 2);
  for (int i = 0; i < N / 2; i++) {
    const float start = scale_d ? p[i] : 0.0f;
    p[i] = kemu__nv_step(start, ar[(i / 2) % 2], bc[i / 4][i % 2]);
  }
}

#endif
