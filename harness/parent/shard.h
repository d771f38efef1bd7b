/* Sharding a run across machines (prefix kh_shard): which of the selected
 * tests this kiln runs when it is shard K of N. From --shard K/N, Bazel's
 * TEST_TOTAL_SHARDS/TEST_SHARD_INDEX, or a Slurm job array, in that order.
 */
#ifndef KILN_PARENT_SHARD_H
#define KILN_PARENT_SHARD_H

#include "registry.h"
#include "base.h"

typedef struct kh_shard {
  int index;                /* 1..count */
  int count;                /* 0: not sharded */
  const char *source;       /* "--shard", "bazel", "slurm" */
  const char *method;       /* "hash" or "durations" */
  int selected;             /* tests this shard runs */
  int total;                /* tests selected before sharding */
} kh_shard;

/* Decides K/N from the flag (NULL: none) or the environment. count stays 0
 * when nothing asks for sharding. Errors name the bad value and where it
 * came from. */
int kh_shard_resolve(const char *flag, kh_shard *sh, kh_err *err);

/* Clears chosen[i] for the selected tests of other shards. durations: a
 * previous report.yaml (or run folder) to balance shards by its wall times
 * instead of hashing test ids; NULL hashes. */
int kh_shard_apply(kh_shard *sh, const kh_registry *reg, unsigned char *chosen,
                   const char *durations, kh_err *err);

/* Rendezvous hash: the shard (0..count-1) of a test id; exposed for tests. */
int kh_shard_of(const char *id, int count);

/* Bazel asks a test binary that understands sharding to touch this file. */
void kh_shard_bazel_ack(void);

#endif
