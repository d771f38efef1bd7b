/* Deciding a test run's outcome from what its child sent and how the
 * child ended, apart from any I/O so that it can be fuzzed
 * (tests/fuzz/fuzz-record.c). The child's own verdict stands when it
 * reached its end record, except for leaks under the fail policy and an
 * exit status or signal that came after a pass; when kiln was stopped
 * after the result arrived, the result stands as sent, with a note (the
 * stop, not the test, ended the process). A stop before the result: lost.
 */
#include "run-impl.h"

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>

void krun__signal_name(int sig, char *out, size_t n) {
  const char *abbrev = sigabbrev_np(sig);
  if (abbrev) snprintf(out, n, "SIG%s", abbrev);
  else snprintf(out, n, "signal %d", sig);
}

static void say(krep_report *rep, krep_test *t, int outcome, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void say(krep_report *rep, krep_test *t, int outcome, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  t->outcome = outcome;
  t->message = krep_str(rep, msg);
}

/* A test that passed but left processes running (t->procs: found and
 * killed when it ended) leaked them, as it would have leaked memory. */
static void left_running(krep_report *rep, krep_test *t, int leaks_fail) {
  if (!t->nprocs || t->outcome != KREP_PASS || !leaks_fail) return;
  char what[600] = "";
  for (int i = 0; i < t->nprocs && i < 3; i++) {
    size_t len = strlen(what);
    snprintf(what + len, sizeof what - len, "%spid %lld `%.60s` (%s)", i ? ", " : "",
             t->procs[i].pid, t->procs[i].command, t->procs[i].how);
  }
  int killed = 0;
  for (int i = 0; i < t->nprocs; i++) killed += t->procs[i].killed;
  say(rep, t, KREP_LEAK, "left %d process%s running after it ended: %s%s; kiln killed %d of "
      "them", t->nprocs, t->nprocs == 1 ? "" : "es", what, t->nprocs > 3 ? ", ..." : "",
      killed);
}

/* kiln's stop reached the process after its result: how the process
 * ended says nothing of the test. A signal other than a stop signal
 * (SIGSEGV in an atexit handler) is still the test's own. */
static int stopped_after_result(const krun__exit *x) {
  if (!x->interrupted) return 0;
  if (!x->signaled) return 1;
  return x->sig == SIGTERM || x->sig == SIGINT || x->sig == SIGHUP || x->sig == SIGKILL;
}

/* The note on a result that stands although kiln was stopped before its
 * process had ended. */
static void note_stopped(krep_report *rep, krep_test *t, const krun__exit *x) {
  char sig[32] = "", how[64];
  if (x->stop_sig) krun__signal_name(x->stop_sig, sig, sizeof sig);
  if (x->signaled) krun__signal_name(x->sig, how, sizeof how);
  else snprintf(how, sizeof how, "status %d", x->code);
  char msg[256];
  snprintf(msg, sizeof msg, "kiln was stopped%s%s after the test's result arrived; its "
           "process, still ending, %s %s with the run", *sig ? " by " : "", sig,
           x->signaled ? "was killed by" : "exited with", how);
  kp_field f[] = {{"key", "interrupted"}, {"value", msg}};
  krep_test_keep(rep, t, "note", f, 2);
}

static void decide_ended(krep_report *rep, krep_test *t, const krun__stream *st,
                         const krun__exit *x, int leaks_fail) {
  static const struct { const char *status; int outcome; } map[] = {
      {"pass", KREP_PASS}, {"fail", KREP_FAIL}, {"error", KREP_ERROR},
      {"skip", KREP_SKIP}};
  t->outcome = KREP_ERROR;
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
    if (strcmp(st->status, map[i].status) == 0) t->outcome = map[i].outcome;
  long long nleaks = 0;
  long long bytes = krep_test_leaked(t, &nleaks);
  if (t->outcome == KREP_PASS && nleaks > 0 && leaks_fail) {
    int i = 0;
    kp_leak first = {0};
    (void)krep_rec_decode(krep_test_next(t, "leak", &i), &kp_rec_leak, &first);
    const char *file = first.file ? first.file : "?";
    say(rep, t, KREP_LEAK, "%lld bytes in %lld device allocation%s not freed (first "
        "allocated at %s:%lld)", bytes, nleaks, nleaks == 1 ? "" : "s", file, first.line);
    /* Point at the allocation, not at Check's last line. */
    t->file = krep_str(rep, file);
    t->line = first.line > 0 && first.line <= INT_MAX ? (int)first.line : 0;
  }
  /* Its result stands; the processes it left are listed, but whether it
   * would have ended them had the stop not cut its exit short is unknown. */
  if (stopped_after_result(x)) {
    note_stopped(rep, t, x);
    return;
  }
  /* A runner that passed its one test exits 0; any other status comes from
   * a --wrap tool (valgrind --error-exitcode) or a sanitizer at exit. */
  if (t->outcome == KREP_PASS && x->single && x->exited && x->code != 0)
    say(rep, t, KREP_FAIL, "the runner exited with status %d after the test passed: an "
        "error found at exit by a --wrap tool or sanitizer (see the log)", x->code);
  if (t->outcome == KREP_PASS && x->signaled) {
    char sig[32];
    krun__signal_name(x->sig, sig, sizeof sig);
    say(rep, t, KREP_CRASH, "the runner was killed by %s after the test ended", sig);
  }
  left_running(rep, t, leaks_fail);
}

/* kiln was stopped during the test: the child was ended with it, so the
 * test's result is lost, not the test's fault. */
static void lost_by_kiln(krep_report *rep, krep_test *t, int stop_sig) {
  char sig[32] = "";
  if (stop_sig) krun__signal_name(stop_sig, sig, sizeof sig);
  say(rep, t, KREP_LOST, "interrupted: kiln was stopped%s%s during the test; its result "
      "is lost", *sig ? " by " : "", sig);
  t->lost = (krep_loss){krep_str(rep, "kiln"), *sig ? krep_str(rep, sig) : NULL, NULL, NULL,
                        NULL};
}

static void decide_unended(krep_report *rep, krep_test *t, const krun__stream *st,
                           const krun__exit *x) {
  char sig[32] = "";
  if (x->signaled) krun__signal_name(x->sig, sig, sizeof sig);
  const char *what = st->has_result ? " after its result record" : "";
  /* A loop that was busy (a parse, a slow disk) sends SIGTERM late: the
   * message then says when it went, not only the limit. */
  if (x->timed_out && x->term_late_s >= 0.25)
    say(rep, t, KREP_TIMEOUT, "timed out after %g s; kiln sent SIGTERM to its process "
        "group %.1f s late, at %.1f s (its loop was busy)%s", x->timeout_s,
        x->term_late_s, x->timeout_s + x->term_late_s,
        x->kill_sent ? ", then SIGKILL after the grace period" : "");
  else if (x->timed_out)
    say(rep, t, KREP_TIMEOUT, "timed out after %g s; sent SIGTERM to its process group%s",
        x->timeout_s, x->kill_sent ? ", then SIGKILL after the grace period" : "");
  else if (x->interrupted)
    lost_by_kiln(rep, t, x->stop_sig);
  else if (x->shared_died == 2 && !st->started)
    say(rep, t, KREP_ERROR, "not run: its worker (--isolation worker) ended before this "
        "test began");
  else if (x->shared_died && !st->started)
    say(rep, t, KREP_ERROR, "not run: the shared runner process (--isolation none) "
        "ended before this test");
  else if (!st->started && x->signaled)
    say(rep, t, KREP_CRASH, "killed by %s before the test started", sig);
  else if (!st->started)
    say(rep, t, KREP_ERROR, "the runner exited with status %d before the test started "
        "(see the log)", x->code);
  else if (x->signaled && x->outside)
    say(rep, t, KREP_CRASH, "killed by %s (signal %d), which kiln did not send: something "
        "outside kiln ended the test%s", sig, x->sig, what);
  else if (x->signaled)
    say(rep, t, KREP_CRASH, "killed by %s (signal %d)%s", sig, x->sig, what);
  else
    say(rep, t, KREP_CRASH, "exited with status %d without finishing the test (%s)%s",
        x->code, x->role && strcmp(x->role, "runner") != 0 ? "no result" : "no end record",
        what);
}

void krun__decide(krep_report *rep, krep_test *t, const krun__stream *st,
                  const char *partial, const krun__exit *x, int leaks_fail) {
  if (x->signaled) {
    char sig[32];
    krun__signal_name(x->sig, sig, sizeof sig);
    t->signal = krep_str(rep, sig);
  }
  t->exit_code = x->exited ? x->code : -1;
  if (x->exec_errno) {
    say(rep, t, KREP_ERROR, "%s missing/not executable: %s: %s",
        x->role ? x->role : "runner", x->runner, strerror(x->exec_errno));
  } else if (t->protocol_error) {
    say(rep, t, KREP_ERROR, "protocol error: %s", t->protocol_error);
  } else if (st->ended || (st->has_result && stopped_after_result(x))) {
    /* A result that arrived before kiln's stop stands, also when the stop
     * came between it and the end record. */
    decide_ended(rep, t, st, x, leaks_fail);
  } else if (partial && *partial && !x->signaled && !x->timed_out) {
    krun__protocol_error(rep, t, "truncated record at the end of the stream", partial);
    say(rep, t, KREP_ERROR, "protocol error: %s", t->protocol_error);
  } else {
    decide_unended(rep, t, st, x);
  }
  /* A child's result record may carry no message (tests/fuzz/fuzz-record
   * found one): every decided outcome still says something. */
  if (!t->message) t->message = krep_str(rep, "(the runner's result record had no message)");
}
