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
 * Each in three forms of P: the kernel's (P rounded once to f16, its
 * weights raised by 2^15: f16 as it is; bf16 against V converted to f16,
 * kd_fa3<T, C, TV>, where the engine gave the workspace, else two bf16
 * terms), "p1" (one term of the input's type, P in [0, 1], as round_p
 * asks; bf16 misses the suite's default tolerance, docs/kernels.md) and
 * "p2" (two 16-bit terms, the kernel before P in f16; timing only). */
enum { KD_FA3_DEFAULT, KD_FA3_NOPP, KD_FA3_PP, KD_FA3_PP_SERIAL, KD_FA3_PP64,
       KD_FA3_SERIAL, KD_FA3_SCHEDULES };
/* The default schedule of each padded D. */
constexpr int kd_fa3_default_sched(int dp) {
  return dp == 64 ? KD_FA3_PP : dp == 128 ? KD_FA3_PP : dp == 192 ? KD_FA3_PP
                                                                  : KD_FA3_PP;
}
/* VAR = 3 schedule + the form of P: 0 the kernel's, 1 p1, 2 p2. */
enum { KD_FA3_FORMS = 3 };
constexpr int kd_fa3_sched(int var, int dp) {
  return var / KD_FA3_FORMS == KD_FA3_DEFAULT ? kd_fa3_default_sched(dp)
                                              : var / KD_FA3_FORMS;
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
/* kd_fa3_cfg's PTERMS of a variant's form: the same numbers. */
template <int VAR> constexpr int kd_fa3_pt = VAR % KD_FA3_FORMS;
/* V in f16 for bf16 T: the kernel's form of P, given a workspace. */
template <typename T, int VAR>
constexpr bool kd_fa3_v16 =
    std::is_same<T, kd_bf16>::value && VAR % KD_FA3_FORMS == 0;
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
 * "pp64" or "serial", or none, then "-p1" for P rounded once or "-p2" for
 * two terms in bf16 too ("p1" or "p2" alone: the default schedule so).
 * Anything else: the kernel. */
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
      if (*rest == 0) var = KD_FA3_FORMS * i;
      else if (strcmp(rest, n ? "-p1" : "p1") == 0) var = KD_FA3_FORMS * i + 1;
      else if (strcmp(rest, n ? "-p2" : "p2") == 0) var = KD_FA3_FORMS * i + 2;
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

template <typename T, typename TV, int VAR>
static int ke_attn_sm90_by_d(hipStream_t s, const void *q, const void *k,
                             const void *v, void *o,
                             const ke__attention_desc *a) {
  void *w = a->work;
  if (a->d <= 64) return kd_fa3_run<T, kd_fa3_d64<VAR>, TV>(s, q, k, v, o, a, w);
  if (a->d <= 128)
    return kd_fa3_run<T, kd_fa3_d128<VAR>, TV>(s, q, k, v, o, a, w);
  if (a->d <= 192)
    return kd_fa3_run<T, kd_fa3_d192<VAR>, TV>(s, q, k, v, o, a, w);
  return kd_fa3_run<T, kd_fa3_d256<VAR>, TV>(s, q, k, v, o, a, w);
}
/* The variant asked for; round_p (kiln/attention.h) takes its one-term
 * form. */
static int ke_attn_sm90_var(const ke__attention_desc *a) {
  const int var = ke_attn_sm90_variant();
  return a->round_p ? var - var % KD_FA3_FORMS + 1 : var;
}
/* VAR: the variant to run. V in f16 where the engine gave the workspace
 * (without it, the cap refused it: two terms). */
template <typename T, int VAR = 0>
static int ke_attn_sm90(hipStream_t s, const void *q, const void *k,
                        const void *v, void *o, const ke__attention_desc *a) {
  if constexpr (VAR + 1 < KD_FA3_FORMS * KD_FA3_SCHEDULES)
    if (ke_attn_sm90_var(a) != VAR)
      return ke_attn_sm90<T, VAR + 1>(s, q, k, v, o, a);
  if constexpr (kd_fa3_v16<T, VAR>)
    if (a->work) return ke_attn_sm90_by_d<T, kd_half, VAR>(s, q, k, v, o, a);
  return ke_attn_sm90_by_d<T, T, VAR>(s, q, k, v, o, a);
}

/* Whether the kernel could run for dtype and a (the rows' alignment
 * aside, which ke__attention_launch checks). */
static bool ke_attn_sm90_applies(ke_dtype dtype, const ke__attention_desc *a) {
  return (dtype == KE_F16 || dtype == KE_BF16) && a->d <= 256 &&
         a->d % 8 == 0 && ke_attn_sm90_wanted() && kd_wg_available();
}

extern "C" int ke__attention_sm90_launch(void *stream, ke_dtype dtype,
                                         const void *q, const void *k,
                                         const void *v, void *o,
                                         const ke__attention_desc *a) {
#if defined(KILN_BACKEND_HIP)
  (void)stream, (void)dtype, (void)q, (void)k, (void)v, (void)o, (void)a;
  return -1;
#else
  if (!ke_attn_sm90_applies(dtype, a)) return -1;
  hipStream_t s = (hipStream_t)stream;
  if (dtype == KE_F16) return ke_attn_sm90<kd_half>(s, q, k, v, o, a);
  return ke_attn_sm90<kd_bf16>(s, q, k, v, o, a);
#endif
}

/* Whether V in f16 pays for its copy: the copy costs about 2.5 us plus
 * 1 us per MB of V on the H100, and saves about a fifth of the two-term
 * kernel's time (docs/performance.md, "bf16 attention with V in f16": at
 * B 1, H 16, D 128, S 4096 it saved 54 us for 18 us; at S 1024 it cost
 * 1.6 us). So it is taken where each kv head's rows (halved when causal)
 * number at least 2048, twice what the per-MB cost needs, and the call
 * holds at least 16 GFLOP, about three times what the fixed cost needs.
 * KILN_FA3_V16 (read once per process) overrides the choice: 1 always
 * (the tests that need the path at small sizes), 0 never. */
static bool ke_attn_sm90_v16_pays(const ke__attention_desc *a) {
  static int known; /* 1 + setting: 0 by size, 1 never, 2 always */
  int k = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (k == 0) {
    const char *e = getenv("KILN_FA3_V16");
    k = 1 + (e && strcmp(e, "0") == 0 ? 1 : e && strcmp(e, "1") == 0 ? 2 : 0);
    __atomic_store_n(&known, k, __ATOMIC_RELAXED);
  }
  if (k != 1) return k == 3;
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
  if (dtype != KE_BF16 || !ke_attn_sm90_applies(dtype, a) ||
      ke_attn_sm90_var(a) % KD_FA3_FORMS != 0 || !ke_attn_sm90_v16_pays(a))
    return 0;
  return kd_fa3_v16_bytes(a);
#endif
}
