/* A child's record stream into its test run: each line parsed and decoded
 * with the protocol's decoders (records.h), checked against the protocol's
 * order (everything but the token_wait phase comes between `test` and
 * `end`), and taken into the report model. A line that does not parse, a
 * number that is not one, a record out of order: a protocol error, and
 * everything before it is kept.
 */
#include "run-impl.h"

#include <stdlib.h>
#include <string.h>

void krun__protocol_error(krep_report *rep, krep_test *t, const char *why,
                          const char *line) {
  if (t->protocol_error) return;
  char excerpt[121];
  snprintf(excerpt, sizeof excerpt, "%s", line ? line : "");
  kh_text_clean(excerpt);
  char msg[400];
  if (line) snprintf(msg, sizeof msg, "%s: '%s'", why, excerpt);
  else snprintf(msg, sizeof msg, "%s", why);
  t->protocol_error = krep_str(rep, msg);
}

static const char *order_error(const krun__stream *st, const kp_record *rec) {
  const char *name = kp_get(rec, "name");
  int token_phase = strcmp(rec->tag, "phase") == 0 && name && strcmp(name, "token_wait") == 0;
  if (st->ended) return "record after the test's end record";
  if (strcmp(rec->tag, "test") == 0) return st->started ? "a second test record" : NULL;
  if (!st->started && !token_phase) return "record before the test record";
  if (strcmp(rec->tag, "end") == 0 && !st->has_result)
    return "end record without a result record";
  return NULL;
}

static int take_result(krep_report *rep, krep_test *t, krun__stream *st,
                       const kp_result *r) {
  static const char *const statuses[] = {"pass", "fail", "error", "skip"};
  int known = 0;
  for (size_t i = 0; r->status && i < 4; i++) known |= strcmp(r->status, statuses[i]) == 0;
  if (!known) return -1;
  snprintf(st->status, sizeof st->status, "%s", r->status);
  t->message = krep_str(rep, r->message);
  t->file = krep_str(rep, r->file);
  t->line = (int)r->line;
  st->has_result = 1;
  return 0;
}

int krun__ingest(krep_report *rep, krep_test *t, krun__stream *st, const char *line) {
  if (t->protocol_error) return -1;
  char *copy = kh_strdup(line);
  kp_record rec;
  const char *why = NULL;
  char bad[200] = "";
  if (kp_parse(copy, &rec, &why) != 0) goto fail;
  if ((why = order_error(st, &rec)) != NULL) goto fail;
  const kp_rdesc *d = kp_result_record(rec.tag);
  union {
    kp_test test;
    kp_result result;
    kp_leak leak;
    kp_check check;
    kp_device device;
  } u;
  if (d && kp_decode(d, rec.fields, rec.nfields, &u, bad, sizeof bad) != 0) {
    why = bad;
    goto fail;
  }
  if (strcmp(rec.tag, "test") == 0) {
    st->started = 1;
    t->pid = kp_get(&rec, "pid") ? u.test.pid : KP_NONE;
    t->seed = u.test.seed;
    t->has_seed = kp_get(&rec, "seed") != NULL;
  } else if (strcmp(rec.tag, "result") == 0 && take_result(rep, t, st, &u.result) != 0) {
    why = "result record with an unknown status";
    goto fail;
  } else if (strcmp(rec.tag, "leak") == 0 && !kp_get(&rec, "bytes")) {
    why = "leak record without a byte count from 0 up";
    goto fail;
  } else if (strcmp(rec.tag, "end") == 0) {
    st->ended = 1;
  }
  krep_test_keep(rep, t, rec.tag, rec.fields, rec.nfields);
  free(copy);
  return 0;
fail:
  krun__protocol_error(rep, t, why, line);
  free(copy);
  return -1;
}
