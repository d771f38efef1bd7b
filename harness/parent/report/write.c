/* report.yaml from the model, through the one YAML writer. The layout (key
 * order, block and flow styles) is reports/README.md's; a child's record
 * is written with every key it sent, numbers as numbers where records.h
 * says the key holds one.
 */
#include "report-impl.h"

#include <math.h>
#include <string.h>

/* ---- Small writers -------------------------------------------------------------- */

static void kstr(krep_yaml *y, const char *k, const char *v) {
  krep_yaml_key(y, k);
  krep_yaml_str(y, v);
}

static void kint(krep_yaml *y, const char *k, long long v) {
  krep_yaml_key(y, k);
  krep_yaml_int(y, v);
}

static void kbool(krep_yaml *y, const char *k, int v) {
  krep_yaml_key(y, k);
  krep_yaml_bool(y, v);
}

static void kms(krep_yaml *y, const char *k, double v) {
  krep_yaml_key(y, k);
  krep_yaml_ms(y, v);
}

static void ktime(krep_yaml *y, const char *k, double wall_s) {
  krep_yaml_key(y, k);
  if (isnan(wall_s)) {
    krep_yaml_null(y);
    return;
  }
  char iso[40];
  kh_iso_time(wall_s, iso, sizeof iso);
  krep_yaml_str(y, iso);
}

/* "" and NULL are null (git unknown, no config). */
static void kstr_or_null(krep_yaml *y, const char *k, const char *v) {
  krep_yaml_key(y, k);
  if (v && *v) krep_yaml_str(y, v);
  else krep_yaml_null(y);
}

/* ---- A child's records ---------------------------------------------------------------- */

/* The record's fields as a mapping, each value typed by its descriptor
 * (skip: a key to leave out). */
static void rec_map(krep_yaml *y, const krep_rec *r, const char *skip) {
  const kp_rdesc *d = kp_result_record(r->tag);
  krep_yaml_map(y, 0);
  for (int i = 0; i < r->n; i++) {
    if (skip && strcmp(r->f[i].key, skip) == 0) continue;
    const kp_key *k = d ? kp_key_find(d, r->f[i].key) : NULL;
    krep_yaml_key(y, r->f[i].key);
    krep_yaml_value(y, r->f[i].value, k ? (int)k->type : -1);
  }
  krep_yaml_end(y);
}

static int count(const krep_test *t, const char *tag) {
  int n = 0, i = 0;
  while (krep_test_next(t, tag, &i)) n++;
  return n;
}

static void rec_list(krep_yaml *y, const krep_test *t, const char *tag,
                     const char *key) {
  if (!count(t, tag)) return;
  krep_yaml_key(y, key);
  krep_yaml_seq(y, 0);
  int i = 0;
  const krep_rec *r;
  while ((r = krep_test_next(t, tag, &i))) rec_map(y, r, NULL);
  krep_yaml_end(y);
}

static const char *field(const krep_rec *r, const char *key) {
  for (int i = 0; i < r->n; i++)
    if (strcmp(r->f[i].key, key) == 0) return r->f[i].value;
  return NULL;
}

/* Phases as NAME_ms, the first of each name; then the parent's own times. */
static void times(krep_yaml *y, const krep_test *t) {
  krep_yaml_key(y, "times");
  krep_yaml_map(y, 0);
  for (int i = 0; i < t->nrecs; i++) {
    const krep_rec *r = t->recs[i];
    const char *name = field(r, "name"), *ms = field(r, "ms");
    if (strcmp(r->tag, "phase") != 0 || !name || !ms) continue;
    int seen = 0;
    for (int j = 0; j < i && !seen; j++)
      seen = strcmp(t->recs[j]->tag, "phase") == 0 && field(t->recs[j], "name") &&
             strcmp(field(t->recs[j], "name"), name) == 0;
    if (seen) continue;
    char key[96];
    snprintf(key, sizeof key, "%.80s_ms", name);
    krep_yaml_key(y, key);
    krep_yaml_value(y, ms, KP_DOUBLE);
  }
  if (t->warm && !isnan(t->startup_ms)) kms(y, "startup_ms", t->startup_ms);
  if (t->warm && !isnan(t->ready_wait_ms)) kms(y, "ready_wait_ms", t->ready_wait_ms);
  if (!isnan(t->wall_ms)) kms(y, "wall_ms", t->wall_ms);
  krep_yaml_end(y);
}

/* processes_left: what a test (or the run) left running, and that kiln
 * killed it. */
static void procs(krep_yaml *y, const krep_proc *p, int n) {
  if (!n) return;
  krep_yaml_key(y, "processes_left");
  krep_yaml_seq(y, 0);
  for (int i = 0; i < n; i++) {
    krep_yaml_map(y, 1);
    kint(y, "pid", p[i].pid);
    kstr(y, "command", p[i].command);
    kstr(y, "how", p[i].how);
    kbool(y, "killed", p[i].killed);
    if (p[i].error) kstr(y, "error", p[i].error);
    krep_yaml_end(y);
  }
  krep_yaml_end(y);
}

/* The first device record is device_info; a test of several devices
 * lists the others under other_devices_info, in order. */
static void device_and_memory(krep_yaml *y, const krep_test *t) {
  int i = 0;
  const krep_rec *r = krep_test_next(t, "device", &i);
  if (r) {
    krep_yaml_key(y, "device_info");
    rec_map(y, r, NULL);
  }
  if (count(t, "device") > 1) {
    krep_yaml_key(y, "other_devices_info");
    krep_yaml_seq(y, 0);
    while ((r = krep_test_next(t, "device", &i))) rec_map(y, r, NULL);
    krep_yaml_end(y);
  }
  if (!count(t, "memory")) return;
  krep_yaml_key(y, "memory");
  krep_yaml_map(y, 0);
  for (i = 0; (r = krep_test_next(t, "memory", &i));) {
    if (!field(r, "when")) continue;
    krep_yaml_key(y, field(r, "when"));
    rec_map(y, r, "when");
  }
  krep_yaml_end(y);
}

/* ---- A value this kiln does not know, as it was read ---------------------------------- */

static void any(krep_yaml *y, const krep_any *a) {
  if (a->kind == KREP_SCALAR) {
    if (!a->text) krep_yaml_null(y);
    else if (a->quoted) krep_yaml_str(y, a->text);
    else krep_yaml_value(y, a->text, -1);
    return;
  }
  if (a->kind == KREP_MAP) krep_yaml_map(y, a->flow);
  else krep_yaml_seq(y, a->flow);
  for (int i = 0; i < a->n; i++) {
    if (a->kind == KREP_MAP) krep_yaml_key(y, a->keys[i]);
    any(y, a->items[i]);
  }
  krep_yaml_end(y);
}

/* ---- A test run ------------------------------------------------------------------------ */

static void tags(krep_yaml *y, const char *list) {
  krep_yaml_key(y, "tags");
  krep_yaml_seq(y, 1);
  for (const char *p = list; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    char tag[256];
    snprintf(tag, sizeof tag, "%.*s", (int)(len < 255 ? len : 255), p);
    if (*tag) krep_yaml_str(y, tag);
    p += len + (comma ? 1 : 0);
  }
  krep_yaml_end(y);
}

static void outcome(krep_yaml *y, const krep_test *t) {
  if (t->message) kstr(y, "message", t->message);
  if (t->file && *t->file) {
    kstr(y, "file", t->file);
    kint(y, "line", t->line);
  }
  if (t->signal) kstr(y, "signal", t->signal);
  if (t->exit_code >= 0) kint(y, "exit_code", t->exit_code);
  if (t->protocol_error) kstr(y, "protocol_error", t->protocol_error);
  if (t->lost.by) {
    krep_yaml_key(y, "lost");
    krep_yaml_map(y, 1);
    kstr(y, "by", t->lost.by);
    kstr_or_null(y, "state", t->lost.state);
    kstr_or_null(y, "job", t->lost.job);
    kstr_or_null(y, "node", t->lost.node);
    if (t->lost.reason) kstr(y, "reason", t->lost.reason);
    krep_yaml_end(y);
  }
}

static void test(krep_yaml *y, const krep_test *t) {
  krep_yaml_map(y, 0);
  kstr(y, "id", t->id);
  kstr(y, "suite", t->suite);
  tags(y, t->tags);
  kstr(y, "outcome", krep_outcome_name(t->outcome));
  kbool(y, "final", t->final);
  kint(y, "repeat", t->repeat);
  kint(y, "attempt", t->attempt);
  krep_yaml_key(y, "device");
  if (t->device >= 0) krep_yaml_int(y, t->device);
  else krep_yaml_null(y);
  if (t->devices && *t->devices) {
    krep_yaml_key(y, "devices");
    krep_yaml_value(y, t->devices, KP_NUMS);
  }
  kint(y, "slots", t->slots);
  kbool(y, "warm", t->warm);
  if (krep_ran_name(t->ran)) kstr(y, "ran", krep_ran_name(t->ran));
  if (t->worker > 0) kint(y, "worker", t->worker);
  if (t->position > 0) kint(y, "position", t->position);
  if (t->pid != KP_NONE) kint(y, "pid", t->pid);
  if (t->has_seed) {
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", t->seed);
    krep_yaml_key(y, "seed");
    krep_yaml_value(y, seed, KP_UINT);
  }
  ktime(y, "started", t->started_s);
  ktime(y, "ended", t->ended_s);
  times(y, t);
  outcome(y, t);
  device_and_memory(y, t);
  if (krep_test_throttled(t)) kbool(y, "throttled", 1);
  for (int i = 0; i < krep__nlists; i++) rec_list(y, t, krep__lists[i].tag, krep__lists[i].key);
  int k = 0;
  const krep_rec *total = krep_test_next(t, "leak_total", &k);
  if (total) {
    krep_yaml_key(y, "leaks_total");
    rec_map(y, total, NULL);
  }
  procs(y, t->procs, t->nprocs);
  if (t->records_dropped) kint(y, "records_dropped", t->records_dropped);
  krep_yaml_key(y, "log");
  krep_yaml_map(y, 0);
  kstr(y, "path", t->log_path);
  kint(y, "bytes", t->log_bytes);
  kint(y, "dropped_bytes", t->log_dropped);
  kstr(y, "tail", t->log_tail ? t->log_tail : "");
  krep_yaml_end(y);
  for (int i = 0; i < t->nextra; i++) {
    krep_yaml_key(y, t->extra[i].key);
    any(y, t->extra[i].value);
  }
  if (t->merged_from >= 0) kint(y, "merged_from", t->merged_from);
  krep_yaml_end(y);
}

/* ---- The run ---------------------------------------------------------------------------- */

static void shard(krep_yaml *y, const krep_shard *s) {
  krep_yaml_map(y, 0);
  kint(y, "index", s->index);
  kint(y, "count", s->count);
  kstr(y, "method", s->method);
  kstr(y, "source", s->source);
  kint(y, "selected", s->selected);
  kint(y, "selected_total", s->total);
  krep_yaml_end(y);
}

static void sources(krep_yaml *y, const krep_report *rep) {
  krep_yaml_key(y, "merged_from");
  krep_yaml_seq(y, 0);
  for (int i = 0; i < rep->nsources; i++) {
    const krep_source *s = &rep->sources[i];
    krep_yaml_map(y, 0);
    kstr(y, "report", s->report);
    kstr_or_null(y, "git", s->git);
    kstr(y, "host", s->host);
    kstr(y, "start", s->start);
    kstr(y, "end", s->end);
    krep_yaml_key(y, "shard");
    if (s->shard.count) shard(y, &s->shard);
    else krep_yaml_null(y);
    if (s->round > 1) kint(y, "round", s->round);
    krep_yaml_end(y);
  }
  krep_yaml_end(y);
}

static void meta(krep_yaml *y, const krep_report *rep) {
  kint(y, "format_version", KREP_FORMAT);  /* what this kiln writes, whatever it read */
  krep_yaml_key(y, "kiln");
  krep_yaml_map(y, 0);
  kstr(y, "version", rep->kiln_version);
  kstr_or_null(y, "git", rep->git);
  kstr(y, "command", rep->command);
  krep_yaml_end(y);
  krep_yaml_key(y, "run");
  krep_yaml_map(y, 0);
  kstr(y, "host", rep->host);
  kstr(y, "backend", rep->backend);
  kstr_or_null(y, "config", rep->config);
  kstr_or_null(y, "out", rep->out_dir);
  kstr_or_null(y, "token_key", rep->token_key);
  if (rep->slots_from) kstr(y, "slots_from", rep->slots_from);
  if (rep->durations_from) kstr(y, "durations_from", rep->durations_from);
  ktime(y, "start", rep->start_s);
  ktime(y, "end", rep->end_s);
  kms(y, "duration_s", krep_duration(rep));
  kbool(y, "interrupted", rep->interrupted);
  kbool(y, "rebuilt_from_journal", rep->rebuilt);
  krep_yaml_key(y, "parent_gpu_clean");
  if (rep->parent_gpu_clean < 0) krep_yaml_null(y);
  else krep_yaml_bool(y, rep->parent_gpu_clean);
  if (rep->peak_rss_kb >= 0) kint(y, "kiln_peak_rss_kb", rep->peak_rss_kb);
  krep_yaml_key(y, "nothing_tested");
  krep_yaml_str(y, rep->nothing_tested);
  if (rep->containment) kstr(y, "containment", rep->containment);
  if (rep->allot_source) {
    krep_yaml_key(y, "allotment");
    krep_yaml_map(y, 1);
    kstr(y, "source", rep->allot_source);
    krep_yaml_end(y);
  }
  procs(y, rep->procs, rep->nprocs);
  if (rep->shard.count) {
    krep_yaml_key(y, "shard");
    shard(y, &rep->shard);
  }
  if (rep->nsources) sources(y, rep);
  krep_yaml_end(y);
}

static void devices(krep_yaml *y, const krep_report *rep) {
  krep_yaml_key(y, "devices");
  krep_yaml_seq(y, 0);
  for (int i = 0; i < rep->ndevices; i++) {
    const krep_device *d = &rep->devices[i];
    krep_yaml_map(y, 0);
    kint(y, "index", d->index);
    kint(y, "physical", d->physical);
    if (d->visible && *d->visible) kstr(y, "visible", d->visible);
    kstr(y, "name", d->name);
    kstr(y, "arch", d->arch);
    kint(y, "warp_size", d->warp_size);
    kint(y, "total_bytes", d->total_bytes);
    kint(y, "free_bytes", d->free_bytes);
    if (d->slots > 0) kint(y, "slots", d->slots);
    if (d->budget_bytes >= 0) kint(y, "budget_bytes", d->budget_bytes);
    const krep_probe *gone = krep_device_removed(rep, d->physical);
    if (gone) {
      kbool(y, "in_service", 0);
      kstr(y, "removed_after", gone->cause);
      kstr(y, "removed_because", gone->message);
    }
    krep_yaml_end(y);
  }
  krep_yaml_end(y);
}

/* Device health probes, as they ended. */
static void probes(krep_yaml *y, const krep_report *rep) {
  if (!rep->nprobes) return;
  krep_yaml_key(y, "health_probes");
  krep_yaml_seq(y, 0);
  for (int i = 0; i < rep->nprobes; i++) {
    const krep_probe *p = &rep->probes[i];
    krep_yaml_map(y, 1);
    kint(y, "device", p->device);
    kstr(y, "after", p->cause);
    kbool(y, "passed", p->passed);
    kstr(y, "message", p->message);
    kms(y, "ms", p->ms);
    krep_yaml_end(y);
  }
  krep_yaml_end(y);
}

static void settings(krep_yaml *y, const krep_report *rep) {
  krep_yaml_key(y, "settings");
  krep_yaml_map(y, 0);
  for (int i = 0; i < rep->nset; i++) {
    krep_yaml_key(y, rep->set_keys[i]);
    krep_yaml_value(y, rep->set_values[i], -1);
  }
  krep_yaml_end(y);
  krep_yaml_key(y, "selection");
  krep_yaml_seq(y, 1);
  for (int i = 0; i < rep->nselection; i++) krep_yaml_str(y, rep->selection[i]);
  krep_yaml_end(y);
}

static void summary(krep_yaml *y, const krep_report *rep) {
  int counts[KREP_NOUTCOMES];
  int total = krep_count(rep, counts);
  krep_yaml_key(y, "summary");
  krep_yaml_map(y, 0);
  kint(y, "total", total);
  kint(y, "runs", rep->ntests);
  for (int o = 0; o < KREP_NOUTCOMES; o++) kint(y, krep_outcome_name(o), counts[o]);
  kint(y, "not_run", rep->not_run);
  krep_yaml_end(y);
}

int krep_write(const krep_report *rep, const char *path, kh_err *err) {
  krep_yaml *y = krep_yaml_open(path, err);
  if (!y) return -1;
  krep_yaml_map(y, 0);
  meta(y, rep);
  devices(y, rep);
  probes(y, rep);
  settings(y, rep);
  summary(y, rep);
  krep_yaml_key(y, "tests");
  krep_yaml_seq(y, 0);
  for (int i = 0; i < rep->ntests; i++) test(y, rep->tests[i]);
  krep_yaml_end(y);
  krep_yaml_end(y);
  return krep_yaml_close(y, err);
}
