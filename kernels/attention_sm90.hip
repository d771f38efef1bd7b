/* The Hopper attention kernel (kernels/kd-attn-wgmma.h) behind the TILED
 * family of ke__attention_launch (kernels/attention.hip): the default for
 * f16 and bf16 on a compute capability 9.0 device with an sm_90a build
 * (host emulation: KILN_EMU_SM=90 at warp 32), where the H100 measured it
 * correct and faster than the mma.sync kernel on every shape
 * (docs/performance.md). KILN_HOPPER_ATTN=0 turns it off (the mma.sync
 * kernel then runs, for bisecting). Its own translation unit so that the
 * cuda build compiles it for sm_90a only (meson's sm90a_kernel_names).
 * Returns -1 where it does not apply, and the caller goes on to the
 * mma.sync kernel.
 */
#include "kd-attn-wgmma.h"

/* The configurations (kd_fa3_cfg), VAR 0 the kernel's, 1 and 2 timing
 * variants (below), chosen by the H100 (docs/performance.md). D up to 64:
 * 128-key tiles in three slots, masked tiles in a loop of their own (the
 * softmax overlaps P V). Up to 128: 128-key tiles in two slots, one loop
 * (ptxas then waits for P V at the mask's branch; faster than 64-key tiles
 * with the overlap kept, 357 against 335 TFLOP/s in f16). Up to 192:
 * 64-key tiles, two loops. 256: 64-key tiles, P V waited for before the
 * softmax (O takes 128 registers; overlapped, ptxas spills). */
template <int VAR> constexpr int kd_fa3_pt = VAR == 1 ? 1 : 2;
template <int VAR, bool DEF = true>
constexpr bool kd_fa3_pipe = VAR == 2 ? false : DEF;
template <int VAR = 0>
struct kd_fa3_d64
    : kd_fa3_cfg<64, 128, 3, kd_fa3_pt<VAR>, kd_fa3_pipe<VAR>, true> {};
template <int VAR = 0>
struct kd_fa3_d128
    : kd_fa3_cfg<128, 128, 2, kd_fa3_pt<VAR>, kd_fa3_pipe<VAR>, false> {};
template <int VAR = 0>
struct kd_fa3_d192
    : kd_fa3_cfg<192, 64, 2, kd_fa3_pt<VAR>, kd_fa3_pipe<VAR>, true> {};
template <int VAR = 0>
struct kd_fa3_d256
    : kd_fa3_cfg<256, 64, 2, kd_fa3_pt<VAR>, kd_fa3_pipe<VAR, false>,
                 false> {};

/* Timing variants, KILN_FA3_VARIANT (read once per process; measuring
 * only, docs/performance.md): "p1" rounds P once (one RS multiply per 16
 * keys; it misses the suite's tolerance), "serial" waits for the previous
 * tile's P V before the softmax (no overlap). Anything else: the kernel. */
static int ke_attn_sm90_variant() {
  static int known; /* 1 + variant */
  int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (k == 0) {
    const char *e = getenv("KILN_FA3_VARIANT");
    k = 1 + (!e ? 0 : !strcmp(e, "p1") ? 1 : !strcmp(e, "serial") ? 2 : 0);
    __atomic_store_n(&known, k, __ATOMIC_RELAXED);
  }
  return k - 1;
}

/* Whether the kernel may run: unless KILN_HOPPER_ATTN=0 turns it off
 * (read once per process). */
static bool ke_attn_sm90_wanted() {
  static int known; /* 1 + answer */
  int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (k == 0) {
    const char *e = getenv("KILN_HOPPER_ATTN");
    k = 1 + !(e && strcmp(e, "0") == 0);
    __atomic_store_n(&known, k, __ATOMIC_RELAXED);
  }
  return k == 2;
}

template <typename T, int VAR>
static int ke_attn_sm90_by_d(hipStream_t s, const void *q, const void *k,
                             const void *v, void *o,
                             const ke__attention_desc *a) {
  if (a->d <= 64) return kd_fa3_run<T, kd_fa3_d64<VAR>>(s, q, k, v, o, a);
  if (a->d <= 128) return kd_fa3_run<T, kd_fa3_d128<VAR>>(s, q, k, v, o, a);
  if (a->d <= 192) return kd_fa3_run<T, kd_fa3_d192<VAR>>(s, q, k, v, o, a);
  return kd_fa3_run<T, kd_fa3_d256<VAR>>(s, q, k, v, o, a);
}
template <typename T>
static int ke_attn_sm90(hipStream_t s, const void *q, const void *k,
                        const void *v, void *o, const ke__attention_desc *a) {
  switch (ke_attn_sm90_variant()) {
  case 1: return ke_attn_sm90_by_d<T, 1>(s, q, k, v, o, a);
  case 2: return ke_attn_sm90_by_d<T, 2>(s, q, k, v, o, a);
  default: return ke_attn_sm90_by_d<T, 0>(s, q, k, v, o, a);
  }
}

extern "C" int ke__attention_sm90_launch(void *stream, ke_dtype dtype,
                                         const void *q, const void *k,
                                         const void *v, void *o,
                                         const ke__attention_desc *a) {
#if defined(KILN_BACKEND_HIP)
  (void)stream, (void)dtype, (void)q, (void)k, (void)v, (void)o, (void)a;
  return -1;
#else
  if ((dtype != KE_F16 && dtype != KE_BF16) || a->d > 256 || a->d % 8 != 0 ||
      !ke_attn_sm90_wanted() || !kd_wg_available())
    return -1;
  hipStream_t s = (hipStream_t)stream;
  if (dtype == KE_F16) return ke_attn_sm90<kd_half>(s, q, k, v, o, a);
  return ke_attn_sm90<kd_bf16>(s, q, k, v, o, a);
#endif
}
