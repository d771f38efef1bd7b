/* Loads a report.yaml (format_version 1) with libyaml's document loader and
 * fills the typed view in reader.h. Missing keys read as empty or NaN, so a
 * report from an interrupted or rebuilt run loads as well as a full one.
 */
#include "reader.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "result.h"

yaml_node_t *kh_rep_node(const kh_rep *rep, yaml_node_t *map, const char *key) {
  if (!map || map->type != YAML_MAPPING_NODE) return NULL;
  yaml_document_t *d = (yaml_document_t *)&rep->doc;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
       p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(d, p->key);
    if (k && k->type == YAML_SCALAR_NODE &&
        strcmp((const char *)k->data.scalar.value, key) == 0)
      return yaml_document_get_node(d, p->value);
  }
  return NULL;
}

const char *kh_rep_text(const kh_rep *rep, yaml_node_t *map, const char *key) {
  yaml_node_t *n = kh_rep_node(rep, map, key);
  if (!n || n->type != YAML_SCALAR_NODE) return "";
  const char *v = (const char *)n->data.scalar.value;
  /* A plain `null` is no value; a quoted "null" is the string. */
  if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && strcmp(v, "null") == 0)
    return "";
  return v;
}

double kh_rep_parse_num(const char *s) {
  if (!s || !*s) return NAN;
  if (strcmp(s, ".nan") == 0 || strcmp(s, ".NaN") == 0) return NAN;
  if (strcmp(s, ".inf") == 0 || strcmp(s, "+.inf") == 0) return INFINITY;
  if (strcmp(s, "-.inf") == 0) return -INFINITY;
  char *end;
  double v = strtod(s, &end);
  return *end ? NAN : v;
}

double kh_rep_num(const kh_rep *rep, yaml_node_t *map, const char *key) {
  return kh_rep_parse_num(kh_rep_text(rep, map, key));
}

static int kh__rep_int(const kh_rep *rep, yaml_node_t *map, const char *key,
                       int dflt) {
  double v = kh_rep_num(rep, map, key);
  return isnan(v) ? dflt : (int)v;
}

static int kh__seq_len(yaml_node_t *n) {
  if (!n || n->type != YAML_SEQUENCE_NODE) return 0;
  return (int)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static yaml_node_t *kh__seq_at(const kh_rep *rep, yaml_node_t *n, int i) {
  return yaml_document_get_node((yaml_document_t *)&rep->doc,
                                n->data.sequence.items.start[i]);
}

/* ---- Test records ------------------------------------------------------- */

static void kh__read_kernels(const kh_rep *rep, kh_rtest *t) {
  yaml_node_t *ks = kh_rep_node(rep, t->node, "kernels");
  t->nkernels = kh__seq_len(ks);
  t->kernels = kh_xcalloc((size_t)t->nkernels + 1, sizeof *t->kernels);
  for (int i = 0; i < t->nkernels; i++) {
    yaml_node_t *k = kh__seq_at(rep, ks, i);
    kh_rkernel *x = &t->kernels[i];
    x->name = kh_rep_text(rep, k, "name");
    x->launches = (long long)kh_rep_num(rep, k, "launches");
    x->total_ms = kh_rep_num(rep, k, "total_ms");
    x->median_ms = kh_rep_num(rep, k, "median_ms");
  }
}

/* The tolerance a check's worst element had to meet is atol + rtol*|e|;
 * the ratio says how much of it the error used (1 = at the limit). */
static double kh__check_ratio(const kh_rcheck *c) {
  double tol = c->atol + c->rtol * fabs(c->worst_expected);
  double err = fabs(c->worst_actual - c->worst_expected);
  if (isnan(err)) return INFINITY;
  if (!(tol > 0)) return err > 0 ? INFINITY : 0.0;
  return err / tol;
}

static void kh__read_checks(const kh_rep *rep, kh_rtest *t) {
  yaml_node_t *cs = kh_rep_node(rep, t->node, "checks");
  t->nchecks = kh__seq_len(cs);
  t->checks = kh_xcalloc((size_t)t->nchecks + 1, sizeof *t->checks);
  for (int i = 0; i < t->nchecks; i++) {
    yaml_node_t *c = kh__seq_at(rep, cs, i);
    kh_rcheck *x = &t->checks[i];
    x->name = kh_rep_text(rep, c, "name");
    x->dtype = kh_rep_text(rep, c, "dtype");
    x->n = (long long)kh_rep_num(rep, c, "n");
    x->over = (long long)kh_rep_num(rep, c, "over");
    x->max_abs = kh_rep_num(rep, c, "max_abs");
    x->max_rel = kh_rep_num(rep, c, "max_rel");
    x->nmse = kh_rep_num(rep, c, "nmse");
    x->atol = kh_rep_num(rep, c, "atol");
    x->rtol = kh_rep_num(rep, c, "rtol");
    x->worst_actual = kh_rep_num(rep, c, "worst_actual");
    x->worst_expected = kh_rep_num(rep, c, "worst_expected");
    x->pass = kh__rep_int(rep, c, "pass", 1);
    x->ratio = kh__check_ratio(x);
  }
}

static void kh__read_metrics(const kh_rep *rep, kh_rtest *t) {
  yaml_node_t *ms = kh_rep_node(rep, t->node, "metrics");
  t->nmetrics = kh__seq_len(ms);
  t->metrics = kh_xcalloc((size_t)t->nmetrics + 1, sizeof *t->metrics);
  for (int i = 0; i < t->nmetrics; i++) {
    yaml_node_t *m = kh__seq_at(rep, ms, i);
    kh_rmetric *x = &t->metrics[i];
    x->name = kh_rep_text(rep, m, "name");
    x->unit = kh_rep_text(rep, m, "unit");
    x->value = kh_rep_num(rep, m, "value");
  }
}

static void kh__read_tags(const kh_rep *rep, kh_rtest *t) {
  yaml_node_t *tags = kh_rep_node(rep, t->node, "tags");
  t->ntags = kh__seq_len(tags);
  t->tags = kh_xcalloc((size_t)t->ntags + 1, sizeof *t->tags);
  for (int i = 0; i < t->ntags; i++) {
    yaml_node_t *s = kh__seq_at(rep, tags, i);
    t->tags[i] = s->type == YAML_SCALAR_NODE ? (const char *)s->data.scalar.value : "";
  }
}

static void kh__read_test(const kh_rep *rep, yaml_node_t *n, kh_rtest *t) {
  t->node = n;
  t->id = kh_rep_text(rep, n, "id");
  t->suite = kh_rep_text(rep, n, "suite");
  t->message = kh_rep_text(rep, n, "message");
  t->file = kh_rep_text(rep, n, "file");
  t->signal = kh_rep_text(rep, n, "signal");
  t->started = kh_rep_text(rep, n, "started");
  yaml_node_t *log = kh_rep_node(rep, n, "log");
  t->log_path = kh_rep_text(rep, log, "path");
  t->log_tail = kh_rep_text(rep, log, "tail");
  t->outcome = kh_outcome_parse(kh_rep_text(rep, n, "outcome"));
  if (t->outcome < 0) t->outcome = KH_ERROR;
  t->final = strcmp(kh_rep_text(rep, n, "final"), "false") != 0;
  t->repeat = kh__rep_int(rep, n, "repeat", 1);
  t->attempt = kh__rep_int(rep, n, "attempt", 1);
  t->line = kh__rep_int(rep, n, "line", 0);
  yaml_node_t *times = kh_rep_node(rep, n, "times");
  t->wall_ms = kh_rep_num(rep, times, "wall_ms");
  t->body_ms = kh_rep_num(rep, times, "body_ms");
  kh__read_tags(rep, t);
  kh__read_kernels(rep, t);
  kh__read_checks(rep, t);
  kh__read_metrics(rep, t);
}

int kh_rtest_failed(const kh_rtest *t) {
  return t->final && kh_outcome_failed(t->outcome);
}

/* ---- The report --------------------------------------------------------- */

static void kh__read_meta(kh_rep *rep) {
  yaml_node_t *kiln = kh_rep_node(rep, rep->root, "kiln");
  yaml_node_t *run = kh_rep_node(rep, rep->root, "run");
  rep->git = kh_rep_text(rep, kiln, "git");
  rep->version = kh_rep_text(rep, kiln, "version");
  rep->command = kh_rep_text(rep, kiln, "command");
  rep->host = kh_rep_text(rep, run, "host");
  rep->backend = kh_rep_text(rep, run, "backend");
  rep->start = kh_rep_text(rep, run, "start");
  rep->end = kh_rep_text(rep, run, "end");
  rep->duration_s = kh_rep_num(rep, run, "duration_s");
  rep->interrupted = strcmp(kh_rep_text(rep, run, "interrupted"), "true") == 0;
  yaml_node_t *shard = kh_rep_node(rep, run, "shard");
  rep->shard_index = kh__rep_int(rep, shard, "index", 0);
  rep->shard_count = kh__rep_int(rep, shard, "count", 0);
  rep->shard_total = kh__rep_int(rep, shard, "selected_total", 0);
  yaml_node_t *sum = kh_rep_node(rep, rep->root, "summary");
  rep->not_run = kh__rep_int(rep, sum, "not_run", 0);
}

static void kh__read_tests(kh_rep *rep) {
  yaml_node_t *tests = kh_rep_node(rep, rep->root, "tests");
  rep->ntests = kh__seq_len(tests);
  rep->tests = kh_xcalloc((size_t)rep->ntests + 1, sizeof *rep->tests);
  for (int i = 0; i < rep->ntests; i++) {
    kh_rtest *t = &rep->tests[i];
    kh__read_test(rep, kh__seq_at(rep, tests, i), t);
    if (t->final) rep->counts[t->outcome]++, rep->total++;
  }
}

static int kh__parse(kh_rep *rep, const char *buf, size_t len, kh_err *err) {
  yaml_parser_t p;
  yaml_parser_initialize(&p);
  yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
  int rc = 0;
  if (!yaml_parser_load(&p, &rep->doc)) {
    rc = kh_errf(err, "%s:%zu:%zu: %s", rep->path, p.problem_mark.line + 1,
                  p.problem_mark.column + 1, p.problem ? p.problem : "bad YAML");
    memset(&rep->doc, 0, sizeof rep->doc);
  }
  yaml_parser_delete(&p);
  return rc;
}

int kh_rep_load(const char *arg, kh_rep *rep, kh_err *err) {
  struct stat st;
  memset(rep, 0, sizeof *rep);
  rep->path = stat(arg, &st) == 0 && S_ISDIR(st.st_mode)
                  ? kh_asprintf("%s/report.yaml", arg) : kh_strdup(arg);
  char *buf;
  size_t len;
  if (kh_read_file(rep->path, 512u << 20, &buf, &len) != 0)
    return kh_errf(err, "%s: %s", rep->path, strerror(errno));
  int rc = kh__parse(rep, buf, len, err);
  free(buf);
  if (rc != 0) return rc;
  rep->root = yaml_document_get_root_node(&rep->doc);
  if (!rep->root || !kh_rep_node(rep, rep->root, "format_version"))
    return kh_errf(err, "%s: not a kiln report (no format_version)", rep->path);
  int fmt = kh__rep_int(rep, rep->root, "format_version", 0);
  if (fmt != 1)
    return kh_errf(err, "%s: report format_version %d; this kiln reads 1",
                    rep->path, fmt);
  kh__read_meta(rep);
  kh__read_tests(rep);
  return 0;
}

void kh_rep_free(kh_rep *rep) {
  for (int i = 0; i < rep->ntests; i++) {
    free(rep->tests[i].tags);
    free(rep->tests[i].kernels);
    free(rep->tests[i].checks);
    free(rep->tests[i].metrics);
  }
  free(rep->tests);
  yaml_document_delete(&rep->doc);
  free(rep->path);
  memset(rep, 0, sizeof *rep);
}
