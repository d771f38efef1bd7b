/* Device tokens: a System V semaphore set shared by every kiln on the
 * host, keyed by a hash of PATH's canonical name (krun_tokens_canon:
 * absolute, symbolic links followed, ".", ".." and "//" gone), not by
 * ftok's inode: a cleaner that deletes or replaces the file in /tmp would
 * otherwise give the next kiln a second set, and two names of one file
 * two sets. System V rather than POSIX semaphores
 * because SEM_UNDO lets the kernel return a dead process's slots, which no
 * other primitive does: a child takes its slots with SEM_UNDO (kiln's
 * runners do it themselves: KILN_TAKE_SLOTS, or a warm child's
 * assignment), so the kernel gives them back however it ends.
 *
 * Layout: semaphore 0 marks the set initialised (the creator's first semop
 * sets sem_otime, which openers wait for: Stevens' safe-initialisation
 * scheme) and, at value 1 from then on, is the lock that a parent holds
 * while it reads a capacity and changes it; 1 + d holds physical device
 * d's free slots; 1 + KRUN_MAX_DEVICES + d its capacity. Holder files PATH.d/<device>/<pid> say who holds them,
 * for `kiln devices`.
 */
#include "run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/stat.h>
#include <unistd.h>

#define NSEMS (1 + 2 * KRUN_MAX_DEVICES)
#define FREE(d) (1 + (d))
#define CAP(d) (1 + KRUN_MAX_DEVICES + (d))

/* Linux wants the caller to define it. */
union semun_arg {
  int val;
  struct semid_ds *buf;
  unsigned short *array;
};

char *krun_tokens_key(const char *flag, int backend) {
  if (flag) return kh_strdup(flag);
  const char *env = getenv("KILN_TOKEN_KEY");
  if (env && *env) return kh_strdup(env);
  return kh_asprintf("/tmp/kiln-tokens-%s", krun_backend_names[backend]);
}

/* Collapses "//", "/./" and "/../" of an absolute name in place. */
static void lexical(char *p) {
  char *out = p;
  for (const char *in = p; *in;) {
    while (*in == '/') in++;
    const char *end = in + strcspn(in, "/");
    size_t n = (size_t)(end - in);
    if (n == 0 || (n == 1 && in[0] == '.')) {
    } else if (n == 2 && in[0] == '.' && in[1] == '.') {
      while (out > p && *--out != '/') {
      }
    } else {
      *out++ = '/';
      memmove(out, in, n);
      out += n;
    }
    in = end;
  }
  if (out == p) *out++ = '/';
  *out = '\0';
}

int krun_tokens_canon(const char *path, char *out, size_t n) {
  char abs[2 * PATH_MAX], dir[PATH_MAX];
  if (!path || !*path) return errno = EINVAL, -1;
  if (path[0] == '/') snprintf(abs, sizeof abs, "%s", path);
  else if (getcwd(dir, sizeof dir)) snprintf(abs, sizeof abs, "%s/%s", dir, path);
  else return -1;
  /* A dangling symbolic link names the file it would create. */
  for (int hops = 0; hops < 40; hops++) {
    char target[PATH_MAX];
    ssize_t len = readlink(abs, target, sizeof target - 1);
    if (len <= 0) break;
    target[len] = '\0';
    if (target[0] == '/') {
      snprintf(abs, sizeof abs, "%s", target);
    } else {
      char *slash = strrchr(abs, '/');
      slash[1] = '\0';
      size_t used = strlen(abs);
      snprintf(abs + used, sizeof abs - used, "%s", target);
    }
  }
  char real[PATH_MAX];
  if (realpath(abs, real)) {
    if (strlen(real) >= n) return errno = ENAMETOOLONG, -1;
    snprintf(out, n, "%s", real);
    return 0;
  }
  /* The file is not there (yet): its folder resolved, then its name. */
  char *slash = strrchr(abs, '/');
  const char *base = slash + 1;
  *slash = '\0';
  int plain = *base && strcmp(base, ".") != 0 && strcmp(base, "..") != 0;
  if (plain && realpath(*abs ? abs : "/", real)) {
    if (strlen(real) + 1 + strlen(base) >= n) return errno = ENAMETOOLONG, -1;
    snprintf(out, n, "%s%s%s", real, strcmp(real, "/") ? "/" : "", base);
    return 0;
  }
  /* Not even its folder is there: the name itself, tidied. */
  *slash = '/';
  lexical(abs);
  if (strlen(abs) >= n) return errno = ENAMETOOLONG, -1;
  snprintf(out, n, "%s", abs);
  return 0;
}

key_t krun_tokens_ipc_key(const char *path) {
  char canon[PATH_MAX];
  if (krun_tokens_canon(path, canon, sizeof canon) != 0)
    snprintf(canon, sizeof canon, "%s", path);
  /* FNV-1a over "kiln-tokens:" and the canonical name, 31 bits, never
   * IPC_PRIVATE. */
  unsigned h = 2166136261u;
  const char *parts[] = {"kiln-tokens:", canon};
  for (int i = 0; i < 2; i++)
    for (const unsigned char *p = (const unsigned char *)parts[i]; *p; p++)
      h = (h ^ *p) * 16777619u;
  h &= 0x7fffffffu;
  return (key_t)(h ? h : 1);
}

static int semop_retry(int semid, struct sembuf *ops, size_t n) {
  int r;
  do r = semop(semid, ops, n);
  while (r < 0 && errno == EINTR);
  return r;
}

/* Waits (up to 10 s) until the creator has initialised the set. */
static int wait_ready(int semid) {
  for (int i = 0; i < 1000; i++) {
    struct semid_ds ds;
    union semun_arg arg = {.buf = &ds};
    if (semctl(semid, 0, IPC_STAT, arg) != 0) return -1;
    if (ds.sem_otime != 0) return 0;
    usleep(10000);
  }
  return errno = ETIMEDOUT, -1;
}

/* The holder files' folder: the canonical key's, so that every name of
 * one key file finds the same holders. */
static void name_set(krun_tokens *t, const char *path) {
  if (krun_tokens_canon(path, t->key_path, sizeof t->key_path) != 0)
    snprintf(t->key_path, sizeof t->key_path, "%s", path);
  snprintf(t->holders, sizeof t->holders, "%s.d", t->key_path);
}

/* Every live holder of every device, as "device D: pid P (WHAT)" joined
 * by "; " into out; returns how many. */
typedef struct held_list {
  kh_buf *out;
  int dev, n;
} held_list;

static void add_held(pid_t pid, const char *what, void *arg) {
  held_list *h = arg;
  if (h->n < 4)
    kh_buf_addf(h->out, "%sdevice %d: pid %ld (%s)", h->n ? "; " : "", h->dev, (long)pid,
                what);
  else if (h->n == 4)
    kh_buf_addf(h->out, "; ...");
  h->n++;
}

static void holders_each(const krun_tokens *t, int dev, int verified,
                         void (*fn)(pid_t pid, const char *what, void *arg), void *arg);

static int live_holders(const krun_tokens *t, kh_buf *out) {
  held_list h = {out, 0, 0};
  for (h.dev = 0; h.dev < KRUN_MAX_DEVICES; h.dev++) holders_each(t, h.dev, 1, add_held, &h);
  return h.n;
}

int krun_tokens_gone(const krun_tokens *t) {
  struct semid_ds ds;
  union semun_arg arg = {.buf = &ds};
  if (semctl(t->semid, 0, IPC_STAT, arg) == 0) return 0;
  return errno == EINVAL || errno == EIDRM;
}

/* No set, yet holder files of live processes: the set was removed while
 * they held slots. A new set at full capacity would put more tests on a
 * device than its slots, so none is made while they live. */
static int orphaned(krun_tokens *t, const char *path, int create, kh_err *err) {
  kh_buf held = {0};
  int n = live_holders(t, &held);
  if (n && create)
    kh_errf(err, "the token set of %s is gone, but %d test%s still hold%s slots by it "
            "(%s): the set was removed (ipcrm, or a cleaner) while %s ran, and a new set "
            "at full capacity would put more tests on the device than it has slots. Run "
            "again once %s ended (or, if those processes are no kiln tests, remove their "
            "holder files in %s)", path, n, n == 1 ? "" : "s", n == 1 ? "s" : "",
            held.data, n == 1 ? "it" : "they", n == 1 ? "it has" : "they have", t->holders);
  else if (n)
    kh_errf(err, "no token set for %s: it was removed (ipcrm, or a cleaner) while %d "
            "test%s held slots by it (%s); no kiln makes a new one until %s ended", path,
            n, n == 1 ? "" : "s", held.data, n == 1 ? "it has" : "they have");
  kh_buf_free(&held);
  return n;
}

int krun_tokens_open(krun_tokens *t, const char *path, int create, kh_err *err) {
  memset(t, 0, sizeof *t);
  name_set(t, path);
  if (!create) {
    /* Reading only: a key or a set that is not there is not made. */
    t->semid = semget(krun_tokens_ipc_key(path), 0, 0);
    if (t->semid < 0 && !orphaned(t, path, 0, err))
      return kh_errf(err, "no token set for %s yet (no kiln has run with this key)", path), 1;
    if (t->semid < 0) return 1;
    if (wait_ready(t->semid) != 0)
      return kh_errf(err, "token set for %s: %s", path, strerror(errno));
    return 0;
  }
  /* The file only names the set (and `kiln devices` finds it); the key
   * comes from the name, so losing the file loses nothing. */
  int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return kh_errf(err, "token key %s: cannot create: %s", path,
                    strerror(errno));
  close(fd);
  name_set(t, path);        /* a dangling link now names a file */
  key_t key = krun_tokens_ipc_key(path);
  if (semget(key, 0, 0) < 0 && errno == ENOENT && orphaned(t, path, 1, err)) return -1;
  t->semid = semget(key, NSEMS, IPC_CREAT | IPC_EXCL | 0660);
  if (t->semid >= 0) {
    /* New set: every value is 0; the first semop marks it ready. */
    struct sembuf ready = {0, 1, 0};
    if (semop_retry(t->semid, &ready, 1) != 0)
      return kh_errf(err, "token set for %s: %s", path, strerror(errno));
  } else if (errno == EEXIST) {
    t->semid = semget(key, 0, 0);
    if (t->semid < 0 || wait_ready(t->semid) != 0)
      return kh_errf(err, "token set for %s: %s", path, strerror(errno));
    struct semid_ds ds;
    union semun_arg arg = {.buf = &ds};
    if (semctl(t->semid, 0, IPC_STAT, arg) == 0 && ds.sem_nsems != NSEMS)
      return kh_errf(err, "token set for %s (id %d) has %lu semaphores, "
                           "kiln uses %d; remove it with `ipcrm -s %d`",
                      path, t->semid, (unsigned long)ds.sem_nsems, NSEMS,
                      t->semid);
  } else {
    return kh_errf(err, "token set for %s: semget: %s", path,
                    strerror(errno));
  }
  mkdir(t->holders, 0775);
  return 0;
}

int krun_tokens_capacity(const krun_tokens *t, int dev) {
  return semctl(t->semid, CAP(dev), GETVAL);
}

int krun_tokens_free(const krun_tokens *t, int dev) {
  return semctl(t->semid, FREE(dev), GETVAL);
}

/* The set's lock (semaphore 0). Two kilns that size one device at once
 * would otherwise both read the old capacity and both add their change.
 * SEM_UNDO: a parent killed while it holds the lock gives it back. */
static int lock_set(const krun_tokens *t, int op) {
  struct sembuf b = {0, (short)op, SEM_UNDO};
  return semop_retry(t->semid, &b, 1);
}

int krun_tokens_ensure(krun_tokens *t, int dev, int want, kh_err *err) {
  err->msg[0] = '\0';
  if (dev < 0 || dev >= KRUN_MAX_DEVICES)
    return kh_errf(err, "device %d is beyond the %d kiln supports", dev,
                    KRUN_MAX_DEVICES);
  char dir[PATH_MAX + 32];
  snprintf(dir, sizeof dir, "%s/%d", t->holders, dev);
  mkdir(dir, 0775);         /* for holder files */
  if (lock_set(t, -1) != 0) return kh_errf(err, "token set: lock: %s", strerror(errno));
  int cap = krun_tokens_capacity(t, dev);
  int saved = errno, moved = 0;
  if (cap >= 0 && cap != want) {
    /* Free slots and capacity move together in one atomic semop;
     * withdrawing slots never waits for a holder. */
    short delta = (short)(want - cap);
    struct sembuf ops[2] = {{(unsigned short)FREE(dev), delta, IPC_NOWAIT},
                            {(unsigned short)CAP(dev), delta, IPC_NOWAIT}};
    moved = semop_retry(t->semid, ops, 2) == 0;
  }
  lock_set(t, 1);
  if (cap < 0) return kh_errf(err, "token set: %s", strerror(saved));
  if (moved || cap == want) return want;
  snprintf(err->msg, sizeof err->msg,
           "device %d keeps %d slots (another kiln holds some; wanted %d)",
           dev, cap, want);
  return cap;
}

int krun_tokens_semnum(int dev) { return FREE(dev); }

/* A process's start time (clock ticks since boot, /proc/PID/stat's 22nd
 * field), which tells it from a later process given the same pid; -1 when
 * it is gone or unreadable. */
static long long start_ticks(pid_t pid) {
  char path[64], *text = NULL;
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  if (kh_read_file(path, 4096, &text, NULL) != 0) return -1;
  long long ticks = -1;
  char *p = strrchr(text, ')');   /* the command may hold spaces and ')' */
  for (int field = 2; p && *p && field < 22; field++) p = strchr(p + 1, ' ');
  if (p) ticks = strtoll(p + 1, NULL, 10);
  free(text);
  return ticks;
}

void krun_tokens_holder_add(const krun_tokens *t, int dev, pid_t pid,
                            const char *what, int slots) {
  char path[PATH_MAX + 64], line[512];
  snprintf(path, sizeof path, "%s/%d/%ld", t->holders, dev, (long)pid);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  /* The first line is what `kiln devices` shows; the second tells the
   * holder from a later process of the same pid. */
  int n = snprintf(line, sizeof line, "%s slots=%d\nstart=%lld\n", what, slots,
                   start_ticks(pid));
  (void)kh_write_all(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
  close(fd);
}

void krun_tokens_holder_remove(const krun_tokens *t, int dev, pid_t pid) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%d/%ld", t->holders, dev, (long)pid);
  unlink(path);
}

/* Each live holder of dev; verified: only those whose file records the
 * start time that the pid's process has (a file of an older kiln has none,
 * and its pid may be another process's by now). */
static void holders_each(const krun_tokens *t, int dev, int verified,
                         void (*fn)(pid_t pid, const char *what, void *arg), void *arg) {
  char dir[PATH_MAX + 32];
  snprintf(dir, sizeof dir, "%s/%d", t->holders, dev);
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    long long pid;
    if (kh_parse_ll(e->d_name, 1, 1 << 30, &pid) != 0) continue;
    char path[PATH_MAX + 320];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
      unlink(path);         /* its slots went back with it */
      continue;
    }
    char *text = NULL;
    if (kh_read_file(path, 4096, &text, NULL) != 0) continue;
    const char *start = strstr(text, "\nstart=");
    long long was = start ? strtoll(start + 7, NULL, 10) : -1;
    if (was >= 0 && start_ticks((pid_t)pid) != was) {
      unlink(path);         /* the pid is another process's now */
      free(text);
      continue;
    }
    text[strcspn(text, "\n")] = '\0';
    if (!verified || was >= 0) fn((pid_t)pid, text, arg);
    free(text);
  }
  closedir(d);
}

void krun_tokens_holders(const krun_tokens *t, int dev,
                         void (*fn)(pid_t pid, const char *what, void *arg), void *arg) {
  holders_each(t, dev, 0, fn, arg);
}
