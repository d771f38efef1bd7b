/* JUnit XML from the model, in the Jenkins/Surefire variant CI systems
 * read (Jenkins, GitLab, GitHub's test reporters, Bazel): a <testsuite>
 * per kiln suite, a <testcase> per final test run, <failure>/<error>/
 * <skipped>, retried attempts as <flakyFailure>/<rerunFailure>, how each
 * ran (alone or in which worker) as the test case's <properties>. Free text
 * is escaped as character data rather than CDATA: escaping cannot be
 * broken by what a test prints ("]]>" included), and every character XML
 * 1.0 forbids is replaced.
 */
#include "report-impl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Appends a string literal. */
#define LIT(b, s) kh_buf_add((b), (s), sizeof(s) - 1)

/* ---- Characters XML can hold ------------------------------------------------- */

/* Decodes one UTF-8 sequence; returns its length, or 0 when invalid. */
static size_t utf8_decode(const unsigned char *p, unsigned *cp) {
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

static int xml_char_ok(unsigned c) {
  if (c == 0x9 || c == 0xa || c == 0xd) return 1;
  if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return 0;  /* C0, DEL, C1 */
  if (c >= 0xd800 && c <= 0xdfff) return 0;
  return c != 0xfffe && c != 0xffff;
}

void krep__xml_text(kh_buf *b, const char *text, int attr) {
  const unsigned char *p = (const unsigned char *)(text ? text : "");
  while (*p) {
    unsigned c = 0;
    size_t n = utf8_decode(p, &c);
    if (n == 0 || !xml_char_ok(c)) {
      LIT(b, "?");
      p += n ? n : 1;
      continue;
    }
    const char *rep = c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;"
                    : !attr ? NULL : c == '"' ? "&quot;" : c == '\n' ? "&#10;"
                    : c == '\r' ? "&#13;" : c == '\t' ? "&#9;" : NULL;
    if (rep) kh_buf_add(b, rep, strlen(rep));
    else kh_buf_add(b, p, n);
    p += n;
  }
}

int krep__write_out(const char *path, const kh_buf *b, kh_err *err) {
  if (strcmp(path, "-") == 0 ? kh_write_all(STDOUT_FILENO, b->data, b->len)
                             : kh_write_atomic(path, b->data, b->len))
    return kh_errf(err, "%s: %s", strcmp(path, "-") == 0 ? "stdout" : path,
                   strerror(errno));
  return 0;
}

static void attr(kh_buf *b, const char *name, const char *value) {
  kh_buf_addf(b, " %s=\"", name);
  krep__xml_text(b, value, 1);
  LIT(b, "\"");
}

/* ---- Test cases ------------------------------------------------------------ */

/* The test's name within its suite (the classname): kiln's SUITE/NAME,
 * GoogleTest's Suite.Name (whose suite may hold '/': Inst/Suite.Name/0). */
static const char *name_of(const krep_test *t) {
  size_t n = t->suite ? strlen(t->suite) : 0;
  if (n && strncmp(t->id, t->suite, n) == 0 && (t->id[n] == '/' || t->id[n] == '.'))
    return t->id + n + 1;
  const char *slash = strchr(t->id, '/');
  return slash ? slash + 1 : t->id;
}

/* failure for a test that failed, error for one that could not run to a
 * verdict (crash, timeout, harness error, lost with what ran it, a device that
 * failed under it). */
static const char *element(int outcome) {
  switch (outcome) {
  case KREP_FAIL: case KREP_LEAK: return "failure";
  case KREP_CRASH: case KREP_TIMEOUT: case KREP_ERROR: case KREP_LOST: case KREP_COLLATERAL:
    return "error";
  default: return NULL;
  }
}

/* The body of a failure: where, failing checks, the log tail. */
static void details(kh_buf *b, const krep_test *t) {
  kh_buf d = {0};
  if (t->file && *t->file) kh_buf_addf(&d, "%s:%d: ", t->file, t->line);
  kh_buf_addf(&d, "%s\n", t->message ? t->message : "");
  if (t->signal) kh_buf_addf(&d, "signal: %s\n", t->signal);
  int i = 0;
  const krep_rec *r;
  while ((r = krep_test_next(t, "check", &i))) {
    kp_check c;
    if (krep_rec_decode(r, &kp_rec_check, &c) != 0 || c.pass) continue;
    char sentence[1024];
    kp_check_sentence(&c, sentence, sizeof sentence);
    kh_buf_addf(&d, "%s\n", sentence);
  }
  if (t->log_path && *t->log_path) kh_buf_addf(&d, "log: %s\n", t->log_path);
  if (t->log_tail && *t->log_tail) kh_buf_addf(&d, "--- log tail ---\n%s", t->log_tail);
  krep__xml_text(b, d.data ? d.data : "", 0);
  kh_buf_free(&d);
}

static void verdict(kh_buf *b, const char *elem, const krep_test *t, int nested) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s",
           t->message && *t->message ? t->message : krep_outcome_name(t->outcome));
  kh_buf_addf(b, "      <%s", elem);
  attr(b, "message", msg);
  attr(b, "type", krep_outcome_name(t->outcome));
  LIT(b, ">");
  if (nested) {
    LIT(b, "<stackTrace>");
    details(b, t);
    kh_buf_addf(b, "</stackTrace></%s>\n", elem);
  } else {
    details(b, t);
    kh_buf_addf(b, "</%s>\n", elem);
  }
}

/* Earlier attempts of the same test and repeat, replaced by t: flaky
 * failures when t passed, rerun failures when it failed again. A
 * collateral attempt was the device's failure, not the test's: left out. */
static void attempts(kh_buf *b, const krep_report *rep, const krep_test *t) {
  int failed = krep_outcome_failed(t->outcome);
  for (int i = 0; i < rep->ntests; i++) {
    const krep_test *a = rep->tests[i];
    if (a->final || a->repeat != t->repeat || strcmp(a->id, t->id) != 0 ||
        a->outcome == KREP_COLLATERAL)
      continue;
    const char *e = element(a->outcome);
    if (!e) continue;
    const char *kind = strcmp(e, "failure") == 0
                           ? (failed ? "rerunFailure" : "flakyFailure")
                           : (failed ? "rerunError" : "flakyError");
    verdict(b, kind, a, 1);
  }
}

static void property(kh_buf *b, const char *name, const char *value) {
  LIT(b, "        <property");
  attr(b, "name", name);
  attr(b, "value", value ? value : "");
  LIT(b, "/>\n");
}

/* How the run ran, as the test case's properties: kiln.ran (alone, worker
 * or shared), its worker and place there, its log; for a run alone that
 * confirms a worker's, whether it failed alone and how the worker's run
 * went. */
static void ran(kh_buf *b, const krep_report *rep, const krep_test *t) {
  if (!krep_ran_name(t->ran)) return;
  char num[32], text[200];
  LIT(b, "      <properties>\n");
  property(b, "kiln.ran", krep_ran_name(t->ran));
  if (t->worker > 0) snprintf(num, sizeof num, "%d", t->worker), property(b, "kiln.worker", num);
  if (t->position > 0)
    snprintf(num, sizeof num, "%d", t->position), property(b, "kiln.position", num);
  if (t->log_path && *t->log_path) property(b, "kiln.log", t->log_path);
  const krep_test *w = krep_test_confirms(rep, t);
  if (w) {
    property(b, "kiln.confirmed_alone", krep_test_note(t, "confirmed_alone"));
    char where[160];
    krep_ran_text(rep, w, where, sizeof where);
    snprintf(text, sizeof text, "%s %s", krep_outcome_name(w->outcome), where);
    property(b, "kiln.worker_run", text);
    property(b, "kiln.worker_after", krep_test_note(w, "worker_after"));
  }
  LIT(b, "      </properties>\n");
}

static void testcase(kh_buf *b, const krep_report *rep, const krep_test *t) {
  char name[512], time[32];
  if (t->repeat > 1) snprintf(name, sizeof name, "%s [repeat %d]", name_of(t), t->repeat);
  else snprintf(name, sizeof name, "%s", name_of(t));
  snprintf(time, sizeof time, "%.6f", isnan(t->wall_ms) ? 0.0 : t->wall_ms / 1000.0);
  LIT(b, "    <testcase");
  attr(b, "name", name);
  attr(b, "classname", t->suite);
  attr(b, "time", time);
  if (t->file && *t->file) {
    attr(b, "file", t->file);
    kh_buf_addf(b, " line=\"%d\"", t->line);
  }
  LIT(b, ">\n");
  ran(b, rep, t);
  const char *e = element(t->outcome);
  if (e) verdict(b, e, t, 0);
  if (t->outcome == KREP_SKIP) {
    LIT(b, "      <skipped");
    attr(b, "message", t->message ? t->message : "");
    LIT(b, "/>\n");
  }
  attempts(b, rep, t);
  if (e && t->log_tail && *t->log_tail) {
    LIT(b, "      <system-out>");
    krep__xml_text(b, t->log_tail, 0);
    LIT(b, "</system-out>\n");
  }
  LIT(b, "    </testcase>\n");
}

/* ---- Suites ----------------------------------------------------------------- */

typedef struct tally {
  int tests, failures, errors, skipped;
  double seconds;
} tally;

static void count(tally *s, const krep_test *t) {
  const char *e = element(t->outcome);
  s->tests++;
  s->failures += e && strcmp(e, "failure") == 0;
  s->errors += e && strcmp(e, "error") == 0;
  s->skipped += t->outcome == KREP_SKIP;
  if (!isnan(t->wall_ms)) s->seconds += t->wall_ms / 1000.0;
}

static void tally_attrs(kh_buf *b, const tally *s) {
  kh_buf_addf(b, " tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" "
              "time=\"%.6f\"", s->tests, s->failures, s->errors, s->skipped,
              s->seconds);
}

static void suite(kh_buf *b, const krep_report *rep, const char *name, int id) {
  tally s = {0};
  double first = NAN;
  for (int i = 0; i < rep->ntests; i++) {
    const krep_test *t = rep->tests[i];
    if (!t->final || strcmp(t->suite, name) != 0) continue;
    if (isnan(first)) first = t->started_s;
    count(&s, t);
  }
  /* Surefire's timestamp has no zone or fraction: UTC, to the second. */
  char iso[40] = "", ts[20] = "";
  if (!isnan(first)) kh_iso_time(first, iso, sizeof iso);
  snprintf(ts, sizeof ts, "%.19s", iso);
  kh_buf_addf(b, "  <testsuite id=\"%d\"", id);
  attr(b, "name", name);
  tally_attrs(b, &s);
  attr(b, "timestamp", ts);
  attr(b, "hostname", rep->host ? rep->host : "");
  LIT(b, ">\n    <properties>\n");
  /* kiln.nothing_tested only when the run tested nothing (and so failed,
   * though its test cases show only skips). */
  const char *props[][2] = {{"kiln.version", rep->kiln_version}, {"kiln.git", rep->git},
                            {"kiln.backend", rep->backend}, {"kiln.command", rep->command},
                            {"kiln.report", rep->path},
                            {"kiln.nothing_tested", rep->nothing_tested}};
  for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) {
    if (i == 5 && !rep->nothing_tested) continue;
    LIT(b, "      <property");
    attr(b, "name", props[i][0]);
    attr(b, "value", props[i][1] ? props[i][1] : "");
    LIT(b, "/>\n");
  }
  LIT(b, "    </properties>\n");
  for (int i = 0; i < rep->ntests; i++)
    if (rep->tests[i]->final && strcmp(rep->tests[i]->suite, name) == 0)
      testcase(b, rep, rep->tests[i]);
  LIT(b, "  </testsuite>\n");
}

static int seen_before(const krep_report *rep, int i) {
  for (int j = 0; j < i; j++)
    if (rep->tests[j]->final && strcmp(rep->tests[j]->suite, rep->tests[i]->suite) == 0)
      return 1;
  return 0;
}

int krep_junit_write(const krep_report *rep, const char *path, kh_err *err) {
  kh_buf b = {0};
  tally all = {0};
  for (int i = 0; i < rep->ntests; i++)
    if (rep->tests[i]->final) count(&all, rep->tests[i]);
  LIT(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"kiln\"");
  tally_attrs(&b, &all);
  LIT(&b, ">\n");
  int id = 0;
  for (int i = 0; i < rep->ntests; i++)
    if (rep->tests[i]->final && !seen_before(rep, i))
      suite(&b, rep, rep->tests[i]->suite, id++);
  LIT(&b, "</testsuites>\n");
  int rc = krep__write_out(path, &b, err);
  kh_buf_free(&b);
  return rc;
}
