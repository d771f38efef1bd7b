/* Runs under a root folder (reports/slurm by default): a new run's folder,
 * named by its UTC start so that names sort by time, and the newest earlier
 * run with a report, for the durations a plan is balanced by and for the
 * diff's base (the newest good one: its status says good, as
 * scripts/nightly.sh calls a night good, or it holds a file `accepted`).
 */
#include "slurm-impl.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *ksl_run_dir_new(const char *root) {
  char stamp[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  for (int n = 1;; n++) {
    char *p = n == 1 ? kh_asprintf("%s/%s", root, stamp)
                     : kh_asprintf("%s/%s-%d", root, stamp, n);
    if (access(p, F_OK) != 0) return p;
    free(p);
  }
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_good(const char *dir) {
  char *accepted = kh_asprintf("%s/accepted", dir), status[32];
  int good = access(accepted, F_OK) == 0;
  free(accepted);
  ksl__status(dir, status, sizeof status);
  return good || strcmp(status, "good") == 0;
}

/* The report.yaml of every run under root other than `except` (good ones
 * only with good), oldest first. */
static char **reports(const char *root, const char *except, int good, int *count) {
  *count = 0;
  DIR *d = opendir(root);
  if (!d) return NULL;
  char **names = NULL, **found = NULL;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    names = kh_xrealloc(names, (size_t)(n + 1) * sizeof *names);
    names[n++] = kh_strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, by_name);
  char *skip = except ? realpath(except, NULL) : NULL;
  for (int i = 0; i < n; i++) {
    char *dir = kh_asprintf("%s/%s", root, names[i]);
    char *report = kh_asprintf("%s/report.yaml", dir), *real = realpath(dir, NULL);
    struct stat st;
    int same = skip && real && strcmp(skip, real) == 0;
    if (!same && stat(report, &st) == 0 && S_ISREG(st.st_mode) && (!good || is_good(dir))) {
      found = kh_xrealloc(found, (size_t)(*count + 1) * sizeof *found);
      found[(*count)++] = report;
    } else {
      free(report);
    }
    free(dir), free(real), free(names[i]);
  }
  free(names), free(skip);
  return found;
}

char *ksl_run_newest(const char *root, const char *except, int good) {
  int n;
  char **all = reports(root, except, good, &n);
  char *newest = n ? all[n - 1] : NULL;
  for (int i = 0; i < n - 1; i++) free(all[i]);
  free(all);
  return newest;
}

char **ksl__history(const char *root, const char *except, int max, int *n) {
  int all;
  char **r = reports(root, except, 0, &all);
  int drop = all > max ? all - max : 0;
  for (int i = 0; i < drop; i++) free(r[i]);
  if (drop) memmove(r, r + drop, (size_t)(all - drop) * sizeof *r);
  *n = all - drop;
  return r;
}

int ksl_run_seed(const char *report, unsigned long long *seed) {
  char *copy = kh_strdup(report), *dir = dirname(copy);
  ksl__state st;
  kh_err err;
  int rc = -1;
  if (ksl__state_read(dir, &st, &err) == 0)
    for (int i = 0; i < st.nargs && rc != 0; i++) {
      const char *v = strncmp(st.args[i], "--seed=", 7) == 0 ? st.args[i] + 7
                      : strcmp(st.args[i], "--seed") == 0 && i + 1 < st.nargs ? st.args[i + 1]
                                                                              : NULL;
      char *end;
      if (!v || !*v || *v == '-') continue;
      errno = 0;
      *seed = strtoull(v, &end, 0);
      if (errno == 0 && !*end) rc = 0;
    }
  ksl__state_free(&st);
  free(copy);
  return rc;
}

/* ---- A run's status: its file `status`, and the exit status it stands for -------- */

static const struct {
  const char *name;
  int exit;
} statuses[] = {{"good", KH_EXIT_OK},   {"failed", KH_EXIT_FAIL}, {"lost", KH_EXIT_FAIL},
                {"regressed", KH_EXIT_FAIL}, {"infra", KH_EXIT_INFRA},
                {"nothing-tested", KH_EXIT_INFRA}};

void ksl__status(const char *run, char *out, size_t n) {
  char *path = ksl__path(run, "status"), *text = NULL;
  out[0] = '\0';
  if (kh_read_file(path, 256, &text, NULL) == 0) {
    text[strcspn(text, "\n")] = '\0';
    snprintf(out, n, "%s", text);
  }
  free(text), free(path);
}

int ksl__status_exit(const char *status) {
  for (size_t i = 0; i < sizeof statuses / sizeof statuses[0]; i++)
    if (strcmp(statuses[i].name, status) == 0) return statuses[i].exit;
  return KH_EXIT_INFRA;
}
