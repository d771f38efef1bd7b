/* Walks over processes, shared by containment (contain.c: what a test
 * left) and the guard (guard.c: what a dead kiln left): the pids a file
 * lists, every process in /proc, every process in a cgroup tree, and a
 * process's environment. Reading only; what to do with each process is
 * the caller's.
 */
#include "run-impl.h"

#include <dirent.h>
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
