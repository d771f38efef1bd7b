/* Reports: the journal (append-only, one write per finished test), the
 * YAML report (libyaml emitter, written atomically) and `kiln report show`.
 * The journal reuses the protocol's record syntax, and a child's records go
 * into it verbatim, so rebuilding a report replays exactly what was seen.
 */
#include "report.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

/* ---- The report in memory ---------------------------------------------------- */

void kh_report_init(kh_report *rep) {
  memset(rep, 0, sizeof *rep);
  rep->parent_gpu_clean = -1;
}

static void kh__free_list(char **l, int n) {
  for (int i = 0; i < n; i++) free(l[i]);
  free(l);
}

void kh_report_free(kh_report *rep) {
  free(rep->kiln_version), free(rep->git), free(rep->host);
  free(rep->backend), free(rep->config), free(rep->out_dir);
  free(rep->token_key), free(rep->command);
  free(rep->shard_method), free(rep->shard_source);
  kh__free_list(rep->set_keys, rep->nset);
  kh__free_list(rep->set_values, rep->nset);
  kh__free_list(rep->selection, rep->nselection);
  for (int i = 0; i < rep->nresults; i++) kh_result_free(rep->results[i]);
  free(rep->results);
  memset(rep, 0, sizeof *rep);
}

void kh_report_add(kh_report *rep, kh_result *r) {
  rep->results = kh_xrealloc(rep->results,
                              (size_t)(rep->nresults + 1) * sizeof *rep->results);
  rep->results[rep->nresults++] = r;
}

static void kh__push(char ***list, int *n, const char *v) {
  *list = kh_xrealloc(*list, (size_t)(*n + 1) * sizeof **list);
  (*list)[(*n)++] = kh_strdup(v ? v : "");
}

/* ---- Journal: writing ------------------------------------------------------- */

static void kh__jsend(int fd, kp_record_out *r) {
  if (fd >= 0) (void)kp_send(r, fd);
}

int kh_journal_open(const kh_report *rep, const char *path, kh_err *err) {
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return kh_errf(err, "journal %s: %s", path, strerror(errno));
  kp_record_out *r = kh_xmalloc(sizeof *r);
  kp_begin(r, "kiln");
  kp_add_int(r, "format", KH_REPORT_FORMAT);
  kp_add_str(r, "version", rep->kiln_version);
  kp_add_str(r, "git", rep->git);
  kp_add_str(r, "host", rep->host);
  kp_add_str(r, "backend", rep->backend);
  kp_add_str(r, "config", rep->config);
  kp_add_str(r, "out", rep->out_dir);
  kp_add_str(r, "token_key", rep->token_key);
  kp_add_double(r, "start", rep->start_s);
  kp_add_str(r, "command", rep->command);
  kh__jsend(fd, r);
  if (rep->shard_count) {
    kp_begin(r, "shard");
    kp_add_int(r, "index", rep->shard_index);
    kp_add_int(r, "count", rep->shard_count);
    kp_add_int(r, "selected", rep->shard_selected);
    kp_add_int(r, "total", rep->shard_total);
    kp_add_str(r, "method", rep->shard_method);
    kp_add_str(r, "source", rep->shard_source);
    kh__jsend(fd, r);
  }
  for (int i = 0; i < rep->ndevices; i++) {
    const kh_device *d = &rep->devices[i];
    kp_begin(r, "device");
    kp_add_int(r, "index", d->index);
    kp_add_int(r, "physical", d->physical);
    kp_add_str(r, "visible", d->visible);
    kp_add_str(r, "name", d->name);
    kp_add_str(r, "arch", d->arch);
    kp_add_int(r, "warp_size", d->warp_size);
    kp_add_int(r, "total_bytes", d->total_bytes);
    kp_add_int(r, "free_bytes", d->free_bytes);
    kh__jsend(fd, r);
  }
  for (int i = 0; i < rep->nset; i++) {
    kp_begin(r, "setting");
    kp_add_str(r, "key", rep->set_keys[i]);
    kp_add_str(r, "value", rep->set_values[i]);
    kh__jsend(fd, r);
  }
  for (int i = 0; i < rep->nselection; i++) {
    kp_begin(r, "selector");
    kp_add_str(r, "value", rep->selection[i]);
    kh__jsend(fd, r);
  }
  free(r);
  (void)fdatasync(fd);
  return fd;
}

/* Long free text is cut so that a record always fits in one line. */
static void kh__add_text(kp_record_out *r, const char *key, const char *v) {
  char cut[8192];
  snprintf(cut, sizeof cut, "%s", v ? v : "");
  kp_add_str(r, key, cut);
}

void kh_journal_result(int fd, const kh_result *x) {
  if (fd < 0) return;
  kp_record_out *r = kh_xmalloc(sizeof *r);
  kp_begin(r, "run");
  kp_add_str(r, "id", x->id);
  kp_add_int(r, "seq", x->seq);
  kp_add_str(r, "suite", x->suite);
  kp_add_str(r, "tags", x->tags);
  kp_add_int(r, "repeat", x->repeat);
  kp_add_int(r, "attempt", x->attempt);
  kp_add_int(r, "device", x->device);
  kp_add_int(r, "slots", x->slots);
  kp_add_str(r, "outcome", kh_outcome_name(x->outcome));
  kp_add_int(r, "retried", x->retried);
  kh__add_text(r, "message", x->message);
  kh__add_text(r, "file", x->file);
  kp_add_int(r, "line", x->line);
  kp_add_str(r, "signal", x->signal);
  kp_add_int(r, "exit_code", x->exit_code);
  kp_add_double(r, "start", x->start_s);
  kp_add_double(r, "end", x->end_s);
  kp_add_double(r, "wall_ms", x->wall_ms);
  if (x->warm) {
    kp_add_int(r, "warm", 1);
    kp_add_double(r, "startup_ms", x->startup_ms);
    kp_add_double(r, "ready_wait_ms", x->ready_wait_ms);
  }
  kp_add_str(r, "log", x->log_path);
  kp_add_int(r, "log_bytes", x->log_bytes);
  kp_add_int(r, "log_dropped", x->log_dropped);
  kp_add_int(r, "lines_dropped", x->lines_dropped);
  kh__add_text(r, "proto_error", x->proto_error);
  kh__jsend(fd, r);
  kh_buf b = {0};
  for (int i = 0; i < x->nlines; i++) {
    kh_buf_add(&b, "rec ", 4);
    kh_buf_add(&b, x->lines[i], strlen(x->lines[i]));
    kh_buf_add(&b, "\n", 1);
  }
  if (b.len) (void)kh_write_all(fd, b.data, b.len);
  kh_buf_free(&b);
  kp_begin(r, "tail");
  kh__add_text(r, "text", x->log_tail);
  kh__jsend(fd, r);
  kp_begin(r, "done");
  kh__jsend(fd, r);
  free(r);
  /* No fdatasync here: a write() is in the page cache the moment it
   * returns and survives kiln being killed, even by SIGKILL; a sync only
   * guards against the machine going down, and one per test made the
   * parent's loop wait on the disk (docs/reliability.md). The journal is
   * synced once when the run finishes. */
}

void kh_journal_finish(int fd, const kh_report *rep) {
  if (fd < 0) return;
  kp_record_out *r = kh_xmalloc(sizeof *r);
  kp_begin(r, "finish");
  kp_add_double(r, "end", rep->end_s);
  kp_add_int(r, "interrupted", rep->interrupted);
  kp_add_int(r, "not_run", rep->not_run);
  kp_add_int(r, "parent_gpu_clean", rep->parent_gpu_clean);
  kh__jsend(fd, r);
  free(r);
  (void)fdatasync(fd);
}

/* ---- Journal: reading ---------------------------------------------------------- */

static char *kh__get(const kp_record *r, const char *key) {
  const char *v = kp_get(r, key);
  return kh_strdup(v ? v : "");
}

static int kh__geti(const kp_record *r, const char *key, int dflt) {
  long long v;
  return kp_get_int(r, key, &v) == 0 ? (int)v : dflt;
}

static double kh__getd(const kp_record *r, const char *key) {
  double v;
  return kp_get_double(r, key, &v) == 0 ? v : 0.0;
}

static void kh__read_header(kh_report *rep, const kp_record *r) {
  rep->kiln_version = kh__get(r, "version");
  rep->git = kh__get(r, "git");
  rep->host = kh__get(r, "host");
  rep->backend = kh__get(r, "backend");
  rep->config = kh__get(r, "config");
  rep->out_dir = kh__get(r, "out");
  rep->token_key = kh__get(r, "token_key");
  rep->command = kh__get(r, "command");
  rep->start_s = kh__getd(r, "start");
}

static void kh__read_device(kh_report *rep, const kp_record *r) {
  if (rep->ndevices == KH_MAX_DEVICES) return;
  kh_device *d = &rep->devices[rep->ndevices++];
  long long v;
  d->index = kh__geti(r, "index", 0);
  d->physical = kh__geti(r, "physical", 0);
  snprintf(d->visible, sizeof d->visible, "%s", kp_get(r, "visible") ? kp_get(r, "visible") : "");
  snprintf(d->name, sizeof d->name, "%s", kp_get(r, "name") ? kp_get(r, "name") : "");
  snprintf(d->arch, sizeof d->arch, "%s", kp_get(r, "arch") ? kp_get(r, "arch") : "");
  d->warp_size = kh__geti(r, "warp_size", 0);
  d->total_bytes = kp_get_int(r, "total_bytes", &v) == 0 ? v : 0;
  d->free_bytes = kp_get_int(r, "free_bytes", &v) == 0 ? v : 0;
}

static kh_result *kh__read_run(const kp_record *r) {
  char *id = kh__get(r, "id"), *suite = kh__get(r, "suite"),
       *tags = kh__get(r, "tags");
  kh_result *x = kh_result_new(id, suite, tags);
  free(id), free(suite), free(tags);
  x->seq = kh__geti(r, "seq", 0);
  x->repeat = kh__geti(r, "repeat", 1);
  x->attempt = kh__geti(r, "attempt", 1);
  x->device = kh__geti(r, "device", -1);
  x->slots = kh__geti(r, "slots", 1);
  x->outcome = kh_outcome_parse(kp_get(r, "outcome") ? kp_get(r, "outcome") : "");
  if (x->outcome < 0) x->outcome = KH_ERROR;
  x->retried = kh__geti(r, "retried", 0);
  const char *keys[] = {"message", "file", "signal", "log", "proto_error"};
  char **fields[] = {&x->message, &x->file, &x->signal, &x->log_path,
                     &x->proto_error};
  for (size_t i = 0; i < 5; i++) {
    const char *v = kp_get(r, keys[i]);
    if (v && *v) kh_result_set(fields[i], v);
  }
  x->line = kh__geti(r, "line", 0);
  x->exit_code = kh__geti(r, "exit_code", -1);
  x->start_s = kh__getd(r, "start");
  x->end_s = kh__getd(r, "end");
  x->wall_ms = kh__getd(r, "wall_ms");
  x->warm = kh__geti(r, "warm", 0);
  if (x->warm) {
    x->startup_ms = kh__getd(r, "startup_ms");
    x->ready_wait_ms = kh__getd(r, "ready_wait_ms");
  }
  x->log_bytes = kh__geti(r, "log_bytes", 0);
  x->log_dropped = kh__geti(r, "log_dropped", 0);
  x->lines_dropped = kh__geti(r, "lines_dropped", 0);
  return x;
}

static void kh__read_line(kh_report *rep, kh_result **cur, char *line) {
  if (strncmp(line, "rec ", 4) == 0) {
    if (*cur) {
      (*cur)->lines = kh_xrealloc((*cur)->lines,
                                   (size_t)((*cur)->nlines + 1) * sizeof(char *));
      (*cur)->lines[(*cur)->nlines++] = kh_strdup(line + 4);
    }
    return;
  }
  kp_record r;
  if (kp_parse(line, &r, NULL) != 0) return;  /* a torn last line */
  if (strcmp(r.tag, "kiln") == 0) kh__read_header(rep, &r);
  else if (strcmp(r.tag, "device") == 0) kh__read_device(rep, &r);
  else if (strcmp(r.tag, "shard") == 0) {
    rep->shard_index = kh__geti(&r, "index", 0);
    rep->shard_count = kh__geti(&r, "count", 0);
    rep->shard_selected = kh__geti(&r, "selected", 0);
    rep->shard_total = kh__geti(&r, "total", 0);
    rep->shard_method = kh__get(&r, "method");
    rep->shard_source = kh__get(&r, "source");
  }
  else if (strcmp(r.tag, "setting") == 0) {
    int n = rep->nset;
    kh__push(&rep->set_keys, &n, kp_get(&r, "key"));
    kh__push(&rep->set_values, &rep->nset, kp_get(&r, "value"));
  } else if (strcmp(r.tag, "selector") == 0)
    kh__push(&rep->selection, &rep->nselection, kp_get(&r, "value"));
  else if (strcmp(r.tag, "run") == 0) {
    kh_result_free(*cur);
    *cur = kh__read_run(&r);
  } else if (strcmp(r.tag, "tail") == 0 && *cur) {
    kh_result_set(&(*cur)->log_tail, kp_get(&r, "text"));
  } else if (strcmp(r.tag, "done") == 0 && *cur) {
    kh_report_add(rep, *cur);
    *cur = NULL;
  } else if (strcmp(r.tag, "finish") == 0) {
    rep->finished = 1;
    rep->end_s = kh__getd(&r, "end");
    rep->interrupted = kh__geti(&r, "interrupted", 0);
    rep->not_run = kh__geti(&r, "not_run", 0);
    rep->parent_gpu_clean = kh__geti(&r, "parent_gpu_clean", -1);
  }
}

/* The journal holds runs in the order they finished; the report lists them
 * in the order they were scheduled, as a live run's report does. */
static int kh__by_seq(const void *a, const void *b) {
  const kh_result *x = *(kh_result *const *)a, *y = *(kh_result *const *)b;
  return (x->seq > y->seq) - (x->seq < y->seq);
}

int kh_journal_read(const char *path, kh_report *rep, kh_err *err) {
  FILE *f = fopen(path, "re");
  if (!f) return kh_errf(err, "%s: %s", path, strerror(errno));
  kh_report_init(rep);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  kh_result *cur = NULL;
  while ((n = getline(&line, &cap, f)) > 0) {
    if (line[n - 1] != '\n') break;  /* torn by a kill mid-write */
    line[n - 1] = '\0';
    kh__read_line(rep, &cur, line);
  }
  kh_result_free(cur);   /* a run whose `done` never came */
  free(line);
  fclose(f);
  if (!rep->kiln_version)
    return kh_errf(err, "%s: not a kiln journal (no header record)", path);
  if (rep->nresults > 1)
    qsort(rep->results, (size_t)rep->nresults, sizeof *rep->results, kh__by_seq);
  if (!rep->finished) {
    rep->interrupted = 1;
    rep->end_s = rep->start_s;
    for (int i = 0; i < rep->nresults; i++)
      if (rep->results[i]->end_s > rep->end_s) rep->end_s = rep->results[i]->end_s;
  }
  return 0;
}

/* ---- YAML emitter helpers ------------------------------------------------------ */

typedef struct kh__y {
  yaml_emitter_t em;
  int failed;
} kh__y;

static void kh__y_emit(kh__y *y, yaml_event_t *ev, int ok) {
  if (!ok) y->failed = 1;
  if (y->failed) {
    if (ok) yaml_event_delete(ev);
    return;
  }
  if (!yaml_emitter_emit(&y->em, ev)) y->failed = 1;
}

static void kh__y_map(kh__y *y, int flow) {
  yaml_event_t ev;
  kh__y_emit(y, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
      flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE));
}

static void kh__y_end_map(kh__y *y) {
  yaml_event_t ev;
  kh__y_emit(y, &ev, yaml_mapping_end_event_initialize(&ev));
}

static void kh__y_seq(kh__y *y, int flow) {
  yaml_event_t ev;
  kh__y_emit(y, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
      flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE));
}

static void kh__y_end_seq(kh__y *y) {
  yaml_event_t ev;
  kh__y_emit(y, &ev, yaml_sequence_end_event_initialize(&ev));
}

static void kh__y_raw(kh__y *y, const char *text, yaml_scalar_style_t style) {
  yaml_event_t ev;
  kh__y_emit(y, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL,
      (yaml_char_t *)text, (int)strlen(text), 1, 1, style));
}

/* Would a plain scalar with this text read back as something other than a
 * string? */
static int kh__misreads(const char *s) {
  static const char *const words[] = {"true", "false", "yes", "no", "on",
                                      "off", "null", "~", "y", "n", NULL};
  if (!*s) return 1;
  for (int i = 0; words[i]; i++)
    if (strcasecmp(s, words[i]) == 0) return 1;
  char *end;
  (void)strtod(s, &end);
  return *end == '\0' || s[0] == '.' || s[0] == '-' || s[0] == '+';
}

static void kh__y_str(kh__y *y, const char *text) {
  char *clean = kh_strdup(text ? text : "");
  kh_text_clean(clean);
  yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;
  if (kh__misreads(clean)) style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
  else if (strchr(clean, '\n')) style = YAML_LITERAL_SCALAR_STYLE;
  kh__y_raw(y, clean, style);
  free(clean);
}

/* A protocol value: a number when it is one, else a string. */
static void kh__y_auto(kh__y *y, const char *v) {
  static const char *const special[][2] = {
      {"nan", ".nan"}, {"inf", ".inf"}, {"-inf", "-.inf"}};
  if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0) {
    kh__y_raw(y, v, YAML_PLAIN_SCALAR_STYLE);
    return;
  }
  for (size_t i = 0; i < 3; i++)
    if (strcmp(v, special[i][0]) == 0) {
      kh__y_raw(y, special[i][1], YAML_PLAIN_SCALAR_STYLE);
      return;
    }
  char *end;
  if (*v && !isspace((unsigned char)*v) && (strtod(v, &end), *end == '\0') &&
      !strchr(v, 'x') && !strchr(v, 'X') && strcasecmp(v, "infinity") != 0) {
    kh__y_raw(y, v, YAML_PLAIN_SCALAR_STYLE);
    return;
  }
  kh__y_str(y, v);
}

static void kh__y_key(kh__y *y, const char *key) {
  kh__y_raw(y, key, YAML_PLAIN_SCALAR_STYLE);
}

static void kh__y_kv(kh__y *y, const char *key, const char *v) {
  kh__y_key(y, key);
  kh__y_str(y, v);
}

static void kh__y_kvi(kh__y *y, const char *key, long long v) {
  char num[32];
  snprintf(num, sizeof num, "%lld", v);
  kh__y_key(y, key);
  kh__y_raw(y, num, YAML_PLAIN_SCALAR_STYLE);
}

static void kh__y_kvd(kh__y *y, const char *key, double v) {
  char num[40];
  snprintf(num, sizeof num, "%.6g", v);
  kh__y_key(y, key);
  kh__y_auto(y, num);
}

static void kh__y_kvb(kh__y *y, const char *key, int v) {
  kh__y_key(y, key);
  kh__y_raw(y, v ? "true" : "false", YAML_PLAIN_SCALAR_STYLE);
}

static void kh__y_null(kh__y *y, const char *key) {
  kh__y_key(y, key);
  kh__y_raw(y, "null", YAML_PLAIN_SCALAR_STYLE);
}

static void kh__y_time(kh__y *y, const char *key, double wall_s) {
  char iso[40];
  kh_iso_time(wall_s, iso, sizeof iso);
  kh__y_kv(y, key, iso);
}

static void kh__y_tags(kh__y *y, const char *tags) {
  kh__y_key(y, "tags");
  kh__y_seq(y, 1);
  char *copy = kh_strdup(tags), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
    kh__y_str(y, t);
  free(copy);
  kh__y_end_seq(y);
}

/* ---- Test records ----------------------------------------------------------------- */

/* Calls fn for each of the result's records with this tag, parsed. */
static void kh__each(const kh_result *r, const char *tag,
                     void (*fn)(kh__y *, const kp_record *, void *), kh__y *y,
                     void *arg) {
  char *buf = kh_xmalloc(KP_MAX_LINE);
  size_t tlen = strlen(tag);
  for (int i = 0; i < r->nlines; i++) {
    if (strncmp(r->lines[i], tag, tlen) != 0 ||
        (r->lines[i][tlen] != ' ' && r->lines[i][tlen] != '\0'))
      continue;
    snprintf(buf, KP_MAX_LINE, "%s", r->lines[i]);
    kp_record rec;
    if (kp_parse(buf, &rec, NULL) == 0) fn(y, &rec, arg);
  }
  free(buf);
}

static int kh__count(const kh_result *r, const char *tag) {
  int n = 0;
  size_t tlen = strlen(tag);
  for (int i = 0; i < r->nlines; i++)
    n += strncmp(r->lines[i], tag, tlen) == 0 &&
         (r->lines[i][tlen] == ' ' || r->lines[i][tlen] == '\0');
  return n;
}

/* A record as a mapping of every key it has (skip: one key to leave out). */
static void kh__rec_map(kh__y *y, const kp_record *rec, void *skip) {
  kh__y_map(y, 0);
  for (int i = 0; i < rec->nfields; i++) {
    if (skip && strcmp(rec->fields[i].key, (const char *)skip) == 0) continue;
    kh__y_key(y, rec->fields[i].key);
    kh__y_auto(y, rec->fields[i].value);
  }
  kh__y_end_map(y);
}

static void kh__rec_list(kh__y *y, const kh_result *r, const char *tag,
                         const char *key) {
  if (!kh__count(r, tag)) return;
  kh__y_key(y, key);
  kh__y_seq(y, 0);
  kh__each(r, tag, kh__rec_map, y, NULL);
  kh__y_end_seq(y);
}

/* Phases as NAME_ms, the first of each name (shared-process runs repeat
 * none, but a confused child might). */
static void kh__phase(kh__y *y, const kp_record *rec, void *seen_buf) {
  const char *name = kp_get(rec, "name"), *ms = kp_get(rec, "ms");
  if (!name || !ms) return;
  kh_buf *seen = seen_buf;
  char tag[80];
  snprintf(tag, sizeof tag, "|%s|", name);
  if (seen->data && strstr(seen->data, tag)) return;
  kh_buf_add(seen, tag, strlen(tag));
  char key[80];
  snprintf(key, sizeof key, "%s_ms", name);
  kh__y_key(y, key);
  kh__y_auto(y, ms);
}

static void kh__memory(kh__y *y, const kp_record *rec, void *arg) {
  (void)arg;
  const char *when = kp_get(rec, "when");
  if (!when) return;
  kh__y_key(y, when);
  kh__rec_map(y, rec, (void *)"when");
}

static void kh__emit_times(kh__y *y, const kh_result *r) {
  kh__y_key(y, "times");
  kh__y_map(y, 0);
  kh_buf seen = {0};
  kh__each(r, "phase", kh__phase, y, &seen);
  kh_buf_free(&seen);
  if (r->warm && r->startup_ms >= 0) kh__y_kvd(y, "startup_ms", r->startup_ms);
  if (r->warm) kh__y_kvd(y, "ready_wait_ms", r->ready_wait_ms);
  kh__y_kvd(y, "wall_ms", r->wall_ms);
  kh__y_end_map(y);
}

static void kh__emit_outcome(kh__y *y, const kh_result *r) {
  if (r->message) kh__y_kv(y, "message", r->message);
  if (r->file && *r->file) {
    kh__y_kv(y, "file", r->file);
    kh__y_kvi(y, "line", r->line);
  }
  if (r->signal) kh__y_kv(y, "signal", r->signal);
  if (r->exit_code >= 0) kh__y_kvi(y, "exit_code", r->exit_code);
  if (r->proto_error) kh__y_kv(y, "protocol_error", r->proto_error);
}

static void kh__emit_log(kh__y *y, const kh_result *r) {
  kh__y_key(y, "log");
  kh__y_map(y, 0);
  if (r->log_path) kh__y_kv(y, "path", r->log_path);
  else kh__y_null(y, "path");
  kh__y_kvi(y, "bytes", r->log_bytes);
  kh__y_kvi(y, "dropped_bytes", r->log_dropped);
  kh__y_kv(y, "tail", r->log_tail ? r->log_tail : "");
  kh__y_end_map(y);
}

static void kh__emit_result(kh__y *y, const kh_result *r) {
  char *buf = kh_xmalloc(KP_MAX_LINE);
  kh__y_map(y, 0);
  kh__y_kv(y, "id", r->id);
  kh__y_kv(y, "suite", r->suite);
  kh__y_tags(y, r->tags);
  kh__y_kv(y, "outcome", kh_outcome_name(r->outcome));
  kh__y_kvb(y, "final", !r->retried);
  kh__y_kvi(y, "repeat", r->repeat);
  kh__y_kvi(y, "attempt", r->attempt);
  if (r->device >= 0) kh__y_kvi(y, "device", r->device);
  else kh__y_null(y, "device");
  kh__y_kvi(y, "slots", r->slots);
  kh__y_kvb(y, "warm", r->warm);
  const char *v;
  if ((v = kh_result_find(r, "test", 0, "pid", buf))) kh__y_key(y, "pid"), kh__y_auto(y, v);
  if ((v = kh_result_find(r, "test", 0, "seed", buf))) kh__y_key(y, "seed"), kh__y_auto(y, v);
  kh__y_time(y, "started", r->start_s);
  kh__y_time(y, "ended", r->end_s);
  kh__emit_times(y, r);
  kh__emit_outcome(y, r);
  if (kh__count(r, "device")) {
    kh__y_key(y, "device_info");
    kh__each(r, "device", kh__rec_map, y, NULL);
  }
  if (kh__count(r, "memory")) {
    kh__y_key(y, "memory");
    kh__y_map(y, 0);
    kh__each(r, "memory", kh__memory, y, NULL);
    kh__y_end_map(y);
  }
  kh__rec_list(y, r, "kernel", "kernels");
  kh__rec_list(y, r, "check", "checks");
  kh__rec_list(y, r, "leak", "leaks");
  kh__rec_list(y, r, "note", "notes");
  kh__rec_list(y, r, "metric", "metrics");
  if (r->lines_dropped) kh__y_kvi(y, "records_dropped", r->lines_dropped);
  kh__emit_log(y, r);
  kh__y_end_map(y);
  free(buf);
}

/* ---- The report ---------------------------------------------------------------- */

static void kh__emit_meta(kh__y *y, const kh_report *rep) {
  kh__y_kvi(y, "format_version", KH_REPORT_FORMAT);
  kh__y_key(y, "kiln");
  kh__y_map(y, 0);
  kh__y_kv(y, "version", rep->kiln_version);
  if (rep->git && *rep->git) kh__y_kv(y, "git", rep->git);
  else kh__y_null(y, "git");
  kh__y_kv(y, "command", rep->command);
  kh__y_end_map(y);
  kh__y_key(y, "run");
  kh__y_map(y, 0);
  kh__y_kv(y, "host", rep->host);
  kh__y_kv(y, "backend", rep->backend);
  if (rep->config && *rep->config) kh__y_kv(y, "config", rep->config);
  else kh__y_null(y, "config");
  kh__y_kv(y, "out", rep->out_dir);
  kh__y_kv(y, "token_key", rep->token_key);
  kh__y_time(y, "start", rep->start_s);
  kh__y_time(y, "end", rep->end_s);
  kh__y_kvd(y, "duration_s", rep->end_s - rep->start_s);
  kh__y_kvb(y, "interrupted", rep->interrupted);
  kh__y_kvb(y, "rebuilt_from_journal", rep->rebuilt);
  kh__y_key(y, "parent_gpu_clean");
  kh__y_raw(y, rep->parent_gpu_clean < 0 ? "null"
               : rep->parent_gpu_clean ? "true" : "false",
            YAML_PLAIN_SCALAR_STYLE);
  if (rep->shard_count) {
    kh__y_key(y, "shard");
    kh__y_map(y, 0);
    kh__y_kvi(y, "index", rep->shard_index);
    kh__y_kvi(y, "count", rep->shard_count);
    kh__y_kv(y, "method", rep->shard_method);
    kh__y_kv(y, "source", rep->shard_source);
    kh__y_kvi(y, "selected", rep->shard_selected);
    kh__y_kvi(y, "selected_total", rep->shard_total);
    kh__y_end_map(y);
  }
  kh__y_end_map(y);
}

static void kh__emit_devices(kh__y *y, const kh_report *rep) {
  kh__y_key(y, "devices");
  kh__y_seq(y, 0);
  for (int i = 0; i < rep->ndevices; i++) {
    const kh_device *d = &rep->devices[i];
    kh__y_map(y, 0);
    kh__y_kvi(y, "index", d->index);
    kh__y_kvi(y, "physical", d->physical);
    if (*d->visible) kh__y_kv(y, "visible", d->visible);
    kh__y_kv(y, "name", d->name);
    kh__y_kv(y, "arch", d->arch);
    kh__y_kvi(y, "warp_size", d->warp_size);
    kh__y_kvi(y, "total_bytes", d->total_bytes);
    kh__y_kvi(y, "free_bytes", d->free_bytes);
    kh__y_end_map(y);
  }
  kh__y_end_seq(y);
}

static void kh__emit_settings(kh__y *y, const kh_report *rep) {
  kh__y_key(y, "settings");
  kh__y_map(y, 0);
  for (int i = 0; i < rep->nset; i++) {
    kh__y_key(y, rep->set_keys[i]);
    kh__y_auto(y, rep->set_values[i]);
  }
  kh__y_end_map(y);
  kh__y_key(y, "selection");
  kh__y_seq(y, 1);
  for (int i = 0; i < rep->nselection; i++) kh__y_str(y, rep->selection[i]);
  kh__y_end_seq(y);
}

static void kh__emit_summary(kh__y *y, const kh_report *rep) {
  int counts[KH_NOUTCOMES] = {0}, total = 0;
  for (int i = 0; i < rep->nresults; i++)
    if (!rep->results[i]->retried) counts[rep->results[i]->outcome]++, total++;
  kh__y_key(y, "summary");
  kh__y_map(y, 0);
  kh__y_kvi(y, "total", total);
  kh__y_kvi(y, "runs", rep->nresults);
  for (int o = 0; o < KH_NOUTCOMES; o++)
    kh__y_kvi(y, kh_outcome_name(o), counts[o]);
  kh__y_kvi(y, "not_run", rep->not_run);
  kh__y_end_map(y);
}

static int kh__y_out(void *data, unsigned char *buffer, size_t size) {
  kh_buf_add(data, buffer, size);
  return 1;
}

int kh_report_write(const kh_report *rep, const char *path, kh_err *err) {
  kh__y y = {0};
  kh_buf out = {0};
  yaml_event_t ev;
  if (!yaml_emitter_initialize(&y.em))
    return kh_errf(err, "%s: cannot start the YAML emitter", path);
  yaml_emitter_set_output(&y.em, kh__y_out, &out);
  yaml_emitter_set_width(&y.em, 100);
  yaml_emitter_set_unicode(&y.em, 1);
  kh__y_emit(&y, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
  kh__y_emit(&y, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0));
  kh__y_map(&y, 0);
  kh__emit_meta(&y, rep);
  kh__emit_devices(&y, rep);
  kh__emit_settings(&y, rep);
  kh__emit_summary(&y, rep);
  kh__y_key(&y, "tests");
  kh__y_seq(&y, 0);
  for (int i = 0; i < rep->nresults; i++) kh__emit_result(&y, rep->results[i]);
  kh__y_end_seq(&y);
  kh__y_end_map(&y);
  kh__y_emit(&y, &ev, yaml_document_end_event_initialize(&ev, 0));
  kh__y_emit(&y, &ev, yaml_stream_end_event_initialize(&ev));
  int rc = 0;
  if (y.failed)
    rc = kh_errf(err, "%s: YAML emitter: %s", path,
                  y.em.problem ? y.em.problem : "failed");
  else if (kh_write_atomic(path, out.data, out.len) != 0)
    rc = kh_errf(err, "%s: %s", path, strerror(errno));
  yaml_emitter_delete(&y.em);
  kh_buf_free(&out);
  return rc;
}

/* ---- Reading a report back: `kiln report show` ---------------------------------- */

typedef struct kh__doc {
  yaml_document_t d;
} kh__doc;

static yaml_node_t *kh__node(kh__doc *doc, yaml_node_t *map, const char *key) {
  if (!map || map->type != YAML_MAPPING_NODE) return NULL;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
       p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(&doc->d, p->key);
    if (k && k->type == YAML_SCALAR_NODE &&
        strcmp((const char *)k->data.scalar.value, key) == 0)
      return yaml_document_get_node(&doc->d, p->value);
  }
  return NULL;
}

static const char *kh__text(kh__doc *doc, yaml_node_t *map, const char *key) {
  yaml_node_t *n = kh__node(doc, map, key);
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value
                                          : "";
}

static void kh__show_check(kh__doc *doc, yaml_node_t *t, FILE *out) {
  yaml_node_t *checks = kh__node(doc, t, "checks");
  if (!checks || checks->type != YAML_SEQUENCE_NODE) return;
  for (yaml_node_item_t *i = checks->data.sequence.items.start;
       i < checks->data.sequence.items.top; i++) {
    yaml_node_t *c = yaml_document_get_node(&doc->d, *i);
    if (strcmp(kh__text(doc, c, "pass"), "0") != 0) continue;
    fprintf(out, "        check %s: %s of %s over tolerance (atol %s, rtol %s); "
                 "worst [%s] = %s, expected %s; max abs %s, nmse %s\n",
            kh__text(doc, c, "name"), kh__text(doc, c, "over"),
            kh__text(doc, c, "n"), kh__text(doc, c, "atol"),
            kh__text(doc, c, "rtol"), kh__text(doc, c, "worst_index"),
            kh__text(doc, c, "worst_actual"), kh__text(doc, c, "worst_expected"),
            kh__text(doc, c, "max_abs"), kh__text(doc, c, "nmse"));
  }
}

static void kh__show_test(kh__doc *doc, yaml_node_t *t, FILE *out) {
  const char *outcome = kh__text(doc, t, "outcome");
  if (strcmp(kh__text(doc, t, "final"), "true") != 0) return;
  if (strcmp(outcome, "pass") == 0) return;
  fprintf(out, "  %-7s %s", outcome, kh__text(doc, t, "id"));
  if (strcmp(kh__text(doc, t, "repeat"), "1") != 0)
    fprintf(out, " (repeat %s)", kh__text(doc, t, "repeat"));
  fprintf(out, "\n");
  const char *file = kh__text(doc, t, "file");
  if (*file) fprintf(out, "        %s:%s: ", file, kh__text(doc, t, "line"));
  else fprintf(out, "        ");
  fprintf(out, "%s\n", kh__text(doc, t, "message"));
  kh__show_check(doc, t, out);
  yaml_node_t *log = kh__node(doc, t, "log");
  const char *path = kh__text(doc, log, "path");
  if (*path) fprintf(out, "        log: %s\n", path);
}

static void kh__show_summary(kh__doc *doc, yaml_node_t *root, FILE *out) {
  yaml_node_t *run = kh__node(doc, root, "run");
  yaml_node_t *sum = kh__node(doc, root, "summary");
  fprintf(out, "backend %s on %s, %s .. %s (%s s)%s\n",
          kh__text(doc, run, "backend"), kh__text(doc, run, "host"),
          kh__text(doc, run, "start"), kh__text(doc, run, "end"),
          kh__text(doc, run, "duration_s"),
          strcmp(kh__text(doc, run, "interrupted"), "true") == 0
              ? ", INTERRUPTED" : "");
  fprintf(out, "%s tests:", kh__text(doc, sum, "total"));
  for (int o = 0; o < KH_NOUTCOMES; o++) {
    const char *n = kh__text(doc, sum, kh_outcome_name(o));
    if (*n && strcmp(n, "0") != 0) fprintf(out, " %s %s", n, kh_outcome_name(o));
  }
  const char *nr = kh__text(doc, sum, "not_run");
  if (*nr && strcmp(nr, "0") != 0) fprintf(out, " (%s not run)", nr);
  fprintf(out, "\n");
}

int kh_report_show(const char *arg, FILE *out, kh_err *err) {
  struct stat st;
  char *path = stat(arg, &st) == 0 && S_ISDIR(st.st_mode)
                   ? kh_asprintf("%s/report.yaml", arg) : kh_strdup(arg);
  char *buf;
  size_t len;
  if (kh_read_file(path, 256u << 20, &buf, &len) != 0) {
    kh_errf(err, "%s: %s", path, strerror(errno));
    free(path);
    return -1;
  }
  yaml_parser_t p;
  kh__doc doc;
  yaml_parser_initialize(&p);
  yaml_parser_set_input_string(&p, (unsigned char *)buf, len);
  int rc = 0;
  if (!yaml_parser_load(&p, &doc.d)) {
    rc = kh_errf(err, "%s:%zu:%zu: %s", path, p.problem_mark.line + 1,
                  p.problem_mark.column + 1, p.problem ? p.problem : "bad YAML");
  } else {
    yaml_node_t *root = yaml_document_get_root_node(&doc.d);
    if (!kh__node(&doc, root, "format_version")) {
      rc = kh_errf(err, "%s: not a kiln report (no format_version)", path);
    } else {
      fprintf(out, "kiln report %s (format %s)\n", path,
              kh__text(&doc, root, "format_version"));
      kh__show_summary(&doc, root, out);
      yaml_node_t *tests = kh__node(&doc, root, "tests");
      if (tests && tests->type == YAML_SEQUENCE_NODE)
        for (yaml_node_item_t *i = tests->data.sequence.items.start;
             i < tests->data.sequence.items.top; i++)
          kh__show_test(&doc, yaml_document_get_node(&doc.d, *i), out);
    }
    yaml_document_delete(&doc.d);
  }
  yaml_parser_delete(&p);
  free(buf);
  free(path);
  return rc;
}
