/* Containment: nothing a test starts outlives it. A test may start a
 * process that leaves its process group (setpgid, setsid, a double fork),
 * which no kill of the group reaches. kiln is a child subreaper
 * (PR_SET_CHILD_SUBREAPER), so every process orphaned under it becomes its
 * child instead of init's; when a test's runner has ended, kiln looks for
 * what it left:
 *
 *   cgroup     each child starts in a cgroup v2 cgroup of its own (under
 *              kiln's cgroup, where it may make one): whatever is still in
 *              it is the test's, however it got away, and cgroup.kill ends
 *              it all at once;
 *   subreaper  where no cgroup v2 hierarchy can be written (cgroup v1
 *              machines, containers): kiln's children that carry the test's
 *              KILN_JOB=<kiln pid>.<n> in their environment.
 *
 * Each process found is described (pid, command line, how it left) on the
 * test that started it, and killed, unless it is ending by itself (a
 * zombie, in its exit, or gone within a short grace: procs.c); besides
 * the above, a test claims what
 * is still in its process group, and an orphan with no KILN_JOB (it
 * cleared its environment) that started while that test alone ran. What
 * no test claims (such an orphan of two tests at once, or one of
 * --isolation none's shared process) is swept at the end of the run,
 * listed on the run, and fails it. A source may also ask, between two
 * tests of a worker, what the worker has running besides itself
 * (krun__contain_others: looked at, not killed). docs/harness.md, "What a
 * test leaves running", has the rules.
 */
#include "run-impl.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Rounds of find-and-kill (a killed process's children come to kiln only
 * when it has died), and how long to wait for the killed to die. */
#define ROUNDS 64
#define DIE_MS 2000
#define MAX_FOUND 4096

/* ---- cgroup v2 -------------------------------------------------------------------- */

/* The cgroup v2 mount point, from mountinfo; "" when there is none. */
static void v2_mount(char *out, size_t n) {
  out[0] = '\0';
  char *info = NULL;
  if (kh_read_file("/proc/self/mountinfo", 1 << 20, &info, NULL) != 0) return;
  char *save = NULL;
  for (char *line = strtok_r(info, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    const char *dash = strstr(line, " - ");
    if (!dash || strncmp(dash + 3, "cgroup2 ", 8) != 0) continue;
    /* id parent major:minor root MOUNTPOINT ... */
    char *p = line;
    for (int f = 0; f < 4 && p; f++) p = strchr(p + 1, ' ');
    if (!p) continue;
    size_t len = strcspn(p + 1, " ");
    snprintf(out, n, "%.*s", (int)len, p + 1);
    break;
  }
  free(info);
}

/* This process's cgroup v2 path ("0::/path"); -1 when it has none. */
static int v2_path(char *out, size_t n) {
  char *cg = NULL;
  if (kh_read_file("/proc/self/cgroup", 1 << 16, &cg, NULL) != 0) return -1;
  int rc = -1;
  char *save = NULL;
  for (char *line = strtok_r(cg, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
    if (strncmp(line, "0::", 3) == 0) {
      snprintf(out, n, "%s", strcmp(line + 3, "/") == 0 ? "" : line + 3);
      rc = 0;
    }
  free(cg);
  return rc;
}

static int open_procs(const char *cg) {
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/cgroup.procs", cg);
  return open(path, O_WRONLY | O_CLOEXEC);
}

/* Does a child spawned into cg end up there? `cat /proc/self/cgroup` in it
 * says. (Writing a cgroup.procs needs rights on the cgroups on both sides
 * of the move, which no check short of a move shows.) */
static int child_joins(const char *cg, const char *want) {
  int fd = open_procs(cg), p[2];
  if (fd < 0 || pipe2(p, O_CLOEXEC) != 0) {
    if (fd >= 0) close(fd);
    return 0;
  }
  char *argv[] = {"cat", "/proc/self/cgroup", NULL};
  krun_spawn_req req = {.argv = argv, .fd_in = -1, .fd_out = p[1], .fd_err = -1,
                        .fd_result = -1, .die_with_parent = 1, .cgroup_procs = fd};
  pid_t pid;
  int exec_errno = 0;
  int rc = krun_spawn(&req, &pid, &exec_errno);
  close(p[1]), close(fd);
  kh_buf b = {0};
  char chunk[4096];
  ssize_t n;
  while (rc == 0 && (n = kh_read(p[0], chunk, sizeof chunk)) > 0) kh_buf_add(&b, chunk, (size_t)n);
  close(p[0]);
  if (rc == 0)
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
  int ok = rc == 0 && !exec_errno && b.data && strstr(b.data, want) != NULL;
  kh_buf_free(&b);
  return ok;
}

/* Makes the run's cgroup under kiln's own; 0, or -1 with why. */
static int cgroup_setup(krun__contain *ct, char *why, size_t n) {
  char mount[PATH_MAX], own[PATH_MAX];
  v2_mount(mount, sizeof mount);
  if (!*mount) return snprintf(why, n, "no cgroup v2 hierarchy is mounted"), -1;
  if (v2_path(own, sizeof own) != 0)
    return snprintf(why, n, "this process is in no cgroup v2 cgroup"), -1;
  char *run = kh_asprintf("%s%s/kiln-%ld", mount, own, (long)ct->self);
  if (strlen(run) + 32 >= sizeof ct->run_cg) {
    free(run);
    return snprintf(why, n, "the cgroup path is too long"), -1;
  }
  snprintf(ct->run_cg, sizeof ct->run_cg, "%s", run);
  free(run);
  if (mkdir(ct->run_cg, 0755) != 0)
    return snprintf(why, n, "cannot make %.400s: %s", ct->run_cg, strerror(errno)), -1;
  char probe[PATH_MAX + 16], want[PATH_MAX + 32];
  snprintf(probe, sizeof probe, "%s/probe", ct->run_cg);
  snprintf(want, sizeof want, "0::%s/kiln-%ld/probe\n", own, (long)ct->self);
  int ok = mkdir(probe, 0755) == 0 && child_joins(probe, want);
  rmdir(probe);
  if (!ok) {
    rmdir(ct->run_cg);
    ct->run_cg[0] = '\0';
    return snprintf(why, n, "a child cannot be moved into a cgroup under %.200s%.200s", mount,
                    own), -1;
  }
  char kill_file[PATH_MAX + 16];
  snprintf(kill_file, sizeof kill_file, "%s/cgroup.kill", ct->run_cg);
  ct->has_kill = access(kill_file, W_OK) == 0;
  return 0;
}

/* ---- Setting up and tearing down ----------------------------------------------------- */

int krun__contain_setup(krun__run *R, kh_err *err) {
  krun__contain *ct = &R->ct;
  memset(ct, 0, sizeof *ct);
  ct->self = getpid();
  ct->session = getsid(0);
  ct->mode = R->s->contain;
  if (ct->mode == KRUN_CONTAIN_NONE) return 0;
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
    return kh_errf(err, "--contain %s: cannot become a child subreaper: %s",
                   krun_contain_names[ct->mode], strerror(errno));
  if (ct->mode == KRUN_CONTAIN_SUBREAPER) return 0;
  if (cgroup_setup(ct, ct->why, sizeof ct->why) == 0) {
    ct->mode = KRUN_CONTAIN_CGROUP;
    return 0;
  }
  if (ct->mode == KRUN_CONTAIN_CGROUP)
    return kh_errf(err, "--contain cgroup: no writable cgroup v2 hierarchy: %s (--contain "
                   "subreaper works without one)", ct->why);
  ct->mode = KRUN_CONTAIN_SUBREAPER;
  return 0;
}

void krun__contain_teardown(krun__run *R) {
  if (R->ct.run_cg[0]) rmdir(R->ct.run_cg);
  R->ct.run_cg[0] = '\0';
  if (R->ct.mode != KRUN_CONTAIN_NONE) (void)prctl(PR_SET_CHILD_SUBREAPER, 0);
}

/* A child's own cgroup, before it is spawned (best effort: a failure here
 * leaves the child to the subreaper's search). */
void krun__contain_job(krun__run *R, krun__job *j) {
  j->serial = ++R->job_serial;
  j->cg_procs = -1;
  if (R->ct.mode != KRUN_CONTAIN_CGROUP) return;
  j->cg = kh_asprintf("%s/%d", R->ct.run_cg, j->serial);
  if (mkdir(j->cg, 0755) == 0) j->cg_procs = open_procs(j->cg);
}

void krun__contain_job_clear(krun__job *j) {
  if (j->cg_procs >= 0) close(j->cg_procs);
  j->cg_procs = -1;
  if (j->cg) rmdir(j->cg);
  free(j->cg);
  j->cg = NULL;
}

/* ---- Finding what is left ------------------------------------------------------------- */

static int add_pid(pid_t *pids, int n, pid_t p) {
  for (int i = 0; i < n; i++)
    if (pids[i] == p) return n;
  if (n < MAX_FOUND) pids[n++] = p;
  return n;
}

/* Pids gathered by a walk (procs.c), at most max. */
typedef struct found {
  pid_t *pids;
  int n, max;               /* max: stop the walk there (0: never) */
  pid_t parent;             /* by_parent: the parent wanted */
  pid_t pgid;               /* in_group: the process group wanted */
} found;

static int take(pid_t pid, void *arg) {
  found *f = arg;
  f->n = add_pid(f->pids, f->n, pid);
  return f->max && f->n >= f->max;
}

/* Without CONFIG_PROC_CHILDREN: every process's parent, from its stat. */
static int by_parent(pid_t pid, void *arg) {
  found *f = arg;
  char stat[64], *s = NULL;
  snprintf(stat, sizeof stat, "/proc/%ld/stat", (long)pid);
  if (kh_read_file(stat, 4096, &s, NULL) != 0) return 0;
  const char *rp = strrchr(s, ')');
  long ppid = 0;
  int hit = rp && sscanf(rp + 1, " %*c %ld", &ppid) == 1 && ppid == (long)f->parent;
  free(s);
  return hit ? take(pid, f) : 0;
}

/* kiln's children (PR_SET_CHILD_SUBREAPER makes every orphan below it one). */
static int children(pid_t self, pid_t *pids, int max) {
  char path[64];
  found f = {pids, 0, max, self, 0};
  snprintf(path, sizeof path, "/proc/%ld/task/%ld/children", (long)self, (long)self);
  if (krun__pids_in_file(path, take, &f) != 0) krun__procs_each(by_parent, &f);
  return f.n;
}

typedef struct job_mark {
  pid_t self;
  int job;
} job_mark;

static int job_var(const char *var, void *arg) {
  job_mark *m = arg;
  long kiln, serial;
  if (strncmp(var, "KILN_JOB=", 9) == 0 && sscanf(var + 9, "%ld.%ld", &kiln, &serial) == 2)
    m->job = kiln == (long)m->self ? (int)serial : 0;
  return 0;
}

/* The KILN_JOB serial in a process's environment: 0 when it is not one of
 * this kiln's, -1 when it has none (or it cannot be read). */
static int job_of(pid_t pid, pid_t self) {
  job_mark m = {self, -1};
  (void)krun__environ_each(pid, job_var, &m);
  return m.job;
}

static int is_known(const krun__run *R, pid_t pid) {
  if (pid == R->guard_pid) return 1;
  for (int i = 0; i < R->maxjobs; i++)
    if (R->jobs[i].active && !R->jobs[i].exited && R->jobs[i].pid == pid) return 1;
  return 0;
}

/* The processes in a cgroup and in the cgroups under it (a test's own,
 * the jobs' under the run's), added to the n in pids. */
static int cgroup_pids(const char *cg, pid_t *pids, int n) {
  found f = {pids, n, 0, 0, 0};
  krun__cgroup_each(cg, 0, take, &f);
  return f.n;
}

static int stat_of(pid_t pid, long *pgrp, long *session);

/* When pid started, in ms of CLOCK_MONOTONIC (kh_now_ms); -1 unknown. */
static double started_ms(pid_t pid) {
  char path[64], *s = NULL;
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  if (kh_read_file(path, 4096, &s, NULL) != 0) return -1;
  const char *rp = strrchr(s, ')');
  unsigned long long ticks = 0;
  int ok = rp && sscanf(rp + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d "
                        "%*d %*d %*d %*d %*d %llu", &ticks) == 1;
  free(s);
  struct timespec boot, mono;
  long hz = sysconf(_SC_CLK_TCK);
  if (!ok || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &boot) != 0 ||
      clock_gettime(CLOCK_MONOTONIC, &mono) != 0)
    return -1;
  double skew = (double)(boot.tv_sec - mono.tv_sec) * 1e3 +
                (double)(boot.tv_nsec - mono.tv_nsec) / 1e6;
  return (double)ticks * 1e3 / (double)hz - skew;
}

/* An orphan that carries no KILN_JOB (it cleared its environment) is job
 * j's when j alone of the tests was running when it started (start times
 * come in 10 ms ticks: 20 ms of slack). */
static int only_candidate(const krun__run *R, const krun__job *j, pid_t pid) {
  double t = started_ms(pid);
  if (t < 0 || t + 20 < j->spawn_ms) return 0;
  for (int i = 0; i < R->maxjobs; i++) {
    const krun__job *k = &R->jobs[i];
    if (k != j && k->active && k->spawn_ms <= t + 20) return 0;
  }
  int kept = R->nspans < 64 ? R->nspans : 64;
  for (int i = 0; i < kept; i++)
    if (R->spans[i][0] <= t + 20 && R->spans[i][1] >= t - 20) return 0;
  return 1;
}

void krun__contain_span(krun__run *R, const krun__job *j) {
  R->spans[R->nspans % 64][0] = j->spawn_ms;
  R->spans[R->nspans % 64][1] = kh_now_ms();
  R->nspans++;
}

static int in_group(pid_t pid, void *arg) {
  found *f = arg;
  long pg, se;
  if (pid != f->pgid && stat_of(pid, &pg, &se) == 0 && pg == (long)f->pgid)
    f->n = add_pid(f->pids, f->n, pid);
  return 0;
}

/* Every live process in process group pgid, but its leader. */
static int group_pids(pid_t pgid, pid_t *pids, int n) {
  if (pgid <= 0 || kill(-pgid, 0) != 0) return n;   /* the cheap usual case */
  found f = {pids, n, 0, 0, pgid};
  krun__procs_each(in_group, &f);
  return f.n;
}

/* Live processes left by job j (its cgroup, its process group, kiln's
 * orphans that carry its KILN_JOB or, carrying none, started while it
 * alone ran), or with j NULL every process of this run no live job
 * claims. */
static int left_by(krun__run *R, const krun__job *j, const char *cg, pid_t *pids) {
  int n = 0;
  if (cg) n = cgroup_pids(cg, pids, n);
  if (j) n = group_pids(j->pid, pids, n);
  pid_t kids[MAX_FOUND];
  int nk = children(R->ct.self, kids, MAX_FOUND);
  for (int i = 0; i < nk; i++) {
    if (is_known(R, kids[i])) continue;
    int job = job_of(kids[i], R->ct.self);
    if (!j ? job != 0 : job == j->serial || (job < 0 && only_candidate(R, j, kids[i])))
      n = add_pid(pids, n, kids[i]);
  }
  return n;
}

/* pid's children, from each of its threads' children file (a thread's
 * fork is listed under that thread); without CONFIG_PROC_CHILDREN, from
 * every process's parent. */
static int kids_of(pid_t pid, pid_t *pids, int n) {
  char path[96];
  snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
  DIR *d = opendir(path);
  if (!d) return n;
  found f = {pids, n, 0, pid, 0};
  int read_any = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "/proc/%ld/task/%.20s/children", (long)pid, e->d_name);
    read_any |= krun__pids_in_file(path, take, &f) == 0;
  }
  closedir(d);
  if (!read_any) krun__procs_each(by_parent, &f);
  return f.n;
}

/* Everything that descends from root, added to the n in pids. */
static int descendants(pid_t root, pid_t *pids, int n) {
  int from = n;
  n = kids_of(root, pids, n);
  for (int i = from; i < n; i++) n = kids_of(pids[i], pids, n);
  return n;
}

/* Does pid share the worker's address space? Such a clone (LeakSanitizer's
 * tracer at the binary's exit, a vfork child before its exec) is the
 * worker itself, not something it left running. Where kcmp is refused or
 * missing, every process counts. */
static int same_memory(pid_t worker, pid_t pid) {
#if defined(SYS_kcmp)
  enum { KCMP_VM_ = 1 }; /* linux/kcmp.h's KCMP_VM */
  return syscall(SYS_kcmp, (long)worker, (long)pid, (long)KCMP_VM_, 0L, 0L) == 0;
#else
  (void)worker, (void)pid;
  return 0;
#endif
}

int krun__contain_others(const krun__run *R, const krun__job *j, pid_t *out, int max) {
  if (R->ct.mode == KRUN_CONTAIN_NONE) return -1;
  /* Between two tests of a worker, so cheap: the cgroup's list, or the
   * children files, rather than a walk over every process. */
  pid_t pids[MAX_FOUND], kids[MAX_FOUND];
  int n = j->cg && j->cg_procs >= 0 ? cgroup_pids(j->cg, pids, 0) : descendants(j->pid, pids, 0);
  int nk = children(R->ct.self, kids, MAX_FOUND);
  for (int i = 0; i < nk; i++)
    if (!is_known(R, kids[i]) && job_of(kids[i], R->ct.self) == j->serial)
      n = add_pid(pids, n, kids[i]);
  int k = 0;
  for (int i = 0; i < n && k < max; i++) {
    long pg, se;
    /* kcmp first: a clone that drops the shared memory in its exit has
     * marked itself exiting before, so asked after, it reads as ending. */
    if (pids[i] != j->pid && !same_memory(j->pid, pids[i]) && !krun__proc_ending(pids[i]) &&
        stat_of(pids[i], &pg, &se) == 0)
      out[k++] = pids[i];
  }
  return k;
}

/* ---- Describing and killing ------------------------------------------------------------- */

/* pid's state, process group and session from /proc; 0, or -1 when it is
 * gone or a zombie (nothing left to kill). */
static int stat_of(pid_t pid, long *pgrp, long *session) {
  char path[64], *s = NULL;
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  if (kh_read_file(path, 4096, &s, NULL) != 0) return -1;
  const char *rp = strrchr(s, ')');
  char state = 0;
  int ok = rp && sscanf(rp + 1, " %c %*d %ld %ld", &state, pgrp, session) == 3 && state != 'Z';
  free(s);
  return ok ? 0 : -1;
}

static const char *command_of(krep_report *rep, pid_t pid) {
  char path[64], *cmd = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
  if (kh_read_file(path, 1 << 16, &cmd, &len) != 0) return krep_str(rep, "?");
  for (size_t i = 0; i + 1 < len; i++)
    if (cmd[i] == '\0') cmd[i] = ' ';
  if (len > 200) memcpy(cmd + 197, "...", 4);
  const char *r = krep_str(rep, *cmd ? cmd : "?");
  free(cmd);
  return r;
}

static void add_proc(krun__left *l, const krep_proc *p) {
  l->procs = kh_xrealloc(l->procs, (size_t)(l->n + 1) * sizeof *l->procs);
  l->procs[l->n++] = *p;
}

/* Waits until each pid has died (reaping the ones that are kiln's
 * children), or the time is up. */
static void wait_dead(const pid_t *pids, int n) {
  double until = kh_now_ms() + DIE_MS;
  for (int i = 0; i < n; i++) {
    long pg, se;
    while (waitpid(pids[i], NULL, WNOHANG) != pids[i] && stat_of(pids[i], &pg, &se) == 0) {
      if (kh_now_ms() > until) return;
      usleep(500);
    }
  }
}

/* The job serial of the cgroup pid sits in (.../kiln-SELF/SERIAL[/...]),
 * 0 when it is in none of this run's jobs' cgroups. */
static int cgroup_serial(pid_t pid, pid_t self) {
  char path[64], *text = NULL, mark[48];
  snprintf(path, sizeof path, "/proc/%ld/cgroup", (long)pid);
  if (kh_read_file(path, 1 << 16, &text, NULL) != 0) return 0;
  snprintf(mark, sizeof mark, "/kiln-%ld/", (long)self);
  int serial = 0;
  for (char *line = text; line && *line && !serial;) {
    char *eol = strchr(line, '\n');
    if (eol) *eol = '\0';
    const char *at = strncmp(line, "0::", 3) == 0 ? strstr(line, mark) : NULL;
    if (at) serial = atoi(at + strlen(mark));
    line = eol ? eol + 1 : NULL;
  }
  free(text);
  return serial > 0 ? serial : 0;
}

/* The other live job a process of job j's process group belongs to: the
 * one whose cgroup it sits in, else whose KILN_JOB it carries. A test's
 * helper may join another test's process group (setpgid within the
 * session); it is still its own test's. */
static krun__job *owner_besides(krun__run *R, const krun__job *j, pid_t pid) {
  int serial = cgroup_serial(pid, R->ct.self);
  if (!serial) serial = job_of(pid, R->ct.self);
  if (serial <= 0 || serial == j->serial) return NULL;
  for (int i = 0; i < R->maxjobs; i++) {
    krun__job *k = &R->jobs[i];
    if (k != j && k->active && k->serial == serial && k->ntests >= 1) return k;
  }
  return NULL;
}

/* Finds what the job (serial, cgroup cg; serial 0: any) left, describes
 * it into l and kills it, until nothing is left. pgid: the test's process
 * group (its runner's pid), for how each one left. */
static void find_and_kill(krun__run *R, const krun__job *j, const char *cg, pid_t pgid,
                          krun__left *l) {
  pid_t pids[MAX_FOUND];
  for (int round = 0; round < ROUNDS; round++) {
    int n = left_by(R, j, cg, pids), live = 0;
    /* What is ending by itself is no leak: a zombie, a process in its
     * exit (the last holder of the test's pipes, whose close let kiln
     * finish the test: a multiprocessing resource tracker), or one that
     * ends within a short grace (what waited for the runner's end). The
     * grace is spent once, before the first kill. */
    if (round == 0 && n) krun__procs_settle(pids, n, KRUN_EXIT_GRACE_MS);
    for (int i = 0; i < n; i++) {
      long pg, se;
      if (krun__proc_ending(pids[i]) || stat_of(pids[i], &pg, &se) != 0) continue;
      krun__job *owner = j ? owner_besides(R, j, pids[i]) : NULL;
      krep_proc p = {pids[i], command_of(&R->rep, pids[i]),
                     se != (long)R->ct.session ? "new session"
                     : pg == (long)pgid       ? "the test's process group"
                                              : "own process group",
                     1, NULL};
      if (owner) {
        /* Another running test's: it dies with this test's group, and
         * that test is the one it is charged to. */
        char *how = kh_asprintf("joined the process group of %s",
                                j->ntests ? j->tests[0]->id : "a warm child");
        p.how = krep_str(&R->rep, how);
        free(how);
      }
      if (kill(pids[i], SIGKILL) != 0) {
        p.killed = 0;
        p.error = krep_str(&R->rep, strerror(errno));
      }
      if (owner) krep_add_proc(&R->rep, owner->ntests == 1 ? owner->tests[0] : NULL, &p);
      else add_proc(l, &p);
      live++;
    }
    /* cgroup.kill reaches what forks while we look, in one write. */
    if (cg && live && R->ct.has_kill) {
      char path[PATH_MAX + 32];
      snprintf(path, sizeof path, "%s/cgroup.kill", cg);
      int fd = open(path, O_WRONLY | O_CLOEXEC);
      if (fd >= 0) (void)!write(fd, "1", 1), close(fd);
    }
    if (!live) return;
    wait_dead(pids, n);
  }
}

void krun__contain_left(krun__run *R, krun__job *j, krun__left *l) {
  memset(l, 0, sizeof *l);
  if (R->ct.mode == KRUN_CONTAIN_NONE) return;
  find_and_kill(R, j, j->cg, j->pid, l);
}

void krun__contain_sweep(krun__run *R) {
  if (R->ct.mode == KRUN_CONTAIN_NONE) return;
  krun__left l;
  memset(&l, 0, sizeof l);
  find_and_kill(R, NULL, R->ct.run_cg[0] ? R->ct.run_cg : NULL, 0, &l);
  for (int i = 0; i < l.n; i++) krep_add_proc(&R->rep, NULL, &l.procs[i]);
  free(l.procs);
}
