/* Reports (prefix kh_): the run's metadata and its test runs; the journal
 * that is appended while the run goes on (protocol-style lines, fsync'd per
 * test, so a killed kiln leaves a usable record); the YAML report written
 * with libyaml's emitter, atomically; and reading a report back for
 * `kiln report show`. The format is in reports/README.md.
 */
#ifndef KILN_PARENT_REPORT_H
#define KILN_PARENT_REPORT_H

#include "registry.h"
#include "result.h"

#define KH_REPORT_FORMAT 1

typedef struct kh_report {
  char *kiln_version, *git, *host, *backend, *config, *out_dir, *token_key;
  char *command;            /* the kiln command line */
  double start_s, end_s;
  int interrupted;
  int finished;             /* the journal had its finish record */
  int rebuilt;              /* made by `kiln report rebuild` */
  int parent_gpu_clean;     /* 1 clean, 0 not, -1 unknown */
  kh_device devices[KH_MAX_DEVICES];
  int ndevices;
  char **set_keys, **set_values;
  int nset;
  char **selection;
  int nselection;
  int not_run;              /* selected runs never started (interrupted) */
  /* Sharding (shard.h): shard_count 0 when the run was not sharded. */
  int shard_index, shard_count, shard_selected, shard_total;
  char *shard_method, *shard_source;
  kh_result **results;
  int nresults;
} kh_report;

void kh_report_init(kh_report *rep);
void kh_report_free(kh_report *rep);
void kh_report_add(kh_report *rep, kh_result *r);

/* ---- Journal ------------------------------------------------------------ */

/* Opens RUNDIR/journal and writes the run's header records. */
int kh_journal_open(const kh_report *rep, const char *path, kh_err *err);
void kh_journal_result(int fd, const kh_result *r);
void kh_journal_finish(int fd, const kh_report *rep);
/* Rebuilds a report from a journal; a journal without its finish record
 * (kiln was killed) gives interrupted: true. */
int kh_journal_read(const char *path, kh_report *rep, kh_err *err);

/* ---- YAML --------------------------------------------------------------- */

int kh_report_write(const kh_report *rep, const char *path, kh_err *err);
/* Prints a readable summary of a report file (or DIR/report.yaml). */
int kh_report_show(const char *path, FILE *out, kh_err *err);

#endif
