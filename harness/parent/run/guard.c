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

#include <dirent.h>
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

/* Kills every process whose environment holds mark; returns how many. */
static int kill_marked(const char *mark, size_t len) {
  int n = 0;
  DIR *d = opendir("/proc");
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    long long pid;
    if (kh_parse_ll(e->d_name, 1, 1 << 30, &pid) != 0 || pid == (long long)getpid()) continue;
    char path[64], *env = NULL;
    size_t elen = 0;
    snprintf(path, sizeof path, "/proc/%lld/environ", pid);
    if (kh_read_file(path, 1 << 22, &env, &elen) != 0) continue;
    for (size_t off = 0; off < elen; off += strlen(env + off) + 1)
      if (strncmp(env + off, mark, len) == 0 && kill((pid_t)pid, SIGKILL) == 0) {
        n++;
        break;
      }
    free(env);
  }
  if (d) closedir(d);
  return n;
}

/* Kills everything in cg and the cgroups under it, then removes them. */
static int kill_cgroup(const char *cg, int depth) {
  char path[PATH_MAX + 32], *text = NULL;
  int n = 0;
  snprintf(path, sizeof path, "%s/cgroup.procs", cg);
  if (kh_read_file(path, 1 << 20, &text, NULL) == 0) {
    for (char *p = text; *p;) {
      char *end;
      long v = strtol(p, &end, 10);
      if (end == p) break;
      n += kill((pid_t)v, SIGKILL) == 0;
      p = end;
    }
    free(text);
  }
  DIR *d = depth < 4 ? opendir(cg) : NULL;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", cg, e->d_name);
    n += kill_cgroup(path, depth + 1);
    rmdir(path);
  }
  if (d) closedir(d);
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
    if (cgroup) killed += kill_cgroup(cgroup, 0);
    if (!killed) break;
    usleep(10000);
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
  }
  if (cgroup) {
    kill_cgroup(cgroup, 0);
    rmdir(cgroup);
  }
  return 0;
}
