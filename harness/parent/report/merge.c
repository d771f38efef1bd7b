/* `kiln report merge A B ...`: one run report from the reports of a sharded
 * run (or of runs of different selections). The inputs are read into the
 * model and their test runs copied into a new one whole, keys this kiln
 * does not know included; each gets `merged_from: I`, the index of its
 * input in run.merged_from, because its log path is relative to that
 * input's run folder. A resumed run (`kiln slurm --resume`) comes in
 * rounds: a later round's runs of a test replace an earlier round's, and
 * each round's shards are checked on their own. The checks go through a
 * hash table, so 64 shards of 10,000 tests merge in linear time.
 */
#include "report-impl.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- A table of test runs ------------------------------------------------------ */

/* (round, id, repeat, attempt) -> an int; repeat and attempt 0 key an id. */
typedef struct mkey {
  const char *id;
  int round, repeat, attempt;
} mkey;

typedef struct mtable {
  mkey *k;
  int *v;
  size_t cap, n;
} mtable;

static uint64_t mhash(const mkey *k) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char *s = k->id; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  int nums[] = {k->round, k->repeat, k->attempt};
  for (int i = 0; i < 3; i++) h = (h ^ (uint64_t)(unsigned)nums[i]) * 0x100000001b3ULL;
  return h;
}

static int msame(const mkey *a, const mkey *b) {
  return a->round == b->round && a->repeat == b->repeat && a->attempt == b->attempt &&
         strcmp(a->id, b->id) == 0;
}

static void mgrow(mtable *t) {
  if (t->n * 2 < t->cap) return;
  mtable bigger = {kh_xcalloc(t->cap ? 2 * t->cap : 1024, sizeof *t->k), NULL,
                   t->cap ? 2 * t->cap : 1024, t->n};
  bigger.v = kh_xcalloc(bigger.cap, sizeof *bigger.v);
  for (size_t i = 0; i < t->cap; i++) {
    if (!t->k[i].id) continue;
    size_t j = mhash(&t->k[i]) & (bigger.cap - 1);
    while (bigger.k[j].id) j = (j + 1) & (bigger.cap - 1);
    bigger.k[j] = t->k[i], bigger.v[j] = t->v[i];
  }
  free(t->k), free(t->v);
  *t = bigger;
}

/* The value of k; added with value `fresh` when absent (*added set). */
static int *mget(mtable *t, mkey k, int fresh, int *added) {
  mgrow(t);
  size_t j = mhash(&k) & (t->cap - 1);
  for (; t->k[j].id; j = (j + 1) & (t->cap - 1))
    if (msame(&t->k[j], &k)) return *added = 0, &t->v[j];
  t->k[j] = k, t->v[j] = fresh, t->n++;
  *added = 1;
  return &t->v[j];
}

static void mfree(mtable *t) { free(t->k), free(t->v); }

/* ---- Do the inputs belong together? ------------------------------------------- */

typedef struct minput {
  krep_report *rep;
  int round;
} minput;

static const char *git_of(const krep_report *r) { return r->git ? r->git : ""; }

static int check_revisions(const minput *in, int n, int force, FILE *log, kh_err *err) {
  for (int i = 1; i < n; i++) {
    const krep_report *a = in[i].rep, *b = in[0].rep;
    if (strcmp(git_of(a), git_of(b)) == 0) continue;
    if (!force)
      return kh_errf(err, "%s is from revision '%s' but %s is from '%s' "
                     "(--force merges them anyway)", a->path, git_of(a), b->path, git_of(b));
    fprintf(log, "kiln: warning: merging revisions '%s' and '%s' (--force)\n", git_of(b),
            git_of(a));
  }
  return 0;
}

/* A test run that two inputs of one round both hold means overlapping
 * shards. Fills ids with each (round, id) and the last round of each id. */
static int check_duplicates(const minput *in, int n, mtable *ids, mtable *last, kh_err *err) {
  mtable runs = {0};
  int rc = 0, added;
  for (int i = 0; i < n && rc == 0; i++)
    for (int a = 0; a < in[i].rep->ntests && rc == 0; a++) {
      const krep_test *t = in[i].rep->tests[a];
      int *owner = mget(&runs, (mkey){t->id, in[i].round, t->repeat, t->attempt}, i, &added);
      if (!added && *owner != i)
        rc = kh_errf(err, "%s (repeat %d, attempt %d) is in both %s and %s: the reports "
                     "overlap", t->id, t->repeat, t->attempt, in[*owner].rep->path,
                     in[i].rep->path);
      mget(ids, (mkey){t->id, in[i].round, 0, 0}, 0, &added);
      int *round = mget(last, (mkey){t->id, 0, 0, 0}, in[i].round, &added);
      if (*round < in[i].round) *round = in[i].round;
    }
  mfree(&runs);
  return rc;
}

/* One round's sharded inputs: every shard of one N exactly once, and
 * together every test the shards were cut from (gaps show as a shortfall). */
static int check_round(const minput *in, int n, int round, const mtable *ids, kh_err *err) {
  int sharded = 0, count = 0, nin = 0, not_run = 0, first = -1;
  for (int i = 0; i < n; i++) {
    if (in[i].round != round) continue;
    if (first < 0) first = i, count = in[i].rep->shard.count;
    nin++;
    sharded += in[i].rep->shard.count > 0;
    not_run += in[i].rep->not_run;
  }
  if (sharded == 0) return 0;
  if (sharded != nin) return kh_errf(err, "some of the reports are shards and some are not");
  const krep_report *r0 = in[first].rep;
  for (int k = 1; k <= count; k++) {
    int have = 0;
    for (int i = 0; i < n; i++) {
      const krep_report *r = in[i].rep;
      if (in[i].round != round) continue;
      if (r->shard.count != count)
        return kh_errf(err, "%s is shard %d/%d but %s is a shard of %d", r->path,
                       r->shard.index, r->shard.count, r0->path, count);
      have += r->shard.index == k;
    }
    if (have != 1)
      return kh_errf(err, "shard %d/%d is %s", k, count,
                     have ? "given more than once" : "missing");
  }
  int distinct = 0;
  for (size_t j = 0; j < ids->cap; j++) distinct += ids->k[j].id && ids->k[j].round == round;
  if (r0->shard.total && distinct + not_run < r0->shard.total)
    return kh_errf(err, "the shards selected %d tests but hold %d: a shard lost "
                   "tests (interrupted?)", r0->shard.total, distinct);
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
  t->lost = (krep_loss){krep_str(out, s->lost.by), krep_str(out, s->lost.state),
                        krep_str(out, s->lost.job), krep_str(out, s->lost.node),
                        krep_str(out, s->lost.reason)};
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

static void copy_meta(krep_report *out, const minput *in, int n) {
  const krep_report *r0 = in[0].rep;
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
    const krep_report *r = in[i].rep;
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
    s->round = in[i].round;
  }
}

/* Rounds in order, each round's shards by index, so the merged tests read
 * in shard order. */
static int by_round_shard(const void *a, const void *b) {
  const minput *x = a, *y = b;
  if (x->round != y->round) return (x->round > y->round) - (x->round < y->round);
  return (x->rep->shard.index > y->rep->shard.index) -
         (x->rep->shard.index < y->rep->shard.index);
}

int krep_merge(krep_report *reps, int n, const krep_merge_opts *o, krep_report *out,
               FILE *log, kh_err *err) {
  krep_init(out);
  minput *in = kh_xcalloc((size_t)n + 1, sizeof *in);
  int maxround = 1;
  for (int i = 0; i < n; i++) {
    in[i] = (minput){&reps[i], o->round ? o->round[i] : 1};
    if (in[i].round > maxround) maxround = in[i].round;
  }
  mtable ids = {0}, last = {0};
  int rc = check_revisions(in, n, o->force, log, err);
  if (rc == 0) rc = check_duplicates(in, n, &ids, &last, err);
  for (int r = 1; r <= maxround && rc == 0; r++) rc = check_round(in, n, r, &ids, err);
  if (rc == 0) {
    qsort(in, (size_t)n, sizeof *in, by_round_shard);
    copy_meta(out, in, n);
    for (int i = 0; i < n; i++)
      for (int t = 0; t < in[i].rep->ntests; t++) {
        const krep_test *x = in[i].rep->tests[t];
        int added;
        /* A later round ran this test again: its runs stand. */
        if (*mget(&last, (mkey){x->id, 0, 0, 0}, 0, &added) == in[i].round)
          copy_test(out, x, i);
      }
  }
  mfree(&ids), mfree(&last);
  free(in);
  return rc;
}
