/* Internals of the command-line room (prefix kcli__): the command table's
 * types, what a parsed command line holds, and the commands.
 *
 * A new subcommand is a row in the command table (commands.c) naming its
 * options, and a function here; a new option is a row in the option table
 * and a member of kcli__args (or a run setting), or, for a source of
 * tests, a row of that source's own options. --help, `kiln help` and
 * usage errors follow from the rows.
 */
#ifndef KILN_PARENT_CLI_IMPL_H
#define KILN_PARENT_CLI_IMPL_H

#include <stdio.h>

#include "cli.h"
#include "report.h"

/* What an option does with its value. */
typedef enum {
  KCLI__SETTING,            /* a run setting (run.h), by name */
  KCLI__TOLERANCE,          /* a tolerance override, repeatable */
  KCLI__STR,                /* a string member of kcli__args */
  KCLI__LIST,               /* a string appended to a kcli__strs member */
  KCLI__FLAG,               /* an int member set to 1; no value */
  KCLI__INT,                /* an int member, in [lo, hi] */
  KCLI__DOUBLE,             /* a double member, in [lo, hi] */
  KCLI__SOURCE,             /* a source's own option (run.h's krun_sopt),
                               index lo */
} kcli__kind;

typedef struct kcli__opt {
  const char *id;           /* how commands name it */
  const char *name;         /* --name on the command line */
  char short_name;
  const char *arg;          /* the value's name in help; NULL: no value */
  kcli__kind kind;
  const char *setting;      /* KCLI__SETTING */
  size_t off;               /* member of kcli__args */
  double lo, hi;            /* KCLI__INT, KCLI__DOUBLE */
  const char *help;
} kcli__opt;

struct kcli__args;

/* A repeatable option's values, in order. */
typedef struct kcli__list {
  char **v;
  int n;
} kcli__strs;

/* An option as the command line gave it, in order (kiln slurm passes the
 * `kiln run` ones on to its tasks). */
typedef struct kcli__given {
  const kcli__opt *o;
  const char *val;          /* argv's text; NULL for a flag */
} kcli__given;

typedef struct kcli__cmd {
  const char *name;         /* "run", "report merge" */
  const char *args;         /* the words after the options, for usage */
  const char *summary;      /* one line for `kiln help`; NULL: kiln's own
                               (not listed) */
  const char *about;        /* the paragraph of its --help, or NULL */
  const char *opts;         /* its options' ids, space-separated */
  int min_pos, max_pos;     /* positional words; max -1: any number */
  int dash_words;           /* "-WORD" that is no option is a word (-@slow) */
  int (*fn)(struct kcli__args *a);
  const char *footer;       /* after the options: exit statuses, docs */
} kcli__cmd;

/* A parsed command line. */
typedef struct kcli__args {
  const kcli__cmd *cmd;
  int argc;
  char **argv;              /* the whole command line, for reports */
  krun_settings flags;      /* the settings it gave */
  char *config, *report, *out, *spec, *token_key, *runner_dir, *runner;
  char *junit, *shard, *shard_durations, *shard_plan, *yaml, *slots_from, *durations;
  char *concurrency, *skip, *rss_tests, *format;
  kcli__strs history, sbatch;
  kcli__given *given;
  int ngiven;
  int verbose, force;
  int tests, host_tests;
  /* kiln slurm */
  char *partition, *account, *time, *merge_time, *resume, *follow, *merge, *base;
  int gpus, tasks, dry_run, no_wait;
  double poll_s;
  krep_diff_opts diff;
  char **pos;               /* positional words */
  int npos;
} kcli__args;

/* ---- The option table (options.c) -------------------------------------------- */

extern const kcli__opt kcli__opts[];
/* The rows of the sources' own options, {NULL} ended: a command whose
 * options name `sources` takes them all. */
const kcli__opt *kcli__source_opts(void);
const kcli__opt *kcli__opt_by_id(const char *id);
/* 1 when the command takes the option (by id). */
int kcli__takes(const kcli__cmd *c, const char *id);
/* 1 for a source's option whose values are paths. */
int kcli__is_path(const kcli__opt *o);

/* ---- Parsing and help (parse.c); the command table is commands.c's ------------ */

/* Reads argv[first..] into a (options, words, --help: *help = 1), zeroed
 * first, and checks the command's word count; 0, or a usage error's exit
 * status (printed). Free a with kcli__args_free either way. */
int kcli__parse(kcli__args *a, const kcli__cmd *c, int argc, char **argv, int first,
                int *help);
void kcli__args_free(kcli__args *a);

/* Prints the command's help (--help, `kiln help CMD`). */
void kcli__help(const kcli__cmd *c, FILE *f);
/* Prints every command of cmds (kiln --help, `kiln help`), or those of a
 * group ("report"). */
void kcli__overview(const kcli__cmd *cmds, const char *group, FILE *f);
/* A usage error: "kiln CMD: what", the command's usage line, exit 2. */
int kcli__usage_error(const kcli__cmd *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));


/* ---- The commands ------------------------------------------------------------ */

int kcli__run(kcli__args *a);
int kcli__list(kcli__args *a);
int kcli__devices(kcli__args *a);
int kcli__report_show(kcli__args *a);
int kcli__report_rebuild(kcli__args *a);
int kcli__report_junit(kcli__args *a);
int kcli__report_diff(kcli__args *a);
int kcli__report_merge(kcli__args *a);
int kcli__report_html(kcli__args *a);
int kcli__bench(kcli__args *a);
int kcli__slurm(kcli__args *a);
int kcli__bisect(kcli__args *a);

/* ---- What kiln run, list, slurm and bisect share (cmd-run.c) ---------------------- */

/* Defaults < config < resource spec < flags; prints what went wrong. */
int kcli__settings(kcli__args *a, krun_settings *s, char **config_path);
/* Selectors from the command line, else the config's selection. */
void kcli__selectors(kcli__args *a, const krun_settings *s, char ***sel, int *nsel);
/* The runner's tests and which the selectors choose; an exit status. host:
 * hold back the host backend's `slow` tests. */
int kcli__select(const kcli__args *a, const krun_settings *s, const char *runner, char **sel,
                 int nsel, int host, krun_registry *reg,
                 unsigned char **chosen);
/* The runner of the backend, or for auto the first one built. */
char *kcli__any_runner(const kcli__args *a, const krun_settings *s);
/* reports/runs/<UTC time>-<what>, made unique with a suffix; NULL with the
 * reason in err. */
char *kcli__default_out(const char *what, kh_err *err);
int kcli__help_cmd(kcli__args *a);
int kcli__guard(kcli__args *a);

#endif
