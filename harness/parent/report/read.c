/* The one reader: report.yaml (format_version 1 to 3) back into the model,
 * with kiln's bounded YAML loader (base/input.c: limited nesting, no
 * aliases, so a hostile report cannot make a reader run without end). Missing keys read as unknown (an interrupted,
 * rebuilt or merged report loads as well as a full one); a test's records
 * come back as the records the child sent, numbers in the protocol's
 * spelling; keys this kiln does not know are kept (krep_any) so that
 * writing the model again loses nothing.
 */
#include "report-impl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

typedef struct reader {
  yaml_document_t doc;
  krep_report *rep;
} reader;

/* ---- Nodes ---------------------------------------------------------------------- */

static yaml_node_t *at(reader *r, yaml_node_item_t i) {
  return yaml_document_get_node(&r->doc, i);
}

static yaml_node_t *node(reader *r, yaml_node_t *map, const char *key) {
  if (!map || map->type != YAML_MAPPING_NODE) return NULL;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
       p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = at(r, p->key);
    if (k && k->type == YAML_SCALAR_NODE &&
        strcmp((const char *)k->data.scalar.value, key) == 0)
      return at(r, p->value);
  }
  return NULL;
}

static int is_null(const yaml_node_t *n) {
  return !n || (n->type == YAML_SCALAR_NODE &&
                n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                (strcmp((const char *)n->data.scalar.value, "null") == 0 ||
                 strcmp((const char *)n->data.scalar.value, "~") == 0));
}

/* A scalar's text; NULL when absent, null or not a scalar. */
static const char *text(const yaml_node_t *n) {
  if (is_null(n) || n->type != YAML_SCALAR_NODE) return NULL;
  return (const char *)n->data.scalar.value;
}

static const char *str(reader *r, yaml_node_t *map, const char *key) {
  return krep_str(r->rep, text(node(r, map, key)));
}

static double num(const yaml_node_t *n) {
  const char *t = text(n);
  if (!t || !*t) return NAN;
  t = krep__yaml_to_protocol(t);
  char *end;
  double v = strtod(t, &end);
  return *end ? NAN : v;
}

static long long integer(const yaml_node_t *n, long long dflt) {
  double v = num(n);
  return isnan(v) ? dflt : (long long)v;
}

static int boolean(const yaml_node_t *n) {
  const char *t = text(n);
  return t && strcmp(t, "true") == 0;
}

static int seq_len(const yaml_node_t *n) {
  if (!n || n->type != YAML_SEQUENCE_NODE) return 0;
  return (int)(n->data.sequence.items.top - n->data.sequence.items.start);
}

/* ---- Records ------------------------------------------------------------------------ */

/* A sequence of scalars (a KP_NUMS value) back as "a,b,c". */
static const char *joined(reader *r, yaml_node_t *seq) {
  kh_buf b = {0};
  kh_buf_add(&b, "", 0);
  for (int i = 0; i < seq_len(seq); i++) {
    const char *v = text(at(r, seq->data.sequence.items.start[i]));
    kh_buf_addf(&b, "%s%s", i ? "," : "", v ? krep__yaml_to_protocol(v) : "nan");
  }
  const char *s = krep_str(r->rep, b.data);
  kh_buf_free(&b);
  return s;
}

/* A mapping of scalars (and lists of numbers) as a child's record (first:
 * an extra first field, such as a memory record's `when`). */
static void keep_map(reader *r, krep_test *t, const char *tag, yaml_node_t *map,
                     const kp_field *first) {
  if (!map || map->type != YAML_MAPPING_NODE) return;
  kp_field f[KP_MAX_FIELDS];
  int n = 0;
  if (first) f[n++] = *first;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
       p < map->data.mapping.pairs.top && n < KP_MAX_FIELDS; p++) {
    const char *k = text(at(r, p->key));
    yaml_node_t *v = at(r, p->value);
    if (!k || !v) continue;
    if (v->type == YAML_SEQUENCE_NODE) {
      f[n++] = (kp_field){k, joined(r, v)};
      continue;
    }
    if (v->type != YAML_SCALAR_NODE) continue;
    const char *val = text(v);
    if (!val) continue;
    if (v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) val = krep__yaml_to_protocol(val);
    f[n++] = (kp_field){k, val};
  }
  krep_test_keep(r->rep, t, tag, f, n);
}

static void keep_list(reader *r, krep_test *t, const char *tag, yaml_node_t *seq) {
  for (int i = 0; i < seq_len(seq); i++)
    keep_map(r, t, tag, at(r, seq->data.sequence.items.start[i]), NULL);
}

/* times: NAME_ms phases in the order written; the parent's own times. */
static void read_times(reader *r, krep_test *t, yaml_node_t *map) {
  if (!map || map->type != YAML_MAPPING_NODE) return;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
       p < map->data.mapping.pairs.top; p++) {
    const char *k = text(at(r, p->key));
    yaml_node_t *v = at(r, p->value);
    size_t len = k ? strlen(k) : 0;
    if (len < 4 || strcmp(k + len - 3, "_ms") != 0 || !text(v)) continue;
    if (strcmp(k, "wall_ms") == 0) t->wall_ms = num(v);
    else if (strcmp(k, "startup_ms") == 0) t->startup_ms = num(v);
    else if (strcmp(k, "ready_wait_ms") == 0) t->ready_wait_ms = num(v);
    else {
      char name[96];
      snprintf(name, sizeof name, "%.*s", (int)(len - 3 < 95 ? len - 3 : 95), k);
      kp_field f[2] = {{"name", name}, {"ms", krep__yaml_to_protocol(text(v))}};
      krep_test_keep(r->rep, t, "phase", f, 2);
    }
  }
}

static void read_memory(reader *r, krep_test *t, yaml_node_t *map) {
  if (!map || map->type != YAML_MAPPING_NODE) return;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
       p < map->data.mapping.pairs.top; p++) {
    kp_field when = {"when", text(at(r, p->key))};
    if (when.value) keep_map(r, t, "memory", at(r, p->value), &when);
  }
}

/* processes_left: a list of {pid, command, how, killed, error}. */
static void read_procs(reader *r, krep_test *t, yaml_node_t *seq) {
  for (int i = 0; i < seq_len(seq); i++) {
    yaml_node_t *m = at(r, seq->data.sequence.items.start[i]);
    krep_proc p = {integer(node(r, m, "pid"), -1), text(node(r, m, "command")),
                   text(node(r, m, "how")), boolean(node(r, m, "killed")),
                   text(node(r, m, "error"))};
    krep_add_proc(r->rep, t, &p);
  }
}

/* ---- Keys this kiln does not know ------------------------------------------------------ */

static krep_any *any(reader *r, yaml_node_t *n, int depth) {
  krep_any *a = krep__alloc(r->rep->pool, sizeof *a);
  memset(a, 0, sizeof *a);
  if (!n || n->type == YAML_SCALAR_NODE || depth > 16) {
    a->kind = KREP_SCALAR;
    a->text = krep_str(r->rep, text(n));
    a->quoted = n && n->type == YAML_SCALAR_NODE &&
                n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    return a;
  }
  int map = n->type == YAML_MAPPING_NODE;
  a->kind = map ? KREP_MAP : KREP_SEQ;
  a->flow = map ? n->data.mapping.style == YAML_FLOW_MAPPING_STYLE
                : n->data.sequence.style == YAML_FLOW_SEQUENCE_STYLE;
  a->n = map ? (int)(n->data.mapping.pairs.top - n->data.mapping.pairs.start)
             : seq_len(n);
  a->items = krep__alloc(r->rep->pool, (size_t)(a->n + 1) * sizeof *a->items);
  a->keys = krep__alloc(r->rep->pool, (size_t)(a->n + 1) * sizeof *a->keys);
  for (int i = 0; i < a->n; i++) {
    if (map) {
      yaml_node_pair_t *p = &n->data.mapping.pairs.start[i];
      const char *k = text(at(r, p->key));
      a->keys[i] = krep_str(r->rep, k ? k : "");
      a->items[i] = any(r, at(r, p->value), depth + 1);
    } else {
      a->items[i] = any(r, at(r, n->data.sequence.items.start[i]), depth + 1);
    }
  }
  return a;
}

static void extra(reader *r, krep_test *t, const char *key, yaml_node_t *v) {
  t->extra = kh_xrealloc(t->extra, (size_t)(t->nextra + 1) * sizeof *t->extra);
  t->extra[t->nextra++] = (krep_extra){krep_str(r->rep, key), any(r, v, 0)};
}

/* ---- A test run ---------------------------------------------------------------------------- */

static void read_tags(reader *r, krep_test *t, yaml_node_t *seq) {
  kh_buf b = {0};
  for (int i = 0; i < seq_len(seq); i++) {
    const char *tag = text(at(r, seq->data.sequence.items.start[i]));
    if (tag) kh_buf_addf(&b, "%s%s", b.len ? "," : "", tag);
  }
  t->tags = krep_str(r->rep, b.data ? b.data : "");
  kh_buf_free(&b);
}

static void read_log(reader *r, krep_test *t, yaml_node_t *log) {
  t->log_path = str(r, log, "path");
  t->log_tail = str(r, log, "tail");
  t->log_bytes = integer(node(r, log, "bytes"), 0);
  t->log_dropped = integer(node(r, log, "dropped_bytes"), 0);
}

static void read_loss(reader *r, krep_test *t, yaml_node_t *m) {
  t->lost = (krep_loss){str(r, m, "by"), str(r, m, "state"), str(r, m, "job"),
                        str(r, m, "node"), str(r, m, "reason")};
}

/* One key of a test record; 0 when this kiln does not know it. */
static int read_key(reader *r, krep_test *t, const char *k, yaml_node_t *v) {
  for (int i = 0; i < krep__nlists; i++)
    if (strcmp(k, krep__lists[i].key) == 0) return keep_list(r, t, krep__lists[i].tag, v), 1;
  krep_report *rep = r->rep;
  const char *s = text(v);
  if (strcmp(k, "id") == 0) t->id = krep_str(rep, s ? s : "");
  else if (strcmp(k, "suite") == 0) t->suite = krep_str(rep, s ? s : "");
  else if (strcmp(k, "tags") == 0) read_tags(r, t, v);
  else if (strcmp(k, "outcome") == 0) {
    t->outcome = krep_outcome_parse(s);
    if (t->outcome < 0) t->outcome = KREP_ERROR;
  } else if (strcmp(k, "final") == 0) t->final = !(s && strcmp(s, "false") == 0);
  else if (strcmp(k, "repeat") == 0) t->repeat = (int)integer(v, 1);
  else if (strcmp(k, "attempt") == 0) t->attempt = (int)integer(v, 1);
  else if (strcmp(k, "device") == 0) t->device = (int)integer(v, -1);
  else if (strcmp(k, "slots") == 0) t->slots = (int)integer(v, 1);
  else if (strcmp(k, "warm") == 0) t->warm = boolean(v);
  else if (strcmp(k, "ran") == 0) t->ran = krep_ran_parse(s);
  else if (strcmp(k, "worker") == 0) t->worker = (int)integer(v, 0);
  else if (strcmp(k, "position") == 0) t->position = (int)integer(v, 0);
  else if (strcmp(k, "pid") == 0) t->pid = integer(v, KP_NONE);
  else if (strcmp(k, "seed") == 0) {
    char *end;
    t->has_seed = s && *s && (t->seed = strtoull(s, &end, 10), !*end);
  } else if (strcmp(k, "started") == 0) t->started_s = kh_iso_parse(s);
  else if (strcmp(k, "ended") == 0) t->ended_s = kh_iso_parse(s);
  else if (strcmp(k, "times") == 0) read_times(r, t, v);
  else if (strcmp(k, "message") == 0) t->message = krep_str(rep, s);
  else if (strcmp(k, "file") == 0) t->file = krep_str(rep, s);
  else if (strcmp(k, "line") == 0) t->line = (int)integer(v, 0);
  else if (strcmp(k, "signal") == 0) t->signal = krep_str(rep, s);
  else if (strcmp(k, "exit_code") == 0) t->exit_code = (int)integer(v, -1);
  else if (strcmp(k, "protocol_error") == 0) t->protocol_error = krep_str(rep, s);
  else if (strcmp(k, "lost") == 0) read_loss(r, t, v);
  else if (strcmp(k, "device_info") == 0) keep_map(r, t, "device", v, NULL);
  else if (strcmp(k, "leaks_total") == 0) keep_map(r, t, "leak_total", v, NULL);
  else if (strcmp(k, "processes_left") == 0) read_procs(r, t, v);
  else if (strcmp(k, "other_devices_info") == 0) keep_list(r, t, "device", v);
  else if (strcmp(k, "devices") == 0) t->devices = v && v->type == YAML_SEQUENCE_NODE ? joined(r, v) : NULL;
  else if (strcmp(k, "throttled") == 0) (void)0;   /* derived from its clocks */
  else if (strcmp(k, "memory") == 0) read_memory(r, t, v);
  else if (strcmp(k, "records_dropped") == 0) t->records_dropped = integer(v, 0);
  else if (strcmp(k, "log") == 0) read_log(r, t, v);
  else if (strcmp(k, "merged_from") == 0) t->merged_from = (int)integer(v, -1);
  else return 0;
  return 1;
}

static void read_test(reader *r, yaml_node_t *n) {
  if (!n || n->type != YAML_MAPPING_NODE) return;
  krep_test *t = krep_test_new(r->rep, "", "", "");
  for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
       p < n->data.mapping.pairs.top; p++) {
    const char *k = text(at(r, p->key));
    if (k && !read_key(r, t, k, at(r, p->value))) extra(r, t, k, at(r, p->value));
  }
}

/* ---- The run ----------------------------------------------------------------------------------- */

static void read_shard(reader *r, yaml_node_t *n, krep_shard *s) {
  memset(s, 0, sizeof *s);
  if (!n || n->type != YAML_MAPPING_NODE) return;
  s->index = (int)integer(node(r, n, "index"), 0);
  s->count = (int)integer(node(r, n, "count"), 0);
  s->selected = (int)integer(node(r, n, "selected"), 0);
  s->total = (int)integer(node(r, n, "selected_total"), 0);
  s->method = str(r, n, "method");
  s->source = str(r, n, "source");
}

static void read_sources(reader *r, yaml_node_t *seq) {
  krep_report *rep = r->rep;
  rep->nsources = seq_len(seq);
  rep->sources = kh_xcalloc((size_t)rep->nsources + 1, sizeof *rep->sources);
  for (int i = 0; i < rep->nsources; i++) {
    yaml_node_t *m = at(r, seq->data.sequence.items.start[i]);
    krep_source *s = &rep->sources[i];
    s->report = str(r, m, "report");
    s->git = str(r, m, "git");
    s->host = str(r, m, "host");
    s->start = str(r, m, "start");
    s->end = str(r, m, "end");
    read_shard(r, node(r, m, "shard"), &s->shard);
    s->round = (int)integer(node(r, m, "round"), 1);
  }
}

static void read_run(reader *r, yaml_node_t *root) {
  krep_report *rep = r->rep;
  yaml_node_t *kiln = node(r, root, "kiln"), *run = node(r, root, "run");
  rep->kiln_version = str(r, kiln, "version");
  rep->git = str(r, kiln, "git");
  rep->command = str(r, kiln, "command");
  rep->host = str(r, run, "host");
  rep->backend = str(r, run, "backend");
  rep->config = str(r, run, "config");
  rep->out_dir = str(r, run, "out");
  rep->token_key = str(r, run, "token_key");
  rep->slots_from = str(r, run, "slots_from");
  rep->durations_from = str(r, run, "durations_from");
  rep->start_s = kh_iso_parse(text(node(r, run, "start")));
  rep->end_s = kh_iso_parse(text(node(r, run, "end")));
  rep->duration_s = num(node(r, run, "duration_s"));
  rep->interrupted = boolean(node(r, run, "interrupted"));
  rep->rebuilt = boolean(node(r, run, "rebuilt_from_journal"));
  yaml_node_t *clean = node(r, run, "parent_gpu_clean");
  rep->parent_gpu_clean = text(clean) ? boolean(clean) : -1;
  rep->peak_rss_kb = integer(node(r, run, "kiln_peak_rss_kb"), -1);
  rep->nothing_tested = str(r, run, "nothing_tested");
  rep->containment = str(r, run, "containment");
  rep->allot_source = str(r, node(r, run, "allotment"), "source");
  read_procs(r, NULL, node(r, run, "processes_left"));
  read_shard(r, node(r, run, "shard"), &rep->shard);
  read_sources(r, node(r, run, "merged_from"));
  yaml_node_t *devs = node(r, root, "devices");
  for (int i = 0; i < seq_len(devs); i++) {
    yaml_node_t *m = at(r, devs->data.sequence.items.start[i]);
    krep_device d = {(int)integer(node(r, m, "index"), 0),
                     (int)integer(node(r, m, "physical"), 0), text(node(r, m, "visible")),
                     text(node(r, m, "name")), text(node(r, m, "arch")),
                     (int)integer(node(r, m, "warp_size"), 0),
                     integer(node(r, m, "total_bytes"), 0),
                     integer(node(r, m, "free_bytes"), 0),
                     (int)integer(node(r, m, "slots"), 0),
                     integer(node(r, m, "budget_bytes"), -1)};
    krep_add_device(rep, &d);
  }
  yaml_node_t *probes = node(r, root, "health_probes");
  for (int i = 0; i < seq_len(probes); i++) {
    yaml_node_t *m = at(r, probes->data.sequence.items.start[i]);
    krep_probe p = {(int)integer(node(r, m, "device"), -1), text(node(r, m, "after")),
                    boolean(node(r, m, "passed")), text(node(r, m, "message")),
                    num(node(r, m, "ms"))};
    krep_add_probe(rep, &p);
  }
  yaml_node_t *set = node(r, root, "settings");
  if (set && set->type == YAML_MAPPING_NODE)
    for (yaml_node_pair_t *p = set->data.mapping.pairs.start;
         p < set->data.mapping.pairs.top; p++) {
      const char *k = text(at(r, p->key)), *v = text(at(r, p->value));
      if (k) krep_add_setting(rep, k, v ? v : "");
    }
  yaml_node_t *sel = node(r, root, "selection");
  for (int i = 0; i < seq_len(sel); i++) {
    const char *s = text(at(r, sel->data.sequence.items.start[i]));
    if (s) krep_add_selector(rep, s);
  }
  rep->not_run = (int)integer(node(r, node(r, root, "summary"), "not_run"), 0);
}

/* ---- Consistency ------------------------------------------------------------------ */

static int by_run(const void *a, const void *b) {
  const krep_test *x = *(krep_test *const *)a, *y = *(krep_test *const *)b;
  int c = strcmp(x->id ? x->id : "", y->id ? y->id : "");
  if (c) return c;
  if (x->repeat != y->repeat) return (x->repeat > y->repeat) - (x->repeat < y->repeat);
  return (x->attempt > y->attempt) - (x->attempt < y->attempt);
}

/* A report that disagrees with itself is refused, as a cut one is: its
 * summary must count what its tests say, a run that was not interrupted
 * left nothing unrun, and no test run (id, repeat, attempt) is listed
 * twice. kiln never writes such a report; a hand edit or a merge by
 * other tools does, and reading it would report what did not happen. */
static int consistent(reader *r, yaml_node_t *summary, kh_err *err) {
  krep_report *rep = r->rep;
  int counts[KREP_NOUTCOMES];
  int total = krep_count(rep, counts);
  const char *say = "(a report edited by hand, or damaged); refusing to read it";
  yaml_node_t *n = node(r, summary, "total");
  if (text(n) && integer(n, -1) != total)
    return kh_errf(err, "%s: its summary counts %lld final test runs but its tests list %d %s",
                   rep->path, integer(n, -1), total, say);
  kh_buf says = {0}, lists = {0};
  for (int o = 0; o < KREP_NOUTCOMES; o++) {
    n = node(r, summary, krep_outcome_name(o));
    if (!text(n) || integer(n, -1) == counts[o]) continue;
    kh_buf_addf(&says, "%s%s: %lld", says.len ? ", " : "", krep_outcome_name(o), integer(n, -1));
    kh_buf_addf(&lists, "%s%s: %d", lists.len ? ", " : "", krep_outcome_name(o), counts[o]);
  }
  if (says.len)
    kh_errf(err, "%s: its summary says %s, but its tests list %s %s", rep->path, says.data,
            lists.data, say);
  int bad = says.len > 0;
  kh_buf_free(&says), kh_buf_free(&lists);
  if (bad) return -1;
  if (rep->not_run != 0 && !rep->interrupted)
    return kh_errf(err, "%s: its summary has not_run: %d in a run that was not interrupted "
                   "(only an interrupted run leaves tests unrun) %s", rep->path,
                   rep->not_run, say);
  if (rep->ntests < 2) return 0;
  krep_test **sorted = kh_xcalloc((size_t)rep->ntests, sizeof *sorted);
  memcpy(sorted, rep->tests, (size_t)rep->ntests * sizeof *sorted);
  qsort(sorted, (size_t)rep->ntests, sizeof *sorted, by_run);
  int rc = 0;
  for (int i = 1; i < rep->ntests && rc == 0; i++)
    if (by_run(&sorted[i - 1], &sorted[i]) == 0)
      rc = kh_errf(err, "%s: it lists %s (repeat %d, attempt %d) twice %s", rep->path,
                   sorted[i]->id, sorted[i]->repeat, sorted[i]->attempt, say);
  free(sorted);
  return rc;
}

int krep_read(const char *arg, krep_report *rep, kh_err *err) {
  struct stat st;
  krep_init(rep);
  int dir = stat(arg, &st) == 0 && S_ISDIR(st.st_mode);
  char *path = dir ? kh_asprintf("%s/report.yaml", arg) : kh_strdup(arg);
  rep->path = krep_str(rep, path);
  free(path);
  char *buf;
  size_t len;
  if (dir && access(rep->path, F_OK) != 0 && errno == ENOENT) {
    char *journal = kh_asprintf("%s/journal", arg);
    int has = access(journal, F_OK) == 0;
    free(journal);
    if (has)
      return kh_errf(err, "%s: no report.yaml: the run did not finish (kiln was killed?); "
                     "`kiln report rebuild %s` writes it from the run's journal", arg, arg);
    return kh_errf(err, "%s: no report.yaml and no journal: not a kiln run folder", arg);
  }
  if (kh_read_input(rep->path, KREP_MAX_REPORT, &buf, &len, err) != 0) return -1;
  reader r = {.rep = rep};
  int rc = kh_yaml_load(buf, len, rep->path, KH_YAML_MAX_DEPTH, &r.doc, err);
  free(buf);
  if (rc != 0) return rc;
  yaml_node_t *root = yaml_document_get_root_node(&r.doc);
  yaml_node_t *fmt = node(&r, root, "format_version");
  long long version = integer(fmt, 0);
  if (!fmt) {
    rc = kh_errf(err, "%s: not a kiln report (no format_version)", rep->path);
  } else if (version < KREP_FORMAT_OLDEST || version > KREP_FORMAT) {
    rc = kh_errf(err, "%s: report format_version %lld; this kiln reads %d to %d",
                 rep->path, version, KREP_FORMAT_OLDEST, KREP_FORMAT);
  } else if (r.doc.end_implicit) {
    /* kiln's writer ends every report with "..." (format 1 on), and the
     * reports it writes are renamed into place whole: one without the mark
     * was cut (a copy or a disk that filled), and reading it would count
     * its missing tests as removed. */
    rc = kh_errf(err, "%s: the report is not whole (it does not end with \"...\", the "
                 "last line kiln writes): cut short or damaged; refusing to read it",
                 rep->path);
  } else {
    rep->format = (int)integer(fmt, 0);
    read_run(&r, root);
    yaml_node_t *tests = node(&r, root, "tests");
    for (int i = 0; i < seq_len(tests); i++)
      read_test(&r, at(&r, tests->data.sequence.items.start[i]));
    yaml_node_t *runs = node(&r, node(&r, root, "summary"), "runs");
    if (text(runs) && integer(runs, -1) != seq_len(tests))
      rc = kh_errf(err, "%s: the report is not whole: its summary counts %lld test runs "
                   "but it lists %d; refusing to read it", rep->path, integer(runs, -1),
                   seq_len(tests));
    else
      rc = consistent(&r, node(&r, root, "summary"), err);
  }
  yaml_document_delete(&r.doc);
  return rc;
}
