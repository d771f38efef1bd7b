/* `kiln __exec PROGRAM [ARG...]`: how a program that is no kiln runner (a
 * GoogleTest binary, a manifest's command) holds its device slots. kiln
 * starts itself in this mode with KILN_TAKE_SLOTS in the environment, as
 * it starts a runner; this process takes the slots with SEM_UNDO as a
 * runner does, reports the wait as `phase name=token_wait` on fd 3, and
 * execs the program. The undo survives the exec, so the kernel hands the
 * slots back when the program ends, however it ends. Not a command of the
 * command table: nothing but kiln's own spawn request uses it.
 */
#include "run-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <unistd.h>

#include "records.h"

int krun_exec_main(int argc, char **argv) {
  int keep = argc >= 1 && strcmp(argv[0], KRUN_EXEC_KEEP) == 0;
  argc -= keep, argv += keep;
  if (argc < 1) {
    fprintf(stderr, "kiln %s: no program to run (kiln's own use only)\n", KRUN_EXEC_WORD);
    return 127;
  }
  const char *take = getenv("KILN_TAKE_SLOTS");
  kp_take t;
  if (!take || kp_slots_parse(take, &t) != 0) {
    fprintf(stderr, "kiln %s: KILN_TAKE_SLOTS='%s' is not SEM_ID:SEM_NUM:N[,SEM_NUM:N...]\n",
            KRUN_EXEC_WORD, take ? take : "");
    return 127;
  }
  double t0 = kh_now_ms();
  if (kp_slots_take(&t, "kiln " KRUN_EXEC_WORD) != 0) return 127;
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_phase, &(kp_phase){"token_wait", kh_now_ms() - t0});
  (void)kp_send(&rec, 3);
  /* The program gets neither the record pipe (unless it writes records
   * itself; else the exec closes it) nor the request. A failed exec (the
   * file lost its mode or went away since the run began) is kiln's error,
   * not the test's: the parent reads it from the pipe, so it is no exit
   * status 127 the program might give. */
  if (!keep) (void)fcntl(3, F_SETFD, FD_CLOEXEC);
  unsetenv("KILN_TAKE_SLOTS");
  execvp(argv[0], argv);
  int e = errno;
  fprintf(stderr, "kiln: cannot run %s: %s\n", argv[0], strerror(e));
  dprintf(3, "exec_error errno=%d\n", e);
  return 127;
}
