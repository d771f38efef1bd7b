/* Sharding a run across machines: which of the selected tests this kiln
 * runs as shard K of N, from --shard K/N, Bazel's TEST_TOTAL_SHARDS and
 * TEST_SHARD_INDEX, or a Slurm job array, first found wins. By default each
 * test id goes to the shard with the highest hash of (id, shard) --
 * rendezvous hashing -- so adding or removing a test moves no other test,
 * and changing N moves only about 1/N of them.
 * With a previous report, shards are balanced by its durations instead
 * (longest first onto the least-loaded shard), deterministic for the same
 * report and selection on every machine.
 */
#include "run.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* ---- Which shard am I --------------------------------------------------- */

static int env_int(const char *name, long long lo, long long hi,
                       long long *out, int *present, kh_err *err) {
  const char *v = getenv(name);
  *present = v && *v;
  if (!*present) return 0;
  if (kh_parse_ll(v, lo, hi, out) != 0)
    return kh_errf(err, "environment %s=%s: expected an integer in %lld..%lld",
                    name, v, lo, hi);
  return 0;
}

static int shard_flag(const char *flag, krun_shard *sh, kh_err *err) {
  const char *slash = strchr(flag, '/');
  long long k, n;
  char *kpart = kh_strndup(flag, slash ? (size_t)(slash - flag) : strlen(flag));
  int bad = !slash || kh_parse_ll(kpart, 1, 100000, &k) != 0 ||
            kh_parse_ll(slash + 1, 1, 100000, &n) != 0 || k > n;
  free(kpart);
  if (bad)
    return kh_errf(err, "--shard %s: expected K/N with 1 <= K <= N (e.g. 2/3)",
                    flag);
  sh->index = (int)k, sh->count = (int)n, sh->source = "--shard";
  return 0;
}

/* Bazel: TEST_SHARD_INDEX counts from 0. */
static int shard_bazel(krun_shard *sh, int *found, kh_err *err) {
  long long n, k;
  int has_n, has_k;
  if (env_int("TEST_TOTAL_SHARDS", 1, 100000, &n, &has_n, err) != 0) return -1;
  *found = has_n;
  if (!has_n) return 0;
  if (env_int("TEST_SHARD_INDEX", 0, n - 1, &k, &has_k, err) != 0) return -1;
  if (!has_k)
    return kh_errf(err, "environment TEST_TOTAL_SHARDS=%lld without TEST_SHARD_INDEX", n);
  sh->index = (int)k + 1, sh->count = (int)n, sh->source = "bazel";
  return 0;
}

/* Slurm: task ids run MIN..MAX by STEP (`--array=M-N[:S]`), so the shard is
 * (ID - MIN) / STEP. A list of ids (`--array=1,4,9`) cannot be mapped onto
 * 0..COUNT-1 from the environment and is refused. */
static int shard_slurm(krun_shard *sh, int *found, kh_err *err) {
  long long id, count, min = 0, max = 0, step = 1;
  int has_id, has_count, has_min, has_max, has_step;
  if (env_int("SLURM_ARRAY_TASK_COUNT", 1, 100000, &count, &has_count, err) ||
      env_int("SLURM_ARRAY_TASK_ID", 0, 1LL << 40, &id, &has_id, err) ||
      env_int("SLURM_ARRAY_TASK_MIN", 0, 1LL << 40, &min, &has_min, err) ||
      env_int("SLURM_ARRAY_TASK_MAX", 0, 1LL << 40, &max, &has_max, err) ||
      env_int("SLURM_ARRAY_TASK_STEP", 1, 1LL << 40, &step, &has_step, err))
    return -1;
  *found = has_count && has_id;
  if (!*found) return 0;
  if (has_min && has_max && (max - min) / step + 1 != count)
    return kh_errf(err, "Slurm array SLURM_ARRAY_TASK_MIN=%lld MAX=%lld STEP=%lld "
                    "but COUNT=%lld: not a range (--array=M-N[:S]); kiln cannot "
                    "number the shards", min, max, step, count);
  long long k = id - min;
  if (k < 0 || k % step != 0 || k / step >= count)
    return kh_errf(err, "SLURM_ARRAY_TASK_ID=%lld is not in the array %lld..%lld "
                    "step %lld", id, min, min + (count - 1) * step, step);
  sh->index = (int)(k / step) + 1, sh->count = (int)count, sh->source = "slurm";
  return 0;
}

int krun_shard_resolve(const char *flag, krun_shard *sh, kh_err *err) {
  memset(sh, 0, sizeof *sh);
  sh->method = "hash";
  if (flag) return shard_flag(flag, sh, err);
  int found = 0;
  if (shard_bazel(sh, &found, err) != 0) return -1;
  if (found) return 0;
  return shard_slurm(sh, &found, err);
}

void krun_shard_bazel_ack(void) {
  const char *path = getenv("TEST_SHARD_STATUS_FILE");
  if (!path || !*path || !getenv("TEST_TOTAL_SHARDS")) return;
  FILE *f = fopen(path, "a");
  if (f) fclose(f);
}

/* ---- Hash assignment ---------------------------------------------------- */

static uint64_t mix(uint64_t x) {  /* splitmix64's finaliser */
  x ^= x >> 30, x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27, x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static uint64_t fnv1a(const char *s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  return h;
}

int krun_shard_of(const char *id, int count) {
  uint64_t h = fnv1a(id), best = 0;
  int shard = 0;
  for (int k = 0; k < count; k++) {
    uint64_t score = mix(h ^ mix((uint64_t)k + 1));
    if (k == 0 || score > best) best = score, shard = k;
  }
  return shard;
}

/* ---- Duration-balanced assignment --------------------------------------- */

typedef struct load {
  int reg_index;
  double ms;
  const char *id;
} load;

static int by_ms_desc(const void *a, const void *b) {
  const load *x = a, *y = b;
  if (x->ms != y->ms) return x->ms < y->ms ? 1 : -1;
  return strcmp(x->id, y->id);
}

static int by_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sum of every record's wall time for an id (repeats and attempts). */
static double id_ms(const krep_report *rep, const char *id) {
  double ms = NAN;
  for (int i = 0; i < rep->ntests; i++) {
    if (strcmp(rep->tests[i]->id, id) != 0 || isnan(rep->tests[i]->wall_ms)) continue;
    ms = (isnan(ms) ? 0 : ms) + rep->tests[i]->wall_ms;
  }
  return ms;
}

/* Tests the old report lacks get the median of those it has. */
static void fill_unknown(load *jobs, int n) {
  double *known = kh_xmalloc(((size_t)n + 1) * sizeof *known);
  int nk = 0;
  for (int i = 0; i < n; i++)
    if (!isnan(jobs[i].ms)) known[nk++] = jobs[i].ms;
  qsort(known, (size_t)nk, sizeof *known, by_double);
  double median = nk ? known[nk / 2] : 1000.0;
  for (int i = 0; i < n; i++)
    if (isnan(jobs[i].ms)) jobs[i].ms = median;
  free(known);
}

static int balance(const krun_registry *reg, unsigned char *chosen,
                       const char *path, int *shard_of, kh_err *err) {
  krep_report rep;
  if (krep_read(path, &rep, err) != 0) {
    krep_free(&rep);
    return -1;
  }
  load *jobs = kh_xcalloc((size_t)reg->n + 1, sizeof *jobs);
  int n = 0;
  for (int i = 0; i < reg->n; i++)
    if (chosen[i])
      jobs[n] = (load){i, id_ms(&rep, reg->tests[i].id), reg->tests[i].id}, n++;
  fill_unknown(jobs, n);
  qsort(jobs, (size_t)n, sizeof *jobs, by_ms_desc);
  int count = shard_of[reg->n];
  double *load = kh_xcalloc((size_t)count, sizeof *load);
  for (int j = 0; j < n; j++) {
    int best = 0;
    for (int k = 1; k < count; k++)
      if (load[k] < load[best]) best = k;
    load[best] += jobs[j].ms;
    shard_of[jobs[j].reg_index] = best;
  }
  free(load), free(jobs);
  krep_free(&rep);
  return 0;
}

int krun_shard_apply(krun_shard *sh, const krun_registry *reg, unsigned char *chosen,
                   const char *durations, kh_err *err) {
  if (sh->count == 0 && durations)
    return kh_errf(err, "--shard-durations %s given without --shard K/N", durations);
  if (sh->count == 0) return 0;
  int *shard_of = kh_xcalloc((size_t)reg->n + 1, sizeof *shard_of);
  shard_of[reg->n] = sh->count;
  for (int i = 0; i < reg->n; i++)
    shard_of[i] = krun_shard_of(reg->tests[i].id, sh->count);
  if (durations) {
    sh->method = "durations";
    if (balance(reg, chosen, durations, shard_of, err) != 0) {
      char why[sizeof err->msg];
      snprintf(why, sizeof why, "%s", err->msg);
      free(shard_of);
      return kh_errf(err, "--shard-durations: %s", why);
    }
  }
  sh->total = sh->selected = 0;
  for (int i = 0; i < reg->n; i++) {
    if (!chosen[i]) continue;
    sh->total++;
    chosen[i] = shard_of[i] == sh->index - 1;
    sh->selected += chosen[i];
  }
  free(shard_of);
  return 0;
}
