/* Sharding a run across machines: which of the selected tests this kiln
 * runs as shard K of N, from --shard K/N, Bazel's TEST_TOTAL_SHARDS and
 * TEST_SHARD_INDEX, or a Slurm job array, first found wins. By default each
 * test id goes to the shard with the highest hash of (id, shard) --
 * rendezvous hashing -- so adding or removing a test moves no other test,
 * and changing N moves only about 1/N of them.
 * With a previous report, shards are balanced by its durations instead
 * (longest first onto the least-loaded shard), deterministic for the same
 * report and selection on every machine. A shard plan (plan.c) written
 * beforehand names each shard's tests outright: `kiln slurm` cuts the
 * shards once and every array task runs its part of that plan.
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

typedef struct timed {
  const char *id;
  double ms;
} timed;

static int by_id(const void *a, const void *b) {
  return strcmp(((const timed *)a)->id, ((const timed *)b)->id);
}

/* Each id's wall time summed over its records (repeats and attempts),
 * sorted by id, so that a suite of 10,000 looks each up in log time. */
static timed *times_of(const krep_report *rep, int *n) {
  timed *t = kh_xcalloc((size_t)rep->ntests + 1, sizeof *t);
  int k = 0;
  for (int i = 0; i < rep->ntests; i++)
    if (!isnan(rep->tests[i]->wall_ms)) t[k++] = (timed){rep->tests[i]->id, rep->tests[i]->wall_ms};
  qsort(t, (size_t)k, sizeof *t, by_id);
  *n = 0;
  for (int i = 0; i < k; i++) {
    if (*n && strcmp(t[*n - 1].id, t[i].id) == 0) t[*n - 1].ms += t[i].ms;
    else t[(*n)++] = t[i];
  }
  return t;
}

static double id_ms(const timed *t, int n, const char *id) {
  timed key = {id, 0};
  const timed *hit = bsearch(&key, t, (size_t)n, sizeof *t, by_id);
  return hit ? hit->ms : NAN;
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

/* Longest first onto the least-loaded shard; ties go to the lower shard,
 * equal times in id order, so every machine cuts the same shards. */
static int balance(const krun_registry *reg, const unsigned char *chosen, int count,
                   const char *path, int *shard_of, double *ms_of, kh_err *err) {
  krep_report rep;
  if (krep_read(path, &rep, err) != 0) {
    krep_free(&rep);
    return -1;
  }
  load *jobs = kh_xcalloc((size_t)reg->n + 1, sizeof *jobs);
  int n = 0, ntimed;
  timed *old = times_of(&rep, &ntimed);
  for (int i = 0; i < reg->n; i++)
    if (chosen[i])
      jobs[n] = (load){i, id_ms(old, ntimed, reg->tests[i].id), reg->tests[i].id}, n++;
  free(old);
  fill_unknown(jobs, n);
  qsort(jobs, (size_t)n, sizeof *jobs, by_ms_desc);
  double *load = kh_xcalloc((size_t)count, sizeof *load);
  for (int j = 0; j < n; j++) {
    int best = 0;
    for (int k = 1; k < count; k++)
      if (load[k] < load[best]) best = k;
    load[best] += jobs[j].ms;
    shard_of[jobs[j].reg_index] = best;
    if (ms_of) ms_of[jobs[j].reg_index] = jobs[j].ms;
  }
  free(load), free(jobs);
  krep_free(&rep);
  return 0;
}

int krun_shard_assign(const krun_registry *reg, const unsigned char *chosen, int count,
                      const char *durations, int *shard_of, double *ms_of, kh_err *err) {
  for (int i = 0; i < reg->n; i++) {
    shard_of[i] = chosen[i] ? krun_shard_of(reg->tests[i].id, count) : -1;
    if (ms_of) ms_of[i] = NAN;
  }
  if (!durations) return 0;
  if (balance(reg, chosen, count, durations, shard_of, ms_of, err) != 0) {
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    return kh_errf(err, "--shard-durations: %s", why);
  }
  return 0;
}

/* A plan names every shard's tests: this shard's are chosen, whatever the
 * selection says, and each must be one the runner has. */
static int apply_plan(krun_shard *sh, const krun_registry *reg, unsigned char *chosen,
                      const krun_plan *plan, kh_err *err) {
  if (sh->count != plan->count)
    return kh_errf(err, "%s: a plan of %d shards, but this is shard %d/%d (from %s)",
                   plan->path, plan->count, sh->index, sh->count, sh->source);
  memset(chosen, 0, (size_t)reg->n);
  sh->selected = 0;
  for (int t = 0; t < plan->ntests; t++) {
    if (plan->tests[t].shard != sh->index) continue;
    int found = -1;
    for (int i = 0; i < reg->n && found < 0; i++)
      if (strcmp(reg->tests[i].id, plan->tests[t].id) == 0) found = i;
    if (found < 0)
      return kh_errf(err, "%s: shard %d lists test %s, which the runner does not have "
                     "(a different build?)", plan->path, sh->index, plan->tests[t].id);
    sh->selected += !chosen[found];
    chosen[found] = 1;
  }
  sh->total = plan->ntests;
  sh->method = plan->method;
  return 0;
}

int krun_shard_apply(krun_shard *sh, const krun_registry *reg, unsigned char *chosen,
                     const char *durations, const krun_plan *plan, kh_err *err) {
  if (sh->count == 0 && durations)
    return kh_errf(err, "--shard-durations %s given without --shard K/N", durations);
  if (sh->count == 0 && plan)
    return kh_errf(err, "--shard-plan %s: which shard? (--shard K/N or a Slurm array "
                   "task)", plan->path);
  if (sh->count == 0) return 0;
  if (plan) return apply_plan(sh, reg, chosen, plan, err);
  int *shard_of = kh_xcalloc((size_t)reg->n + 1, sizeof *shard_of);
  if (krun_shard_assign(reg, chosen, sh->count, durations, shard_of, NULL, err) != 0) {
    free(shard_of);
    return -1;
  }
  if (durations) sh->method = "durations";
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
