/* Running tests (prefix krun_): the settings a run takes, the runners and
 * what they hold (registry, devices), shards, device tokens, starting a
 * process (one spawn request, one spawn function), and `kiln run` itself:
 * the scheduler, the warm pool and the event loop that fill the report
 * model (report/report.h) as children report.
 */
#ifndef KILN_PARENT_RUN_H
#define KILN_PARENT_RUN_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "base.h"
#include "select.h"

#define KRUN_MAX_DEVICES 32
/* `warm: auto` (the default): a device gets KRUN_WARM_PER_SLOT warm
 * children per slot, so each test that ends finds its successor's runtime
 * and context already open. The one place that default is decided. */
#define KRUN_WARM_AUTO (-1)
#define KRUN_WARM_PER_SLOT 1
/* `slots: auto` (krun_settings.slots): memory-aware slots (memslots.c); a
 * device then has KRUN_AUTO_UNITS of them. */
#define KRUN_SLOTS_AUTO (-1)
#define KRUN_AUTO_UNITS 100

/* ---- Settings: defaults < config < flags ---------------------------------- */

typedef enum { KRUN_ISO_PROCESS = 0, KRUN_ISO_NONE = 1 } krun_isolation;
typedef enum {
  KRUN_BACKEND_AUTO = 0, KRUN_BACKEND_HOST, KRUN_BACKEND_HIP, KRUN_BACKEND_CUDA
} krun_backend;
extern const char *const krun_backend_names[];   /* by krun_backend */
extern const char *const krun_sanitize_names[];  /* none, memcheck, ... */
typedef enum { KRUN_LEAKS_FAIL = 0, KRUN_LEAKS_WARN = 1 } krun_leak_policy;

/* Slots for one device, from a config's devices: list or a resource spec. */
typedef struct krun_dev_slots {
  int id;
  int slots;                /* 0: the default */
} krun_dev_slots;

/* What a test needs, set from a config (`resources:`), as CTest's
 * RESOURCE_GROUPS set it outside the test's source: tests whose id or
 * suite matches the glob need `gpus` devices at once, `slots` on each
 * (0: keep the test's own). */
typedef struct krun_resource {
  char match[256];
  int gpus, slots;
} krun_resource;

typedef struct krun_settings {
  int jobs;                 /* children at once; 0: number of CPUs */
  int backend;              /* krun_backend */
  int slots;                /* slots per GPU; 0: default (2); KRUN_SLOTS_AUTO */
  krun_dev_slots devices[KRUN_MAX_DEVICES];
  int ndevices;             /* 0: every device the runner sees */
  double timeout_s;         /* per test, unless the test sets its own */
  double grace_s;           /* SIGTERM .. SIGKILL */
  int retries;
  int repeat;
  int isolation;            /* krun_isolation */
  int leaks;                /* krun_leak_policy */
  int poison;
  unsigned long long seed;  /* used when set */
  double cap;               /* allocation cap fraction; 0: runner default */
  char *wrap;               /* command prefix for every child, or NULL */
  int warm;                 /* warm children per device; 0 off; KRUN_WARM_AUTO */
  int sanitize;             /* index into krun_sanitize_names; 0: none */
  char **selection;         /* selectors, used when none are given */
  int nselection;
  ksel_tol *tol;
  int ntol;
  krun_resource *res;       /* the last match wins */
  int nres;
  unsigned long long set;   /* bit per setting given explicitly */
} krun_settings;

void krun_settings_init(krun_settings *s);
void krun_settings_free(krun_settings *s);
/* Copies into dst what src has explicitly (flags over a config); a list
 * from src replaces dst's (tolerances append). */
void krun_settings_overlay(krun_settings *dst, const krun_settings *src);
/* Sets a scalar setting from text. The error names the setting, the value
 * and what it accepts; the caller adds where. 0, -1 for a bad value, -2
 * for an unknown name. */
int krun_setting_set(krun_settings *s, const char *name, const char *text,
                     kh_err *err);
/* What the named setting accepts ("an integer from 1 to 1024"), or NULL
 * for an unknown name; *textual: it takes strings (a config may quote). */
const char *krun_setting_expect(const char *name, char *out, size_t n,
                                int *textual);
int krun_setting_is_set(const krun_settings *s, const char *name);
int krun_setting_add_tolerance(krun_settings *s, const char *spec, kh_err *err);
void krun_setting_add_selector(krun_settings *s, const char *sel);
/* Adds a device's slots (config devices: or a resource spec); -1 when the
 * list is full. */
int krun_setting_add_device(krun_settings *s, int id, int slots);
void krun_setting_clear_devices(krun_settings *s);
/* Adds a test's needs (a config's resources:); -1 with err for a glob too
 * long or a count out of range. */
int krun_setting_add_resource(krun_settings *s, const char *match, int gpus, int slots,
                              kh_err *err);
/* Calls fn(key, value) for each effective setting, as the report shows it. */
void krun_settings_each(const krun_settings *s,
                        void (*fn)(const char *key, const char *value, void *arg),
                        void *arg);

/* ---- Runners, their registry and devices ---------------------------------- */

/* Finds kiln-runner-<backend>: dir (--runner-dir), $KILN_RUNNER_DIR, the
 * directory of this kiln, the build tree, the install libexecdir. A
 * malloc'd path, or NULL with the places tried in err. */
char *krun_runner_find(const char *backend, const char *dir, kh_err *err);

typedef struct krun_test {
  char *id, *suite, *name, *tags, *file;
  int slots;                /* on each of its devices; -1: the whole device */
  int devices;              /* devices it needs at once (from 1) */
  int timeout_s;            /* 0: the run's default */
  int needs_gpu;
  int line;
} krun_test;

typedef struct krun_registry {
  krun_test *tests;
  ksel_test *views;         /* the same tests, for select.h */
  int n;
} krun_registry;

/* Asks the runner (`--list`, in a child process). */
int krun_registry_load(const char *runner, krun_registry *reg, kh_err *err);
/* Applies the settings' resources: to the tests they match. */
void krun_registry_needs(krun_registry *reg, const krun_settings *s);
void krun_registry_free(krun_registry *reg);

typedef struct krun_device {
  int index;                /* as the runner sees it */
  int physical;             /* token index: from the outer mask if numeric */
  char visible[64];         /* the outer mask's entry ("" when none) */
  char name[128], arch[64];
  int warp_size;
  long long total_bytes, free_bytes;
} krun_device;

typedef struct krun_backend_info {
  int backend;              /* krun_backend, resolved */
  char runner[PATH_MAX];
  int ndevices;
  krun_device dev[KRUN_MAX_DEVICES];
  char error[512];          /* why there are none */
  char sanitizers[64];      /* the runner's build: "none", "address,undefined" */
} krun_backend_info;

/* Resolves `auto` (the first of cuda, hip whose runner finds a device, else
 * host) and asks the runner for its devices (`--devices`, in a child: the
 * parent never starts a GPU runtime). */
int krun_backend_resolve(int wanted, const char *runner_dir,
                         krun_backend_info *bi, kh_err *err);
/* Slots of each device (index into bi->dev) under these settings. */
void krun_device_caps(const krun_settings *s, const krun_backend_info *bi,
                      int caps[KRUN_MAX_DEVICES]);

/* ---- Memory-aware slots (memslots.c) ------------------------------------------ */

/* The newest report of this backend under reports/runs (not the folder
 * exclude), malloc'd; NULL when there is none. */
char *krun_peaks_latest(int backend, const char *exclude);
/* Each registry test's peak device memory in the report at path (the
 * largest `memory.peak.bytes` of its records; -1: none), malloc'd. */
long long *krun_peaks_load(const char *path, const krun_registry *reg, kh_err *err);

/* ---- Shards ------------------------------------------------------------------ */

typedef struct krun_shard {
  int index;                /* 1..count */
  int count;                /* 0: not sharded */
  const char *source;       /* "--shard", "bazel", "slurm" */
  const char *method;       /* "hash" or "durations" */
  int selected, total;      /* tests this shard runs, of those selected */
} krun_shard;

/* K/N from the flag (NULL: none), else Bazel's or Slurm's environment. */
int krun_shard_resolve(const char *flag, krun_shard *sh, kh_err *err);
/* Clears chosen[i] for other shards' tests. durations: a report to balance
 * by (NULL: rendezvous hashing of test ids). */
int krun_shard_apply(krun_shard *sh, const krun_registry *reg,
                     unsigned char *chosen, const char *durations, kh_err *err);
/* The shard (0..count-1) of a test id under hashing. */
int krun_shard_of(const char *id, int count);
/* Bazel asks a test binary that shards to touch TEST_SHARD_STATUS_FILE. */
void krun_shard_bazel_ack(void);

/* ---- Device tokens ------------------------------------------------------------ */

/* A System V semaphore set shared by every kiln on the host (tokens.c has
 * the layout); holder files beside the key say who holds slots. */
typedef struct krun_tokens {
  int semid;
  char key_path[PATH_MAX];
  char holders[PATH_MAX];   /* key_path + ".d": <device>/<pid> files */
} krun_tokens;

/* The key path: --token-key, $KILN_TOKEN_KEY, /tmp/kiln-tokens-<backend>. */
char *krun_tokens_key(const char *flag, int backend);
int krun_tokens_open(krun_tokens *t, const char *path, kh_err *err);
/* Makes device dev's capacity `want`, withdrawing only free slots; returns
 * the capacity in force (want, or the old one with a warning in err), or
 * -1. */
int krun_tokens_ensure(krun_tokens *t, int dev, int want, kh_err *err);
int krun_tokens_capacity(const krun_tokens *t, int dev);
int krun_tokens_free(const krun_tokens *t, int dev);
/* The semaphore number holding device dev's free slots. */
int krun_tokens_semnum(int dev);
void krun_tokens_holder_add(const krun_tokens *t, int dev, pid_t pid,
                            const char *what, int slots);
void krun_tokens_holder_remove(const krun_tokens *t, int dev, pid_t pid);
/* Calls fn for each live holder of dev (files of dead pids are removed). */
void krun_tokens_holders(const krun_tokens *t, int dev,
                         void (*fn)(pid_t pid, const char *what, void *arg),
                         void *arg);

/* ---- Starting a process ----------------------------------------------------------- */

/* One request to start a process. Every process kiln starts goes through
 * krun_spawn with one (runners, probes, helper commands, kiln itself in
 * bench), so how a child is made lives in one place. */
typedef struct krun_spawn_req {
  char *const *argv;        /* argv[0]: a path, or a name looked up in PATH */
  const char *const *env;   /* "NAME=VALUE" set over kiln's environment */
  const char *const *unenv; /* names removed from it */
  int fd_in, fd_out, fd_err;/* the child's 0, 1, 2: a kiln fd; -1: /dev/null */
  int fd_result;            /* the child's 3, or -1 for none */
  /* Narrows the visible-devices variables to exactly these devices of
   * narrow (indexes into narrow->dev; the child sees them as 0, 1, ...),
   * as `kiln run` narrows every child; narrow NULL: leave them. */
  const krun_backend_info *narrow;
  const int *devices;
  int ndevices;
  /* Slots the started program takes before its work, take_slots on each
   * semaphore take_semnum[0..ndevices) of set take_semid, in one semop with
   * SEM_UNDO, and reports as token_wait (kiln's runners read
   * KILN_TAKE_SLOTS); 0: none. */
  int take_semid, take_slots;
  const int *take_semnum;
  int new_pgroup;           /* its own process group (timeouts reach its
                               grandchildren) */
  int die_with_parent;      /* SIGKILL when kiln dies, even by SIGKILL */
} krun_spawn_req;

/* Starts the process. 0 with *pid set (and *exec_errno 0, or why the exec
 * failed: the child then exits 127 and is reaped as usual), or -1 with
 * errno when no process could be made. */
int krun_spawn(const krun_spawn_req *req, pid_t *pid, int *exec_errno);

/* Runs argv with stdin from /dev/null and stderr to /dev/null, captures up
 * to max bytes of stdout, waits at most timeout_s. Returns the exit status
 * (0..255), 128+signal, or -1 when it could not run or timed out (errno
 * ETIMEDOUT). */
int krun_capture(char *const argv[], size_t max, double timeout_s,
                 char **out, size_t *len);

/* ---- kiln run ---------------------------------------------------------------------- */

typedef struct krun_opts {
  const krun_settings *s;   /* effective settings */
  const krun_registry *reg;
  const unsigned char *chosen;
  const krun_backend_info *bi;
  const char *token_key;    /* path for ftok */
  const char *out_dir;      /* run folder */
  const char *report_copy;  /* --report FILE, or NULL */
  const char *junit;        /* JUnit file after the run, or NULL */
  const char *config_path;  /* or NULL */
  const char *command;      /* the command line, for the report */
  char *const *selection;   /* selectors as given */
  int nselection;
  int verbose;
  const krun_shard *shard;  /* or NULL: not sharded */
  const long long *peaks;   /* --slots auto: per registry test, -1 unknown */
  const char *peaks_from;   /* the report they came from, or NULL */
  int quiet;                /* nothing on the console (kiln bisect's trials) */
} krun_opts;

/* Runs everything; returns kiln's exit status. */
int krun_run(const krun_opts *o);

/* 1 when this process holds no GPU device file and maps no GPU runtime;
 * 0 with what was found in why. */
int krun_gpu_clean(char *why, size_t n);
/* The source tree's git revision ($KILN_GIT_REV, else git), "" when
 * unknown; malloc'd. */
char *krun_git_rev(void);

#endif
