/* The kiln command: the harness parent. Its rooms: cli/ (the command table
 * and the commands), run/ (scheduling, spawning, tokens, the warm pool),
 * report/ (the report model, its reader and writers, the journal, JUnit,
 * HTML, diff, merge), base/ (helpers). It links no engine and no GPU
 * runtime: a process that initialised one cannot use it in a child.
 */
#include "cli.h"

int main(int argc, char **argv) { return kcli_main(argc, argv); }
