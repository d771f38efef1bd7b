/* What the tiled attention kernels (kd-attn-mma.h, kd-attn-simt.h) share:
 * which rows a block owns, where they live, and which keys they see.
 *
 * Rows of a kv head are (query, query head of the kv head's group) pairs,
 * query major: row rr is query rr / ratio of head hk * ratio + rr % ratio.
 * So a block's rows span the group's heads for a few queries, sharing every
 * K/V tile it loads, and their causal limits stay close. The grid is (row
 * tiles, Hkv, B); a causal grid starts with its last row tiles, the longest,
 * so that the short ones fill the tail.
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

  __device__ __forceinline__ void init(const ke__attention_desc &a,
                                       const T *q_, const T *k_,
                                       const T *v_, T *o_, int bm) {
    const int64_t hk = blockIdx.y, b = blockIdx.z;
    ratio = a.hq / a.hkv;
    rows_total = ratio * a.sq;
    const int64_t tile = a.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
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
    return base + ((int64_t)blockIdx.y * ratio + hh) * stride[1] +
           i * stride[2];
  }
};

/* The grid for a block of bm rows. */
static inline dim3 kd_attn_grid(const ke__attention_desc *a, int bm) {
  const int64_t rows = a->hq / a->hkv * a->sq;
  return dim3((unsigned)((rows + bm - 1) / bm), (unsigned)a->hkv,
              (unsigned)a->b);
}

#endif
