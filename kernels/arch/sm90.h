/* The Hopper half of the matrix-core layer: NVIDIA sm_90a's asynchronous
 * warpgroup multiply (wgmma) reading both operands from shared memory
 * through matrix descriptors (SS) or A from registers (RS), tiles brought
 * in by the tensor memory accelerator (TMA) with host-built tensor maps,
 * and the mbarriers both complete on. kernels/tile/gemm_sm90.h is the GEMM
 * written on it, kernels/tile/attn_sm90.h the attention (docs/kernels-gemm.md,
 * "The Hopper path"; docs/kernels-attention.md, "Attention on the Hopper
 * path").
 *
 * Shared-memory operand layout. Every tile is written by TMA with the
 * 128-byte swizzle: rows of 128 bytes (64 16-bit elements), the 16-byte
 * chunk c of row r stored at chunk c XOR (r mod 8), tiles 1024-byte
 * aligned (kd_sw128 gives the same address for ordinary stores). A
 * K-major operand (k contiguous) is a tile of [rows][64 k]; an
 * MN-major one is tiles of [k][64 rows], one per 64 rows. kd_wg_desc_k and
 * kd_wg_desc_mn build the descriptors of a 64- or 128-row slice of them,
 * 16 k deep.
 *
 * On sm_90a the functions are the PTX instructions; in host emulation the
 * lane-by-lane versions of port/host/hopper-on-host.h (which document each
 * operation's contract); anywhere else (sm_80, sm_90 without the
 * arch-specific features, AMD) they trap: launchers reach them only where
 * kd_wg_available() says so.
 */
#ifndef KILN_KERNELS_ARCH_SM90_H
#define KILN_KERNELS_ARCH_SM90_H

#include "arch/mma.h"

#if defined(KILN_BACKEND_CUDA) && defined(__CUDA_ARCH__) &&                  \
    defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KD_WG__OK 1
#else
#define KD_WG__OK 0
#endif
#if defined(KILN_BACKEND_HOST)
#define KD_WG__EMU 1
#else
#define KD_WG__EMU 0
#endif
#if defined(KILN_BACKEND_CUDA) && !defined(__CUDA_ARCH__)
#include <cudaTypedefs.h>
#endif
#if defined(KILN_BACKEND_HOST) || !defined(KILN_BACKEND_CUDA)
#define __grid_constant__
#endif

/* ---- Shared-memory addresses ---------------------------------------------- */

__device__ __forceinline__ uint32_t kd_smem_addr(const void *p) {
#if KD_WG__OK
  return (uint32_t)__cvta_generic_to_shared(p);
#elif KD_WG__EMU
  return kemu_smem_addr(p);
#else
  (void)p;
  return 0;
#endif
}

/* ---- mbarriers ---------------------------------------------------------- */

__device__ __forceinline__ void kd_mbar_init(uint64_t *bar, int count) {
#if KD_WG__OK
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(
                   kd_smem_addr(bar)),
               "r"(count)
               : "memory");
#elif KD_WG__EMU
  kemu_mbar_init(kd_smem_addr(bar), count);
#else
  (void)bar;
  (void)count;
  KD_MMA__UNAVAILABLE();
#endif
}
/* Makes initialised barriers visible to the async proxy (TMA); a
 * __syncthreads() must follow before other threads use them. */
__device__ __forceinline__ void kd_mbar_init_fence() {
#if KD_WG__OK
  asm volatile("fence.mbarrier_init.release.cluster;\n"
               "fence.proxy.async.shared::cta;\n" ::
                   : "memory");
#endif
}
__device__ __forceinline__ void kd_mbar_arrive(uint64_t *bar) {
#if KD_WG__OK
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(
                   kd_smem_addr(bar))
               : "memory");
#elif KD_WG__EMU
  kemu_mbar_arrive(kd_smem_addr(bar), 0);
#else
  (void)bar;
  KD_MMA__UNAVAILABLE();
#endif
}
/* Arrives and adds `bytes` to the phase's pending transaction count (the
 * TMA copies that will complete them). */
__device__ __forceinline__ void kd_mbar_arrive_tx(uint64_t *bar, int bytes) {
#if KD_WG__OK
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::
                   "r"(kd_smem_addr(bar)),
               "r"(bytes)
               : "memory");
#elif KD_WG__EMU
  kemu_mbar_arrive(kd_smem_addr(bar), bytes);
#else
  (void)bar;
  (void)bytes;
  KD_MMA__UNAVAILABLE();
#endif
}
/* Waits until the phase of parity `parity` has completed. */
__device__ __forceinline__ void kd_mbar_wait(uint64_t *bar, int parity) {
#if KD_WG__OK
  const uint32_t a = kd_smem_addr(bar);
  uint32_t ok = 0;
  do {
    asm volatile("{\n.reg .pred p;\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(ok)
                 : "r"(a), "r"(parity)
                 : "memory");
  } while (!ok);
#elif KD_WG__EMU
  kemu_mbar_wait(kd_smem_addr(bar), parity);
#else
  (void)bar;
  (void)parity;
  KD_MMA__UNAVAILABLE();
#endif
}

/* ---- Tensor maps and TMA ------------------------------------------------ */

/* A tensor map (CUtensorMap on CUDA, kemu_tmap on the host), passed to
 * kernels by value as a __grid_constant__ parameter. */
struct alignas(64) kd_tmap {
  uint64_t w[16];
};

/* Encodes a map of a rank-2 to rank-5 tensor of 16-bit elements (dims
 * innermost first, strides of dims 1.. in bytes) read in boxes of box[0] x
 * box[1] x 1 ... elements with the 128-byte swizzle (box[0] = 64). 0, or
 * an error when the layout cannot be expressed (the caller falls back). */
static inline int kd_tmap_encode_rank(kd_tmap *m, const void *base, int rank,
                                      const uint64_t *dims,
                                      const uint64_t *strides,
                                      const uint32_t box[2]) {
  memset(m, 0, sizeof *m);
  if ((uintptr_t)base % 16 || rank < 2 || rank > 5 || box[0] * 2 != 128 ||
      box[1] < 1 || box[1] > 256)
    return -1;
  for (int i = 0; i < rank; i++)
    if (dims[i] < 1 || dims[i] > ((uint64_t)1 << 32)) return -1;
  for (int i = 0; i + 1 < rank; i++)
    if (strides[i] % 16 || strides[i] >= ((uint64_t)1 << 40)) return -1;
#if defined(KILN_BACKEND_HOST)
  kemu_tmap t = {};
  t.base = base;
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
  t.strides[0] = 2;
  for (int i = 1; i < rank; i++) t.strides[i] = strides[i - 1];
  for (int i = 0; i < rank; i++) t.box[i] = i < 2 ? box[i] : 1;
  t.rank = (uint32_t)rank;
  t.elem_bytes = 2;
  t.swizzle = 128;
  static_assert(sizeof t <= sizeof *m, "the host map fits a tensor map");
  memcpy(m, &t, sizeof t);
  return 0;
#elif defined(KILN_BACKEND_CUDA) && !defined(__CUDA_ARCH__)
  /* The driver's encoder, found through the runtime: kiln links no
   * libcuda. */
  static PFN_cuTensorMapEncodeTiled_v12000 encode;
  if (!__atomic_load_n(&encode, __ATOMIC_ACQUIRE)) {
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn,
                                         12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !fn)
      return -1;
    __atomic_store_n(&encode, (PFN_cuTensorMapEncodeTiled_v12000)fn,
                     __ATOMIC_RELEASE);
  }
  static_assert(sizeof(CUtensorMap) == sizeof(kd_tmap), "map size");
  cuuint64_t gd[5], gs[4];
  cuuint32_t bx[5], es[5];
  for (int i = 0; i < rank; i++) {
    gd[i] = dims[i];
    bx[i] = i < 2 ? box[i] : 1;
    es[i] = 1;
    if (i + 1 < rank) gs[i] = strides[i];
  }
  const CUresult r = encode(
      (CUtensorMap *)m, CU_TENSOR_MAP_DATA_TYPE_UINT16, (cuuint32_t)rank,
      (void *)base, gd, gs, bx, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? 0 : -1;
#else
  (void)dims;
  (void)strides;
  return -1;
#endif
}
static inline int kd_tmap_encode(kd_tmap *m, const void *base,
                                 const uint64_t dims[3],
                                 const uint64_t strides[2],
                                 const uint32_t box[2]) {
  return kd_tmap_encode_rank(m, base, 3, dims, strides, box);
}

/* Copies the box at element coordinates (x, y, z) into shared memory at
 * dst (1024-byte aligned), completing its bytes on bar. One thread. */
__device__ __forceinline__ void kd_tma_load(void *dst, const kd_tmap *map,
                                            int x, int y, int z,
                                            uint64_t *bar) {
#if KD_WG__OK
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx"
      "::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(kd_smem_addr(dst)),
      "l"(map), "r"(x), "r"(y), "r"(z), "r"(kd_smem_addr(bar))
      : "memory");
#elif KD_WG__EMU
  const int32_t c[3] = {x, y, z};
  kemu_tma_load(kd_smem_addr(dst), map, c, kd_smem_addr(bar));
#else
  (void)dst;
  (void)map;
  (void)x;
  (void)y;
  (void)z;
  (void)bar;
  KD_MMA__UNAVAILABLE();
#endif
}

/* The same for a rank-4 map, at (x, y, z, w). */
__device__ __forceinline__ void kd_tma_load4(void *dst, const kd_tmap *map,
                                             int x, int y, int z, int w,
                                             uint64_t *bar) {
#if KD_WG__OK
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx"
      "::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(
          kd_smem_addr(dst)),
      "l"(map), "r"(x), "r"(y), "r"(z), "r"(w), "r"(kd_smem_addr(bar))
      : "memory");
#elif KD_WG__EMU
  const int32_t c[4] = {x, y, z, w};
  kemu_tma_load(kd_smem_addr(dst), map, c, kd_smem_addr(bar));
#else
  (void)dst;
  (void)map;
  (void)x;
  (void)y;
  (void)z;
  (void)w;
  (void)bar;
  KD_MMA__UNAVAILABLE();
#endif
}

/* Copies the box at element coordinates (x, y, z) of the tensor from
 * shared memory at src (1024-byte aligned, the map's swizzle), elements
 * out of range not written, in this thread's open bulk group. One thread,
 * after the writers' kd_fence_proxy_async and a barrier. */
__device__ __forceinline__ void kd_tma_store(const kd_tmap *map, int x, int y,
                                             int z, const void *src) {
#if KD_WG__OK
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group"
      " [%0, {%2, %3, %4}], [%1];\n" ::"l"(map),
      "r"(kd_smem_addr(src)), "r"(x), "r"(y), "r"(z)
      : "memory");
#elif KD_WG__EMU
  const int32_t c[3] = {x, y, z};
  kemu_tma_store(map, c, kd_smem_addr(src));
#else
  (void)map, (void)x, (void)y, (void)z, (void)src;
  KD_MMA__UNAVAILABLE();
#endif
}
/* Closes this thread's open bulk group. */
__device__ __forceinline__ void kd_bulk_commit() {
#if KD_WG__OK
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
#elif KD_WG__EMU
  kemu_bulk_commit();
#endif
}
/* Waits until at most N of this thread's committed bulk groups still read
 * their shared-memory sources: the others' may be written again. A block
 * waits for all of its stores (N = 0) before it ends. */
template <int N> __device__ __forceinline__ void kd_bulk_wait_read() {
#if KD_WG__OK
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
#elif KD_WG__EMU
  kemu_bulk_wait_read(N);
#endif
}

/* Makes this thread's ordinary shared-memory stores visible to the async
 * proxy (wgmma, TMA); a barrier among the writers and readers follows. */
__device__ __forceinline__ void kd_fence_proxy_async() {
#if KD_WG__OK
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

/* Byte offset of 16-bit element (r, c) of a [rows][64] tile written with
 * the 128-byte swizzle (TMA's layout; the tile 1024-byte aligned). */
__device__ __forceinline__ uint32_t kd_sw128(int r, int c) {
  return (uint32_t)(128 * r + 16 * ((c / 8) ^ (r % 8)) + 2 * (c % 8));
}

/* ---- Named barriers ------------------------------------------------------ */

/* Barrier `id` (1-15; 0 is __syncthreads's) among `count` threads, a
 * multiple of 32, whole warps: kd_bar_sync counts this thread's warp in and
 * waits until `count` threads arrived in this phase; kd_bar_arrive counts it
 * in and goes on. A phase completes at `count` arrivals and the barrier is
 * ready for the next. They order warpgroups without a full __syncthreads
 * (tile/attn_sm90.h's ping-pong). */
__device__ __forceinline__ void kd_bar_sync(int id, int count) {
#if KD_WG__OK
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
#elif KD_WG__EMU
  kemu_bar_named(id, count, true);
#else
  (void)id, (void)count;
  KD_MMA__UNAVAILABLE();
#endif
}
__device__ __forceinline__ void kd_bar_arrive(int id, int count) {
#if KD_WG__OK
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
#elif KD_WG__EMU
  kemu_bar_named(id, count, false);
#else
  (void)id, (void)count;
  KD_MMA__UNAVAILABLE();
#endif
}

/* ---- Register budgets of warp-specialised warpgroups --------------------- */

template <int N> __device__ __forceinline__ void kd_wg_regs_dec() {
#if KD_WG__OK
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}
template <int N> __device__ __forceinline__ void kd_wg_regs_inc() {
#if KD_WG__OK
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

/* ---- wgmma ---------------------------------------------------------------- */

/* A matrix descriptor: start address, leading and stride byte offsets,
 * the 128-byte swizzle (mode 1 in bits 62-63). */
__device__ __forceinline__ uint64_t kd_wg_desc(uint32_t addr, uint32_t lbo,
                                               uint32_t sbo) {
  return (uint64_t)((addr >> 4) & 0x3fff) |
         (uint64_t)((lbo >> 4) & 0x3fff) << 16 |
         (uint64_t)((sbo >> 4) & 0x3fff) << 32 | (uint64_t)1 << 62;
}
/* K-major tile [rows][64 k]: rows r0.. (r0 a multiple of 8), k 16 ks... */
__device__ __forceinline__ uint64_t kd_wg_desc_k(const void *tile, int r0,
                                                 int ks) {
  /* Planted bug (arch/kd.h): the stride between groups of eight rows one row
   * short. */
  return kd_wg_desc(kd_smem_addr(tile) + 128 * r0 + 32 * ks, 16,
                    KD_PLANTED ? 896 : 1024);
}
/* A descriptor whose start address is `bytes` (a multiple of 16) further
 * on: the start field is the address over 16, and shared addresses stay
 * under 256 KiB, so the add never carries out of it. */
__device__ __forceinline__ uint64_t kd_wg_desc_add(uint64_t desc,
                                                   uint32_t bytes) {
  return desc + (bytes >> 4);
}
/* MN-major tiles [BK k][64 rows], one per 64 rows: rows r0.. (a multiple
 * of 64), k 16 ks... */
template <int BK>
__device__ __forceinline__ uint64_t kd_wg_desc_mn(const void *tiles, int r0,
                                                  int ks) {
  return kd_wg_desc(kd_smem_addr(tiles) + (r0 / 64) * BK * 128 + ks * 2048,
                    BK * 128, 1024);
}

/* Orders this thread's register accesses to the accumulators against the
 * asynchronous multiplies (the compiler must not move them across). */
template <int N>
__device__ __forceinline__ void kd_wg_fence_regs(float (&d)[N]) {
#if KD_WG__OK
  KD_UNROLL
  for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
#else
  (void)d;
#endif
}
__device__ __forceinline__ void kd_wg_fence() {
#if KD_WG__OK
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void kd_wg_commit() {
#if KD_WG__OK
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#elif KD_WG__EMU
  kemu_wgmma_commit();
#endif
}
/* Waits until at most N committed groups are in flight; only then do
 * their accumulators hold the results (the emulation's too). */
template <int N> __device__ __forceinline__ void kd_wg_wait() {
#if KD_WG__OK
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#elif KD_WG__EMU
  kemu_wgmma_wait(N);
#endif
}

/* d[64] (+)= A[64 x 16] * B[16 x 128] for the warpgroup, A and B through
 * descriptors, TA / TB: the operand is MN-major. scale_d 0 ignores d's
 * old value. Thread t holds the elements kemu_wgmma documents. */
template <typename T, int TA, int TB>
__device__ __forceinline__ void kd_wg_m64n128k16(float (&d)[64], uint64_t da,
                                                 uint64_t db, int scale_d) {
#if KD_WG__OK
  if constexpr (std::is_same<T, kd_bf16>::value)
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, "
        "%15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, "
        "%28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, "
        "%41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, "
        "%54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, "
        "1, %67, %68;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]),
          "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]),
          "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
          "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
          "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
          "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]),
          "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
          "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]),
          "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
          "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(scale_d), "n"(TA), "n"(TB)
        : "memory");
  else
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, "
        "%15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, "
        "%28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, "
        "%41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, "
        "%54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, "
        "1, %67, %68;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]),
          "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]),
          "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
          "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
          "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),
          "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]),
          "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
          "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]),
          "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]),
          "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(scale_d), "n"(TA), "n"(TB)
        : "memory");
#elif KD_WG__EMU
  kemu_wgmma<kd_mma__cvt<T>, 128>(d, da, db, TA != 0, TB != 0, scale_d);
#else
  (void)d;
  (void)da;
  (void)db;
  (void)scale_d;
  KD_MMA__UNAVAILABLE();
#endif
}

/* Operand lists of the wgmma forms below (f32 accumulators of N / 2
 * registers a thread). */
#define KD_WG__D8(d, i)                                                   \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]),             \
      "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define KD_WG__D32(d)                                                     \
  KD_WG__D8(d, 0), KD_WG__D8(d, 8), KD_WG__D8(d, 16), KD_WG__D8(d, 24)
#define KD_WG__D64(d)                                                     \
  KD_WG__D8(d, 0), KD_WG__D8(d, 8), KD_WG__D8(d, 16), KD_WG__D8(d, 24),   \
      KD_WG__D8(d, 32), KD_WG__D8(d, 40), KD_WG__D8(d, 48), KD_WG__D8(d, 56)
#define KD_WG__R32 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, " \
  "%30, %31"
#define KD_WG__R64 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, " \
  "%30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, " \
  "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, " \
  "%58, %59, %60, %61, %62, %63"


/* The SS form for N = 64 or 128: d (+)= A[64 x 16] B[16 x N], both
 * operands through descriptors (kd_wg_m64n128k16 above). */
#define KD_WG__SS64(TY)                                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                 \
               "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY      \
               " {" KD_WG__R32 "}, %32, %33, p, 1, 1, %35, %36;\n}\n"        \
               : KD_WG__D32(d)                                              \
               : "l"(da), "l"(db), "r"(scale_d), "n"(TA), "n"(TB)           \
               : "memory")
template <typename T, int N, int TA, int TB>
__device__ __forceinline__ void kd_wg_ss(float (&d)[N / 2], uint64_t da,
                                         uint64_t db, int scale_d) {
  static_assert(N == 64 || N == 128, "wgmma N of 64 or 128");
  if constexpr (N == 128) {
    kd_wg_m64n128k16<T, TA, TB>(d, da, db, scale_d);
  } else {
#if KD_WG__OK
    if constexpr (std::is_same<T, kd_bf16>::value) KD_WG__SS64("bf16");
    else KD_WG__SS64("f16");
#elif KD_WG__EMU
    kemu_wgmma<kd_mma__cvt<T>, 64>(d, da, db, TA != 0, TB != 0, scale_d);
#else
    (void)d, (void)da, (void)db, (void)scale_d;
    KD_MMA__UNAVAILABLE();
#endif
  }
}
#undef KD_WG__SS64

/* The RS form: d[N / 2] (+)= A[64 x 16] B[16 x N] with A in registers, four
 * per thread, each two 16-bit elements: warp w of the warpgroup holds rows
 * 16 w .. 16 w + 15, lane l in a[r] the elements (row l / 4 + 8 (r % 2),
 * columns 2 (l % 4) + 8 (r / 2) + {0, 1}) of them (kd_wg_acc_to_a builds
 * them from an accumulator). B through its descriptor, TB: MN-major. */
#define KD_WG__RS(TY, NN, REGS, DL, A0, A1, A2, A3, DB, SC, TBN)           \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " SC ", 0;\n"             \
               "wgmma.mma_async.sync.aligned.m64n" NN "k16.f32." TY "." TY \
               " {" REGS "}, {" A0 ", " A1 ", " A2 ", " A3 "}, " DB        \
               ", p, 1, 1, " TBN ";\n}\n"                                   \
               : DL(d)                                                      \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db),       \
                 "r"(scale_d), "n"(TB)                                      \
               : "memory")
template <typename T, int N, int TB>
__device__ __forceinline__ void kd_wg_rs(float (&d)[N / 2],
                                         const uint32_t (&a)[4], uint64_t db,
                                         int scale_d) {
  static_assert(N == 64 || N == 128, "wgmma N of 64 or 128");
#if KD_WG__OK
  constexpr bool BF = std::is_same<T, kd_bf16>::value;
  if constexpr (N == 64 && BF)
    KD_WG__RS("bf16", "64", KD_WG__R32, KD_WG__D32, "%32", "%33", "%34",
              "%35", "%36", "%37", "%38");
  else if constexpr (N == 64)
    KD_WG__RS("f16", "64", KD_WG__R32, KD_WG__D32, "%32", "%33", "%34",
              "%35", "%36", "%37", "%38");
  else if constexpr (BF)
    KD_WG__RS("bf16", "128", KD_WG__R64, KD_WG__D64, "%64", "%65", "%66",
              "%67", "%68", "%69", "%70");
  else
    KD_WG__RS("f16", "128", KD_WG__R64, KD_WG__D64, "%64", "%65", "%66",
              "%67", "%68", "%69", "%70");
#elif KD_WG__EMU
  kemu_wgmma_rs<kd_mma__cvt<T>, N>(d, a, db, TB != 0, scale_d);
#else
  (void)d, (void)a, (void)db, (void)scale_d;
  KD_MMA__UNAVAILABLE();
#endif
}
#undef KD_WG__RS

/* The accumulator pair register r of the A fragment takes. Planted bug
 * (arch/kd.h: KD_PLANTED, or KD_PLANT_RS alone in tests/kernels): registers 1
 * and 2 swapped, the second row of eight taken for the second eight
 * columns. Constant where no switch can plant it, so that the GPUs index
 * registers. */
#define KD_WG__A_PAIR_BUG (KD_PLANTED || KD_PLANTED_AT(KD_PLANT_RS))
#if defined(KD_PLANTED_RUNTIME)
__device__ __forceinline__ int kd_wg__a_pair(int r) {
#else
__device__ __forceinline__ constexpr int kd_wg__a_pair(int r) {
#endif
  return KD_WG__A_PAIR_BUG && (r == 1 || r == 2) ? 3 - r : r;
}

/* The A registers of the RS form for k columns 16 kk .. 16 kk + 15 of a
 * 64 x N accumulator (kd_wg_ss's d), each element rounded to T: the
 * accumulator's element i sits at row 16 w + l / 4 + 8 ((i / 2) % 2),
 * column 8 (i / 4) + 2 (l % 4) + i % 2, so register r is the pair
 * acc[8 kk + 2 r], acc[8 kk + 2 r + 1], no lane exchange needed. */
template <typename T>
__device__ __forceinline__ void kd_wg_acc_to_a(uint32_t (&a)[4],
                                               const float *acc8) {
  KD_UNROLL
  for (int r = 0; r < 4; r++) {
    const int q = kd_wg__a_pair(r);
    a[r] = kd_pack2<T>(acc8[2 * q], acc8[2 * q + 1]);
  }
}

/* The same registers for x in two T terms, hi = x rounded and lo = x - hi
 * rounded (exact before its rounding): hi's pair is converted once and
 * read back for the difference. */
template <typename T>
__device__ __forceinline__ void kd_wg_acc_to_a2(uint32_t (&hi)[4],
                                                uint32_t (&lo)[4],
                                                const float *acc8) {
  KD_UNROLL
  for (int r = 0; r < 4; r++) {
    const int q = kd_wg__a_pair(r);
    const float x0 = acc8[2 * q], x1 = acc8[2 * q + 1];
    hi[r] = kd_pack2<T>(x0, x1);
    float h[2];
    kd_unpack2(T(), hi[r], h);
    lo[r] = kd_pack2<T>(x0 - h[0], x1 - h[1]);
  }
}

/* Like kd_wg_fence_regs, for the A registers of the RS form. */
template <int N>
__device__ __forceinline__ void kd_wg_fence_a(uint32_t (&a)[N]) {
#if KD_WG__OK
  KD_UNROLL
  for (int i = 0; i < N; i++) asm volatile("" : "+r"(a[i])::"memory");
#else
  (void)a;
#endif
}

/* Whether this device runs the Hopper path: on CUDA a compute capability
 * 9.0 device with kiln built for sm_90a (KD_SM90A, meson's nvidia_archs);
 * in host emulation at warp 32 when KILN_EMU_SM=90 asks for it. */
static inline bool kd_wg_available() {
#if defined(KILN_BACKEND_HOST)
  const char *e = getenv("KILN_EMU_SM");
  return kemu_warp_size() == 32 && e && strcmp(e, "90") == 0;
#elif defined(KILN_BACKEND_CUDA) && defined(KD_SM90A)
  static int known; /* 1 + answer */
  int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (k == 0) {
    int dev = 0, major = 0, minor = 0;
    const bool ok =
        hipGetDevice(&dev) == hipSuccess &&
        hipDeviceGetAttribute(&major, hipDeviceAttributeComputeCapabilityMajor,
                              dev) == hipSuccess &&
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor,
                               dev) == cudaSuccess;
    k = 1 + (ok && major == 9 && minor == 0);
    __atomic_store_n(&known, k, __ATOMIC_RELAXED);
  }
  return k == 2;
#else
  return false;
#endif
}

#endif
