/* What the emulation's test programs (test-emulation*.cc,
 * test-named-barriers.cc) share: CHECK, which counts failures instead of
 * stopping, device memory used from the host, and cases that must abort,
 * run in a child process. Plain C++, no test framework: a program exits
 * non-zero if g_failures is.
 */
#ifndef KILN_TEST_CHECK_H
#define KILN_TEST_CHECK_H

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <string>

#include "hip-on-host.h"

inline std::atomic<int> g_failures;

#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__,     \
              #cond);                                                      \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
      g_failures++;                                                        \
    }                                                                      \
  } while (0)

#define HIP_OK(expr)                                                       \
  do {                                                                     \
    hipError_t e_ = (expr);                                                \
    CHECK(e_ == hipSuccess, "%s returned %s", #expr, hipGetErrorName(e_)); \
  } while (0)

/* Device memory, used directly from the host (it is host memory). */
template <class T> inline T *dev_alloc(size_t n) {
  void *p = nullptr;
  HIP_OK(hipMalloc(&p, n * sizeof(T)));
  return static_cast<T *>(p);
}

inline void dev_free(void *p) { HIP_OK(hipFree(p)); }

/* Runs `fn` in a child; returns its wait status and its stderr. */
inline int in_child(const std::function<void()> &fn, std::string *err) {
  int pfd[2];
  if (pipe(pfd) != 0) return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(pfd[0]);
    dup2(pfd[1], 2);
    fn();
    _exit(0);
  }
  close(pfd[1]);
  char buf[4096];
  ssize_t got;
  while ((got = read(pfd[0], buf, sizeof buf)) != 0) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    err->append(buf, (size_t)got);
  }
  close(pfd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

/* `fn` must abort (SIGABRT) with `needle` in its stderr. */
inline void expect_abort(const char *what, const std::function<void()> &fn,
                         const char *needle) {
  std::string err;
  const int status = in_child(fn, &err);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
        "%s: child status %#x, stderr: %s", what, status, err.c_str());
  CHECK(err.find(needle) != std::string::npos,
        "%s: stderr lacks \"%s\": %s", what, needle, err.c_str());
}

#endif
