/* The Hopper GEMM's host side (tile/gemm_sm90.h has the kernel): the
 * tensor maps of its operands and of C, whether TMA can read them, and the
 * launch of kd_gemm_sm90 for a configuration and layout. Used by the engine
 * (gemm_sm90.hip), the MX GEMM (tile/mx_sm90.h), the emulated tests
 * and dev/gemm-hopper.cu.
 */
#ifndef KILN_KERNELS_TILE_GEMM_SM90_LAUNCH_H
#define KILN_KERNELS_TILE_GEMM_SM90_LAUNCH_H

#include "tile/gemm_sm90.h"

/* The map of a dense operand for tiles of ROWS rows: K-major, boxes of
 * [ROWS][64 k]; else boxes of [64 k][64 rows]. */
static inline int kd_gemm_sm90_map(kd_tmap *m, const kd_gemm_mma_dense &op,
                                   bool kc, int64_t rows, int64_t k,
                                   int64_t batch, int box_rows) {
  const uint64_t inner = (uint64_t)(kc ? k : rows);
  const uint64_t outer = (uint64_t)(kc ? rows : k);
  const bool batched = batch > 1 && op.batch_stride != 0;
  const uint64_t dims[3] = {inner, outer, batched ? (uint64_t)batch : 1};
  const uint64_t strides[2] = {
      (uint64_t)op.ld * 2,
      batched ? (uint64_t)op.batch_stride * 2 : (uint64_t)op.ld * 2 * outer};
  const uint32_t box[2] = {64, kc ? (uint32_t)box_rows : 64u};
  return kd_tmap_encode(m, op.data, dims, strides, box);
}

/* Whether TMA can read the operand: 16-byte aligned base, row stride and
 * batch stride, and sizes a map holds. */
static inline bool kd_gemm_sm90_fits(const kd_gemm_mma_dense &op, int64_t rows,
                                     int64_t k) {
  return (uintptr_t)op.data % 16 == 0 && op.ld % 8 == 0 &&
         op.batch_stride % 8 == 0 && op.ld > 0 && op.batch_stride >= 0 &&
         op.ld < ((int64_t)1 << 36) && op.batch_stride < ((int64_t)1 << 36) &&
         rows < ((int64_t)1 << 31) && k < ((int64_t)1 << 31);
}

/* Launches the kernel for one layout, its maps built (kd_gemm_sm90_maps). */
template <typename T, class Cfg, bool AKC, bool BKC,
          class BS = kd_gemm_sm90_b_tma>
static int kd_gemm_sm90_launch(hipStream_t stream, const kd_tmap &ta,
                               const typename BS::param &tb, const kd_tmap &tc,
                               const kd_gemm_mma_out &c,
                               const kd_gemm_mma_dims &d, int ab, int bb,
                               int c_tma) {
  auto kernel = kd_gemm_sm90<T, Cfg, AKC, BKC, BS>;
  static int raised; /* per kernel and process; racing callers agree */
  if (!__atomic_load_n(&raised, __ATOMIC_RELAXED)) {
    const hipError_t e = hipFuncSetAttribute(
        (const void *)kernel, hipFuncAttributeMaxDynamicSharedMemorySize,
        Cfg::SMEM);
    if (e != hipSuccess) return (int)e;
    __atomic_store_n(&raised, 1, __ATOMIC_RELAXED);
  }
  const int64_t tiles = ((d.m + Cfg::BM - 1) / Cfg::BM) *
                        ((d.n + Cfg::BN - 1) / Cfg::BN) * d.batch;
  const int64_t sms = kd_gemm_mma_multiprocessors();
  const unsigned grid = (unsigned)(tiles < sms ? tiles : sms);
  hipLaunchKernelGGL((kd_gemm_sm90<T, Cfg, AKC, BKC, BS>), dim3(grid),
                     dim3(Cfg::THREADS), Cfg::SMEM, stream, ta, tb, tc, c, d,
                     ab, bb, c_tma);
  return (int)hipGetLastError();
}

/* TMA_STORE: the map of C for the epilogue's stores, boxes of [64 rows][64
 * columns]; 1 where C is 16-bit, beta 0 and TMA can write it, else 0 (the
 * register epilogue: beta needs C read, and f32 C's boxes would not fit).
 * N a multiple of 8 too: where a row's last column ends inside 16 bytes,
 * an H100 wrote the box's columns past it up to the 16-byte boundary (the
 * emulation refuses such a store, port/host/hopper-on-host.h). */
template <class Cfg>
static int kd_gemm_sm90_c_map(kd_tmap *tc, const kd_gemm_mma_out &c,
                              const kd_gemm_mma_dims &d) {
  memset(tc, 0, sizeof *tc);
  if (!(Cfg::FLAGS & KD_GEMM_SM90_TMA_STORE) || d.beta != 0.0f ||
      (c.dtype != KE_F16 && c.dtype != KE_BF16) || d.n % 8 != 0)
    return 0;
  const kd_gemm_mma_dense cd = {(const uint16_t *)c.data, c.ld, c.batch_stride};
  if (!kd_gemm_sm90_fits(cd, d.m, d.n) || c.ld < d.n ||
      (d.batch > 1 && c.batch_stride < c.ld * d.m))
    return 0;
  /* kd_gemm_sm90_map's K-major form: C's rows [m][n] as [rows][k]. */
  return kd_gemm_sm90_map(tc, cd, true, d.m, d.n, d.batch, 64) == 0;
}

/* The tensor maps of A and B and whether each has a matrix per batch, and
 * C's (kd_gemm_sm90_c_map); -1 when TMA cannot read an operand. */
template <class Cfg>
static int kd_gemm_sm90_maps(const kd_gemm_mma_dense &a, bool akc,
                             const kd_gemm_mma_dense &b, bool bkc,
                             const kd_gemm_mma_out &c,
                             const kd_gemm_mma_dims &d, kd_tmap *ta,
                             kd_tmap *tb, kd_tmap *tc, int *ab, int *bb,
                             int *c_tma) {
  if (!kd_gemm_sm90_fits(a, d.m, d.k) || !kd_gemm_sm90_fits(b, d.n, d.k) ||
      kd_gemm_sm90_map(ta, a, akc, d.m, d.k, d.batch, Cfg::BM) != 0 ||
      kd_gemm_sm90_map(tb, b, bkc, d.n, d.k, d.batch, Cfg::BN) != 0)
    return -1;
  *ab = d.batch > 1 && a.batch_stride != 0;
  *bb = d.batch > 1 && b.batch_stride != 0;
  *c_tma = kd_gemm_sm90_c_map<Cfg>(tc, c, d);
  return 0;
}

/* Runs the GEMM with configuration Cfg; -1 when TMA cannot read an operand
 * (the caller uses the mma.sync kernel), else a hipError_t. */
template <typename T, class Cfg>
static int kd_gemm_sm90_run(hipStream_t stream, const kd_gemm_mma_dense &a,
                            bool akc, const kd_gemm_mma_dense &b, bool bkc,
                            const kd_gemm_mma_out &c,
                            const kd_gemm_mma_dims &d) {
  kd_tmap ta, tb, tc;
  int ab, bb, ct;
  if (kd_gemm_sm90_maps<Cfg>(a, akc, b, bkc, c, d, &ta, &tb, &tc, &ab, &bb,
                             &ct) != 0)
    return -1;
  if (akc)
    return bkc ? kd_gemm_sm90_launch<T, Cfg, true, true>(stream, ta, tb, tc, c,
                                                         d, ab, bb, ct)
               : kd_gemm_sm90_launch<T, Cfg, true, false>(stream, ta, tb, tc, c,
                                                          d, ab, bb, ct);
  return bkc ? kd_gemm_sm90_launch<T, Cfg, false, true>(stream, ta, tb, tc, c,
                                                        d, ab, bb, ct)
             : kd_gemm_sm90_launch<T, Cfg, false, false>(stream, ta, tb, tc, c,
                                                         d, ab, bb, ct);
}

#endif
