/* What the tiled attention kernels (kd-attn-mma.h, kd-attn-simt.h) share:
 * which rows a block owns, where they live, and which keys they see.
 *
 * Rows of a kv head are (query, query head of the kv head's group) pairs,
 * query major: row rr is query rr / ratio of head hk * ratio + rr % ratio.
 * So a block's rows span the group's heads for a few queries, sharing every
 * K/V tile it loads, and their causal limits stay close. The grid is (row
 * tiles, Hkv, B); a causal grid starts with its last row tiles, the longest,
 * so that the short ones fill the tail. With `global_order` a block takes
 * its (row tile, kv head, batch) from its place in the launch order (x,
 * then y, then z), longest row tiles first over every head and batch:
 * otherwise the blocks run head by head, each head's short tiles ahead of
 * the next head's long ones, and a causal grid ends in a tail of long
 * tiles.
 */
#ifndef KILN_KD_ATTN_H
#define KILN_KD_ATTN_H

#include "kd.h"

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
  int64_t hk;         /* the kv head */

  __device__ __forceinline__ void init(const ke__attention_desc &a,
                                       const T *q_, const T *k_,
                                       const T *v_, T *o_, int bm,
                                       bool global_order = false) {
    int64_t b = blockIdx.z, tile = blockIdx.x;
    hk = blockIdx.y;
    if (a.causal && global_order) {
      const int64_t heads = (int64_t)gridDim.y * gridDim.z;
      const int64_t lin =
          blockIdx.x + (int64_t)gridDim.x * (blockIdx.y + (int64_t)gridDim.y *
                                                              blockIdx.z);
      tile = gridDim.x - 1 - lin / heads;
      hk = lin % heads % gridDim.y;
      b = lin % heads / gridDim.y;
    } else if (a.causal) {
      tile = gridDim.x - 1 - blockIdx.x;
    }
    ratio = a.hq / a.hkv;
    rows_total = ratio * a.sq;
    row0 = tile * bm;
    q = q_ + b * a.q_stride[0];
    o = o_ + b * a.o_stride[0];
    k = k_ + b * a.k_stride[0] + hk * a.k_stride[1];
    v = v_ + b * a.v_stride[0] + hk * a.v_stride[1];
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
