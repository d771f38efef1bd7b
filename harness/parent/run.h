/* `kiln run` (prefix kh_): schedules the selected tests onto devices, one
 * child process per test (or one for all with --isolation none), watches
 * them with poll() and a signalfd, enforces timeouts, bounds their logs,
 * decides outcomes, and writes the journal and the report.
 */
#ifndef KILN_PARENT_RUN_H
#define KILN_PARENT_RUN_H

#include <stddef.h>

#include "registry.h"
#include "settings.h"

typedef struct kh_run_opts {
  const kh_settings *s;     /* effective settings */
  const kh_registry *reg;
  const unsigned char *chosen;
  const kh_backend_info *bi;
  const char *token_key;    /* path for ftok */
  const char *out_dir;      /* run folder (created) */
  const char *report_copy;  /* --report FILE, or NULL */
  const char *config_path;  /* or NULL */
  const char *command;      /* the command line, for the report */
  char *const *selection;   /* selectors as given */
  int nselection;
  int verbose;
  const struct kh_shard *shard;  /* or NULL: not sharded (shard.h) */
} kh_run_opts;

/* Runs everything; returns kiln's exit status. */
int kh_run(const kh_run_opts *o);

/* Slots of each device (index into bi->dev) for these settings. */
void kh_device_caps(const kh_settings *s, const kh_backend_info *bi,
                    int caps[KH_MAX_DEVICES]);

/* 1 when this process has no GPU device file open and no GPU runtime
 * library mapped; 0 with what was found in why. */
int kh_parent_gpu_clean(char *why, size_t n);

/* The source tree's git revision ($KILN_GIT_REV, else git), "" when
 * unknown; malloc'd. */
char *kh__git_rev(void);

#endif
