/* The dynamic scan of the split-key decode core (tile/decode.h, its
 * pipeline and fold): the blocks of a row tile take its
 * keys a step at a time from a shared counter instead of fixed ranges
 * (docs/kernels-decode.md, "Ranges taken a step at a time").
 */
#ifndef KILN_KERNELS_TILE_DECODE_DYN_H
#define KILN_KERNELS_TILE_DECODE_DYN_H

#include "tile/decode.h"

/* Most keys a dynamic scan takes (its key numbers are ints). */
#define KD_DECODE_DYN_MAX_KEYS (1 << 30)

/* Shared state of the dynamic scan: the step numbers this block has taken
 * (a ring of S + 2: the step folded, the S - 1 in flight, the one located
 * ahead, the one being reused). */
template <int S> struct kd_decode_ring {
  unsigned step[S + 2];
  unsigned last; /* thread 0's last take, read back before it reports */
};

/* The step of take t of the shared counter: steps are handed out from
 * the last one down (the short last step, with its checks, goes first, and
 * a block's slots hold steps that are not its slot numbers, which the host
 * emulation's one-block-at-a-time order would otherwise hide); `steps`
 * once they run out. */
__device__ __forceinline__ unsigned kd_decode_take_step(unsigned t,
                                                        unsigned steps) {
  return t < steps ? steps - 1 - t : steps;
}

/* kd_decode_scan over the n keys kb .. kb + n - 1 shared by every block of a
 * (rows, KV head): instead of a fixed range, the block takes one step of
 * keys at a time from the takes counter *grab (shared by the blocks of
 * those rows), S steps ahead of the one it folds, until the steps run out.
 * Blocks that are served faster take more steps, so the blocks of a launch
 * end together rather than each at its own range's end. Thread 0 takes
 * the steps (kd_decode_take_step), a barrier per step hands them out. A block
 * may get no step (its state stays empty). *grab must be 0 before the
 * first block starts and is not touched again once every block of the
 * rows has reported done (the merging block sets it back to 0). */
template <typename T, int L, int RT, int U, int S, bool FAST, bool VEC,
          class Src>
__device__ __forceinline__ void
kd_decode_scan_dyn(const Src &src, kd_decode_state<RT> &st,
                   kd_decode_stage<T, U, S> &sg, kd_decode_ring<S> &ring,
                   unsigned *grab, int64_t parts, int64_t kb, int n,
                   const int *lim, int lim_min, int d0, int nd) {
  constexpr int NG = KD_DECODE_THREADS / L;
  constexpr int STEP = U * NG;
  constexpr int R = S + 2;
  const int g = threadIdx.x / L;
  const unsigned steps = (unsigned)((n + STEP - 1) / STEP);
  /* At most 1.5 times a block's fair share: enough to even out the blocks'
   * speeds, and blocks that run one after another (the host emulation)
   * still leave several partial results to merge. */
  const unsigned cap =
      (unsigned)((3 * (int64_t)steps + 2 * parts - 1) / (2 * parts));
  unsigned pend = steps; /* thread 0: the step taken for a later slot */
  unsigned taken = 0;    /* thread 0: takes so far */
  if (threadIdx.x == 0) {
    /* Slots 0 .. S - 1 take up to S consecutive takes at once, slot S's
     * take is left in flight; a take past the end (or the cap) reads as
     * `steps`, and every later slot is past the end too. */
    const unsigned first0 = cap < (unsigned)S ? cap : (unsigned)S;
    const unsigned first = atomicAdd(grab, first0);
    taken = first0;
    pend = taken < cap ? atomicAdd(grab, 1u) : steps;
    taken += taken < cap;
    for (int i = 0; i < S; i++)
      ring.step[i] =
          (unsigned)i < first0 ? kd_decode_take_step(first + i, steps) : steps;
  }
  __syncthreads();

  int64_t loc[U];
  /* Locates the keys of the step in slot i. */
  auto locate = [&](int i) {
    const unsigned s = ring.step[i % R];
    KD_UNROLL
    for (int u = 0; u < U; u++) {
      const int key = (int)(s < steps ? s : 0) * STEP + u * NG + g;
      loc[u] = s < steps && key < n ? src.locate(kb + key) : 0;
    }
  };
  /* Copies slot i's keys (located already) into stage i % S, then locates
   * slot i + 1's. */
  auto issue = [&](int i) {
    const unsigned s = ring.step[i % R];
    if (s < steps) {
      bool valid[U];
      KD_UNROLL
      for (int u = 0; u < U; u++) valid[u] = (int)s * STEP + u * NG + g < n;
      kd_decode_issue<T, U, S, VEC>(src, sg, i % S, loc, valid, d0, nd);
    }
    locate(i + 1);
  };

  locate(0);
  for (int i = 0; i < S - 1; i++) {
    issue(i);
    kd_decode_commit();
  }
  for (int i = 0;; i++) {
    const unsigned s = ring.step[i % R];
    if (s >= steps) break; /* block-uniform: every later slot is past too */
    /* Slot i + S (read after the barrier below) gets the step taken a
     * slot ago; slot (i + S) % R was last read for slot i - 2. */
    if (threadIdx.x == 0) {
      ring.step[(i + S) % R] = kd_decode_take_step(pend, steps);
      pend = pend < steps && taken < cap ? atomicAdd(grab, 1u) : steps;
      taken++;
    }
    __syncthreads();
    issue(i + S - 1);
    kd_decode_commit();
    kd_decode_wait<S - 1>(); /* slot i's group has landed */
    kd_decode_fold_stage<T, L, RT, U, S, FAST>(st, sg, i % S, (int)s * STEP, n,
                                               lim, lim_min);
  }
  /* Every take of this thread is back before the block reports done. */
  if (threadIdx.x == 0) ring.last = pend;
  kd_decode_wait<0>();
}

#endif
