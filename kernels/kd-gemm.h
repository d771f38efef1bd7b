/* The tiled GEMM kernel shared by kernels/gemm.hip (dense A and B) and
 * kernels/mxfp.hip (B decoded from MX blocks while it is loaded).
 *
 * A block of 256 threads computes a 64 x 64 tile of C for one batch index.
 * K is walked in slabs of 16: the block stages op(A)[64 x 16] and
 * op(B)[16 x 64] in shared memory as f32 (each thread loads four elements of
 * each, out-of-range ones as 0), then each thread multiplies a 4 x 4 register
 * block: rows ty + 16i and columns tx + 16j of the tile, i, j < 4, so that a
 * warp reads shared memory as broadcasts and consecutive words. Each output
 * is one thread's in-order f32 sum over K with fused multiply-add, then
 * alpha * sum + beta * C, rounded once to C's dtype; C is read only when
 * beta != 0 and A and B only when alpha != 0. Edges: loads past M, N or K
 * stage zeros and stores past M or N are skipped, so any M, N, K >= 1 works.
 * The grid is (N tiles, M tiles, batch), the last two capped at 65535 and
 * walked grid-stride, so there is no limit from the grid either.
 *
 * An operand is a loader: `float load(b, r, k)` returns element (r, k) of
 * the [rows, K] matrix of batch b (rows = M for A, N for B), and
 * `k_contiguous` says which index walks memory, so that the tile is loaded
 * with consecutive threads on consecutive addresses either way.
 */
#ifndef KILN_KD_GEMM_H
#define KILN_KD_GEMM_H

#include "kd.h"

#define KD_GEMM_TILE 64     /* rows and columns of C per block */
#define KD_GEMM_BK 16       /* K per shared-memory slab */
#define KD_GEMM_THREADS 256 /* 16 x 16 threads, a 4 x 4 block each */
#define KD_GEMM_MICRO 4
#define KD_GEMM_PAD 4       /* shared row padding against bank conflicts */

/* A dense f32/f16/bf16 matrix (ke__gemm_operand with its storage type). */
template <typename T> struct kd_gemm_dense {
  const T *data;
  int64_t ld;
  int64_t batch_stride;
  int k_contiguous;

  __device__ __forceinline__ float load(int64_t b, int64_t r,
                                        int64_t k) const {
    const T *base = data + b * batch_stride;
    return kd_to_float(k_contiguous ? base[r * ld + k] : base[k * ld + r]);
  }
};

/* Stages rows [r0, r0 + 64) x K [k0, k0 + 16) of op into tile[k][r]. */
template <class Op>
__device__ __forceinline__ void
kd_gemm_stage(const Op &op, float (*tile)[KD_GEMM_TILE + KD_GEMM_PAD],
              int64_t b, int64_t r0, int64_t rows, int64_t k0, int64_t k_len) {
  const int per_thread = KD_GEMM_TILE * KD_GEMM_BK / KD_GEMM_THREADS;
  for (int i = 0; i < per_thread; i++) {
    const int idx = (int)threadIdx.x + i * KD_GEMM_THREADS;
    int r, kk;
    if (op.k_contiguous) {
      kk = idx % KD_GEMM_BK;
      r = idx / KD_GEMM_BK;
    } else {
      r = idx % KD_GEMM_TILE;
      kk = idx / KD_GEMM_TILE;
    }
    const int64_t gr = r0 + r, gk = k0 + kk;
    tile[kk][r] = gr < rows && gk < k_len ? op.load(b, gr, gk) : 0.0f;
  }
}

template <class OpA, class OpB, typename Tc>
__global__ void __launch_bounds__(KD_GEMM_THREADS)
kd_gemm_tiles(OpA a, OpB b, Tc *__restrict__ c, int64_t ldc,
              int64_t c_batch_stride, int64_t m, int64_t n, int64_t k,
              int64_t batch, float alpha, float beta) {
  __shared__ float as[KD_GEMM_BK][KD_GEMM_TILE + KD_GEMM_PAD];
  __shared__ float bs[KD_GEMM_BK][KD_GEMM_TILE + KD_GEMM_PAD];
  const int side = KD_GEMM_TILE / KD_GEMM_MICRO; /* 16 */
  const int tx = (int)threadIdx.x % side, ty = (int)threadIdx.x / side;
  const int64_t m_tiles = (m + KD_GEMM_TILE - 1) / KD_GEMM_TILE;
  const int64_t n_tiles = (n + KD_GEMM_TILE - 1) / KD_GEMM_TILE;

  for (int64_t bi = blockIdx.z; bi < batch; bi += gridDim.z)
    for (int64_t mt = blockIdx.y; mt < m_tiles; mt += gridDim.y)
      for (int64_t nt = blockIdx.x; nt < n_tiles; nt += gridDim.x) {
        const int64_t m0 = mt * KD_GEMM_TILE, n0 = nt * KD_GEMM_TILE;
        float acc[KD_GEMM_MICRO][KD_GEMM_MICRO];
        for (int i = 0; i < KD_GEMM_MICRO; i++)
          for (int j = 0; j < KD_GEMM_MICRO; j++) acc[i][j] = 0.0f;

        /* alpha is uniform over the grid, so every thread of the block
         * takes the same branch and the barriers stay matched. */
        if (alpha != 0.0f) {
          for (int64_t k0 = 0; k0 < k; k0 += KD_GEMM_BK) {
            kd_gemm_stage(a, as, bi, m0, m, k0, k);
            kd_gemm_stage(b, bs, bi, n0, n, k0, k);
            __syncthreads();
            for (int kk = 0; kk < KD_GEMM_BK; kk++) {
              float av[KD_GEMM_MICRO], bv[KD_GEMM_MICRO];
              for (int i = 0; i < KD_GEMM_MICRO; i++)
                av[i] = as[kk][ty + side * i];
              for (int j = 0; j < KD_GEMM_MICRO; j++)
                bv[j] = bs[kk][tx + side * j];
              for (int i = 0; i < KD_GEMM_MICRO; i++)
                for (int j = 0; j < KD_GEMM_MICRO; j++)
                  acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
            }
            __syncthreads(); /* the next slab overwrites as and bs */
          }
        }

        Tc *cb = c + bi * c_batch_stride;
        for (int i = 0; i < KD_GEMM_MICRO; i++) {
          const int64_t row = m0 + ty + side * i;
          if (row >= m) continue;
          for (int j = 0; j < KD_GEMM_MICRO; j++) {
            const int64_t col = n0 + tx + side * j;
            if (col >= n) continue;
            Tc *p = cb + row * ldc + col;
            float v = alpha * acc[i][j];
            if (beta != 0.0f) v = fmaf(beta, kd_to_float(*p), v);
            *p = kd_from_float<Tc>(v);
          }
        }
      }
}

/* Launches kd_gemm_tiles over the whole problem on stream. */
template <class OpA, class OpB, typename Tc>
static int kd_gemm_run(hipStream_t stream, OpA a, OpB b, void *c, int64_t ldc,
                       int64_t c_batch_stride, int64_t m, int64_t n,
                       int64_t k, int64_t batch, float alpha, float beta) {
  const int64_t cap = 65535;
  const int64_t m_tiles = (m + KD_GEMM_TILE - 1) / KD_GEMM_TILE;
  const int64_t n_tiles = (n + KD_GEMM_TILE - 1) / KD_GEMM_TILE;
  dim3 grid((unsigned)n_tiles, (unsigned)(m_tiles < cap ? m_tiles : cap),
            (unsigned)(batch < cap ? batch : cap));
  hipLaunchKernelGGL((kd_gemm_tiles<OpA, OpB, Tc>), grid,
                     dim3(KD_GEMM_THREADS), 0, stream, a, b, (Tc *)c, ldc,
                     c_batch_stride, m, n, k, batch, alpha, beta);
  return (int)hipGetLastError();
}

#endif
