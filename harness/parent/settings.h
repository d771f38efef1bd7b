/* Run settings (prefix kh_): what a run does, from built-in defaults, a YAML
 * config (a file in configs/) and command-line flags, in that order of
 * precedence. One table describes every scalar setting, so the config reader
 * and the flag parser check values the same way and name the same limits.
 * Also the CTest resource-spec reader (a device list with slots).
 */
#ifndef KILN_PARENT_SETTINGS_H
#define KILN_PARENT_SETTINGS_H

#include <stddef.h>

#include "base.h"

#define KH_MAX_DEVICES 32
/* `warm: auto` (the default): a device gets KH_WARM_PER_SLOT warm children
 * per slot, so each test that ends finds its successor's runtime and
 * context already open. The one place that default is decided. */
#define KH_WARM_AUTO (-1)
#define KH_WARM_PER_SLOT 1

typedef enum { KH_ISO_PROCESS = 0, KH_ISO_NONE = 1 } kh_isolation;
typedef enum {
  KH_BACKEND_AUTO = 0, KH_BACKEND_HOST, KH_BACKEND_HIP, KH_BACKEND_CUDA
} kh_backend;
/* Indexed by kh_backend. */
extern const char *const kh_backend_names[];
typedef enum { KH_LEAKS_FAIL = 0, KH_LEAKS_WARN = 1 } kh_leak_policy;

typedef struct kh_tolerance {
  char *match;              /* glob over suite, suite/test, suite/test/check */
  double atol;
  double rtol;
} kh_tolerance;

/* Slots for one device, from a config's devices: list or a resource spec. */
typedef struct kh_dev_slots {
  int id;
  int slots;
} kh_dev_slots;

typedef struct kh_settings {
  int jobs;                 /* children at once; 0: number of CPUs */
  int backend;              /* kh_backend: auto, host, hip, cuda */
  int slots;                /* slots per GPU; 0: default (2) */
  kh_dev_slots devices[KH_MAX_DEVICES];
  int ndevices;             /* 0: every device the runner sees */
  double timeout_s;         /* per test, unless the test sets its own */
  double grace_s;           /* SIGTERM .. SIGKILL */
  int retries;
  int repeat;
  int isolation;            /* kh_isolation */
  int leaks;                /* kh_leak_policy */
  int poison;
  unsigned long long seed;  /* used when set (see `set`) */
  double cap;               /* allocation cap fraction; 0: runner default */
  char *wrap;               /* command prefix for every child, or NULL */
  int warm;                 /* warm children per device at most; 0: off,
                               KH_WARM_AUTO: KH_WARM_PER_SLOT per slot */
  char **selection;         /* selectors, used when none are given */
  int nselection;
  kh_tolerance *tol;
  int ntol;
  unsigned long long set;   /* bit per table entry: given explicitly */
} kh_settings;

/* ---- Defaults, merging, freeing ----------------------------------------- */

void kh_settings_init(kh_settings *s);
void kh_settings_free(kh_settings *s);
/* Copies into dst every setting that src has explicitly (flags over a
 * config); list settings from src replace dst's (tolerances append). */
void kh_settings_overlay(kh_settings *dst, const kh_settings *src);
/* "key: value" lines of the effective settings, for reports (malloc'd
 * pairs, *n of them). */
void kh_settings_describe(const kh_settings *s, char ***keys, char ***values,
                          int *n);

/* ---- Scalar settings by name -------------------------------------------- */

/* Sets a scalar setting from text (a flag's argument). The error names the
 * setting, the value and the accepted range; the caller adds where. Returns
 * 0, -1 for a bad value, -2 for an unknown name. */
int kh_setting_set(kh_settings *s, const char *name, const char *text,
                   kh_err *err);
/* Adds a tolerance override "GLOB=ATOL:RTOL". */
int kh_setting_add_tolerance(kh_settings *s, const char *spec, kh_err *err);
void kh_setting_add_selector(kh_settings *s, const char *sel);
/* 1 when the named setting was given explicitly. */
int kh_setting_is_set(const kh_settings *s, const char *name);

/* ---- Config files -------------------------------------------------------- */

/* Reads a YAML config held in buf (len bytes) named `name` for messages.
 * Errors read "name:line:column: what". Written to take any bytes (it is a
 * fuzz target). */
int kh_config_parse(const char *buf, size_t len, const char *name,
                    kh_settings *out, kh_err *err);
/* Resolves a config argument: a path, or a bare profile name looked up as
 * configs/NAME.yaml here and in the source tree. Reads and parses it. */
int kh_config_load(const char *arg, kh_settings *out, char **path_out,
                   kh_err *err);

/* ---- CTest resource spec -------------------------------------------------- */

/* Reads {"version":{"major":1,"minor":0},"local":[{"gpus":[{"id":"0",
 * "slots":2}, ...]}]} into s->devices. Errors name line and column. */
int kh_resource_spec_parse(const char *buf, size_t len, const char *name,
                           kh_settings *s, kh_err *err);

#endif
