/* Shard plans: every shard's tests, cut once (shard.c's assignment) and
 * written down in the protocol's record syntax, one `plan` record then one
 * `test` record per test:
 *
 *   plan format=1 count=4 method=durations durations=PATH git=REV repeat=1 tests=120
 *   test id=softmax/causal suite=softmax tags=gpu shard=2
 *
 * `kiln run --shard-plan FILE` runs one shard of it; `kiln slurm` writes
 * one per round and its merge reads them back to know which tests each
 * array task owed, so a task that died leaves lost tests, not missing ones.
 */
#include "run.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "records.h"

#define PLAN_FORMAT 1

typedef struct prec {
  long long format, count;
  const char *method, *durations, *git;
  long long repeat, tests;
} prec;

typedef struct trec {
  const char *id, *suite, *tags;
  long long shard;
  double ms;
} trec;

#define K(s, name, type) {#name, type, offsetof(s, name), 0}
static const kp_key plan_keys[] = {
    K(prec, format, KP_INT), K(prec, count, KP_INT), K(prec, method, KP_STR),
    K(prec, durations, KP_STR), K(prec, git, KP_STR), K(prec, repeat, KP_INT),
    K(prec, tests, KP_INT)};
static const kp_key test_keys[] = {K(trec, id, KP_STR), K(trec, suite, KP_STR),
                                   K(trec, tags, KP_STR), K(trec, shard, KP_INT),
                                   K(trec, ms, KP_DOUBLE)};
static const kp_rdesc rec_plan = {"plan", plan_keys, 7}, rec_test = {"test", test_keys, 5};

int krun_plan_make(const krun_registry *reg, const unsigned char *chosen, int count,
                   const char *durations, int repeat, krun_plan *p, kh_err *err) {
  memset(p, 0, sizeof *p);
  int *shard_of = kh_xcalloc((size_t)reg->n + 1, sizeof *shard_of);
  double *ms_of = kh_xcalloc((size_t)reg->n + 1, sizeof *ms_of);
  if (krun_shard_assign(reg, chosen, count, durations, shard_of, ms_of, err) != 0) {
    free(shard_of), free(ms_of);
    return -1;
  }
  p->count = count;
  p->method = durations ? "durations" : "hash";
  p->durations = kh_strdup(durations);
  p->git = krun_git_rev();
  p->repeat = repeat;
  p->tests = kh_xcalloc((size_t)reg->n + 1, sizeof *p->tests);
  for (int i = 0; i < reg->n; i++) {
    if (shard_of[i] < 0) continue;
    const krun_test *t = &reg->tests[i];
    p->tests[p->ntests++] = (krun_plan_test){kh_strdup(t->id), kh_strdup(t->suite),
                                             kh_strdup(t->tags), shard_of[i] + 1, ms_of[i]};
  }
  free(shard_of), free(ms_of);
  return 0;
}

int krun_plan_write(const krun_plan *p, const char *path, kh_err *err) {
  kh_buf b = {0};
  kp_record_out *out = kh_xmalloc(sizeof *out);
  prec head = {PLAN_FORMAT, p->count, p->method, p->durations, p->git, p->repeat,
               p->ntests};
  kp_encode(out, &rec_plan, &head);
  kh_buf_addf(&b, "%.*s\n", (int)out->len, out->buf);
  for (int i = 0; i < p->ntests; i++) {
    const krun_plan_test *t = &p->tests[i];
    trec r = {t->id, t->suite, t->tags, t->shard, t->ms};
    kp_encode(out, &rec_test, &r);
    kh_buf_addf(&b, "%.*s\n", (int)out->len, out->buf);
  }
  free(out);
  int rc = kh_write_atomic(path, b.data, b.len);
  kh_buf_free(&b);
  return rc ? kh_errf(err, "plan %s: %s", path, strerror(errno)) : 0;
}

static int bad(kh_err *err, const char *path, int line, const char *what) {
  return kh_errf(err, "%s:%d: %s", path, line, what);
}

int krun_plan_read(const char *path, krun_plan *p, kh_err *err) {
  memset(p, 0, sizeof *p);
  p->path = kh_strdup(path);
  char *text;
  if (kh_read_file(path, 256u << 20, &text, NULL) != 0)
    return kh_errf(err, "plan %s: %s", path, strerror(errno));
  int line = 0, cap = 0, rc = 0, head = 0;
  char *save = NULL;
  for (char *l = strtok_r(text, "\n", &save); l && rc == 0; l = strtok_r(NULL, "\n", &save)) {
    line++;
    kp_record r;
    char why[256] = "";
    const char *perr = NULL;
    if (kp_parse(l, &r, &perr) != 0) {
      rc = bad(err, path, line, perr ? perr : "not a record");
    } else if (strcmp(r.tag, "plan") == 0) {
      prec h;
      if (kp_decode(&rec_plan, r.fields, r.nfields, &h, why, sizeof why) != 0)
        rc = bad(err, path, line, why);
      else if (h.format != PLAN_FORMAT || h.count < 1 || h.count > 100000)
        rc = bad(err, path, line, "not a plan this kiln reads (format 1, 1..100000 shards)");
      else {
        head = 1;
        p->count = (int)h.count;
        p->method = h.method && strcmp(h.method, "durations") == 0 ? "durations" : "hash";
        p->durations = kh_strdup(h.durations);
        p->git = kh_strdup(h.git);
        p->repeat = h.repeat > 0 ? (int)h.repeat : 1;
      }
    } else if (strcmp(r.tag, "test") == 0 && head) {
      trec t;
      if (kp_decode(&rec_test, r.fields, r.nfields, &t, why, sizeof why) != 0 || !t.id ||
          t.shard < 1 || t.shard > p->count) {
        rc = bad(err, path, line, *why ? why : "a test needs an id and a shard in 1..count");
        break;
      }
      if (p->ntests == cap) {
        cap = cap ? 2 * cap : 256;
        p->tests = kh_xrealloc(p->tests, (size_t)cap * sizeof *p->tests);
      }
      p->tests[p->ntests++] = (krun_plan_test){kh_strdup(t.id), kh_strdup(t.suite ? t.suite : ""),
                                               kh_strdup(t.tags ? t.tags : ""), (int)t.shard,
                                               kp_get(&r, "ms") ? t.ms : NAN};
    } else {
      rc = bad(err, path, line, head ? "unknown record" : "no plan record first");
    }
  }
  free(text);
  if (rc == 0 && !head) rc = kh_errf(err, "plan %s: empty", path);
  return rc;
}

void krun_plan_free(krun_plan *p) {
  for (int i = 0; i < p->ntests; i++)
    free(p->tests[i].id), free(p->tests[i].suite), free(p->tests[i].tags);
  free(p->tests), free(p->path), free(p->durations), free(p->git);
  memset(p, 0, sizeof *p);
}
