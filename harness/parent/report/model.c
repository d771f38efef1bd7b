/* The report model: outcomes, test runs and the records they keep, and the
 * pool that owns their strings. The pool is an arena with interning:
 * names, tags, keys, file names and whole records a thousand tests share
 * (the same device, the same memory figures) are stored once, so a run's
 * memory grows by a few hundred bytes per no-op test. See report.h.
 */
#include "report-impl.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* A child may keep this much per test in the report; past it, records are
 * counted and dropped so that a runaway child cannot exhaust the parent. */
#define MAX_RECS 20000
#define MAX_REC_BYTES (16u << 20)
#define CHUNK (16u << 10)

/* ---- Outcomes ----------------------------------------------------------------- */

static const struct {
  const char *name;
  int failed;
  const char *color;
  int retryable;
} outcomes[] = {
#define ROW(e, n, f, c, r) {n, f, c, r},
    KREP_OUTCOME_MAP(ROW)
#undef ROW
};

const char *krep_outcome_name(int o) {
  return o >= 0 && o < KREP_NOUTCOMES ? outcomes[o].name : "unknown";
}

const char *krep_outcome_color(int o) {
  return o >= 0 && o < KREP_NOUTCOMES ? outcomes[o].color : "0";
}

int krep_outcome_failed(int o) {
  return o < 0 || o >= KREP_NOUTCOMES || outcomes[o].failed;
}

int krep_outcome_retryable(int o) {
  return o >= 0 && o < KREP_NOUTCOMES && outcomes[o].retryable;
}

int krep_outcome_parse(const char *name) {
  for (int i = 0; name && i < KREP_NOUTCOMES; i++)
    if (strcmp(outcomes[i].name, name) == 0) return i;
  return -1;
}

/* ---- The pool ------------------------------------------------------------------ */

struct krep_pool {
  char *chunk;
  size_t used, size;
  char **chunks;
  int nchunks;
  const char **strs;        /* open addressing, power-of-two size */
  size_t nstrs, strs_cap;
  const krep_rec **recs;
  size_t nrecs, recs_cap;
};

void *krep__alloc(krep_pool *p, size_t n) {
  n = (n + 7) & ~(size_t)7;
  if (p->used + n > p->size) {
    size_t size = n > CHUNK ? n : CHUNK;
    p->chunk = kh_xmalloc(size);
    p->chunks = kh_xrealloc(p->chunks, (size_t)(p->nchunks + 1) * sizeof *p->chunks);
    p->chunks[p->nchunks++] = p->chunk;
    p->used = 0;
    p->size = size;
  }
  void *r = p->chunk + p->used;
  p->used += n;
  return r;
}

static uint64_t hash_bytes(uint64_t h, const char *s) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  return (h ^ 0xff) * 0x100000001b3ULL;   /* a separator between strings */
}

/* Grows a set of n entries to twice cap when it is half full. */
static void grow(void ***set, size_t n, size_t *cap, uint64_t (*hash)(const void *)) {
  if (n * 2 < *cap) return;
  size_t ncap = *cap ? *cap * 2 : 256;
  void **fresh = kh_xcalloc(ncap, sizeof *fresh);
  for (size_t i = 0; i < *cap; i++) {
    if (!(*set)[i]) continue;
    size_t k = hash((*set)[i]) & (ncap - 1);
    while (fresh[k]) k = (k + 1) & (ncap - 1);
    fresh[k] = (*set)[i];
  }
  free(*set);
  *set = fresh;
  *cap = ncap;
}

static uint64_t hash_str(const void *s) { return hash_bytes(0xcbf29ce484222325ULL, s); }

/* The pool's copy of s, cleaned as the YAML writer would clean it, so that
 * the model a run holds is the model its report reads back as. */
static const char *intern(krep_pool *p, const char *s) {
  char *clean = NULL;
  if (kh_text_dirty(s)) {
    clean = kh_strdup(s);
    kh_text_clean(clean);
    s = clean;
  }
  grow((void ***)&p->strs, p->nstrs, &p->strs_cap, hash_str);
  size_t k = hash_str(s) & (p->strs_cap - 1);
  for (; p->strs[k]; k = (k + 1) & (p->strs_cap - 1))
    if (strcmp(p->strs[k], s) == 0) {
      free(clean);
      return p->strs[k];
    }
  size_t n = strlen(s) + 1;
  char *copy = krep__alloc(p, n);
  memcpy(copy, s, n);
  free(clean);
  p->nstrs++;
  return p->strs[k] = copy;
}

static uint64_t hash_fields(const char *tag, const kp_field *f, int n) {
  uint64_t h = hash_bytes(0xcbf29ce484222325ULL, tag);
  for (int i = 0; i < n; i++)
    h = hash_bytes(hash_bytes(h, f[i].key), f[i].value);
  return h;
}

static uint64_t hash_rec(const void *r) {
  const krep_rec *x = r;
  return hash_fields(x->tag, x->f, x->n);
}

static int same_rec(const krep_rec *r, const char *tag, const kp_field *f, int n) {
  if (r->n != n || strcmp(r->tag, tag) != 0) return 0;
  for (int i = 0; i < n; i++)
    if (strcmp(r->f[i].key, f[i].key) != 0 || strcmp(r->f[i].value, f[i].value) != 0)
      return 0;
  return 1;
}

/* The pool's copy of a record, shared with every identical one. */
static const krep_rec *intern_rec(krep_pool *p, const char *tag, const kp_field *f,
                                  int n, size_t *bytes) {
  grow((void ***)&p->recs, p->nrecs, &p->recs_cap, hash_rec);
  size_t k = hash_fields(tag, f, n) & (p->recs_cap - 1);
  for (; p->recs[k]; k = (k + 1) & (p->recs_cap - 1))
    if (same_rec(p->recs[k], tag, f, n)) return p->recs[k];
  krep_rec *r = krep__alloc(p, sizeof *r + (size_t)n * sizeof r->f[0]);
  r->tag = intern(p, tag);
  r->n = n;
  *bytes = strlen(tag);
  for (int i = 0; i < n; i++) {
    size_t len = strlen(f[i].value) + 1;
    char *v = krep__alloc(p, len);
    memcpy(v, f[i].value, len);
    if (kh_text_dirty(v)) kh_text_clean(v);
    r->f[i].key = intern(p, f[i].key);
    r->f[i].value = v;
    *bytes += len + strlen(f[i].key);
  }
  p->nrecs++;
  return p->recs[k] = r;
}

/* ---- The report ------------------------------------------------------------------ */

void krep_init(krep_report *rep) {
  memset(rep, 0, sizeof *rep);
  rep->format = KREP_FORMAT;
  rep->parent_gpu_clean = -1;
  rep->peak_rss_kb = -1;
  rep->planned = -1;
  rep->kiln_pid = -1;
  rep->duration_s = NAN;
  rep->pool = kh_xcalloc(1, sizeof *rep->pool);
}

void krep_free(krep_report *rep) {
  for (int i = 0; i < rep->ntests; i++) {
    free(rep->tests[i]->recs);
    free(rep->tests[i]->extra);
    free(rep->tests[i]->procs);
  }
  free(rep->tests), free(rep->procs);
  free(rep->devices), free(rep->set_keys), free(rep->set_values);
  free(rep->selection), free(rep->sources), free(rep->probes);
  krep_pool *p = rep->pool;
  if (p) {
    for (int i = 0; i < p->nchunks; i++) free(p->chunks[i]);
    free(p->chunks), free(p->strs), free(p->recs);
    free(p);
  }
  memset(rep, 0, sizeof *rep);
}

const char *krep_str(krep_report *rep, const char *s) {
  return s ? intern(rep->pool, s) : NULL;
}

void krep_add_device(krep_report *rep, const krep_device *d) {
  rep->devices = kh_xrealloc(rep->devices,
                             (size_t)(rep->ndevices + 1) * sizeof *rep->devices);
  krep_device *x = &rep->devices[rep->ndevices++];
  *x = *d;
  x->visible = krep_str(rep, d->visible ? d->visible : "");
  x->name = krep_str(rep, d->name ? d->name : "");
  x->arch = krep_str(rep, d->arch ? d->arch : "");
}

void krep_add_setting(krep_report *rep, const char *key, const char *value) {
  size_t n = (size_t)rep->nset + 1;
  rep->set_keys = kh_xrealloc(rep->set_keys, n * sizeof *rep->set_keys);
  rep->set_values = kh_xrealloc(rep->set_values, n * sizeof *rep->set_values);
  rep->set_keys[rep->nset] = krep_str(rep, key);
  rep->set_values[rep->nset++] = krep_str(rep, value ? value : "");
}

void krep_add_probe(krep_report *rep, const krep_probe *p) {
  rep->probes = kh_xrealloc(rep->probes, (size_t)(rep->nprobes + 1) * sizeof *rep->probes);
  krep_probe *x = &rep->probes[rep->nprobes++];
  *x = *p;
  x->cause = krep_str(rep, p->cause ? p->cause : "");
  x->message = krep_str(rep, p->message ? p->message : "");
}

const krep_probe *krep_device_removed(const krep_report *rep, int physical) {
  for (int i = 0; i < rep->nprobes; i++)
    if (rep->probes[i].device == physical && !rep->probes[i].passed) return &rep->probes[i];
  return NULL;
}

void krep_add_selector(krep_report *rep, const char *sel) {
  rep->selection = kh_xrealloc(rep->selection,
                               (size_t)(rep->nselection + 1) * sizeof *rep->selection);
  rep->selection[rep->nselection++] = krep_str(rep, sel);
}

krep_test *krep_test_new(krep_report *rep, const char *id, const char *suite,
                         const char *tags) {
  krep_test *t = krep__alloc(rep->pool, sizeof *t);
  memset(t, 0, sizeof *t);
  t->id = krep_str(rep, id);
  t->suite = krep_str(rep, suite);
  t->tags = krep_str(rep, tags ? tags : "");
  t->seq = rep->ntests;
  t->final = 1;
  t->repeat = t->attempt = 1;
  t->device = -1;
  t->slots = 1;
  t->pid = KP_NONE;
  t->started_s = t->ended_s = NAN;
  t->wall_ms = t->startup_ms = t->ready_wait_ms = NAN;
  t->exit_code = -1;
  t->merged_from = -1;
  if (rep->ntests == rep->tests_cap) {
    rep->tests_cap = rep->tests_cap ? 2 * rep->tests_cap : 64;
    rep->tests = kh_xrealloc(rep->tests, (size_t)rep->tests_cap * sizeof *rep->tests);
  }
  rep->tests[rep->ntests++] = t;
  return t;
}

void krep_test_drop(krep_report *rep, krep_test *t) {
  int at = -1;
  for (int i = 0; i < rep->ntests && at < 0; i++)
    if (rep->tests[i] == t) at = i;
  if (at < 0) return;
  memmove(rep->tests + at, rep->tests + at + 1,
          (size_t)(rep->ntests - at - 1) * sizeof *rep->tests);
  rep->ntests--;
  free(t->recs);
  free(t->extra);
  free(t->procs);
}

void krep__drop_last(krep_report *rep) {
  if (rep->ntests == 0) return;
  krep_test *t = rep->tests[--rep->ntests];
  free(t->recs);
  free(t->extra);
  free(t->procs);
}

void krep_add_proc(krep_report *rep, krep_test *t, const krep_proc *p) {
  krep_proc **list = t ? &t->procs : &rep->procs;
  int *n = t ? &t->nprocs : &rep->nprocs;
  *list = kh_xrealloc(*list, (size_t)(*n + 1) * sizeof **list);
  krep_proc *x = &(*list)[(*n)++];
  *x = *p;
  x->command = krep_str(rep, p->command ? p->command : "?");
  x->how = krep_str(rep, p->how ? p->how : "?");
  x->error = krep_str(rep, p->error);
}

const krep__list krep__lists[] = {
    {"kernel", "kernels"},   {"check", "checks"},
    {"leak", "leaks"},       {"note", "notes"},
    {"metric", "metrics"},   {"clocks", "clocks"},
    {"device_fault", "device_faults"}, {"sanitizer", "sanitizer_findings"},
    {"truncated", "truncated_records"}};
const int krep__nlists = (int)(sizeof krep__lists / sizeof krep__lists[0]);

int krep__kept_tag(const char *tag) {
  if (!strcmp(tag, "phase") || !strcmp(tag, "device") || !strcmp(tag, "memory") ||
      !strcmp(tag, "leak_total"))
    return 1;
  for (int i = 0; i < krep__nlists; i++)
    if (strcmp(krep__lists[i].tag, tag) == 0) return 1;
  return 0;
}

int krep_test_keep(krep_report *rep, krep_test *t, const char *tag,
                   const kp_field *f, int n) {
  if (!krep__kept_tag(tag)) return 0;
  if (t->nrecs >= MAX_RECS || t->recs_bytes > MAX_REC_BYTES) {
    t->records_dropped++;
    return -1;
  }
  size_t bytes = 0;
  const krep_rec *r = intern_rec(rep->pool, tag, f, n, &bytes);
  if (t->nrecs == t->recs_cap) {
    t->recs_cap = t->recs_cap ? 2 * t->recs_cap : 8;
    t->recs = kh_xrealloc(t->recs, (size_t)t->recs_cap * sizeof *t->recs);
  }
  t->recs[t->nrecs++] = r;
  t->recs_bytes += bytes;
  return 1;
}

const krep_rec *krep_test_next(const krep_test *t, const char *tag, int *i) {
  for (; *i < t->nrecs; (*i)++)
    if (strcmp(t->recs[*i]->tag, tag) == 0) return t->recs[(*i)++];
  return NULL;
}

int krep_rec_decode(const krep_rec *r, const kp_rdesc *d, void *out) {
  return kp_decode(d, r->f, r->n, out, NULL, 0);
}

int krep_test_throttled(const krep_test *t) {
  int i = 0;
  const krep_rec *r;
  while ((r = krep_test_next(t, "clocks", &i)) != NULL) {
    kp_clocks c;
    if (krep_rec_decode(r, &kp_rec_clocks, &c) == 0 && c.throttled != KP_NONE && c.throttled)
      return 1;
  }
  return 0;
}

long long krep_test_leaked(const krep_test *t, long long *count) {
  int i = 0;
  const krep_rec *r = krep_test_next(t, "leak_total", &i);
  kp_leak_total lt;
  if (r && krep_rec_decode(r, &kp_rec_leak_total, &lt) == 0) {
    if (count) *count = lt.count > (unsigned long long)LLONG_MAX ? LLONG_MAX : (long long)lt.count;
    return lt.bytes > (unsigned long long)LLONG_MAX ? LLONG_MAX : (long long)lt.bytes;
  }
  long long total = 0, n = 0;
  i = 0;
  /* Saturating: a child may claim any number (tests/fuzz/fuzz-record found
   * the overflow). */
  while ((r = krep_test_next(t, "leak", &i)) != NULL) {
    kp_leak l;
    if (krep_rec_decode(r, &kp_rec_leak, &l) != 0) l.bytes = 0;
    long long b = l.bytes > (unsigned long long)LLONG_MAX ? LLONG_MAX : (long long)l.bytes;
    total = b > LLONG_MAX - total ? LLONG_MAX : total + b;
    n++;
  }
  if (count) *count = n;
  return total;
}

int krep_count(const krep_report *rep, int *counts) {
  int total = 0;
  for (int o = 0; o < KREP_NOUTCOMES; o++) counts[o] = 0;
  for (int i = 0; i < rep->ntests; i++) {
    const krep_test *t = rep->tests[i];
    if (!t->final) continue;
    if (t->outcome >= 0 && t->outcome < KREP_NOUTCOMES) counts[t->outcome]++;
    total++;
  }
  return total;
}

double krep_round_ms(double ms) {
  char text[40];
  snprintf(text, sizeof text, "%.6g", ms);
  return strtod(text, NULL);
}

double krep_duration(const krep_report *rep) {
  return isnan(rep->duration_s) ? rep->end_s - rep->start_s : rep->duration_s;
}

/* ---- Decoded views ------------------------------------------------------------------ */

double krep__check_ratio(const kp_check *c) {
  double tol = c->atol + c->rtol * fabs(c->worst_expected);
  double err = fabs(c->worst_actual - c->worst_expected);
  if (isnan(err)) return INFINITY;
  if (!(tol > 0)) return err > 0 ? INFINITY : 0.0;
  return err / tol;
}

void krep__view_of(const krep_test *t, krep__view *v) {
  memset(v, 0, sizeof *v);
  v->body_ms = NAN;
  size_t n = (size_t)t->nrecs + 1;
  v->checks = kh_xcalloc(n, sizeof *v->checks);
  v->ratios = kh_xcalloc(n, sizeof *v->ratios);
  v->kernels = kh_xcalloc(n, sizeof *v->kernels);
  v->metrics = kh_xcalloc(n, sizeof *v->metrics);
  for (int i = 0; i < t->nrecs; i++) {
    const krep_rec *r = t->recs[i];
    kp_phase ph;
    if (strcmp(r->tag, "check") == 0 &&
        krep_rec_decode(r, &kp_rec_check, &v->checks[v->nchecks]) == 0) {
      kp_check *c = &v->checks[v->nchecks];
      if (!c->name) c->name = "";
      if (!c->dtype) c->dtype = "";
      v->ratios[v->nchecks++] = krep__check_ratio(c);
    } else if (strcmp(r->tag, "kernel") == 0 &&
               krep_rec_decode(r, &kp_rec_kernel, &v->kernels[v->nkernels]) == 0) {
      if (!v->kernels[v->nkernels].name) v->kernels[v->nkernels].name = "";
      v->nkernels++;
    } else if (strcmp(r->tag, "metric") == 0 &&
               krep_rec_decode(r, &kp_rec_metric, &v->metrics[v->nmetrics]) == 0) {
      kp_metric *m = &v->metrics[v->nmetrics++];
      if (!m->name) m->name = "";
      if (!m->unit) m->unit = "";
    } else if (strcmp(r->tag, "phase") == 0 && isnan(v->body_ms) &&
               krep_rec_decode(r, &kp_rec_phase, &ph) == 0 && ph.name &&
               strcmp(ph.name, "body") == 0) {
      v->body_ms = ph.ms;
    }
  }
}

void krep__view_free(krep__view *v) {
  free(v->checks), free(v->ratios), free(v->kernels), free(v->metrics);
  memset(v, 0, sizeof *v);
}
