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
/* Slots of one device at most (a resource spec may say 4294967295). */
#define KRUN_MAX_SLOTS 1024
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

/* process: a child per test; none: one shared process for every test;
 * worker: sequences of one source's tests in one process each, every test
 * that does not pass there run again alone before it counts (worker.c). */
typedef enum { KRUN_ISO_PROCESS = 0, KRUN_ISO_NONE = 1, KRUN_ISO_WORKER = 2 } krun_isolation;
/* Tests one worker runs at most. */
#define KRUN_WORKER_MAX 64
typedef enum {
  KRUN_BACKEND_AUTO = 0, KRUN_BACKEND_HOST, KRUN_BACKEND_HIP, KRUN_BACKEND_CUDA
} krun_backend;
extern const char *const krun_backend_names[];   /* by krun_backend */
extern const char *const krun_sanitize_names[];  /* none, memcheck, ... */
typedef enum { KRUN_LEAKS_FAIL = 0, KRUN_LEAKS_WARN = 1 } krun_leak_policy;
/* How processes a test leaves behind are found (run/contain.c): auto is
 * cgroup where a writable cgroup v2 hierarchy is, else subreaper. */
typedef enum {
  KRUN_CONTAIN_AUTO = 0, KRUN_CONTAIN_CGROUP, KRUN_CONTAIN_SUBREAPER, KRUN_CONTAIN_NONE
} krun_contain;
extern const char *const krun_contain_names[];   /* by krun_contain */

/* Slots for one device, from a config's devices: list, a resource spec or
 * an outer scheduler's allotment (run/allot.c). */
typedef struct krun_dev_slots {
  int id;                   /* physical device index; -1: an id that names no
                               device kiln numbers (a resource spec's "gpu_a") */
  int slots;                /* -1: the default */
  char name[64];            /* the id as given, for messages */
} krun_dev_slots;

/* A config's `tests:` entry: tags, slots or a timeout for the tests a
 * selector-like glob matches (suite, or id), for tests that cannot say so
 * themselves (GoogleTest, manifests) or to add to any. */
typedef struct krun_rule {
  char *match;
  char *tags;               /* comma-separated, added; NULL: none */
  int slots;                /* 0: unchanged; -1: the whole device */
  int timeout_s;            /* 0: unchanged */
} krun_rule;
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
  int ndevices;
  int devices_given;        /* a device list was given: devices not in it get
                               no slots (an empty list: none do) */
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
  int allow_empty;          /* a run that tested nothing may exit 0 */
  int contain;              /* krun_contain: how strays are found */
  int sanitize;             /* index into krun_sanitize_names; 0: none */
  char **selection;         /* selectors, used when none are given */
  int nselection;
  /* The values of the sources' own options (krun_sopt_at), by option: the
   * core keeps them and never reads them (each source does). */
  struct krun_sval *sval;
  int nsval;
  ksel_tol *tol;
  int ntol;
  const char *allot_source; /* an outer scheduler gave the devices (allot.c):
                               "ctest"; NULL none */
  krun_rule *rules;         /* applied in order; a later one wins */
  int nrules;
  krun_resource *res;       /* the last match wins */
  int nres;
  unsigned long long set;   /* bit per setting given explicitly */
} krun_settings;

void krun_settings_init(krun_settings *s);
void krun_settings_free(krun_settings *s);
/* Copies into dst what src has explicitly (flags over a config); a list
 * from src replaces dst's (tolerances and test rules append). */
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
void krun_setting_add_rule(krun_settings *s, const krun_rule *r);  /* copies */
void krun_setting_add_selector(krun_settings *s, const char *sel);
/* Adds a device's slots (config devices: or a resource spec): id -1 for
 * one that names no device (name says what it was), slots -1 for the
 * default; -1 when the list is full. */
int krun_setting_add_device(krun_settings *s, int id, int slots, const char *name);
/* An empty device list, given: no device has slots until one is added. */
void krun_setting_clear_devices(krun_settings *s);
/* Adds a test's needs (a config's resources:); -1 with err for a glob too
 * long or a count out of range. */
int krun_setting_add_resource(krun_settings *s, const char *match, int gpus, int slots,
                              kh_err *err);
/* Calls fn(key, value) for each effective setting, as the report shows it. */
void krun_settings_each(const krun_settings *s,
                        void (*fn)(const char *key, const char *value, void *arg),
                        void *arg);

/* ---- The sources' own options (sources.c, settings.c) ---------------------- */

/* Each source of tests declares its command-line flags and config keys in
 * its table (run/source-impl.h); the command line, configs, --help and
 * the report read them through these, and the settings keep their values,
 * so that no flag of a source is named outside its own file. */
typedef enum { KRUN_SOPT_BOOL = 0, KRUN_SOPT_PATHS } krun_sopt_type;

typedef struct krun_sopt {
  const char *name;         /* --NAME, and the config key NAME (config) */
  const char *arg;          /* the value's name in help ("B", "PATH") */
  int type;                 /* krun_sopt_type; PATHS: repeatable */
  int dflt;                 /* BOOL: its value when nobody sets it */
  /* PATHS: each path is a place the source lists tests from (--gtest,
   * --manifest); a run names its tests through these. */
  int lists;
  /* A config (and a manifest) may set it; PATHS are then relative to the
   * file's folder and must be there; given on the command line they
   * replace the config's. */
  int config;
  const char *what;         /* PATHS: what a path is, for errors ("a
                               folder or file of tests") */
  const char *help;
} krun_sopt;

/* A value of a source's option, as the settings keep it. */
typedef struct krun_sval {
  int set;                  /* given (by a config or flag) */
  int on;                   /* BOOL */
  char **paths;             /* PATHS */
  int npaths;
} krun_sval;

/* Option i of every source, in the sources' order (NULL past the last);
 * *kind (when not NULL) its source. */
const krun_sopt *krun_sopt_at(int i, int *kind);
/* The index of the option called name, or -1. */
int krun_sopt_index(const char *name);
/* Sets option i from text (BOOL: true/false and the like; PATHS: one
 * more path). 0, or -1 with err naming the option and the value. */
int krun_setting_sopt(krun_settings *s, int i, const char *text, kh_err *err);
/* Option i's value (a default for one never set). */
int krun_sopt_on(const krun_settings *s, int i);
char *const *krun_sopt_paths(const krun_settings *s, int i, int *n);
/* The first path a listing option of a source whose tests cannot share a
 * process names (*opt: that option), or NULL. */
const char *krun_sopt_alone(const krun_settings *s, const krun_sopt **opt);

/* ---- Devices an outer scheduler gave (allot.c) ---------------------------- */

typedef struct krun_allot {
  const char *source;       /* "ctest"; NULL: no scheduler gave devices */
  krun_dev_slots devices[KRUN_MAX_DEVICES];
  int ndevices;
} krun_allot;

/* Reads the schedulers' variables (CTest's CTEST_RESOURCE_GROUP_*): 0 with
 * a->source NULL when none gave devices; -1 with err naming the variable
 * when one is malformed. */
int krun_allot_resolve(krun_allot *a, kh_err *err);
/* Makes the allotment the run's device list (over a config's or a
 * resource spec's): exactly those devices and slots. */
void krun_allot_apply(const krun_allot *a, krun_settings *s);

/* ---- Tests, where they come from, devices ---------------------------------- */

/* Finds kiln-runner-<backend>: dir (--runner-dir), $KILN_RUNNER_DIR, the
 * directory of this kiln, then the build tree for a kiln run from there,
 * else the install (libexecdir, found from this kiln's folder first). A
 * malloc'd path, or NULL with the places tried in err. */
char *krun_runner_find(const char *backend, const char *dir, kh_err *err);

/* What runs a test (docs/third-party.md): a kiln runner (kiln's own, or
 * one a project built against the installed kiln), a GoogleTest binary,
 * a command named in a manifest, a test of another framework's suite.
 * Each kind lists its tests
 * into the registry, builds its child's argv and turns what the child
 * leaves into protocol records, through one table per kind
 * (source-impl.h); a kind is the index of its table among the sources,
 * and kiln's own runner is the first. Everything else is one path for
 * all. */
#define KRUN_KIND_RUNNER 0
/* The name of a kind ("runner", "gtest"). */
const char *krun_kind_name(int kind);
/* What one test of a kind is called ("a command") when its tests cannot
 * share one process (--isolation none); NULL when they can. */
const char *krun_kind_alone(int kind);

typedef struct krun_source {
  int kind;                 /* its table, by index */
  char *path;               /* the runner, the binary, the manifest */
  char *dir;                /* its tests run here (a manifest's folder) */
  void *data;               /* its kind's own state for it, freed with */
  void (*data_free)(void *data);
  /* Its kind's options set for this source alone ("NAME=VALUE", a
   * manifest's own), over the run's. */
  char **set;
  int nset;
} krun_source;

typedef struct krun_test {
  char *id, *suite, *name, *tags, *file;
  int slots;                /* on each of its devices; -1: the whole device */
  int devices;              /* devices it needs at once (from 1) */
  int timeout_s;            /* 0: the run's default */
  int needs_gpu;
  int line;
  int source;               /* index into the registry's sources */
  int kind;                 /* its source's kind */
  char **argv;              /* a command's argv (NULL-terminated); else NULL */
} krun_test;

/* The seconds test t may run (its deadline): its own timeout (a mark, a
 * config rule), else --timeout or the config's when given, else its
 * source's own default where it has one, else the run's (120). */
double krun_test_deadline_s(const krun_settings *s, const krun_test *t);

typedef struct krun_registry {
  krun_test *tests;
  ksel_test *views;         /* the same tests, for select.h */
  int n;
  krun_source *sources;
  int nsources;
} krun_registry;

/* Adds a kiln runner's tests (`--list`, in a child process; its `runner`
 * record must speak this kiln's protocol). */
int krun_registry_add_runner(krun_registry *reg, const char *runner, kh_err *err);
/* 1 when the settings name tests of a source (a listing option's paths:
 * --gtest, a config's suites), so kiln's own runner is not the default. */
int krun_registry_named(const krun_settings *s);
/* Adds the tests of every path the settings' listing options name, source
 * by source in the sources' order. 0; -2 a usage error (a file that does
 * not read, a mark kiln refuses); -3 a program that could not list its
 * tests (an infrastructure error); err says which. */
int krun_registry_add_named(krun_registry *reg, const krun_settings *s, kh_err *err);
/* After the last source: the config's test rules (tags, slots,
 * timeouts), ids checked unique across sources, the selection views. */
int krun_registry_finish(krun_registry *reg, const krun_settings *s, kh_err *err);
/* Applies the settings' resources (`resources:`) to the tests they match;
 * krun_registry_finish calls it after the test rules. */
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
  char devices_from[256];   /* where the devices came from (krun_outer) */
  char sanitizers[64];      /* the runner's build: "none", "address,undefined" */
} krun_backend_info;

/* Resolves `auto` (the first of cuda, hip whose runner finds a device, else
 * host) and asks the runner for its devices (`--devices`, in a child: the
 * parent never starts a GPU runtime). runner: a given runner (--runner),
 * whose backend it is then (it must match a wanted backend), or NULL. */
int krun_backend_resolve(int wanted, const char *runner_dir, const char *runner,
                         krun_backend_info *bi, kh_err *err);
/* Slots of each device (index into bi->dev) under these settings. */
void krun_device_caps(const krun_settings *s, const krun_backend_info *bi,
                      int caps[KRUN_MAX_DEVICES]);

/* ---- The devices the outside world gave (outer.c) ---------------------------- */

/* Which devices kiln may use, as whoever started it said: the backend's own
 * visible-devices variables, else a Slurm allocation (SLURM_STEP_GPUS, else
 * SLURM_JOB_GPUS). The one place that question is answered. */
typedef struct krun_outer {
  int n;                    /* -1: nothing narrows kiln */
  char entry[KRUN_MAX_DEVICES][64];  /* as the backend's mask names them */
  int node_dev[KRUN_MAX_DEVICES];    /* the node's device number; -1: unknown */
  char source[32];          /* the variable they came from */
  int exported;             /* not the backend's own variable: kiln sets it */
} krun_outer;

/* Reads the environment for this backend; an error names a Slurm list that
 * does not parse. */
int krun_outer_read(int backend, krun_outer *o, kh_err *err);
/* Devices that came from Slurm rather than the backend's own variable: sets
 * that variable in kiln's environment, so that every runner kiln starts
 * (the device probe included) sees exactly them. */
void krun_outer_export(int backend, const krun_outer *o);
/* "SLURM_JOB_GPUS=2", or "every device the runner sees". */
void krun_outer_describe(const krun_outer *o, char *out, size_t n);
/* ---- Memory-aware slots (memslots.c) ------------------------------------------ */

/* The newest report of this backend under reports/runs (not the folder
 * exclude), malloc'd; NULL when there is none. */
char *krun_peaks_latest(int backend, const char *exclude);
/* Each registry test's peak device memory in the report at path (the
 * largest `memory.peak.bytes` of its records; -1: none), malloc'd. */
long long *krun_peaks_load(const char *path, const krun_registry *reg, kh_err *err);

/* ---- Longest first (order.c) ------------------------------------------------- */

/* Each registry test's mean wall time over its runs in the report at path
 * (a report or a run folder), NAN where it has none, malloc'd, *known of
 * them timed; NULL with err when the report cannot be read. */
double *krun_durations_load(const char *path, const krun_registry *reg, int *known,
                            kh_err *err);

/* ---- Shards ------------------------------------------------------------------ */

typedef struct krun_shard {
  int index;                /* 1..count */
  int count;                /* 0: not sharded */
  const char *source;       /* "--shard", "bazel", "slurm" */
  const char *method;       /* "hash" or "durations" */
  int selected, total;      /* tests this shard runs, of those selected */
} krun_shard;

/* Which tests every shard of a run runs, decided once and written down
 * (plan.c), so that each shard (a Slurm array task), the merge and a resume
 * all read one assignment. */
typedef struct krun_plan_test {
  char *id, *suite, *tags;
  int shard;                /* 1..count */
  double ms;                /* its time in the durations report; NAN */
} krun_plan_test;

typedef struct krun_plan {
  char *path;               /* the file it was read from, or NULL */
  int count;                /* shards */
  const char *method;       /* "hash" or "durations" */
  char *durations;          /* the report balanced by, or NULL */
  char *git;                /* the revision planned from, or NULL */
  int repeat;               /* runs of each test */
  krun_plan_test *tests;    /* in registry order */
  int ntests;
} krun_plan;

/* K/N from the flag (NULL: none), else Bazel's or Slurm's environment. */
int krun_shard_resolve(const char *flag, krun_shard *sh, kh_err *err);
/* The shard (0..count-1) of each chosen test of reg in shard_of[i] (-1 for
 * the others): rendezvous hashing of test ids, or balanced by the wall
 * times of a report (durations; NULL: hashing). ms_of (or NULL) gets the
 * time each test was counted at (NAN when hashing). */
int krun_shard_assign(const krun_registry *reg, const unsigned char *chosen,
                      int count, const char *durations, int *shard_of,
                      double *ms_of, kh_err *err);
/* Clears chosen[i] for other shards' tests: by krun_shard_assign, or as
 * plan says (then chosen becomes the plan's tests of this shard). */
int krun_shard_apply(krun_shard *sh, const krun_registry *reg,
                     unsigned char *chosen, const char *durations,
                     const krun_plan *plan, kh_err *err);
/* The shard (0..count-1) of a test id under hashing. */
int krun_shard_of(const char *id, int count);
/* Bazel asks a test binary that shards to touch TEST_SHARD_STATUS_FILE. */
void krun_shard_bazel_ack(void);

/* A plan of count shards over the chosen tests (krun_shard_assign). */
int krun_plan_make(const krun_registry *reg, const unsigned char *chosen,
                   int count, const char *durations, int repeat,
                   krun_plan *p, kh_err *err);
/* Atomically; errors name the file. */
int krun_plan_write(const krun_plan *p, const char *path, kh_err *err);
int krun_plan_read(const char *path, krun_plan *p, kh_err *err);
void krun_plan_free(krun_plan *p);

/* ---- Device tokens ------------------------------------------------------------ */

/* A System V semaphore set shared by every kiln on the host (tokens.c has
 * the layout); holder files beside the key say who holds slots. */
typedef struct krun_tokens {
  int semid;
  char key_path[PATH_MAX];
  char holders[PATH_MAX + 8];  /* key_path + ".d": <device>/<pid> files */
} krun_tokens;

/* The key path: --token-key, $KILN_TOKEN_KEY, /tmp/kiln-tokens-<backend>. */
char *krun_tokens_key(const char *flag, int backend);
/* The canonical name of a key path: absolute, every symbolic link
 * followed (a dangling one too), no ".", ".." or "//"; where the file is
 * not there, its folder's canonical name and its own. 0, or -1 (errno). */
int krun_tokens_canon(const char *path, char *out, size_t n);
/* The System V key of a key path: a hash of its canonical name, the same
 * for every kiln on the host, whatever name it was given and whether or
 * not the file still exists. */
key_t krun_tokens_ipc_key(const char *path);
/* Opens the set of the key path; create: make key file and set when
 * missing. 0; 1 (create 0) when there is no set yet; -1 with err. No set
 * is made while holder files name live processes (the set was removed
 * under them): -1, or 1 for create 0, with err saying so. */
int krun_tokens_open(krun_tokens *t, const char *path, int create, kh_err *err);
/* 1 when the set was removed since it was opened (ipcrm, or a cleaner). */
int krun_tokens_gone(const krun_tokens *t);
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
  const char *cwd;          /* its working directory; NULL: kiln's */
  int new_pgroup;           /* its own process group (timeouts reach its
                               grandchildren) */
  int new_session;          /* its own session (kiln's guard: no signal aimed
                               at kiln's group or terminal reaches it) */
  int die_with_parent;      /* SIGKILL when kiln dies, even by SIGKILL */
  /* A cgroup v2 cgroup.procs opened for writing: the child joins that
   * cgroup before exec, so everything it starts is found there
   * (run/contain.c); -1: none. Best effort: a child that cannot join runs
   * anyway, and is then found as kiln's subreaped child. 0 or -1: none. */
  int cgroup_procs;
} krun_spawn_req;

/* Starts the process. 0 with *pid set (and *exec_errno 0, or why the exec
 * failed: the child then exits 127 and is reaped as usual), or -1 with
 * errno when no process could be made. */
int krun_spawn(const krun_spawn_req *req, pid_t *pid, int *exec_errno);

/* Runs argv with stdin from /dev/null, captures up to max bytes of stdout
 * and, when err is not NULL, the first 16 KiB of stderr into *err (else
 * stderr goes to /dev/null); waits at most timeout_s. Returns the exit
 * status (0..255), 128+signal, or -1 when it could not run or timed out
 * (errno ETIMEDOUT). *out (and *err) are set in every case but the first
 * kind of -1 (no process). */
int krun_capture(char *const argv[], size_t max, double timeout_s,
                 char **out, size_t *len, char **err);

/* `kiln __exec PROGRAM [ARG...]` (exec.c): takes the slots KILN_TAKE_SLOTS
 * names, as a runner would, reports the wait on fd 3, and execs PROGRAM,
 * so that a GoogleTest binary or a command holds its slots until it ends.
 * kiln's main calls it for that first word; it is no user command. */
#define KRUN_EXEC_WORD "__exec"
/* Its first word when the program writes records on fd 3 itself (a
 * source's `records`): the pipe stays open for it. */
#define KRUN_EXEC_KEEP "--keep-records"
int krun_exec_main(int argc, char **argv);

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
  const double *durations;  /* per registry test, ms from an earlier report
                               (NAN unknown), or NULL: the selection's order */
  const char *durations_from;   /* that report */
} krun_opts;

/* Runs everything; returns kiln's exit status. */
int krun_run(const krun_opts *o);
/* `kiln guard PID [CGROUP]` (run/guard.c): what a run starts to end its
 * tests' processes if kiln (PID) dies. Returns its exit status. */
int krun_guard(long kiln, const char *cgroup, const char *journal);

/* 1 when this process holds no GPU device file and maps no GPU runtime;
 * 0 with what was found in why. */
int krun_gpu_clean(char *why, size_t n);
/* The source tree's git revision ($KILN_GIT_REV, else git), "" when
 * unknown; malloc'd. */
char *krun_git_rev(void);

#endif
