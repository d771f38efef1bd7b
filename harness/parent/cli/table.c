/* The command table: every subcommand of kiln and every option, each
 * described once. Parsing, --help, `kiln help` and usage errors all read
 * these rows (parse.c). A subcommand names its options by id; two rows may
 * share a --name when their meaning differs by command (--out is a run
 * folder for `kiln run`, a file for `kiln report junit`).
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
  SET("timeout", 't', "S", "seconds per test unless the test sets its own (default 120)"),
  SET("grace", 0, "S", "seconds between SIGTERM and SIGKILL on timeout (default 2)"),
  SET("retries", 0, "N", "run a failed test up to N more times; a later pass is `flaky`"),
  SET("repeat", 0, "N", "run every selected test N times"),
  SET("isolation", 0, "M", "process (one child per test) or none (one shared process)"),
  SET("wrap", 0, "CMD", "run each child under CMD (valgrind, compute-sanitizer, ...)"),
  SET("warm", 0, "N", "warm children per device, started before their test (0: off; default auto: 1 per slot)"),
  {"allow-empty", "allow-empty", 0, NULL, KCLI__SETTING, "allow_empty", 0, 0, 0, "exit 0 even when nothing was tested (no device, every test skipped)"},
  SET("contain", 0, "M", "how processes a test leaves running are found: auto, cgroup, subreaper, none (auto: cgroup v2 where writable, else subreaper)"),
  SET("poison", 0, NULL, "fill new device allocations with NaN bytes"),
  SET("sanitize", 0, "TOOL", "memcheck|racecheck|initcheck|synccheck: each runner under compute-sanitizer (cuda), or memcheck through an AddressSanitizer runner (host, hip)"),
  SET("seed", 0, "N", "run seed passed to every child (default: chosen per child)"),
  SET("cap", 0, "F", "device allocation cap as a fraction of free memory"),
  SET("slots", 0, "N", "slots per device (default 2 on a GPU, --jobs on host); auto: sized by each test's peak device memory in --slots-from"),
  STR("slots-from", "slots-from", 0, "REPORT", slots_from, "--slots auto: the report whose peaks size the slots (default: the newest run of the backend under reports/runs)"),
  STR("resource-spec", "resource-spec", 0, "FILE", spec, "CTest resource-spec JSON: the devices and their slots"),
  STR("token-key", "token-key", 0, "PATH", token_key, "device-token key path (default /tmp/kiln-tokens-<backend>; env KILN_TOKEN_KEY)"),
  SET("leaks", 0, "P", "fail (a leak fails the test) or warn"),
  {"tolerance", "tolerance", 0, "G=A:R", KCLI__TOLERANCE, NULL, 0, 0, 0, "atol A, rtol R for checks matching glob G (repeatable)"},
  STR("junit", "junit", 0, "FILE", junit, "also write JUnit XML to FILE (default $XML_OUTPUT_FILE when set)"),
  STR("shard", "shard", 0, "K/N", shard, "run shard K of N (1-based; else Bazel/Slurm array env)"),
  STR("shard-durations", "shard-durations", 0, "REPORT", shard_durations, "balance shards by this report's times"),
  STR("shard-plan", "shard-plan", 0, "FILE", shard_plan, "run this shard's tests of a plan (kiln slurm writes them)"),
  STR("runner-dir", "runner-dir", 0, "DIR", runner_dir, "where kiln-runner-<backend> lives (env KILN_RUNNER_DIR)"),
  STR("runner", "runner", 0, "PATH", runner, "a kiln runner a project built against the installed kiln: its tests, its backend"),
  LIST("gtest", "PATH", gtest, "a GoogleTest binary: each of its tests in its own process (repeatable)"),
  LIST("manifest", "FILE", manifest, "a YAML manifest of tests that are commands (repeatable)"),
  LIST("pytest", "PATH", pytest, "a pytest suite (a folder or file): each node id in its own process (repeatable; replaces a config's pytest:; python: $KILN_PYTHON, else python3)"),
  SET("zygote", 0, "B", "pytest: fork each test from a process that imported the suite's dependencies once (default true; false: a fresh interpreter each)"),
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

#define RUN_OPTS "jobs backend config report out timeout grace retries repeat " \
  "isolation wrap warm allow-empty contain poison sanitize seed cap slots slots-from "  \
  "resource-spec token-key leaks tolerance junit shard shard-durations shard-plan "     \
  "runner-dir runner gtest manifest pytest zygote verbose"

#define SLURM_OPTS "slurm-out partition account time merge-time gpus-per-task tasks " \
  "sbatch dry-run no-wait resume follow merge poll base report junit shard-durations " \
  "jobs backend config timeout grace retries repeat isolation wrap warm allow-empty "   \
  "contain poison sanitize seed cap slots slots-from token-key leaks tolerance runner-dir " \
  "runner gtest manifest pytest zygote verbose"

static const char exit_run[] =
  "Exit status: 0 all passed (skips and flaky allowed), 1 a test did not\n"
  "pass, 2 usage or config error, 3 infrastructure error, 130 interrupted.\n"
  "Flags override the config. See docs/harness.md.\n";
static const char exit_tool[] =
  "Exit status: 0 done, 2 usage error or inputs that do not belong together,\n"
  "3 a file could not be written. See docs/reports.md.\n";

const kcli__cmd kcli__cmds[] = {
  {"run", "[--] [SELECTOR...]", "run tests, each in its own child process",
   "Runs every selected GPU test in its own child process (a fresh engine\n"
   "context each), scheduled onto devices through host-wide device tokens,\n"
   "and writes a YAML report into the run folder.\n"
   "\n"
   "Selectors: SUITE, SUITE/TEST, globs (softmax/sizes_*), @TAG; a leading\n"
   "'-' excludes (-@slow, -softmax/causal). Tests tagged `fault`, `bench` or\n"
   "`perf` run only when named (@fault, @perf, their suite or id); on the host\n"
   "backend, tests tagged `slow` (GPU-sized) run only through @slow or their\n"
   "id. No selector: every other test (or the config's selection).\n"
   "\n"
   "A run that tested nothing (its backend was asked for and has no device,\n"
   "or every selected test was skipped) exits 3 unless --allow-empty. What a\n"
   "test leaves running is found, killed and reported (--contain).\n"
   "The tests are kiln's own suites, unless --runner, --gtest, --manifest or\n"
   "--pytest (or a config's or manifest's pytest:) name others\n"
   "(docs/third-party.md): a runner built against the installed kiln,\n"
   "GoogleTest binaries (test ids as GoogleTest spells them, Suite.Name),\n"
   "commands (pass: exit 0, skip: exit 77), pytest suites (ids the node ids,\n"
   "path/test_x.py::test_y[param]; a test's needs from its mark\n"
   "@pytest.mark.kiln(slots=N|'all', gpus=N, gpu=False, timeout=S)).",
   RUN_OPTS, 0, -1, 1, kcli__run, exit_run},
  {"list", "[SELECTOR...]", "what `kiln run` would run",
   "Lists exactly the tests `kiln run` with the same options and selectors\n"
   "runs (the same backend, selection and shard): id, tags, slots, and\n"
   "whether they need a device; --format json gives them to tools (the\n"
   "format is versioned, docs/harness.md). Options that do not change what\n"
   "runs (--jobs, --junit, ...) are taken and have no effect.",
   RUN_OPTS " format", 0, -1, 1, kcli__list,
   "Exit status: 0, 2 usage or config error, 3 no runner.\n"},
  {"devices", "", "devices, their slots and who holds them",
   "Asks the runner for its devices and shows each with its slots in the\n"
   "host-wide token set (total, free) and the processes holding them.",
   "backend config slots resource-spec token-key runner-dir runner", 0, 0, 0, kcli__devices,
   "Exit status: 0, 2 usage or config error, 3 no runner or no token set.\n"},
  {"report show", "FILE|RUNDIR", "a readable summary of a report",
   "Counts, then every test that did not pass with its message, failing\n"
   "checks (worst element) and log.", "", 1, 1, 0, kcli__report_show,
   "Exit status: 0, 2 the report does not read.\n"},
  {"report rebuild", "RUNDIR", "report.yaml from a run's journal",
   "Rebuilds RUNDIR/report.yaml from RUNDIR/journal, after a kiln that was\n"
   "killed (the report then says interrupted: true).", "report", 1, 1, 0,
   kcli__report_rebuild, "Exit status: 0, 2 no journal, 3 a file could not be written.\n"},
  {"report junit", "REPORT|RUNDIR", "JUnit XML of a report",
   "JUnit XML (the Jenkins/Surefire variant) of a report.", "out-file", 1, 1, 0,
   kcli__report_junit, exit_tool},
  {"report diff", "BASE NEW", "what regressed from one report to another",
   "Compares two reports test by test: newly failing or flaky tests (and in\n"
   "which repeats), errors that grew, and speed: a test's body, a kernel or a\n"
   "throughput metric counts as slower only when its change is outside the\n"
   "noise measured for it (its repeats' spread, the spread of every figure's\n"
   "change, earlier nights given with --history) with --confidence, and past\n"
   "both thresholds; each finding says by how much and how sure.",
   "yaml time-rel test-abs-ms kernel-abs-ms drift metric-rel confidence history", 2, 2, 0,
   kcli__report_diff,
   "Exit status: 0 no regression, 1 a regression, 2 usage error, 3 a file\n"
   "could not be written. See docs/reports.md.\n"},
  {"report merge", "REPORT...", "one report from shards",
   "Merges the reports of a sharded run (or of different selections) into\n"
   "one: every test record whole, the summary recounted.", "out-file force", 1, -1, 0,
   kcli__report_merge,
   "Refuses (exit 2) reports of different revisions (unless --force),\n"
   "overlapping reports, and shards missing, doubled or short of tests.\n"},
  {"report html", "REPORT|RUNDIR", "a self-contained HTML page of a report",
   "One HTML file: summary, plots (time per suite, error/tolerance per\n"
   "check, trends over --history) and a filterable table of tests.",
   "html-out history", 1, 1, 0, kcli__report_html, exit_tool},
  {"slurm", "[--] [SELECTOR...]", "run the selection across a Slurm cluster",
   "Runs what `kiln run` would run, across a Slurm cluster. The selection is\n"
   "cut into shards here (balanced by the times of the newest earlier run\n"
   "beside the run folder, else by hashing test ids) and written down as a\n"
   "plan; one array job runs a shard per task, each task asking for its GPUs\n"
   "through GRES and running `kiln run` on exactly the GPUs Slurm gave it;\n"
   "one dependent job merges the shards into RUN/report.yaml and writes\n"
   "junit.xml, report.html, the diff against the last good run and status.\n"
   "kiln slurm follows the jobs with a progress line and exits with the\n"
   "merged run's status. A task that dies leaves its tests lost, with its\n"
   "Slurm state and node; `kiln slurm --resume RUN` runs just those again.\n"
   "Other options are `kiln run`'s, passed to every task.",
   SLURM_OPTS, 0, -1, 1, kcli__slurm,
   "Exit status: 0 the run passed (or --no-wait, --dry-run), 1 a test failed or\n"
   "was lost or the diff found a regression, 2 usage error, 3 Slurm or a file\n"
   "failed, 130 interrupted (the jobs go on). See docs/scale.md.\n"},
  {"bench", "", "kiln's speed: the ceiling, kiln, and its cost per test",
   "Measures kiln's speed against the ceiling, side by side, and writes\n"
   "DIR/bench.yaml plus the `kiln run` reports it made:\n"
   "  ceiling  N processes that only open and close an engine context\n"
   "           (kiln-runner-B --context-probe), c at a time, for each c in\n"
   "           LIST: tests/s = N / wall. The ceiling is the best c.\n"
   "  kiln     kiln run --repeat N --jobs c --slots c -- bench/trivial for\n"
   "           each c, and with --warm 0 (kiln_cold)\n"
   "  none     the same N tests in one process (--isolation none)\n"
   "  host     kiln run --backend host --jobs 2 --repeat N bench/noop: CPU\n"
   "           ms per test of the whole kiln process tree, and tests/s;\n"
   "           the runner alone on the same test, 2 at a time, in turns\n"
   "           with kiln, 3 rounds each (the summary takes each one's\n"
   "           least CPU), and the ratio; kiln's own peak RSS at two test\n"
   "           counts\n"
   "Every child sees one device (the first), as `kiln run` narrows it.\n"
   "--contain M is passed to every `kiln run`: the host figures with each\n"
   "way of finding what tests leave running show what it costs per test.",
   "backend tests concurrency host-tests rss-tests bench-out skip contain runner-dir", 0, 0, 0,
   kcli__bench,
   "Targets (PASS/MISS in the summary): kiln's best >= 90% of the ceiling;\n"
   "host: kiln's CPU per test <= 1.3x the runner's alone, its tests/s with\n"
   "2 jobs >= 2x the harness's before it was rebuilt (docs/performance.md);\n"
   "kiln's peak RSS within 2 MiB from the first RSS run to the second.\n"
   "Exit status: 0 every point measured (a MISS is not an error), 2 usage\n"
   "error, 3 a point could not be measured. See docs/performance.md.\n"},
  {"bisect", "TEST [--] [SELECTOR...]", "the earlier tests that make TEST fail in a shared process",
   "For a test that passes alone but fails after other tests in one shared\n"
   "process (--isolation none): runs it after subsets of the tests that come\n"
   "before it (those the selectors choose, default every test kiln run would\n"
   "take), by delta debugging, until a smallest set is left whose every test\n"
   "is needed for the failure, and prints the command that reproduces it.\n"
   "Each trial is a kiln run with its report in DIR/trial-N; all use one seed.",
   "backend config out timeout poison seed cap tolerance wrap token-key runner-dir verbose",
   1, -1, 1, kcli__bisect,
   "Exit status: 0 a set was found, 1 TEST fails alone, passes after every\n"
   "earlier test, or the shared process ends before it, 2 usage error, 3\n"
   "infrastructure error. See docs/harness.md.\n"},
  {"help", "[COMMAND]", "this overview, or a command's help", NULL, "", 0, 2, 0,
   kcli__help_cmd, NULL},
  /* Not for people (no summary: not in `kiln help`): the process `kiln run`
   * starts to end its tests' processes should kiln die (run/guard.c). */
  {"guard", "PID [CGROUP|-] [JOURNAL]", NULL,
   "Started by `kiln run`: waits on its stdin for the run to end; if kiln\n"
   "(PID) dies instead, kills every process of its tests (and of CGROUP),\n"
   "and lists what it killed in JOURNAL.",
   "", 1, 3, 0, kcli__guard, NULL},
  {NULL, NULL, NULL, NULL, NULL, 0, 0, 0, NULL, NULL},
};

const kcli__opt *kcli__opt_by_id(const char *id) {
  for (const kcli__opt *o = kcli__opts; o->id; o++)
    if (strcmp(o->id, id) == 0) return o;
  return NULL;
}

const kcli__cmd *kcli__cmd_find(const char *name) {
  for (const kcli__cmd *c = kcli__cmds; c->name; c++)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

int kcli__takes(const kcli__cmd *c, const char *id) {
  size_t n = strlen(id);
  for (const char *p = c->opts; *p;) {
    size_t len = strcspn(p, " ");
    if (len == n && strncmp(p, id, n) == 0) return 1;
    p += len + (p[len] == ' ');
  }
  return 0;
}
