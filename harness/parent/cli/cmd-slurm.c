/* `kiln slurm`: the selection and options of `kiln run`, cut into a plan of
 * shards on this machine (balanced by the times of an earlier report when
 * there is one), then run as one Slurm array job by the Slurm room; or one
 * of its other modes on an existing run folder: --follow, --resume, and
 * --merge (what the merge job runs).
 */
#include "cli-impl.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "slurm.h"

/* Where runs go without --out, and how many tasks without --tasks. */
#define ROOT "reports/slurm"
#define TASKS 4
#define POLL_S 10.0

/* The `kiln run` options each task is given as they were given here;
 * --out, --shard-plan, --runner-dir and --seed kiln slurm sets itself.
 * The tests' sources (--runner, every source's own options) go to every
 * task, so the tasks list the same tests the plan was made from. */
static const char task_opts[] = "jobs backend config timeout grace retries repeat "
                                "isolation wrap warm allow-empty contain poison sanitize "
                                "cap slots slots-from token-key leaks tolerance verbose "
                                "runner sources";
/* Options whose value is a path (and the sources' paths): absolute for
 * the tasks, which start in the same folder but may see a relative path
 * through another link. */
static const char path_opts[] = "runner slots-from";

static char *absolute(const char *p) {
  char cwd[PATH_MAX];
  if (!p || p[0] == '/' || !getcwd(cwd, sizeof cwd)) return kh_strdup(p);
  return kh_asprintf("%s/%s", cwd, p);
}

static void push(char ***v, int *n, char *s) {
  *v = kh_xrealloc(*v, (size_t)(*n + 1) * sizeof **v);
  (*v)[(*n)++] = s;
}

static void task_args(const kcli__args *a, const char *config_path, char ***v, int *n) {
  kcli__cmd opts = {.opts = task_opts};
  for (int i = 0; i < a->ngiven; i++) {
    const kcli__given *g = &a->given[i];
    if (!kcli__takes(&opts, g->o->id)) continue;
    push(v, n, kh_asprintf("--%s", g->o->name));
    if (!g->o->arg) continue;
    kcli__cmd paths = {.opts = path_opts};
    /* The config as this kiln found it (a profile name, a relative path). */
    if (strcmp(g->o->id, "config") == 0 && config_path) push(v, n, absolute(config_path));
    else if (kcli__takes(&paths, g->o->id) || kcli__is_path(g->o)) push(v, n, absolute(g->val));
    else push(v, n, kh_strdup(g->val));
  }
}

/* The run seed of every task of every round: --seed, else the one the
 * diff's base ran with (so that an unchanged revision draws the same
 * inputs as its base and its error figures compare), else a new one. A
 * resume reruns its tests with the seed of their first round. */
static unsigned long long run_seed(const krun_settings *s, const char *base, const char *root,
                                   const char *run) {
  if (krun_setting_is_set(s, "seed")) return s->seed;
  char *found = base ? kh_strdup(base) : ksl_run_newest(root, run, 1);
  unsigned long long seed;
  int have = found && ksl_run_seed(found, &seed) == 0;
  free(found);
  if (have) return seed;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  seed = ((unsigned long long)ts.tv_sec * 1000000007ull) ^ (unsigned long long)ts.tv_nsec ^
         ((unsigned long long)getpid() << 32);
  return seed;
}

/* The earlier report the plan is balanced by: --shard-durations, else the
 * newest run's under the root, if it reads. */
static char *durations(const kcli__args *a, const char *run, const char *root) {
  if (a->shard_durations) return absolute(a->shard_durations);
  char *found = ksl_run_newest(root, run, 0);
  krep_report rep;
  kh_err err;
  if (found && krep_read(found, &rep, &err) != 0) {
    fprintf(stderr, "kiln slurm: warning: not balancing by %s: %s\n", found, err.msg);
    free(found);
    found = NULL;
  }
  if (found) krep_free(&rep);
  return found;
}

static int submit(kcli__args *a, const ksl_sbatch *sb, const ksl_wait *w) {
  krun_settings s;
  char *config_path = NULL;
  if (kcli__settings(a, &s, &config_path) != 0) return krun_settings_free(&s), KH_EXIT_USAGE;
  char *runner = kcli__any_runner(a, &s);
  if (!runner) return krun_settings_free(&s), free(config_path), KH_EXIT_INFRA;
  char **sel;
  int nsel;
  kcli__selectors(a, &s, &sel, &nsel);
  krun_registry reg;
  unsigned char *chosen = NULL;
  int rc = kcli__select(a, &s, runner, sel, nsel, s.backend == KRUN_BACKEND_HOST, &reg, &chosen);
  int nchosen = 0;
  for (int i = 0; rc == 0 && i < reg.n; i++) nchosen += chosen[i];
  if (rc == 0 && nchosen == 0) {
    fprintf(stderr, "kiln slurm: the selection holds no test\n");
    rc = KH_EXIT_USAGE;
  }
  char *run = a->out ? absolute(a->out) : NULL;
  if (!run) {
    char *root = absolute(ROOT);
    run = ksl_run_dir_new(root);
    free(root);
  }
  char *copy = kh_strdup(run), *root = kh_strdup(dirname(copy));
  char *dur = rc == 0 ? durations(a, run, root) : NULL;
  krun_plan plan = {0};
  kh_err err;
  int tasks = a->tasks ? a->tasks : TASKS;
  if (rc == 0 && krun_plan_make(&reg, chosen, tasks < nchosen ? tasks : nchosen, dur,
                                s.repeat, &plan, &err) != 0) {
    fprintf(stderr, "kiln slurm: %s\n", err.msg);
    rc = KH_EXIT_USAGE;
  }
  char **args = NULL;
  int nargs = 0;
  task_args(a, config_path, &args, &nargs);
  char *runner_dir = a->runner_dir ? absolute(a->runner_dir) : kh_strdup(dirname(runner));
  char *base = absolute(a->base), *report = absolute(a->report), *junit = absolute(a->junit);
  push(&args, &nargs, kh_strdup("--seed"));
  push(&args, &nargs, kh_asprintf("%llu", run_seed(&s, base, root, run)));
  if (rc == 0) {
    ksl_job job = {run, &plan, args, nargs, sel, nsel, runner_dir, base, report, junit, *sb};
    rc = ksl_submit(&job, w);
  }
  for (int i = 0; i < nargs; i++) free(args[i]);
  free(args), free(runner_dir), free(base), free(report), free(junit);
  krun_plan_free(&plan);
  free(dur), free(copy), free(root), free(run);
  free(chosen), free(runner), free(config_path);
  krun_registry_free(&reg);
  krun_settings_free(&s);
  return rc;
}

int kcli__slurm(kcli__args *a) {
  int modes = !!a->resume + !!a->follow + !!a->merge;
  if (modes > 1)
    return kcli__usage_error(a->cmd, "--resume, --follow and --merge each name a run: "
                             "give one of them");
  if (modes && a->npos)
    return kcli__usage_error(a->cmd, "%s RUN takes no selectors (the run has its own)",
                             a->resume ? "--resume" : a->follow ? "--follow" : "--merge");
  double poll = a->poll_s > 0 ? a->poll_s : POLL_S;
  if (a->merge) return ksl_merge(a->merge);
  if (a->follow) return ksl_follow(a->follow, poll);
  ksl_sbatch sb = {a->partition, a->account, a->time, a->merge_time, a->gpus,
                   a->sbatch.v, a->sbatch.n};
  ksl_wait w = {a->dry_run, a->no_wait, poll};
  if (a->resume) return ksl_resume(a->resume, a->tasks, &sb, &w);
  /* GPUs per task unless told otherwise: the point of GRES. */
  int given = 0;
  for (int i = 0; i < a->ngiven; i++) given |= strcmp(a->given[i].o->id, "gpus-per-task") == 0;
  if (!given) sb.gpus = 1;
  return submit(a, &sb, &w);
}
