/* Walks over processes, shared by containment (contain.c: what a test
 * left) and the guard (guard.c: what a dead kiln left): the pids a file
 * lists, every process in /proc, every process in a cgroup tree, a
 * process's environment, and whether a process is already ending (so
 * that neither counts one that was exiting by itself as left behind).
 * Reading only; what to do with each process is the caller's.
 */
#include "run-impl.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How deep cgroups under the run's are searched (the run's, a job's, and
 * what a test made under its own). */
#define CGROUP_DEPTH 4

int krun__pids_in_file(const char *path, krun__pid_fn *fn, void *arg) {
  char *text = NULL;
  if (kh_read_file(path, 1 << 20, &text, NULL) != 0) return -1;
  for (char *p = text; *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || fn((pid_t)v, arg)) break;
    p = end;
  }
  free(text);
  return 0;
}

void krun__procs_each(krun__pid_fn *fn, void *arg) {
  DIR *d = opendir("/proc");
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    long long pid;
    if (kh_parse_ll(e->d_name, 1, 1 << 30, &pid) == 0 && fn((pid_t)pid, arg)) break;
  }
  if (d) closedir(d);
}

static void cgroup_walk(const char *cg, int remove, krun__pid_fn *fn, void *arg, int depth) {
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/cgroup.procs", cg);
  (void)krun__pids_in_file(path, fn, arg);
  DIR *d = depth < CGROUP_DEPTH ? opendir(cg) : NULL;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", cg, e->d_name);
    cgroup_walk(path, remove, fn, arg, depth + 1);
    if (remove) rmdir(path);
  }
  if (d) closedir(d);
}

void krun__cgroup_each(const char *cg, int remove, krun__pid_fn *fn, void *arg) {
  cgroup_walk(cg, remove, fn, arg, 0);
}

int krun__environ_each(pid_t pid, int (*fn)(const char *var, void *arg), void *arg) {
  char path[64], *env = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "/proc/%ld/environ", (long)pid);
  if (kh_read_file(path, 1 << 22, &env, &len) != 0) return -1;
  for (size_t off = 0; off < len; off += strlen(env + off) + 1)
    if (fn(env + off, arg)) break;
  free(env);
  return 0;
}

/* The kernel's PF_EXITING (include/linux/sched.h): the task is in
 * do_exit. It is set before the task closes its files, so a helper whose
 * exit closed the last end of a test's pipes has it when kiln looks. */
#define TASK_EXITING 0x4u

int krun__proc_ending(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
  DIR *d = opendir(path);
  if (!d) return kill(pid, 0) != 0 && errno == ESRCH;
  struct dirent *e;
  int live = 0;
  while (!live && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    char stat[320], *s = NULL;
    snprintf(stat, sizeof stat, "/proc/%ld/task/%s/stat", (long)pid, e->d_name);
    if (kh_read_file(stat, 4096, &s, NULL) != 0) continue;   /* that thread is gone */
    const char *rp = strrchr(s, ')');
    char state = 0;
    unsigned flags = 0;
    /* state ppid pgrp session tty_nr tpgid flags */
    if (rp && sscanf(rp + 1, " %c %*d %*d %*d %*d %*d %u", &state, &flags) == 2)
      live = state != 'Z' && state != 'X' && !(flags & TASK_EXITING);
    else
      live = 1;
    free(s);
  }
  closedir(d);
  return !live;
}

int krun__procs_settle(const pid_t *pids, int n, double ms) {
  double until = kh_now_ms() + ms;
  int left = 0;
  for (int i = 0; i < n; i++)
    while (!krun__proc_ending(pids[i])) {
      if (kh_now_ms() >= until) {
        left++;
        break;
      }
      usleep(2000);
    }
  return left;
}
