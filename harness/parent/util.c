/* Helpers for the kiln parent: clocks, strings, files and captured helper
 * commands. See util.h.
 */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int kh__errf(kh_err *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (e) vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- Time ---------------------------------------------------------------- */

double kh__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double kh__wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void kh__iso_time(double wall_s, char *out, size_t n) {
  time_t t = (time_t)floor(wall_s);
  int ms = (int)((wall_s - (double)t) * 1000.0);
  if (ms > 999) ms = 999;
  struct tm tm;
  gmtime_r(&t, &tm);
  char base[32];
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, n, "%s.%03dZ", base, ms);
}

/* ---- Memory and strings ---------------------------------------------------- */

static void kh__oom(void) {
  static const char msg[] = "kiln: out of memory\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
  abort();
}

void *kh__xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) kh__oom();
  return p;
}

void *kh__xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size ? size : 1);
  if (!p) kh__oom();
  return p;
}

void *kh__xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) kh__oom();
  return p;
}

char *kh__strdup(const char *s) {
  if (!s) return NULL;
  return kh__strndup(s, strlen(s));
}

char *kh__strndup(const char *s, size_t n) {
  char *d = kh__xmalloc(n + 1);
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

char *kh__asprintf(const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *s = kh__xmalloc((size_t)(n < 0 ? 0 : n) + 1);
  vsnprintf(s, (size_t)(n < 0 ? 0 : n) + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

int kh__parse_ll(const char *s, long long lo, long long hi, long long *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int kh__parse_double(const char *s, double lo, double hi, double *out) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || *end || !(v >= lo && v <= hi)) return -1;
  *out = v;
  return 0;
}

/* Length of the valid UTF-8 sequence at s, or 0 when it is not one. */
static size_t kh__utf8_len(const unsigned char *s) {
  if (s[0] < 0x80) return 1;
  size_t n = (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
           : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
  if (n == 0 || (n == 2 && s[0] < 0xc2)) return 0;
  for (size_t i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80) return 0;
  return n;
}

void kh__text_clean(char *s) {
  unsigned char *p = (unsigned char *)s;
  while (*p) {
    size_t n = kh__utf8_len(p);
    if (n == 0 || (n == 1 && *p < 0x20 && *p != '\n' && *p != '\t') ||
        *p == 0x7f) {
      *p++ = '?';
      continue;
    }
    p += n;
  }
}

void kh__buf_add(kh_buf *b, const void *data, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    b->data = kh__xrealloc(b->data, cap);
    b->cap = cap;
  }
  memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void kh__buf_addf(kh_buf *b, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n > 0) {
    char *tmp = kh__xmalloc((size_t)n + 1);
    vsnprintf(tmp, (size_t)n + 1, fmt, ap2);
    kh__buf_add(b, tmp, (size_t)n);
    free(tmp);
  }
  va_end(ap2);
}

void kh__buf_free(kh_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

/* ---- Files ----------------------------------------------------------------- */

int kh__mkdir_p(const char *path, mode_t mode) {
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

static int kh__rm_one(const char *path, const struct stat *st, int flag,
                      struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  (void)remove(path);
  return 0;
}

void kh__rm_rf(const char *path) {
  (void)nftw(path, kh__rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int kh__read_file(const char *path, size_t max, char **out, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  kh_buf b = {0};
  char chunk[65536];
  for (;;) {
    ssize_t n = kh__read(fd, chunk, sizeof chunk);
    if (n < 0) {
      int e = errno;
      close(fd);
      kh__buf_free(&b);
      return errno = e, -1;
    }
    if (n == 0) break;
    if (b.len + (size_t)n > max) {
      close(fd);
      kh__buf_free(&b);
      return errno = EFBIG, -1;
    }
    kh__buf_add(&b, chunk, (size_t)n);
  }
  close(fd);
  if (!b.data) kh__buf_add(&b, "", 0);
  *out = b.data;
  if (len) *len = b.len;
  return 0;
}

int kh__write_atomic(const char *path, const void *data, size_t len) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >=
      (int)sizeof tmp)
    return errno = ENAMETOOLONG, -1;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  if (kh__write_all(fd, data, len) != 0 || fsync(fd) != 0) {
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

ssize_t kh__read(int fd, void *buf, size_t n) {
  ssize_t r;
  do r = read(fd, buf, n);
  while (r < 0 && errno == EINTR);
  return r;
}

int kh__write_all(int fd, const void *buf, size_t n) {
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

/* ---- Helper commands ------------------------------------------------------- */

static void kh__capture_child(char *const argv[], int out_fd) {
  int null = open("/dev/null", O_RDWR);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDERR_FILENO);
  }
  dup2(out_fd, STDOUT_FILENO);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);
  execvp(argv[0], argv);
  _exit(127);
}

int kh__capture(char *const argv[], size_t max, double timeout_s,
                char **out, size_t *len) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return -1;
  }
  if (pid == 0) kh__capture_child(argv, p[1]);
  close(p[1]);
  kh_buf b = {0};
  double deadline = kh__now_ms() + timeout_s * 1e3;
  int timed_out = 0;
  for (;;) {
    double left = deadline - kh__now_ms();
    if (left <= 0) {
      timed_out = 1;
      break;
    }
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    int r = poll(&pfd, 1, (int)left + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char chunk[16384];
    ssize_t n = kh__read(p[0], chunk, sizeof chunk);
    if (n <= 0) break;
    if (b.len < max)
      kh__buf_add(&b, chunk, (size_t)n < max - b.len ? (size_t)n : max - b.len);
  }
  close(p[0]);
  if (timed_out) kill(pid, SIGKILL);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!b.data) kh__buf_add(&b, "", 0);
  *out = b.data;
  if (len) *len = b.len;
  if (timed_out) return errno = ETIMEDOUT, -1;
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return WEXITSTATUS(st) == 127 ? -1 : WEXITSTATUS(st);
}

void kh__buf_add_yq(kh_buf *y, const char *s) {
  kh__buf_add(y, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\') kh__buf_addf(y, "\\%c", *p);
    else if (*p < 0x20 || *p == 0x7f) kh__buf_addf(y, "\\x%02x", *p);
    else kh__buf_add(y, p, 1);
  }
  kh__buf_add(y, "\"", 1);
}
