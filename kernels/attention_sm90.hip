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

/* The configurations (kd_fa3_cfg): a schedule per D, chosen by the H100
 * (docs/performance.md, "The Hopper attention kernel with ping-pong"): PP
 * at D 64, 128 and 256, 1.5-4 % faster than NOPP in the same call (D 192,
 * not timed, follows D 64's two-loop shape); the others stay as timing
 * variants (KILN_FA3_VARIANT, below).
 *   NOPP: the schedule before ping-pong. D up to 64: 128-key tiles in
 *     three slots, masked tiles in a loop of their own (the softmax
 *     overlaps P V). Up to 128: 128-key tiles in two slots, one loop (ptxas
 *     then waits for P V at the mask's branch; faster than 64-key tiles
 *     with the overlap kept). Up to 192: 64-key tiles, two loops. 256:
 *     64-key tiles, P V waited for before the softmax (O takes 128
 *     registers; overlapped, ptxas spills).
 *   PP: the same shapes, the consumer warpgroups in ping-pong.
 *   PP_SERIAL: ping-pong, P V waited for before the softmax (every D).
 *   PP64: ping-pong, D 128 on 64-key tiles in four slots, two loops (the
 *     overlap kept); other D as PP.
 *   SERIAL: the default's shape with P V waited for before the softmax.
 * Each in two forms: P in two 16-bit terms (the kernel's) or one (timing
 * only: it misses the suite's tolerance, docs/kernels.md). */
enum { KD_FA3_DEFAULT, KD_FA3_NOPP, KD_FA3_PP, KD_FA3_PP_SERIAL, KD_FA3_PP64,
       KD_FA3_SERIAL, KD_FA3_SCHEDULES };
/* The default schedule of each padded D. */
constexpr int kd_fa3_default_sched(int dp) {
  return dp == 64 ? KD_FA3_PP : dp == 128 ? KD_FA3_PP : dp == 192 ? KD_FA3_PP
                                                                  : KD_FA3_PP;
}
/* VAR = 2 schedule + (P in one term). */
constexpr int kd_fa3_sched(int var, int dp) {
  return var / 2 == KD_FA3_DEFAULT ? kd_fa3_default_sched(dp) : var / 2;
}
constexpr bool kd_fa3_pp(int var, int dp) {
  return kd_fa3_sched(var, dp) == KD_FA3_SERIAL
             ? kd_fa3_default_sched(dp) != KD_FA3_NOPP
             : kd_fa3_sched(var, dp) != KD_FA3_NOPP;
}
constexpr bool kd_fa3_serial(int var, int dp) {
  return kd_fa3_sched(var, dp) == KD_FA3_SERIAL ||
         kd_fa3_sched(var, dp) == KD_FA3_PP_SERIAL;
}
template <int VAR> constexpr int kd_fa3_pt = VAR % 2 ? 1 : 2;
template <int VAR = 0>
using kd_fa3_d64 = kd_fa3_cfg<64, 128, 3, kd_fa3_pt<VAR>,
                              !kd_fa3_serial(VAR, 64), true, kd_fa3_pp(VAR, 64)>;
template <int VAR = 0>
using kd_fa3_d128 =
    std::conditional_t<kd_fa3_sched(VAR, 128) == KD_FA3_PP64,
                       kd_fa3_cfg<128, 64, 4, kd_fa3_pt<VAR>, true, true, true>,
                       kd_fa3_cfg<128, 128, 2, kd_fa3_pt<VAR>,
                                  !kd_fa3_serial(VAR, 128), false,
                                  kd_fa3_pp(VAR, 128)>>;
template <int VAR = 0>
using kd_fa3_d192 = kd_fa3_cfg<192, 64, 2, kd_fa3_pt<VAR>,
                               !kd_fa3_serial(VAR, 192), true,
                               kd_fa3_pp(VAR, 192)>;
template <int VAR = 0>
using kd_fa3_d256 = kd_fa3_cfg<256, 64, 2, kd_fa3_pt<VAR>, false, false,
                               kd_fa3_pp(VAR, 256)>;

/* Timing variants, KILN_FA3_VARIANT (read once per process; measuring
 * only, docs/performance.md): a schedule, "nopp", "pp", "pp-serial",
 * "pp64" or "serial", or none, then "-p1" for P rounded once ("p1" alone:
 * the default schedule so). Anything else: the kernel. */
static int ke_attn_sm90_variant() {
  static int known; /* 1 + variant */
  int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (k == 0) {
    static const char *const names[KD_FA3_SCHEDULES] = {
        "", "nopp", "pp", "pp-serial", "pp64", "serial"};
    const char *e = getenv("KILN_FA3_VARIANT");
    int var = 0;
    for (int i = 0; e && i < KD_FA3_SCHEDULES; i++) {
      const size_t n = strlen(names[i]);
      if (strncmp(e, names[i], n) != 0) continue;
      const char *rest = e + n;
      if (*rest == 0) var = 2 * i;
      else if (strcmp(rest, n ? "-p1" : "p1") == 0) var = 2 * i + 1;
    }
    k = 1 + var;
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
/* VAR: the variant asked for; round_p (kiln/attention.h) takes its
 * one-term form. */
template <typename T, int VAR = 0>
static int ke_attn_sm90(hipStream_t s, const void *q, const void *k,
                        const void *v, void *o, const ke__attention_desc *a) {
  if constexpr (VAR + 1 < 2 * KD_FA3_SCHEDULES)
    if ((ke_attn_sm90_variant() | (a->round_p ? 1 : 0)) != VAR)
      return ke_attn_sm90<T, VAR + 1>(s, q, k, v, o, a);
  return ke_attn_sm90_by_d<T, VAR>(s, q, k, v, o, a);
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
