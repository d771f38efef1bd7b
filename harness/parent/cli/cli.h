/* The command line (prefix kcli_): one table of every subcommand and every
 * option, which parses the command line, prints each subcommand's --help
 * and `kiln help [CMD]`, and refuses bad usage with exit status 2. The
 * commands themselves call into the run and report rooms.
 */
#ifndef KILN_PARENT_CLI_H
#define KILN_PARENT_CLI_H

#include <stddef.h>

#include "base.h"
#include "run.h"

/* kiln's main: parses argv through the command table and runs the
 * command; returns kiln's exit status. */
int kcli_main(int argc, char **argv);

/* ---- Configs (config.c), also the fuzz target's entry points ------------ */

/* Reads a YAML run profile held in buf (len bytes) named `name` for
 * messages. Errors read "name:line:column: what". Takes any bytes. */
int kcli_config_parse(const char *buf, size_t len, const char *name,
                      krun_settings *out, kh_err *err);
/* A config argument: a path, or a profile name looked up as
 * configs/NAME.yaml here and in the source tree. */
int kcli_config_load(const char *arg, krun_settings *out, char **path_out,
                     kh_err *err);
/* A CTest resource spec, {"version":{"major":1,"minor":0},"local":[{"gpus":
 * [{"id":"0","slots":2}]}]}, into out's devices, read exactly as CTest
 * reads it (spec.c). Errors name line and column. Takes any bytes. */
int kcli_spec_parse(const char *buf, size_t len, const char *name,
                    krun_settings *out, kh_err *err);

#endif
