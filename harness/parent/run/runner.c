/* The kiln runner source (source-impl.h): a runner built with the test API
 * lists its tests with `--list` and runs them with its options and the
 * test ids, speaking kiln's protocol on fd 3 (it takes its slots itself and
 * can start warm). Its records say everything, so it needs no output or
 * finish slot.
 */
#include "run-impl.h"

#include <string.h>

#include "records.h"

/* ---- Listing ---------------------------------------------------------------- */

typedef struct listing {
  krun_registry *reg;
  int source;
} listing;

static void add_test(kp_record *r, void *arg) {
  listing *L = arg;
  kp_listing l;
  if (strcmp(r->tag, "test") != 0 ||
      kp_decode(&kp_rec_listing, r->fields, r->nfields, &l, NULL, 0) != 0 || !l.id)
    return;
  krun_test t = {.id = (char *)l.id, .suite = (char *)l.suite, .name = (char *)l.name,
                 .tags = (char *)l.tags, .file = (char *)l.file,
                 .slots = kp_get(r, "slots") ? (int)l.slots : 1,
                 .devices = l.devices > 1 && l.devices <= KRUN_MAX_DEVICES * 4 ? (int)l.devices : 1,
                 .timeout_s = (int)l.timeout_s,
                 .needs_gpu = kp_get(r, "needs_gpu") ? (int)l.needs_gpu : 1,
                 .line = (int)l.line};
  krun__registry_add(L->reg, L->source, &t);
}

int krun_registry_add_runner(krun_registry *reg, const char *runner, kh_err *err) {
  listing L = {reg, krun__registry_source(reg, KRUN_KIND_RUNNER, runner)};
  return krun__runner_records(runner, "--list", add_test, &L, err);
}

static int runner_list(const krun__lister *L, const char *path, kh_err *err) {
  return krun_registry_add_runner(L->reg, path, err);
}

/* ---- A child ------------------------------------------------------------------ */

/* Its options, then --warm or the test ids. */
static void runner_args(krun__child *c, char **argv, int *n) {
  const krun_settings *s = c->run->s;
  argv[(*n)++] = kh_strdup(c->run->runner);
  argv[(*n)++] = kh_strdup("--result-fd");
  argv[(*n)++] = kh_strdup("3");
  /* Under --isolation worker every fresh allocation is poisoned, in the
   * workers and in the runs alone that confirm them: no test passes on a
   * buffer an earlier test of its worker left written, and the run alone
   * sees the same NaN bytes its worker run saw. */
  if (s->poison || s->isolation == KRUN_ISO_WORKER) argv[(*n)++] = kh_strdup("--poison");
  if (c->run->seed_given) argv[(*n)++] = kh_asprintf("--seed=%llu", s->seed);
  if (s->cap > 0) argv[(*n)++] = kh_asprintf("--cap=%g", s->cap);
  for (int i = 0; i < s->ntol; i++) {
    char spec[320];
    ksel_tol_format(&s->tol[i], spec, sizeof spec);
    argv[(*n)++] = kh_asprintf("--tolerance=%s", spec);
  }
  if (c->warm) {
    argv[(*n)++] = kh_strdup("--warm");
    return;
  }
  if (c->worker) argv[(*n)++] = kh_strdup("--worker");
  argv[(*n)++] = kh_strdup("--");
  for (int i = 0; i < c->ntests; i++) argv[(*n)++] = kh_strdup(c->defs[i]->id);
}

static const char *program(const krun__child *c) { return c->run->runner; }

const krun__source_i krun__runner_source = {
    .name = "runner",
    .list = runner_list,
    .argv = runner_args,
    .program = program,
    .protocol = 1,
    .warm = 1,
    .workers = 1,
    .worker_stops = 1,
};
