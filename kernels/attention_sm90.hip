/* The Hopper attention kernel (kernels/tile/attn_sm90.h) behind the TILED
 * family of ke__attention_launch (kernels/attention.hip): the default for
 * f16 and bf16 on a compute capability 9.0 device with an sm_90a build
 * (host emulation: KILN_EMU_SM=90 at warp 32), where the H100 measured it
 * correct and faster than the mma.sync kernel on every shape
 * (docs/decisions/attention.md). The context's attention tuning
 * (kiln/test-tuning.h: hopper 0, which the runner sets from
 * KILN_HOPPER_ATTN=0) turns it off: the mma.sync kernel then runs, for
 * bisecting. Its own translation unit so that the
 * cuda build compiles it for sm_90a only (meson's sm90a_kernel_names).
 * Returns -1 where it does not apply, and the caller goes on to the
 * mma.sync kernel.
 */
#include "tile/attn_sm90_cfg.h"

/* The engine runs the default schedule of each D (tile/attn_sm90_cfg.h) in
 * the kernel's form of P, or in one term of the input type where round_p
 * (kiln/attention.h) allows it: those two forms and no other schedule are
 * compiled here. The timing variants are built by dev/attn-pterms.cu. */

/* round_p takes the one-term form; else V in f16 for bf16 where the
 * engine gave the workspace (without it, the cap refused it: two terms). */
template <typename T>
static int ke_attention_sm90(hipStream_t s, const void *q, const void *k,
                             const void *v, void *o,
                             const ke__attention_desc *a) {
  if (a->round_p)
    return kd_attn_sm90_by_d<T, T, KD_ATTN_SM90_P1>(s, q, k, v, o, a);
  if constexpr (kd_attn_sm90_v16<T, KD_ATTN_SM90_PK>)
    if (a->work)
      return kd_attn_sm90_by_d<T, kd_half, KD_ATTN_SM90_PK>(s, q, k, v, o, a);
  return kd_attn_sm90_by_d<T, T, KD_ATTN_SM90_PK>(s, q, k, v, o, a);
}

/* Whether the kernel could run for dtype and a (the rows' alignment
 * aside, which ke__attention_launch checks). */
static bool ke_attention_sm90_applies(ke_dtype dtype,
                                      const ke__attention_desc *a) {
  return (dtype == KE_F16 || dtype == KE_BF16) && a->d <= 256 &&
         a->d % 8 == 0 && !a->no_hopper && kd_wg_available();
}

extern "C" int ke__attention_sm90_launch(void *stream, ke_dtype dtype,
                                         const void *q, const void *k,
                                         const void *v, void *o,
                                         const ke__attention_desc *a) {
#if defined(KILN_BACKEND_HIP)
  (void)stream, (void)dtype, (void)q, (void)k, (void)v, (void)o, (void)a;
  return -1;
#else
  if (!ke_attention_sm90_applies(dtype, a)) return -1;
  hipStream_t s = (hipStream_t)stream;
  if (dtype == KE_F16) return ke_attention_sm90<kd_half>(s, q, k, v, o, a);
  return ke_attention_sm90<kd_bf16>(s, q, k, v, o, a);
#endif
}

/* Whether V in f16 pays for its copy: the copy costs about 2.5 us plus
 * 1 us per MB of V on the H100, and saves about a fifth of the two-term
 * kernel's time (docs/decisions/attention.md, "bf16: V in f16, P in one
 * f16 term": at
 * B 1, H 16, D 128, S 4096 it saved 54 us for 18 us; at S 1024 it cost
 * 1.6 us). So it is taken where each kv head's rows (halved when causal)
 * number at least 2048, twice what the per-MB cost needs, and the call
 * holds at least 16 GFLOP, about three times what the fixed cost needs.
 * The context's tuning (a->v16; the runner sets it from KILN_FA3_V16)
 * overrides the choice: always (the tests that need the path at small
 * sizes), or never. */
static bool ke_attention_sm90_v16_pays(const ke__attention_desc *a) {
  if (a->v16 != 0) return a->v16 == 2;
  const double rows = (double)(a->hq / a->hkv) * (double)a->sq *
                      (a->causal ? 0.5 : 1.0);
  const double flop = 4.0 * (double)(a->b * a->hq) * (double)a->sq *
                      (double)a->sk * (double)a->d * (a->causal ? 0.5 : 1.0);
  return rows >= 2048 && flop >= 16e9;
}

extern "C" size_t ke__attention_sm90_work_bytes(ke_dtype dtype,
                                               const ke__attention_desc *a) {
#if defined(KILN_BACKEND_HIP)
  (void)dtype, (void)a;
  return 0;
#else
  if (dtype != KE_BF16 || !ke_attention_sm90_applies(dtype, a) || a->round_p ||
      !ke_attention_sm90_v16_pays(a))
    return 0;
  return kd_attn_sm90_v16_bytes(a);
#endif
}
