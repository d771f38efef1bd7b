/* Runner protocol encoding and decoding; see protocol.h. */
#include "protocol.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes that travel unescaped in a value. */
static int plain(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-' ||
         c == '/' || c == ':' || c == '@' || c == '+' || c == ',' ||
         c == '*' || c == '(' || c == ')' || c == '[' || c == ']';
}

static void append(kp_record_out *r, const char *s, size_t n) {
  r->wanted += n;
  if (r->overflow || r->len + n + 1 >= sizeof r->buf) {
    r->overflow = 1;
    return;
  }
  memcpy(r->buf + r->len, s, n);
  r->len += n;
}

void kp_begin(kp_record_out *r, const char *tag) {
  r->len = r->wanted = 0;
  r->overflow = 0;
  snprintf(r->tag, sizeof r->tag, "%s", tag);
  append(r, tag, strlen(tag));
}

void kp_add_str(kp_record_out *r, const char *key, const char *value) {
  static const char hex[] = "0123456789ABCDEF";
  append(r, " ", 1);
  append(r, key, strlen(key));
  append(r, "=", 1);
  const unsigned char *p = (const unsigned char *)(value ? value : "");
  while (*p) {
    /* Runs of plain bytes in one copy, escapes one by one. */
    const unsigned char *run = p;
    while (*p && plain(*p)) p++;
    if (p > run) append(r, (const char *)run, (size_t)(p - run));
    if (*p) {
      char esc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
      append(r, esc, 3);
      p++;
    }
  }
}

/* Decimal digits of u, written backwards from end; returns the start. */
static char *digits(unsigned long long u, char *end) {
  *--end = '\0';
  do *--end = (char)('0' + u % 10);
  while (u /= 10);
  return end;
}

void kp_add_int(kp_record_out *r, const char *key, long long value) {
  char num[24];
  unsigned long long u = value < 0 ? 0ull - (unsigned long long)value : (unsigned long long)value;
  char *p = digits(u, num + sizeof num);
  if (value < 0) *--p = '-';
  kp_add_str(r, key, p);
}

void kp_add_uint(kp_record_out *r, const char *key, unsigned long long value) {
  char num[24];
  kp_add_str(r, key, digits(value, num + sizeof num));
}

void kp_add_double(kp_record_out *r, const char *key, double value) {
  char num[40];
  if (isnan(value)) snprintf(num, sizeof num, "nan");
  else if (isinf(value)) snprintf(num, sizeof num, value > 0 ? "inf" : "-inf");
  else snprintf(num, sizeof num, "%.17g", value);
  kp_add_str(r, key, num);
}

int kp_send(kp_record_out *r, int fd) {
  if (r->overflow) {
    /* Never send a cut record: send a marker the parent can report. */
    char tag[sizeof r->tag];
    long long wanted = (long long)r->wanted + 1;
    memcpy(tag, r->tag, sizeof tag);
    kp_begin(r, "truncated");
    kp_add_str(r, "tag", tag);
    kp_add_int(r, "bytes", wanted);
  }
  r->buf[r->len++] = '\n';
  size_t off = 0;
  while (off < r->len) {
    ssize_t n = write(fd, r->buf + off, r->len - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      r->len--;
      return -1;
    }
    off += (size_t)n;
  }
  r->len--;
  return 0;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int tag_ok(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || *s == '_')) return 0;
  return 1;
}

int kp_parse(char *line, kp_record *rec, const char **why) {
  const char *dummy;
  if (!why) why = &dummy;
  memset(rec, 0, sizeof *rec);
  char *save = NULL;
  char *tok = strtok_r(line, " ", &save);
  if (!tok) return *why = "empty line", -1;
  if (!tag_ok(tok)) return *why = "record tag is not [a-z_]+", -1;
  rec->tag = tok;
  while ((tok = strtok_r(NULL, " ", &save)) != NULL) {
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok) return *why = "field without key=value", -1;
    if (rec->nfields == KP_MAX_FIELDS) return *why = "too many fields", -1;
    *eq = '\0';
    char *src = eq + 1, *dst = eq + 1;
    while (*src) {
      if (*src == '%') {
        int hi = hexval(src[1]);
        int lo = hi < 0 ? -1 : hexval(src[2]);
        if (hi < 0 || lo < 0) return *why = "bad %-escape in value", -1;
        *dst++ = (char)(hi * 16 + lo);
        src += 3;
      } else if ((unsigned char)*src < 0x20 || *src == 0x7f) {
        return *why = "control byte in value", -1;
      } else {
        *dst++ = *src++;
      }
    }
    *dst = '\0';
    rec->fields[rec->nfields].key = tok;
    rec->fields[rec->nfields].value = eq + 1;
    rec->nfields++;
  }
  return 0;
}

const char *kp_get(const kp_record *rec, const char *key) {
  for (int i = 0; i < rec->nfields; i++)
    if (strcmp(rec->fields[i].key, key) == 0) return rec->fields[i].value;
  return NULL;
}

void kp_reader_init(kp_reader *rd) {
  rd->len = 0;
  rd->discarding = 0;
}

size_t kp_reader_feed(kp_reader *rd, const char *data, size_t n) {
  size_t room = sizeof rd->buf - rd->len;
  if (n > room) n = room;
  memcpy(rd->buf + rd->len, data, n);
  rd->len += n;
  return n;
}

int kp_reader_next(kp_reader *rd, char *out) {
  char *nl = memchr(rd->buf, '\n', rd->len);
  if (!nl) {
    if (rd->len == sizeof rd->buf) {
      /* A line that cannot fit: drop what we have and skip to its end. */
      rd->len = 0;
      rd->discarding = 1;
      return -1;
    }
    return 0;
  }
  size_t n = (size_t)(nl - rd->buf);
  int was_discarding = rd->discarding;
  if (!was_discarding) {
    memcpy(out, rd->buf, n);
    out[n] = '\0';
    /* An embedded NUL would hide the rest of the line: treat as garbage. */
    if (memchr(rd->buf, '\0', n)) out[0] = '\x01', out[1] = '\0';
  }
  memmove(rd->buf, nl + 1, rd->len - n - 1);
  rd->len -= n + 1;
  rd->discarding = 0;
  return was_discarding ? -1 : 1;
}

size_t kp_reader_tail(kp_reader *rd, char *out) {
  if (rd->discarding || rd->len == 0) {
    rd->len = 0;
    return 0;
  }
  size_t n = rd->len < KP_MAX_LINE - 1 ? rd->len : KP_MAX_LINE - 1;
  memcpy(out, rd->buf, n);
  out[n] = '\0';
  rd->len = 0;
  return n;
}
