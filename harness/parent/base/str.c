/* Strings, buffers, errors and clocks for the kiln parent; see base.h. */
#include "base.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int kh_errf(kh_err *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (e) vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- Time ---------------------------------------------------------------- */

double kh_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double kh_wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void kh_iso_time(double wall_s, char *out, size_t n) {
  /* Whole milliseconds, rounded: a time read back from a report and
   * written again comes out the same. */
  long long ms = llround(wall_s * 1000.0);
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  gmtime_r(&t, &tm);
  char base[32];
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, n, "%s.%03dZ", base, (int)(ms % 1000));
}

double kh_iso_parse(const char *s) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  int ms = 0, used = 0;
  if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ%n", &tm.tm_year, &tm.tm_mon,
                   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms, &used) != 7 ||
      s[used] != '\0')
    return NAN;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return (double)timegm(&tm) + ms / 1000.0;
}

/* ---- Memory and strings ---------------------------------------------------- */

static void oom(void) {
  static const char msg[] = "kiln: out of memory\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
  abort();
}

void *kh_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) oom();
  return p;
}

void *kh_xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) oom();
  return p;
}

void *kh_xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) oom();
  return p;
}

char *kh_strdup(const char *s) {
  if (!s) return NULL;
  return kh_strndup(s, strlen(s));
}

char *kh_strndup(const char *s, size_t n) {
  char *d = kh_xmalloc(n + 1);
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

char *kh_asprintf(const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = kh_xmalloc((size_t)(n < 0 ? 0 : n) + 1);
  vsnprintf(s, (size_t)(n < 0 ? 0 : n) + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

int kh_parse_ll(const char *s, long long lo, long long hi, long long *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int kh_parse_double(const char *s, double lo, double hi, double *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !(v >= lo && v <= hi)) return -1;
  *out = v;
  return 0;
}

/* Length of the valid UTF-8 sequence at s, or 0 when it is not one: a
 * bad lead or continuation byte, an overlong form, a surrogate or a code
 * point past U+10FFFF (strict YAML readers, libyaml and PyYAML, refuse
 * all of them). */
static size_t utf8_len(const unsigned char *s) {
  static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
  if (s[0] < 0x80) return 1;
  size_t n = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
           : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
  if (n == 0) return 0;
  unsigned c = s[0] & (0x7fu >> n);
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    c = (c << 6) | (s[i] & 0x3f);
  }
  if (c < min[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
  return n;
}

void kh_text_clean(char *s) {
  unsigned char *p = (unsigned char *)s;
  while (*p) {
    size_t n = utf8_len(p);
    if (n == 0 || (n == 1 && *p < 0x20 && *p != '\n' && *p != '\t') ||
        *p == 0x7f) {
      *p++ = '?';
      continue;
    }
    p += n;
  }
}

int kh_text_dirty(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    if (*p >= 0x20 && *p < 0x7f) {       /* plain ASCII: the common case */
      p++;
      continue;
    }
    size_t n = utf8_len(p);
    if (n == 0 || (n == 1 && *p != '\n' && *p != '\t') || *p == 0x7f) return 1;
    p += n;
  }
  return 0;
}

void kh_buf_add(kh_buf *b, const void *data, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    b->data = kh_xrealloc(b->data, cap);
    b->cap = cap;
  }
  memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void kh_buf_addf(kh_buf *b, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n > 0) {
    char *tmp = kh_xmalloc((size_t)n + 1);
    vsnprintf(tmp, (size_t)n + 1, fmt, ap2);
    kh_buf_add(b, tmp, (size_t)n);
    free(tmp);
  }
  va_end(ap2);
}

void kh_buf_free(kh_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}


void kh_json_str(kh_buf *b, const char *s) {
  kh_buf_add(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    size_t n = utf8_len(p);
    if (n == 0) {                       /* not UTF-8: U+FFFD */
      kh_buf_add(b, "\xef\xbf\xbd", 3);
      p++;
    } else if (*p == '"' || *p == '\\') {
      kh_buf_addf(b, "\\%c", *p++);
    } else if (*p < 0x20 || *p == 0x7f) {
      kh_buf_addf(b, "\\u%04x", *p++);
    } else {
      kh_buf_add(b, p, n);
      p += n;
    }
  }
  kh_buf_add(b, "\"", 1);
}
