/* The guard: a small process `kiln run` starts before its first test, which
 * outlives kiln only to end the run's processes when kiln dies. Runners
 * die with kiln (PR_SET_PDEATHSIG), but what a runner started does not: a
 * test's helper would be orphaned to init and run on. The guard is `kiln
 * guard PID [CGROUP]` in a session of its own (no signal aimed at kiln's
 * process group or terminal reaches it), reading its stdin: kiln writes
 * "done" there when it finishes; end of file without it means kiln died,
 * and the guard kills every process whose environment carries this kiln's
 * KILN_JOB=<pid>. mark, everything in the run's cgroup, and every process
 * it last saw below kiln: every 200 ms it notes kiln's descendants (pid and
 * start time), which finds a helper that cleared its environment and left
 * its process group, orphaned to init when kiln died. Whatever it kills,
 * however it found it, it appends to the run's journal as a `left` record
 * saying how, so `kiln report rebuild` lists them under the run; what
 * ends by itself within a short grace (krun__procs_settle) is not
 * killed, nor listed. A process started in the last 200 ms
 * before kiln died, carrying no KILN_JOB and outside a cgroup, can escape.
 * (A kiln killed together with its guard, say by a kill of every process
 * of the user, leaves this to a cgroup-aware supervisor.)
 */
#include "run-impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
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
  char *journal = kh_asprintf("%s/journal", R->o->out_dir);
  char *argv[] = {exe, "guard", pid, R->ct.run_cg[0] ? R->ct.run_cg : "-", journal, NULL};
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
  free(journal);
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

#define MAX_SEEN 4096

/* What the guard killed, for the journal's `left` records. */
typedef struct noted {
  krep_report *rep;
  krep_proc *procs;
  int n;
} noted;

/* Kills pid, described as it is now (its command line) into nt unless it
 * is there already (one that outlives a SIGKILL for a moment is found
 * again); 1 when the kill was sent. */
static int kill_noted(pid_t pid, const char *how, noted *nt) {
  if (krun__proc_ending(pid)) return 0;   /* exiting by itself: nothing left */
  char path[64], *cmd = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
  if (kh_read_file(path, 1 << 16, &cmd, &len) == 0)
    for (size_t k = 0; k + 1 < len; k++)
      if (cmd[k] == '\0') cmd[k] = ' ';
  if (cmd && len > 200) memcpy(cmd + 197, "...", 4);
  int ok = kill(pid, SIGKILL) == 0;
  int e = errno, known = 0;
  for (int i = 0; i < nt->n && !known; i++) known = nt->procs[i].pid == pid;
  if (!known && nt->n < MAX_SEEN)
    nt->procs[nt->n++] = (krep_proc){pid, krep_str(nt->rep, cmd && *cmd ? cmd : "?"), how, ok,
                                     ok ? NULL : krep_str(nt->rep, strerror(e))};
  free(cmd);
  return ok;
}

typedef struct marked {
  const char *mark;
  size_t len;
  int found;
  noted *nt;
  int n;                    /* killed */
} marked;

static int has_mark(const char *var, void *arg) {
  marked *m = arg;
  if (strncmp(var, m->mark, m->len) != 0) return 0;
  m->found = 1;
  return 1;
}

static int kill_if_marked(pid_t pid, void *arg) {
  marked *m = arg;
  if (pid == getpid()) return 0;
  m->found = 0;
  (void)krun__environ_each(pid, has_mark, m);
  if (m->found)
    m->n += kill_noted(pid, "left behind when kiln died (its KILN_JOB; killed by its guard)",
                       m->nt);
  return 0;
}

typedef struct seen {
  pid_t pid;
  unsigned long long start;   /* /proc/PID/stat's starttime: pids are reused */
} seen;

static int start_of(pid_t pid, unsigned long long *start) {
  char path[64], *s = NULL;
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  if (kh_read_file(path, 4096, &s, NULL) != 0) return -1;
  const char *rp = strrchr(s, ')');
  char state = 0;
  int ok = rp && sscanf(rp + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d "
                        "%*d %*d %*d %*d %*d %llu", &state, start) == 2 && state != 'Z';
  free(s);
  return ok ? 0 : -1;
}

/* pid's descendants (every thread's children, depth first) into out. */
static int descendants(pid_t pid, seen *out, int n, int depth) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
  DIR *d = depth < 64 ? opendir(path) : NULL;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char file[320], *text = NULL;
    snprintf(file, sizeof file, "/proc/%ld/task/%s/children", (long)pid, e->d_name);
    if (kh_read_file(file, 1 << 20, &text, NULL) != 0) continue;
    for (char *p = text; *p && n < MAX_SEEN;) {
      char *end;
      long v = strtol(p, &end, 10);
      if (end == p) break;
      p = end;
      unsigned long long st;
      if ((pid_t)v == getpid() || start_of((pid_t)v, &st) != 0) continue;
      out[n++] = (seen){(pid_t)v, st};
      n = descendants((pid_t)v, out, n, depth + 1);
    }
    free(text);
  }
  if (d) closedir(d);
  return n;
}

/* Kills what was last seen below kiln and still runs (the same process:
 * same start time). */
static void kill_seen(const seen *s, int n, noted *nt) {
  for (int i = 0; i < n; i++) {
    unsigned long long st;
    if (start_of(s[i].pid, &st) != 0 || st != s[i].start) continue;
    kill_noted(s[i].pid, "left behind when kiln died (killed by its guard)", nt);
  }
}

/* Kills every process whose environment holds mark; returns how many. */
static int kill_marked(const char *mark, size_t len, noted *nt) {
  marked m = {mark, len, 0, nt, 0};
  krun__procs_each(kill_if_marked, &m);
  return m.n;
}

typedef struct in_cgroup {
  noted *nt;
  int n;
} in_cgroup;

static int kill_one(pid_t pid, void *arg) {
  in_cgroup *c = arg;
  c->n += kill_noted(pid, "left behind when kiln died (in the run's cgroup; killed by its "
                     "guard)", c->nt);
  return 0;
}

/* Kills everything in cg and the cgroups under it; returns how many. */
static int kill_cgroup(const char *cg, noted *nt) {
  in_cgroup c = {nt, 0};
  krun__cgroup_each(cg, 1, kill_one, &c);
  return c.n;
}

/* What the guard is about to kill, gathered first so that it can be
 * given the exit grace (a helper that ends when its runner died with
 * kiln, its pipes at end of file, is no process left behind). */
typedef struct gathered {
  pid_t *pids;
  int n;
  const char *mark;
  size_t len;
} gathered;

static int gather(pid_t pid, void *arg) {
  gathered *g = arg;
  if (pid != getpid() && g->n < MAX_SEEN) g->pids[g->n++] = pid;
  return 0;
}

static int gather_marked(pid_t pid, void *arg) {
  gathered *g = arg;
  marked m = {g->mark, g->len, 0, NULL, 0};
  if (pid != getpid()) (void)krun__environ_each(pid, has_mark, &m);
  return m.found ? gather(pid, g) : 0;
}

static void settle(const seen *s, int n, const char *mark, size_t len, const char *cgroup) {
  gathered g = {kh_xcalloc(MAX_SEEN, sizeof *g.pids), 0, mark, len};
  for (int i = 0; i < n; i++) gather(s[i].pid, &g);
  krun__procs_each(gather_marked, &g);
  if (cgroup) krun__cgroup_each(cgroup, 0, gather, &g);
  (void)krun__procs_settle(g.pids, g.n, KRUN_EXIT_GRACE_MS);
  free(g.pids);
}

int krun_guard(long kiln, const char *cgroup, const char *journal) {
  signal(SIGINT, SIG_IGN), signal(SIGTERM, SIG_IGN), signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  if (cgroup && strcmp(cgroup, "-") == 0) cgroup = NULL;
  /* The last five bytes read: kiln ends with "done\n". Between reads,
   * every 200 ms, what runs below kiln. */
  char buf[64], tail[5] = {0};
  ssize_t n = 1;
  seen *last = kh_xcalloc(MAX_SEEN, sizeof *last), *now = kh_xcalloc(MAX_SEEN, sizeof *now);
  int nlast = 0;
  while (n > 0) {
    struct pollfd pfd = {STDIN_FILENO, POLLIN, 0};
    int r = poll(&pfd, 1, 200);
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) {
      int k = descendants((pid_t)kiln, now, 0, 0);
      if (kill((pid_t)kiln, 0) == 0) {   /* not a half-orphaned view */
        seen *t = last;
        last = now, now = t, nlast = k;
      }
      continue;
    }
    if ((n = kh_read(STDIN_FILENO, buf, sizeof buf)) > 0)
      for (ssize_t i = 0; i < n; i++) {
        memmove(tail, tail + 1, 4);
        tail[4] = buf[i];
      }
  }
  free(now);
  if (memcmp(tail, "done\n", 5) == 0) {
    free(last);
    return 0;
  }
  /* kiln is gone: its runners died with it; now whatever they started. */
  char mark[64];
  int mlen = snprintf(mark, sizeof mark, "KILN_JOB=%ld.", kiln);
  krep_report rep;
  krep_init(&rep);
  noted nt = {&rep, kh_xcalloc(MAX_SEEN, sizeof *nt.procs), 0};
  settle(last, nlast, mark, (size_t)mlen, cgroup);
  kill_seen(last, nlast, &nt);
  free(last);
  for (int round = 0; round < ROUNDS; round++) {
    int killed = kill_marked(mark, (size_t)mlen, &nt);
    if (cgroup) killed += kill_cgroup(cgroup, &nt);
    if (!killed) break;
    usleep(10000);
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
  }
  if (cgroup) {
    kill_cgroup(cgroup, &nt);
    rmdir(cgroup);
  }
  if (nt.n && journal) krep_journal_append_left(journal, nt.procs, nt.n);
  free(nt.procs);
  krep_free(&rep);
  return 0;
}
