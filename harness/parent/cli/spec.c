/* CTest resource specs (`ctest --resource-spec-file`), read exactly as
 * CTest 3.25 reads them, so that a spec CTest accepts is one kiln accepts
 * and the other way round (tests/harness/ctest.sh holds a corpus of both,
 * checked against the real ctest).
 *
 * CTest parses the file with jsoncpp's default reader, which is not strict
 * JSON: comments (slash-star and slash-slash), trailing commas, leading
 * zeros, a leading '+', anything after the first value, duplicate keys (the
 * last wins), and no value deeper than 1000 levels. Then it wants an object
 * with "version" {"major": 1, "minor": 0} (integers, both present) and a
 * "local" array of at most one object; in it, every key that looks like an
 * identifier ([a-z_][a-z0-9_]*) is a resource type whose value is an array
 * of objects with a string "id" of [a-z0-9_]+ and an optional "slots", an
 * unsigned 32-bit integer (1 when missing). Other keys are ignored. The
 * reader below follows that behaviour, written from CTest's observed
 * answers; libyaml, which reads configs, would refuse comments and accept
 * YAML, so it cannot be the reader here.
 *
 * Of the resources kiln uses type "gpus": an id that is a device index
 * (0..31) gives that device its slots. CTest gives a test whatever ids the
 * spec names and lets the test make sense of them; kiln has to run the
 * test on a device, so any other id ("gpu_a", "32") names the lowest
 * device index no other id of the spec takes, in the spec's order, and
 * keeps its name in what kiln prints (docs/devices.md, "Device tokens").
 */
#include "cli-impl.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* CTest's reader refuses (aborts on) a value nested deeper than this. */
#define STACK_LIMIT 1000

/* ---- Values --------------------------------------------------------------------- */

typedef enum { J_NULL, J_BOOL, J_INT, J_UINT, J_REAL, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
  jtype type;
  long long i;
  unsigned long long u;
  double d;
  char *s;                  /* J_STR: NUL-terminated at its first NUL (as CTest's
                               regular expressions see it) */
  struct jval **items;      /* J_ARR, J_OBJ */
  char **keys;              /* J_OBJ */
  int n, cap;
  size_t at;                /* offset in the file, for messages */
} jval;

typedef enum {
  T_OBJ_BEGIN, T_OBJ_END, T_ARR_BEGIN, T_ARR_END, T_STRING, T_NUMBER, T_TRUE, T_FALSE,
  T_NULL, T_SEP, T_COLON, T_COMMENT, T_EOS, T_ERROR
} ttype;

typedef struct token {
  ttype type;
  const char *start, *end;
} token;

typedef struct reader {
  const char *begin, *cur, *end;
  const char *name;
  kh_err *err;
  int failed;               /* the first error is kept */
  jval **all;               /* every value made, to free */
  size_t nall, capall;
} reader;

static jval *val(reader *r, jtype t, const char *at) {
  jval *v = kh_xcalloc(1, sizeof *v);
  v->type = t;
  v->at = (size_t)(at - r->begin);
  if (r->nall == r->capall) {
    r->capall = r->capall ? 2 * r->capall : 64;
    r->all = kh_xrealloc(r->all, r->capall * sizeof *r->all);
  }
  r->all[r->nall++] = v;
  return v;
}

static void where(const reader *r, size_t at, size_t *line, size_t *col) {
  *line = 1, *col = 1;
  for (const char *p = r->begin; p < r->begin + at && p < r->end; p++) {
    if (*p == '\n') (*line)++, *col = 1;
    else (*col)++;
  }
}

static int error_at(reader *r, const char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int error_at(reader *r, const char *at, const char *fmt, ...) {
  if (r->failed) return -1;
  r->failed = 1;
  char what[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  size_t line, col;
  where(r, (size_t)(at - r->begin), &line, &col);
  return kh_errf(r->err, "%s:%zu:%zu: %s", r->name, line, col, what);
}

/* ---- Tokens (jsoncpp's scanner, as CTest runs it) ------------------------------- */

static char next_char(reader *r) { return r->cur == r->end ? 0 : *r->cur++; }

static void skip_spaces(reader *r) {
  while (r->cur != r->end &&
         (*r->cur == ' ' || *r->cur == '\t' || *r->cur == '\r' || *r->cur == '\n'))
    r->cur++;
}

static int match(reader *r, const char *rest) {
  size_t n = strlen(rest);
  if ((size_t)(r->end - r->cur) < n || memcmp(r->cur, rest, n) != 0) return 0;
  r->cur += n;
  return 1;
}

/* Digits, a fraction, an exponent: the token's extent only; what it holds
 * is decided when it is decoded. A '+' followed by 'I' is infinity, which
 * CTest's reader does not take. */
static int scan_number(reader *r, int check_inf) {
  const char *p = r->cur;
  if (check_inf && p != r->end && *p == 'I') {
    r->cur = ++p;
    return 0;
  }
  char c = '0';
#define ADVANCE() (c = (r->cur = p) < r->end ? *p++ : '\0')
  while (c >= '0' && c <= '9') ADVANCE();
  if (c == '.') {
    ADVANCE();
    while (c >= '0' && c <= '9') ADVANCE();
  }
  if (c == 'e' || c == 'E') {
    ADVANCE();
    if (c == '+' || c == '-') ADVANCE();
    while (c >= '0' && c <= '9') ADVANCE();
  }
#undef ADVANCE
  return 1;
}

static int scan_string(reader *r) {
  char c = 0;
  while (r->cur != r->end) {
    c = next_char(r);
    if (c == '\\') next_char(r);
    else if (c == '"') break;
  }
  return c == '"';
}

static int scan_comment(reader *r) {
  char c = next_char(r);
  if (c == '*') {
    while (r->cur + 1 < r->end) {
      c = next_char(r);
      if (c == '*' && *r->cur == '/') break;
    }
    return next_char(r) == '/';
  }
  if (c != '/') return 0;
  while (r->cur != r->end) {
    c = next_char(r);
    if (c == '\n') break;
    if (c == '\r') {
      if (r->cur != r->end && *r->cur == '\n') next_char(r);
      break;
    }
  }
  return 1;
}

static int read_token(reader *r, token *t) {
  skip_spaces(r);
  t->start = r->cur;
  char c = next_char(r);
  int ok = 1;
  switch (c) {
  case '{': t->type = T_OBJ_BEGIN; break;
  case '}': t->type = T_OBJ_END; break;
  case '[': t->type = T_ARR_BEGIN; break;
  case ']': t->type = T_ARR_END; break;
  case '"': t->type = T_STRING; ok = scan_string(r); break;
  case '/': t->type = T_COMMENT; ok = scan_comment(r); break;
  case '0': case '1': case '2': case '3': case '4':
  case '5': case '6': case '7': case '8': case '9':
  case '-': t->type = T_NUMBER; scan_number(r, 0); break;
  case '+': t->type = T_NUMBER; ok = scan_number(r, 1); break;
  case 't': t->type = T_TRUE; ok = match(r, "rue"); break;
  case 'f': t->type = T_FALSE; ok = match(r, "alse"); break;
  case 'n': t->type = T_NULL; ok = match(r, "ull"); break;
  case ',': t->type = T_SEP; break;
  case ':': t->type = T_COLON; break;
  case 0: t->type = T_EOS; break;
  default: ok = 0; break;
  }
  if (!ok) t->type = T_ERROR;
  t->end = r->cur;
  return ok;
}

static int read_token_skipping_comments(reader *r, token *t) {
  int ok = read_token(r, t);
  while (ok && t->type == T_COMMENT) ok = read_token(r, t);
  return ok;
}

/* ---- Decoding ----------------------------------------------------------------------- */

/* An integer when the token is only digits and it fits (negative or up to
 * INT64_MAX: signed; larger: unsigned), else a double that must use the
 * whole token and not overflow. */
static int decode_number(reader *r, const token *t, jval *v) {
  const char *p = t->start;
  int neg = *p == '-';
  if (neg) p++;
  unsigned long long limit = neg ? (unsigned long long)INT64_MAX + 1 : UINT64_MAX;
  unsigned long long x = 0;
  int integral = 1;
  for (; p < t->end; p++) {
    if (*p < '0' || *p > '9') {
      integral = 0;
      break;
    }
    unsigned digit = (unsigned)(*p - '0');
    if (x > (limit - digit) / 10) {
      integral = 0;
      break;
    }
    x = x * 10 + digit;
  }
  if (integral) {
    if (neg) v->type = J_INT, v->i = x ? -(long long)(x - 1) - 1 : 0;
    else if (x <= (unsigned long long)INT64_MAX) v->type = J_INT, v->i = (long long)x;
    else v->type = J_UINT, v->u = x;
    return 0;
  }
  char buf[512];
  size_t n = (size_t)(t->end - t->start);
  if (n >= sizeof buf) return error_at(r, t->start, "a number of %zu characters", n);
  memcpy(buf, t->start, n);
  buf[n] = '\0';
  char *end;
  errno = 0;
  double d = strtod(buf, &end);
  if (end == buf || *end || (errno == ERANGE && isinf(d)))
    return error_at(r, t->start, "'%s' is not a number", buf);
  v->type = J_REAL;
  v->d = d;
  return 0;
}

static int hex4(const char *p, const char *end, unsigned *out) {
  if (end - p < 4) return -1;
  unsigned u = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    u <<= 4;
    if (c >= '0' && c <= '9') u |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') u |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') u |= (unsigned)(c - 'A' + 10);
    else return -1;
  }
  *out = u;
  return 0;
}

static void put_utf8(kh_buf *b, unsigned cp) {
  unsigned char o[4];
  size_t n;
  if (cp <= 0x7f) o[0] = (unsigned char)cp, n = 1;
  else if (cp <= 0x7ff) o[0] = (unsigned char)(0xc0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 0x3f)), n = 2;
  else if (cp <= 0xffff)
    o[0] = (unsigned char)(0xe0 | cp >> 12), o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)),
    o[2] = (unsigned char)(0x80 | (cp & 0x3f)), n = 3;
  else
    o[0] = (unsigned char)(0xf0 | cp >> 18), o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f)),
    o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f)), o[3] = (unsigned char)(0x80 | (cp & 0x3f)), n = 4;
  kh_buf_add(b, o, n);
}

/* The string between the quotes with its escapes decoded. A high surrogate
 * takes the next \u escape as its pair, whatever it holds, as CTest's
 * reader does. */
static int decode_string(reader *r, const token *t, char **out) {
  kh_buf b = {0};
  const char *p = t->start + 1, *end = t->end - 1;
  while (p < end) {
    char c = *p++;
    if (c != '\\') {
      kh_buf_add(&b, &c, 1);
      continue;
    }
    if (p == end) goto bad;
    char e = *p++;
    static const char from[] = "\"/\\bfnrt", to[] = "\"/\\\b\f\n\r\t";
    const char *k = strchr(from, e);
    if (e && k) {
      kh_buf_add(&b, &to[k - from], 1);
      continue;
    }
    unsigned cp, lo;
    if (e != 'u' || hex4(p, end, &cp) != 0) goto bad;
    p += 4;
    if (cp >= 0xd800 && cp <= 0xdbff) {
      if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, end, &lo) != 0) goto bad;
      p += 6;
      cp = 0x10000 + ((cp & 0x3ff) << 10) + (lo & 0x3ff);
    }
    put_utf8(&b, cp);
  }
  kh_buf_add(&b, "", 0);
  *out = b.data;
  return 0;
bad:
  kh_buf_free(&b);
  return error_at(r, t->start, "a bad escape in a string");
}

/* ---- Values --------------------------------------------------------------------------- */

static int read_value(reader *r, int depth, jval **out);

static void add_item(jval *v, const char *key, jval *item) {
  if (key)
    for (int i = 0; i < v->n; i++)
      if (strcmp(v->keys[i], key) == 0) {   /* a repeated key: the last wins */
        free(v->keys[i]);
        v->keys[i] = kh_strdup(key);
        v->items[i] = item;
        return;
      }
  if (v->n == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 4;
    v->items = kh_xrealloc(v->items, (size_t)v->cap * sizeof *v->items);
    if (key || v->keys) v->keys = kh_xrealloc(v->keys, (size_t)v->cap * sizeof *v->keys);
  }
  if (key) v->keys[v->n] = kh_strdup(key);
  v->items[v->n++] = item;
}

/* An object, after its '{'. The control flow is the reader's: a comment
 * may come before a key and after a value, not between a key and its
 * colon; a '}' may come wherever a key could. */
static int read_object(reader *r, int depth, jval *v) {
  token name;
  while (read_token(r, &name)) {
    int ok = 1;
    while (name.type == T_COMMENT && ok) ok = read_token(r, &name);
    if (!ok) break;
    if (name.type == T_OBJ_END) return 0;
    if (name.type != T_STRING) break;
    char *key;
    if (decode_string(r, &name, &key) != 0) return -1;
    token colon;
    if (!read_token(r, &colon) || colon.type != T_COLON) {
      free(key);
      return error_at(r, colon.start, "':' expected after a key");
    }
    jval *item;
    if (read_value(r, depth + 1, &item) != 0) {
      free(key);
      return -1;
    }
    add_item(v, key, item);
    free(key);
    token comma;
    if (!read_token(r, &comma) ||
        (comma.type != T_OBJ_END && comma.type != T_SEP && comma.type != T_COMMENT))
      return error_at(r, comma.start, "',' or '}' expected in an object");
    ok = 1;
    while (comma.type == T_COMMENT && ok) ok = read_token(r, &comma);
    if (comma.type == T_OBJ_END) return 0;
  }
  return error_at(r, name.start, "a key or '}' expected in an object");
}

static int read_array(reader *r, int depth, jval *v) {
  for (int index = 0;; index++) {
    skip_spaces(r);
    if (r->cur != r->end && *r->cur == ']') {   /* empty, or after a trailing comma */
      r->cur++;
      return 0;
    }
    jval *item;
    if (read_value(r, depth + 1, &item) != 0) return -1;
    add_item(v, NULL, item);
    token t;
    int ok = read_token(r, &t);
    while (t.type == T_COMMENT && ok) ok = read_token(r, &t);
    if (!ok || (t.type != T_SEP && t.type != T_ARR_END))
      return error_at(r, t.start, "',' or ']' expected in an array");
    if (t.type == T_ARR_END) return 0;
  }
}

static int read_value(reader *r, int depth, jval **out) {
  if (depth > STACK_LIMIT)
    return error_at(r, r->cur, "values nest deeper than %d levels (CTest's limit)", STACK_LIMIT);
  token t;
  read_token_skipping_comments(r, &t);
  jval *v = *out = val(r, J_NULL, t.start);
  switch (t.type) {
  case T_OBJ_BEGIN: v->type = J_OBJ; return read_object(r, depth, v);
  case T_ARR_BEGIN: v->type = J_ARR; return read_array(r, depth, v);
  case T_NUMBER: return decode_number(r, &t, v);
  case T_STRING: v->type = J_STR; return decode_string(r, &t, &v->s);
  case T_TRUE: case T_FALSE: v->type = J_BOOL, v->i = t.type == T_TRUE; return 0;
  case T_NULL: return 0;
  default: return error_at(r, t.start, "a value, object or array expected");
  }
}

static void free_all(reader *r) {
  for (size_t i = 0; i < r->nall; i++) {
    jval *v = r->all[i];
    for (int k = 0; v->keys && k < v->n; k++) free(v->keys[k]);
    free(v->keys), free(v->items), free(v->s), free(v);
  }
  free(r->all);
}

/* ---- What CTest makes of the values ------------------------------------------------------- */

static jval *member(const jval *o, const char *key) {
  for (int i = 0; o && o->type == J_OBJ && i < o->n; i++)
    if (strcmp(o->keys[i], key) == 0) return o->items[i];
  return NULL;
}

static int integral(double d) {
  double ip;
  return modf(d, &ip) == 0.0;
}

/* jsoncpp's isInt and isUInt: an integer in range, or a double that is one. */
static int is_int(const jval *v) {
  return (v->type == J_INT && v->i >= INT_MIN && v->i <= INT_MAX) ||
         (v->type == J_UINT && v->u <= INT_MAX) ||
         (v->type == J_REAL && v->d >= INT_MIN && v->d <= INT_MAX && integral(v->d));
}

static int is_uint(const jval *v) {
  return (v->type == J_INT && v->i >= 0 && v->i <= UINT32_MAX) ||
         (v->type == J_UINT && v->u <= UINT32_MAX) ||
         (v->type == J_REAL && v->d >= 0 && v->d <= UINT32_MAX && integral(v->d));
}

static long long as_int(const jval *v) {
  return v->type == J_INT ? v->i : v->type == J_UINT ? (long long)v->u : (long long)v->d;
}

static int matches(const char *s, int first_digit_ok) {
  if (!*s) return 0;
  for (const char *p = s; *p; p++) {
    int lower = *p >= 'a' && *p <= 'z', digit = *p >= '0' && *p <= '9';
    if (!(lower || *p == '_' || (digit && (p > s || first_digit_ok)))) return 0;
  }
  return 1;
}

static int at(reader *r, const jval *v, const char *what) {
  return error_at(r, r->begin + v->at, "%s", what);
}

/* A device index as kiln numbers devices, or -1. */
static int device_index(const char *id) {
  long long d;
  if ((id[0] == '0' && id[1]) || kh_parse_ll(id, 0, KRUN_MAX_DEVICES - 1, &d) != 0) return -1;
  return (int)d;
}

static int gpu(reader *r, const jval *g, krun_settings *s) {
  if (g->type != J_OBJ) return at(r, g, "a resource must be an object with \"id\" and \"slots\"");
  const jval *id = member(g, "id"), *slots = member(g, "slots");
  if (!id || id->type != J_STR || !matches(id->s, 1))
    return at(r, id ? id : g, "a resource needs an \"id\": a string of a-z, 0-9 and _");
  if (slots && !is_uint(slots))
    return at(r, slots, "\"slots\" must be an unsigned 32-bit integer");
  long long n = slots ? as_int(slots) : 1;
  if (krun_setting_add_device(s, device_index(id->s), n > INT_MAX ? INT_MAX : (int)n, id->s) != 0)
    return at(r, g, "too many gpus");
  return 0;
}

static void name_devices(krun_settings *s);
static int gpus(reader *r, const jval *local, krun_settings *s);

static int spec(reader *r, const jval *root, krun_settings *s) {
  if (root->type != J_OBJ) return at(r, root, "a resource spec must be an object");
  const jval *version = member(root, "version"), *local = member(root, "local");
  if (!version) return at(r, root, "no \"version\"");
  const jval *major = member(version, "major"), *minor = member(version, "minor");
  if (!major || !minor || !is_int(major) || !is_int(minor))
    return at(r, version, "\"version\" needs integers \"major\" and \"minor\"");
  if (as_int(major) != 1 || as_int(minor) != 0)
    return at(r, version, "unsupported version: only 1.0 is known");
  if (!local || local->type != J_ARR || local->n > 1)
    return at(r, local ? local : root, "\"local\" must be an array of at most one object");
  krun_setting_clear_devices(s);
  if (local->n == 0) return 0;
  int rc = gpus(r, local, s);
  if (rc == 0) name_devices(s);
  return rc;
}

/* Ids that are not device indexes take, in the spec's order, the lowest
 * device indexes no id of the spec names. */
static void name_devices(krun_settings *s) {
  unsigned long long taken = 0;
  for (int i = 0; i < s->ndevices; i++)
    if (s->devices[i].id >= 0) taken |= 1ull << s->devices[i].id;
  for (int i = 0; i < s->ndevices; i++) {
    if (s->devices[i].id >= 0) continue;
    int d = 0;
    while (d < KRUN_MAX_DEVICES && (taken >> d & 1)) d++;
    if (d == KRUN_MAX_DEVICES) break;
    s->devices[i].id = d;
    taken |= 1ull << d;
  }
}

static int gpus(reader *r, const jval *local, krun_settings *s) {
  const jval *sock = local->items[0];
  if (sock->type != J_OBJ) return at(r, sock, "an entry of \"local\" must be an object");
  for (int i = 0; i < sock->n; i++) {
    if (!matches(sock->keys[i], 0)) continue;   /* not a resource type: ignored */
    const jval *list = sock->items[i];
    if (list->type != J_ARR) return at(r, list, "a resource type must be an array");
    for (int k = 0; k < list->n; k++) {
      if (strcmp(sock->keys[i], "gpus") == 0) {
        if (gpu(r, list->items[k], s) != 0) return -1;
      } else if (list->items[k]->type != J_OBJ || !member(list->items[k], "id") ||
                 member(list->items[k], "id")->type != J_STR ||
                 !matches(member(list->items[k], "id")->s, 1) ||
                 (member(list->items[k], "slots") && !is_uint(member(list->items[k], "slots")))) {
        return at(r, list->items[k], "a resource needs a string \"id\" of a-z, 0-9 and _, "
                                     "and \"slots\" (optional) an unsigned integer");
      }
    }
  }
  return 0;
}

int kcli_spec_parse(const char *buf, size_t len, const char *name, krun_settings *out,
                    kh_err *err) {
  reader r = {buf, buf, buf + len, name, err, 0, NULL, 0, 0};
  if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0) r.cur += 3;
  jval *root = NULL;
  int rc = read_value(&r, 1, &root);
  /* Whatever follows the first value is not read, as CTest does not. */
  if (rc == 0) rc = spec(&r, root, out);
  free_all(&r);
  return rc;
}
