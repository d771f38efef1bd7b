/* The matrix-core layer: a warp multiplies 16 x 16 tiles of f16 or bf16
 * into f32 accumulators on the GPU's matrix units, with the fragment loads
 * from shared memory and the element ownership that kernels need around
 * the multiply. GEMM, the MX GEMM and fused attention are written once
 * against it (docs/kernels-gemm.md, "The matrix-core layer").
 *
 * The model. The unit of work is one warp-wide product C[16 x 16] +=
 * A[16 x 16] * B[16 x 16] (k = 16). Each lane holds its share of A, B and C
 * in registers (a fragment); which elements a lane holds is the matrix
 * unit's business, so a kernel never computes it by hand: it loads A and B
 * fragments from shared memory with the load functions below, multiplies,
 * and finds its C elements with c_row()/c_col(). An implementation is a
 * struct of static functions, the "Arch", and kernels are templates on it:
 *
 *   kd_mma_nv    NVIDIA sm_80 and later, warp of 32: two mma.sync
 *                m16n8k16 per unit, fragments loaded with ldmatrix.
 *   kd_mma_cdna  AMD CDNA (gfx90a, gfx940), wave of 64: one
 *                v_mfma_f32_16x16x16{f16,bf16_1k} per unit, fragments
 *                loaded with ordinary shared-memory reads.
 *
 * Host emulation runs both, lane by lane, with the vendors' fragment
 * tables (port/host/matrix-on-host.h): kd_mma_nv at KILN_WARP_SIZE=32 and
 * kd_mma_cdna at 64, so CI executes the same indexing as each GPU.
 * A target without matrix units (gfx1030, an NVIDIA GPU before sm_80) gets
 * KD_MMA_NONE from kd_mma_device_kind(), and its launchers keep their SIMT
 * kernels. AMD's WMMA (gfx11, wave of 32) is not implemented: the ROCm 5.2
 * toolchain kiln builds with has no gfx11 target.
 *
 * Shared memory. Tiles are rows of 16-byte chunks (8 elements); a load
 * reads a 16 x 16 block as 16 rows x 2 chunks of a "view": any object with
 * `const uint16_t *chunk(int row, int c) const` returning chunk c of a row,
 * so the kernel chooses padding or swizzling. kd_mma_tile below is the
 * standard one. A is stored either [m][k] (load_a) or [k][m] (load_a_t),
 * B either [n][k] (load_b) or [k][n] (load_b_t); the four cover every GEMM
 * layout, and attention's Q K^T (load_b) and P V (load_b_t).
 *
 * Every function here is warp-collective: all lanes of the warp call it
 * together (blocks are 1-D, whole warps). Indices are warp-uniform.
 */
#ifndef KILN_KERNELS_ARCH_MMA_H
#define KILN_KERNELS_ARCH_MMA_H

#include <type_traits>

#include "arch/kd.h"

#if defined(KILN_BACKEND_CUDA) || defined(KILN_BACKEND_HOST)
#define KD_MMA_HAS_NV 1
#else
#define KD_MMA_HAS_NV 0
#endif
#if defined(KILN_BACKEND_HIP) || defined(KILN_BACKEND_HOST)
#define KD_MMA_HAS_CDNA 1
#else
#define KD_MMA_HAS_CDNA 0
#endif

/* Device-compile guards for the real instructions. */
#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__)
#define KD_MMA__NV_DEVICE 1
#define KD_MMA__NV_OK (__CUDA_ARCH__ >= 800)
#else
#define KD_MMA__NV_DEVICE 0
#define KD_MMA__NV_OK 0
#endif
#if defined(KILN_BACKEND_HIP) && defined(__HIP_DEVICE_COMPILE__)
#define KD_MMA__AMD_DEVICE 1
#if defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) ||     \
    defined(__gfx942__)
#define KD_MMA__CDNA_OK 1
#else
#define KD_MMA__CDNA_OK 0
#endif
#else
#define KD_MMA__AMD_DEVICE 0
#define KD_MMA__CDNA_OK 0
#endif

enum kd_mma_kind { KD_MMA_NONE = 0, KD_MMA_NV = 1, KD_MMA_CDNA = 2 };

/* Reached only if a launcher ran a kernel for a matrix unit the device
 * does not have (kd_mma_device_kind() said otherwise): stop loudly. */
#if defined(KILN_BACKEND_HIP)
#define KD_MMA__UNAVAILABLE() __builtin_trap()
#else
#define KD_MMA__UNAVAILABLE() __trap()
#endif

/* ---- Element conversion for the emulated instructions -------------------- */

template <typename T> struct kd_mma__cvt;
template <> struct kd_mma__cvt<kd_half> {
  static float f32(uint16_t h) { return kd_f16_bits_to_f32(h); }
};
template <> struct kd_mma__cvt<kd_bf16> {
  static float f32(uint16_t b) { return kd_bf16_bits_to_f32(b); }
};

/* ---- Asynchronous global -> shared copies -------------------------------- */

/* Copies 16 bytes to shared dst from global src, both 16-byte aligned:
 * the first `bytes` (0..16) are read and the rest of dst is zero-filled;
 * src is not read at all when bytes is 0 (it must still be a valid
 * address). On NVIDIA sm_80+ the copy is asynchronous (cp.async, cached in
 * L2 only) and completes at kd_cp_async_wait; elsewhere it is done at
 * once, and commit and wait only order. */
__device__ __forceinline__ void kd_cp_async16(void *dst, const void *src,
                                              int bytes) {
#if KD_MMA__NV_OK
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
               :
               : "r"(d), "l"(src), "r"(bytes));
#else
  if (bytes == 16) {
    *(uint4 *)dst = kd_ld16(src);
  } else {
    unsigned char tmp[16] = {0};
    if (bytes > 0) memcpy(tmp, src, (size_t)bytes);
    memcpy(dst, tmp, 16);
  }
#endif
}
/* Closes the group of copies issued since the last commit. */
__device__ __forceinline__ void kd_cp_async_commit() {
#if KD_MMA__NV_OK
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
/* Waits until at most N committed groups are still in flight. This thread's
 * copies only: a __syncthreads() must follow before other threads read. */
template <int N> __device__ __forceinline__ void kd_cp_async_wait() {
#if KD_MMA__NV_OK
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

/* ---- Shared-memory tiles -------------------------------------------------- */

/* A tile of rows of CHUNKS 16-byte chunks. A warp's fragment load reads
 * eight rows at the same logical chunk at once; the layout puts those
 * eight chunks in eight different groups of four banks:
 *  - CHUNKS a power of two: rows are CHUNKS chunks long and chunk c of row
 *    r is stored at c XOR a few bits of r (the bits that otherwise map
 *    eight consecutive rows onto the same banks);
 *  - any other CHUNKS: rows are padded to an odd number of chunks.
 * STRIDE is the stored row length in chunks: a tile of R rows takes
 * R * STRIDE * 16 bytes. */
template <int CHUNKS> struct kd_mma_tile {
  static constexpr bool POW2 = (CHUNKS & (CHUNKS - 1)) == 0;
  static constexpr int STRIDE = POW2 ? CHUNKS : (CHUNKS | 1);
  uint16_t *base;

  static __device__ __forceinline__ int slot(int r, int c) {
    if constexpr (!POW2 || CHUNKS == 1) return c;
    else if constexpr (CHUNKS == 2) return c ^ ((r >> 2) & 1);
    else if constexpr (CHUNKS == 4) return c ^ ((r >> 1) & 3);
    else return c ^ (r & 7);
  }
  __device__ __forceinline__ uint16_t *chunk(int r, int c) const {
    return base + ((int64_t)r * STRIDE + slot(r, c)) * 8;
  }
};

/* ---- NVIDIA: mma.sync m16n8k16 -------------------------------------------- */

template <bool TRANS>
__device__ __forceinline__ void kd_mma__ldmatrix_x4(uint32_t r[4],
                                                    const uint16_t *row) {
#if KD_MMA__NV_OK
  const unsigned a = (unsigned)__cvta_generic_to_shared(row);
  if (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
                 "{%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 "
                 "{%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
#elif defined(KILN_BACKEND_HOST)
  kemu_ldmatrix_x4(r, row, TRANS);
#else
  (void)r;
  (void)row;
  KD_MMA__UNAVAILABLE();
#endif
}

template <typename T>
__device__ __forceinline__ void kd_mma__m16n8k16(float d[4], const uint32_t a[4],
                                                 uint32_t b0, uint32_t b1) {
#if KD_MMA__NV_OK
  if constexpr (std::is_same<T, kd_bf16>::value)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#elif defined(KILN_BACKEND_HOST)
  const uint32_t b[2] = {b0, b1};
  kemu_mma_m16n8k16<kd_mma__cvt<T>>(d, a, b);
#else
  (void)d;
  (void)a;
  (void)b0;
  (void)b1;
  KD_MMA__UNAVAILABLE();
#endif
}

/* A unit is two m16n8 products side by side. With g = lane / 4 and
 * t = lane % 4, C element e (0..7) is row g + 8 ((e % 4) / 2), column
 * 8 (e / 4) + 2 t + e % 2: a lane holds two rows (slots 0 and 1), the four
 * lanes of a quad hold the same rows. */
struct kd_mma_nv {
  static constexpr int WARP = 32, A_REGS = 4, B_REGS = 4, C_ELEMS = 8;
  static constexpr int ROW_SLOTS = 2;
  /* mma.sync's f32 accumulation truncates (mma_promote below). */
  static constexpr bool TRUNCATES = true;
  struct frag_a { uint32_t r[A_REGS]; };
  struct frag_b { uint32_t r[B_REGS]; };
  struct frag_c { float v[C_ELEMS]; };

  static __device__ __forceinline__ int lane() {
    return (int)(threadIdx.x & (WARP - 1));
  }

  /* A stored [m][k]: rows r0..r0+15 of the view, chunks c0 and c0 + 1.
   * ldmatrix: lane l points at row l % 8 of 8 x 8 matrix l / 8; matrix q
   * becomes register q (q % 2: rows + 8, q / 2: k + 8). */
  template <class View>
  static __device__ __forceinline__ void load_a(frag_a &a, const View &v,
                                                int r0, int c0) {
    const int l = lane(), q = l / 8;
    kd_mma__ldmatrix_x4<false>(a.r, v.chunk(r0 + l % 8 + 8 * (q & 1),
                                            c0 + (q >> 1)));
  }
  /* A stored [k][m]: view rows are k (r0..r0+15), chunks along m. */
  template <class View>
  static __device__ __forceinline__ void load_a_t(frag_a &a, const View &v,
                                                  int r0, int c0) {
    const int l = lane(), q = l / 8;
    kd_mma__ldmatrix_x4<true>(a.r, v.chunk(r0 + l % 8 + 8 * (q >> 1),
                                           c0 + (q & 1)));
  }
  /* B stored [n][k]: view rows are n (r0..r0+15), chunks along k.
   * Registers 0, 1: n 0..7 with k 0..7, 8..15; registers 2, 3: n 8..15. */
  template <class View>
  static __device__ __forceinline__ void load_b(frag_b &b, const View &v,
                                                int r0, int c0) {
    const int l = lane(), q = l / 8;
    if (KD_PLANTED) /* planted bug (arch/kd.h): B's n- and k-halves swapped */
      kd_mma__ldmatrix_x4<false>(b.r, v.chunk(r0 + l % 8 + 8 * (q & 1),
                                              c0 + (q >> 1)));
    else
      kd_mma__ldmatrix_x4<false>(b.r, v.chunk(r0 + l % 8 + 8 * (q >> 1),
                                              c0 + (q & 1)));
  }
  /* B stored [k][n]: view rows are k (r0..r0+15), chunks along n. */
  template <class View>
  static __device__ __forceinline__ void load_b_t(frag_b &b, const View &v,
                                                  int r0, int c0) {
    const int l = lane(), q = l / 8;
    kd_mma__ldmatrix_x4<true>(b.r, v.chunk(r0 + l % 8 + 8 * (q & 1),
                                           c0 + (q >> 1)));
  }

  template <typename T>
  static __device__ __forceinline__ void mma(frag_c &c, const frag_a &a,
                                             const frag_b &b) {
    kd_mma__m16n8k16<T>(c.v, a.r, b.r[0], b.r[1]);
    kd_mma__m16n8k16<T>(c.v + 4, a.r, b.r[2], b.r[3]);
  }
  /* c += a b with c a plain f32 sum: the unit's f32 accumulation truncates
   * (about 0.7 u of the accumulator per step, all toward zero), so a long
   * sum kept in the unit drifts past the f32-sum bound. Each product of 16
   * k starts from zero in the unit and is added to c with a
   * round-to-nearest add: the truncation then bites 16 products, not the
   * whole sum. Costs 8 adds per unit and a product's registers
   * (tile/gemm_mma.h, KD_GEMM_MMA_PROMOTE_K, says what that cost on the H100).
   */
  template <typename T>
  static __device__ __forceinline__ void mma_promote(frag_c &c,
                                                     const frag_a &a,
                                                     const frag_b &b) {
    KD_UNROLL
    for (int h = 0; h < 2; h++) {
      float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      kd_mma__m16n8k16<T>(t, a.r, b.r[2 * h], b.r[2 * h + 1]);
      KD_UNROLL
      for (int e = 0; e < 4; e++) c.v[4 * h + e] += t[e];
    }
  }

  static __device__ __forceinline__ int c_row(int e) {
    return lane() / 4 + 8 * ((e % 4) / 2);
  }
  static __device__ __forceinline__ int c_col(int e) {
    return 8 * (e / 4) + 2 * (lane() % 4) + e % 2;
  }
  static __device__ __forceinline__ int c_slot(int e) { return (e % 4) / 2; }
  static __device__ __forceinline__ int slot_row(int s) {
    return lane() / 4 + 8 * s;
  }
  /* Combines v over the lanes that hold the same rows (a quad). */
  template <class Op>
  static __device__ __forceinline__ float row_reduce(float v, Op op) {
    v = op(v, __shfl_xor(v, 1));
    return op(v, __shfl_xor(v, 2));
  }
  /* Element (slot_row(s), col) of a C unit, returned to every lane that
   * holds that row (s and col warp-uniform): column col sits in lane
   * 4 g + (col % 8) / 2 of the quad, element 4 (col / 8) + 2 s + col % 2. */
  static __device__ __forceinline__ float row_get(const frag_c &c, int s,
                                                  int col) {
    const int e = 4 * (col >> 3) + 2 * s + (col & 1);
    float x = 0.0f;
    KD_UNROLL
    for (int i = 0; i < C_ELEMS; i++)
      if (i == e) x = c.v[i];
    return __shfl(x, (lane() & ~3) | ((col & 7) >> 1));
  }
  /* C of a unit, rounded to T, as the A fragment of a next product whose
   * k runs over this unit's columns (attention's P V): on NVIDIA the C
   * layout of two m16n8 halves is the A layout, register for register. */
  template <typename T>
  static __device__ __forceinline__ void c_to_a(frag_a &a, const frag_c &c) {
    KD_UNROLL
    for (int r = 0; r < 4; r++) a.r[r] = kd_pack2<T>(c.v[2 * r], c.v[2 * r + 1]);
  }
};

/* ---- AMD CDNA: v_mfma_f32_16x16x16 --------------------------------------- */

#if KD_MMA__AMD_DEVICE
typedef short kd_mma__s4 __attribute__((ext_vector_type(4)));
typedef _Float16 kd_mma__h4 __attribute__((ext_vector_type(4)));
typedef float kd_mma__f4 __attribute__((ext_vector_type(4)));
#endif

template <typename T>
__device__ __forceinline__ void kd_mma__mfma16(float d[4], const uint32_t a[2],
                                               const uint32_t b[2]) {
#if KD_MMA__CDNA_OK
  kd_mma__f4 acc = {d[0], d[1], d[2], d[3]};
  if constexpr (std::is_same<T, kd_bf16>::value) {
    kd_mma__s4 x, y;
    __builtin_memcpy(&x, a, 8);
    __builtin_memcpy(&y, b, 8);
    acc = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(x, y, acc, 0, 0, 0);
  } else {
    kd_mma__h4 x, y;
    __builtin_memcpy(&x, a, 8);
    __builtin_memcpy(&y, b, 8);
    acc = __builtin_amdgcn_mfma_f32_16x16x16f16(x, y, acc, 0, 0, 0);
  }
  d[0] = acc[0];
  d[1] = acc[1];
  d[2] = acc[2];
  d[3] = acc[3];
#elif defined(KILN_BACKEND_HOST)
  kemu_mfma_16x16x16<kd_mma__cvt<T>>(d, a, b);
#else
  (void)d;
  (void)a;
  (void)b;
  KD_MMA__UNAVAILABLE();
#endif
}

/* With q = lane / 16 and c = lane % 16: A row c, k 4q..4q+3; B column c,
 * k 4q..4q+3; C element e is row 4q + e, column c. A lane holds four rows
 * (slots 0..3, one element each); the 16 lanes of a quarter-wave hold the
 * same rows. */
struct kd_mma_cdna {
  static constexpr int WARP = 64, A_REGS = 2, B_REGS = 2, C_ELEMS = 4;
  static constexpr int ROW_SLOTS = 4;
  static constexpr bool TRUNCATES = false; /* not known to (mma_promote) */
  struct frag_a { uint32_t r[A_REGS]; };
  struct frag_b { uint32_t r[B_REGS]; };
  struct frag_c { float v[C_ELEMS]; };

  static __device__ __forceinline__ int lane() {
    return (int)(threadIdx.x & (WARP - 1));
  }
  /* Four consecutive elements of a chunked row, 8-byte aligned. */
  template <class View>
  static __device__ __forceinline__ void load4(uint32_t r[2], const View &v,
                                               int row, int c0, int k) {
    const uint16_t *p = v.chunk(row, c0 + k / 8) + k % 8;
#if KD_MMA__AMD_DEVICE
    /* One 8-byte LDS read. hipcc kept memcpy's destination on the stack
     * (scratch) in the attention kernel. */
    const uint2 x = *reinterpret_cast<const uint2 *>(p);
    r[0] = x.x;
    r[1] = x.y;
#else
    memcpy(r, p, 8);
#endif
  }
  /* Four elements down a column: element (row + i, col), i < 4. */
  template <class View>
  static __device__ __forceinline__ void load4_t(uint32_t r[2], const View &v,
                                                 int row, int c0, int col) {
    uint16_t e[4];
    KD_UNROLL
    for (int i = 0; i < 4; i++) e[i] = v.chunk(row + i, c0 + col / 8)[col % 8];
    r[0] = (uint32_t)e[0] | (uint32_t)e[1] << 16;
    r[1] = (uint32_t)e[2] | (uint32_t)e[3] << 16;
  }

  template <class View>
  static __device__ __forceinline__ void load_a(frag_a &a, const View &v,
                                                int r0, int c0) {
    const int l = lane();
    if (KD_PLANTED) /* planted bug (arch/kd.h): a plausible but wrong A table */
      load4(a.r, v, r0 + l / 4, c0, 4 * (l % 4));
    else
      load4(a.r, v, r0 + l % 16, c0, 4 * (l / 16));
  }
  template <class View>
  static __device__ __forceinline__ void load_a_t(frag_a &a, const View &v,
                                                  int r0, int c0) {
    const int l = lane();
    load4_t(a.r, v, r0 + 4 * (l / 16), c0, l % 16);
  }
  template <class View>
  static __device__ __forceinline__ void load_b(frag_b &b, const View &v,
                                                int r0, int c0) {
    const int l = lane();
    load4(b.r, v, r0 + l % 16, c0, 4 * (l / 16));
  }
  template <class View>
  static __device__ __forceinline__ void load_b_t(frag_b &b, const View &v,
                                                  int r0, int c0) {
    const int l = lane();
    load4_t(b.r, v, r0 + 4 * (l / 16), c0, l % 16);
  }

  template <typename T>
  static __device__ __forceinline__ void mma(frag_c &c, const frag_a &a,
                                             const frag_b &b) {
    kd_mma__mfma16<T>(c.v, a.r, b.r);
  }
  /* The MFMA's accumulation is not known to truncate (AMD's rounding is
   * not modelled here, and no AMD GPU ran this): the sum stays in the
   * unit. */
  template <typename T>
  static __device__ __forceinline__ void mma_promote(frag_c &c,
                                                     const frag_a &a,
                                                     const frag_b &b) {
    mma<T>(c, a, b);
  }

  static __device__ __forceinline__ int c_row(int e) {
    return 4 * (lane() / 16) + e;
  }
  static __device__ __forceinline__ int c_col(int) { return lane() % 16; }
  static __device__ __forceinline__ int c_slot(int e) { return e; }
  static __device__ __forceinline__ int slot_row(int s) {
    return 4 * (lane() / 16) + s;
  }
  /* Combines v over the 16 lanes of a quarter-wave (same rows). */
  template <class Op>
  static __device__ __forceinline__ float row_reduce(float v, Op op) {
    KD_UNROLL
    for (int m = 1; m < 16; m *= 2) v = op(v, __shfl_xor(v, m));
    return v;
  }
  /* Element (slot_row(s), col) of a C unit to every lane holding that row:
   * lane 16 (lane / 16) + col, element s. */
  static __device__ __forceinline__ float row_get(const frag_c &c, int s,
                                                  int col) {
    float x = 0.0f;
    KD_UNROLL
    for (int i = 0; i < C_ELEMS; i++)
      if (i == s) x = c.v[i];
    return __shfl(x, (lane() & ~15) | col);
  }
  /* C (row 4q + e, column c in lane 16q + c) to A (row c, k 4q..4q+3 in
   * lane 16q + c): a transpose of 4 x 4 blocks across quarter-waves. Lane
   * l needs C(l % 16, 4 (l / 16) + j), held by lane 4 (l / 16) + j +
   * 16 ((l % 16) / 4) as its element (l % 16) % 4. */
  template <typename T>
  static __device__ __forceinline__ void c_to_a(frag_a &a, const frag_c &c) {
    const int l = lane(), row = l % 16, e = row % 4;
    float got[4];
    KD_UNROLL
    for (int j = 0; j < 4; j++) {
      const int src = 4 * (l / 16) + j + 16 * (row / 4);
      float pick = 0.0f;
      KD_UNROLL
      for (int i = 0; i < 4; i++) {
        const float x = __shfl(c.v[i], src);
        if (i == e) pick = x;
      }
      got[j] = pick;
    }
    a.r[0] = kd_pack2<T>(got[0], got[1]);
    a.r[1] = kd_pack2<T>(got[2], got[3]);
  }
};

/* ---- Which unit this device has (host side, for launchers) --------------- */

/* Host emulation: the unit matching the emulated warp (NVIDIA at 32, CDNA
 * at 64). CUDA: compute capability 8.0 or later. HIP: gfx90a and gfx94x. */
static inline kd_mma_kind kd_mma__query_kind(int dev);

static inline kd_mma_kind kd_mma_device_kind() {
#if defined(KILN_BACKEND_HOST)
  return kemu_warp_size() == 32 ? KD_MMA_NV : KD_MMA_CDNA;
#else
  /* Asked once per device and process: hipGetDeviceProperties costs far
   * more than a launch. */
  static int known[64];
  int dev = 0;
  if (hipGetDevice(&dev) != hipSuccess || dev < 0 || dev >= 64)
    return KD_MMA_NONE;
  int k = __atomic_load_n(&known[dev], __ATOMIC_RELAXED);
  if (k == 0) {
    k = 1 + (int)kd_mma__query_kind(dev);
    __atomic_store_n(&known[dev], k, __ATOMIC_RELAXED);
  }
  return (kd_mma_kind)(k - 1);
#endif
}

static inline kd_mma_kind kd_mma__query_kind(int dev) {
#if defined(KILN_BACKEND_HOST)
  (void)dev;
  return KD_MMA_NONE;
#elif defined(KILN_BACKEND_CUDA)
  int major = 0;
  if (hipDeviceGetAttribute(&major, hipDeviceAttributeComputeCapabilityMajor,
                            dev) != hipSuccess)
    return KD_MMA_NONE;
  return major >= 8 ? KD_MMA_NV : KD_MMA_NONE;
#else
  hipDeviceProp_t p;
  if (hipGetDeviceProperties(&p, dev) != hipSuccess) return KD_MMA_NONE;
  return strncmp(p.gcnArchName, "gfx90a", 6) == 0 ||
                 strncmp(p.gcnArchName, "gfx94", 5) == 0
             ? KD_MMA_CDNA
             : KD_MMA_NONE;
#endif
}

#endif
