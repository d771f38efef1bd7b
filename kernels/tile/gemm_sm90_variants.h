/* The Hopper GEMM's configurations (kernels/tile/gemm_sm90.h, kd_gemm_sm90_cfg)
 * that the engine (gemm_sm90.hip), its emulated test
 * (tests/kernels/wgmma-gemm.cc) and its measuring tool
 * (dev/gemm-hopper.cu) share: one list, so that the test runs the
 * variants that are measured, and the engine picks among them by name.
 * Names: tile columns, ring slots, mode, promotion interval in slabs of
 * 64 k, then what differs from the defaults (L2 group of 8 tile rows).
 */
#ifndef KILN_KERNELS_TILE_GEMM_SM90_VARIANTS_H
#define KILN_KERNELS_TILE_GEMM_SM90_VARIANTS_H

#include "tile/gemm_sm90_launch.h"

/* 128 x 256 tiles: serial promotion every 1, 2 or 4 slabs; every 2 with
 * the tiles in L2 groups of 4 or 16 tile rows, with the consumers
 * staggered, with paired stores (groups of 16), and without its epilogue
 * (measuring only); overlapped over 64-column chunks; unpromoted
 * (measuring only). */
typedef kd_gemm_sm90_cfg<256, 4> kd_gemm_sm90_v256_e1;
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_SERIAL, 2> kd_gemm_sm90_v256_e2;
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_SERIAL, 4> kd_gemm_sm90_v256_e4;
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_SERIAL, 2, 4> kd_gemm_sm90_v256_e2_g4;
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_SERIAL, 2, 16> kd_gemm_sm90_v256_e2_g16;
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_SERIAL, 2, 8, KD_GEMM_SM90_STAGGER>
    kd_gemm_sm90_v256_e2_stagger;
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_SERIAL, 2, 16, KD_GEMM_SM90_STAGGER>
    kd_gemm_sm90_v256_e2_g16_stagger;
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_SERIAL, 2, 8, KD_GEMM_SM90_NO_STORE>
    kd_gemm_sm90_v256_e2_nostore;
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_SERIAL, 2, 16, KD_GEMM_SM90_VEC_STORE>
    kd_gemm_sm90_v256_e2_g16_vec;
/* The same with the consumers' turns in ping-pong, with the epilogue
 * through TMA stores, and both (also promoting every 3 slabs); the
 * unpromoted kernel with TMA stores (measuring only). */
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_SERIAL, 2, 16,
                  KD_GEMM_SM90_VEC_STORE | KD_GEMM_SM90_PINGPONG>
    kd_gemm_sm90_v256_e2_g16_pp;
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_SERIAL, 2, 16,
                  KD_GEMM_SM90_VEC_STORE | KD_GEMM_SM90_TMA_STORE>
    kd_gemm_sm90_v256_e2_g16_tma;
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_SERIAL, 2, 16,
                  KD_GEMM_SM90_VEC_STORE | KD_GEMM_SM90_PINGPONG | KD_GEMM_SM90_TMA_STORE>
    kd_gemm_sm90_v256_e2_g16_pp_tma;
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_SERIAL, 3, 16,
                  KD_GEMM_SM90_VEC_STORE | KD_GEMM_SM90_PINGPONG | KD_GEMM_SM90_TMA_STORE>
    kd_gemm_sm90_v256_e3_g16_pp_tma;
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_UNPROMOTED, 1, 16,
                  KD_GEMM_SM90_VEC_STORE | KD_GEMM_SM90_TMA_STORE>
    kd_gemm_sm90_v256_raw_tma;
typedef kd_gemm_sm90_cfg<256, 4, 64, KD_GEMM_SM90_OVERLAP, 1> kd_gemm_sm90_v256_ovl_e1;
typedef kd_gemm_sm90_cfg<256, 4, 64, KD_GEMM_SM90_OVERLAP, 2> kd_gemm_sm90_v256_ovl_e2;
typedef kd_gemm_sm90_cfg<256, 4, 128, KD_GEMM_SM90_UNPROMOTED> kd_gemm_sm90_v256_raw;
/* 128 x 128 tiles: overlapped promotion every 1, 2 or 3 slabs, serial
 * every slab. */
typedef kd_gemm_sm90_cfg<128, 6, 128, KD_GEMM_SM90_OVERLAP, 1> kd_gemm_sm90_v128_ovl_e1;
typedef kd_gemm_sm90_cfg<128, 6, 128, KD_GEMM_SM90_OVERLAP, 2> kd_gemm_sm90_v128_ovl_e2;
typedef kd_gemm_sm90_cfg<128, 6, 128, KD_GEMM_SM90_OVERLAP, 3> kd_gemm_sm90_v128_ovl_e3;
typedef kd_gemm_sm90_cfg<128, 6> kd_gemm_sm90_v128_e1;
/* 128 x 128 with the epilogue through TMA stores: overlapped every 2
 * slabs; serial every 2 with the consumers in ping-pong. */
typedef kd_gemm_sm90_cfg<128, 6, 128, KD_GEMM_SM90_OVERLAP, 2, KD_GEMM_GROUP_M,
                  KD_GEMM_SM90_VEC_STORE | KD_GEMM_SM90_TMA_STORE>
    kd_gemm_sm90_v128_ovl_e2_tma;
typedef kd_gemm_sm90_cfg<128, 6, 128, KD_GEMM_SM90_SERIAL, 2, KD_GEMM_GROUP_M,
                  KD_GEMM_SM90_VEC_STORE | KD_GEMM_SM90_PINGPONG | KD_GEMM_SM90_TMA_STORE>
    kd_gemm_sm90_v128_e2_pp_tma;

/* Every variant with its tag, for a sweep: X(config, "tag"). */
#define KD_GEMM_SM90_VARIANTS(X)                                                  \
  X(kd_gemm_sm90_v256_e1, "256s4-serial-e1")                                      \
  X(kd_gemm_sm90_v256_e2, "256s4-serial-e2")                                      \
  X(kd_gemm_sm90_v256_e4, "256s4-serial-e4")                                      \
  X(kd_gemm_sm90_v256_e2_g4, "256s4-serial-e2-g4")                                \
  X(kd_gemm_sm90_v256_e2_g16, "256s4-serial-e2-g16")                              \
  X(kd_gemm_sm90_v256_e2_stagger, "256s4-serial-e2-stagger")                      \
  X(kd_gemm_sm90_v256_e2_g16_stagger, "256s4-serial-e2-g16-stagger")              \
  X(kd_gemm_sm90_v256_e2_nostore, "256s4-serial-e2-nostore")                      \
  X(kd_gemm_sm90_v256_e2_g16_vec, "256s4-serial-e2-g16-vec")                      \
  X(kd_gemm_sm90_v256_e2_g16_pp, "256s4-serial-e2-g16-vec-pp")                    \
  X(kd_gemm_sm90_v256_e2_g16_tma, "256s4-serial-e2-g16-tma")                      \
  X(kd_gemm_sm90_v256_e2_g16_pp_tma, "256s4-serial-e2-g16-pp-tma")                \
  X(kd_gemm_sm90_v256_e3_g16_pp_tma, "256s4-serial-e3-g16-pp-tma")                \
  X(kd_gemm_sm90_v256_raw_tma, "256s4-unpromoted-tma")                            \
  X(kd_gemm_sm90_v256_ovl_e1, "256s4-ovl64-e1")                                   \
  X(kd_gemm_sm90_v256_ovl_e2, "256s4-ovl64-e2")                                   \
  X(kd_gemm_sm90_v128_ovl_e1, "128s6-ovl-e1")                                     \
  X(kd_gemm_sm90_v128_ovl_e2, "128s6-ovl-e2")                                     \
  X(kd_gemm_sm90_v128_ovl_e3, "128s6-ovl-e3")                                     \
  X(kd_gemm_sm90_v128_e1, "128s6-serial-e1")                                      \
  X(kd_gemm_sm90_v128_ovl_e2_tma, "128s6-ovl-e2-tma")                             \
  X(kd_gemm_sm90_v128_e2_pp_tma, "128s6-serial-e2-pp-tma")                        \
  X(kd_gemm_sm90_v256_raw, "256s4-unpromoted")

#endif
