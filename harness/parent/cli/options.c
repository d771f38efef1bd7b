/* The option table: every option of every subcommand, each described once.
 * A subcommand names its options by id (commands.c); two rows may share a
 * --name when their meaning differs by command (--out is a run folder for
 * `kiln run`, a file for `kiln report junit`). Parsing, --help and usage
 * errors read these rows (parse.c). The test sources' own options come
 * from their tables (run.h's krun_sopt): rows made here from them, which a
 * command takes with the id `sources`.
 */
#include "cli-impl.h"

#include <stddef.h>
#include <string.h>

#define SET(id, sh, arg, help) {id, id, sh, arg, KCLI__SETTING, id, 0, 0, 0, help}
#define STR(id, name, sh, arg, member, help) \
  {id, name, sh, arg, KCLI__STR, NULL, offsetof(kcli__args, member), 0, 0, help}
#define FLAG(id, sh, member, help) \
  {id, id, sh, NULL, KCLI__FLAG, NULL, offsetof(kcli__args, member), 0, 0, help}
#define LIST(id, arg, member, help) \
  {id, id, 0, arg, KCLI__LIST, NULL, offsetof(kcli__args, member), 0, 0, help}
#define NUM(id, kind, arg, member, lo, hi, help) \
  {id, id, 0, arg, kind, NULL, offsetof(kcli__args, member), lo, hi, help}

const kcli__opt kcli__opts[] = {
  SET("jobs", 'j', "N", "children at once (default: number of CPUs)"),
  SET("backend", 0, "B", "auto|host|hip|cuda (auto: a GPU backend whose runner finds a device, else host)"),
  STR("config", "config", 'c', "FILE", config, "YAML run profile: a path or a name in configs/ (quick, nightly, ...)"),
  STR("report", "report", 0, "FILE", report, "also write the YAML report to FILE"),
  STR("out", "out", 'o', "DIR", out, "run folder (default reports/runs/<UTC time>-<backend>)"),
  SET("timeout", 't', "S", "seconds per test unless the test sets its own (default: its source's own where --help gives one, else 120)"),
  SET("grace", 0, "S", "seconds between SIGTERM and SIGKILL on timeout (default 2)"),
  SET("retries", 0, "N", "run a failed test up to N more times; a later pass is `flaky`"),
  SET("repeat", 0, "N", "run every selected test N times"),
  SET("isolation", 0, "M", "process (one child per test; the default on the host backend), none (one shared process) or worker (the tests of one source that can share a process, in sequences of one process each, checked between tests; each that does not pass run again alone: polluted when it passes then; the default on a GPU backend unless --warm is given)"),
  SET("wrap", 0, "CMD", "run each child under CMD (valgrind, compute-sanitizer, ...)"),
  SET("warm", 0, "N", "warm children per device, started before their test (0: off; default auto: 1 per slot)"),
  {"allow-empty", "allow-empty", 0, NULL, KCLI__SETTING, "allow_empty", 0, 0, 0, "exit 0 even when nothing was tested (no device, every test skipped)"},
  SET("contain", 0, "M", "how processes a test leaves running are found: auto, cgroup, subreaper, none (auto: cgroup v2 where writable, else subreaper)"),
  SET("poison", 0, NULL, "fill new device allocations with NaN bytes"),
  SET("sanitize", 0, "TOOL", "memcheck|racecheck|initcheck|synccheck: each runner under compute-sanitizer (cuda), or memcheck through an AddressSanitizer runner (host, hip)"),
  SET("seed", 0, "N", "run seed passed to every child (default: chosen per child)"),
  SET("cap", 0, "F", "device allocation cap as a fraction of free memory"),
  SET("slots", 0, "N", "slots per device (default on a GPU: as many as its cores and memory allow, at most 8; --jobs on host); auto: sized by each test's peak device memory in --slots-from"),
  STR("slots-from", "slots-from", 0, "REPORT", slots_from, "--slots auto: the report whose peaks size the slots (default: the newest run of the backend under reports/runs)"),
  STR("resource-spec", "resource-spec", 0, "FILE", spec, "CTest resource-spec JSON: the devices and their slots"),
  STR("token-key", "token-key", 0, "PATH", token_key, "device-token key path (default /tmp/kiln-tokens-<backend>; env KILN_TOKEN_KEY)"),
  SET("leaks", 0, "P", "fail (a leak fails the test) or warn"),
  {"tolerance", "tolerance", 0, "G=A:R", KCLI__TOLERANCE, NULL, 0, 0, 0, "atol A, rtol R for checks matching glob G (repeatable)"},
  STR("junit", "junit", 0, "FILE", junit, "also write JUnit XML to FILE (default $XML_OUTPUT_FILE when set)"),
  STR("shard", "shard", 0, "K/N", shard, "run shard K of N (1-based; else Bazel/Slurm array env)"),
  STR("shard-durations", "shard-durations", 0, "REPORT", shard_durations, "balance shards by this report's times"),
  STR("durations", "durations", 0, "REPORT", durations, "queue the longest tests first by this report's (or run folder's) times, untimed tests first (default: --shard-durations, else the run folder's earlier report; none: the selection's order)"),
  STR("shard-plan", "shard-plan", 0, "FILE", shard_plan, "run this shard's tests of a plan (kiln slurm writes them)"),
  STR("runner-dir", "runner-dir", 0, "DIR", runner_dir, "where kiln-runner-<backend> lives (env KILN_RUNNER_DIR)"),
  STR("runner", "runner", 0, "PATH", runner, "a kiln runner a project built against the installed kiln: its tests, its backend"),
  FLAG("verbose", 'v', verbose, "more detail: child command lines, every test's message"),
  STR("format", "format", 0, "F", format, "text (default) or json: the plan as JSON for tools (docs/harness.md)"),
  /* Report tools */
  STR("out-file", "out", 'o', "FILE", out, "write to FILE (default: stdout)"),
  STR("html-out", "out", 'o', "FILE", out, "write to FILE (default: report.html beside the report; -: stdout)"),
  STR("yaml", "yaml", 0, "FILE", yaml, "also write the findings as YAML to FILE"),
  NUM("time-rel", KCLI__DOUBLE, "F", diff.time_rel, 0, 1e6, "slower by more than this fraction counts (default 0.2)..."),
  NUM("test-abs-ms", KCLI__DOUBLE, "MS", diff.test_abs_ms, 0, 1e12, "...and by more than MS for a test body (default 100)"),
  NUM("kernel-abs-ms", KCLI__DOUBLE, "MS", diff.kernel_abs_ms, 0, 1e12, "...or by more than MS for a kernel's median (default 0.05)"),
  NUM("drift", KCLI__DOUBLE, "F", diff.drift_factor, 1, 1e300, "a passing check's max abs error grown more than F times (default 4)"),
  NUM("metric-rel", KCLI__DOUBLE, "F", diff.metric_rel, 0, 1, "a GB/s or TFLOP/s metric lower by more than this fraction (default 0.2)"),
  NUM("confidence", KCLI__DOUBLE, "P", diff.confidence, 0.5, 0.999999, "a speed change counts only when outside the noise with this confidence (default 0.999)"),
  FLAG("force", 0, force, "merge reports of different revisions"),
  LIST("history", "REPORT", history, "an earlier report for the trend plots (repeatable)"),
  /* kiln bench */
  NUM("tests", KCLI__INT, "N", tests, 1, 100000, "tests (or probes) per point (default 48)"),
  STR("concurrency", "concurrency", 0, "LIST", concurrency, "processes at once, comma-separated (default 1,2,3,4,6,8)"),
  NUM("host-tests", KCLI__INT, "N", host_tests, 1, 1000000, "no-op tests of the host CPU points (default 300)"),
  STR("rss-tests", "rss-tests", 0, "A,B", rss_tests, "no-op test counts of the two peak-RSS runs (default 100,1000)"),
  STR("bench-out", "out", 0, "DIR", out, "bench folder (default reports/runs/<UTC time>-bench)"),
  STR("skip", "skip", 0, "LIST", skip, "sections left out: ceiling,kiln,none,host"),
  /* kiln slurm */
  STR("slurm-out", "out", 'o', "DIR", out, "run folder (default reports/slurm/<UTC time>)"),
  STR("partition", "partition", 0, "P", partition, "Slurm partition of every job"),
  STR("account", "account", 0, "A", account, "Slurm account every job is charged to"),
  STR("time", "time", 0, "T", time, "each task's time limit, as sbatch takes it (30, 2:00:00)"),
  STR("merge-time", "merge-time", 0, "T", merge_time, "the merge job's time limit"),
  NUM("gpus-per-task", KCLI__INT, "N", gpus, 0, 1024, "GPUs each task asks for, as GRES gpu:N (default 1; 0: none)"),
  NUM("tasks", KCLI__INT, "N", tasks, 1, 100000, "array tasks, a shard each (default 4, at most one per test)"),
  {"sbatch", "sbatch", 0, "ARG", KCLI__LIST, NULL, offsetof(kcli__args, sbatch), 0, 0, "one more sbatch argument for every job (repeatable: --sbatch=--qos=high)"},
  FLAG("dry-run", 0, dry_run, "print the plan and the job scripts; submit nothing"),
  FLAG("no-wait", 0, no_wait, "submit, then exit (--follow RUN follows it later)"),
  STR("resume", "resume", 0, "RUN", resume, "submit RUN's lost tests again, then merge the run"),
  STR("follow", "follow", 0, "RUN", follow, "follow a submitted run to its end"),
  STR("merge", "merge", 0, "RUN", merge, "merge RUN's shards now (what its merge job runs)"),
  NUM("poll", KCLI__DOUBLE, "S", poll_s, 0.1, 3600, "seconds between looks at the queue (default 10)"),
  STR("base", "base", 0, "REPORT", base, "the diff's base (default: the newest good run beside this one)"),
  {NULL, NULL, 0, NULL, 0, NULL, 0, 0, 0, NULL},
};

/* Rows for the sources' options, made once, {NULL} ended. */
const kcli__opt *kcli__source_opts(void) {
  static kcli__opt *rows;
  if (rows) return rows;
  int n = 0;
  while (krun_sopt_at(n, NULL)) n++;
  rows = kh_xcalloc((size_t)n + 1, sizeof *rows);
  for (int i = 0; i < n; i++) {
    const krun_sopt *o = krun_sopt_at(i, NULL);
    rows[i] = (kcli__opt){o->name, o->name, 0, o->arg, KCLI__SOURCE, o->name, 0, i, 0, o->help};
  }
  return rows;
}

const kcli__opt *kcli__opt_by_id(const char *id) {
  for (const kcli__opt *o = kcli__opts; o->id; o++)
    if (strcmp(o->id, id) == 0) return o;
  for (const kcli__opt *o = kcli__source_opts(); o->id; o++)
    if (strcmp(o->id, id) == 0) return o;
  return NULL;
}

static int names(const kcli__cmd *c, const char *id) {
  size_t n = strlen(id);
  for (const char *p = c->opts; *p;) {
    size_t len = strcspn(p, " ");
    if (len == n && strncmp(p, id, n) == 0) return 1;
    p += len + (p[len] == ' ');
  }
  return 0;
}

int kcli__takes(const kcli__cmd *c, const char *id) {
  if (names(c, id)) return 1;
  const kcli__opt *o = kcli__opt_by_id(id);
  return o && o->kind == KCLI__SOURCE && names(c, "sources");
}

int kcli__is_path(const kcli__opt *o) {
  const krun_sopt *so = o->kind == KCLI__SOURCE ? krun_sopt_at((int)o->lo, NULL) : NULL;
  return so && so->type == KRUN_SOPT_PATHS;
}
