/* `kiln bisect TEST [SELECTOR...]`: finds the earlier tests that make TEST
 * fail when they run before it in one shared process (--isolation none),
 * the way state leaks from test to test in a runner without kiln's
 * isolation. The candidates are the selected tests that come before TEST
 * in the run's order; delta debugging (Zeller's ddmin) runs subsets of
 * them, each followed by TEST, until no test of the set can be left out
 * and TEST still fail (a 1-minimal set), then prints the command that
 * reproduces it. Every trial is a real `kiln run`, with its report in
 * OUT/trial-N, and all use one seed.
 */
#include "cli-impl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { T_PASS, T_FAIL, T_UNRESOLVED };
static const char *const verdicts[] = {"passes", "FAILS", "does not run"};

typedef struct bisect {
  kcli__args *a;
  krun_settings s;          /* the effective settings, made shared */
  krun_backend_info bi;
  krun_registry reg;
  int target;               /* registry index of TEST */
  int *cand;                /* candidates, in the run's order */
  int ncand;
  char *out, *key;
  int trials;
  char **seen;              /* a subset's key and its verdict, memoised */
  int *seen_v, nseen;
  char why[512];            /* what ended the shared process early */
} bisect;

/* One trial: the tests of set (indexes into cand), then TEST, in one
 * process. */
static int trial(bisect *B, const int *set, int n) {
  kh_buf key = {0};
  kh_buf_add(&key, "", 0);
  for (int i = 0; i < n; i++) kh_buf_addf(&key, "%d,", set[i]);
  for (int i = 0; i < B->nseen; i++)
    if (strcmp(B->seen[i], key.data) == 0) return kh_buf_free(&key), B->seen_v[i];
  unsigned char *chosen = kh_xcalloc((size_t)B->reg.n + 1, 1);
  for (int i = 0; i < n; i++) chosen[B->cand[set[i]]] = 1;
  chosen[B->target] = 1;
  char *dir = kh_asprintf("%s/trial-%d", B->out, ++B->trials);
  char *select = kh_strdup(B->reg.tests[B->target].id);
  krun_opts o = {&B->s, &B->reg, chosen, &B->bi, B->key, dir, NULL, NULL, NULL,
                 "kiln bisect (trial)", &select, 1, 0, NULL, NULL, NULL, 1, NULL, NULL};
  int rc = krun_run(&o);
  int v = T_UNRESOLVED;
  krep_report rep;
  krep_init(&rep);
  kh_err err;
  char *path = kh_asprintf("%s/report.yaml", dir);
  if (rc != KH_EXIT_INFRA && (krep_free(&rep), krep_read(path, &rep, &err) == 0)) {
    for (int i = 0; i < rep.ntests; i++) {
      const krep_test *t = rep.tests[i];
      if (strcmp(t->id, B->reg.tests[B->target].id) != 0) continue;
      int started = t->pid != KP_NONE;
      v = !started ? T_UNRESOLVED : krep_outcome_failed(t->outcome) ? T_FAIL : T_PASS;
    }
    /* Which earlier test ended the process, for the message: one killed by
     * a signal or its timeout, or one the process left unfinished (a
     * sanitizer's handler turns a segfault into an exit status). */
    for (int i = 0; v == T_UNRESOLVED && i < rep.ntests; i++)
      if (rep.tests[i]->signal || rep.tests[i]->outcome == KREP_TIMEOUT ||
          rep.tests[i]->outcome == KREP_CRASH)
        snprintf(B->why, sizeof B->why, "%s ended the shared process (%s)", rep.tests[i]->id,
                 rep.tests[i]->message ? rep.tests[i]->message : "");
  }
  krep_free(&rep);
  if (B->a->verbose)
    printf("  trial %d: %d earlier test%s, then %s: it %s (%s)\n", B->trials, n,
           n == 1 ? "" : "s", B->reg.tests[B->target].id, verdicts[v], dir);
  B->seen = kh_xrealloc(B->seen, (size_t)(B->nseen + 1) * sizeof *B->seen);
  B->seen_v = kh_xrealloc(B->seen_v, (size_t)(B->nseen + 1) * sizeof *B->seen_v);
  B->seen[B->nseen] = key.data, B->seen_v[B->nseen++] = v;
  free(path), free(dir), free(chosen), free(select);
  return v;
}

/* ddmin: a failing set c (indexes into cand) made 1-minimal. Subsets and
 * their complements at granularity n; a failing one replaces c, else the
 * granularity doubles until it reaches single tests. A trial that does
 * not reach TEST counts as not failing. */
static int ddmin(bisect *B, int *c, int n_c) {
  int n = 2;
  int *sub = kh_xmalloc((size_t)(n_c + 1) * sizeof *sub);
  while (n_c >= 2) {
    int reduced = 0;
    for (int pass = 0; pass < 2 && !reduced; pass++) {
      for (int k = 0; k < n && !reduced; k++) {
        int lo = k * n_c / n, hi = (k + 1) * n_c / n, m = 0;
        for (int i = 0; i < n_c; i++)
          if ((i >= lo && i < hi) == (pass == 0)) sub[m++] = c[i];
        if (m == 0 || m == n_c || trial(B, sub, m) != T_FAIL) continue;
        memcpy(c, sub, (size_t)m * sizeof *c);
        n_c = m;
        n = pass == 0 ? 2 : (n - 1 > 2 ? n - 1 : 2);
        reduced = 1;
      }
    }
    if (reduced) continue;
    if (n >= n_c) break;
    n = 2 * n < n_c ? 2 * n : n_c;
  }
  free(sub);
  return n_c;
}

static void reproduce(bisect *B, const int *c, int n) {
  printf("reproduce: kiln run --backend %s --isolation none --seed %llu",
         krun_backend_names[B->bi.backend], B->s.seed);
  for (int i = 0; i < n; i++) printf(" %s", B->reg.tests[B->cand[c[i]]].id);
  printf(" %s\n", B->reg.tests[B->target].id);
}

/* The candidates: what the selectors choose before TEST, in order. */
static int candidates(bisect *B, const char *id) {
  char **sel = B->a->pos + 1;
  int nsel = B->a->npos - 1;
  unsigned char *chosen = NULL;
  int rc = kcli__select(B->a, &B->s, B->bi.runner, sel, nsel, 0, &B->reg, &chosen);
  if (rc != 0) return free(chosen), rc;
  B->target = -1;
  for (int i = 0; i < B->reg.n; i++)
    if (strcmp(B->reg.tests[i].id, id) == 0) B->target = i;
  if (B->target < 0) {
    free(chosen);
    fprintf(stderr, "kiln bisect: no test '%s' (see `kiln list`)\n", id);
    return KH_EXIT_USAGE;
  }
  B->cand = kh_xcalloc((size_t)B->reg.n + 1, sizeof *B->cand);
  for (int i = 0; i < B->target; i++)
    if (chosen[i]) B->cand[B->ncand++] = i;
  free(chosen);
  return 0;
}

static int run_bisect(bisect *B) {
  const char *id = B->reg.tests[B->target].id;
  printf("kiln bisect: %s after %d earlier test%s in one process (--isolation none, seed "
         "%llu); trials in %s\n", id, B->ncand, B->ncand == 1 ? "" : "s", B->s.seed, B->out);
  int v = trial(B, NULL, 0);
  if (v != T_PASS) {
    printf("kiln bisect: %s %s on its own: nothing to bisect (%s/trial-1)\n", id,
           v == T_FAIL ? "fails" : "does not finish", B->out);
    return KH_EXIT_FAIL;
  }
  int *all = kh_xmalloc(((size_t)B->ncand + 1) * sizeof *all);
  for (int i = 0; i < B->ncand; i++) all[i] = i;
  v = trial(B, all, B->ncand);
  if (v != T_FAIL) {
    if (v == T_PASS)
      printf("kiln bisect: %s passes after all %d earlier tests: none of them pollutes it\n",
             id, B->ncand);
    else
      printf("kiln bisect: the shared process ended before %s: %s; leave that test out "
             "(-ID) and bisect again\n", id, *B->why ? B->why : "see the trial's report");
    free(all);
    return KH_EXIT_FAIL;
  }
  int n = ddmin(B, all, B->ncand);
  printf("kiln bisect: %s fails after %d of the %d earlier tests (%d trials):\n", id, n,
         B->ncand, B->trials);
  for (int i = 0; i < n; i++) printf("  %s\n", B->reg.tests[B->cand[all[i]]].id);
  reproduce(B, all, n);
  free(all);
  return KH_EXIT_OK;
}

int kcli__bisect(kcli__args *a) {
  bisect B = {.a = a};
  char *config_path = NULL;
  if (kcli__settings(a, &B.s, &config_path) != 0) return krun_settings_free(&B.s), KH_EXIT_USAGE;
  kh_err err;
  int rc = 0;
  /* A source whose tests are processes of their own: no shared process
   * to bisect. */
  const krun_sopt *alone = NULL;
  const char *path = krun_sopt_alone(&B.s, &alone);
  if (path) {
    fprintf(stderr, "kiln bisect: the config %s names %s suites (%s: %s); their tests "
                    "cannot share a process: bisect a runner's tests (a config without "
                    "%s:)\n", config_path, alone->name, alone->name, path, alone->name);
    rc = KH_EXIT_USAGE;
  }
  free(config_path);
  if (rc == 0 && krun_backend_resolve(B.s.backend, a->runner_dir, NULL, &B.bi, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    rc = KH_EXIT_INFRA;
  }
  if (rc == 0) rc = candidates(&B, a->pos[0]);
  if (rc == 0 && !(B.out = a->out ? kh_strdup(a->out) : kcli__default_out("bisect", &err))) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    rc = KH_EXIT_USAGE;
  }
  if (rc == 0) {
    /* Every trial alike: one shared process, one seed, no retries. */
    krun_setting_set(&B.s, "isolation", "none", &err);
    B.s.repeat = 1, B.s.retries = 0;
    if (!krun_setting_is_set(&B.s, "seed")) {
      char seed[32];
      snprintf(seed, sizeof seed, "%llu", (unsigned long long)time(NULL) * 2654435761ull ^
                                              (unsigned long long)getpid());
      krun_setting_set(&B.s, "seed", seed, &err);
    }
    kh_mkdir_p(B.out, 0755);
    B.key = krun_tokens_key(a->token_key, B.bi.backend);
    rc = run_bisect(&B);
  }
  for (int i = 0; i < B.nseen; i++) free(B.seen[i]);
  free(B.seen), free(B.seen_v), free(B.cand), free(B.out), free(B.key);
  krun_registry_free(&B.reg);
  krun_settings_free(&B.s);
  return rc;
}
