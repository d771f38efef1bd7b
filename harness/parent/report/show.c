/* `kiln report show`: a readable summary of a report, from the model:
 * counts, how many runs were in workers, and every test that did not
 * pass with where and how it ran. */
#include "report-impl.h"

#include <math.h>
#include <string.h>

static void show_checks(const krep_test *t, FILE *out) {
  int i = 0;
  const krep_rec *r;
  while ((r = krep_test_next(t, "check", &i))) {
    kp_check c;
    if (krep_rec_decode(r, &kp_rec_check, &c) != 0 || c.pass) continue;
    char sentence[1024];
    kp_check_sentence(&c, sentence, sizeof sentence);
    fprintf(out, "        %s\n", sentence);
  }
}

static void show_procs(const krep_proc *p, int n, FILE *out) {
  for (int i = 0; i < n; i++)
    fprintf(out, "        left running: pid %lld (%s), %s; %s%s\n", p[i].pid, p[i].command,
            p[i].how, p[i].killed ? "killed" : "NOT killed: ", p[i].error ? p[i].error : "");
}

static void show_test(const krep_report *rep, const krep_test *t, FILE *out) {
  if (!t->final || (t->outcome == KREP_PASS && !t->nprocs)) return;
  fprintf(out, "  %-7s %s", krep_outcome_name(t->outcome), t->id);
  if (t->repeat != 1) fprintf(out, " (repeat %d)", t->repeat);
  fprintf(out, "\n        ");
  if (t->file && *t->file) fprintf(out, "%s:%d: ", t->file, t->line);
  fprintf(out, "%s\n", t->message ? t->message : "");
  show_checks(t, out);
  show_procs(t->procs, t->nprocs, out);
  char ran[160];
  krep_ran_text(rep, t, ran, sizeof ran);
  if (*ran) fprintf(out, "        ran: %s\n", ran);
  const krep_test *w = krep_test_confirms(rep, t);
  const char *after = w ? krep_test_note(w, "worker_after") : NULL;
  if (after) fprintf(out, "        after in the worker: %s\n", *after ? after : "no other test");
  if (t->log_path && *t->log_path) fprintf(out, "        log: %s\n", t->log_path);
}

void krep_show(const krep_report *rep, FILE *out) {
  char start[40] = "?", end[40] = "?";
  if (!isnan(rep->start_s)) kh_iso_time(rep->start_s, start, sizeof start);
  if (!isnan(rep->end_s)) kh_iso_time(rep->end_s, end, sizeof end);
  fprintf(out, "kiln report %s (format %d)\n", rep->path ? rep->path : "-",
          rep->format);
  fprintf(out, "backend %s on %s, %s .. %s (%.6g s)%s\n",
          rep->backend ? rep->backend : "?", rep->host ? rep->host : "?", start,
          end, krep_duration(rep), rep->interrupted ? ", INTERRUPTED" : "");
  int counts[KREP_NOUTCOMES];
  fprintf(out, "%d tests:", krep_count(rep, counts));
  for (int o = 0; o < KREP_NOUTCOMES; o++)
    if (counts[o]) fprintf(out, " %d %s", counts[o], krep_outcome_name(o));
  if (rep->not_run) fprintf(out, " (%d not run)", rep->not_run);
  fprintf(out, "\n");
  char workers[200];
  krep_ran_summary(rep, workers, sizeof workers);
  if (*workers) fprintf(out, "%s\n", workers);
  if (rep->nothing_tested) fprintf(out, "NOTHING TESTED: %s\n", rep->nothing_tested);
  if (rep->nprocs) fprintf(out, "processes no test claimed:\n");
  show_procs(rep->procs, rep->nprocs, out);
  for (int i = 0; i < rep->ntests; i++) show_test(rep, rep->tests[i], out);
}
