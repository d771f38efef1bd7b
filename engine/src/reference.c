/* What the double-precision references share: a pool of host threads for
 * the large ones (items handed out one at a time, so that unequal rows
 * balance) and the clock of the time spent in references, which the test
 * runner reports as a test's reference share (times.reference_ms).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "kiln/engine.h"

/* Below this many scalar operations threads cost more than they save. */
#define KE__REF_SERIAL_WORK 1e6
#define KE__REF_MAX_THREADS 256

static _Thread_local int ref_depth;   /* nesting of begin/end on this thread */
static _Thread_local double ref_t0;
static double ref_total_ms;
static pthread_mutex_t ref_lock = PTHREAD_MUTEX_INITIALIZER;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void ke_ref_begin(void) {
  if (ref_depth++ == 0) ref_t0 = now_ms();
}

void ke_ref_end(void) {
  if (ref_depth <= 0 || --ref_depth > 0) return;
  double ms = now_ms() - ref_t0;
  pthread_mutex_lock(&ref_lock);
  ref_total_ms += ms;
  pthread_mutex_unlock(&ref_lock);
}

double ke_ref_ms(void) {
  pthread_mutex_lock(&ref_lock);
  double ms = ref_total_ms;
  pthread_mutex_unlock(&ref_lock);
  return ms;
}

int ke_ref_threads(void) {
  const char *env = getenv("KILN_REF_THREADS");
  if (env && *env) {
    char *end;
    long v = strtol(env, &end, 10);
    if (*end == '\0' && v >= 1)
      return v > KE__REF_MAX_THREADS ? KE__REF_MAX_THREADS : (int)v;
  }
  cpu_set_t set;
  int n = 0;
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n < 1) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  return n > KE__REF_MAX_THREADS ? KE__REF_MAX_THREADS : n;
}

typedef struct pool {
  void (*fn)(void *, int64_t);
  void *arg;
  int64_t n;
  atomic_llong next;
} pool;

static void *worker(void *p_) {
  pool *p = p_;
  for (;;) {
    long long i = atomic_fetch_add(&p->next, 1);
    if (i >= p->n) return NULL;
    p->fn(p->arg, i);
  }
}

void ke_ref_pack_rows(const double *x, int64_t ld, int trans, int64_t rows, int64_t first,
                      int64_t k, int width, double *out) {
  for (int64_t q = 0; q < k; q++)
    for (int t = 0; t < width; t++) {
      const int64_t i = first + t;
      out[q * width + t] = i >= rows ? 0.0 : trans ? x[q * ld + i] : x[i * ld + q];
    }
}

void ke_ref_parallel(int64_t n, double work, void (*fn)(void *arg, int64_t i),
                     void *arg) {
  ke_ref_begin();
  int threads = work < KE__REF_SERIAL_WORK ? 1 : ke_ref_threads();
  if (threads > n) threads = (int)n;
  pool p = {fn, arg, n, 0};
  pthread_t tid[KE__REF_MAX_THREADS];
  int started = 0;
  /* The caller is one of the workers; a thread that cannot start leaves
   * its share to the others. */
  while (started < threads - 1 &&
         pthread_create(&tid[started], NULL, worker, &p) == 0)
    started++;
  worker(&p);
  for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
  ke_ref_end();
}
