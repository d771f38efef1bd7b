/* `kiln report merge A B ...`: one run report from the reports of a sharded
 * run (or of runs of different selections). The inputs are read into the
 * model and their test runs copied into a new one whole, keys this kiln
 * does not know included; each gets `merged_from: I`, the index of its
 * input in run.merged_from, because its log path is relative to that
 * input's run folder.
 */
#include "report-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Do the inputs belong together? ------------------------------------------- */

static const char *git_of(const krep_report *r) { return r->git ? r->git : ""; }

static int check_revisions(const krep_report *reps, int n, int force, FILE *log,
                           kh_err *err) {
  for (int i = 1; i < n; i++) {
    if (strcmp(git_of(&reps[i]), git_of(&reps[0])) == 0) continue;
    if (!force)
      return kh_errf(err, "%s is from revision '%s' but %s is from '%s' "
                     "(--force merges them anyway)", reps[i].path, git_of(&reps[i]),
                     reps[0].path, git_of(&reps[0]));
    fprintf(log, "kiln: warning: merging revisions '%s' and '%s' (--force)\n",
            git_of(&reps[0]), git_of(&reps[i]));
  }
  return 0;
}

static int same_run(const krep_test *a, const krep_test *b) {
  return a->repeat == b->repeat && a->attempt == b->attempt && strcmp(a->id, b->id) == 0;
}

/* A test run that two inputs both hold means overlapping shards. */
static int check_duplicates(const krep_report *reps, int n, kh_err *err) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      for (int a = 0; a < reps[i].ntests; a++)
        for (int b = 0; b < reps[j].ntests; b++)
          if (same_run(reps[i].tests[a], reps[j].tests[b]))
            return kh_errf(err, "%s (repeat %d, attempt %d) is in both %s and %s: "
                           "the reports overlap", reps[i].tests[a]->id,
                           reps[i].tests[a]->repeat, reps[i].tests[a]->attempt,
                           reps[i].path, reps[j].path);
  return 0;
}

static int distinct_ids(const krep_report *reps, int n) {
  int count = 0;
  for (int i = 0; i < n; i++)
    for (int a = 0; a < reps[i].ntests; a++) {
      int seen = 0;
      for (int j = 0; j <= i && !seen; j++)
        for (int b = 0; b < (j == i ? a : reps[j].ntests) && !seen; b++)
          seen = strcmp(reps[j].tests[b]->id, reps[i].tests[a]->id) == 0;
      count += !seen;
    }
  return count;
}

/* Sharded inputs: every shard of one N exactly once, and together every
 * test the shards were cut from (gaps show as a shortfall). */
static int check_shards(const krep_report *reps, int n, kh_err *err) {
  int sharded = 0, not_run = 0;
  for (int i = 0; i < n; i++) sharded += reps[i].shard.count > 0;
  if (sharded == 0) return 0;
  if (sharded != n) return kh_errf(err, "some of the reports are shards and some are not");
  int count = reps[0].shard.count;
  for (int k = 1; k <= count; k++) {
    int have = 0;
    for (int i = 0; i < n; i++) {
      if (reps[i].shard.count != count)
        return kh_errf(err, "%s is shard %d/%d but %s is a shard of %d", reps[i].path,
                       reps[i].shard.index, reps[i].shard.count, reps[0].path, count);
      have += reps[i].shard.index == k;
    }
    if (have != 1)
      return kh_errf(err, "shard %d/%d is %s", k, count,
                     have ? "given more than once" : "missing");
  }
  for (int i = 0; i < n; i++) not_run += reps[i].not_run;
  int ids = distinct_ids(reps, n);
  if (reps[0].shard.total && ids + not_run < reps[0].shard.total)
    return kh_errf(err, "the shards selected %d tests but hold %d: a shard lost "
                   "tests (interrupted?)", reps[0].shard.total, ids);
  return 0;
}

/* ---- Copying into the merged model --------------------------------------------- */

static krep_any *copy_any(krep_report *out, const krep_any *a) {
  krep_any *c = krep__alloc(out->pool, sizeof *c);
  *c = *a;
  c->text = krep_str(out, a->text);
  c->keys = krep__alloc(out->pool, (size_t)(a->n + 1) * sizeof *c->keys);
  c->items = krep__alloc(out->pool, (size_t)(a->n + 1) * sizeof *c->items);
  for (int i = 0; i < a->n; i++) {
    c->keys[i] = a->kind == KREP_MAP ? krep_str(out, a->keys[i]) : NULL;
    c->items[i] = copy_any(out, a->items[i]);
  }
  return c;
}

static void copy_test(krep_report *out, const krep_test *s, int from) {
  krep_test *t = krep_test_new(out, s->id, s->suite, s->tags);
  int seq = t->seq;
  const krep_rec **recs = t->recs;
  *t = *s;
  t->seq = seq;
  t->id = krep_str(out, s->id), t->suite = krep_str(out, s->suite);
  t->tags = krep_str(out, s->tags);
  t->message = krep_str(out, s->message), t->file = krep_str(out, s->file);
  t->signal = krep_str(out, s->signal);
  t->protocol_error = krep_str(out, s->protocol_error);
  t->log_path = krep_str(out, s->log_path), t->log_tail = krep_str(out, s->log_tail);
  t->merged_from = from;
  t->recs = recs, t->nrecs = t->recs_cap = 0, t->recs_bytes = 0;
  for (int i = 0; i < s->nrecs; i++)
    krep_test_keep(out, t, s->recs[i]->tag, s->recs[i]->f, s->recs[i]->n);
  t->procs = NULL, t->nprocs = 0;
  for (int i = 0; i < s->nprocs; i++) krep_add_proc(out, t, &s->procs[i]);
  t->extra = NULL, t->nextra = 0;
  if (s->nextra) t->extra = kh_xcalloc((size_t)s->nextra, sizeof *t->extra);
  for (int i = 0; i < s->nextra; i++, t->nextra++)
    t->extra[i] = (krep_extra){krep_str(out, s->extra[i].key),
                               copy_any(out, s->extra[i].value)};
}

static void iso(krep_report *out, double wall_s, const char **to) {
  char text[40] = "";
  if (!isnan(wall_s)) kh_iso_time(wall_s, text, sizeof text);
  *to = krep_str(out, text);
}

static void copy_meta(krep_report *out, const krep_report *reps, int n) {
  const krep_report *r0 = &reps[0];
  out->kiln_version = krep_str(out, r0->kiln_version);
  out->git = krep_str(out, r0->git);
  out->command = krep_str(out, r0->command);
  out->host = krep_str(out, r0->host);
  out->backend = krep_str(out, r0->backend);
  out->config = krep_str(out, r0->config);
  out->containment = krep_str(out, r0->containment);
  out->allot_source = krep_str(out, r0->allot_source);
  for (int i = 0; i < r0->ndevices; i++) krep_add_device(out, &r0->devices[i]);
  for (int i = 0; i < r0->nset; i++) krep_add_setting(out, r0->set_keys[i], r0->set_values[i]);
  for (int i = 0; i < r0->nselection; i++) krep_add_selector(out, r0->selection[i]);
  /* The run: the earliest start, the latest end, the longest shard (they
   * run side by side), interrupted if any was. */
  out->start_s = r0->start_s, out->end_s = r0->end_s, out->duration_s = 0;
  out->sources = kh_xcalloc((size_t)n, sizeof *out->sources);
  for (int i = 0; i < n; i++) {
    const krep_report *r = &reps[i];
    if (r->start_s < out->start_s) out->start_s = r->start_s;
    if (r->end_s > out->end_s) out->end_s = r->end_s;
    out->duration_s = fmax(out->duration_s, krep_duration(r));
    out->interrupted |= r->interrupted;
    out->not_run += r->not_run;
    for (int k = 0; k < r->nprocs; k++) krep_add_proc(out, NULL, &r->procs[k]);
    /* The merged run tested nothing only if no shard tested anything. */
    if (i == 0 || out->nothing_tested)
      out->nothing_tested = r->nothing_tested ? krep_str(out, r->nothing_tested) : NULL;
    krep_source *s = &out->sources[out->nsources++];
    s->report = krep_str(out, r->path);
    s->git = krep_str(out, r->git);
    s->host = krep_str(out, r->host);
    iso(out, r->start_s, &s->start);
    iso(out, r->end_s, &s->end);
    s->shard = r->shard;
    s->shard.method = krep_str(out, r->shard.method);
    s->shard.source = krep_str(out, r->shard.source);
  }
}

/* Shards first by index, so the merged tests read in shard order. */
static int by_shard(const void *a, const void *b) {
  const krep_report *x = a, *y = b;
  return (x->shard.index > y->shard.index) - (x->shard.index < y->shard.index);
}

int krep_merge(krep_report *reps, int n, int force, krep_report *out, FILE *log,
               kh_err *err) {
  krep_init(out);
  if (check_revisions(reps, n, force, log, err) != 0 ||
      check_duplicates(reps, n, err) != 0 || check_shards(reps, n, err) != 0)
    return -1;
  qsort(reps, (size_t)n, sizeof *reps, by_shard);
  copy_meta(out, reps, n);
  for (int i = 0; i < n; i++)
    for (int t = 0; t < reps[i].ntests; t++) copy_test(out, reps[i].tests[t], i);
  return 0;
}
