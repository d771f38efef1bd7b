/* One test run as the parent sees it (prefix kh_): the child's protocol
 * records as they arrived, what the parent observed (exit status, signal,
 * timeout, log), and the outcome decided from both. The records are kept
 * verbatim so that the journal can replay them and the report can carry
 * every key a child sent, including keys this parent does not know.
 */
#ifndef KILN_PARENT_RESULT_H
#define KILN_PARENT_RESULT_H

#include <stddef.h>

#include "protocol.h"

/* ---- Outcomes ------------------------------------------------------------- */

/* X(enum, name, did-not-pass, console colour) */
#define KH_OUTCOME_MAP(X)                 \
  X(PASS, "pass", 0, "32")                \
  X(FAIL, "fail", 1, "31")                \
  X(CRASH, "crash", 1, "31;1")            \
  X(TIMEOUT, "timeout", 1, "35")          \
  X(LEAK, "leak", 1, "33")                \
  X(ERROR, "error", 1, "31")              \
  X(SKIP, "skip", 0, "36")                \
  X(FLAKY, "flaky", 0, "33;1")

typedef enum {
#define KH__OUTCOME_ENUM(e, n, f, c) KH_##e,
  KH_OUTCOME_MAP(KH__OUTCOME_ENUM)
#undef KH__OUTCOME_ENUM
  KH_NOUTCOMES
} kh_outcome;

const char *kh_outcome_name(int outcome);
const char *kh_outcome_color(int outcome);
/* 1 for outcomes that fail a run (flaky and skip do not). */
int kh_outcome_failed(int outcome);
/* -1 for an unknown name. */
int kh_outcome_parse(const char *name);
/* Outcomes worth another attempt under --retries. */
int kh_outcome_retryable(int outcome);

/* ---- A test run ------------------------------------------------------------ */

typedef struct kh_result {
  char *id, *suite, *tags;
  int seq;                  /* order in the report: order of scheduling */
  int repeat, attempt;      /* from 1 */
  int device;               /* physical device, -1 for none */
  int slots;
  int outcome;              /* kh_outcome */
  int retried;              /* a later attempt replaced this one */
  char *message, *file;     /* Check's or the parent's */
  int line;
  char *signal;             /* "SIGSEGV" when a signal ended the child */
  int exit_code;            /* -1 when it did not exit normally */
  double start_s, end_s;    /* wall clock */
  double wall_ms;           /* a warm child's: from its assignment */
  int warm;                 /* ran in a warm child */
  double startup_ms;        /* warm: spawn to its ready record; -1: never */
  double ready_wait_ms;     /* warm: ready record to assignment */
  char *log_path;           /* relative to the run folder */
  char *log_tail;
  long long log_bytes, log_dropped;

  char **lines;             /* the child's records, as sent */
  int nlines, lines_cap;
  size_t lines_bytes;
  long long lines_dropped;  /* past the per-test limit */

  /* Ingest state. */
  int started, ended, has_result;
  char *status;             /* the result record's status */
  char *proto_error;        /* first protocol error, with the line */
  char *partial;            /* an unterminated last line */
} kh_result;

kh_result *kh_result_new(const char *id, const char *suite, const char *tags);
void kh_result_free(kh_result *r);
void kh_result_set(char **field, const char *value);

/* Takes one line from the child (without newline). Returns 0, or -1 after
 * recording a protocol error (later lines are then ignored). */
int kh_result_line(kh_result *r, const char *line);
/* Records a protocol error that is not about one line. */
void kh_result_protocol_error(kh_result *r, const char *why, const char *line);
/* Finds the value of key in the n-th record with this tag (n from 0), or
 * NULL. Decodes into buf (KP_MAX_LINE bytes). */
const char *kh_result_find(const kh_result *r, const char *tag, int n,
                           const char *key, char *buf);
/* Sum of the `bytes` of leak records; *count gets their number. */
long long kh_result_leaked(const kh_result *r, int *count);

/* ---- Deciding the outcome -------------------------------------------------- */

typedef struct kh_exit_info {
  int exec_stage;           /* 0 ok, 1 token take failed, 2 exec failed */
  int exec_errno;
  const char *runner;
  int timed_out;
  double timeout_s, grace_s;
  int kill_sent;            /* the grace ran out: SIGKILL */
  int interrupted;          /* kiln was stopped */
  int signaled, sig;
  int exited, code;
  int shared_died;          /* --isolation none: an earlier test ended the
                               process before this one ran */
  int single;               /* the process ran this test alone, so its exit
                               status is this test's */
} kh_exit_info;

/* Sets r->outcome and message from what the child sent and how it ended.
 * leaks_fail: a passing test with leak records becomes `leak`. */
void kh_result_decide(kh_result *r, const kh_exit_info *x, int leaks_fail);
/* "SIGSEGV" for 11; "signal N" when unnamed. */
void kh_signal_name(int sig, char *out, size_t n);

#endif
