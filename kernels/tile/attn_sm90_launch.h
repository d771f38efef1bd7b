/* The Hopper attention kernel's host side (tile/attn_sm90.h has the
 * kernel): the tensor maps of K and V, and the launch of kd_attn_sm90_fwd for a
 * configuration, with bf16 V's f16 copy made first when the
 * configuration asks for it (tile/attn_sm90_v16.h). Used through the
 * configurations (tile/attn_sm90_cfg.h) by the engine (attention_sm90.hip),
 * the emulated test and dev/attn-pterms.cu.
 */
#ifndef KILN_KERNELS_TILE_ATTN_SM90_LAUNCH_H
#define KILN_KERNELS_TILE_ATTN_SM90_LAUNCH_H

#include <float.h>

#include "tile/attn_sm90.h"
#include "tile/attn_sm90_v16.h"

/* The rank-4 map of K or V ([B][Hkv][Sk][D], strides in elements) in boxes
 * of [BN keys][64 d]; -1 when TMA cannot read it. */
static inline int kd_attn_sm90_map(kd_tmap *m, const void *base,
                                   const ke__attention_desc &a,
                                   const int64_t *stride, int bn) {
  const uint64_t dims[4] = {(uint64_t)a.d, (uint64_t)a.sk, (uint64_t)a.hkv,
                            (uint64_t)a.b};
  /* A dimension of extent 1 takes any valid stride. */
  const int64_t s2 = stride[2] > 0 ? stride[2] : 8;
  const int64_t s1 = a.hkv > 1 ? stride[1] : s2;
  const int64_t s0 = a.b > 1 ? stride[0] : s1;
  if (stride[2] <= 0 && a.sk > 1) return -1;
  if (s1 <= 0 || s0 <= 0) return -1;
  const uint64_t strides[3] = {(uint64_t)s2 * 2, (uint64_t)s1 * 2,
                               (uint64_t)s0 * 2};
  const uint32_t box[2] = {64, (uint32_t)bn};
  return kd_tmap_encode_rank(m, base, 4, dims, strides, box);
}

/* Runs the kernel with configuration C: -1 when TMA cannot read K or V,
 * or the scale is zero or not finite (the caller goes on to the mma.sync
 * kernel), else a hipError_t. The caller has checked T, D <= C::DP, Q's
 * and O's rows. TV kd_half (bf16 T): V goes to f16 first, in work
 * (kd_attn_sm90_v16_bytes of it). */
template <typename T, class C, typename TV = T>
static int kd_attn_sm90_run(hipStream_t stream, const void *q, const void *k,
                            const void *v, void *o, const ke__attention_desc *a,
                            void *work = nullptr) {
  constexpr bool V16 = kd_attn_sm90<T, C, TV>::V16;
  kd_tmap tk, tv;
  /* V as TMA could read it (for V16 that is what the conversion's 16-byte
   * loads need), then the f16 copy's map (at the start of work). */
  if (kd_attn_sm90_map(&tk, k, *a, a->k_stride, C::BN) != 0 ||
      kd_attn_sm90_map(&tv, v, *a, a->v_stride, C::BN) != 0)
    return -1;
  const int64_t v16_stride[3] = {a->hkv * a->sk * a->d, a->sk * a->d, a->d};
  if (V16 && (!work || kd_attn_sm90_map(&tv, work, *a, v16_stride, C::BN) != 0))
    return -1;
  auto kernel = kd_attn_sm90_fwd<T, C, TV>;
  static int raised; /* per kernel and process; racing callers agree */
  if (!__atomic_load_n(&raised, __ATOMIC_RELAXED)) {
    const hipError_t e = hipFuncSetAttribute(
        (const void *)kernel, hipFuncAttributeMaxDynamicSharedMemorySize,
        C::SMEM);
    if (e != hipSuccess) return (int)e;
    __atomic_store_n(&raised, 1, __ATOMIC_RELAXED);
  }
  /* exp2 of log2(e) * scale * s is exp(scale * s). The kernel scales
   * by its magnitude (Q negated where it is negative): a scale of 0, or
   * one that is not finite, is the mma.sync kernel's. */
  const float scale_log2 = a->scale * 1.4426950408889634f;
  if (!(scale_log2 != 0.0f && fabsf(scale_log2) <= FLT_MAX)) return -1;
  float *vscale = nullptr;
  if constexpr (V16) {
    kd_half *v16 = nullptr;
    const int rc = kd_attn_sm90_v16_prep(stream, v, a, work, &v16, &vscale);
    if (rc != 0) return rc;
  }
  hipLaunchKernelGGL((kd_attn_sm90_fwd<T, C, TV>), kd_attn_grid(a, C::BM),
                     dim3(C::THREADS), C::SMEM, stream, tk, tv, (const T *)q,
                     (const T *)k, (const T *)v, (T *)o, *a, scale_log2,
                     (const float *)vscale);
  return (int)hipGetLastError();
}

#endif
