/* The split-key decode kernels' launch options beyond contract/launch.h's
 * ke__decode_split and ke__paged_attention_args (kernels/attention_decode.hip,
 * kernels/paged_attention.hip, the core in kernels/tile/decode.h): how the
 * blocks of a row tile share its keys and how deep the copy pipeline is.
 * Internal to engine/src and the kernels.
 */
#ifndef KILN_KERNELS_CONTRACT_DECODE_H
#define KILN_KERNELS_CONTRACT_DECODE_H

#include "contract/launch.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ke__decode_ext {
  /* Non-NULL (split launches that merge through counters only): the blocks
   * of a row tile take its keys a step at a time from grabs[tile] (zero
   * between launches, set back by the merging block) instead of each
   * streaming a fixed range (tile/decode.h, kd_decode_scan_dyn). One counter
   * per entry of the split's counters, in the same order. */
  unsigned *grabs;
  /* Copy pipeline depth for 16-bit K/V with 16-byte copies: 3 or 4 (any
   * other value: 3); f32 and element loads always take 3. */
  int stages;
  /* 2 or 3: calls that the matrix-unit kernels take (tile/decode_mma.h:
   * 16-bit K/V, aligned rows, D <= 128, every row seeing the same keys, a
   * GPU with mma.sync) run there, with this pipeline depth, and fixed
   * ranges; 0: the SIMT kernels only. */
  int mma;
} ke__decode_ext;

/* ke__attention_decode_launch with the options (NULL: fixed ranges, 3
 * stages, SIMT only). */
int ke__attention_decode_launch_ext(void *stream, ke_dtype dtype,
                                    const void *q, const void *k,
                                    const void *v, void *o,
                                    const ke__attention_desc *desc,
                                    const ke__decode_split *split,
                                    const ke__decode_ext *ext);
/* ke__paged_attention_launch with the options (grabs only with counters). */
int ke__paged_attention_launch_ext(void *stream,
                                   const ke__paged_attention_args *args,
                                   const ke__decode_ext *ext);

/* Whether a launch with the matrix knob `matrix` takes the matrix-unit
 * kernel (tile/decode_mma.h), which holds one block per multiprocessor
 * where the SIMT kernel holds two: the split aims for half the blocks. */
int ke__attention_decode_takes_mma(ke_dtype dtype, const void *k,
                                   const void *v,
                                   const ke__attention_desc *desc,
                                   int matrix);
int ke__paged_attention_takes_mma(const ke__paged_attention_args *args,
                                  int matrix);

#ifdef __cplusplus
}
#endif
#endif
