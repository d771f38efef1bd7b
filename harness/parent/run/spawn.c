/* Starting processes: the one spawn function every process kiln starts goes
 * through. Everything the child needs (its path, argv, environment, which
 * fd goes where) is prepared in kiln before vfork(), so the child only
 * makes system calls: death signal, process group, fds, signal mask, then
 * execve. vfork shares kiln's memory instead of copying its page tables,
 * and kiln's pages are never copied on write afterwards: that was most of
 * fork()'s cost per test (docs/decisions/harness-speed.md). A failed exec
 * is reported through a close-on-exec pipe (libuv's pattern), which also
 * works where vfork is a fork (valgrind, sanitizers).
 *
 * Measurement switch: building with -DKRUN_SPAWN_FORK uses fork() instead, to
 * compare the two (docs/decisions/harness-speed.md); nothing else changes.
 */
#include "run-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* What the child does between vfork and exec, all decided beforehand. */
typedef struct prepared {
  const char *path;
  char *const *argv;
  char **envp;
  int src[4];               /* the child's 0..3 come from these; -1: /dev/null
                               (0..2) or nothing (3) */
  int nfds;                 /* 3 or 4 */
  int err_fd;               /* the exec-error pipe's write end (cloexec) */
  int pgroup, session, die;
  int cgroup_procs;         /* -1: none */
  const char *cwd;
  pid_t parent;
} prepared;

/* ---- Preparing ------------------------------------------------------------------ */

/* argv[0] as execve needs it: a name without '/' is looked up in PATH. */
static char *resolve(const char *name) {
  if (strchr(name, '/')) return kh_strdup(name);
  const char *path = getenv("PATH");
  for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
    size_t len = strcspn(p, ":");
    char *cand = kh_asprintf("%.*s/%s", (int)len, len ? p : ".", name);
    if (access(cand, X_OK) == 0) return cand;
    free(cand);
    p += len + (p[len] == ':');
  }
  return kh_strdup(name);   /* execve says ENOENT */
}

static int name_in(const char *entry, char *const *list, int n) {
  size_t len = 0;
  for (int i = 0; i < n; i++) {
    if (list[i][0] != entry[0]) continue;   /* most names differ at once */
    if (!len) len = strcspn(entry, "=");
    if (strncmp(entry, list[i], len) == 0 && (list[i][len] == '=' || list[i][len] == '\0'))
      return 1;
  }
  return 0;
}

/* kiln's environment, less the names req removes or sets, plus what it
 * sets; *owned gets the strings made here (to free). */
static char **environment(const krun_spawn_req *req, char ***owned) {
  char *set[24];
  int nset = 0, nown = 0;
  *owned = kh_xcalloc(8, sizeof **owned);
  for (const char *const *e = req->env; e && *e && nset < 16; e++) set[nset++] = (char *)*e;
  if (req->narrow && req->ndevices > 0) {
    const krun_backend_info *bi = req->narrow;
    kh_buf entries = {0}, ordinals = {0};
    for (int i = 0; i < req->ndevices; i++) {
      kh_buf_addf(&entries, "%s%s", i ? "," : "", bi->dev[req->devices[i]].visible);
      kh_buf_addf(&ordinals, "%s%d", i ? "," : "", i);
    }
    const char *v0 = krun__visible_var(bi->backend, 0), *v1 = krun__visible_var(bi->backend, 1);
    /* ROCm: ROCR narrows to the physical devices, HIP then sees them as
     * 0, 1, ... */
    if (bi->backend == KRUN_BACKEND_HIP) {
      set[nset++] = (*owned)[nown++] = kh_asprintf("%s=%s", v1, entries.data);
      set[nset++] = (*owned)[nown++] = kh_asprintf("%s=%s", v0, ordinals.data);
    } else if (v0) {
      set[nset++] = (*owned)[nown++] = kh_asprintf("%s=%s", v0, entries.data);
    }
    kh_buf_free(&entries), kh_buf_free(&ordinals);
  }
  if (req->take_slots > 0) {
    kh_buf take = {0};
    kh_buf_addf(&take, "KILN_TAKE_SLOTS=%d", req->take_semid);
    for (int i = 0; i < req->ndevices; i++)
      kh_buf_addf(&take, "%s%d:%d", i ? "," : ":", req->take_semnum[i], req->take_slots);
    set[nset++] = (*owned)[nown++] = take.data;
  }
  char *unset[16];
  int nunset = 0;
  for (const char *const *u = req->unenv; u && *u && nunset < 16; u++)
    unset[nunset++] = (char *)*u;
  size_t n = 0;
  for (char **e = environ; e && *e; e++) n++;
  char **envp = kh_xcalloc(n + (size_t)nset + 1, sizeof *envp);
  size_t k = 0;
  for (char **e = environ; e && *e; e++)
    if (!name_in(*e, set, nset) && !name_in(*e, unset, nunset)) envp[k++] = *e;
  for (int i = 0; i < nset; i++) envp[k++] = set[i];
  return envp;
}

/* ---- The child ------------------------------------------------------------------- */

static void fail(const prepared *p) __attribute__((noreturn));
static void fail(const prepared *p) {
  int e = errno;
  (void)!write(p->err_fd, &e, sizeof e);
  _exit(127);
}

/* Runs in the vfork child: system calls only, no allocation. */
static void child(const prepared *p) __attribute__((noreturn));
static void child(const prepared *p) {
  if (p->die) {
    /* If kiln dies (even by SIGKILL), so does the child; and if kiln is
     * already gone, do not start. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != p->parent) _exit(127);
  }
  if (p->session) setsid();
  else if (p->pgroup) setpgid(0, 0);
  /* "0" moves the writer itself into the cgroup (cgroup v2). */
  if (p->cgroup_procs >= 0) (void)!write(p->cgroup_procs, "0", 1);
  int hi[4];
  for (int i = 0; i < p->nfds; i++) {
    if (p->src[i] >= 0) hi[i] = fcntl(p->src[i], F_DUPFD, 10);
    else if (i < 3) hi[i] = open("/dev/null", i == 0 ? O_RDONLY : O_WRONLY);
    else hi[i] = -1;
    if (i < 3 && hi[i] < 0) fail(p);
  }
  for (int i = 0; i < p->nfds; i++)
    if (hi[i] >= 0 && dup2(hi[i], i) < 0) fail(p);
  /* Nothing else reaches the program but the error pipe, which closes on
   * exec. */
  if (close_range((unsigned)p->nfds, (unsigned)p->err_fd - 1, 0) != 0 ||
      close_range((unsigned)p->err_fd + 1, ~0u, 0) != 0)
    for (int fd = p->nfds; fd < 1024; fd++)
      if (fd != p->err_fd) close(fd);
  if (p->cwd && chdir(p->cwd) != 0) fail(p);
  /* kiln ignores SIGPIPE and blocks the signals it reads from a signalfd;
   * the program starts with neither. */
  signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  execve(p->path, p->argv, p->envp);
  fail(p);
}

/* ---- Spawning -------------------------------------------------------------------------- */

/* vfork and the child, apart from everything else: nothing the child could
 * clobber lives in this frame. */
static pid_t __attribute__((noinline)) start(const prepared *p) {
#ifdef KRUN_SPAWN_FORK
  pid_t c = fork();
#else
  pid_t c = vfork();
#endif
  if (c == 0) child(p);
  return c;
}

int krun_spawn(const krun_spawn_req *req, pid_t *pid, int *exec_errno) {
  int errp[2];
  if (pipe2(errp, O_CLOEXEC) != 0) return -1;
  prepared p = {0};
  char **owned = NULL;
  char *path = resolve(req->argv[0]);
  p.path = path;
  p.argv = req->argv;
  p.envp = environment(req, &owned);
  p.src[0] = req->fd_in, p.src[1] = req->fd_out, p.src[2] = req->fd_err;
  p.src[3] = req->fd_result;
  p.nfds = req->fd_result >= 0 ? 4 : 3;
  /* Above every fd the child dups, so the close ranges keep only it. */
  p.err_fd = fcntl(errp[1], F_DUPFD_CLOEXEC, 64);
  p.pgroup = req->new_pgroup;
  p.session = req->new_session;
  p.cwd = req->cwd;
  p.die = req->die_with_parent;
  p.cgroup_procs = req->cgroup_procs > 0 ? req->cgroup_procs : -1;
  static pid_t self;
  if (!self) self = getpid();   /* kiln itself never forks */
  p.parent = self;
  close(errp[1]);
  pid_t c = p.err_fd >= 0 ? start(&p) : -1;
  int saved = errno;
  if (p.err_fd >= 0) close(p.err_fd);
  for (char **o = owned; o && *o; o++) free(*o);
  free(owned), free(p.envp), free(path);
  if (c < 0) {
    close(errp[0]);
    return errno = saved, -1;
  }
  /* The child made its process group before exec, and the error pipe
   * closes only at exec (or at its exit): once the read below returns,
   * kill(-pid) reaches the group, so kiln need not setpgid too (with vfork
   * it could not: a child that has exec'd refuses it). */
  int e = 0;
  ssize_t n;
  do n = read(errp[0], &e, sizeof e);
  while (n < 0 && errno == EINTR);
  close(errp[0]);
  *exec_errno = n == (ssize_t)sizeof e ? (e ? e : EIO) : 0;
  *pid = c;
  return 0;
}

/* ---- Helper commands ------------------------------------------------------------------------ */

/* Reads what fd gives into b, up to max bytes (the rest is read and
 * dropped); 0 at end of file. */
static int drain(int fd, kh_buf *b, size_t max) {
  char chunk[16384];
  ssize_t n = kh_read(fd, chunk, sizeof chunk);
  if (n <= 0) return n < 0 && errno == EAGAIN ? 1 : 0;
  if (b->len < max) kh_buf_add(b, chunk, (size_t)n < max - b->len ? (size_t)n : max - b->len);
  return 1;
}

int krun_capture(char *const argv[], size_t max, double timeout_s, char **out,
                 size_t *len, char **err) {
  int p[2], e[2] = {-1, -1};
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  if (err && pipe2(e, O_CLOEXEC) != 0) return close(p[0]), close(p[1]), -1;
  krun_spawn_req req = {.argv = argv, .fd_in = -1, .fd_out = p[1], .fd_err = e[1],
                        .fd_result = -1, .die_with_parent = 1, .cgroup_procs = -1};
  pid_t pid;
  int exec_errno = 0;
  int rc = krun_spawn(&req, &pid, &exec_errno);
  close(p[1]);
  if (e[1] >= 0) close(e[1]);
  if (rc != 0) {
    close(p[0]);
    if (e[0] >= 0) close(e[0]);
    return -1;
  }
  kh_buf b = {0}, eb = {0};
  double deadline = kh_now_ms() + timeout_s * 1e3;
  int timed_out = 0;
  struct pollfd pfd[2] = {{.fd = p[0], .events = POLLIN}, {.fd = e[0], .events = POLLIN}};
  while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
    double left = deadline - kh_now_ms();
    if (left <= 0) {
      timed_out = 1;
      break;
    }
    if (poll(pfd, 2, (int)left + 1) <= 0) continue;
    for (int i = 0; i < 2; i++)
      if (pfd[i].fd >= 0 && pfd[i].revents && !drain(pfd[i].fd, i ? &eb : &b, i ? 16384 : max))
        close(pfd[i].fd), pfd[i].fd = -1;
  }
  for (int i = 0; i < 2; i++)
    if (pfd[i].fd >= 0) close(pfd[i].fd);
  if (timed_out) kill(pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!b.data) kh_buf_add(&b, "", 0);
  *out = b.data;
  if (len) *len = b.len;
  if (err) {
    if (!eb.data) kh_buf_add(&eb, "", 0);
    *err = eb.data;
  }
  if (timed_out) return errno = ETIMEDOUT, -1;
  if (exec_errno) return errno = exec_errno, -1;
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return WEXITSTATUS(st);
}
