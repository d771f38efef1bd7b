/* JUnit writer. Free text (messages, log tails) is escaped as character
 * data rather than CDATA: escaping cannot be broken by what a test prints
 * ("]]>" included), and every character XML 1.0 forbids is replaced. The
 * element and attribute names follow Surefire's XSD, which Jenkins, GitLab,
 * GitHub's test reporters and Bazel all read.
 */
#include "junit.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "result.h"

/* Appends a string literal. */
#define KH__LIT(b, s) kh_buf_add((b), (s), sizeof(s) - 1)

/* ---- Characters XML can hold -------------------------------------------- */

/* Decodes one UTF-8 sequence; returns its length, or 0 when invalid. */
static size_t kh__utf8_decode(const unsigned char *p, unsigned *cp) {
  static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
  size_t n = p[0] < 0x80 ? 1 : (p[0] >> 5) == 6 ? 2 : (p[0] >> 4) == 14 ? 3
           : (p[0] >> 3) == 30 ? 4 : 0;
  if (n == 0) return 0;
  unsigned c = n == 1 ? p[0] : p[0] & (0x7fu >> n);
  for (size_t i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80) return 0;
    c = (c << 6) | (p[i] & 0x3f);
  }
  if (c < min[n] || c > 0x10ffff) return 0;  /* overlong or too large */
  *cp = c;
  return n;
}

static int kh__xml_char_ok(unsigned c) {
  if (c == 0x9 || c == 0xa || c == 0xd) return 1;
  if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return 0;  /* C0, DEL, C1 */
  if (c >= 0xd800 && c <= 0xdfff) return 0;
  return c != 0xfffe && c != 0xffff;
}

void kh_xml_text(kh_buf *b, const char *text, int esc_attr) {
  const unsigned char *p = (const unsigned char *)(text ? text : "");
  while (*p) {
    unsigned c = 0;
    size_t n = kh__utf8_decode(p, &c);
    if (n == 0 || !kh__xml_char_ok(c)) {
      KH__LIT(b, "?");
      p += n ? n : 1;
      continue;
    }
    const char *rep = c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;"
                    : !esc_attr ? NULL : c == '"' ? "&quot;" : c == '\n' ? "&#10;"
                    : c == '\r' ? "&#13;" : c == '\t' ? "&#9;" : NULL;
    if (rep) kh_buf_add(b, rep, strlen(rep));
    else kh_buf_add(b, p, n);
    p += n;
  }
}

static void kh__attr(kh_buf *b, const char *name, const char *value) {
  kh_buf_addf(b, " %s=\"", name);
  kh_xml_text(b, value, 1);
  KH__LIT(b, "\"");
}

/* ---- Test cases ----------------------------------------------------------- */

static const char *kh__name_of(const kh_rtest *t) {
  const char *slash = strchr(t->id, '/');
  return slash ? slash + 1 : t->id;
}

/* failure for a test that failed, error for one that could not run to a
 * verdict (crash, timeout, harness error). */
static const char *kh__element(int outcome) {
  switch (outcome) {
  case KH_FAIL: case KH_LEAK: return "failure";
  case KH_CRASH: case KH_TIMEOUT: case KH_ERROR: return "error";
  default: return NULL;
  }
}

/* The body of a failure: where, failing checks, the log tail. */
static void kh__details(kh_buf *b, const kh_rtest *t) {
  kh_buf d = {0};
  if (*t->file) kh_buf_addf(&d, "%s:%d: ", t->file, t->line);
  kh_buf_addf(&d, "%s\n", t->message);
  if (*t->signal) kh_buf_addf(&d, "signal: %s\n", t->signal);
  for (int i = 0; i < t->nchecks; i++) {
    const kh_rcheck *c = &t->checks[i];
    if (c->pass) continue;
    kh_buf_addf(&d, "check %s: %lld of %lld over tolerance, max abs %g, "
                 "worst %g expected %g (atol %g rtol %g)\n", c->name, c->over,
                 c->n, c->max_abs, c->worst_actual, c->worst_expected, c->atol,
                 c->rtol);
  }
  if (*t->log_path) kh_buf_addf(&d, "log: %s\n", t->log_path);
  if (*t->log_tail) kh_buf_addf(&d, "--- log tail ---\n%s", t->log_tail);
  kh_xml_text(b, d.data ? d.data : "", 0);
  kh_buf_free(&d);
}

static void kh__verdict(kh_buf *b, const char *elem, const kh_rtest *t,
                        int nested) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", *t->message ? t->message : kh_outcome_name(t->outcome));
  kh_buf_addf(b, "      <%s", elem);
  kh__attr(b, "message", msg);
  kh__attr(b, "type", kh_outcome_name(t->outcome));
  KH__LIT(b, ">");
  if (nested) {
    KH__LIT(b, "<stackTrace>");
    kh__details(b, t);
    kh_buf_addf(b, "</stackTrace></%s>\n", elem);
  } else {
    kh__details(b, t);
    kh_buf_addf(b, "</%s>\n", elem);
  }
}

/* Earlier attempts of the same test and repeat, replaced by t: flaky
 * failures when t passed, rerun failures when it failed again. */
static void kh__attempts(kh_buf *b, const kh_rep *rep, const kh_rtest *t) {
  int failed = kh_outcome_failed(t->outcome);
  for (int i = 0; i < rep->ntests; i++) {
    const kh_rtest *a = &rep->tests[i];
    if (a->final || a->repeat != t->repeat || strcmp(a->id, t->id) != 0) continue;
    const char *e = kh__element(a->outcome);
    if (!e) continue;
    const char *kind = strcmp(e, "failure") == 0 ? (failed ? "rerunFailure" : "flakyFailure")
                                                 : (failed ? "rerunError" : "flakyError");
    kh__verdict(b, kind, a, 1);
  }
}

static void kh__testcase(kh_buf *b, const kh_rep *rep, const kh_rtest *t) {
  char name[512], time[32];
  if (t->repeat > 1) snprintf(name, sizeof name, "%s [repeat %d]", kh__name_of(t), t->repeat);
  else snprintf(name, sizeof name, "%s", kh__name_of(t));
  snprintf(time, sizeof time, "%.3f", isnan(t->wall_ms) ? 0.0 : t->wall_ms / 1000.0);
  KH__LIT(b, "    <testcase");
  kh__attr(b, "name", name);
  kh__attr(b, "classname", t->suite);
  kh__attr(b, "time", time);
  if (*t->file) {
    kh__attr(b, "file", t->file);
    kh_buf_addf(b, " line=\"%d\"", t->line);
  }
  KH__LIT(b, ">\n");
  const char *e = kh__element(t->outcome);
  if (e) kh__verdict(b, e, t, 0);
  if (t->outcome == KH_SKIP) {
    KH__LIT(b, "      <skipped");
    kh__attr(b, "message", t->message);
    KH__LIT(b, "/>\n");
  }
  kh__attempts(b, rep, t);
  if (e && *t->log_tail) {
    KH__LIT(b, "      <system-out>");
    kh_xml_text(b, t->log_tail, 0);
    KH__LIT(b, "</system-out>\n");
  }
  KH__LIT(b, "    </testcase>\n");
}

/* ---- Suites ------------------------------------------------------------------ */

typedef struct kh__tally {
  int tests, failures, errors, skipped;
  double seconds;
} kh__tally;

static void kh__count(kh__tally *s, const kh_rtest *t) {
  const char *e = kh__element(t->outcome);
  s->tests++;
  s->failures += e && strcmp(e, "failure") == 0;
  s->errors += e && strcmp(e, "error") == 0;
  s->skipped += t->outcome == KH_SKIP;
  if (!isnan(t->wall_ms)) s->seconds += t->wall_ms / 1000.0;
}

static void kh__tally_attrs(kh_buf *b, const kh__tally *s) {
  kh_buf_addf(b, " tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" "
               "time=\"%.3f\"", s->tests, s->failures, s->errors, s->skipped,
               s->seconds);
}

static void kh__suite(kh_buf *b, const kh_rep *rep, const char *suite, int id) {
  kh__tally s = {0};
  const char *stamp = "";
  for (int i = 0; i < rep->ntests; i++) {
    const kh_rtest *t = &rep->tests[i];
    if (!t->final || strcmp(t->suite, suite) != 0) continue;
    if (!*stamp) stamp = t->started;
    kh__count(&s, t);
  }
  char ts[20];  /* Surefire's timestamp has no zone or fraction: UTC here */
  snprintf(ts, sizeof ts, "%s", stamp);
  kh_buf_addf(b, "  <testsuite id=\"%d\"", id);
  kh__attr(b, "name", suite);
  kh__tally_attrs(b, &s);
  kh__attr(b, "timestamp", ts);
  kh__attr(b, "hostname", rep->host);
  KH__LIT(b, ">\n    <properties>\n");
  const char *props[][2] = {{"kiln.version", rep->version}, {"kiln.git", rep->git},
                            {"kiln.backend", rep->backend}, {"kiln.command", rep->command},
                            {"kiln.report", rep->path}};
  for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) {
    KH__LIT(b, "      <property");
    kh__attr(b, "name", props[i][0]);
    kh__attr(b, "value", props[i][1]);
    KH__LIT(b, "/>\n");
  }
  KH__LIT(b, "    </properties>\n");
  for (int i = 0; i < rep->ntests; i++)
    if (rep->tests[i].final && strcmp(rep->tests[i].suite, suite) == 0)
      kh__testcase(b, rep, &rep->tests[i]);
  KH__LIT(b, "  </testsuite>\n");
}

static int kh__seen_before(const kh_rep *rep, int i) {
  for (int j = 0; j < i; j++)
    if (rep->tests[j].final && strcmp(rep->tests[j].suite, rep->tests[i].suite) == 0)
      return 1;
  return 0;
}

int kh_junit_write(const kh_rep *rep, const char *path, kh_err *err) {
  kh_buf b = {0};
  kh__tally all = {0};
  for (int i = 0; i < rep->ntests; i++)
    if (rep->tests[i].final) kh__count(&all, &rep->tests[i]);
  kh_buf_addf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"kiln\"");
  kh__tally_attrs(&b, &all);
  KH__LIT(&b, ">\n");
  int id = 0;
  for (int i = 0; i < rep->ntests; i++)
    if (rep->tests[i].final && !kh__seen_before(rep, i))
      kh__suite(&b, rep, rep->tests[i].suite, id++);
  KH__LIT(&b, "</testsuites>\n");
  int rc = 0;
  if (strcmp(path, "-") == 0) {
    if (kh_write_all(STDOUT_FILENO, b.data, b.len) != 0)
      rc = kh_errf(err, "stdout: %s", strerror(errno));
  } else if (kh_write_atomic(path, b.data, b.len) != 0) {
    rc = kh_errf(err, "%s: %s", path, strerror(errno));
  }
  kh_buf_free(&b);
  return rc;
}
