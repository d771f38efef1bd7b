/* Decode split planning (engine/src/decode.c), shared by dense decode
 * (ke_attention's decode path) and paged attention. Internal to engine/src.
 */
#ifndef KILN_ENGINE_DECODE_H
#define KILN_ENGINE_DECODE_H

#include "engine-impl.h"
#include "contract/launch.h"

/* Key ranges per (row tile, KV head, batch or sequence) for `pairs` of them
 * over at most `keys` keys: enough blocks to fill blocks_per_mp blocks on
 * every multiprocessor, ranges of at least min_chunk keys (or the forced
 * count), at least 1 and at most `keys`. *min_chunk receives the fewest
 * keys a range should take (1 when the count is forced). mma: the call
 * takes the matrix-unit kernel, one block per multiprocessor where the
 * SIMT kernel fits two, so the ranges aim for blocks_per_mp / 2 (at least
 * 1; measured on the H100, docs/decisions/decode.md). */
int64_t ke__decode_splits(const ke_context *ctx, int64_t pairs, int64_t keys,
                          int64_t *min_chunk, int mma);

/* Dense decode: 1 when a validated ke_attention call takes it. */
int ke__attention_decode_fits(const ke_context *ctx,
                              const ke__attention_desc *a);
/* Plans the split, takes the scratch, launches (timed as
 * "attention_decode"). */
int ke__attention_decode(ke_context *ctx, ke_dtype dtype, const void *q,
                         const void *k, const void *v, void *o,
                         const ke__attention_desc *a);

#endif
