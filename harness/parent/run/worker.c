/* --isolation worker: one process (its own context, its slots, its
 * containment) runs a sequence of one source's tests, checking between two
 * that the first left nothing behind (the runner's --worker: its device
 * allocations, its stream, device faults; a test that left something ends
 * the worker). What the worker does not settle itself is settled here:
 * the runs it never started go to a new worker, and every run that did not
 * pass runs again alone in a fresh process before it counts. Failing
 * alone, that run's result stands (confirmed); passing alone, it is
 * `polluted`, naming the tests that ran before it in the worker. The loop
 * calls these; they call the jobs and the queue below them.
 */
#include "run-impl.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How many runs like t can be at once: --jobs, and on devices as many as
 * their slots hold (a GPU's 8 slots bound a run of --jobs 16). */
static int at_once(const krun__run *R, const krun_test *t) {
  int n = R->maxrun > 0 ? R->maxrun : 1, fit = 0;
  const int ndevs = R->o->bi->ndevices, per = t->devices > 1 ? t->devices : 1;
  if (ndevs == 0) return n;
  for (int d = 0; d < ndevs; d++) {
    int k = krun__want(R, t, d);
    if (R->cap[d] > 0 && k > 0) fit += R->cap[d] / k;
  }
  fit /= per;
  return fit >= 1 && fit < n ? fit : n;
}

/* Without durations: the n runs shared out over the children that can
 * still start, so that they end together. */
static int by_count(const krun__run *R, const krun_test *t, int n) {
  int free_jobs = at_once(R, t) - R->nrunning;
  if (free_jobs < 1) free_jobs = 1;
  return (n + free_jobs - 1) / free_jobs;
}

/* Moves the queue's item at from to position to (to < from), the ones
 * between one place back. */
static void to_front(krun__run *R, int from, int to) {
  krun__item it = R->queue[from];
  memmove(&R->queue[to + 1], &R->queue[to], (size_t)(from - to) * sizeof it);
  R->queue[to] = it;
}

/* The block's shortest runs (its tail: the queue is longest first) that
 * fit in room, moved up behind the k a sequence has; its new size. */
static int fill_from_tail(krun__run *R, int k, int n, double room) {
  while (k < n) {
    double ms = krun__order_ms(R, R->queue[R->qhead + n - 1].test);
    if (!(ms <= room)) break;
    to_front(R, R->qhead + n - 1, R->qhead + k);
    room -= ms;
    k++;
  }
  return k;
}

/* A run's work: its estimate (order.c), or one unit for each run where
 * no report gave times. */
static double work(const krun__run *R, int test) { return R->est ? R->est[test] : 1.0; }

/* The work of every run still queued. */
static double queued_work(const krun__run *R) {
  double left = 0;
  for (int q = R->qhead; q < R->qlen; q++) left += work(R, R->queue[q].test);
  return left;
}

/* The work job j still has, by the estimates: its runs not begun, and
 * what is left of the one it runs (none once past its estimate). */
static double job_left_ms(const krun__run *R, const krun__job *j, double now) {
  double left = 0;
  for (int i = 0; i < j->ntests; i++) {
    if (!j->defs[i] || j->st[i].ended) continue;
    double ms = work(R, (int)(j->defs[i] - R->o->reg->tests));
    if (j->st[i].started && R->est) ms -= now - j->test_ms;
    if (ms > 0) left += ms;
  }
  return left;
}

static int by_ms(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The level at which the lanes end together: the time T at which the
 * work queued, poured into the lanes (this one free now, each other free
 * now or once its worker's estimated work is done), fills every lane
 * that frees before T. It is what this lane takes. */
static double level_ms(const krun__run *R, int lanes, double queued) {
  double *busy = kh_xcalloc((size_t)lanes, sizeof *busy), now = kh_now_ms();
  int n = 0;
  for (int i = 0; i < R->maxjobs && n < lanes - 1; i++) {
    const krun__job *j = &R->jobs[i];
    if (j->active && !j->probe && !(j->warm && !j->assigned))
      busy[n++] = job_left_ms(R, j, now);
  }
  /* The lanes without a worker (this one among them) free at 0. */
  qsort(busy, (size_t)lanes, sizeof *busy, by_ms);
  double sum = 0, level = queued;
  for (int k = 1; k <= lanes; k++) {
    sum += busy[k - 1];
    level = (queued + sum) / k;
    if (k == lanes || level <= busy[k]) break;
  }
  free(busy);
  return level;
}

/* With durations (order.c): as many of the n runs as fit in this lane's
 * share of the work still queued, at least one. The share is the level
 * at which every lane would end together (level_ms): at the start of a
 * run all lanes are free and the queue is cut into as many sequences as
 * lanes, one process each; a lane that frees while others still run takes
 * what brings it level with them, not the whole queue. Cutting finer (a
 * share over every lane each time, guided self-scheduling) pays more
 * start-ups, each later sequence a new process, which on a GPU is an
 * interpreter or a context of 10-20 s, while the estimates come from the
 * last report of the same tests.
 * Where the next run does not fit, the room left is filled with the
 * block's shortest runs, and a head longer than the share runs alone:
 * else, with as many long runs as slots, every slot runs one long test
 * alone and the short ones wait for them to end, then pay a start-up
 * again. */
static int by_time(krun__run *R, const krun_test *t, int n) {
  double sum = 0;
  const double share = level_ms(R, at_once(R, t), queued_work(R));
  int k = 0;
  while (k < n) {
    double ms = krun__order_ms(R, R->queue[R->qhead + k].test);
    if (k > 0 && sum + ms > share) break;
    sum += ms;
    k++;
  }
  return k < n && sum < share ? fill_from_tail(R, k, n, share - sum) : k;
}

/* Where a sequence of size runs from the head ends, of the n that could
 * go (the head's source and needs): at the end of a suite (a test file, a
 * Check suite) when one ends within half the size before that, or past it
 * by at most half the size and with no test twice: a worker loads every
 * file it runs a test of, so a file split over two workers is loaded
 * twice. */
static int file_end(const krun__run *R, int n, int size) {
  if (size >= n) return size;
  const krun__item *q = &R->queue[R->qhead];
  const krun_test *tests = R->o->reg->tests;
#define SUITE(i) (tests[q[(i)].test].suite)
  if (strcmp(SUITE(size - 1), SUITE(size)) != 0) return size;
  int back = size - 1, fwd = size + 1;
  while (back > 0 && strcmp(SUITE(back - 1), SUITE(back)) == 0) back--;
  while (fwd < n && fwd <= KRUN_WORKER_MAX && strcmp(SUITE(fwd - 1), SUITE(fwd)) == 0) fwd++;
#undef SUITE
  if (back > 0 && 2 * back >= size) return back;
  if (fwd > KRUN_WORKER_MAX || 2 * (fwd - size) > size) return size;
  for (int i = size; i < fwd; i++)
    for (int k = 0; k < i; k++)
      if (q[k].test == q[i].test) return size;
  return fwd;
}

/* How many runs from the head of the queue one worker of t's could run
 * with it (krun__source_joins: its source's, or a source it collects
 * with its own, of its needs), in queue order, none alone. */
static int block(const krun__run *R, const krun_test *t) {
  int n = 0;
  for (int q = R->qhead; q < R->qlen; q++) {
    const krun__item *it = &R->queue[q];
    if (it->alone || !krun__source_joins(R->o->reg, t, &R->o->reg->tests[it->test])) break;
    n++;
  }
  return n;
}

/* What a worker that asks for more takes at once: this part of its
 * lane's level (xdist's load scheduling hands out a quarter up front,
 * then refills as workers ask). */
#define PULL_PARTS 4

/* For a worker that asks for more when its sequence runs out (it
 * collected its whole source, and the sources it shares, so any of their
 * runs can be added): a PULL_PARTS-th of what would bring its lane level
 * with the others (level_ms; in runs where no report gave times), at
 * least two. Small, so that most stays queued for whichever worker asks
 * first: a file of heavy tests spreads over the lanes while it lasts,
 * instead of running in the one lane that took it. A worker costs its
 * start-up once; asking costs a line while its last test runs. At the
 * end of a run the shares are two: the last runs spread over the lanes
 * that are free (a worker that took four for one lane ran the last of
 * them after three start-ups where each ended its worker: Liger-Kernel's
 * distributed cases leave a process behind). */
static int pull_share(const krun__run *R, const krun_test *t, int n) {
  const double share = level_ms(R, at_once(R, t), queued_work(R)) / PULL_PARTS;
  const int least = 2;
  double sum = 0;
  int k = 0;
  for (; k < n; k++) {
    double w = work(R, R->queue[R->qhead + k].test);
    if (k > 0 && sum + w > share) break;
    sum += w;
  }
  return k < least ? (least < n ? least : n) : k;
}

/* How many of the first take runs of the queue can join one sequence (j's,
 * or a new one: j NULL): a sequence names each test once (a program
 * given a list of its tests may run each once per process), so it ends
 * before a test it already holds; a repeat waits for the next worker. */
static int distinct(const krun__run *R, const krun__job *j, int take) {
  const krun__item *q = &R->queue[R->qhead];
  for (int i = 0; i < take; i++) {
    for (int p = 0; p < i; p++)
      if (q[p].test == q[i].test) return i;
    for (int k = 0; j && k < j->ntests; k++)
      if (j->defs[k] == &R->o->reg->tests[q[i].test]) return i;
  }
  return take;
}

int krun__worker_take(krun__run *R) {
  if (R->s->isolation != KRUN_ISO_WORKER || R->qhead == R->qlen) return 1;
  /* Slots sized per test (--slots auto) and sanitizer findings, which are
   * read per process, need a process per test. */
  if (R->s->slots == KRUN_SLOTS_AUTO || R->s->sanitize) return 1;
  const krun__item *head = &R->queue[R->qhead];
  const krun_test *t = &R->o->reg->tests[head->test];
  if (head->alone || !krun__source(t->kind)->workers) return 1;
  int n = block(R, t);
  int size = krun__source(t->kind)->more ? pull_share(R, t, n)
             : R->est                      ? by_time(R, t, n)
                                           : by_count(R, t, n);
  size = size < 1 ? 1 : size > KRUN_WORKER_MAX ? KRUN_WORKER_MAX : size;
  int once = distinct(R, NULL, size);
  if (once < size) return once;
  return krun__source(t->kind)->more ? size : file_end(R, n, size);
}

void krun__worker_more(krun__run *R, krun__job *j) {
  const krun_test *u = j->defs[0];
  int take = 0;
  if (!R->stopping && R->qhead < R->qlen && u) {
    const krun__item *head = &R->queue[R->qhead];
    const krun_test *t = &R->o->reg->tests[head->test];
    int n = krun__source_joins(R->o->reg, u, t) ? block(R, u) : 0;
    take = n ? pull_share(R, u, n) : 0;
    if (take > KRUN_WORKER_MAX - j->ntests) take = KRUN_WORKER_MAX - j->ntests;
    take = take > 0 ? distinct(R, j, take) : 0;
  }
  int first = j->ntests, all = first + take;
  if (take > 0) {
    j->tests = kh_xrealloc(j->tests, (size_t)all * sizeof *j->tests);
    j->st = kh_xrealloc(j->st, (size_t)all * sizeof *j->st);
    j->defs = kh_xrealloc(j->defs, (size_t)all * sizeof *j->defs);
    j->took_ms = kh_xrealloc(j->took_ms, (size_t)all * sizeof *j->took_ms);
    for (int i = first; i < all; i++) {
      krun__item x = krun__queue_take(R);
      j->tests[i] = krun__new_test(R, &x);
      j->defs[i] = &R->o->reg->tests[x.test];
      memset(&j->st[i], 0, sizeof j->st[i]);
      j->took_ms[i] = -1;
    }
    j->ntests = all;
  }
  kh_buf out = {0};
  krun__source(j->kind)->more(krun__job_view(R, j), first, &out);
  /* The worker reads it at once, and a pipe holds far more than a share
   * of ids; a worker that died meanwhile is reaped as any. */
  if (j->fd_in >= 0 && kh_write_all(j->fd_in, out.data, out.len) != 0) {
    close(j->fd_in);
    j->fd_in = -1;
  }
  free(out.data);
}

void krun__worker_resume(krun__run *R, krun__job *j) {
  /* A worker that ended before its first test could not start: its runs
   * are decided as any child's that could not (no new worker for them). */
  if (!j->worker || R->stopping || !j->nstarted) return;
  for (int i = j->ntests - 1; i >= 0; i--) {
    if (j->st[i].started) continue;
    krep_test *t = j->tests[i];
    krun__queue_front(R, (krun__item){(int)(j->defs[i] - R->o->reg->tests), t->repeat,
                                      t->attempt, 0});
    krep_test_drop(&R->rep, t);
    j->tests[i] = NULL;
  }
}

/* The tests that ran before run i in its worker, comma-separated, in the
 * order the worker ran them (which a program of its own may choose). */
static char *before(const krun__job *j, int i) {
  kh_buf b = {0};
  for (int p = 1; p < j->st[i].pos; p++)
    for (int k = 0; k < j->ntests; k++)
      if (j->tests[k] && j->st[k].started && j->st[k].pos == p)
        kh_buf_addf(&b, "%s%s", b.len ? ", " : "", j->tests[k]->id);
  return b.data ? b.data : kh_strdup("");
}

void krun__worker_confirm(krun__run *R, krep_test *t, const krun_test *def, char *after,
                          int started) {
  R->confirm = kh_xrealloc(R->confirm, (size_t)(R->nconfirm + 1) * sizeof *R->confirm);
  R->confirm[R->nconfirm++] = (krun__confirm){(int)(def - R->o->reg->tests), t->repeat,
                                              t->attempt + 1, after, t->outcome, started};
  t->final = 0;
  krun__queue_front(R, (krun__item){(int)(def - R->o->reg->tests), t->repeat,
                                    t->attempt + 1, 1});
  krun__publish(R, t);
}

int krun__worker_settle(krun__run *R, krun__job *j, int i) {
  krep_test *t = j->tests[i];
  if (!j->worker || !t || R->stopping || !krep_outcome_failed(t->outcome)) return 0;
  char *after = before(j, i);
  kp_field f[] = {{"key", "worker_after"}, {"value", after}};
  krep_test_keep(&R->rep, t, "note", f, 2);
  /* A run that put its device under probe waits for the verdict
   * (health.c's held runs): run alone on another device, a test that
   * takes devices down would take that one too. */
  int probing = 0;
  for (int k = 0; k < j->ndevs; k++)
    probing |= R->health[j->devs[k]].state == KRUN__DEV_SUSPECT;
  if (j->cause && probing) {
    R->held = kh_xrealloc(R->held, (size_t)(R->nheld + 1) * sizeof *R->held);
    krun__held *h = &R->held[R->nheld++];
    *h = (krun__held){.t = t, .def = j->defs[i], .ndevs = j->ndevs, .confirm = 1,
                      .started = j->st[i].started, .after = after};
    memcpy(h->devs, j->devs, (size_t)j->ndevs * sizeof *h->devs);
    return 1;
  }
  krun__worker_confirm(R, t, j->defs[i], after, j->st[i].started);
  return 1;
}

void krun__worker_verdict(krun__run *R, krep_test *t, const krun_test *def) {
  krun__confirm *c = NULL;
  int test = (int)(def - R->o->reg->tests);
  for (int k = 0; k < R->nconfirm && !c; k++)
    if (R->confirm[k].test == test && R->confirm[k].repeat == t->repeat &&
        R->confirm[k].attempt == t->attempt)
      c = &R->confirm[k];
  if (!c || t->attempt != c->attempt) return;
  kp_field f[] = {{"key", "confirmed_alone"},
                  {"value", krep_outcome_failed(t->outcome) ? "true" : "false"}};
  krep_test_keep(&R->rep, t, "note", f, 2);
  /* A run its worker never began (the worker failed before it) was not
   * polluted by anything: its run alone is its result. */
  if (t->outcome != KREP_PASS || !c->started) return;
  char *msg = kh_asprintf("%s in a worker after %s; passed alone (`kiln bisect %s` "
                          "finds the test that pollutes it)",
                          krep_outcome_name(c->was), *c->after ? c->after : "no other test",
                          t->id);
  t->outcome = KREP_POLLUTED;
  t->message = krep_str(&R->rep, msg);
  free(msg);
}
