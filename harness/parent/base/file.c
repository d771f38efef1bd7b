/* Files for the kiln parent; see base.h. */
#include "base.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- Files ----------------------------------------------------------------- */

int kh_mkdir_p(const char *path, mode_t mode) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
    return errno = ENAMETOOLONG, -1;
  /* kiln makes a folder per test under folders that mostly exist: one
   * mkdir when the parent is there, the walk only when it is not. */
  if (mkdir(tmp, mode) == 0) return 0;
  if (errno == EEXIST) {
    struct stat st;
    return stat(tmp, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
  }
  if (errno != ENOENT) return -1;
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, mode) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  if (mkdir(tmp, mode) != 0 && errno != EEXIST) return -1;
  return 0;
}

/* Empties the folder open at fd of everything but folders; the name of
 * its first subfolder into sub (""; none). */
static void rm_files(int fd, char *sub, size_t n) {
  sub[0] = '\0';
  int dup_fd = dup(fd);
  DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (!d) {
    if (dup_fd >= 0) close(dup_fd);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    if (unlinkat(fd, e->d_name, 0) == 0) continue;
    if ((errno == EISDIR || errno == EPERM) && !sub[0]) snprintf(sub, n, "%s", e->d_name);
  }
  closedir(d);
}

/* The name under which the folder open at child sits in the one open at
 * parent; 0, or -1. */
static int name_in(int parent, int child, char *name, size_t n) {
  struct stat c;
  if (fstat(child, &c) != 0) return -1;
  int dup_fd = dup(parent);
  DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (!d) {
    if (dup_fd >= 0) close(dup_fd);
    return -1;
  }
  struct dirent *e;
  int rc = -1;
  while (rc && (e = readdir(d)) != NULL)
    if (e->d_ino == c.st_ino && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
      rc = snprintf(name, n, "%s", e->d_name) < (int)n ? 0 : -1;
  closedir(d);
  return rc;
}

/* By descriptors, one folder open at a time, so that no path grows with
 * the depth: a test may leave a tree deeper than PATH_MAX, which nftw and
 * any path-based walk cannot remove. */
int kh_rm_rf(const char *path) {
  /* Mostly an empty folder: one rmdir, the walk only when that fails. */
  if (rmdir(path) == 0 || errno == ENOENT) return 0;
  if (unlink(path) == 0) return 0;
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  long depth = 0;
  char sub[NAME_MAX + 1];
  for (long steps = 0; fd >= 0 && steps < 100000000; steps++) {
    rm_files(fd, sub, sizeof sub);
    if (sub[0]) {
      int in = openat(fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (in < 0) break;      /* a folder it cannot enter: give up */
      close(fd);
      fd = in;
      depth++;
      continue;
    }
    if (depth == 0) break;
    int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char name[NAME_MAX + 1];
    int ok = up >= 0 && name_in(up, fd, name, sizeof name) == 0 &&
             unlinkat(up, name, AT_REMOVEDIR) == 0;
    close(fd);
    fd = up;
    depth--;
    if (!ok) break;
  }
  if (fd >= 0) close(fd);
  return rmdir(path) == 0 || errno == ENOENT ? 0 : -1;
}

int kh_read_file(const char *path, size_t max, char **out, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  kh_buf b = {0};
  char chunk[65536];
  for (;;) {
    ssize_t n = kh_read(fd, chunk, sizeof chunk);
    if (n < 0) {
      int e = errno;
      close(fd);
      kh_buf_free(&b);
      return errno = e, -1;
    }
    if (n == 0) break;
    if (b.len + (size_t)n > max) {
      close(fd);
      kh_buf_free(&b);
      return errno = EFBIG, -1;
    }
    kh_buf_add(&b, chunk, (size_t)n);
  }
  close(fd);
  if (!b.data) kh_buf_add(&b, "", 0);
  *out = b.data;
  if (len) *len = b.len;
  return 0;
}

int kh_write_atomic(const char *path, const void *data, size_t len) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >=
      (int)sizeof tmp)
    return errno = ENAMETOOLONG, -1;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  if (kh_write_all(fd, data, len) != 0 || fsync(fd) != 0) {
    int e = errno;
    close(fd);
    unlink(tmp);
    return errno = e, -1;
  }
  close(fd);
  if (rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return errno = e, -1;
  }
  return 0;
}

ssize_t kh_read(int fd, void *buf, size_t n) {
  ssize_t r;
  do r = read(fd, buf, n);
  while (r < 0 && errno == EINTR);
  return r;
}

int kh_write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* ---- Where kiln is ------------------------------------------------------------ */

const char *kh_self_exe(void) {
  static char exe[PATH_MAX];
  if (exe[0]) return exe;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  return exe;
}

const char *kh_self_dir(void) {
  static char dir[PATH_MAX];
  if (dir[0]) return dir;
  snprintf(dir, sizeof dir, "%s", kh_self_exe());
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  else dir[0] = '\0';
  return dir;
}

int kh_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return a && b && stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}
