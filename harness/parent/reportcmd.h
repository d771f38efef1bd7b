/* The report tools' command lines (prefix kh_rtool): `kiln report junit`,
 * `diff`, `merge` and `html`, each with its own options, and the JUnit file
 * `kiln run --junit` writes after a run. kiln.c only dispatches here.
 */
#ifndef KILN_PARENT_REPORTCMD_H
#define KILN_PARENT_REPORTCMD_H

/* 1 when word is one of the subcommands handled here. */
int kh_rtool_handles(const char *word);
/* argv[0] is the subcommand; returns kiln's exit status. */
int kh_rtool_main(int argc, char **argv);
/* Writes JUnit for RUNDIR/report.yaml to path; prints errors; 0 or -1. */
int kh_rtool_junit_after_run(const char *run_dir, const char *path);

#endif
