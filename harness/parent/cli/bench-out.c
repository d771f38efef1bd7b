/* What `kiln bench` shows: the table of points, the summary lines with
 * each target's PASS or MISS, and bench.yaml through the report room's
 * YAML writer (NaN is .nan, a figure that does not apply is null).
 */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "kiln-config.h"

/* The available point of a kind with the most tests/s, or (by_cpu) the
 * least CPU per test; NULL if none. */
static const kcli__point *best(const kcli__bench_data *B, const char *what, int by_cpu) {
  const kcli__point *b = NULL;
  for (int i = 0; i < B->npts; i++) {
    const kcli__point *p = &B->pts[i];
    if (strcmp(p->what, what) != 0 || !p->available || p->failed) continue;
    if (!b || (by_cpu ? p->cpu_ms_per_test < b->cpu_ms_per_test
                      : p->tests_per_s > b->tests_per_s))
      b = p;
  }
  return b;
}

void kcli__bench_summarise(kcli__bench_data *B, kcli__bench_summary *s) {
  memset(s, 0, sizeof *s);
  s->ceiling = best(B, "ceiling", 0);
  s->kiln = best(B, "kiln", 0);
  s->none = best(B, "none", 0);
  s->host = best(B, "host", 1);
  s->runner = best(B, "runner", 1);
  s->host_tps = best(B, "host", 0);
  for (int i = 0, k = 0; i < B->npts && k < 2; i++)
    if (strcmp(B->pts[i].what, "rss") == 0 && B->pts[i].available) s->rss[k++] = &B->pts[i];
  for (int i = 0; i < B->npts && s->ceiling; i++) {
    kcli__point *p = &B->pts[i];
    if (p->available && (!strcmp(p->what, "ceiling") || !strncmp(p->what, "kiln", 4) ||
                         !strcmp(p->what, "none")))
      p->ratio = p->tests_per_s / s->ceiling->tests_per_s;
  }
  s->cpu_ratio = s->host && s->runner ? s->host->cpu_ms_per_test / s->runner->cpu_ms_per_test
                                      : NAN;
  s->rss_known = s->rss[0] && s->rss[1] && s->rss[0]->peak_rss_kb >= 0 &&
                 s->rss[1]->peak_rss_kb >= 0;
  s->rss_growth_kb = s->rss_known ? s->rss[1]->peak_rss_kb - s->rss[0]->peak_rss_kb : 0;
}

static const char *verdict(int pass) { return pass ? "PASS" : "MISS"; }

static void host_lines(const kcli__bench_summary *s) {
  if (s->host && s->runner)
    printf("host CPU:        %.2f ms per test = %.2fx the runner alone (%.2f ms)  %s "
           "(target <= %.1fx)\n", s->host->cpu_ms_per_test, s->cpu_ratio,
           s->runner->cpu_ms_per_test, verdict(s->cpu_ratio <= KCLI__BENCH_CPU_RATIO),
           KCLI__BENCH_CPU_RATIO);
  else if (s->host)
    printf("host CPU:        %.2f ms per test; no runner-alone figure\n", s->host->cpu_ms_per_test);
  else
    printf("host CPU:        n/a\n");
  if (s->host_tps)
    printf("host tests/s:    %.1f with 2 jobs (the runner alone, 2 at a time: %.1f)  %s "
           "(target >= %.0f, 2x before)\n", s->host_tps->tests_per_s,
           s->runner ? s->runner->tests_per_s : NAN,
           verdict(s->host_tps->tests_per_s >= 2 * KCLI__BENCH_BEFORE_TESTS_S),
           2 * KCLI__BENCH_BEFORE_TESTS_S);
  else
    printf("host tests/s:    n/a\n");
  if (s->rss_known)
    printf("kiln peak RSS:   %lld KiB at %d tests, %lld KiB at %d: %+lld KiB  %s (target "
           "<= %d KiB)\n", s->rss[0]->peak_rss_kb, s->rss[0]->tests, s->rss[1]->peak_rss_kb,
           s->rss[1]->tests, s->rss_growth_kb,
           verdict(s->rss_growth_kb <= KCLI__BENCH_RSS_KB),
           KCLI__BENCH_RSS_KB);
  else
    printf("kiln peak RSS:   n/a\n");
}

void kcli__bench_print(const kcli__bench_data *B, const kcli__bench_summary *s) {
  printf("%-10s %5s %6s %9s %9s %12s %8s  %s\n", "what", "conc", "tests", "wall_s",
         "tests/s", "cpu_ms/test", "ratio", "note");
  for (int i = 0; i < B->npts; i++) {
    const kcli__point *p = &B->pts[i];
    if (!p->available) {
      printf("%-10s %5s %6s %9s %9s %12s %8s  %s\n", p->what, "-", "-", "n/a", "n/a", "n/a",
             "n/a", p->note);
      continue;
    }
    char ratio[16] = "-", note[PATH_MAX + 600];
    if (!isnan(p->ratio)) snprintf(ratio, sizeof ratio, "%.0f%%", 100 * p->ratio);
    snprintf(note, sizeof note, "%s", p->note);
    if (p->peak_rss_kb >= 0 && strcmp(p->what, "rss") == 0)
      snprintf(note, sizeof note, "kiln peak RSS %lld KiB%s%s", p->peak_rss_kb,
               p->note[0] ? "; " : "", p->note);
    printf("%-10s %5d %6d %9.3f %9.1f %12.2f %8s  %s\n", p->what, p->conc, p->tests,
           p->wall_s, p->tests_per_s, p->cpu_ms_per_test, ratio, note);
  }
  printf("\n");
  if (s->ceiling)
    printf("ceiling:         %.1f tests/s (concurrency %d; context open %.3g ms mean, %.3g "
           "max)\n", s->ceiling->tests_per_s, s->ceiling->conc, s->ceiling->open_ms_mean,
           s->ceiling->open_ms_max);
  else
    printf("ceiling:         n/a\n");
  if (s->kiln && s->ceiling)
    printf("kiln best:       %.1f tests/s (concurrency %d) = %.0f%% of the ceiling  %s "
           "(target >= %.0f%%)\n", s->kiln->tests_per_s, s->kiln->conc, 100 * s->kiln->ratio,
           verdict(s->kiln->ratio >= KCLI__BENCH_RATIO), 100 * KCLI__BENCH_RATIO);
  else if (s->kiln)
    printf("kiln best:       %.1f tests/s (concurrency %d); no ceiling to compare with\n",
           s->kiln->tests_per_s, s->kiln->conc);
  else
    printf("kiln best:       n/a\n");
  if (s->none && s->ceiling)
    printf("isolation none:  %.1f tests/s = %.1fx the ceiling (one process, shared context)\n",
           s->none->tests_per_s, s->none->ratio);
  else if (s->none)
    printf("isolation none:  %.1f tests/s\n", s->none->tests_per_s);
  else
    printf("isolation none:  n/a\n");
  host_lines(s);
  printf("bench: %s/bench.yaml\n", B->out);
  fflush(stdout);
}

/* ---- bench.yaml ------------------------------------------------------------------------ */

static void knum(krep_yaml *y, const char *k, double v) {
  krep_yaml_key(y, k);
  if (isnan(v)) krep_yaml_null(y);   /* does not apply */
  else krep_yaml_ms(y, v);
}

static void kint(krep_yaml *y, const char *k, long long v) {
  krep_yaml_key(y, k);
  krep_yaml_int(y, v);
}

static void kstr(krep_yaml *y, const char *k, const char *v) {
  krep_yaml_key(y, k);
  krep_yaml_str(y, v);
}

static void kbool(krep_yaml *y, const char *k, int v) {
  krep_yaml_key(y, k);
  krep_yaml_bool(y, v);
}

static void host_info(krep_yaml *y) {
  char host[256] = "", model[256] = "", *cpuinfo = NULL;
  gethostname(host, sizeof host - 1);
  struct utsname u;
  if (kh_read_file("/proc/cpuinfo", 1 << 20, &cpuinfo, NULL) == 0) {
    char *m = strstr(cpuinfo, "model name");
    char *colon = m ? strchr(m, ':') : NULL;
    if (colon) snprintf(model, sizeof model, "%.*s", (int)strcspn(colon + 2, "\n"), colon + 2);
  }
  free(cpuinfo);
  double load[3] = {NAN, NAN, NAN};
  if (getloadavg(load, 3) < 0) load[0] = NAN;
  krep_yaml_key(y, "host");
  krep_yaml_map(y, 1);
  kstr(y, "name", host);
  kstr(y, "kernel", uname(&u) == 0 ? u.release : "");
  kint(y, "cpus", sysconf(_SC_NPROCESSORS_ONLN));
  kstr(y, "cpu_model", model);
  knum(y, "load_avg_1m", load[0]);
  krep_yaml_end(y);
}

static void point(krep_yaml *y, const kcli__point *p) {
  krep_yaml_map(y, 1);
  kstr(y, "what", p->what);
  kbool(y, "available", p->available);
  if (p->available) {
    kint(y, "concurrency", p->conc);
    kint(y, "tests", p->tests);
    kint(y, "failed", p->failed);
    knum(y, "wall_s", p->wall_s);
    knum(y, "tests_per_s", p->tests_per_s);
    knum(y, "cpu_ms_per_test", p->cpu_ms_per_test);
    knum(y, "ratio_to_ceiling", p->ratio);
  }
  if (strcmp(p->what, "ceiling") == 0 && p->available) {
    knum(y, "context_open_ms_mean", p->open_ms_mean);
    knum(y, "context_open_ms_max", p->open_ms_max);
    knum(y, "process_start_ms_mean", p->start_ms_mean);
  }
  if (p->peak_rss_kb >= 0) kint(y, "kiln_peak_rss_kb", p->peak_rss_kb);
  if (p->run_dir[0]) kstr(y, "run_dir", p->run_dir);
  if (p->note[0]) kstr(y, "note", p->note);
  krep_yaml_end(y);
}

static void summary(krep_yaml *y, const kcli__bench_summary *s) {
  krep_yaml_key(y, "summary");
  krep_yaml_map(y, 0);
  krep_yaml_key(y, "ceiling");
  if (s->ceiling) {
    krep_yaml_map(y, 1);
    knum(y, "tests_per_s", s->ceiling->tests_per_s);
    kint(y, "concurrency", s->ceiling->conc);
    krep_yaml_end(y);
  } else {
    krep_yaml_null(y);
  }
  krep_yaml_key(y, "kiln");
  if (s->kiln) {
    krep_yaml_map(y, 1);
    knum(y, "tests_per_s", s->kiln->tests_per_s);
    kint(y, "concurrency", s->kiln->conc);
    knum(y, "ratio_to_ceiling", s->kiln->ratio);
    knum(y, "target_ratio", KCLI__BENCH_RATIO);
    if (s->ceiling) kbool(y, "pass", s->kiln->ratio >= KCLI__BENCH_RATIO);
    krep_yaml_end(y);
  } else {
    krep_yaml_null(y);
  }
  krep_yaml_key(y, "isolation_none");
  if (s->none) {
    krep_yaml_map(y, 1);
    knum(y, "tests_per_s", s->none->tests_per_s);
    knum(y, "ratio_to_ceiling", s->none->ratio);
    krep_yaml_end(y);
  } else {
    krep_yaml_null(y);
  }
  krep_yaml_key(y, "host");
  if (s->host) {
    krep_yaml_map(y, 1);
    knum(y, "cpu_ms_per_test", s->host->cpu_ms_per_test);
    knum(y, "runner_cpu_ms_per_test", s->runner ? s->runner->cpu_ms_per_test : NAN);
    knum(y, "cpu_ratio", s->cpu_ratio);
    knum(y, "target_cpu_ratio", KCLI__BENCH_CPU_RATIO);
    if (!isnan(s->cpu_ratio)) kbool(y, "cpu_pass", s->cpu_ratio <= KCLI__BENCH_CPU_RATIO);
    knum(y, "tests_per_s", s->host_tps->tests_per_s);
    knum(y, "runner_tests_per_s", s->runner ? s->runner->tests_per_s : NAN);
    knum(y, "target_tests_per_s", 2 * KCLI__BENCH_BEFORE_TESTS_S);
    kbool(y, "tests_per_s_pass", s->host_tps->tests_per_s >= 2 * KCLI__BENCH_BEFORE_TESTS_S);
    kint(y, "rounds", KCLI__BENCH_HOST_ROUNDS);
    kint(y, "jobs", 2);
    krep_yaml_end(y);
  } else {
    krep_yaml_null(y);
  }
  krep_yaml_key(y, "rss");
  if (s->rss_known) {
    krep_yaml_map(y, 1);
    kint(y, "tests_a", s->rss[0]->tests), kint(y, "peak_rss_kb_a", s->rss[0]->peak_rss_kb);
    kint(y, "tests_b", s->rss[1]->tests), kint(y, "peak_rss_kb_b", s->rss[1]->peak_rss_kb);
    kint(y, "growth_kb", s->rss_growth_kb);
    kint(y, "target_kb", KCLI__BENCH_RSS_KB);
    kbool(y, "pass", s->rss_growth_kb <= KCLI__BENCH_RSS_KB);
    krep_yaml_end(y);
  } else {
    krep_yaml_null(y);
  }
  krep_yaml_end(y);
}

int kcli__bench_yaml(const kcli__bench_data *B, const kcli__bench_summary *s) {
  char *path = kh_asprintf("%s/bench.yaml", B->out);
  kh_err err;
  krep_yaml *y = krep_yaml_open(path, &err);
  if (!y) {
    fprintf(stderr, "kiln bench: %s\n", err.msg);
    free(path);
    return -1;
  }
  char start[40];
  kh_iso_time(B->start_s, start, sizeof start);
  char *git = krun_git_rev();
  krep_yaml_map(y, 0);
  kint(y, "format_version", 1);
  kstr(y, "kiln_version", KILN_VERSION);
  kstr(y, "git", git);
  kstr(y, "start", start);
  knum(y, "wall_s", kh_wall_s() - B->start_s);
  kstr(y, "backend", krun_backend_names[B->bi.backend]);
  kstr(y, "runner", B->bi.runner);
  krep_yaml_key(y, "device");
  krep_yaml_map(y, 1);
  kstr(y, "name", B->bi.dev[0].name);
  kstr(y, "arch", B->bi.dev[0].arch);
  kstr(y, "visible", B->bi.dev[0].visible);
  kint(y, "devices_on_host", B->bi.ndevices);
  krep_yaml_end(y);
  host_info(y);
  krep_yaml_key(y, "settings");
  krep_yaml_map(y, 1);
  kint(y, "tests", B->tests);
  kint(y, "host_tests", B->host_tests);
  krep_yaml_key(y, "rss_tests");
  krep_yaml_seq(y, 1);
  krep_yaml_int(y, B->rss_tests[0]);
  krep_yaml_int(y, B->rss_tests[1]);
  krep_yaml_end(y);
  krep_yaml_key(y, "concurrency");
  krep_yaml_seq(y, 1);
  for (int i = 0; i < B->nconc; i++) krep_yaml_int(y, B->conc[i]);
  krep_yaml_end(y);
  kstr(y, "contain", B->contain ? B->contain : "auto");
  krep_yaml_key(y, "skip");
  krep_yaml_seq(y, 1);
  static const char *const names[] = {"ceiling", "kiln", "none", "host"};
  for (int i = 0; i < 4; i++)
    if (B->skip & (1u << i)) krep_yaml_str(y, names[i]);
  krep_yaml_end(y);
  krep_yaml_end(y);
  krep_yaml_key(y, "points");
  krep_yaml_seq(y, 0);
  for (int i = 0; i < B->npts; i++) point(y, &B->pts[i]);
  krep_yaml_end(y);
  summary(y, s);
  krep_yaml_end(y);
  int rc = krep_yaml_close(y, &err);
  if (rc != 0) fprintf(stderr, "kiln bench: %s\n", err.msg);
  free(path), free(git);
  return rc;
}
