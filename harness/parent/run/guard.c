/* The guard: a small process `kiln run` starts before its first test, which
 * outlives kiln only to end the run's processes when kiln dies. Runners
 * die with kiln (PR_SET_PDEATHSIG), but what a runner started does not: a
 * test's helper would be orphaned to init and run on. The guard is `kiln
 * guard PID [CGROUP]` in a session of its own (no signal aimed at kiln's
 * process group or terminal reaches it), reading its stdin: kiln writes
 * "done" there when it finishes; end of file without it means kiln died,
 * and the guard kills every process whose environment carries this kiln's
 * KILN_JOB=<pid>. mark, and everything in the run's cgroup, then exits.
 * (A kiln killed together with its guard, say by a kill of every process
 * of the user, leaves this to a cgroup-aware supervisor.)
 */
#include "run-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 100

/* ---- In kiln ------------------------------------------------------------------------ */

void krun__guard_start(krun__run *R) {
  R->guard_fd = -1;
  if (R->ct.mode == KRUN_CONTAIN_NONE) return;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  int p[2];
  if (n <= 0 || pipe2(p, O_CLOEXEC) != 0) return;
  exe[n] = '\0';
  char pid[32];
  snprintf(pid, sizeof pid, "%ld", (long)R->ct.self);
  char *argv[] = {exe, "guard", pid, R->ct.run_cg[0] ? R->ct.run_cg : NULL, NULL};
  krun_spawn_req req = {.argv = argv, .fd_in = p[0], .fd_out = -1, .fd_err = -1,
                        .fd_result = -1, .new_session = 1, .cgroup_procs = -1};
  int exec_errno = 0;
  if (krun_spawn(&req, &R->guard_pid, &exec_errno) != 0 || exec_errno) {
    krun__console_note(&R->con, "kiln: warning: no guard process (%s): if kiln is killed, "
                       "processes its tests started may outlive it",
                       strerror(exec_errno ? exec_errno : errno));
    close(p[1]);
    R->guard_pid = 0;
  } else {
    R->guard_fd = p[1];
  }
  close(p[0]);
}

void krun__guard_stop(krun__run *R) {
  if (R->guard_fd < 0) return;
  (void)kh_write_all(R->guard_fd, "done\n", 5);
  close(R->guard_fd);
  R->guard_fd = -1;
  while (R->guard_pid > 0 && waitpid(R->guard_pid, NULL, 0) < 0 && errno == EINTR) {
  }
  R->guard_pid = 0;
}

/* ---- The guard itself ------------------------------------------------------------------ */

typedef struct marked {
  const char *mark;
  size_t len;
  pid_t pid;                /* the process being looked at */
  int n;                    /* killed */
} marked;

static int has_mark(const char *var, void *arg) {
  marked *m = arg;
  if (strncmp(var, m->mark, m->len) != 0) return 0;
  m->n += kill(m->pid, SIGKILL) == 0;
  return 1;
}

static int kill_if_marked(pid_t pid, void *arg) {
  marked *m = arg;
  if (pid == getpid()) return 0;
  m->pid = pid;
  (void)krun__environ_each(pid, has_mark, m);
  return 0;
}

/* Kills every process whose environment holds mark; returns how many. */
static int kill_marked(const char *mark, size_t len) {
  marked m = {mark, len, 0, 0};
  krun__procs_each(kill_if_marked, &m);
  return m.n;
}

static int kill_one(pid_t pid, void *arg) {
  *(int *)arg += kill(pid, SIGKILL) == 0;
  return 0;
}

/* Kills everything in cg and the cgroups under it, then removes them. */
static int kill_cgroup(const char *cg) {
  int n = 0;
  krun__cgroup_each(cg, 1, kill_one, &n);
  return n;
}

int krun_guard(long kiln, const char *cgroup) {
  signal(SIGINT, SIG_IGN), signal(SIGTERM, SIG_IGN), signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  /* The last five bytes read: kiln ends with "done\n". */
  char buf[64], tail[5] = {0};
  ssize_t n;
  while ((n = kh_read(STDIN_FILENO, buf, sizeof buf)) > 0)
    for (ssize_t i = 0; i < n; i++) {
      memmove(tail, tail + 1, 4);
      tail[4] = buf[i];
    }
  if (memcmp(tail, "done\n", 5) == 0) return 0;
  /* kiln is gone: its runners died with it; now whatever they started. */
  char mark[64];
  int mlen = snprintf(mark, sizeof mark, "KILN_JOB=%ld.", kiln);
  for (int round = 0; round < ROUNDS; round++) {
    int killed = kill_marked(mark, (size_t)mlen);
    if (cgroup) killed += kill_cgroup(cgroup);
    if (!killed) break;
    usleep(10000);
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
  }
  if (cgroup) {
    kill_cgroup(cgroup);
    rmdir(cgroup);
  }
  return 0;
}
