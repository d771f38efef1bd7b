/* Asking Slurm: sbatch to submit, squeue for what runs now, sacct and
 * `scontrol show job` for how tasks ended. Each is a command started with
 * krun_spawn (through krun_capture), its output parsed here and nowhere
 * else.
 *
 * What each cluster offers differs: squeue knows pending and running jobs,
 * and ended ones for MinJobAge (300 s by default); sacct knows every job
 * but only where accounting storage is on (slurmdbd); `scontrol show job`
 * knows what squeue knows, with more detail. A pending array task that is
 * cancelled leaves no record at all on a cluster without accounting. So
 * the follower reads squeue, and the merge asks squeue, then sacct, then
 * scontrol; what none of them knows stays unknown (docs/scale.md).
 */
#include "slurm-impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Slurm's commands answer in well under this; a controller that does not
 * is reported, and the follower asks again. */
#define QUERY_S 60

static int run(char **argv, char **out, kh_err *err) {
  size_t len;
  char *errs = NULL;
  int st = krun_capture(argv, 16u << 20, QUERY_S, out, &len, &errs);
  if (st == 0) return free(errs), 0;
  /* The last line of what it said: on stderr, else on stdout. */
  char *text = errs && *errs ? errs : *out ? *out : "";
  size_t n = strlen(text);
  while (n && text[n - 1] == '\n') text[--n] = '\0';
  char *last = strrchr(text, '\n');
  if (st < 0)
    kh_errf(err, "%s: %s%s", argv[0], strerror(errno),
            errno == ENOENT ? " (Slurm's client commands are not installed here)" : "");
  else
    kh_errf(err, "%s exited with status %d: %s", argv[0], st, last ? last + 1 : text);
  free(errs);
  return st < 0 ? -1 : st;
}

int ksl__submit(char **argv, long long *job, kh_err *err) {
  char *out = NULL;
  int rc = run(argv, &out, err);
  *job = 0;
  /* --parsable prints "ID" or "ID;CLUSTER"; warnings may come before it. */
  char *save = NULL;
  for (char *l = rc == 0 ? strtok_r(out, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
    l[strcspn(l, ";")] = '\0';
    long long id;
    if (kh_parse_ll(l, 1, (1LL << 53), &id) == 0) *job = id;
  }
  if (rc == 0 && !*job) rc = kh_errf(err, "sbatch printed no job id: %s", out ? out : "");
  free(out);
  return rc ? -1 : 0;
}

static void set(ksl__task *t, const char *state, const char *node, const char *reason) {
  /* sacct says "CANCELLED by 0": the state is the first word. */
  snprintf(t->state, sizeof t->state, "%.*s", (int)strcspn(state, " "), state);
  if (node && *node && strcmp(node, "(null)") != 0 && strcmp(node, "None assigned") != 0)
    snprintf(t->node, sizeof t->node, "%s", node);
  /* squeue says "None" for a task nothing holds back. */
  if (reason && strcmp(reason, "None") != 0) snprintf(t->reason, sizeof t->reason, "%s", reason);
}

/* Splits a line at '|' into at most max fields. */
static int fields(char *line, char **f, int max) {
  int n = 0;
  for (char *p = line; p && n < max;) {
    f[n++] = p;
    p = strchr(p, '|');
    if (p) *p++ = '\0';
  }
  return n;
}

/* squeue: "TASK|STATE|NODES|REASON" per task. A job it has forgotten is
 * an error to squeue ("Invalid job id"); here it is simply unknown. */
static int from_squeue(long long job, int n, ksl__task *out, int array, kh_err *err) {
  char id[32];
  snprintf(id, sizeof id, "%lld", job);
  char *argv[] = {"squeue", "-h", "-r", "--states=all", "-j", id, "-o", "%K|%T|%N|%r", NULL};
  char *text = NULL;
  int rc = run(argv, &text, err);
  /* The error is on stderr, which run() put in err's message. */
  if (rc > 0 && text && strstr(err->msg, "Invalid job id")) rc = 0, *text = '\0';
  char *save = NULL;
  for (char *l = rc == 0 ? strtok_r(text, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
    char *f[4];
    long long k = 0;
    if (fields(l, f, 4) != 4) continue;
    if (array && kh_parse_ll(f[0], 0, n - 1, &k) != 0) continue;
    set(&out[k], f[1], f[2], f[3]);
  }
  free(text);
  return rc ? -1 : 0;
}

/* sacct, where the cluster keeps accounting: "JOB_TASK|STATE|NODES". */
static void from_sacct(long long job, int n, ksl__task *out) {
  char id[32];
  snprintf(id, sizeof id, "%lld", job);
  char *argv[] = {"sacct", "-n", "-P", "-X", "-j", id, "-o", "JobID,State,NodeList", NULL};
  char *text = NULL;
  kh_err ignored;
  if (run(argv, &text, &ignored) == 0) {
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
      char *f[3], *us;
      long long k;
      if (fields(l, f, 3) != 3 || !(us = strchr(f[0], '_'))) continue;
      if (kh_parse_ll(us + 1, 0, n - 1, &k) != 0 || out[k].state[0]) continue;
      set(&out[k], f[1], f[2], NULL);
    }
  }
  free(text);
}

/* The value of KEY= in a `scontrol show job -o` line, or NULL. */
static char *word(char *line, const char *key, char *buf, size_t n) {
  size_t len = strlen(key);
  for (char *p = line; (p = strstr(p, key)) != NULL; p += len)
    if (p == line || p[-1] == ' ') {
      snprintf(buf, n, "%.*s", (int)strcspn(p + len, " "), p + len);
      return buf;
    }
  return NULL;
}

static void from_scontrol(long long job, int n, ksl__task *out) {
  char id[32];
  snprintf(id, sizeof id, "%lld", job);
  char *argv[] = {"scontrol", "show", "job", "-o", id, NULL};
  char *text = NULL;
  kh_err ignored;
  if (run(argv, &text, &ignored) == 0) {
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
      char task[32], state[32], node[128];
      long long k;
      if (!word(l, "ArrayTaskId=", task, sizeof task) || kh_parse_ll(task, 0, n - 1, &k) != 0 ||
          !word(l, "JobState=", state, sizeof state) || out[k].state[0])
        continue;
      set(&out[k], state, word(l, "NodeList=", node, sizeof node), NULL);
    }
  }
  free(text);
}

int ksl__tasks(long long array, int n, ksl__task *out, int final, kh_err *err) {
  memset(out, 0, (size_t)n * sizeof *out);
  if (from_squeue(array, n, out, 1, err) != 0 && !final) return -1;
  if (!final) return 0;
  from_sacct(array, n, out);
  from_scontrol(array, n, out);
  return 0;
}

int ksl__job(long long job, ksl__task *out, kh_err *err) {
  memset(out, 0, sizeof *out);
  return from_squeue(job, 1, out, 0, err);
}

int ksl__ended(const char *state) {
  static const char *const ended[] = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
                                      "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED",
                                      "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"};
  for (size_t i = 0; i < sizeof ended / sizeof ended[0]; i++)
    if (strcmp(state, ended[i]) == 0) return 1;
  return 0;
}

int ksl__waiting(const char *state) {
  return strcmp(state, "PENDING") == 0 || strncmp(state, "REQUEUE", 7) == 0 ||
         strcmp(state, "RESV_DEL_HOLD") == 0;
}

void ksl__cancel(long long job) {
  char id[32], *out = NULL;
  snprintf(id, sizeof id, "%lld", job);
  char *argv[] = {"scancel", id, NULL};
  (void)krun_capture(argv, 4096, QUERY_S, &out, NULL, NULL);
  free(out);
}

void ksl__seen_write(const char *run, int round, const ksl__task *t, int n) {
  kh_buf b = {0};
  kp_record_out *out = kh_xmalloc(sizeof *out);
  for (int k = 0; k < n; k++) {
    if (!t[k].state[0]) continue;
    kp_begin(out, "seen");
    kp_add_int(out, "task", k);
    kp_add_str(out, "state", t[k].state);
    if (t[k].node[0]) kp_add_str(out, "node", t[k].node);
    if (t[k].reason[0]) kp_add_str(out, "reason", t[k].reason);
    kh_buf_addf(&b, "%.*s\n", (int)out->len, out->buf);
  }
  free(out);
  char *path = ksl__path(run, "slurm/seen-%d", round);
  if (b.len) (void)kh_write_atomic(path, b.data, b.len);
  free(path);
  kh_buf_free(&b);
}

void ksl__seen_read(const char *run, int round, ksl__task *t, int n) {
  char *path = ksl__path(run, "slurm/seen-%d", round), *text = NULL;
  if (kh_read_file(path, 16u << 20, &text, NULL) == 0) {
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
      kp_record r;
      long long k;
      const char *task;
      if (kp_parse(l, &r, NULL) != 0 || strcmp(r.tag, "seen") != 0 ||
          !(task = kp_get(&r, "task")) || kh_parse_ll(task, 0, n - 1, &k) != 0 ||
          t[k].state[0] || !kp_get(&r, "state"))
        continue;
      set(&t[k], kp_get(&r, "state"), kp_get(&r, "node"), kp_get(&r, "reason"));
      t[k].seen = 1;
    }
  }
  free(text), free(path);
}
