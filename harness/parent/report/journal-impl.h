/* The journal's own record types (journal.c writes them, journal-read.c
 * reads them back), described the way records.h describes a child's.
 */
#ifndef KILN_PARENT_REPORT_JOURNAL_IMPL_H
#define KILN_PARENT_REPORT_JOURNAL_IMPL_H

#include "report-impl.h"

typedef struct jkiln {
  long long format;
  const char *version, *git, *host, *backend, *config, *out, *token_key;
  double start;
  const char *command;
  long long pid;
  const char *containment, *allot, *slots_from, *durations_from;
} jkiln;

typedef struct jplan {
  long long runs;
} jplan;

typedef struct jstart {
  long long seq;
  const char *id, *suite, *tags;
  long long repeat, attempt, device, slots, pid;
  double start;
} jstart;

typedef struct jleft {
  long long pid;
  const char *command, *how;
  long long killed;
  const char *error;
} jleft;

typedef struct jshard {
  long long index, count, selected, total;
  const char *method, *source;
} jshard;

typedef struct jpair {
  const char *key, *value;
} jpair;

typedef struct jrun {
  const char *id;
  long long seq;
  const char *suite, *tags;
  long long repeat, attempt, device, slots;
  const char *devices;
  const char *outcome;
  long long retried;
  const char *message, *file;
  long long line;
  const char *signal;
  long long exit_code;
  double start, end, wall_ms;
  long long warm;
  double startup_ms, ready_wait_ms;
  const char *log;
  long long log_bytes, log_dropped, lines_dropped;
  const char *proto_error;
  const char *lost_by, *lost_state, *lost_job, *lost_node;
  const char *ran;
  long long worker, position;
} jrun;

typedef struct jprobe {
  long long device;
  const char *cause;
  long long passed;
  const char *message;
  double ms;
} jprobe;

typedef struct jfinish {
  double end;
  long long interrupted, not_run, parent_gpu_clean, peak_rss_kb;
  const char *nothing_tested;
} jfinish;

extern const kp_rdesc krep__jrec_kiln, krep__jrec_shard, krep__jrec_setting,
    krep__jrec_selector, krep__jrec_tail, krep__jrec_run, krep__jrec_finish, krep__jrec_done,
    krep__jrec_plan, krep__jrec_start, krep__jrec_left, krep__jrec_probe;

#endif
