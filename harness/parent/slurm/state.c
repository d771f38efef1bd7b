/* A Slurm run's state, RUN/slurm/state, in the protocol's record syntax: a
 * `slurm` record (how the jobs run and what the merge writes), `sbatch`,
 * `arg` and `select` records (the extra sbatch arguments, the tasks' `kiln
 * run` options, the selectors), and one `round` record per round with its
 * job ids. Written whole and atomically each time a round is submitted, so
 * a resume, a follower or a merge run by hand read the run as submitted.
 */
#include "slurm-impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define STATE_FORMAT 1

typedef struct srec {
  long long format;
  const char *run, *kiln, *cwd, *runner_dir, *base, *report, *junit;
  const char *partition, *account, *time, *merge_time;
  long long gpus;
} srec;

typedef struct vrec {
  const char *value;
} vrec;

typedef struct rrec {
  long long n, tasks, array, merge;
  double submitted;
} rrec;

#define K(s, name, type) {#name, type, offsetof(s, name), 0}
static const kp_key slurm_keys[] = {
    K(srec, format, KP_INT), K(srec, run, KP_STR), K(srec, kiln, KP_STR),
    K(srec, cwd, KP_STR), K(srec, runner_dir, KP_STR), K(srec, base, KP_STR),
    K(srec, report, KP_STR), K(srec, junit, KP_STR), K(srec, partition, KP_STR),
    K(srec, account, KP_STR), K(srec, time, KP_STR), K(srec, merge_time, KP_STR),
    K(srec, gpus, KP_INT)};
static const kp_key value_keys[] = {K(vrec, value, KP_STR)};
static const kp_key round_keys[] = {K(rrec, n, KP_INT), K(rrec, tasks, KP_INT),
                                    K(rrec, array, KP_INT), K(rrec, merge, KP_INT),
                                    K(rrec, submitted, KP_DOUBLE)};
#define D(tag, keys) {tag, keys, (int)(sizeof keys / sizeof keys[0])}
static const kp_rdesc rec_slurm = D("slurm", slurm_keys), rec_sbatch = D("sbatch", value_keys),
                      rec_arg = D("arg", value_keys), rec_select = D("select", value_keys),
                      rec_round = D("round", round_keys);

char *ksl__path(const char *run, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char tail[512];
  vsnprintf(tail, sizeof tail, fmt, ap);
  va_end(ap);
  return kh_asprintf("%s/%s", run, tail);
}

static char **copy_words(char *const *v, int n) {
  char **c = kh_xcalloc((size_t)n + 1, sizeof *c);
  for (int i = 0; i < n; i++) c[i] = kh_strdup(v[i]);
  return c;
}

static void push(char ***v, int *n, const char *s) {
  *v = kh_xrealloc(*v, (size_t)(*n + 2) * sizeof **v);
  (*v)[(*n)++] = kh_strdup(s);
  (*v)[*n] = NULL;
}

void ksl__state_init(ksl__state *st, const ksl_job *job, const char *kiln, const char *cwd) {
  memset(st, 0, sizeof *st);
  st->run = kh_strdup(job->run_dir);
  st->kiln = kh_strdup(kiln);
  st->cwd = kh_strdup(cwd);
  st->runner_dir = kh_strdup(job->runner_dir);
  st->base = kh_strdup(job->base);
  st->report_copy = kh_strdup(job->report_copy);
  st->junit_copy = kh_strdup(job->junit_copy);
  const ksl_sbatch *sb = &job->sb;
  st->sb = (ksl_sbatch){kh_strdup(sb->partition), kh_strdup(sb->account), kh_strdup(sb->time),
                        kh_strdup(sb->merge_time), sb->gpus,
                        copy_words(sb->extra, sb->nextra), sb->nextra};
  st->args = copy_words(job->run_args, job->nrun_args);
  st->nargs = job->nrun_args;
  st->selectors = copy_words(job->selectors, job->nselectors);
  st->nselectors = job->nselectors;
}

static void put(kh_buf *b, kp_record_out *out, const kp_rdesc *d, const void *rec) {
  kp_encode(out, d, rec);
  kh_buf_addf(b, "%.*s\n", (int)out->len, out->buf);
}

int ksl__state_write(const ksl__state *st, kh_err *err) {
  kh_buf b = {0};
  kp_record_out *out = kh_xmalloc(sizeof *out);
  const ksl_sbatch *sb = &st->sb;
  srec s = {STATE_FORMAT, st->run, st->kiln, st->cwd, st->runner_dir, st->base,
            st->report_copy, st->junit_copy, sb->partition, sb->account, sb->time,
            sb->merge_time, sb->gpus};
  put(&b, out, &rec_slurm, &s);
  for (int i = 0; i < sb->nextra; i++) put(&b, out, &rec_sbatch, &(vrec){sb->extra[i]});
  for (int i = 0; i < st->nargs; i++) put(&b, out, &rec_arg, &(vrec){st->args[i]});
  for (int i = 0; i < st->nselectors; i++) put(&b, out, &rec_select, &(vrec){st->selectors[i]});
  for (int i = 0; i < st->nrounds; i++) {
    const ksl__round *r = &st->rounds[i];
    put(&b, out, &rec_round, &(rrec){r->n, r->tasks, r->array, r->merge, r->submitted});
  }
  free(out);
  char *path = ksl__path(st->run, "slurm/state");
  int rc = kh_write_atomic(path, b.data, b.len);
  if (rc) kh_errf(err, "%s: %s", path, strerror(errno));
  free(path);
  kh_buf_free(&b);
  return rc ? -1 : 0;
}

/* One record of the file; *head: the slurm record was seen. */
static void read_line(ksl__state *st, kp_record *r, int *head) {
  srec s;
  vrec v;
  rrec x;
  if (strcmp(r->tag, "slurm") == 0) {
    if (kp_decode(&rec_slurm, r->fields, r->nfields, &s, NULL, 0) != 0 ||
        s.format != STATE_FORMAT)
      return;
    *head = 1;
    /* The run folder is where it was read from, wherever it was made. */
    st->kiln = kh_strdup(s.kiln), st->cwd = kh_strdup(s.cwd);
    st->runner_dir = kh_strdup(s.runner_dir), st->base = kh_strdup(s.base);
    st->report_copy = kh_strdup(s.report), st->junit_copy = kh_strdup(s.junit);
    st->sb.partition = kh_strdup(s.partition), st->sb.account = kh_strdup(s.account);
    st->sb.time = kh_strdup(s.time), st->sb.merge_time = kh_strdup(s.merge_time);
    st->sb.gpus = (int)s.gpus;
  } else if (strcmp(r->tag, "round") == 0) {
    if (kp_decode(&rec_round, r->fields, r->nfields, &x, NULL, 0) != 0) return;
    st->rounds = kh_xrealloc(st->rounds, (size_t)(st->nrounds + 1) * sizeof *st->rounds);
    st->rounds[st->nrounds++] = (ksl__round){(int)x.n, (int)x.tasks, x.array, x.merge,
                                             x.submitted};
  } else if (kp_decode(&rec_arg, r->fields, r->nfields, &v, NULL, 0) == 0 && v.value) {
    if (strcmp(r->tag, "sbatch") == 0) push(&st->sb.extra, &st->sb.nextra, v.value);
    else if (strcmp(r->tag, "arg") == 0) push(&st->args, &st->nargs, v.value);
    else if (strcmp(r->tag, "select") == 0) push(&st->selectors, &st->nselectors, v.value);
  }
}

int ksl__state_read(const char *run, ksl__state *st, kh_err *err) {
  memset(st, 0, sizeof *st);
  st->run = kh_strdup(run);
  char *path = ksl__path(run, "slurm/state"), *text;
  if (kh_read_file(path, 16u << 20, &text, NULL) != 0) {
    kh_errf(err, "%s: %s (not a kiln slurm run folder?)", path, strerror(errno));
    free(path);
    return -1;
  }
  int head = 0;
  char *save = NULL;
  for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    kp_record r;
    if (kp_parse(l, &r, NULL) == 0) read_line(st, &r, &head);
  }
  free(text);
  int rc = 0;
  if (!head || !st->kiln || st->nrounds == 0)
    rc = kh_errf(err, "%s: not a kiln slurm state (no slurm or round record)", path);
  free(path);
  return rc;
}

static void free_words(char **v, int n) {
  for (int i = 0; i < n; i++) free(v[i]);
  free(v);
}

void ksl__state_free(ksl__state *st) {
  free(st->run), free(st->kiln), free(st->cwd), free(st->runner_dir);
  free(st->base), free(st->report_copy), free(st->junit_copy);
  free(st->sb.partition), free(st->sb.account), free(st->sb.time), free(st->sb.merge_time);
  free_words(st->sb.extra, st->sb.nextra);
  free_words(st->args, st->nargs);
  free_words(st->selectors, st->nselectors);
  free(st->rounds);
  memset(st, 0, sizeof *st);
}
