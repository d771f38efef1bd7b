/* Device tokens on a System V semaphore set; see tokens.h for the layout.
 * System V rather than POSIX semaphores because SEM_UNDO lets the kernel
 * return a dead process's slots, which no other primitive does.
 */
#include "tokens.h"

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

#define KH__NSEMS (1 + 2 * KH_MAX_DEVICES)
#define KH__FREE(d) (1 + (d))
#define KH__CAP(d) (1 + KH_MAX_DEVICES + (d))

/* Linux wants the caller to define it. */
union kh__semun {
  int val;
  struct semid_ds *buf;
  unsigned short *array;
};

char *kh_tokens_default_path(const char *backend) {
  return kh_asprintf("/tmp/kiln-tokens-%s", backend);
}

static int kh__semop(int semid, struct sembuf *ops, size_t n) {
  int r;
  do r = semop(semid, ops, n);
  while (r < 0 && errno == EINTR);
  return r;
}

/* Waits (up to 10 s) until the creator has initialised the set. */
static int kh__wait_ready(int semid) {
  for (int i = 0; i < 1000; i++) {
    struct semid_ds ds;
    union kh__semun arg = {.buf = &ds};
    if (semctl(semid, 0, IPC_STAT, arg) != 0) return -1;
    if (ds.sem_otime != 0) return 0;
    usleep(10000);
  }
  return errno = ETIMEDOUT, -1;
}

int kh_tokens_open(kh_tokens *t, const char *path, kh_err *err) {
  memset(t, 0, sizeof *t);
  snprintf(t->key_path, sizeof t->key_path, "%s", path);
  snprintf(t->holders, sizeof t->holders, "%s.d", path);
  int fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return kh_errf(err, "token key %s: cannot create: %s", path,
                    strerror(errno));
  close(fd);
  key_t key = ftok(path, 'k');
  if (key == -1)
    return kh_errf(err, "token key %s: ftok: %s", path, strerror(errno));
  t->semid = semget(key, KH__NSEMS, IPC_CREAT | IPC_EXCL | 0660);
  if (t->semid >= 0) {
    /* New set: every value is 0; the first semop marks it ready. */
    struct sembuf ready = {0, 1, 0};
    if (kh__semop(t->semid, &ready, 1) != 0)
      return kh_errf(err, "token set for %s: %s", path, strerror(errno));
  } else if (errno == EEXIST) {
    t->semid = semget(key, 0, 0);
    if (t->semid < 0 || kh__wait_ready(t->semid) != 0)
      return kh_errf(err, "token set for %s: %s", path, strerror(errno));
    struct semid_ds ds;
    union kh__semun arg = {.buf = &ds};
    if (semctl(t->semid, 0, IPC_STAT, arg) == 0 && ds.sem_nsems != KH__NSEMS)
      return kh_errf(err, "token set for %s (id %d) has %lu semaphores, "
                           "kiln uses %d; remove it with `ipcrm -s %d`",
                      path, t->semid, (unsigned long)ds.sem_nsems, KH__NSEMS,
                      t->semid);
  } else {
    return kh_errf(err, "token set for %s: semget: %s", path,
                    strerror(errno));
  }
  mkdir(t->holders, 0775);
  return 0;
}

int kh_tokens_capacity(const kh_tokens *t, int dev) {
  return semctl(t->semid, KH__CAP(dev), GETVAL);
}

int kh_tokens_free(const kh_tokens *t, int dev) {
  return semctl(t->semid, KH__FREE(dev), GETVAL);
}

int kh_tokens_ensure(kh_tokens *t, int dev, int want, kh_err *err) {
  err->msg[0] = '\0';
  if (dev < 0 || dev >= KH_MAX_DEVICES)
    return kh_errf(err, "device %d is beyond the %d kiln supports", dev,
                    KH_MAX_DEVICES);
  int cap = kh_tokens_capacity(t, dev);
  if (cap < 0) return kh_errf(err, "token set: %s", strerror(errno));
  if (cap == want) return cap;
  /* Free slots and capacity move together in one atomic semop; withdrawing
   * slots never waits for a holder. */
  short delta = (short)(want - cap);
  struct sembuf ops[2] = {{(unsigned short)KH__FREE(dev), delta, IPC_NOWAIT},
                          {(unsigned short)KH__CAP(dev), delta, IPC_NOWAIT}};
  if (kh__semop(t->semid, ops, 2) == 0) return want;
  snprintf(err->msg, sizeof err->msg,
           "device %d keeps %d slots (another kiln holds some; wanted %d)",
           dev, cap, want);
  return cap;
}

int kh_tokens_take(const kh_tokens *t, int dev, int n) {
  struct sembuf op = {(unsigned short)KH__FREE(dev), (short)-n, SEM_UNDO};
  return kh__semop(t->semid, &op, 1);
}

int kh_tokens_semnum(int dev) { return KH__FREE(dev); }

void kh_tokens_holder_add(const kh_tokens *t, int dev, pid_t pid,
                          const char *test_id, int slots) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%d", t->holders, dev);
  mkdir(path, 0775);
  snprintf(path, sizeof path, "%s/%d/%ld", t->holders, dev, (long)pid);
  FILE *f = fopen(path, "we");
  if (!f) return;
  fprintf(f, "%s slots=%d\n", test_id, slots);
  fclose(f);
}

void kh_tokens_holder_remove(const kh_tokens *t, int dev, pid_t pid) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%d/%ld", t->holders, dev, (long)pid);
  unlink(path);
}

void kh_tokens_holders(const kh_tokens *t, int dev,
                       void (*fn)(pid_t pid, const char *what, void *arg),
                       void *arg) {
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
    text[strcspn(text, "\n")] = '\0';
    fn((pid_t)pid, text, arg);
    free(text);
  }
  closedir(d);
}
