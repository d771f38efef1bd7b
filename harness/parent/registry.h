/* What there is to run (prefix kh_): finding a backend's runner, reading
 * its registry (`--list`) and its devices (`--devices`) in child processes,
 * and selecting tests with selectors (suite, suite/test, globs, @tag,
 * exclusions). The parent learns all of this without linking a suite or a
 * GPU runtime.
 */
#ifndef KILN_PARENT_REGISTRY_H
#define KILN_PARENT_REGISTRY_H

#include "settings.h"
#include "base.h"

/* ---- Runners ------------------------------------------------------------- */

/* Finds kiln-runner-<backend>: dir (--runner-dir), $KILN_RUNNER_DIR, the
 * directory of /proc/self/exe, the build tree, the install libexecdir.
 * Returns a malloc'd path, or NULL (with the places tried in err). */
char *kh_runner_find(const char *backend, const char *dir, kh_err *err);

/* ---- The registry --------------------------------------------------------- */

typedef struct kh_test {
  char *id;                 /* suite/name */
  char *suite;
  char *name;
  char *tags;               /* comma-separated, suite's and test's */
  int slots;                /* -1: the whole device */
  int timeout_s;            /* 0: the run's default */
  int needs_gpu;
  char *file;
  int line;
} kh_test;

typedef struct kh_registry {
  kh_test *tests;
  int n;
} kh_registry;

int kh_registry_load(const char *runner, kh_registry *reg, kh_err *err);
void kh_registry_free(kh_registry *reg);

/* ---- Selection -------------------------------------------------------------- */

/* Marks chosen[i] for the selected tests. Positive selectors add (none: all
 * tests), "-SEL" removes. Tests tagged `fault` come only when a selector
 * names them explicitly (@fault, their suite, their id), and so do tests
 * tagged `bench` (kiln bench's trivial tests). With hold_slow
 * (the host backend), tests tagged `slow` -- GPU-sized cases that take
 * minutes in emulation -- come only through `@slow` or their exact id, and
 * *held counts those left out. A selector that matches no test is an error
 * naming it. */
int kh_select(const kh_registry *reg, char *const *sel, int nsel,
              int hold_slow, unsigned char *chosen, int *held, kh_err *err);

/* ---- Devices --------------------------------------------------------------- */

typedef struct kh_device {
  int index;                /* as the runner sees it */
  int physical;             /* token index: from the outer mask if numeric */
  char visible[64];         /* the outer mask's entry ("" when none) */
  char name[128];
  char arch[64];
  int warp_size;
  long long total_bytes;
  long long free_bytes;
} kh_device;

typedef struct kh_backend_info {
  int backend;              /* kh_backend */
  char runner[4096];
  int ndevices;
  kh_device dev[KH_MAX_DEVICES];
  char error[512];          /* why there are none */
} kh_backend_info;

/* Runs `runner --devices` in a child (the parent never starts a GPU
 * runtime) and maps devices to physical ids through the outer mask. */
int kh_devices_probe(int backend, const char *runner, kh_backend_info *bi,
                     kh_err *err);
/* Resolves --backend auto: the first of cuda, hip whose runner is built and
 * finds a device, else host. Fills bi for the chosen backend. */
int kh_backend_resolve(int wanted, const char *runner_dir, kh_backend_info *bi,
                       kh_err *err);
/* The visible-devices variables a child of this backend gets. */
const char *kh_visible_var(int backend, int which);
/* Sets this process's visible-devices variables so that it (and what it
 * execs) sees exactly bi->dev[dev], as device 0. Between fork and exec. */
void kh_visible_narrow(const kh_backend_info *bi, int dev);

#endif
