/* The one YAML writer: libyaml's emitter, streamed to a temporary file that
 * is renamed into place, with kiln's rules for scalars. A string is
 * written plain only when no YAML 1.1 or 1.2 reader (PyYAML, libyaml users,
 * Go, Ruby) could take it for something else: not empty, not starting with
 * a digit, sign, dot or tilde (numbers, .inf, timestamps, 1:30 read as 90
 * in YAML 1.1), not a boolean or null word in any case, not << or =.
 * Everything else is double-quoted. Numbers always read back as numbers:
 * an exponent gets a mantissa with a dot ("1.0e+20"; YAML 1.1 reads "1e+20"
 * as a string) and NaN and infinities are .nan, .inf, -.inf.
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
#include <yaml.h>

struct krep_yaml {
  yaml_emitter_t em;
  int fd;
  char *path, *tmp;         /* NULL for stdout */
  int failed, write_errno;
  char kinds[64];           /* 'm' or 's' per open collection */
  int depth;
};

static int out(void *data, unsigned char *buf, size_t size) {
  krep_yaml *y = data;
  if (kh_write_all(y->fd, buf, size) != 0) {
    y->write_errno = errno;
    return 0;
  }
  return 1;
}

static void emit(krep_yaml *y, yaml_event_t *ev, int ok) {
  if (!ok || y->failed) {
    if (ok) yaml_event_delete(ev);
    y->failed = 1;
    return;
  }
  if (!yaml_emitter_emit(&y->em, ev)) y->failed = 1;
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
  yaml_emitter_initialize(&y->em);
  yaml_emitter_set_output(&y->em, out, y);
  yaml_emitter_set_width(&y->em, 100);
  yaml_emitter_set_unicode(&y->em, 1);
  yaml_event_t ev;
  emit(y, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
  emit(y, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 0));
  return y;
}

int krep_yaml_close(krep_yaml *y, kh_err *err) {
  yaml_event_t ev;
  emit(y, &ev, yaml_document_end_event_initialize(&ev, 0));
  emit(y, &ev, yaml_stream_end_event_initialize(&ev));
  if (!y->failed && !yaml_emitter_flush(&y->em)) y->failed = 1;
  const char *name = y->path ? y->path : "stdout";
  int rc = 0;
  if (y->write_errno)
    rc = kh_errf(err, "%s: %s", name, strerror(y->write_errno));
  else if (y->failed)
    rc = kh_errf(err, "%s: YAML emitter: %s", name,
                 y->em.problem ? y->em.problem : "failed");
  if (y->path) {
    if (rc == 0 && fsync(y->fd) != 0) rc = kh_errf(err, "%s: %s", name, strerror(errno));
    close(y->fd);
    if (rc == 0 && rename(y->tmp, y->path) != 0)
      rc = kh_errf(err, "%s: %s", name, strerror(errno));
    if (rc != 0) unlink(y->tmp);
  }
  yaml_emitter_delete(&y->em);
  free(y->path), free(y->tmp), free(y);
  return rc;
}

/* ---- Collections ----------------------------------------------------------------- */

static void open_coll(krep_yaml *y, char kind, int flow) {
  yaml_event_t ev;
  if (kind == 'm')
    emit(y, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
        flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE));
  else
    emit(y, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
        flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE));
  if (y->depth < (int)sizeof y->kinds) y->kinds[y->depth] = kind;
  y->depth++;
}

void krep_yaml_map(krep_yaml *y, int flow) { open_coll(y, 'm', flow); }
void krep_yaml_seq(krep_yaml *y, int flow) { open_coll(y, 's', flow); }

void krep_yaml_end(krep_yaml *y) {
  if (y->depth == 0) {
    y->failed = 1;
    return;
  }
  char kind = --y->depth < (int)sizeof y->kinds ? y->kinds[y->depth] : 'm';
  yaml_event_t ev;
  emit(y, &ev, kind == 'm' ? yaml_mapping_end_event_initialize(&ev)
                           : yaml_sequence_end_event_initialize(&ev));
}

/* ---- Scalars ------------------------------------------------------------------------- */

static void scalar(krep_yaml *y, const char *text, yaml_scalar_style_t style) {
  yaml_event_t ev;
  emit(y, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text,
                                            (int)strlen(text), 1, 1, style));
}

/* May this string go plain, read back as the same string by any YAML 1.1
 * or 1.2 reader? (libyaml itself still quotes what plain cannot hold.) */
static int plain_ok(const char *s) {
  static const char *const words[] = {"true", "false", "yes", "no", "on", "off",
                                      "y", "n", "null", "<<", "="};
  if (!*s || strchr("0123456789+-.~", *s)) return 0;
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strcasecmp(s, words[i]) == 0) return 0;
  return 1;
}

void krep_yaml_key(krep_yaml *y, const char *key) {
  char *clean = kh_strdup(key);
  kh_text_clean(clean);     /* a key a child made up (a phase name) too */
  scalar(y, clean, plain_ok(clean) ? YAML_PLAIN_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
  free(clean);
}

void krep_yaml_str(krep_yaml *y, const char *s) {
  if (!s) {
    krep_yaml_null(y);
    return;
  }
  char *clean = kh_strdup(s);
  kh_text_clean(clean);
  yaml_scalar_style_t style = YAML_ANY_SCALAR_STYLE;
  if (!plain_ok(clean)) style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
  else if (strchr(clean, '\n')) style = YAML_LITERAL_SCALAR_STYLE;
  scalar(y, clean, style);
  free(clean);
}

void krep_yaml_null(krep_yaml *y) { scalar(y, "null", YAML_PLAIN_SCALAR_STYLE); }

void krep_yaml_bool(krep_yaml *y, int v) {
  scalar(y, v ? "true" : "false", YAML_PLAIN_SCALAR_STYLE);
}

void krep_yaml_int(krep_yaml *y, long long v) {
  char num[32];
  snprintf(num, sizeof num, "%lld", v);
  scalar(y, num, YAML_PLAIN_SCALAR_STYLE);
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
  int k = snprintf(out, n, "%s%.*s", text[0] == '-' ? "-" : "", (int)ilen, ip);
  if (fp) k += snprintf(out + k, n - (size_t)k, ".%.*s", (int)flen, fp);
  else if (ep) k += snprintf(out + k, n - (size_t)k, ".0");
  if (ep) snprintf(out + k, n - (size_t)k, "e%c%.*s", esign, (int)elen, ep);
  return 0;
}

static void double_text(krep_yaml *y, double v, int digits) {
  char raw[40], num[48];
  if (isnan(v)) {
    scalar(y, ".nan", YAML_PLAIN_SCALAR_STYLE);
    return;
  }
  if (isinf(v)) {
    scalar(y, v > 0 ? ".inf" : "-.inf", YAML_PLAIN_SCALAR_STYLE);
    return;
  }
  snprintf(raw, sizeof raw, "%.*g", digits, v);
  if (number_form(raw, num, sizeof num) != 0) snprintf(num, sizeof num, "%s", raw);
  scalar(y, num, YAML_PLAIN_SCALAR_STYLE);
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
  if (type != KP_INT && type != KP_UINT && type != KP_DOUBLE &&
      (strcmp(text, "true") == 0 || strcmp(text, "false") == 0)) {
    scalar(y, text, YAML_PLAIN_SCALAR_STYLE);
    return;
  }
  int integral = type == KP_INT || type == KP_UINT;
  const char *sp = integral ? NULL : special(text);
  if (sp) {
    scalar(y, sp, YAML_PLAIN_SCALAR_STYLE);
    return;
  }
  if (number_form(text, num, sizeof num) == 0 &&
      (!integral || strpbrk(text, ".eE") == NULL) &&
      !(type == KP_UINT && text[0] == '-')) {
    scalar(y, num, YAML_PLAIN_SCALAR_STYLE);
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
