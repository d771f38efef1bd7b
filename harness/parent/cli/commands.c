/* The command table and the dispatch: every subcommand of kiln, each
 * described once (its words, its summary and help, the options it takes by
 * id from options.c, its function), and kcli_main, which finds the command
 * in argv, has parse.c read its words and calls it. The top of the cli
 * room: the commands and the parser never call back here.
 */
#include "cli-impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln-config.h"
#include "protocol.h"

#define RUN_OPTS "jobs backend config report out timeout grace retries repeat " \
  "isolation wrap warm allow-empty contain poison sanitize seed cap slots slots-from "  \
  "resource-spec token-key leaks tolerance junit shard shard-durations shard-plan "     \
  "durations runner-dir runner sources verbose"

#define SLURM_OPTS "slurm-out partition account time merge-time gpus-per-task tasks " \
  "sbatch dry-run no-wait resume follow merge poll base report junit shard-durations " \
  "jobs backend config timeout grace retries repeat isolation wrap warm allow-empty "   \
  "contain poison sanitize seed cap slots slots-from token-key leaks tolerance runner-dir " \
  "runner sources verbose"

static const char exit_run[] =
  "Exit status: 0 all passed (skips and flaky allowed), 1 a test did not\n"
  "pass, 2 usage or config error, 3 infrastructure error, 130 interrupted.\n"
  "Flags override the config. See docs/harness.md and docs/cli.md.\n";
static const char exit_tool[] =
  "Exit status: 0 done, 2 usage error or inputs that do not belong together,\n"
  "3 a file could not be written. See docs/reports.md.\n";

static const kcli__cmd kcli__cmds[] = {
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
   "The tests are kiln's own suites, unless --runner (a runner built against\n"
   "the installed kiln) or the options of other sources of tests below (or a\n"
   "config's keys of the same names) name others: docs/third-party.md says\n"
   "what each runs, how its test ids read and how a test says what it needs.",
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
   "2 jobs >= 2x the harness's before it was rebuilt (docs/measuring.md);\n"
   "kiln's peak RSS within 2 MiB from the first RSS run to the second.\n"
   "Exit status: 0 every point measured (a MISS is not an error), 2 usage\n"
   "error, 3 a point could not be measured. See docs/measuring.md.\n"},
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

static const kcli__cmd *cmd_find(const char *name) {
  for (const kcli__cmd *c = kcli__cmds; c->name; c++)
    if (strcmp(c->name, name) == 0) return c;
  return NULL;
}

/* ---- Dispatch ------------------------------------------------------------------------ */

static int is_group(const char *w) {
  size_t n = strlen(w);
  for (const kcli__cmd *c = kcli__cmds; c->name; c++)
    if (strncmp(c->name, w, n) == 0 && c->name[n] == ' ') return 1;
  return 0;
}

/* The command argv names, and where its words start. */
static const kcli__cmd *command(int argc, char **argv, int *first) {
  if (argc > 2) {
    char two[128];
    snprintf(two, sizeof two, "%s %s", argv[1], argv[2]);
    const kcli__cmd *c = cmd_find(two);
    if (c) return *first = 3, c;
  }
  *first = 2;
  return is_group(argv[1]) ? NULL : cmd_find(argv[1]);
}

int kcli_main(int argc, char **argv) {
  /* Every runner kiln starts checks that it speaks this protocol. */
  char protocol[16];
  snprintf(protocol, sizeof protocol, "%d", KP_VERSION);
  setenv("KILN_PROTOCOL", protocol, 1);
  if (argc < 2) {
    kcli__overview(kcli__cmds, NULL, stderr);
    return KH_EXIT_USAGE;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    kcli__overview(kcli__cmds, NULL, stdout);
    return KH_EXIT_OK;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("kiln %s (report format %d, runner protocol %d)\n", KILN_VERSION, KREP_FORMAT,
           KP_VERSION);
    return KH_EXIT_OK;
  }
  int first;
  const kcli__cmd *c = command(argc, argv, &first);
  if (!c && is_group(argv[1])) {
    int help = argc > 2 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0);
    if (!help)
      fprintf(stderr, "kiln %s: %s '%s'\n", argv[1], argc > 2 ? "unknown command" : "needs a command",
              argc > 2 ? argv[2] : "");
    kcli__overview(kcli__cmds, argv[1], help ? stdout : stderr);
    return help ? KH_EXIT_OK : KH_EXIT_USAGE;
  }
  if (!c) {
    fprintf(stderr, "kiln: unknown command '%s' (`kiln help` lists them)\n", argv[1]);
    return KH_EXIT_USAGE;
  }
  kcli__args a;
  int help = 0;
  int rc = kcli__parse(&a, c, argc, argv, first, &help);
  if (rc == 0 && help) kcli__help(c, stdout);
  else if (rc == 0) rc = c->fn(&a);
  kcli__args_free(&a);
  return rc;
}

int kcli__help_cmd(kcli__args *a) {
  if (a->npos == 0) {
    kcli__overview(kcli__cmds, NULL, stdout);
    return KH_EXIT_OK;
  }
  char name[128];
  snprintf(name, sizeof name, "%s%s%s", a->pos[0], a->npos > 1 ? " " : "",
           a->npos > 1 ? a->pos[1] : "");
  const kcli__cmd *c = cmd_find(name);
  if (c) {
    kcli__help(c, stdout);
    return KH_EXIT_OK;
  }
  if (a->npos == 1 && is_group(name)) {
    kcli__overview(kcli__cmds, name, stdout);
    return KH_EXIT_OK;
  }
  return kcli__usage_error(a->cmd, "no command '%s' (`kiln help` lists them)", name);
}
