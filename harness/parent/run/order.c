/* The queue's order: with an earlier report's durations (--durations, the
 * shard durations, or the run folder's earlier report), each round of the
 * queue runs its longest tests first, tests the report does not know
 * before them (a new test may be long, and its author wants it early),
 * so that no long test starts last and holds the run's end. Under
 * --isolation worker the runs one worker could take (one source, the same
 * needs) stay together, ranked by their longest, and within them each
 * suite's (a test file's, whose collection a worker pays once), so that
 * a binary's or a file's tests share start-ups; worker.c then cuts their
 * sequences by the same durations. --isolation none keeps the selection's order (the
 * order pollution is reproduced in).
 */
#include "run-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Durations from a report ----------------------------------------------------- */

typedef struct timed {
  const char *id;
  double ms;
  int n;
} timed;

static int by_id(const void *a, const void *b) {
  return strcmp(((const timed *)a)->id, ((const timed *)b)->id);
}

double *krun_durations_load(const char *path, const krun_registry *reg, int *known,
                            kh_err *err) {
  krep_report rep;
  if (krep_read(path, &rep, err) != 0) {
    krep_free(&rep);
    return NULL;
  }
  /* Each id's mean wall time over its runs (repeats, attempts, a
   * worker's run and its confirmation alone). */
  timed *t = kh_xcalloc((size_t)rep.ntests + 1, sizeof *t);
  int n = 0;
  for (int i = 0; i < rep.ntests; i++)
    if (!isnan(rep.tests[i]->wall_ms)) t[n++] = (timed){rep.tests[i]->id, rep.tests[i]->wall_ms, 1};
  qsort(t, (size_t)n, sizeof *t, by_id);
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (m && strcmp(t[m - 1].id, t[i].id) == 0) t[m - 1].ms += t[i].ms, t[m - 1].n++;
    else t[m++] = t[i];
  }
  double *ms = kh_xcalloc((size_t)reg->n + 1, sizeof *ms);
  *known = 0;
  for (int i = 0; i < reg->n; i++) {
    timed key = {reg->tests[i].id, 0, 0};
    const timed *hit = bsearch(&key, t, (size_t)m, sizeof *t, by_id);
    ms[i] = hit ? hit->ms / hit->n : NAN;
    *known += hit != NULL;
  }
  free(t);
  krep_free(&rep);
  return ms;
}

/* ---- Sorting the queue ------------------------------------------------------------- */

static int grouped(const krun__run *R, const krun_test *t) {
  return R->s->isolation == KRUN_ISO_WORKER && R->s->slots != KRUN_SLOTS_AUTO &&
         !R->s->sanitize && krun__source(t->kind)->workers;
}

typedef struct slot {
  krun__item it;
  int pos;                  /* its place in the selection's order */
  int group, suite;         /* the first place of its group, of its suite
                               in the group (itself when not grouped) */
  double key;               /* its time (unknown: infinite) */
  double rank, srank;       /* its group's longest, its suite's there */
} slot;

static int by_rank(const void *a, const void *b) {
  const slot *x = a, *y = b;
  if (x->rank != y->rank) return x->rank < y->rank ? 1 : -1;
  if (x->group != y->group) return x->group < y->group ? -1 : 1;
  if (x->srank != y->srank) return x->srank < y->srank ? 1 : -1;
  if (x->suite != y->suite) return x->suite < y->suite ? -1 : 1;
  if (x->key != y->key) return x->key < y->key ? 1 : -1;
  return x->pos - y->pos;
}

/* Sorts queue[from, to): one round of the repeats. */
static void sort_round(krun__run *R, int from, int to) {
  const krun_registry *reg = R->o->reg;
  int n = to - from;
  slot *s = kh_xcalloc((size_t)n + 1, sizeof *s);
  for (int i = 0; i < n; i++) {
    krun__item it = R->queue[from + i];
    const krun_test *t = &reg->tests[it.test];
    double ms = R->o->durations[it.test];
    s[i] = (slot){it, i, i, i, isnan(ms) ? INFINITY : ms, 0, 0};
    /* Its group: the first run before it one worker could take with it
     * (krun__source_joins); its suite: that of the nearest run before it
     * in the group and its suite (a source lists a suite's tests
     * together: found at once). */
    for (int k = 0; grouped(R, t) && k < i; k++)
      if (krun__source_joins(reg, &reg->tests[s[k].it.test], t)) {
        s[i].group = s[k].group;
        break;
      }
    for (int k = i - 1; s[i].group != i && k >= s[i].group; k--)
      if (s[k].group == s[i].group && strcmp(reg->tests[s[k].it.test].suite, t->suite) == 0) {
        s[i].suite = s[k].suite;
        break;
      }
  }
  for (int i = 0; i < n; i++) {
    s[s[i].group].rank = fmax(s[s[i].group].rank, s[i].key);
    s[s[i].suite].srank = fmax(s[s[i].suite].srank, s[i].key);
  }
  for (int i = 0; i < n; i++) s[i].rank = s[s[i].group].rank, s[i].srank = s[s[i].suite].srank;
  qsort(s, (size_t)n, sizeof *s, by_rank);
  for (int i = 0; i < n; i++) R->queue[from + i] = s[i].it;
  free(s);
}

static int by_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void krun__order(krun__run *R) {
  const krun_opts *o = R->o;
  if (!o->durations || R->s->isolation == KRUN_ISO_NONE || R->qlen == 0) return;
  const krun_registry *reg = o->reg;
  /* fill_queue queues round by round: each round keeps its place. */
  for (int from = 0; from < R->qlen;) {
    int to = from;
    while (to < R->qlen && R->queue[to].repeat == R->queue[from].repeat) to++;
    sort_round(R, from, to);
    from = to;
  }
  /* Each test's estimate for sizing workers: its time, or the median of
   * the known ones. */
  double *known = kh_xcalloc((size_t)reg->n + 1, sizeof *known);
  int nk = 0, timed = 0, queued = 0;
  for (int i = 0; i < reg->n; i++)
    if (!isnan(o->durations[i])) known[nk++] = o->durations[i];
  qsort(known, (size_t)nk, sizeof *known, by_double);
  double median = nk ? known[nk / 2] : NAN;
  free(known);
  R->est = kh_xcalloc((size_t)reg->n + 1, sizeof *R->est);
  for (int i = 0; i < reg->n; i++) {
    R->est[i] = isnan(o->durations[i]) ? median : o->durations[i];
    if (o->chosen[i]) queued++, timed += !isnan(o->durations[i]);
  }
  if (isnan(median)) {
    free(R->est);
    R->est = NULL;
  }
  krun__console_note(&R->con, "kiln: queued longest first by the times in %s (%d of %d "
                     "test%s timed; the others first)", o->durations_from, timed, queued,
                     queued == 1 ? "" : "s");
}

double krun__order_ms(const krun__run *R, int test) { return R->est ? R->est[test] : NAN; }
