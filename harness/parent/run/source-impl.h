/* Sources of tests (prefix krun__source): what lists tests and runs them.
 * Each kind of source (kiln runners, GoogleTest binaries, manifests of
 * commands) is one file that fills one krun__source_i table; the job, the
 * loop and the warm pool call only the table, never a source file by name,
 * and a source calls nothing above it (it hands records to the emit
 * function it is given).
 *
 * Adding a source: a value in krun_kind and its name in krun_kind_names
 * (run.h, registry.c); one file (say pytest.c) with its lister, its argv and
 * whichever optional slots it needs, ending in
 *     const krun__source_i krun__pytest_source = {.name = "pytest", ...};
 * its declaration below and its row in krun__sources (sources.c); the file
 * in harness/parent/meson.build; a command-line flag in cli/ that calls
 * .list. Nothing else in run/ changes.
 */
#ifndef KILN_PARENT_RUN_SOURCE_IMPL_H
#define KILN_PARENT_RUN_SOURCE_IMPL_H

#include <stddef.h>

#include "run.h"

struct krun__run;
struct krun__job;

/* Takes one protocol record (a line without its newline) for the job's
 * test runs, as if the child had sent it on its result pipe. */
typedef void krun__emit(struct krun__run *R, struct krun__job *j, const char *line);

typedef struct krun__source_i {
  const char *name;         /* krun_kind_names[kind] */
  /* Lists path's tests into reg (krun__registry_add: id, suite, tags,
   * slots, devices, timeout, file:line); an error names path. */
  int (*list)(krun_registry *reg, const char *path, kh_err *err);
  /* Appends the program and its arguments for j's tests (one, or every
   * test of --isolation none) to argv, *n words so far. May set
   * j->srcdata, the source's state for this child. */
  void (*argv)(struct krun__run *R, struct krun__job *j, char **argv, int *n);
  /* What kiln exec'd, for the message of a failed exec. */
  const char *(*program)(const struct krun__run *R, const struct krun__job *j);
  /* Variables the child must not take from kiln's environment, NULL
   * ended (optional). */
  const char *const *unenv;
  /* 1: the child speaks kiln's protocol on fd 3 and takes its slots
   * itself (a kiln runner); 0: a program of its own, which `kiln __exec`
   * starts when it must take slots. */
  int protocol;
  /* 1: a program that takes no slots itself but writes kiln's records on
   * fd 3 (kiln_pytest): the pipe is open for it, and `kiln __exec`
   * leaves it open (optional). */
  int records;
  /* 1: its children can start before their test is known (--warm, the
   * test assigned on stdin), so the warm pool may run them (optional). */
  int warm;
  /* The child's console output as it comes, made into records handed to
   * emit in order (optional). */
  void (*output)(struct krun__run *R, struct krun__job *j, const char *data, size_t n,
                 krun__emit *emit);
  /* After the child ended and its pipes drained: what it left (its exit
   * status, files it wrote) as records into each test run the protocol
   * did not finish (emit for the rest of its console); decide.c then makes
   * the outcome (optional: a source whose records say everything). */
  void (*finish)(struct krun__run *R, struct krun__job *j, krun__emit *emit);
  /* Frees j->srcdata (optional). */
  void (*free)(struct krun__job *j);
  /* Before the first test of the run and after the last (the loop done,
   * before the final sweep; again on the way out, which must be
   * harmless): processes the source keeps for the whole run, such as
   * pytest's zygotes (optional). */
  void (*run_start)(struct krun__run *R);
  void (*run_end)(struct krun__run *R);
} krun__source_i;

extern const krun__source_i krun__runner_source;    /* runner.c */
extern const krun__source_i krun__gtest_source;     /* gtest.c */
extern const krun__source_i krun__command_source;   /* manifest.c */
extern const krun__source_i krun__pytest_source;    /* pytest.c */

/* sources.c: every source, by krun_kind */
const krun__source_i *krun__source(int kind);
/* Calls every source's run_start (start) or run_end. */
void krun__sources_run(struct krun__run *R, int start);
/* A run a warm child can take: its source starts warm, a GPU test of one
 * slot on one device. */
int krun__source_warm_fits(const krun_test *t);

#endif
