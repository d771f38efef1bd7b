/* What the tiled attention kernels (tile/attn_mma.h, tile/attn_simt.h,
 * tile/attn_sm90.h) share:
 * which rows a block owns, where they live, and which keys they see.
 *
 * Rows of a kv head are (query, query head of the kv head's group) pairs,
 * query major: row rr is query rr / ratio of head hk * ratio + rr % ratio.
 * So a block's rows span the group's heads for a few queries, sharing every
 * K/V tile it loads, and their causal limits stay close. The grid is (row
 * tiles, Hkv, B); a causal grid starts with its last row tiles, the longest,
 * so that the short ones fill the tail: a block takes its (row tile, kv
 * head, batch) from its place in the launch order (x, then y, then z),
 * longest row tiles first over every head and batch. Head by head, each
 * head's short tiles would run ahead of the next head's long ones, and a
 * causal grid would end in a tail of long tiles (the Hopper kernel's
 * causal rows took 15-17 % longer so: docs/decisions/attention.md).
 */
#ifndef KILN_KERNELS_TILE_ATTN_H
#define KILN_KERNELS_TILE_ATTN_H

#include "arch/kd.h"

/* Keys j < kd_attn_lim(...) are visible to row rr of a kv head. */
__device__ __forceinline__ int kd_attn_lim(const ke__attention_desc &a,
                                           int64_t ratio, int64_t rr) {
  if (!a.causal) return (int)a.sk;
  const int64_t l = rr / ratio + a.offset + 1;
  return (int)(l < 0 ? 0 : (l > a.sk ? a.sk : l));
}

template <typename T> struct kd_attn_block {
  int64_t ratio, rows_total, row0;
  const T *q, *k, *v; /* q: this batch; k, v: this kv head */
  T *o;
  int kv_end;         /* keys past the last one any row sees are not loaded */
  int64_t hk, bz;     /* the kv head and the batch */

  __device__ __forceinline__ void init(const ke__attention_desc &a,
                                       const T *q_, const T *k_,
                                       const T *v_, T *o_, int bm) {
    int64_t tile = blockIdx.x;
    hk = blockIdx.y;
    bz = blockIdx.z;
    /* In 32 bits (a grid of 2^32 blocks or more keeps the head-by-head
     * order): with 64-bit divisions here, even untaken, the tensor-core
     * kernels' non-causal grids ran 1-3 % slower (H200, 2026-11-28). */
    if (a.causal &&
        (uint64_t)gridDim.x * gridDim.y * gridDim.z <= UINT32_MAX) {
      const unsigned heads = gridDim.y * gridDim.z;
      const unsigned lin =
          blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
      const unsigned head = lin % heads;
      tile = gridDim.x - 1 - lin / heads;
      hk = head % gridDim.y;
      bz = head / gridDim.y;
    } else if (a.causal) {
      tile = gridDim.x - 1 - blockIdx.x;
    }
    ratio = a.hq / a.hkv;
    rows_total = ratio * a.sq;
    row0 = tile * bm;
    q = q_ + bz * a.q_stride[0];
    o = o_ + bz * a.o_stride[0];
    k = k_ + bz * a.k_stride[0] + hk * a.k_stride[1];
    v = v_ + bz * a.v_stride[0] + hk * a.v_stride[1];
    const int64_t last = (row0 + bm < rows_total ? row0 + bm : rows_total) - 1;
    kv_end = lim(a, last);
  }
  __device__ __forceinline__ int lim(const ke__attention_desc &a,
                                     int64_t rr) const {
    return kd_attn_lim(a, ratio, rr);
  }
  /* Row rr of Q or O (base q or o, with its strides). */
  template <typename P>
  __device__ __forceinline__ P *row(P *base, const int64_t *stride,
                                    int64_t rr) const {
    const int64_t i = rr / ratio, hh = rr - i * ratio;
    return base + (hk * ratio + hh) * stride[1] + i * stride[2];
  }
};

/* The grid for a block of bm rows. */
static inline dim3 kd_attn_grid(const ke__attention_desc *a, int bm) {
  const int64_t rows = a->hq / a->hkv * a->sq;
  return dim3((unsigned)((rows + bm - 1) / bm), (unsigned)a->hkv,
              (unsigned)a->b);
}

#endif
