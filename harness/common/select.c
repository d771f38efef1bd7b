/* Test selection and tolerance overrides; see select.h. */
#include "select.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ksel_has_tag(const char *tags, const char *tag) {
  size_t n = strlen(tag);
  for (const char *p = tags ? tags : ""; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len == n && strncmp(p, tag, n) == 0) return 1;
    p += len + (comma ? 1 : 0);
  }
  return 0;
}

int ksel_matches(const char *pattern, const ksel_test *t) {
  if (pattern[0] == '@') return ksel_has_tag(t->tags, pattern + 1);
  /* An exact id first: pytest's parametrised ids hold brackets, which a
   * glob reads as a set. */
  return strcmp(pattern, t->id) == 0 || strcmp(pattern, t->suite) == 0 ||
         fnmatch(pattern, t->id, 0) == 0;
}

/* ---- Held-back tags -------------------------------------------------------- */

/* Tags whose tests a sweep leaves out: they run only when a selector names
 * them. One row per tag.
 *   host_only  held back only on the host backend (hold_slow)
 *   by_suite   named also by the test's suite, or a glob starting
 *              "suite/"; otherwise only by @tag or the exact id
 *   counted    the caller says how many it left out (a GPU run takes them) */
typedef struct held_tag {
  const char *tag;
  int host_only, by_suite, counted;
} held_tag;

static const held_tag held_tags[] = {
    {"fault", 0, 1, 0},   /* the fault suite: goes wrong on purpose */
    {"bench", 0, 1, 0},   /* kiln bench's trivial tests */
    {"perf", 0, 1, 0},    /* benchmarks: the whole device, minutes of it */
    {"slow", 1, 0, 1},    /* GPU-sized: minutes each in emulation */
    {"disabled", 0, 0, 0},/* GoogleTest's DISABLED_ tests: as GoogleTest does */
};
#define NHELD (sizeof held_tags / sizeof held_tags[0])

/* Is row h in force for t on this backend? */
static int applies(const held_tag *h, const ksel_test *t, int hold_slow) {
  return (!h->host_only || hold_slow) && ksel_has_tag(t->tags, h->tag);
}

/* Does the selector name t on purpose for row h, rather than sweep it up? */
static int named(const held_tag *h, const char *sel, const ksel_test *t) {
  if (sel[0] == '@' && strcmp(sel + 1, h->tag) == 0) return 1;
  if (strcmp(sel, t->id) == 0) return 1;
  if (!h->by_suite) return 0;
  size_t n = strlen(t->suite);
  return strcmp(sel, t->suite) == 0 ||
         (strncmp(sel, t->suite, n) == 0 && sel[n] == '/');
}

static int sweepable(const ksel_test *t, int hold_slow) {
  for (size_t h = 0; h < NHELD; h++)
    if (applies(&held_tags[h], t, hold_slow)) return 0;
  return 1;
}

/* 1: sel takes t; 0: sel matched t but a held tag keeps it out, with
 * *counted set when that tag's leaving-out is reported. */
static int takes(const char *sel, const ksel_test *t, int hold_slow,
                 int *counted) {
  int take = 1;
  for (size_t h = 0; h < NHELD; h++) {
    const held_tag *row = &held_tags[h];
    if (!applies(row, t, hold_slow) || named(row, sel, t)) continue;
    take = 0;
    *counted |= row->counted;
  }
  return take;
}

/* Held back by a counted row only: a GPU run would have taken it. */
static int held_counted(const ksel_test *t, int hold_slow) {
  int counted = 0;
  for (size_t h = 0; h < NHELD; h++)
    if (applies(&held_tags[h], t, hold_slow)) {
      if (!held_tags[h].counted) return 0;
      counted = 1;
    }
  return counted;
}

static int excluded(const ksel_test *t, char *const *sel, int nsel) {
  for (int s = 0; s < nsel; s++)
    if (sel[s][0] == '-' && ksel_matches(sel[s] + 1, t)) return 1;
  return 0;
}

int ksel_select(const ksel_test *tests, size_t n, char *const *sel, int nsel,
                int hold_slow, unsigned char *chosen, int *held) {
  int npos = 0;
  for (int s = 0; s < nsel; s++) npos += sel[s][0] != '-';
  for (size_t i = 0; i < n; i++)
    chosen[i] = npos == 0 && sweepable(&tests[i], hold_slow);
  /* Bit 1 of chosen[i]: a positive selector matched it and only a counted
   * tag kept it out. */
  for (int s = 0; s < nsel; s++) {
    int neg = sel[s][0] == '-';
    const char *pat = sel[s] + neg;
    int hits = 0;
    for (size_t i = 0; i < n; i++) {
      if (!ksel_matches(pat, &tests[i])) continue;
      hits++;
      int counted = 0;
      if (neg) continue;
      if (takes(pat, &tests[i], hold_slow, &counted)) chosen[i] |= 1;
      else if (counted) chosen[i] |= 2;
    }
    if (!*pat || hits == 0) return s + 1;
  }
  int n_held = 0;
  for (size_t i = 0; i < n; i++) {
    int swept = chosen[i] & 2;
    chosen[i] &= 1;
    if (excluded(&tests[i], sel, nsel)) chosen[i] = 0;
    int wanted = npos == 0 ? held_counted(&tests[i], hold_slow) : swept;
    n_held += wanted && !chosen[i] && !excluded(&tests[i], sel, nsel);
  }
  if (held) *held = n_held;
  return 0;
}

/* ---- Tolerance overrides ------------------------------------------------------ */

int ksel_tol_parse(const char *spec, ksel_tol *out) {
  const char *eq = strrchr(spec, '=');
  if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof out->match) return -1;
  char *end;
  errno = 0;
  double atol = strtod(eq + 1, &end);
  if (end == eq + 1 || *end != ':') return -1;
  const char *r = end + 1;
  double rtol = strtod(r, &end);
  if (end == r || (*end && *end != ':') || errno || !(atol >= 0 && atol <= 1e30) ||
      !(rtol >= 0 && rtol <= 1e30))
    return -1;
  long long budget = -1;
  if (*end == ':') {
    const char *b = end + 1;
    if (*b < '0' || *b > '9') return -1;
    budget = strtoll(b, &end, 10);
    if (*end || errno || budget > 1000000000000LL) return -1;
  }
  memcpy(out->match, spec, (size_t)(eq - spec));
  out->match[eq - spec] = '\0';
  out->atol = atol;
  out->rtol = rtol;
  out->max_over = budget;
  return 0;
}

void ksel_tol_format(const ksel_tol *t, char *out, size_t n) {
  if (t->max_over >= 0)
    snprintf(out, n, "%s=%.17g:%.17g:%lld", t->match, t->atol, t->rtol, t->max_over);
  else
    snprintf(out, n, "%s=%.17g:%.17g", t->match, t->atol, t->rtol);
}

const ksel_tol *ksel_tol_pick(const ksel_tol *tols, int n, const char *suite,
                              const char *test_id, const char *check) {
  char full[512];
  snprintf(full, sizeof full, "%s/%s", test_id, check);
  const ksel_tol *pick = NULL;
  for (int i = 0; i < n; i++)
    if (fnmatch(tols[i].match, full, 0) == 0 ||
        fnmatch(tols[i].match, test_id, 0) == 0 ||
        (suite && fnmatch(tols[i].match, suite, 0) == 0))
      pick = &tols[i];
  return pick;
}

/* ---- Test ids ---------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s[0..n) that is no control
 * character, or 0 (a bad or overlong form, a surrogate, past U+10FFFF, a
 * C0 or C1 control, DEL). */
static size_t id_char(const unsigned char *s, size_t n) {
  static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (s[0] < 0x80) return s[0] >= 0x20 && s[0] != 0x7f && s[0] != '%';
  size_t k = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
           : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
  if (k == 0 || k > n) return 0;
  unsigned c = s[0] & (0x7fu >> k);
  for (size_t i = 1; i < k; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    c = (c << 6) | (s[i] & 0x3f);
  }
  if (c < min[k] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) || c <= 0x9f) return 0;
  return k;
}

size_t ksel_id_escape(const char *name, size_t len, char *out, size_t cap) {
  static const char hex[] = "0123456789ABCDEF";
  const unsigned char *s = (const unsigned char *)name;
  size_t w = 0;
#define PUT(ch) do { if (w + 1 < cap) out[w] = (char)(ch); w++; } while (0)
  for (size_t i = 0; i < len;) {
    size_t k = id_char(s + i, len - i);
    if (k == 0) {
      PUT('%');
      PUT(hex[s[i] >> 4]);
      PUT(hex[s[i] & 15]);
      i++;
      continue;
    }
    for (size_t j = 0; j < k; j++) PUT(s[i + j]);
    i += k;
  }
#undef PUT
  if (cap) out[w < cap ? w : cap - 1] = '\0';
  return w;
}

static int hexdigit(int c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

long ksel_id_unescape(const char *id, char *out, size_t cap) {
  size_t w = 0;
  for (const char *p = id; *p; w++) {
    if (w >= cap) return -1;
    if (*p == '%') {
      int hi = hexdigit(p[1]), lo = hi < 0 ? -1 : hexdigit(p[2]);
      if (lo < 0) return -1;
      out[w] = (char)(hi * 16 + lo);
      p += 3;
    } else {
      out[w] = *p++;
    }
  }
  return (long)w;
}

int ksel_id_valid(const char *id) {
  size_t n = strlen(id);
  char *name = malloc(n + 1), *again = malloc(n + 1);
  long len = name && again ? ksel_id_unescape(id, name, n + 1) : -1;
  int ok = len >= 0 && ksel_id_escape(name, (size_t)len, again, n + 1) == n &&
           strcmp(again, id) == 0;
  free(name), free(again);
  return ok;
}
