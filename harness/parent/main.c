/* The kiln command: the harness parent. Its rooms: cli/ (the command table
 * and the commands), run/ (scheduling, spawning, tokens, the warm pool),
 * report/ (the report model, its reader and writers, the journal, JUnit,
 * HTML, diff, merge), base/ (helpers). It links no engine and no GPU
 * runtime: a process that initialised one cannot use it in a child.
 */
#include <string.h>

#include "cli.h"

int main(int argc, char **argv) {
  /* kiln starting itself to hold a program's device slots (run/exec.c). */
  if (argc > 1 && strcmp(argv[1], KRUN_EXEC_WORD) == 0)
    return krun_exec_main(argc - 2, argv + 2);
  return kcli_main(argc, argv);
}
