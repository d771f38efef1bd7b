/* Merging reports. The inputs are loaded as YAML documents (reader.c) and
 * the merged report is emitted by walking their nodes, so every key a test
 * record carries survives, including keys this kiln does not know. Each
 * test gets `merged_from: I`, the index of its input in run.merged_from,
 * because its log path is relative to that input's run folder.
 */
#include "merge.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"
#include "result.h"

/* ---- Do the inputs belong together? -------------------------------------- */

static int kh__check_revisions(kh_rep *reps, int n, const kh_merge_opts *o,
                               FILE *log, kh_err *err) {
  for (int i = 1; i < n; i++) {
    if (strcmp(reps[i].git, reps[0].git) == 0) continue;
    if (!o->force)
      return kh_errf(err, "%s is from revision '%s' but %s is from '%s' "
                      "(--force merges them anyway)", reps[i].path, reps[i].git,
                      reps[0].path, reps[0].git);
    fprintf(log, "kiln: warning: merging revisions '%s' and '%s' (--force)\n",
            reps[0].git, reps[i].git);
  }
  return 0;
}

static int kh__same_run(const kh_rtest *a, const kh_rtest *b) {
  return a->repeat == b->repeat && a->attempt == b->attempt && strcmp(a->id, b->id) == 0;
}

/* A test run that two inputs both hold means overlapping shards. */
static int kh__check_duplicates(kh_rep *reps, int n, kh_err *err) {
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      for (int a = 0; a < reps[i].ntests; a++)
        for (int b = 0; b < reps[j].ntests; b++)
          if (kh__same_run(&reps[i].tests[a], &reps[j].tests[b]))
            return kh_errf(err, "%s (repeat %d, attempt %d) is in both %s and %s: "
                            "the reports overlap", reps[i].tests[a].id,
                            reps[i].tests[a].repeat, reps[i].tests[a].attempt,
                            reps[i].path, reps[j].path);
  return 0;
}

static int kh__distinct_ids(kh_rep *reps, int n) {
  int count = 0;
  for (int i = 0; i < n; i++)
    for (int a = 0; a < reps[i].ntests; a++) {
      int seen = 0;
      for (int j = 0; j <= i && !seen; j++)
        for (int b = 0; b < (j == i ? a : reps[j].ntests) && !seen; b++)
          seen = strcmp(reps[j].tests[b].id, reps[i].tests[a].id) == 0;
      count += !seen;
    }
  return count;
}

/* Sharded inputs: every shard of one N exactly once, and together every
 * test the shards were cut from (gaps show as a shortfall). */
static int kh__check_shards(kh_rep *reps, int n, kh_err *err) {
  int sharded = 0;
  for (int i = 0; i < n; i++) sharded += reps[i].shard_count > 0;
  if (sharded == 0) return 0;
  if (sharded != n)
    return kh_errf(err, "some of the reports are shards and some are not");
  int count = reps[0].shard_count;
  for (int k = 1; k <= count; k++) {
    int have = 0;
    for (int i = 0; i < n; i++) {
      if (reps[i].shard_count != count)
        return kh_errf(err, "%s is shard %d/%d but %s is a shard of %d",
                        reps[i].path, reps[i].shard_index, reps[i].shard_count,
                        reps[0].path, count);
      have += reps[i].shard_index == k;
    }
    if (have != 1)
      return kh_errf(err, "shard %d/%d is %s", k, count,
                      have ? "given more than once" : "missing");
  }
  int ids = kh__distinct_ids(reps, n);
  if (reps[0].shard_total && ids + reps[0].not_run < reps[0].shard_total)
    return kh_errf(err, "the shards selected %d tests but hold %d: a shard lost "
                    "tests (interrupted?)", reps[0].shard_total, ids);
  return 0;
}

/* ---- Emitting --------------------------------------------------------------- */

typedef struct kh__em {
  yaml_emitter_t em;
  int failed;
} kh__em;

static void kh__ev(kh__em *e, yaml_event_t *ev, int ok) {
  if (!ok || e->failed) {
    if (ok) yaml_event_delete(ev);
    e->failed = 1;
    return;
  }
  if (!yaml_emitter_emit(&e->em, ev)) e->failed = 1;
}

static void kh__scalar(kh__em *e, const char *v, yaml_scalar_style_t style) {
  yaml_event_t ev;
  kh__ev(e, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)v,
                                              (int)strlen(v), 1, 1, style));
}

static void kh__str(kh__em *e, const char *v) {
  kh__scalar(e, v, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

static void kh__num(kh__em *e, const char *key, double v) {
  char num[40];
  if (isnan(v)) snprintf(num, sizeof num, ".nan");
  else snprintf(num, sizeof num, "%.6g", v);
  kh__scalar(e, key, YAML_PLAIN_SCALAR_STYLE);
  kh__scalar(e, num, YAML_PLAIN_SCALAR_STYLE);
}

static void kh__open(kh__em *e, int map, int flow) {
  yaml_event_t ev;
  if (map)
    kh__ev(e, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
        flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE));
  else
    kh__ev(e, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
        flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE));
}

static void kh__close(kh__em *e, int map) {
  yaml_event_t ev;
  kh__ev(e, &ev, map ? yaml_mapping_end_event_initialize(&ev)
                     : yaml_sequence_end_event_initialize(&ev));
}

/* Copies a node (and what it holds) as it was. extra_key/extra_val: one more
 * pair for a mapping, or NULL. */
static void kh__copy(kh__em *e, const kh_rep *r, yaml_node_t *n,
                     const char *extra_key, const char *extra_val) {
  yaml_document_t *d = (yaml_document_t *)&r->doc;
  if (!n) {
    kh__scalar(e, "null", YAML_PLAIN_SCALAR_STYLE);
  } else if (n->type == YAML_SCALAR_NODE) {
    kh__scalar(e, (const char *)n->data.scalar.value, n->data.scalar.style);
  } else if (n->type == YAML_SEQUENCE_NODE) {
    kh__open(e, 0, n->data.sequence.style == YAML_FLOW_SEQUENCE_STYLE);
    for (yaml_node_item_t *i = n->data.sequence.items.start;
         i < n->data.sequence.items.top; i++)
      kh__copy(e, r, yaml_document_get_node(d, *i), NULL, NULL);
    kh__close(e, 0);
  } else {
    kh__open(e, 1, n->data.mapping.style == YAML_FLOW_MAPPING_STYLE);
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         p < n->data.mapping.pairs.top; p++) {
      kh__copy(e, r, yaml_document_get_node(d, p->key), NULL, NULL);
      kh__copy(e, r, yaml_document_get_node(d, p->value), NULL, NULL);
    }
    if (extra_key) {
      kh__scalar(e, extra_key, YAML_PLAIN_SCALAR_STYLE);
      kh__scalar(e, extra_val, YAML_PLAIN_SCALAR_STYLE);
    }
    kh__close(e, 1);
  }
}

static void kh__key(kh__em *e, const char *k) { kh__scalar(e, k, YAML_PLAIN_SCALAR_STYLE); }

static void kh__merged_from(kh__em *e, kh_rep *reps, int n) {
  kh__key(e, "merged_from");
  kh__open(e, 0, 0);
  for (int i = 0; i < n; i++) {
    kh__open(e, 1, 0);
    kh__key(e, "report"), kh__str(e, reps[i].path);
    kh__key(e, "git"), kh__str(e, reps[i].git);
    kh__key(e, "host"), kh__str(e, reps[i].host);
    kh__key(e, "start"), kh__str(e, reps[i].start);
    kh__key(e, "end"), kh__str(e, reps[i].end);
    kh__key(e, "shard");
    kh__copy(e, &reps[i], kh_rep_node(&reps[i], kh_rep_node(&reps[i], reps[i].root, "run"),
                                      "shard"), NULL, NULL);
    kh__close(e, 1);
  }
  kh__close(e, 0);
}

/* The run: the earliest start, the latest end, interrupted if any was. */
static void kh__run(kh__em *e, kh_rep *reps, int n) {
  int first = 0, last = 0, interrupted = 0;
  for (int i = 0; i < n; i++) {
    if (strcmp(reps[i].start, reps[first].start) < 0) first = i;
    if (strcmp(reps[i].end, reps[last].end) > 0) last = i;
    interrupted |= reps[i].interrupted;
  }
  yaml_node_t *run0 = kh_rep_node(&reps[0], reps[0].root, "run");
  kh__key(e, "run");
  kh__open(e, 1, 0);
  kh__key(e, "host"), kh__str(e, reps[0].host);
  kh__key(e, "backend"), kh__str(e, reps[0].backend);
  kh__key(e, "config"), kh__copy(e, &reps[0], kh_rep_node(&reps[0], run0, "config"), NULL, NULL);
  kh__key(e, "start"), kh__str(e, reps[first].start);
  kh__key(e, "end"), kh__str(e, reps[last].end);
  double dur = 0;
  for (int i = 0; i < n; i++) dur = fmax(dur, reps[i].duration_s);
  kh__num(e, "duration_s", dur);  /* the longest shard: they run side by side */
  kh__key(e, "interrupted"), kh__scalar(e, interrupted ? "true" : "false", YAML_PLAIN_SCALAR_STYLE);
  kh__key(e, "rebuilt_from_journal"), kh__scalar(e, "false", YAML_PLAIN_SCALAR_STYLE);
  kh__merged_from(e, reps, n);
  kh__close(e, 1);
}

static void kh__summary(kh__em *e, kh_rep *reps, int n) {
  int counts[KH_NOUTCOMES] = {0}, total = 0, runs = 0, not_run = 0;
  char num[32];
  for (int i = 0; i < n; i++) {
    runs += reps[i].ntests, not_run += reps[i].not_run, total += reps[i].total;
    for (int o = 0; o < KH_NOUTCOMES; o++) counts[o] += reps[i].counts[o];
  }
  kh__key(e, "summary");
  kh__open(e, 1, 0);
  const char *keys[] = {"total", "runs"};
  int vals[] = {total, runs};
  for (int k = 0; k < 2; k++) {
    snprintf(num, sizeof num, "%d", vals[k]);
    kh__key(e, keys[k]), kh__scalar(e, num, YAML_PLAIN_SCALAR_STYLE);
  }
  for (int o = 0; o < KH_NOUTCOMES; o++) {
    snprintf(num, sizeof num, "%d", counts[o]);
    kh__key(e, kh_outcome_name(o)), kh__scalar(e, num, YAML_PLAIN_SCALAR_STYLE);
  }
  snprintf(num, sizeof num, "%d", not_run);
  kh__key(e, "not_run"), kh__scalar(e, num, YAML_PLAIN_SCALAR_STYLE);
  kh__close(e, 1);
}

static void kh__tests(kh__em *e, kh_rep *reps, int n) {
  kh__key(e, "tests");
  kh__open(e, 0, 0);
  for (int i = 0; i < n; i++) {
    char idx[16];
    snprintf(idx, sizeof idx, "%d", i);
    for (int t = 0; t < reps[i].ntests; t++)
      kh__copy(e, &reps[i], reps[i].tests[t].node, "merged_from", idx);
  }
  kh__close(e, 0);
}

static void kh__document(kh__em *e, kh_rep *reps, int n) {
  yaml_event_t ev;
  kh__ev(e, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
  kh__ev(e, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0));
  kh__open(e, 1, 0);
  kh__key(e, "format_version"), kh__scalar(e, "1", YAML_PLAIN_SCALAR_STYLE);
  kh__key(e, "kiln"), kh__copy(e, &reps[0], kh_rep_node(&reps[0], reps[0].root, "kiln"), NULL, NULL);
  kh__run(e, reps, n);
  const char *copied[] = {"devices", "settings", "selection"};
  for (int k = 0; k < 3; k++) {
    kh__key(e, copied[k]);
    kh__copy(e, &reps[0], kh_rep_node(&reps[0], reps[0].root, copied[k]), NULL, NULL);
  }
  kh__summary(e, reps, n);
  kh__tests(e, reps, n);
  kh__close(e, 1);
  kh__ev(e, &ev, yaml_document_end_event_initialize(&ev, 0));
  kh__ev(e, &ev, yaml_stream_end_event_initialize(&ev));
}

static int kh__out(void *data, unsigned char *buffer, size_t size) {
  kh_buf_add(data, buffer, size);
  return 1;
}

/* Shards first by index, so the merged tests read in shard order. */
static int kh__by_shard(const void *a, const void *b) {
  const kh_rep *x = a, *y = b;
  return (x->shard_index > y->shard_index) - (x->shard_index < y->shard_index);
}

int kh_merge(kh_rep *reps, int n, const kh_merge_opts *o, FILE *log, kh_err *err) {
  if (kh__check_revisions(reps, n, o, log, err) != 0 ||
      kh__check_duplicates(reps, n, err) != 0 || kh__check_shards(reps, n, err) != 0)
    return -1;
  qsort(reps, (size_t)n, sizeof *reps, kh__by_shard);
  kh__em e = {0};
  kh_buf out = {0};
  yaml_emitter_initialize(&e.em);
  yaml_emitter_set_output(&e.em, kh__out, &out);
  yaml_emitter_set_width(&e.em, 100);
  yaml_emitter_set_unicode(&e.em, 1);
  kh__document(&e, reps, n);
  int rc = 0;
  if (e.failed)
    rc = kh_errf(err, "YAML emitter: %s", e.em.problem ? e.em.problem : "failed");
  else if (strcmp(o->out_path, "-") == 0 ? kh_write_all(STDOUT_FILENO, out.data, out.len)
                                         : kh_write_atomic(o->out_path, out.data, out.len))
    rc = kh_errf(err, "%s: %s", o->out_path, strerror(errno));
  yaml_emitter_delete(&e.em);
  kh_buf_free(&out);
  return rc;
}
