/* Test runs: the outcome table, taking in a child's records with the
 * protocol's ordering rules, and deciding the outcome; see result.h.
 */
#include "result.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

/* A child may send this much per test; past it, records are counted and
 * dropped so that a runaway child cannot exhaust the parent's memory. */
#define KH__MAX_LINES 20000
#define KH__MAX_LINE_BYTES (16u << 20)

/* ---- Outcomes ----------------------------------------------------------------- */

static const struct {
  const char *name;
  int failed;
  const char *color;
} kh__outcomes[] = {
#define KH__OUTCOME_ROW(e, n, f, c) {n, f, c},
    KH_OUTCOME_MAP(KH__OUTCOME_ROW)
#undef KH__OUTCOME_ROW
};

const char *kh_outcome_name(int o) {
  return o >= 0 && o < KH_NOUTCOMES ? kh__outcomes[o].name : "unknown";
}

const char *kh_outcome_color(int o) {
  return o >= 0 && o < KH_NOUTCOMES ? kh__outcomes[o].color : "0";
}

int kh_outcome_failed(int o) {
  return o < 0 || o >= KH_NOUTCOMES || kh__outcomes[o].failed;
}

int kh_outcome_parse(const char *name) {
  for (int i = 0; i < KH_NOUTCOMES; i++)
    if (strcmp(kh__outcomes[i].name, name) == 0) return i;
  return -1;
}

int kh_outcome_retryable(int o) {
  return o == KH_FAIL || o == KH_CRASH || o == KH_TIMEOUT || o == KH_LEAK;
}

void kh_signal_name(int sig, char *out, size_t n) {
  const char *abbrev = sigabbrev_np(sig);
  if (abbrev) snprintf(out, n, "SIG%s", abbrev);
  else snprintf(out, n, "signal %d", sig);
}

/* ---- Results --------------------------------------------------------------------- */

kh_result *kh_result_new(const char *id, const char *suite, const char *tags) {
  kh_result *r = kh_xcalloc(1, sizeof *r);
  r->id = kh_strdup(id);
  r->suite = kh_strdup(suite);
  r->tags = kh_strdup(tags ? tags : "");
  r->repeat = r->attempt = 1;
  r->device = -1;
  r->slots = 1;
  r->exit_code = -1;
  r->line = 0;
  return r;
}

void kh_result_free(kh_result *r) {
  if (!r) return;
  free(r->id), free(r->suite), free(r->tags), free(r->message);
  free(r->file), free(r->signal), free(r->log_path), free(r->log_tail);
  free(r->status), free(r->proto_error), free(r->partial);
  for (int i = 0; i < r->nlines; i++) free(r->lines[i]);
  free(r->lines);
  free(r);
}

void kh_result_set(char **field, const char *value) {
  free(*field);
  *field = kh_strdup(value);
}

static void kh__keep_line(kh_result *r, const char *line) {
  size_t n = strlen(line);
  if (r->nlines >= KH__MAX_LINES || r->lines_bytes + n > KH__MAX_LINE_BYTES) {
    r->lines_dropped++;
    return;
  }
  if (r->nlines == r->lines_cap) {
    r->lines_cap = r->lines_cap ? 2 * r->lines_cap : 32;
    r->lines = kh_xrealloc(r->lines, (size_t)r->lines_cap * sizeof *r->lines);
  }
  r->lines[r->nlines++] = kh_strndup(line, n);
  r->lines_bytes += n;
}

void kh_result_protocol_error(kh_result *r, const char *why, const char *line) {
  if (r->proto_error) return;
  char excerpt[121];
  snprintf(excerpt, sizeof excerpt, "%s", line ? line : "");
  kh_text_clean(excerpt);
  r->proto_error = line ? kh_asprintf("%s: '%s'", why, excerpt)
                        : kh_strdup(why);
}

static const char *const kh__statuses[] = {"pass", "fail", "error", "skip", NULL};

static int kh__take_result(kh_result *r, const kp_record *rec) {
  const char *status = kp_get(rec, "status");
  int known = 0;
  for (int i = 0; status && kh__statuses[i]; i++)
    known |= strcmp(status, kh__statuses[i]) == 0;
  if (!known) return -1;
  long long line = 0;
  kh_result_set(&r->status, status);
  kh_result_set(&r->message, kp_get(rec, "message"));
  kh_result_set(&r->file, kp_get(rec, "file"));
  r->line = kp_get_int(rec, "line", &line) == 0 ? (int)line : 0;
  r->has_result = 1;
  return 0;
}

/* Checks one parsed record against the protocol's order: everything but
 * the parent's token_wait phase comes between `test` and `end`. */
static const char *kh__order_error(kh_result *r, const kp_record *rec) {
  int token_phase = strcmp(rec->tag, "phase") == 0 && kp_get(rec, "name") &&
                    strcmp(kp_get(rec, "name"), "token_wait") == 0;
  if (r->ended) return "record after the test's end record";
  if (strcmp(rec->tag, "test") == 0)
    return r->started ? "a second test record" : NULL;
  if (!r->started && !token_phase) return "record before the test record";
  if (strcmp(rec->tag, "end") == 0 && !r->has_result)
    return "end record without a result record";
  return NULL;
}

int kh_result_line(kh_result *r, const char *line) {
  if (r->proto_error) return -1;
  char *copy = kh_strdup(line);
  kp_record rec;
  const char *why = NULL;
  if (kp_parse(copy, &rec, &why) != 0) {
    kh_result_protocol_error(r, why, line);
    free(copy);
    return -1;
  }
  const char *order = kh__order_error(r, &rec);
  if (order) {
    kh_result_protocol_error(r, order, line);
    free(copy);
    return -1;
  }
  const char *bad = NULL;
  long long bytes;
  if (strcmp(rec.tag, "test") == 0) r->started = 1;
  else if (strcmp(rec.tag, "result") == 0 && kh__take_result(r, &rec) != 0)
    bad = "result record with an unknown status";
  else if (strcmp(rec.tag, "leak") == 0 &&
           (!kp_get(&rec, "bytes") ||
            kh_parse_ll(kp_get(&rec, "bytes"), 0, LLONG_MAX, &bytes) != 0))
    bad = "leak record without a byte count from 0 up";
  else if (strcmp(rec.tag, "end") == 0) r->ended = 1;
  free(copy);
  if (bad) {
    kh_result_protocol_error(r, bad, line);
    return -1;
  }
  kh__keep_line(r, line);
  return 0;
}

const char *kh_result_find(const kh_result *r, const char *tag, int n,
                           const char *key, char *buf) {
  size_t tlen = strlen(tag);
  for (int i = 0; i < r->nlines; i++) {
    const char *l = r->lines[i];
    if (strncmp(l, tag, tlen) != 0 || (l[tlen] != ' ' && l[tlen] != '\0'))
      continue;
    if (n-- > 0) continue;
    snprintf(buf, KP_MAX_LINE, "%s", l);
    kp_record rec;
    if (kp_parse(buf, &rec, NULL) != 0) return NULL;
    return kp_get(&rec, key);
  }
  return NULL;
}

long long kh_result_leaked(const kh_result *r, int *count) {
  long long total = 0;
  int n = 0;
  char *buf = kh_xmalloc(KP_MAX_LINE);
  const char *v;
  /* Saturating: a child may claim any number (tests/fuzz/fuzz-record
   * found the overflow); kh_result_line refuses negative or non-numeric
   * byte counts, so only a sum past LLONG_MAX needs care here. */
  while ((v = kh_result_find(r, "leak", n, "bytes", buf)) != NULL) {
    long long b = 0;
    if (kh_parse_ll(v, 0, LLONG_MAX, &b) != 0) b = 0;
    total = b > LLONG_MAX - total ? LLONG_MAX : total + b;
    n++;
  }
  free(buf);
  if (count) *count = n;
  return total;
}

/* ---- Deciding ------------------------------------------------------------------------- */

static void kh__say(kh_result *r, int outcome, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void kh__say(kh_result *r, int outcome, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  r->outcome = outcome;
  kh_result_set(&r->message, msg);
}

/* The test reached its end record: the child's own verdict stands, except
 * for leaks under the fail policy and a crash after the end. */
static void kh__decide_ended(kh_result *r, const kh_exit_info *x,
                             int leaks_fail) {
  static const struct { const char *status; int outcome; } map[] = {
      {"pass", KH_PASS}, {"fail", KH_FAIL}, {"error", KH_ERROR},
      {"skip", KH_SKIP}};
  r->outcome = KH_ERROR;
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(r->status, map[i].status) == 0) r->outcome = map[i].outcome;
  int nleaks = 0;
  long long bytes = kh_result_leaked(r, &nleaks);
  char buf[KP_MAX_LINE], file[512] = "?";
  const char *f = kh_result_find(r, "leak", 0, "file", buf);
  if (f) snprintf(file, sizeof file, "%s", f);
  const char *line = kh_result_find(r, "leak", 0, "line", buf);
  if (r->outcome == KH_PASS && nleaks > 0 && leaks_fail) {
    kh__say(r, KH_LEAK, "%lld bytes in %d device allocation%s not freed "
                        "(first allocated at %s:%s)",
            bytes, nleaks, nleaks == 1 ? "" : "s", file, line ? line : "?");
    /* Point at the allocation, not at Check's last line. */
    kh_result_set(&r->file, file);
    long long ln = 0;
    r->line = line && kh_parse_ll(line, 0, INT_MAX, &ln) == 0 ? (int)ln : 0;
  }
  /* A runner that passed its one test exits 0; any other status comes from
   * a --wrap tool (valgrind --error-exitcode) or a sanitizer at exit. */
  if (r->outcome == KH_PASS && x->single && x->exited && x->code != 0)
    kh__say(r, KH_FAIL, "the runner exited with status %d after the test "
                        "passed: an error found at exit by a --wrap tool or "
                        "sanitizer (see the log)", x->code);
  if (r->outcome == KH_PASS && x->signaled) {
    char sig[32];
    kh_signal_name(x->sig, sig, sizeof sig);
    kh__say(r, KH_CRASH, "the runner was killed by %s after the test ended",
            sig);
  }
}

static void kh__decide_unended(kh_result *r, const kh_exit_info *x) {
  char sig[32] = "";
  if (x->signaled) kh_signal_name(x->sig, sig, sizeof sig);
  const char *what = r->has_result ? " after its result record" : "";
  if (x->timed_out)
    kh__say(r, KH_TIMEOUT, "timed out after %g s; sent SIGTERM to its process "
                           "group%s", x->timeout_s,
            x->kill_sent ? ", then SIGKILL after the grace period" : "");
  else if (x->interrupted)
    kh__say(r, KH_ERROR, "interrupted: kiln was stopped during the test");
  else if (x->shared_died && !r->started)
    kh__say(r, KH_ERROR, "not run: the shared runner process (--isolation "
                         "none) ended before this test");
  else if (!r->started && x->signaled)
    kh__say(r, KH_CRASH, "killed by %s before the test started", sig);
  else if (!r->started)
    kh__say(r, KH_ERROR, "the runner exited with status %d before the test "
                         "started (see the log)", x->code);
  else if (x->signaled)
    kh__say(r, KH_CRASH, "killed by %s (signal %d)%s", sig, x->sig, what);
  else
    kh__say(r, KH_CRASH, "exited with status %d without finishing the test "
                         "(no end record)%s", x->code, what);
}

void kh_result_decide(kh_result *r, const kh_exit_info *x, int leaks_fail) {
  if (x->signaled) {
    char sig[32];
    kh_signal_name(x->sig, sig, sizeof sig);
    kh_result_set(&r->signal, sig);
  }
  r->exit_code = x->exited ? x->code : -1;
  if (x->exec_stage == 2) {
    kh__say(r, KH_ERROR, "runner missing/not executable: %s: %s", x->runner,
            strerror(x->exec_errno));
  } else if (x->exec_stage == 1) {
    kh__say(r, KH_ERROR, "could not take device tokens: %s",
            strerror(x->exec_errno));
  } else if (r->proto_error) {
    kh__say(r, KH_ERROR, "protocol error: %s", r->proto_error);
  } else if (r->ended) {
    kh__decide_ended(r, x, leaks_fail);
  } else if (r->partial && !x->signaled && !x->timed_out) {
    kh_result_protocol_error(r, "truncated record at the end of the stream",
                             r->partial);
    kh__say(r, KH_ERROR, "protocol error: %s", r->proto_error);
  } else {
    kh__decide_unended(r, x);
  }
  /* A child's result record may carry no message (tests/fuzz/fuzz-record
   * found one): every decided outcome still says something. */
  if (!r->message)
    kh_result_set(&r->message, "(the runner's result record had no message)");
}
