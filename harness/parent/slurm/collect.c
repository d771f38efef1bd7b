/* The merge job (`kiln slurm --merge RUN`): every round's shard reports,
 * with what a task that died owed marked lost, merged by the report room's
 * one merge (krep_merge, rounds and all) into RUN/report.yaml; then JUnit,
 * the HTML page (earlier runs of the root as its trends), the diff against
 * the last good run, and RUN/status. A shard's report is its report.yaml
 * when kiln finished it; else its journal, rebuilt (the tests that finished
 * before the task died); else nothing (the task never started). Every test
 * of the plan that has no final run then is lost, with the task's Slurm
 * state, job and node.
 */
#include "slurm-impl.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln-config.h"

/* The status, then when the merge ran (scripts/slurm-timeline.py). */
static void write_status(const char *run, const char *status, double t0) {
  char *path = ksl__path(run, "status");
  char *line = kh_asprintf("%s\nmerge started=%.3f seconds=%.3f\n", status, t0,
                           kh_wall_s() - t0);
  if (kh_write_atomic(path, line, strlen(line)) != 0)
    fprintf(stderr, "kiln: %s: %s\n", path, strerror(errno));
  free(path), free(line);
}

/* ---- A shard and what it owed -------------------------------------------------------- */

typedef struct shard {
  krep_report rep;
  int round, index;
  int finished;             /* kiln wrote its report and was not stopped */
  int empty;                /* no report and no journal: the task never ran kiln */
} shard;

static void load(const char *run, shard *s, const krun_plan *plan) {
  char *dir = ksl__path(run, "shards/%d-%d", s->round, s->index);
  char *yaml = kh_asprintf("%s/report.yaml", dir), *journal = kh_asprintf("%s/journal", dir);
  kh_err err;
  if (access(yaml, F_OK) == 0 && krep_read(yaml, &s->rep, &err) == 0) {
    s->finished = !s->rep.interrupted;
  } else {
    krep_free(&s->rep);
    if (access(journal, F_OK) == 0 && krep_journal_read(journal, &s->rep, &err) == 0) {
      s->rep.path = krep_str(&s->rep, journal);
    } else {
      krep_free(&s->rep);
      krep_init(&s->rep);
      s->rep.path = krep_str(&s->rep, dir);
      s->empty = 1;
    }
  }
  if (!s->rep.shard.count)
    s->rep.shard = (krep_shard){s->index, plan->count, 0, plan->ntests,
                                krep_str(&s->rep, plan->method), krep_str(&s->rep, "slurm")};
  free(dir), free(yaml), free(journal);
}

/* Where a task ran, as its script wrote it: `task job=J node=N gpus=G`. */
static void marker(const char *run, const shard *s, char *job, char *node, size_t n) {
  char *path = ksl__path(run, "shards/%d-%d/task", s->round, s->index), *text = NULL;
  if (kh_read_file(path, 4096, &text, NULL) == 0) {
    text[strcspn(text, "\n")] = '\0';
    kp_record r;
    if (kp_parse(text, &r, NULL) == 0 && strcmp(r.tag, "task") == 0) {
      if (kp_get(&r, "job")) snprintf(job, n, "%s", kp_get(&r, "job"));
      if (kp_get(&r, "node") && !*node) snprintf(node, n, "%s", kp_get(&r, "node"));
    }
  }
  free(text), free(path);
}

typedef struct run_key {
  const char *id;
  int repeat;
} run_key;

static int by_run(const void *a, const void *b) {
  const run_key *x = a, *y = b;
  int c = strcmp(x->id, y->id);
  return c ? c : (x->repeat > y->repeat) - (x->repeat < y->repeat);
}

/* The task behind an unfinished shard ended first: its lost runs say how,
 * and every run the plan gave it that has no final record is added as
 * lost. */
static void owe(const char *run, shard *s, const krun_plan *plan, long long array,
                const ksl__task *task) {
  krep_report *rep = &s->rep;
  char job[128], node[128];
  snprintf(job, sizeof job, "%lld_%d", array, s->index - 1);
  snprintf(node, sizeof node, "%s", task->node);
  marker(run, s, job, node, sizeof job);
  const char *state = task->state[0] ? task->state : NULL;
  const char *reason = task->reason[0] ? task->reason : NULL;
  char why[768];
  int w = snprintf(why, sizeof why, "lost: Slurm task %s ", job);
  if (s->empty && !*node && task->seen)
    w += snprintf(why + w, sizeof why - (size_t)w,
                  "never started: Slurm kept no record; kiln slurm last saw it %s%s%s%s",
                  state, reason ? " (" : "", reason ? reason : "", reason ? ")" : "");
  else if (s->empty && !*node)
    w += snprintf(why + w, sizeof why - (size_t)w, "never started (Slurm state %s%s%s)",
                  state ? state : "unknown: no record kept, e.g. cancelled while pending",
                  reason ? ", held for " : "", reason ? reason : "");
  else
    w += snprintf(why + w, sizeof why - (size_t)w, "on %s ended %s%s%s%s before this test "
                  "finished", *node ? node : "an unknown node",
                  state ? state : "(Slurm state unknown: no accounting, and squeue has "
                                  "forgotten the job)",
                  reason ? " (Slurm's reason: " : "", reason ? reason : "", reason ? ")" : "");
  snprintf(why + w, sizeof why - (size_t)w, "; its output: %s/slurm/array-%d-%d.out", run,
           s->round, s->index - 1);
  krep_loss loss = {krep_str(rep, "slurm"), krep_str(rep, state), krep_str(rep, job),
                    *node ? krep_str(rep, node) : NULL, krep_str(rep, reason)};
  run_key *have = kh_xcalloc((size_t)rep->ntests + 1, sizeof *have);
  int nhave = 0;
  for (int i = 0; i < rep->ntests; i++) {
    krep_test *t = rep->tests[i];
    if (!t->final) continue;
    have[nhave++] = (run_key){t->id, t->repeat};
    if (t->outcome != KREP_LOST) continue;
    char *msg = kh_asprintf("%s (%s)", why, t->message ? t->message : "");
    t->message = krep_str(rep, msg);
    t->lost = loss;
    free(msg);
  }
  qsort(have, (size_t)nhave, sizeof *have, by_run);
  for (int i = 0; i < plan->ntests; i++) {
    const krun_plan_test *p = &plan->tests[i];
    if (p->shard != s->index) continue;
    for (int r = 1; r <= plan->repeat; r++) {
      run_key k = {p->id, r};
      if (bsearch(&k, have, (size_t)nhave, sizeof *have, by_run)) continue;
      krep_test *t = krep_test_new(rep, p->id, p->suite, p->tags);
      t->repeat = r;
      t->outcome = KREP_LOST;
      t->message = krep_str(rep, why);
      t->lost = loss;
    }
  }
  free(have);
  /* The loss is on the tests now: the shard itself is whole. */
  rep->not_run = 0;
  rep->interrupted = 0;
}

/* A shard whose task never ran kiln has no header: it takes its
 * siblings' (the revision above all, which the merge compares). */
static void fill_empty(shard *s, int n, const krun_plan *plan, const ksl__state *st) {
  const krep_report *from = NULL;
  for (int i = 0; i < n && !from; i++)
    if (!s[i].empty) from = &s[i].rep;
  for (int i = 0; i < n; i++) {
    krep_report *r = &s[i].rep;
    if (!s[i].empty) continue;
    r->kiln_version = krep_str(r, from ? from->kiln_version : KILN_VERSION);
    r->git = krep_str(r, from ? from->git : plan->git);
    r->backend = krep_str(r, from ? from->backend : "");
    r->command = krep_str(r, from ? from->command : "");
    if (from) {
      r->start_s = from->start_s, r->end_s = from->start_s;
      for (int k = 0; k < from->nset; k++) krep_add_setting(r, from->set_keys[k], from->set_values[k]);
      for (int k = 0; k < from->nselection; k++) krep_add_selector(r, from->selection[k]);
    } else {
      for (int k = 0; k < st->nselectors; k++) krep_add_selector(r, st->selectors[k]);
    }
  }
}

/* Round r's shards, appended to *all. */
static int round_shards(const ksl__state *st, const ksl__round *r, shard **all, int *n,
                        kh_err *err) {
  char *path = ksl__path(st->run, "slurm/plan-%d", r->n);
  krun_plan plan;
  int rc = krun_plan_read(path, &plan, err);
  free(path);
  if (rc != 0) return krun_plan_free(&plan), -1;
  ksl__task *tasks = kh_xcalloc((size_t)plan.count, sizeof *tasks);
  kh_err ignored;
  if (r->array > 0) (void)ksl__tasks(r->array, plan.count, tasks, 1, &ignored);
  ksl__seen_read(st->run, r->n, tasks, plan.count);
  *all = kh_xrealloc(*all, (size_t)(*n + plan.count) * sizeof **all);
  shard *s = *all + *n;
  for (int k = 0; k < plan.count; k++) {
    memset(&s[k], 0, sizeof s[k]);
    s[k].round = r->n, s[k].index = k + 1;
    load(st->run, &s[k], &plan);
  }
  fill_empty(s, plan.count, &plan, st);
  for (int k = 0; k < plan.count; k++)
    if (!s[k].finished) owe(st->run, &s[k], &plan, r->array, &tasks[k]);
  *n += plan.count;
  free(tasks);
  krun_plan_free(&plan);
  return 0;
}

/* ---- What the merge writes ------------------------------------------------------------- */

static int write_copy(const krep_report *rep, const char *path, int junit, kh_err *err) {
  return junit ? krep_junit_write(rep, path, err) : krep_write(rep, path, err);
}

/* The report at path among the n already read, or NULL. */
static const krep_report *among(const krep_report *h, int n, const char *path) {
  char *want = realpath(path, NULL);
  const krep_report *found = NULL;
  for (int i = 0; i < n && want && !found; i++) {
    char *have = realpath(h[i].path, NULL);
    if (have && strcmp(have, want) == 0) found = &h[i];
    free(have);
  }
  free(want);
  return found;
}

/* The diff against the base into RUN/diff.txt and diff.yaml; the regressions
 * it found, or -1. */
static int diff(const ksl__state *st, const krep_report *rep, const char *root, const char *base,
                const krep_report *h, int nh) {
  char *txt = ksl__path(st->run, "diff.txt"), *yaml = ksl__path(st->run, "diff.yaml");
  FILE *out = fopen(txt, "we");
  int regressions = 0;
  kh_err err;
  krep_report own;
  krep_init(&own);
  const krep_report *b = base ? among(h, nh, base) : NULL;
  if (!out) {
    fprintf(stderr, "kiln: %s: %s\n", txt, strerror(errno));
    regressions = -1;
  } else if (!base) {
    fprintf(out, "no earlier good run under %s: nothing to compare with\n", root);
  } else if (!b && krep_read(base, &own, &err) != 0) {
    fprintf(out, "the base %s does not read: %s\n", base, err.msg);
  } else {
    krep_diff_opts o;
    krep_diff_defaults(&o);
    o.yaml_path = yaml;
    if (krep_diff(b ? b : &own, rep, &o, out, &regressions, &err) != 0) {
      fprintf(stderr, "kiln: %s\n", err.msg);
      regressions = -1;
    }
    char *bpath = ksl__path(st->run, "base"), *line = kh_asprintf("%s\n", base);
    (void)kh_write_atomic(bpath, line, strlen(line));
    free(bpath), free(line);
  }
  if (out) fclose(out);
  krep_free(&own);
  free(txt), free(yaml);
  return regressions;
}

/* HTML with the root's earlier runs as its trends; the diff against the
 * base (read once when it is one of them). Returns the regressions found,
 * or -1. */
static int html_and_diff(const ksl__state *st, const krep_report *rep) {
  char *run = kh_strdup(st->run), *root = kh_strdup(dirname(run));
  int nh = 0, nread = 0, rc = 0;
  char **hist = ksl__history(root, st->run, 14, &nh);
  krep_report *h = kh_xcalloc((size_t)nh + 1, sizeof *h);
  kh_err err;
  for (int i = 0; i < nh; i++)
    if (krep_read(hist[i], &h[nread], &err) == 0) nread++;
    else krep_free(&h[nread]);
  char *html = ksl__path(st->run, "report.html");
  if (krep_html_write(rep, h, nread, html, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    rc = -1;
  }
  char *base = st->base ? kh_strdup(st->base) : ksl_run_newest(root, st->run, 1);
  int regressions = diff(st, rep, root, base, h, nread);
  for (int i = 0; i < nread; i++) krep_free(&h[i]);
  for (int i = 0; i < nh; i++) free(hist[i]);
  free(h), free(hist), free(html), free(base), free(run), free(root);
  return rc ? -1 : regressions;
}

/* 1 when every run of r was a skip (and it has runs). */
static int skips_only(const krep_report *r) {
  int counts[KREP_NOUTCOMES];
  int total = krep_count(r, counts);
  return total > 0 && counts[KREP_SKIP] == total;
}

/* Shards whose kiln tested nothing and was not told that may be
 * (--allow-empty): such a task exits 3, and the run is not green however
 * its other shards did. A shard with devices whose tests all skipped
 * themselves counts only when the whole run did too: the plan, not the
 * node, gave it only tests that skip (a resume of a few lost tests can).
 * Said in the merged report's run.nothing_tested when it is not already;
 * returns how many. */
static int nothing_tested(const shard *s, int n, krep_report *out) {
  kh_buf b = {0};
  int empty = 0;
  for (int i = 0; i < n; i++) {
    if (!s[i].rep.nothing_tested) continue;
    if (s[i].rep.ndevices > 0 && skips_only(&s[i].rep) && !skips_only(out)) continue;
    kh_buf_addf(&b, "%sshard %d-%d: %s", empty++ ? "; " : "", s[i].round, s[i].index,
                s[i].rep.nothing_tested);
  }
  if (empty && !out->nothing_tested) {
    char *msg = kh_asprintf("%d of %d shards tested nothing: %s", empty, n, b.data);
    out->nothing_tested = krep_str(out, msg);
    free(msg);
  }
  kh_buf_free(&b);
  return empty;
}

/* Writes everything; returns the run's status. */
static const char *publish(const ksl__state *st, krep_report *rep, int empty) {
  kh_err err;
  char *yaml = ksl__path(st->run, "report.yaml"), *junit = ksl__path(st->run, "junit.xml");
  rep->path = krep_str(rep, yaml);
  int bad = krep_write(rep, yaml, &err) != 0 || krep_junit_write(rep, junit, &err) != 0 ||
            (st->report_copy && write_copy(rep, st->report_copy, 0, &err) != 0) ||
            (st->junit_copy && write_copy(rep, st->junit_copy, 1, &err) != 0);
  if (bad) fprintf(stderr, "kiln: %s\n", err.msg);
  free(yaml), free(junit);
  int regressions = html_and_diff(st, rep);
  int counts[KREP_NOUTCOMES], failed = 0;
  krep_count(rep, counts);
  for (int o = 0; o < KREP_NOUTCOMES; o++) failed += krep_outcome_failed(o) ? counts[o] : 0;
  if (bad || regressions < 0) return "infra";
  if (counts[KREP_LOST]) return "lost";
  if (failed) return "failed";
  if (empty) return "nothing-tested";
  return regressions ? "regressed" : "good";
}

int ksl_merge(const char *run_arg) {
  double t0 = kh_wall_s();
  char real[PATH_MAX];
  const char *run = realpath(run_arg, real) ? real : run_arg;
  ksl__state st;
  kh_err err;
  if (ksl__state_read(run, &st, &err) != 0) {
    fprintf(stderr, "kiln: slurm --merge: %s\n", err.msg);
    ksl__state_free(&st);
    return KH_EXIT_USAGE;
  }
  shard *s = NULL;
  int n = 0, rc = 0;
  for (int i = 0; i < st.nrounds && rc == 0; i++) rc = round_shards(&st, &st.rounds[i], &s, &n, &err);
  krep_report *reps = kh_xcalloc((size_t)n + 1, sizeof *reps);
  int *rounds = kh_xcalloc((size_t)n + 1, sizeof *rounds);
  for (int i = 0; i < n; i++) reps[i] = s[i].rep, rounds[i] = s[i].round;
  krep_report out;
  krep_init(&out);
  krep_merge_opts mo = {0, rounds};
  if (rc == 0) {
    krep_free(&out);
    rc = krep_merge(reps, n, &mo, &out, stderr, &err);
  }
  const char *status = "infra";
  if (rc != 0) {
    fprintf(stderr, "kiln: slurm --merge %s: %s\n", run, err.msg);
  } else {
    int empty = nothing_tested(s, n, &out);
    status = publish(&st, &out, empty);
    int counts[KREP_NOUTCOMES];
    int total = krep_count(&out, counts);
    printf("kiln: merged %d shard%s of %d round%s into %s/report.yaml: %d test runs,", n,
           n == 1 ? "" : "s", st.nrounds, st.nrounds == 1 ? "" : "s", run, total);
    for (int o = 0; o < KREP_NOUTCOMES; o++)
      if (counts[o]) printf(" %d %s", counts[o], krep_outcome_name(o));
    printf("; status %s\n", status);
  }
  write_status(run, status, t0);
  for (int i = 0; i < n; i++) krep_free(&reps[i]);
  krep_free(&out);
  free(reps), free(rounds), free(s);
  ksl__state_free(&st);
  return ksl__status_exit(status);
}
