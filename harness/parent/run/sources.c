/* Every source of tests by kind (source-impl.h): the one place that knows
 * which tables exist, and what the rest of kiln asks of all of them at
 * once: their options (flags, config keys and their values), the tests
 * the settings name through them, their contexts for a run. The job, the
 * loop and the warm pool reach a source only through krun__source().
 */
#include "run-impl.h"

#include <stdlib.h>
#include <string.h>

extern const krun__source_i krun__runner_source;    /* runner.c */
extern const krun__source_i krun__gtest_source;     /* gtest.c */
extern const krun__source_i krun__command_source;   /* manifest.c */
extern const krun__source_i krun__pytest_source;    /* pytest.c */

/* By kind; kiln's own runner first (KRUN_KIND_RUNNER). The order is the
 * order of --help's options and of a run's tests. */
static const krun__source_i *const sources[] = {
    &krun__runner_source,
    &krun__gtest_source,
    &krun__command_source,
    &krun__pytest_source,
};
#define NSOURCES ((int)(sizeof sources / sizeof sources[0]))

const krun__source_i *krun__source(int kind) { return sources[kind]; }
int krun__nsources(void) { return NSOURCES; }
const char *krun_kind_name(int kind) { return sources[kind]->name; }
const char *krun_kind_alone(int kind) { return sources[kind]->alone; }

int krun__source_warm_fits(const krun_test *t) {
  return krun__source(t->kind)->warm && t->needs_gpu && (t->slots == 0 || t->slots == 1) &&
         t->devices <= 1;
}

int krun__source_joins(const krun_registry *reg, const krun_test *a, const krun_test *b) {
  if (a->slots != b->slots || a->devices != b->devices || a->needs_gpu != b->needs_gpu)
    return 0;
  if (a->source == b->source) return 1;
  const krun__source_i *x = sources[a->kind];
  return a->kind == b->kind && x->shares && x->shares(reg, a->source, b->source);
}

/* ---- Options ------------------------------------------------------------------------ */

const krun_sopt *krun_sopt_at(int i, int *kind) {
  for (int k = 0; k < NSOURCES && i >= 0; k++) {
    for (const krun_sopt *o = sources[k]->opts; o && o->name; o++)
      if (i-- == 0) {
        if (kind) *kind = k;
        return o;
      }
  }
  return NULL;
}

int krun_sopt_index(const char *name) {
  const krun_sopt *o;
  for (int i = 0; (o = krun_sopt_at(i, NULL)); i++)
    if (strcmp(o->name, name) == 0) return i;
  return -1;
}

static int nsopts(void) {
  int n = 0;
  while (krun_sopt_at(n, NULL)) n++;
  return n;
}

/* The value of option i, made when first set. */
static krun_sval *sval(krun_settings *s, int i) {
  if (s->nsval <= i) {
    int n = nsopts();
    s->sval = kh_xrealloc(s->sval, (size_t)n * sizeof *s->sval);
    memset(s->sval + s->nsval, 0, (size_t)(n - s->nsval) * sizeof *s->sval);
    s->nsval = n;
  }
  return &s->sval[i];
}

static int parse_bool(const char *t, int *out) {
  static const char *const yes[] = {"true", "yes", "on", "1", NULL};
  static const char *const no[] = {"false", "no", "off", "0", NULL};
  for (int i = 0; yes[i]; i++)
    if (strcmp(t, yes[i]) == 0) return *out = 1, 0;
  for (int i = 0; no[i]; i++)
    if (strcmp(t, no[i]) == 0) return *out = 0, 0;
  return -1;
}

static void add_path(krun_sval *v, const char *path) {
  v->paths = kh_xrealloc(v->paths, (size_t)(v->npaths + 1) * sizeof *v->paths);
  v->paths[v->npaths++] = kh_strdup(path);
}

int krun_setting_sopt(krun_settings *s, int i, const char *text, kh_err *err) {
  const krun_sopt *o = krun_sopt_at(i, NULL);
  if (!o) return kh_errf(err, "unknown option %d", i);
  krun_sval *v = sval(s, i);
  if (o->type == KRUN_SOPT_PATHS) {
    add_path(v, text);
  } else if (parse_bool(text, &v->on) != 0) {
    return kh_errf(err, "%s: '%s' is not valid: expected true or false", o->name, text);
  }
  v->set = 1;
  return 0;
}

int krun_sopt_on(const krun_settings *s, int i) {
  const krun_sopt *o = krun_sopt_at(i, NULL);
  return i < s->nsval && s->sval[i].set ? s->sval[i].on : o ? o->dflt : 0;
}

char *const *krun_sopt_paths(const krun_settings *s, int i, int *n) {
  *n = i < s->nsval ? s->sval[i].npaths : 0;
  return *n ? s->sval[i].paths : NULL;
}

const char *krun_sopt_alone(const krun_settings *s, const krun_sopt **opt) {
  const krun_sopt *o;
  int kind, n;
  for (int i = 0; (o = krun_sopt_at(i, &kind)); i++) {
    char *const *p = krun_sopt_paths(s, i, &n);
    if (o->lists && n && sources[kind]->alone) return *opt = o, p[0];
  }
  return NULL;
}

void krun__svals_free(krun_settings *s) {
  for (int i = 0; i < s->nsval; i++) {
    for (int k = 0; k < s->sval[i].npaths; k++) free(s->sval[i].paths[k]);
    free(s->sval[i].paths);
  }
  free(s->sval);
  s->sval = NULL, s->nsval = 0;
}

/* A value given replaces the one under it: a flag's paths replace a
 * config's. */
void krun__svals_overlay(krun_settings *dst, const krun_settings *src) {
  for (int i = 0; i < src->nsval; i++) {
    const krun_sval *from = &src->sval[i];
    if (!from->set) continue;
    krun_sval *to = sval(dst, i);
    for (int k = 0; k < to->npaths; k++) free(to->paths[k]);
    to->npaths = 0;
    for (int k = 0; k < from->npaths; k++) add_path(to, from->paths[k]);
    to->on = from->on, to->set = 1;
  }
}

/* The report's settings: each source's switches (paths are the run's
 * tests, which the report lists anyway). */
void krun__svals_each(const krun_settings *s,
                      void (*fn)(const char *key, const char *value, void *arg), void *arg) {
  const krun_sopt *o;
  for (int i = 0; (o = krun_sopt_at(i, NULL)); i++)
    if (o->type == KRUN_SOPT_BOOL) fn(o->name, krun_sopt_on(s, i) ? "true" : "false", arg);
}

/* ---- The tests the settings name --------------------------------------------------------- */

int krun_registry_named(const krun_settings *s) {
  const krun_sopt *o;
  int n;
  for (int i = 0; (o = krun_sopt_at(i, NULL)); i++)
    if (o->lists && krun_sopt_paths(s, i, &n) && n) return 1;
  return 0;
}

static const krun_sopt *config_option(const char *key, int *kind) {
  int i = krun_sopt_index(key);
  const krun_sopt *o = i >= 0 ? krun_sopt_at(i, kind) : NULL;
  return o && o->config ? o : NULL;
}

static int list_with(const krun__lister *L, int kind, const char *path, kh_err *err) {
  krun__lister M = *L;
  M.kind = kind;
  return sources[kind]->list(&M, path, err);
}

int krun_registry_add_named(krun_registry *reg, const krun_settings *s, kh_err *err) {
  krun__lister L = {reg, 0, config_option, krun_sopt_at, krun_kind_name, list_with};
  const krun_sopt *o;
  int kind, n, rc = 0;
  for (int i = 0; rc == 0 && (o = krun_sopt_at(i, &kind)); i++) {
    char *const *p = o->lists ? krun_sopt_paths(s, i, &n) : NULL;
    if (p && n && sources[kind]->list_all) {
      L.kind = kind;
      rc = sources[kind]->list_all(&L, p, n, err);
      continue;
    }
    for (int k = 0; rc == 0 && p && k < n; k++) rc = list_with(&L, kind, p[k], err);
  }
  return rc == 0 ? 0 : rc == -2 ? -2 : -3;
}

/* ---- Contexts ------------------------------------------------------------------------ */

/* Source kind's option values, in its table's order. */
static krun_sval *vals_of(const krun_settings *s, int kind, int *first) {
  const krun_sopt *o;
  int k, n = 0;
  *first = -1;
  for (int i = 0; (o = krun_sopt_at(i, &k)); i++)
    if (k == kind) {
      if (*first < 0) *first = i;
      n++;
    }
  krun_sval *v = kh_xcalloc((size_t)n + 1, sizeof *v);
  for (int i = 0; i < n; i++) {
    int at = *first + i;
    if (at < s->nsval) v[i] = s->sval[at];
    if (!v[i].set) v[i].on = krun_sopt_at(at, NULL)->dflt;
  }
  return v;
}

void krun__sources_open(const krun__srcrun *run, void **ctx) {
  for (int k = 0; k < NSOURCES; k++) {
    if (ctx[k] || !sources[k]->open) continue;
    int first;
    krun_sval *v = vals_of(run->s, k, &first);
    ctx[k] = sources[k]->open(run, k, v);
    free(v);
  }
}

void krun__sources_close(void **ctx) {
  for (int k = 0; k < NSOURCES; k++) {
    if (ctx[k] && sources[k]->close) sources[k]->close(ctx[k]);
    ctx[k] = NULL;
  }
}
