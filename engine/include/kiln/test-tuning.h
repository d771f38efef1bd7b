/* TEST ONLY: the kernels' tuning knobs, for kiln's suites (tests that
 * force a given key split, the perf suite's sweep of split sizes) and for
 * the runner, which turns the kernel settings of the environment
 * (docs/knobs.md) into these values once, on every context it opens. Not
 * part of the engine API (kiln/kernels.h does not include this). The knobs
 * belong to the context: every context starts with the defaults, and the
 * launchers read only the context's values, never the environment.
 */
#ifndef KILN_TEST_TUNING_H
#define KILN_TEST_TUNING_H

#include <stdint.h>

#include "kiln/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How ke_attention (decode shapes) and ke_paged_attention cut each KV
 * head's keys into ranges that blocks stream in parallel
 * (docs/kernels-decode.md, "Decode"). */
typedef struct ke__decode_tuning {
  int64_t blocks_per_mp;   /* blocks per multiprocessor the ranges aim to
                              fill (default 2); >= 1 */
  int64_t min_chunk;       /* fewest keys in a range (default 256); >= 1 */
  int64_t max_rows;        /* ke_attention takes the decode kernel when
                              (Hq / Hkv) * Sq is at most this (default 16);
                              0: never */
  int64_t force_splits;    /* > 0: this many ranges whatever the device
                              (at most one per key, and for paged attention
                              with a workspace at most its partitions); 0:
                              chosen from the multiprocessors (default) */
  int64_t dynamic;         /* which split calls (those that merge in the
                              launch) let the blocks of a row tile take its
                              keys a step at a time from a shared counter
                              instead of fixed ranges: bit 0 dense decode,
                              bit 1 paged attention (default 1: dense) */
  int64_t stages;          /* depth of the copy pipeline for 16-bit K/V
                              with aligned rows: 3 or 4; 0 (default): 4
                              for dense bf16, 3 otherwise (measured,
                              docs/decisions/decode.md) */
  int64_t matrix;          /* 2 or 3 (default 2): 16-bit decode calls that
                              the matrix-unit kernels can take
                              (docs/kernels-decode.md, "Decode on the matrix
                              units") run there with this pipeline depth;
                              0: the SIMT kernels only */
} ke__decode_tuning;

void ke__decode_tuning_defaults(ke__decode_tuning *t);
int ke__decode_tuning_get(const ke_context *ctx, ke__decode_tuning *t);
/* NULL restores the defaults; a value out of range is KE_EINVAL. */
int ke__decode_tuning_set(ke_context *ctx, const ke__decode_tuning *t);

/* Which kernel ke_attention's TILED 16-bit calls take on a Hopper device
 * (kernels/attention_sm90.hip, docs/kernels-attention.md). */
typedef struct ke__attention_tuning {
  int64_t hopper; /* 1 (default): the Hopper (wgmma) kernel where it
                     applies; 0: the mma.sync kernel instead, for
                     bisecting (KILN_HOPPER_ATTN=0) */
  int64_t v16;    /* bf16 V copied to f16 for the Hopper kernel: -1
                     (default) where it pays by size, 0 never, 1 always
                     (KILN_FA3_V16) */
} ke__attention_tuning;

void ke__attention_tuning_defaults(ke__attention_tuning *t);
int ke__attention_tuning_get(const ke_context *ctx, ke__attention_tuning *t);
/* NULL restores the defaults; a value out of range is KE_EINVAL. */
int ke__attention_tuning_set(ke_context *ctx, const ke__attention_tuning *t);

#ifdef __cplusplus
}
#endif
#endif
