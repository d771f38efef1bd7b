/* Run settings: defaults, and one table of the scalar settings that both
 * the command line and configs set, so that both check a value the same way
 * and name the same limits. The lists (selection, tolerances, devices)
 * have their own setters; the sources' own options are theirs (sources.c).
 * See run.h.
 */
#include "source-impl.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const krun_sanitize_names[] = {"none", "memcheck", "racecheck", "initcheck",
                                           "synccheck", NULL};
static const char *const isolation_names[] = {"process", "none", "worker", NULL};
static const char *const leak_names[] = {"fail", "warn", NULL};
const char *const krun_contain_names[] = {"auto", "cgroup", "subreaper", "none", NULL};

/* AUTO_INT: an integer in range, or the word `auto` (stored as -1). */
typedef enum { INT, DOUBLE, ENUM, BOOL, U64, STR, AUTO_INT } type;

typedef struct field {
  const char *name;
  type type;
  size_t off;
  double lo, hi;            /* inclusive range for numbers */
  int lo_open;              /* the range excludes lo */
  const char *const *choices;
} field;

#define F(name, type, member, lo, hi, open, choices) \
  {name, type, offsetof(krun_settings, member), lo, hi, open, choices}

static const field fields[] = {
    F("jobs", INT, jobs, 1, 1024, 0, NULL),
    F("backend", ENUM, backend, 0, 0, 0, krun_backend_names),
    F("slots", AUTO_INT, slots, 1, 1024, 0, NULL),
    F("timeout", DOUBLE, timeout_s, 0, 604800, 1, NULL),
    F("grace", DOUBLE, grace_s, 0, 3600, 0, NULL),
    F("retries", INT, retries, 0, 100, 0, NULL),
    F("repeat", INT, repeat, 1, 100000, 0, NULL),
    F("isolation", ENUM, isolation, 0, 0, 0, isolation_names),
    F("leaks", ENUM, leaks, 0, 0, 0, leak_names),
    F("poison", BOOL, poison, 0, 1, 0, NULL),
    F("seed", U64, seed, 0, 0, 0, NULL),
    F("cap", DOUBLE, cap, 0, 1, 1, NULL),
    F("wrap", STR, wrap, 0, 0, 0, NULL),
    F("warm", AUTO_INT, warm, 0, 64, 0, NULL),
    F("allow_empty", BOOL, allow_empty, 0, 1, 0, NULL),
    F("contain", ENUM, contain, 0, 0, 0, krun_contain_names),
    F("sanitize", ENUM, sanitize, 0, 0, 0, krun_sanitize_names),
};
#define NFIELDS (sizeof fields / sizeof fields[0])
/* Bits for the list settings, after the scalar ones. */
enum { BIT_SELECTION = NFIELDS, BIT_TOL, BIT_DEVICES, BIT_RESOURCES };

static const field *find(const char *name) {
  for (size_t i = 0; i < NFIELDS; i++)
    if (strcmp(fields[i].name, name) == 0) return &fields[i];
  return NULL;
}

static void expect(const field *f, char *out, size_t n) {
  char ch[128] = "";
  switch (f->type) {
  case INT: snprintf(out, n, "an integer from %.0f to %.0f", f->lo, f->hi); break;
  case DOUBLE:
    if (f->lo_open) snprintf(out, n, "a number above %g and at most %g", f->lo, f->hi);
    else snprintf(out, n, "a number from %g to %g", f->lo, f->hi);
    break;
  case ENUM:
    for (const char *const *c = f->choices; *c; c++)
      snprintf(ch + strlen(ch), sizeof ch - strlen(ch), "%s%s", *c, c[1] ? ", " : "");
    snprintf(out, n, "one of %s", ch);
    break;
  case BOOL: snprintf(out, n, "true or false"); break;
  case U64: snprintf(out, n, "an unsigned 64-bit integer"); break;
  case STR: snprintf(out, n, "a string"); break;
  case AUTO_INT:
    snprintf(out, n, "an integer from %.0f to %.0f, or auto", f->lo, f->hi);
    break;
  }
}

const char *krun_setting_expect(const char *name, char *out, size_t n, int *textual) {
  const field *f = find(name);
  if (!f) return NULL;
  expect(f, out, n);
  if (textual) *textual = f->type == STR || f->type == ENUM;
  return out;
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

static int parse_u64(const char *t, unsigned long long *out) {
  if (!*t || *t == '-' || *t == '+') return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(t, &end, 0);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

/* Parses text for f into s. 0, or -1 with the error filled. */
static int parse(const field *f, const char *text, krun_settings *s, kh_err *err) {
  char *p = (char *)s + f->off;
  long long ll;
  double d;
  int ok = 0;
  switch (f->type) {
  case INT:
    ok = kh_parse_ll(text, (long long)f->lo, (long long)f->hi, &ll) == 0;
    if (ok) *(int *)p = (int)ll;
    break;
  case DOUBLE:
    ok = kh_parse_double(text, f->lo, f->hi, &d) == 0 && !(f->lo_open && d <= f->lo);
    if (ok) *(double *)p = d;
    break;
  case ENUM:
    for (int i = 0; f->choices[i]; i++)
      if (strcmp(text, f->choices[i]) == 0) ok = 1, *(int *)p = i;
    break;
  case BOOL: ok = parse_bool(text, (int *)p) == 0; break;
  case U64: ok = parse_u64(text, (unsigned long long *)p) == 0; break;
  case STR:
    ok = 1;
    free(*(char **)p);
    *(char **)p = kh_strdup(text);
    break;
  case AUTO_INT:
    ll = -1;
    ok = strcmp(text, "auto") == 0 ||
         kh_parse_ll(text, (long long)f->lo, (long long)f->hi, &ll) == 0;
    if (ok) *(int *)p = (int)ll;
    break;
  }
  if (!ok) {
    char what[160];
    expect(f, what, sizeof what);
    return kh_errf(err, "%s: '%s' is not valid: expected %s", f->name, text, what);
  }
  s->set |= 1ull << (f - fields);
  return 0;
}

int krun_setting_set(krun_settings *s, const char *name, const char *text,
                     kh_err *err) {
  const field *f = find(name);
  if (!f) return kh_errf(err, "unknown setting '%s'", name), -2;
  return parse(f, text, s, err);
}

int krun_setting_is_set(const krun_settings *s, const char *name) {
  const field *f = find(name);
  return f && (s->set >> (f - fields) & 1);
}

/* ---- Lists ------------------------------------------------------------------ */

void krun_setting_add_selector(krun_settings *s, const char *sel) {
  s->selection = kh_xrealloc(s->selection, (size_t)(s->nselection + 1) * sizeof(char *));
  s->selection[s->nselection++] = kh_strdup(sel);
  s->set |= 1ull << BIT_SELECTION;
}

int krun_setting_add_tolerance(krun_settings *s, const char *spec, kh_err *err) {
  ksel_tol t;
  if (ksel_tol_parse(spec, &t) != 0)
    return kh_errf(err, "tolerance: '%s' is not GLOB=ATOL:RTOL[:MAX_OVER] with "
                   "ATOL and RTOL numbers from 0 to 1e30 and MAX_OVER a count", spec);
  s->tol = kh_xrealloc(s->tol, (size_t)(s->ntol + 1) * sizeof *s->tol);
  s->tol[s->ntol++] = t;
  s->set |= 1ull << BIT_TOL;
  return 0;
}

void krun_setting_add_rule(krun_settings *s, const krun_rule *r) {
  s->rules = kh_xrealloc(s->rules, (size_t)(s->nrules + 1) * sizeof *s->rules);
  s->rules[s->nrules++] = (krun_rule){kh_strdup(r->match), kh_strdup(r->tags), r->slots,
                                      r->timeout_s};
}

int krun_setting_add_device(krun_settings *s, int id, int slots, const char *name) {
  if (s->ndevices == KRUN_MAX_DEVICES) return -1;
  krun_dev_slots *d = &s->devices[s->ndevices++];
  d->id = id;
  d->slots = slots;
  if (name) snprintf(d->name, sizeof d->name, "%s", name);
  else snprintf(d->name, sizeof d->name, "%d", id);
  s->devices_given = 1;
  s->set |= 1ull << BIT_DEVICES;
  return 0;
}

void krun_setting_clear_devices(krun_settings *s) {
  s->ndevices = 0;
  s->devices_given = 1;
  s->set |= 1ull << BIT_DEVICES;
}

int krun_setting_add_resource(krun_settings *s, const char *match, int gpus, int slots,
                              kh_err *err) {
  if (strlen(match) >= sizeof s->res[0].match || gpus < 1 || gpus > KRUN_MAX_DEVICES ||
      slots < 0 || slots > 1024)
    return kh_errf(err, "resources: '%.60s' with gpus %d, slots %d: expected a glob of "
                   "at most 255 bytes, gpus from 1 to %d, slots from 1 to 1024", match,
                   gpus, slots, KRUN_MAX_DEVICES);
  s->res = kh_xrealloc(s->res, (size_t)(s->nres + 1) * sizeof *s->res);
  krun_resource *r = &s->res[s->nres++];
  snprintf(r->match, sizeof r->match, "%s", match);
  r->gpus = gpus, r->slots = slots;
  s->set |= 1ull << BIT_RESOURCES;
  return 0;
}

/* ---- Defaults, merging, describing ----------------------------------------------- */

void krun_settings_init(krun_settings *s) {
  memset(s, 0, sizeof *s);
  s->timeout_s = 120;
  s->grace_s = 2;
  s->repeat = 1;
  s->warm = KRUN_WARM_AUTO;
}

void krun_settings_free(krun_settings *s) {
  free(s->wrap);
  for (int i = 0; i < s->nselection; i++) free(s->selection[i]);
  free(s->selection);
  krun__svals_free(s);
  free(s->tol), free(s->res);
  for (int i = 0; i < s->nrules; i++) free(s->rules[i].match), free(s->rules[i].tags);
  free(s->rules);
  memset(s, 0, sizeof *s);
}

void krun_settings_overlay(krun_settings *dst, const krun_settings *src) {
  for (size_t i = 0; i < NFIELDS; i++) {
    if (!(src->set >> i & 1)) continue;
    const field *f = &fields[i];
    const char *from = (const char *)src + f->off;
    char *to = (char *)dst + f->off;
    switch (f->type) {
    case INT: case ENUM: case BOOL: case AUTO_INT: *(int *)to = *(const int *)from; break;
    case DOUBLE: *(double *)to = *(const double *)from; break;
    case U64: *(unsigned long long *)to = *(const unsigned long long *)from; break;
    case STR:
      free(*(char **)to);
      *(char **)to = kh_strdup(*(char *const *)from);
      break;
    }
    dst->set |= 1ull << i;
  }
  if (src->set >> BIT_SELECTION & 1) {
    for (int i = 0; i < dst->nselection; i++) free(dst->selection[i]);
    dst->nselection = 0;
    for (int i = 0; i < src->nselection; i++) krun_setting_add_selector(dst, src->selection[i]);
  }
  krun__svals_overlay(dst, src);
  for (int i = 0; i < src->ntol; i++) {
    dst->tol = kh_xrealloc(dst->tol, (size_t)(dst->ntol + 1) * sizeof *dst->tol);
    dst->tol[dst->ntol++] = src->tol[i];
  }
  for (int i = 0; i < src->nrules; i++) krun_setting_add_rule(dst, &src->rules[i]);
  if (src->set >> BIT_DEVICES & 1) {
    memcpy(dst->devices, src->devices, sizeof dst->devices);
    dst->ndevices = src->ndevices;
    dst->devices_given = src->devices_given;
    dst->set |= 1ull << BIT_DEVICES;
  }
  if (src->set >> BIT_RESOURCES & 1) {
    dst->nres = 0;
    for (int i = 0; i < src->nres; i++) {
      kh_err ignored;
      (void)krun_setting_add_resource(dst, src->res[i].match, src->res[i].gpus,
                                      src->res[i].slots, &ignored);
    }
  }
}

static char *text_of(const krun_settings *s, const field *f) {
  const char *p = (const char *)s + f->off;
  switch (f->type) {
  case INT: return kh_asprintf("%d", *(const int *)p);
  case DOUBLE: return kh_asprintf("%g", *(const double *)p);
  case ENUM: return kh_strdup(f->choices[*(const int *)p]);
  case BOOL: return kh_strdup(*(const int *)p ? "true" : "false");
  case U64: return kh_asprintf("%llu", *(const unsigned long long *)p);
  case STR: return kh_strdup(*(char *const *)p ? *(char *const *)p : "");
  case AUTO_INT:
    return *(const int *)p < 0 ? kh_strdup("auto") : kh_asprintf("%d", *(const int *)p);
  }
  return kh_strdup("");
}

void krun_settings_each(const krun_settings *s,
                        void (*fn)(const char *key, const char *value, void *arg),
                        void *arg) {
  for (size_t i = 0; i < NFIELDS; i++) {
    if (fields[i].type == U64 && !(s->set >> i & 1)) continue;
    char *v = text_of(s, &fields[i]);
    fn(fields[i].name, v, arg);
    free(v);
  }
  krun__svals_each(s, fn, arg);
  kh_buf b = {0};
  for (int i = 0; i < s->ntol; i++) {
    kh_buf_addf(&b, "%s%s=%g:%g", i ? " " : "", s->tol[i].match, s->tol[i].atol,
                s->tol[i].rtol);
    if (s->tol[i].max_over >= 0) kh_buf_addf(&b, ":%lld", s->tol[i].max_over);
  }
  fn("tolerances", b.data ? b.data : "", arg);
  kh_buf_free(&b);
  for (int i = 0; i < s->ndevices; i++) {
    const krun_dev_slots *d = &s->devices[i];
    if (d->slots >= 0) kh_buf_addf(&b, "%s%s:%d", i ? " " : "", d->name, d->slots);
    else kh_buf_addf(&b, "%s%s", i ? " " : "", d->name);
  }
  fn("devices", b.data ? b.data : s->devices_given ? "none" : "all", arg);
  kh_buf_free(&b);
  for (int i = 0; i < s->nrules; i++) {
    const krun_rule *r = &s->rules[i];
    kh_buf_addf(&b, "%s%s:", i ? " " : "", r->match);
    if (r->tags) kh_buf_addf(&b, " tags=%s", r->tags);
    if (r->slots) kh_buf_addf(&b, " slots=%d", r->slots);
    if (r->timeout_s) kh_buf_addf(&b, " timeout=%d", r->timeout_s);
    kh_buf_addf(&b, ";");
  }
  if (s->nrules) fn("tests", b.data, arg);
  kh_buf_free(&b);
  for (int i = 0; i < s->nres; i++)
    kh_buf_addf(&b, "%s%s:gpus=%d,slots=%d", i ? " " : "", s->res[i].match, s->res[i].gpus,
                s->res[i].slots);
  fn("resources", b.data ? b.data : "", arg);
  kh_buf_free(&b);
}
