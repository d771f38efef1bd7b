/* `kiln report show|rebuild|junit|diff|merge|html`: each reads reports
 * with the one reader into the one model and hands them to the report
 * room's tool.
 */
#include "cli-impl.h"

#include <stdlib.h>
#include <string.h>

/* Reads n reports; on failure prints the error and frees what was read. */
static krep_report *read_all(char **paths, int n) {
  krep_report *reps = kh_xcalloc((size_t)n + 1, sizeof *reps);
  for (int i = 0; i < n; i++) {
    kh_err err;
    if (krep_read(paths[i], &reps[i], &err) != 0) {
      fprintf(stderr, "kiln: %s\n", err.msg);
      for (int j = 0; j <= i; j++) krep_free(&reps[j]);
      free(reps);
      return NULL;
    }
  }
  return reps;
}

static void free_all(krep_report *reps, int n) {
  for (int i = 0; i < n && reps; i++) krep_free(&reps[i]);
  free(reps);
}

int kcli__report_show(kcli__args *a) {
  krep_report *r = read_all(a->pos, 1);
  if (!r) return KH_EXIT_USAGE;
  krep_show(r, stdout);
  free_all(r, 1);
  return KH_EXIT_OK;
}

int kcli__report_rebuild(kcli__args *a) {
  krep_report rep;
  kh_err err;
  char *journal = kh_asprintf("%s/journal", a->pos[0]);
  char *path = kh_asprintf("%s/report.yaml", a->pos[0]);
  int rc = KH_EXIT_OK;
  if (krep_journal_read(journal, &rep, &err) != 0) {
    fprintf(stderr, "kiln: %s\n", err.msg);
    rc = KH_EXIT_USAGE;
  } else {
    rep.rebuilt = 1;
    if (krep_write(&rep, path, &err) != 0 || (a->report && krep_write(&rep, a->report, &err) != 0)) {
      fprintf(stderr, "kiln: %s\n", err.msg);
      rc = KH_EXIT_INFRA;
    } else {
      printf("rebuilt %s from %s: %d test runs%s\n", path, journal, rep.ntests,
             rep.finished ? "" : " (the run did not finish: interrupted)");
    }
  }
  krep_free(&rep);
  free(journal), free(path);
  return rc;
}

int kcli__report_junit(kcli__args *a) {
  krep_report *r = read_all(a->pos, 1);
  if (!r) return KH_EXIT_USAGE;
  kh_err err;
  int rc = krep_junit_write(r, a->out ? a->out : "-", &err);
  if (rc) fprintf(stderr, "kiln: %s\n", err.msg);
  free_all(r, 1);
  return rc ? KH_EXIT_INFRA : KH_EXIT_OK;
}

int kcli__report_diff(kcli__args *a) {
  krep_report *r = read_all(a->pos, 2);
  if (!r) return KH_EXIT_USAGE;
  kh_err err;
  int regressions = 0;
  a->diff.yaml_path = a->yaml;
  int rc = krep_diff(&r[0], &r[1], &a->diff, stdout, &regressions, &err);
  if (rc) fprintf(stderr, "kiln: %s\n", err.msg);
  free_all(r, 2);
  return rc ? KH_EXIT_INFRA : regressions ? KH_EXIT_FAIL : KH_EXIT_OK;
}

int kcli__report_merge(kcli__args *a) {
  krep_report *r = read_all(a->pos, a->npos);
  if (!r) return KH_EXIT_USAGE;
  krep_report out;
  kh_err err;
  const char *path = a->out ? a->out : "-";
  int rc = KH_EXIT_OK;
  if (krep_merge(r, a->npos, a->force, &out, stderr, &err) != 0) {
    fprintf(stderr, "kiln: report merge: %s\n", err.msg);
    rc = KH_EXIT_USAGE;
  } else if (krep_write(&out, path, &err) != 0) {
    fprintf(stderr, "kiln: report merge: %s\n", err.msg);
    rc = KH_EXIT_INFRA;
  } else {
    fprintf(stderr, "kiln: merged %d reports, %d test runs, into %s\n", a->npos, out.ntests,
            strcmp(path, "-") == 0 ? "stdout" : path);
  }
  krep_free(&out);
  free_all(r, a->npos);
  return rc;
}

int kcli__report_html(kcli__args *a) {
  krep_report *r = read_all(a->pos, 1);
  if (!r) return KH_EXIT_USAGE;
  krep_report *h = a->history.n ? read_all(a->history.v, a->history.n) : NULL;
  if (a->history.n && !h) {
    free_all(r, 1);
    return KH_EXIT_USAGE;
  }
  char *out = a->out ? kh_strdup(a->out) : NULL;
  if (!out) {  /* beside the report */
    const char *slash = strrchr(r->path, '/');
    out = slash ? kh_asprintf("%.*s/report.html", (int)(slash - r->path), r->path)
                : kh_strdup("report.html");
  }
  kh_err err;
  int rc = krep_html_write(r, h, a->history.n, out, &err);
  if (rc) fprintf(stderr, "kiln: %s\n", err.msg);
  else if (strcmp(out, "-") != 0) fprintf(stderr, "kiln: wrote %s\n", out);
  free(out);
  free_all(h, a->history.n);
  free_all(r, 1);
  return rc ? KH_EXIT_INFRA : KH_EXIT_OK;
}
