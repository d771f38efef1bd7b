/* The one YAML writer. It writes the block layout reports/README.md shows
 * (the layout libyaml's emitter writes, which scripts and tests read line
 * by line), streamed through a buffer to a temporary file that is renamed
 * into place. It is its own emitter rather than libyaml's because the
 * report is written once per run with a few hundred scalars per test, and
 * libyaml's general emitter was over a third of kiln's instructions per
 * test (docs/decisions/harness-speed.md).
 *
 * Scalars. A string goes plain only when no YAML 1.1 or 1.2 reader
 * (PyYAML, libyaml, Go, Ruby) could take it for something else or for
 * syntax: printable ASCII, not empty, not starting with a digit, sign, dot,
 * tilde or an indicator (numbers, .inf, timestamps, 1:30 read as 90 in YAML
 * 1.1, "- x", "@x"), not a boolean or null word in any case, no ": " or
 * " #", no trailing space, and in a flow collection no ",[]{}". A string
 * of several lines goes as a literal block; everything else is
 * double-quoted with JSON's escapes, which YAML shares. Numbers always read
 * back as numbers: an exponent gets a dot and a sign ("1.0e+20"; YAML 1.1
 * reads "1e+20" as a string), NaN and infinities are .nan, .inf, -.inf.
 */
#include "report-impl.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define FLUSH_AT (64u << 10)
#define MAX_DEPTH 32

typedef struct level {
  char kind;                /* 'm' map, 's' sequence */
  char flow;
  char inline_first;        /* block: its first entry follows "- " on the line */
  char root;
  int count;                /* entries written (a map's keys) */
  int indent;               /* column of its entries (block) */
} level;

struct krep_yaml {
  int fd;
  char *path, *tmp;         /* NULL for stdout */
  kh_buf out;
  int write_errno, failed;
  level lv[MAX_DEPTH];
  int depth;
  int after_key;            /* a map key was written; its value comes next */
};

/* ---- Output ------------------------------------------------------------------- */

static void flush(krep_yaml *y) {
  if (y->out.len && !y->write_errno && kh_write_all(y->fd, y->out.data, y->out.len) != 0)
    y->write_errno = errno;
  y->out.len = 0;
}

static void put(krep_yaml *y, const char *s, size_t n) {
  kh_buf_add(&y->out, s, n);
  if (y->out.len >= FLUSH_AT) flush(y);
}

#define PUTS(y, s) put((y), (s), strlen(s))

static void spaces(krep_yaml *y, int n) {
  static const char sp[] = "                                                                ";
  while (n > 0) {
    int k = n < 64 ? n : 64;
    put(y, sp, (size_t)k);
    n -= k;
  }
}

krep_yaml *krep_yaml_open(const char *path, kh_err *err) {
  krep_yaml *y = kh_xcalloc(1, sizeof *y);
  y->fd = STDOUT_FILENO;
  if (strcmp(path, "-") != 0) {
    y->path = kh_strdup(path);
    y->tmp = kh_asprintf("%s.tmp.%ld", path, (long)getpid());
    y->fd = open(y->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (y->fd < 0) {
      kh_errf(err, "%s: %s", path, strerror(errno));
      free(y->path), free(y->tmp), free(y);
      return NULL;
    }
  }
  PUTS(y, "---\n");
  return y;
}

int krep_yaml_close(krep_yaml *y, kh_err *err) {
  if (y->depth) y->failed = 1;
  PUTS(y, "...\n");
  flush(y);
  const char *name = y->path ? y->path : "stdout";
  int rc = 0;
  if (y->write_errno) rc = kh_errf(err, "%s: %s", name, strerror(y->write_errno));
  else if (y->failed) rc = kh_errf(err, "%s: YAML writer: a key, value or end out of place", name);
  if (y->path) {
    if (rc == 0 && fsync(y->fd) != 0) rc = kh_errf(err, "%s: %s", name, strerror(errno));
    close(y->fd);
    if (rc == 0 && rename(y->tmp, y->path) != 0) rc = kh_errf(err, "%s: %s", name, strerror(errno));
    if (rc != 0) unlink(y->tmp);
  }
  kh_buf_free(&y->out);
  free(y->path), free(y->tmp), free(y);
  return rc;
}

/* ---- Where the next node goes ----------------------------------------------- */

/* The layout is libyaml's: a block map's value that is a block map sits on
 * the next lines two columns in; one that is a block sequence sits at the
 * key's column ("indentless"); a block map that is a sequence item starts
 * on the item's "- " line; empty block collections are written [] and {}. */

static level *top(krep_yaml *y) { return y->depth ? &y->lv[y->depth - 1] : NULL; }

/* Starts an entry of a block collection: on a new line at its column,
 * or right after "- " for the first entry of a sequence item. */
static void entry_start(krep_yaml *y, level *t) {
  if (t->count == 0 && t->inline_first) PUTS(y, " ");
  else if (!(t->count == 0 && t->root)) {
    PUTS(y, "\n");
    spaces(y, t->indent);
  }
  t->count++;
}

/* What comes before a node in its parent: a map value's space, a flow
 * item's comma, a block sequence item's dash. *inline_first: whether a
 * block collection here starts on this line. */
static void before_node(krep_yaml *y, int block_coll, char *inline_first) {
  level *t = top(y);
  *inline_first = 0;
  if (!t) return;
  if (t->kind == 'm') {
    if (!y->after_key) y->failed = 1;   /* a value without its key */
    y->after_key = 0;
    if (!block_coll) PUTS(y, " ");
    return;
  }
  if (t->flow) {
    if (t->count++) PUTS(y, ", ");
    return;
  }
  entry_start(y, t);
  PUTS(y, "-");
  if (block_coll) *inline_first = 1;
  else PUTS(y, " ");
}

static void open_coll(krep_yaml *y, char kind, int flow) {
  level *t = top(y);
  flow |= t && t->flow;
  char inline_first;
  before_node(y, !flow, &inline_first);
  if (y->depth == MAX_DEPTH) {
    y->failed = 1;
    return;
  }
  level *n = &y->lv[y->depth++];
  memset(n, 0, sizeof *n);
  n->kind = kind;
  n->flow = (char)flow;
  n->inline_first = inline_first;
  n->root = !t;
  if (flow) PUTS(y, kind == 'm' ? "{" : "[");
  else if (!t) n->indent = 0;
  else if (t->kind == 'm') n->indent = t->indent + (kind == 'm' ? 2 : 0);
  else n->indent = t->indent + 2;
}

void krep_yaml_map(krep_yaml *y, int flow) { open_coll(y, 'm', flow); }
void krep_yaml_seq(krep_yaml *y, int flow) { open_coll(y, 's', flow); }

void krep_yaml_end(krep_yaml *y) {
  level *t = top(y);
  if (!t || y->after_key) {
    y->failed = 1;
    return;
  }
  if (t->flow) PUTS(y, t->kind == 'm' ? "}" : "]");
  else if (t->count == 0) PUTS(y, t->kind == 'm' ? " {}" : " []");
  y->depth--;
  if (y->depth == 0) PUTS(y, "\n");
}

/* ---- Scalars -------------------------------------------------------------------------- */

/* Not one of YAML 1.1's and 1.2's type words or starts, in any case. */
static int plain_ok(const char *s) {
  static const char *const words[] = {"true", "false", "yes", "no", "on", "off",
                                      "y", "n", "null", "<<", "="};
  if (!*s || strchr("0123456789+-.~", *s)) return 0;
  if (strlen(s) > 5) return 1;    /* longer than every word below */
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strcasecmp(s, words[i]) == 0) return 0;
  return 1;
}

/* Bytes a plain scalar may hold anywhere: printable ASCII but the flow
 * indicators, which only block context allows (bit 2), and ':' and '#',
 * which are checked with their neighbours. */
static unsigned char plain_byte[256];

static void plain_table(void) {
  if (plain_byte['a']) return;
  for (int c = 0x20; c <= 0x7e; c++) plain_byte[c] = 1;
  for (const char *p = ",[]{}"; *p; p++) plain_byte[(unsigned char)*p] = 2;
  plain_byte[':'] = plain_byte['#'] = 4;
}

/* May s go plain here, and read back as the same string? */
static int plain(const char *s, int in_flow) {
  plain_table();
  if (!plain_ok(s) || strchr("-?:,[]{}#&*!|>'\"%@` ", *s)) return 0;
  const unsigned char *p = (const unsigned char *)s;
  for (; *p; p++) {
    unsigned char k = plain_byte[*p];
    if (k == 1) continue;
    if (k == 0 || (k == 2 && in_flow)) return 0;
    if (*p == ':' && (p[1] == ' ' || !p[1])) return 0;
    if (*p == '#' && p[-1] == ' ') return 0;
  }
  return p[-1] != ' ';
}

/* A code point that may stand in a double-quoted scalar as it is. */
static int printable(unsigned c) {
  return (c >= 0x20 && c <= 0x7e) || (c >= 0xa0 && c != 0x2028 && c != 0x2029 &&
                                      c != 0xfeff && c != 0xfffe && c != 0xffff);
}

static void quoted(krep_yaml *y, const char *s) {
  PUTS(y, "\"");
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    const unsigned char *run = p;
    while (*p >= 0x20 && *p <= 0x7e && *p != '"' && *p != '\\') p++;
    if (p > run) put(y, (const char *)run, (size_t)(p - run));
    if (!*p) break;
    char esc[16];
    if (*p == '"' || *p == '\\') snprintf(esc, sizeof esc, "\\%c", *p);
    else if (*p == '\n') snprintf(esc, sizeof esc, "\\n");
    else if (*p == '\t') snprintf(esc, sizeof esc, "\\t");
    else if (*p < 0x80) snprintf(esc, sizeof esc, "\\u%04X", *p);
    else {
      /* A UTF-8 sequence (the text is clean): as it is when printable. */
      size_t n = (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : 4;
      unsigned c = *p & (0x7fu >> n);
      for (size_t i = 1; i < n; i++) c = (c << 6) | (p[i] & 0x3f);
      if (printable(c)) put(y, (const char *)p, n);
      else if (c <= 0xffff) snprintf(esc, sizeof esc, "\\u%04X", c), PUTS(y, esc);
      else put(y, (const char *)p, n);
      p += n;
      continue;
    }
    PUTS(y, esc);
    p++;
  }
  PUTS(y, "\"");
}

/* A literal block for text of several lines, when its lines allow one:
 * printable, and the first line not starting with a space. */
static int literal(krep_yaml *y, const char *s, int indent) {
  if (s[0] == ' ' || s[0] == '\n') return 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f) return 0;
  size_t len = strlen(s), nl = 0;
  while (nl < len && s[len - 1 - nl] == '\n') nl++;
  PUTS(y, nl == 0 ? "|-" : nl == 1 ? "|" : "|+");
  for (const char *p = s; *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    PUTS(y, "\n");
    if (n) spaces(y, indent), put(y, p, n);
    p += n + (e ? 1 : 0);
    if (!e) break;
  }
  return 1;
}

/* A scalar in the current position: "plain", or else quoted or literal. */
static void scalar(krep_yaml *y, const char *text, int may_be_plain) {
  char inline_first;
  before_node(y, 0, &inline_first);
  level *t = top(y);
  int in_flow = t && t->flow;
  if (may_be_plain) {
    PUTS(y, text);
    return;
  }
  if (plain(text, in_flow)) PUTS(y, text);
  else if (strchr(text, '\n') && !in_flow && literal(y, text, t ? t->indent + 2 : 2)) return;
  else quoted(y, text);
}

void krep_yaml_key(krep_yaml *y, const char *key) {
  level *t = top(y);
  if (!t || t->kind != 'm' || y->after_key) {
    y->failed = 1;
    return;
  }
  if (t->flow) {
    if (t->count++) PUTS(y, ", ");
  } else {
    entry_start(y, t);
  }
  /* kiln's own keys are words; a key a child made up (a phase name)
   * may be anything. */
  const char *p = key;
  while ((*p >= 'a' && *p <= 'z') || *p == '_' || (p > key && *p >= '0' && *p <= '9')) p++;
  if (!*p && p > key && plain_ok(key)) {
    put(y, key, (size_t)(p - key));
  } else {
    char *copy = NULL;
    if (kh_text_dirty(key)) copy = kh_strdup(key), kh_text_clean(copy);
    const char *k = copy ? copy : key;
    if (plain(k, t->flow)) PUTS(y, k);
    else quoted(y, k);
    free(copy);
  }
  PUTS(y, ":");
  y->after_key = 1;
}

void krep_yaml_str(krep_yaml *y, const char *s) {
  if (!s) {
    krep_yaml_null(y);
    return;
  }
  char *copy = NULL;
  if (kh_text_dirty(s)) copy = kh_strdup(s), kh_text_clean(copy);
  scalar(y, copy ? copy : s, 0);
  free(copy);
}

void krep_yaml_null(krep_yaml *y) { scalar(y, "null", 1); }
void krep_yaml_bool(krep_yaml *y, int v) { scalar(y, v ? "true" : "false", 1); }

void krep_yaml_int(krep_yaml *y, long long v) {
  char num[24], *p = num + sizeof num;
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  *--p = '\0';
  do *--p = (char)('0' + u % 10);
  while (u /= 10);
  if (v < 0) *--p = '-';
  scalar(y, p, 1);
}

/* A decimal number's text in a form YAML 1.1 and 1.2 both read as one:
 * an exponent gets a dot in its mantissa and a sign ("1e20" becomes
 * "1.0e+20"). 0, or -1 when text is not a decimal number. */
static int number_form(const char *text, char *out, size_t n) {
  const char *p = text, *ip, *fp = NULL, *ep = NULL;
  size_t ilen, flen = 0, elen = 0;
  char esign = '+';
  if (*p == '-') p++;
  ip = p;
  while (isdigit((unsigned char)*p)) p++;
  ilen = (size_t)(p - ip);
  if (ilen == 0 || (ilen > 1 && *ip == '0')) return -1;   /* "", "007" */
  if (*p == '.') {
    fp = ++p;
    while (isdigit((unsigned char)*p)) p++;
    if ((flen = (size_t)(p - fp)) == 0) return -1;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-') esign = *p++;
    ep = p;
    while (isdigit((unsigned char)*p)) p++;
    if ((elen = (size_t)(p - ep)) == 0) return -1;
  }
  if (*p || strlen(text) + 5 > n) return -1;
  if (!fp && !ep) {       /* an integer: as it is */
    memcpy(out, text, strlen(text) + 1);
    return 0;
  }
  int k = snprintf(out, n, "%s%.*s", text[0] == '-' ? "-" : "", (int)ilen, ip);
  if (fp) k += snprintf(out + k, n - (size_t)k, ".%.*s", (int)flen, fp);
  else k += snprintf(out + k, n - (size_t)k, ".0");
  if (ep) snprintf(out + k, n - (size_t)k, "e%c%.*s", esign, (int)elen, ep);
  return 0;
}

static void double_text(krep_yaml *y, double v, int digits) {
  char raw[40], num[48];
  if (isnan(v)) {
    scalar(y, ".nan", 1);
    return;
  }
  if (isinf(v)) {
    scalar(y, v > 0 ? ".inf" : "-.inf", 1);
    return;
  }
  snprintf(raw, sizeof raw, "%.*g", digits, v);
  if (number_form(raw, num, sizeof num) != 0) snprintf(num, sizeof num, "%s", raw);
  scalar(y, num, 1);
}

void krep_yaml_num(krep_yaml *y, double v) { double_text(y, v, 17); }
void krep_yaml_ms(krep_yaml *y, double v) { double_text(y, v, 6); }

/* The protocol's words for special doubles, as YAML writes them. */
static const char *special(const char *text) {
  static const char *const map[][2] = {{"nan", ".nan"}, {"inf", ".inf"}, {"-inf", "-.inf"}};
  for (size_t i = 0; i < 3; i++)
    if (strcmp(text, map[i][0]) == 0) return map[i][1];
  return NULL;
}

/* KP_NUMS: "1,2.5,nan" as a flow sequence of numbers; text that is not
 * such a list stays a string. */
static void nums(krep_yaml *y, const char *text) {
  if (kp_nums_count(text) < 0) {
    krep_yaml_str(y, text);
    return;
  }
  krep_yaml_seq(y, 1);
  for (const char *p = text; *p;) {
    size_t len = strcspn(p, ",");
    char one[64];
    snprintf(one, sizeof one, "%.*s", (int)(len < 63 ? len : 63), p);
    krep_yaml_value(y, one, KP_DOUBLE);
    p += len + (p[len] == ',');
  }
  krep_yaml_end(y);
}

void krep_yaml_value(krep_yaml *y, const char *text, int type) {
  char num[96];
  if (!text) {
    krep_yaml_null(y);
    return;
  }
  if (type == KP_STR) {
    krep_yaml_str(y, text);
    return;
  }
  if (type == KP_NUMS) {
    nums(y, text);
    return;
  }
  int integral = type == KP_INT || type == KP_UINT;
  if (!integral && type != KP_DOUBLE && (strcmp(text, "true") == 0 || strcmp(text, "false") == 0)) {
    scalar(y, text, 1);
    return;
  }
  const char *sp = integral ? NULL : special(text);
  if (sp) {
    scalar(y, sp, 1);
    return;
  }
  if (number_form(text, num, sizeof num) == 0 && (!integral || strpbrk(text, ".eE") == NULL) &&
      !(type == KP_UINT && text[0] == '-')) {
    scalar(y, num, 1);
    return;
  }
  krep_yaml_str(y, text);   /* not what its key promises: keep it as text */
}

const char *krep__yaml_to_protocol(const char *text) {
  static const char *const map[][2] = {{".nan", "nan"}, {".NaN", "nan"},
                                       {".NAN", "nan"}, {".inf", "inf"},
                                       {"+.inf", "inf"}, {".Inf", "inf"},
                                       {"-.inf", "-inf"}, {"-.Inf", "-inf"}};
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(text, map[i][0]) == 0) return map[i][1];
  return text;
}
