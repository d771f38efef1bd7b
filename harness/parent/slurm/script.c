/* The job scripts of a round and the sbatch command lines that submit them.
 * Each script is plain bash with #SBATCH lines a person can read, rerun or
 * copy (--dry-run prints them): the array script runs `kiln run` on one
 * shard of the round's plan per task, the merge script `kiln slurm
 * --merge`. Extra sbatch arguments go on the command line, after the
 * script's lines, so they win over them (sbatch's own rule).
 */
#include "slurm-impl.h"

#include <stdlib.h>
#include <string.h>

void ksl__quote(kh_buf *b, const char *s) {
  /* A word of letters, digits and the safe punctuation needs no quotes. */
  if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                      "0123456789_-./=:,@+%") == strlen(s)) {
    kh_buf_addf(b, "%s", s);
    return;
  }
  kh_buf_add(b, "'", 1);
  for (const char *p = s; *p; p++) {
    if (*p == '\'') kh_buf_addf(b, "'\\''");
    else kh_buf_add(b, p, 1);
  }
  kh_buf_add(b, "'", 1);
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash && slash[1] ? slash + 1 : path;
}

/* The #SBATCH lines every job of the run shares. */
static void common(kh_buf *b, const ksl__state *st, const char *time) {
  if (st->sb.partition) kh_buf_addf(b, "#SBATCH --partition=%s\n", st->sb.partition);
  if (st->sb.account) kh_buf_addf(b, "#SBATCH --account=%s\n", st->sb.account);
  if (time) kh_buf_addf(b, "#SBATCH --time=%s\n", time);
}

static void words(kh_buf *b, char *const *v, int n) {
  for (int i = 0; i < n; i++) {
    kh_buf_add(b, " ", 1);
    ksl__quote(b, v[i]);
  }
}

void ksl__array_script(const ksl__state *st, const ksl__round *r, kh_buf *b) {
  kh_buf_addf(b, "#!/bin/bash\n"
                 "# kiln slurm, run %s, round %d: array task i runs shard i+1 of %d of\n"
                 "# slurm/plan-%d into shards/%d-<shard>/. Written by `kiln slurm`.\n",
              st->run, r->n, r->tasks, r->n, r->n);
  kh_buf_addf(b, "#SBATCH --job-name=kiln-%s\n", base_name(st->run));
  kh_buf_addf(b, "#SBATCH --array=0-%d\n", r->tasks - 1);
  kh_buf_addf(b, "#SBATCH --output=%s/slurm/array-%d-%%a.out\n", st->run, r->n);
  if (st->sb.gpus > 0) kh_buf_addf(b, "#SBATCH --gres=gpu:%d\n", st->sb.gpus);
  common(b, st, st->sb.time);
  kh_buf_addf(b, "cd ");
  ksl__quote(b, st->cwd);
  kh_buf_addf(b, " || exit 3\ndir=");
  ksl__quote(b, st->run);
  kh_buf_addf(b, "/shards/%d-$((SLURM_ARRAY_TASK_ID + 1))\n"
                 "mkdir -p \"$dir\" || exit 3\n"
                 "# Where this task runs, for the merge should the task die.\n"
                 "echo \"task job=${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID} "
                 "node=${SLURMD_NODENAME:-$(hostname -s)} gpus=${SLURM_JOB_GPUS:-}\" "
                 ">\"$dir/task\"\n"
                 "# kiln's host backend emulates GPUs (KILN_EMU_DEVICES, default 1): as\n"
                 "# many as the highest GPU number Slurm gave, so that the number names\n"
                 "# an emulated device. Ignored by the GPU backends.\n"
                 "if [ -z \"${KILN_EMU_DEVICES:-}\" ] && [ -n \"${SLURM_JOB_GPUS:-}\" ]; then\n"
                 "  n=0\n"
                 "  for g in ${SLURM_JOB_GPUS//,/ }; do [ \"$g\" -ge \"$n\" ] 2>/dev/null && n=$((g + 1)); done\n"
                 "  export KILN_EMU_DEVICES=$n\n"
                 "fi\n"
                 "exec ", r->n);
  ksl__quote(b, st->kiln);
  kh_buf_addf(b, " run --out \"$dir\" --shard-plan ");
  char *plan = ksl__path(st->run, "slurm/plan-%d", r->n);
  ksl__quote(b, plan);
  free(plan);
  if (st->runner_dir) {
    kh_buf_addf(b, " --runner-dir ");
    ksl__quote(b, st->runner_dir);
  }
  words(b, st->args, st->nargs);
  kh_buf_addf(b, " --");
  words(b, st->selectors, st->nselectors);
  kh_buf_addf(b, "\n");
}

void ksl__merge_script(const ksl__state *st, const ksl__round *r, kh_buf *b) {
  kh_buf_addf(b, "#!/bin/bash\n"
                 "# kiln slurm, run %s, round %d: the merge. Submitted with\n"
                 "# --dependency=afterany:<the round's array job>, so it starts once every\n"
                 "# task has ended, however it ended. Written by `kiln slurm`.\n",
              st->run, r->n);
  kh_buf_addf(b, "#SBATCH --job-name=kiln-merge-%s\n", base_name(st->run));
  kh_buf_addf(b, "#SBATCH --output=%s/slurm/merge-%d.out\n", st->run, r->n);
  common(b, st, st->sb.merge_time);
  kh_buf_addf(b, "cd ");
  ksl__quote(b, st->cwd);
  kh_buf_addf(b, " || exit 3\n");
  ksl__quote(b, st->kiln);
  kh_buf_addf(b, " slurm --merge ");
  ksl__quote(b, st->run);
  kh_buf_addf(b, "\nrc=$?\n"
                 "# 1 is the run's verdict (a test failed or was lost, or a regression),\n"
                 "# written to RUN/status: the merge job itself did its work.\n"
                 "[ $rc -eq 1 ] && exit 0\n"
                 "exit $rc\n");
}

char **ksl__sbatch_argv(const ksl__state *st, const char *script, long long dependency) {
  char **v = kh_xcalloc((size_t)st->sb.nextra + 8, sizeof *v);
  int n = 0;
  v[n++] = kh_strdup("sbatch");
  v[n++] = kh_strdup("--parsable");
  if (dependency) {
    v[n++] = dependency > 0 ? kh_asprintf("--dependency=afterany:%lld", dependency)
                            : kh_strdup("--dependency=afterany:<array job>");
    /* A dependency that can never be met ends the job instead of leaving it
     * pending; kiln slurm then merges by itself. */
    v[n++] = kh_strdup("--kill-on-invalid-dep=yes");
  }
  for (int i = 0; i < st->sb.nextra; i++) v[n++] = kh_strdup(st->sb.extra[i]);
  v[n++] = kh_strdup(script);
  return v;
}
