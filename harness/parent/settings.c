/* Run settings: defaults, the table of scalar settings shared by flags and
 * configs, the YAML config reader (libyaml's document loader, so every node
 * carries its line and column) and the CTest resource-spec reader.
 */
#include "settings.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "kiln-config.h"
#include "select.h"

const char *const kh_backend_names[] = {"auto", "host", "hip", "cuda", NULL};
static const char *const kh__isolation_names[] = {"process", "none", NULL};
static const char *const kh__leak_names[] = {"fail", "warn", NULL};

/* ---- The table of scalar settings ---------------------------------------- */

/* KH__AUTO_INT: an integer in range, or the word `auto` (stored as -1). */
typedef enum {
  KH__INT, KH__DOUBLE, KH__ENUM, KH__BOOL, KH__U64, KH__STR, KH__AUTO_INT
} kh__type;

typedef struct kh__field {
  const char *name;
  kh__type type;
  size_t off;
  double lo, hi;            /* inclusive range for numbers */
  int lo_open;              /* the range excludes lo */
  const char *const *choices;
} kh__field;

#define KH__F(name, type, member, lo, hi, open, choices) \
  {name, type, offsetof(kh_settings, member), lo, hi, open, choices}

static const kh__field kh__fields[] = {
    KH__F("jobs", KH__INT, jobs, 1, 1024, 0, NULL),
    KH__F("backend", KH__ENUM, backend, 0, 0, 0, kh_backend_names),
    KH__F("slots", KH__INT, slots, 1, 1024, 0, NULL),
    KH__F("timeout", KH__DOUBLE, timeout_s, 0, 604800, 1, NULL),
    KH__F("grace", KH__DOUBLE, grace_s, 0, 3600, 0, NULL),
    KH__F("retries", KH__INT, retries, 0, 100, 0, NULL),
    KH__F("repeat", KH__INT, repeat, 1, 100000, 0, NULL),
    KH__F("isolation", KH__ENUM, isolation, 0, 0, 0, kh__isolation_names),
    KH__F("leaks", KH__ENUM, leaks, 0, 0, 0, kh__leak_names),
    KH__F("poison", KH__BOOL, poison, 0, 1, 0, NULL),
    KH__F("seed", KH__U64, seed, 0, 0, 0, NULL),
    KH__F("cap", KH__DOUBLE, cap, 0, 1, 1, NULL),
    KH__F("wrap", KH__STR, wrap, 0, 0, 0, NULL),
    KH__F("warm", KH__AUTO_INT, warm, 0, 64, 0, NULL),
};
#define KH__NFIELDS (sizeof kh__fields / sizeof kh__fields[0])
/* Bits for the list settings, after the scalar ones. */
enum { KH__BIT_SELECTION = KH__NFIELDS, KH__BIT_TOL, KH__BIT_DEVICES };

static const kh__field *kh__field_find(const char *name) {
  for (size_t i = 0; i < KH__NFIELDS; i++)
    if (strcmp(kh__fields[i].name, name) == 0) return &kh__fields[i];
  return NULL;
}

static void kh__choices(const char *const *c, char *out, size_t n) {
  out[0] = '\0';
  for (; *c; c++)
    snprintf(out + strlen(out), n - strlen(out), "%s%s", *c, c[1] ? ", " : "");
}

/* What a setting accepts, for error messages. */
static void kh__field_expect(const kh__field *f, char *out, size_t n) {
  char ch[128];
  switch (f->type) {
  case KH__INT:
    snprintf(out, n, "an integer from %.0f to %.0f", f->lo, f->hi);
    break;
  case KH__DOUBLE:
    if (f->lo_open)
      snprintf(out, n, "a number above %g and at most %g", f->lo, f->hi);
    else
      snprintf(out, n, "a number from %g to %g", f->lo, f->hi);
    break;
  case KH__ENUM:
    kh__choices(f->choices, ch, sizeof ch);
    snprintf(out, n, "one of %s", ch);
    break;
  case KH__BOOL: snprintf(out, n, "true or false"); break;
  case KH__U64: snprintf(out, n, "an unsigned 64-bit integer"); break;
  case KH__STR: snprintf(out, n, "a string"); break;
  case KH__AUTO_INT:
    snprintf(out, n, "an integer from %.0f to %.0f, or auto", f->lo, f->hi);
    break;
  }
}

static int kh__parse_bool(const char *t, int *out) {
  static const char *const yes[] = {"true", "yes", "on", "1", NULL};
  static const char *const no[] = {"false", "no", "off", "0", NULL};
  for (int i = 0; yes[i]; i++)
    if (strcmp(t, yes[i]) == 0) return *out = 1, 0;
  for (int i = 0; no[i]; i++)
    if (strcmp(t, no[i]) == 0) return *out = 0, 0;
  return -1;
}

static int kh__parse_u64(const char *t, unsigned long long *out) {
  if (!*t || *t == '-' || *t == '+') return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(t, &end, 0);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

/* Parses text for field f into s. 0, or -1 with the error filled. */
static int kh__field_parse(const kh__field *f, const char *text,
                           kh_settings *s, kh_err *err) {
  char *p = (char *)s + f->off;
  char expect[160];
  long long ll;
  double d;
  int ok = 0;
  switch (f->type) {
  case KH__INT:
    ok = kh_parse_ll(text, (long long)f->lo, (long long)f->hi, &ll) == 0;
    if (ok) *(int *)p = (int)ll;
    break;
  case KH__DOUBLE:
    ok = kh_parse_double(text, f->lo, f->hi, &d) == 0 &&
         !(f->lo_open && d <= f->lo);
    if (ok) *(double *)p = d;
    break;
  case KH__ENUM:
    for (int i = 0; f->choices[i]; i++)
      if (strcmp(text, f->choices[i]) == 0) ok = 1, *(int *)p = i;
    break;
  case KH__BOOL: ok = kh__parse_bool(text, (int *)p) == 0; break;
  case KH__U64: ok = kh__parse_u64(text, (unsigned long long *)p) == 0; break;
  case KH__STR:
    ok = 1;
    free(*(char **)p);
    *(char **)p = kh_strdup(text);
    break;
  case KH__AUTO_INT:
    ll = -1;
    ok = strcmp(text, "auto") == 0 ||
         kh_parse_ll(text, (long long)f->lo, (long long)f->hi, &ll) == 0;
    if (ok) *(int *)p = (int)ll;
    break;
  }
  if (!ok) {
    kh__field_expect(f, expect, sizeof expect);
    return kh_errf(err, "%s: '%s' is not valid: expected %s", f->name, text,
                    expect);
  }
  s->set |= 1ull << (f - kh__fields);
  return 0;
}

/* ---- Defaults and merging -------------------------------------------------- */

void kh_settings_init(kh_settings *s) {
  memset(s, 0, sizeof *s);
  s->timeout_s = 120;
  s->grace_s = 2;
  s->repeat = 1;
  s->warm = KH_WARM_AUTO;
}

void kh_settings_free(kh_settings *s) {
  free(s->wrap);
  for (int i = 0; i < s->nselection; i++) free(s->selection[i]);
  free(s->selection);
  for (int i = 0; i < s->ntol; i++) free(s->tol[i].match);
  free(s->tol);
  memset(s, 0, sizeof *s);
}

int kh_setting_is_set(const kh_settings *s, const char *name) {
  const kh__field *f = kh__field_find(name);
  return f && (s->set >> (f - kh__fields) & 1);
}

void kh_settings_overlay(kh_settings *dst, const kh_settings *src) {
  for (size_t i = 0; i < KH__NFIELDS; i++) {
    if (!(src->set >> i & 1)) continue;
    const kh__field *f = &kh__fields[i];
    const char *from = (const char *)src + f->off;
    char *to = (char *)dst + f->off;
    switch (f->type) {
    case KH__INT: case KH__ENUM: case KH__BOOL: case KH__AUTO_INT:
      *(int *)to = *(const int *)from;
      break;
    case KH__DOUBLE: *(double *)to = *(const double *)from; break;
    case KH__U64:
      *(unsigned long long *)to = *(const unsigned long long *)from;
      break;
    case KH__STR:
      free(*(char **)to);
      *(char **)to = kh_strdup(*(char *const *)from);
      break;
    }
    dst->set |= 1ull << i;
  }
  if (src->set >> KH__BIT_SELECTION & 1) {
    for (int i = 0; i < dst->nselection; i++) free(dst->selection[i]);
    dst->nselection = 0;
    for (int i = 0; i < src->nselection; i++)
      kh_setting_add_selector(dst, src->selection[i]);
  }
  for (int i = 0; i < src->ntol; i++) {
    dst->tol = kh_xrealloc(dst->tol, (size_t)(dst->ntol + 1) * sizeof *dst->tol);
    dst->tol[dst->ntol] = src->tol[i];
    dst->tol[dst->ntol++].match = kh_strdup(src->tol[i].match);
  }
  if (src->set >> KH__BIT_DEVICES & 1) {
    memcpy(dst->devices, src->devices, sizeof dst->devices);
    dst->ndevices = src->ndevices;
    dst->set |= 1ull << KH__BIT_DEVICES;
  }
}

static char *kh__field_text(const kh_settings *s, const kh__field *f) {
  const char *p = (const char *)s + f->off;
  switch (f->type) {
  case KH__INT: return kh_asprintf("%d", *(const int *)p);
  case KH__DOUBLE: return kh_asprintf("%g", *(const double *)p);
  case KH__ENUM: return kh_strdup(f->choices[*(const int *)p]);
  case KH__BOOL: return kh_strdup(*(const int *)p ? "true" : "false");
  case KH__U64: return kh_asprintf("%llu", *(const unsigned long long *)p);
  case KH__STR:
    return kh_strdup(*(char *const *)p ? *(char *const *)p : "");
  case KH__AUTO_INT:
    return *(const int *)p < 0 ? kh_strdup("auto")
                               : kh_asprintf("%d", *(const int *)p);
  }
  return kh_strdup("");
}

void kh_settings_describe(const kh_settings *s, char ***keys, char ***values,
                          int *n) {
  int cap = (int)KH__NFIELDS + 3;
  *keys = kh_xcalloc((size_t)cap, sizeof **keys);
  *values = kh_xcalloc((size_t)cap, sizeof **values);
  *n = 0;
  for (size_t i = 0; i < KH__NFIELDS; i++) {
    if (kh__fields[i].type == KH__U64 && !(s->set >> i & 1)) continue;
    (*keys)[*n] = kh_strdup(kh__fields[i].name);
    (*values)[(*n)++] = kh__field_text(s, &kh__fields[i]);
  }
  kh_buf b = {0};
  for (int i = 0; i < s->ntol; i++)
    kh_buf_addf(&b, "%s%s=%g:%g", i ? " " : "", s->tol[i].match,
                 s->tol[i].atol, s->tol[i].rtol);
  (*keys)[*n] = kh_strdup("tolerances");
  (*values)[(*n)++] = b.data ? b.data : kh_strdup("");
  kh_buf d = {0};
  for (int i = 0; i < s->ndevices; i++)
    kh_buf_addf(&d, "%s%d:%d", i ? " " : "", s->devices[i].id,
                 s->devices[i].slots);
  (*keys)[*n] = kh_strdup("devices");
  (*values)[(*n)++] = d.data ? d.data : kh_strdup("all");
}

int kh_setting_set(kh_settings *s, const char *name, const char *text,
                   kh_err *err) {
  const kh__field *f = kh__field_find(name);
  if (!f) return kh_errf(err, "unknown setting '%s'", name), -2;
  return kh__field_parse(f, text, s, err);
}

void kh_setting_add_selector(kh_settings *s, const char *sel) {
  s->selection = kh_xrealloc(s->selection,
                              (size_t)(s->nselection + 1) * sizeof(char *));
  s->selection[s->nselection++] = kh_strdup(sel);
  s->set |= 1ull << KH__BIT_SELECTION;
}

static void kh__add_tol(kh_settings *s, const char *match, double atol,
                        double rtol) {
  s->tol = kh_xrealloc(s->tol, (size_t)(s->ntol + 1) * sizeof *s->tol);
  s->tol[s->ntol++] = (kh_tolerance){kh_strdup(match), atol, rtol};
  s->set |= 1ull << KH__BIT_TOL;
}

int kh_setting_add_tolerance(kh_settings *s, const char *spec, kh_err *err) {
  ksel_tol t;
  if (ksel_tol_parse(spec, &t) != 0)
    return kh_errf(err, "tolerance: '%s' is not GLOB=ATOL:RTOL with ATOL and "
                    "RTOL numbers from 0 to 1e30", spec);
  kh__add_tol(s, t.match, t.atol, t.rtol);
  return 0;
}

/* ---- YAML configs ---------------------------------------------------------- */

typedef struct kh__cfg {
  yaml_document_t *doc;
  const char *name;
  kh_settings *s;
  kh_err *err;
} kh__cfg;

static const char *const kh__node_kind[] = {"nothing", "a scalar",
                                            "a sequence", "a mapping"};

static int kh__cfg_fail(kh__cfg *c, const yaml_node_t *n, const char *fmt,
                        ...) __attribute__((format(printf, 3, 4)));
static int kh__cfg_fail(kh__cfg *c, const yaml_node_t *n, const char *fmt,
                        ...) {
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return kh_errf(c->err, "%s:%zu:%zu: %s", c->name, n->start_mark.line + 1,
                  n->start_mark.column + 1, what);
}

static const char *kh__scalar(const yaml_node_t *n) {
  return (const char *)n->data.scalar.value;
}

static int kh__is_plain(const yaml_node_t *n) {
  return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* A scalar setting: plain scalars for numbers and booleans, so that
 * `jobs: "4"` is reported as the string it is. */
static int kh__cfg_scalar(kh__cfg *c, const kh__field *f, yaml_node_t *v) {
  char expect[160];
  kh__field_expect(f, expect, sizeof expect);
  if (v->type != YAML_SCALAR_NODE)
    return kh__cfg_fail(c, v, "'%s' must be %s, not %s", f->name, expect,
                        kh__node_kind[v->type]);
  const char *t = kh__scalar(v);
  if (f->type != KH__STR && f->type != KH__ENUM && !kh__is_plain(v))
    return kh__cfg_fail(c, v, "'%s' must be %s, not the quoted string \"%s\"",
                        f->name, expect, t);
  if (!*t && kh__is_plain(v))
    return kh__cfg_fail(c, v, "'%s' needs a value (%s)", f->name, expect);
  kh_err e;
  if (kh__field_parse(f, t, c->s, &e) != 0)
    return kh__cfg_fail(c, v, "%s", e.msg);
  return 0;
}

static int kh__cfg_selection(kh__cfg *c, yaml_node_t *v) {
  if (v->type != YAML_SEQUENCE_NODE)
    return kh__cfg_fail(c, v, "'selection' must be a sequence of selectors, "
                              "not %s", kh__node_kind[v->type]);
  for (yaml_node_item_t *i = v->data.sequence.items.start;
       i < v->data.sequence.items.top; i++) {
    yaml_node_t *n = yaml_document_get_node(c->doc, *i);
    if (n->type != YAML_SCALAR_NODE || !*kh__scalar(n))
      return kh__cfg_fail(c, n, "a selector must be a non-empty string");
    kh_setting_add_selector(c->s, kh__scalar(n));
  }
  c->s->set |= 1ull << KH__BIT_SELECTION;
  return 0;
}

/* A number inside a tolerance or device entry. */
static int kh__cfg_number(kh__cfg *c, const char *what, yaml_node_t *v,
                          double lo, double hi, double *out) {
  if (v->type != YAML_SCALAR_NODE || !kh__is_plain(v) ||
      kh_parse_double(kh__scalar(v), lo, hi, out) != 0)
    return kh__cfg_fail(c, v, "'%s' must be a number from %g to %g, not %s%s%s",
                        what, lo, hi,
                        v->type == YAML_SCALAR_NODE ? "'" : kh__node_kind[v->type],
                        v->type == YAML_SCALAR_NODE ? kh__scalar(v) : "",
                        v->type == YAML_SCALAR_NODE ? "'" : "");
  return 0;
}

typedef int (*kh__entry_key)(kh__cfg *c, const char *key, yaml_node_t *v,
                             void *acc);

/* Walks a sequence of mappings, giving each key to fn; `keys` names the
 * accepted ones for the error. */
static int kh__cfg_entries(kh__cfg *c, yaml_node_t *v, const char *what,
                           const char *keys, kh__entry_key fn, void *acc,
                           size_t acc_size,
                           int (*done)(kh__cfg *, yaml_node_t *, void *)) {
  if (v->type != YAML_SEQUENCE_NODE)
    return kh__cfg_fail(c, v, "'%s' must be a sequence of mappings with %s, "
                              "not %s", what, keys, kh__node_kind[v->type]);
  for (yaml_node_item_t *i = v->data.sequence.items.start;
       i < v->data.sequence.items.top; i++) {
    yaml_node_t *m = yaml_document_get_node(c->doc, *i);
    if (m->type != YAML_MAPPING_NODE)
      return kh__cfg_fail(c, m, "an entry of '%s' must be a mapping with %s",
                          what, keys);
    memset(acc, 0, acc_size);
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
         p < m->data.mapping.pairs.top; p++) {
      yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
      yaml_node_t *val = yaml_document_get_node(c->doc, p->value);
      if (k->type != YAML_SCALAR_NODE)
        return kh__cfg_fail(c, k, "keys of '%s' must be strings", what);
      int r = fn(c, kh__scalar(k), val, acc);
      if (r == -2)
        return kh__cfg_fail(c, k, "unknown key '%s' in '%s' (known: %s)",
                            kh__scalar(k), what, keys);
      if (r != 0) return -1;
    }
    if (done(c, m, acc) != 0) return -1;
  }
  return 0;
}

typedef struct kh__tol_acc {
  const char *match;
  double atol, rtol;
  int has_atol, has_rtol;
} kh__tol_acc;

static int kh__tol_key(kh__cfg *c, const char *key, yaml_node_t *v, void *p) {
  kh__tol_acc *a = p;
  if (strcmp(key, "match") == 0) {
    if (v->type != YAML_SCALAR_NODE || !*kh__scalar(v))
      return kh__cfg_fail(c, v, "'match' must be a non-empty glob");
    a->match = kh__scalar(v);
    return 0;
  }
  if (strcmp(key, "atol") == 0)
    return a->has_atol = 1, kh__cfg_number(c, "atol", v, 0, 1e30, &a->atol);
  if (strcmp(key, "rtol") == 0)
    return a->has_rtol = 1, kh__cfg_number(c, "rtol", v, 0, 1e30, &a->rtol);
  return -2;
}

static int kh__tol_done(kh__cfg *c, yaml_node_t *m, void *p) {
  kh__tol_acc *a = p;
  if (!a->match || !a->has_atol || !a->has_rtol)
    return kh__cfg_fail(c, m, "a tolerance needs match, atol and rtol");
  kh__add_tol(c->s, a->match, a->atol, a->rtol);
  return 0;
}

typedef struct kh__dev_acc {
  double id, slots;
  int has_id, has_slots;
} kh__dev_acc;

static int kh__dev_key(kh__cfg *c, const char *key, yaml_node_t *v, void *p) {
  kh__dev_acc *a = p;
  if (strcmp(key, "id") == 0)
    return a->has_id = 1,
           kh__cfg_number(c, "id", v, 0, KH_MAX_DEVICES - 1, &a->id);
  if (strcmp(key, "slots") == 0)
    return a->has_slots = 1, kh__cfg_number(c, "slots", v, 1, 1024, &a->slots);
  return -2;
}

static int kh__dev_done(kh__cfg *c, yaml_node_t *m, void *p) {
  kh__dev_acc *a = p;
  if (!a->has_id || a->id != (int)a->id || a->slots != (int)a->slots)
    return kh__cfg_fail(c, m, "a device needs an integer id (and integer "
                              "slots, optional)");
  if (c->s->ndevices == KH_MAX_DEVICES)
    return kh__cfg_fail(c, m, "more than %d devices", KH_MAX_DEVICES);
  c->s->devices[c->s->ndevices++] =
      (kh_dev_slots){(int)a->id, a->has_slots ? (int)a->slots : 0};
  c->s->set |= 1ull << KH__BIT_DEVICES;
  return 0;
}

static const char kh__known_keys[] =
    "jobs, backend, slots, devices, timeout, grace, retries, repeat, "
    "isolation, leaks, poison, seed, cap, wrap, warm, selection, tolerances";

static int kh__cfg_key(kh__cfg *c, yaml_node_t *k, yaml_node_t *v) {
  const char *key = kh__scalar(k);
  const kh__field *f = kh__field_find(key);
  if (f) return kh__cfg_scalar(c, f, v);
  if (strcmp(key, "selection") == 0) return kh__cfg_selection(c, v);
  kh__tol_acc ta;
  kh__dev_acc da;
  if (strcmp(key, "tolerances") == 0)
    return kh__cfg_entries(c, v, "tolerances", "match, atol, rtol",
                           kh__tol_key, &ta, sizeof ta, kh__tol_done);
  if (strcmp(key, "devices") == 0)
    return kh__cfg_entries(c, v, "devices", "id, slots", kh__dev_key, &da,
                           sizeof da, kh__dev_done);
  return kh__cfg_fail(c, k, "unknown key '%s' (known: %s)", key,
                      kh__known_keys);
}

static int kh__cfg_root(kh__cfg *c, yaml_node_t *root) {
  if (!root) return 0;                    /* an empty file is an empty config */
  if (root->type == YAML_SCALAR_NODE && !*kh__scalar(root)) return 0;
  if (root->type != YAML_MAPPING_NODE)
    return kh__cfg_fail(c, root, "a config must be a mapping of settings, "
                                 "not %s", kh__node_kind[root->type]);
  for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
       p < root->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
    yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
    if (k->type != YAML_SCALAR_NODE)
      return kh__cfg_fail(c, k, "a key must be a string, not %s",
                          kh__node_kind[k->type]);
    for (yaml_node_pair_t *q = root->data.mapping.pairs.start; q < p; q++)
      if (strcmp(kh__scalar(yaml_document_get_node(c->doc, q->key)),
                 kh__scalar(k)) == 0)
        return kh__cfg_fail(c, k, "key '%s' appears twice", kh__scalar(k));
    if (kh__cfg_key(c, k, v) != 0) return -1;
  }
  return 0;
}

int kh_config_parse(const char *buf, size_t len, const char *name,
                    kh_settings *out, kh_err *err) {
  yaml_parser_t parser;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&parser))
    return kh_errf(err, "%s: cannot start the YAML parser", name);
  yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
  int rc;
  if (!yaml_parser_load(&parser, &doc)) {
    rc = kh_errf(err, "%s:%zu:%zu: malformed YAML: %s%s%s", name,
                  parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                  parser.problem ? parser.problem : "error",
                  parser.context ? " " : "",
                  parser.context ? parser.context : "");
    yaml_parser_delete(&parser);
    return rc;
  }
  kh__cfg c = {&doc, name, out, err};
  rc = kh__cfg_root(&c, yaml_document_get_root_node(&doc));
  yaml_document_delete(&doc);
  /* A second document would be silently ignored: refuse it. */
  if (rc == 0 && yaml_parser_load(&parser, &doc)) {
    if (yaml_document_get_root_node(&doc))
      rc = kh_errf(err, "%s: more than one YAML document", name);
    yaml_document_delete(&doc);
  }
  yaml_parser_delete(&parser);
  return rc;
}

static int kh__readable(const char *p) { return access(p, R_OK) == 0; }

int kh_config_load(const char *arg, kh_settings *out, char **path_out,
                   kh_err *err) {
  char *path = NULL;
  if (strchr(arg, '/') || kh__readable(arg)) {
    path = kh_strdup(arg);
  } else {
    const char *roots[] = {"configs", KILN_SOURCE_DIR "/configs"};
    for (size_t i = 0; i < 2 && !path; i++) {
      char *p = kh_asprintf("%s/%s.yaml", roots[i], arg);
      if (kh__readable(p)) path = p;
      else free(p);
    }
    if (!path)
      return kh_errf(err, "--config: no file '%s' and no profile "
                           "configs/%s.yaml", arg, arg);
  }
  char *buf;
  size_t len;
  if (kh_read_file(path, 1 << 20, &buf, &len) != 0) {
    kh_errf(err, "%s: cannot read config: %s", path, strerror(errno));
    free(path);
    return -1;
  }
  int rc = kh_config_parse(buf, len, path, out, err);
  free(buf);
  if (path_out && rc == 0) *path_out = path;
  else free(path);
  return rc;
}

/* ---- A JSON reader for CTest resource specs -------------------------------- */

/* Just enough JSON for the resource-spec shape: objects, arrays, strings
 * (no escapes beyond \" \\ \/), numbers, true/false/null, with positions. */
typedef struct kh__json {
  const char *p, *end, *line_start;
  int line;
  const char *name;
  kh_err *err;
} kh__json;

static int kh__json_fail(kh__json *j, const char *what) {
  return kh_errf(j->err, "%s:%d:%d: %s", j->name, j->line,
                  (int)(j->p - j->line_start) + 1, what);
}

static void kh__json_ws(kh__json *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' ||
                           *j->p == '\r')) {
    if (*j->p == '\n') j->line++, j->line_start = j->p + 1;
    j->p++;
  }
}

static int kh__json_expect(kh__json *j, char c) {
  kh__json_ws(j);
  if (j->p >= j->end || *j->p != c) {
    char what[64];
    snprintf(what, sizeof what, "expected '%c'", c);
    return kh__json_fail(j, what);
  }
  j->p++;
  return 0;
}

static int kh__json_string(kh__json *j, char *out, size_t n) {
  if (kh__json_expect(j, '"') != 0) return -1;
  size_t k = 0;
  while (j->p < j->end && *j->p != '"') {
    char ch = *j->p++;
    if ((unsigned char)ch < 0x20) return kh__json_fail(j, "control byte in string");
    if (ch == '\\') {
      if (j->p >= j->end || !strchr("\"\\/", *j->p))
        return kh__json_fail(j, "unsupported escape in string");
      ch = *j->p++;
    }
    if (k + 1 >= n) return kh__json_fail(j, "string too long");
    out[k++] = ch;
  }
  if (j->p >= j->end) return kh__json_fail(j, "unterminated string");
  j->p++;
  out[k] = '\0';
  return 0;
}

static int kh__json_number(kh__json *j, double *out) {
  kh__json_ws(j);
  char tmp[64];
  size_t k = 0;
  while (j->p + k < j->end && k < sizeof tmp - 1 &&
         strchr("+-0123456789.eE", j->p[k]))
    tmp[k] = j->p[k], k++;
  tmp[k] = '\0';
  char *e;
  errno = 0;
  *out = strtod(tmp, &e);
  if (k == 0 || *e || errno) return kh__json_fail(j, "expected a number");
  j->p += k;
  return 0;
}

static int kh__json_skip_value(kh__json *j, int depth);

static int kh__json_skip_container(kh__json *j, char close, int depth) {
  j->p++;
  kh__json_ws(j);
  if (j->p < j->end && *j->p == close) return j->p++, 0;
  for (;;) {
    char key[256];
    if (close == '}' && (kh__json_string(j, key, sizeof key) != 0 ||
                         kh__json_expect(j, ':') != 0))
      return -1;
    if (kh__json_skip_value(j, depth + 1) != 0) return -1;
    kh__json_ws(j);
    if (j->p < j->end && *j->p == ',') { j->p++; continue; }
    return kh__json_expect(j, close);
  }
}

static int kh__json_skip_value(kh__json *j, int depth) {
  kh__json_ws(j);
  if (depth > 32) return kh__json_fail(j, "nested too deeply");
  if (j->p >= j->end) return kh__json_fail(j, "unexpected end of file");
  char buf[1024];
  double d;
  switch (*j->p) {
  case '{': return kh__json_skip_container(j, '}', depth);
  case '[': return kh__json_skip_container(j, ']', depth);
  case '"': return kh__json_string(j, buf, sizeof buf);
  default:
    for (const char *w = "true\0false\0null\0"; *w; w += strlen(w) + 1)
      if ((size_t)(j->end - j->p) >= strlen(w) &&
          strncmp(j->p, w, strlen(w)) == 0)
        return j->p += strlen(w), 0;
    return kh__json_number(j, &d);
  }
}

/* Calls fn for each key of an object, positioned at its value. */
static int kh__json_object(kh__json *j,
                           int (*fn)(kh__json *, const char *, void *),
                           void *arg) {
  if (kh__json_expect(j, '{') != 0) return -1;
  kh__json_ws(j);
  if (j->p < j->end && *j->p == '}') return j->p++, 0;
  for (;;) {
    char key[256];
    if (kh__json_string(j, key, sizeof key) != 0 ||
        kh__json_expect(j, ':') != 0 || fn(j, key, arg) != 0)
      return -1;
    kh__json_ws(j);
    if (j->p < j->end && *j->p == ',') { j->p++; kh__json_ws(j); continue; }
    return kh__json_expect(j, '}');
  }
}

/* Calls fn for each element of an array. */
static int kh__json_array(kh__json *j, int (*fn)(kh__json *, void *),
                          void *arg) {
  if (kh__json_expect(j, '[') != 0) return -1;
  kh__json_ws(j);
  if (j->p < j->end && *j->p == ']') return j->p++, 0;
  for (;;) {
    if (fn(j, arg) != 0) return -1;
    kh__json_ws(j);
    if (j->p < j->end && *j->p == ',') { j->p++; continue; }
    return kh__json_expect(j, ']');
  }
}

typedef struct kh__gpu_acc {
  char id[64];
  double slots;
  int has_id, has_slots;
} kh__gpu_acc;

static int kh__gpu_key(kh__json *j, const char *key, void *p) {
  kh__gpu_acc *a = p;
  if (strcmp(key, "id") == 0)
    return a->has_id = 1, kh__json_string(j, a->id, sizeof a->id);
  if (strcmp(key, "slots") == 0)
    return a->has_slots = 1, kh__json_number(j, &a->slots);
  return kh__json_skip_value(j, 0);
}

static int kh__gpu(kh__json *j, void *p) {
  kh_settings *s = p;
  kh__gpu_acc a = {0};
  kh__json_ws(j);
  kh__json at = *j;
  if (kh__json_object(j, kh__gpu_key, &a) != 0) return -1;
  long long id;
  if (!a.has_id || kh_parse_ll(a.id, 0, KH_MAX_DEVICES - 1, &id) != 0)
    return kh__json_fail(&at, "a gpu needs an \"id\" holding a device index "
                              "(\"0\" to \"31\")");
  /* Range first: converting an out-of-range double to int is undefined
   * (found by tests/fuzz/fuzz-config). */
  if (!a.has_slots || !(a.slots >= 1 && a.slots <= 1024) ||
      a.slots != (int)a.slots)
    return kh__json_fail(&at, "a gpu needs \"slots\": an integer from 1 to 1024");
  if (s->ndevices == KH_MAX_DEVICES) return kh__json_fail(&at, "too many gpus");
  s->devices[s->ndevices++] = (kh_dev_slots){(int)id, (int)a.slots};
  return 0;
}

static int kh__local_key(kh__json *j, const char *key, void *p) {
  if (strcmp(key, "gpus") == 0) return kh__json_array(j, kh__gpu, p);
  return kh__json_skip_value(j, 0);
}

static int kh__local(kh__json *j, void *p) {
  return kh__json_object(j, kh__local_key, p);
}

typedef struct kh__spec_acc {
  kh_settings *s;
  int has_version, has_local;
} kh__spec_acc;

static int kh__version_key(kh__json *j, const char *key, void *p) {
  double v;
  if (strcmp(key, "major") == 0) {
    if (kh__json_number(j, &v) != 0) return -1;
    if (v != 1) return kh__json_fail(j, "unsupported resource-spec major "
                                        "version (only 1 is known)");
    *(int *)p = 1;
    return 0;
  }
  return kh__json_skip_value(j, 0);
}

static int kh__spec_key(kh__json *j, const char *key, void *p) {
  kh__spec_acc *a = p;
  if (strcmp(key, "version") == 0) {
    int major = 0;
    a->has_version = 1;
    if (kh__json_object(j, kh__version_key, &major) != 0) return -1;
    if (!major) return kh__json_fail(j, "\"version\" needs \"major\": 1");
    return 0;
  }
  if (strcmp(key, "local") == 0) {
    a->has_local = 1;
    return kh__json_array(j, kh__local, a->s);
  }
  return kh__json_skip_value(j, 0);
}

int kh_resource_spec_parse(const char *buf, size_t len, const char *name,
                           kh_settings *s, kh_err *err) {
  kh__json j = {buf, buf + len, buf, 1, name, err};
  kh__spec_acc a = {s, 0, 0};
  s->ndevices = 0;
  if (kh__json_object(&j, kh__spec_key, &a) != 0) return -1;
  kh__json_ws(&j);
  if (j.p != j.end) return kh__json_fail(&j, "trailing data after the object");
  if (!a.has_version || !a.has_local)
    return kh_errf(err, "%s: a resource spec needs \"version\" and \"local\"",
                    name);
  if (s->ndevices == 0)
    return kh_errf(err, "%s: the resource spec lists no gpus", name);
  s->set |= 1ull << KH__BIT_DEVICES;
  return 0;
}
