/* The configurations of the Hopper attention kernel (tile/attn_sm90.h): one
 * table of schedules and forms of P, from which the engine
 * (attention_sm90.hip) takes the default schedule in two forms and the
 * measuring tool dev/attn-pterms.cu builds every variant. Templates only:
 * a translation unit compiles the variants it names and no other.
 *
 * A schedule per D, chosen by the H100 (docs/decisions/attention.md,
 * "Ping-pong consumers"): PP at D 64, 128 and 256, 1.5-4 %
 * faster than NOPP in the same call (D 192, not timed, follows D 64's
 * two-loop shape); the others are timing variants.
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
 * Each in three forms of P: the kernel's (KD_ATTN_SM90_PK: P rounded once to
 * f16, its weights raised by 2^15: f16 as it is; bf16 against V converted to
 * f16, kd_attn_sm90<T, C, TV>, where the engine gave the workspace, else two
 * bf16 terms), "p1" (one term of the input's type, P in [0, 1], as round_p
 * asks; bf16 misses the suite's default tolerance, docs/kernels-attention.md)
 * and "p2" (two 16-bit terms, the kernel before P in f16; timing only). */
#ifndef KILN_KERNELS_TILE_ATTN_SM90_CFG_H
#define KILN_KERNELS_TILE_ATTN_SM90_CFG_H

#include <type_traits>

#include "tile/attn_sm90_launch.h"

/* The schedules: enum, and the name the measuring tool gives it. */
#define KD_ATTN_SM90_SCHEDULE_MAP(X)                                           \
  X(DEFAULT, "default")                                                        \
  X(NOPP, "nopp")                                                              \
  X(PP, "pp")                                                                  \
  X(PP_SERIAL, "pp-serial")                                                    \
  X(PP64, "pp64")                                                              \
  X(SERIAL, "serial")
enum {
#define KD_ATTN_SM90_SCHEDULE_ENUM(e, name) KD_ATTN_SM90_##e,
  KD_ATTN_SM90_SCHEDULE_MAP(KD_ATTN_SM90_SCHEDULE_ENUM)
#undef KD_ATTN_SM90_SCHEDULE_ENUM
      KD_ATTN_SM90_SCHEDULES
};
/* The default schedule of each padded D. */
constexpr int kd_attn_sm90_default_sched(int dp) {
  return dp == 64    ? KD_ATTN_SM90_PP
         : dp == 128 ? KD_ATTN_SM90_PP
         : dp == 192 ? KD_ATTN_SM90_PP
                     : KD_ATTN_SM90_PP;
}
/* A variant: VAR = KD_ATTN_SM90_FORMS schedule + the form of P, which is its
 * kd_attn_sm90_cfg PTERMS. */
enum { KD_ATTN_SM90_PK, KD_ATTN_SM90_P1, KD_ATTN_SM90_P2, KD_ATTN_SM90_FORMS };
constexpr int kd_attn_sm90_sched(int var, int dp) {
  return var / KD_ATTN_SM90_FORMS == KD_ATTN_SM90_DEFAULT
             ? kd_attn_sm90_default_sched(dp)
             : var / KD_ATTN_SM90_FORMS;
}
constexpr bool kd_attn_sm90_pp(int var, int dp) {
  return kd_attn_sm90_sched(var, dp) == KD_ATTN_SM90_SERIAL
             ? kd_attn_sm90_default_sched(dp) != KD_ATTN_SM90_NOPP
             : kd_attn_sm90_sched(var, dp) != KD_ATTN_SM90_NOPP;
}
constexpr bool kd_attn_sm90_serial(int var, int dp) {
  return kd_attn_sm90_sched(var, dp) == KD_ATTN_SM90_SERIAL ||
         kd_attn_sm90_sched(var, dp) == KD_ATTN_SM90_PP_SERIAL;
}
template <int VAR> constexpr int kd_attn_sm90_pt = VAR % KD_ATTN_SM90_FORMS;
/* V in f16 for bf16 T: the kernel's form of P, given a workspace. */
template <typename T, int VAR>
constexpr bool kd_attn_sm90_v16 =
    std::is_same<T, kd_bf16>::value &&VAR % KD_ATTN_SM90_FORMS ==
    KD_ATTN_SM90_PK;
template <int VAR = 0>
using kd_attn_sm90_d64 = kd_attn_sm90_cfg<64, 128, 3, kd_attn_sm90_pt<VAR>,
                                          !kd_attn_sm90_serial(VAR, 64), true,
                                          kd_attn_sm90_pp(VAR, 64)>;
template <int VAR = 0>
using kd_attn_sm90_d128 = std::conditional_t<
    kd_attn_sm90_sched(VAR, 128) == KD_ATTN_SM90_PP64,
    kd_attn_sm90_cfg<128, 64, 4, kd_attn_sm90_pt<VAR>, true, true, true>,
    kd_attn_sm90_cfg<128, 128, 2, kd_attn_sm90_pt<VAR>,
                     !kd_attn_sm90_serial(VAR, 128), false,
                     kd_attn_sm90_pp(VAR, 128)>>;
template <int VAR = 0>
using kd_attn_sm90_d192 = kd_attn_sm90_cfg<192, 64, 2, kd_attn_sm90_pt<VAR>,
                                           !kd_attn_sm90_serial(VAR, 192), true,
                                           kd_attn_sm90_pp(VAR, 192)>;
template <int VAR = 0>
using kd_attn_sm90_d256 =
    kd_attn_sm90_cfg<256, 64, 2, kd_attn_sm90_pt<VAR>, false, false,
                     kd_attn_sm90_pp(VAR, 256)>;

/* Variant VAR with V's tiles in TV, by D (at most 256, checked by the
 * caller); the workspace is a->work. */
template <typename T, typename TV, int VAR>
static int kd_attn_sm90_by_d(hipStream_t s, const void *q, const void *k,
                             const void *v, void *o,
                             const ke__attention_desc *a) {
  void *w = a->work;
  if (a->d <= 64)
    return kd_attn_sm90_run<T, kd_attn_sm90_d64<VAR>, TV>(s, q, k, v, o, a, w);
  if (a->d <= 128)
    return kd_attn_sm90_run<T, kd_attn_sm90_d128<VAR>, TV>(s, q, k, v, o, a, w);
  if (a->d <= 192)
    return kd_attn_sm90_run<T, kd_attn_sm90_d192<VAR>, TV>(s, q, k, v, o, a, w);
  return kd_attn_sm90_run<T, kd_attn_sm90_d256<VAR>, TV>(s, q, k, v, o, a, w);
}

#endif
