/* tokens-race: many kiln parents that size one token set at the same
 * moment, each asking for the same capacity, must leave exactly that
 * capacity, never the sum of their changes. Each round makes a set (new,
 * or left by an earlier kiln with another capacity), then forks NPROC
 * processes that wait on one pipe, so that all of them call
 * krun_tokens_open + krun_tokens_ensure together; the round then reads the
 * device's capacity and free slots. Exit 0 when every round is right.
 * The test links with --wrap=semctl: every value read from the set is
 * followed by a short sleep, so that a parent that reads a capacity and
 * then acts on it is overtaken by the others, as a loaded host does.
 * Usage: kh-tokens-race DIR [ROUNDS]
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ipc.h>
#include <sys/sem.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run.h"

enum { NPROC = 12, WANT = 2 };

union semun_arg {
  int val;
  struct semid_ds *buf;
  unsigned short *array;
};

int __real_semctl(int semid, int semnum, int cmd, ...);

int __wrap_semctl(int semid, int semnum, int cmd, ...) {
  union semun_arg arg = {0};
  if (cmd == IPC_STAT || cmd == IPC_SET || cmd == SETVAL || cmd == GETALL ||
      cmd == SETALL) {
    va_list ap;
    va_start(ap, cmd);
    arg = va_arg(ap, union semun_arg);
    va_end(ap);
  }
  int r = __real_semctl(semid, semnum, cmd, arg);
  if (cmd == GETVAL) usleep(2000);
  return r;
}

static int child(const char *key, int gate) {
  char go;
  if (read(gate, &go, 1) != 0) return 3;   /* the parent closes it: go */
  krun_tokens t;
  kh_err err;
  if (krun_tokens_open(&t, key, 1, &err) != 0) {
    fprintf(stderr, "open: %s\n", err.msg);
    return 2;
  }
  int cap = krun_tokens_ensure(&t, 0, WANT, &err);
  if (cap != WANT) fprintf(stderr, "ensure: %d (%s)\n", cap, err.msg);
  return cap == WANT ? 0 : 1;
}

static int round_ok(const char *dir, int round) {
  char key[PATH_MAX];
  snprintf(key, sizeof key, "%s/key%d", dir, round);
  krun_tokens t;
  kh_err err;
  /* Odd rounds: an earlier kiln left the set at capacity 1. */
  if (krun_tokens_open(&t, key, 1, &err) != 0 ||
      (round % 2 && krun_tokens_ensure(&t, 0, 1, &err) != 1)) {
    fprintf(stderr, "round %d: %s\n", round, err.msg);
    return 0;
  }
  int gate[2];
  if (pipe(gate) != 0) return perror("pipe"), 0;
  pid_t pids[NPROC];
  for (int i = 0; i < NPROC; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      close(gate[1]);
      _exit(child(key, gate[0]));
    }
  }
  close(gate[0]);
  close(gate[1]);
  int bad = 0;
  for (int i = 0; i < NPROC; i++) {
    int st;
    while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
  }
  int cap = krun_tokens_capacity(&t, 0), free_slots = krun_tokens_free(&t, 0);
  /* The set, its key file and holder folders go with the round. */
  semctl(t.semid, 0, IPC_RMID);
  char sub[sizeof t.holders + 8];
  snprintf(sub, sizeof sub, "%s/0", t.holders);
  rmdir(sub), rmdir(t.holders), unlink(key);
  if (cap != WANT || free_slots != WANT || bad) {
    printf("round %d: capacity %d, free %d, %d of %d parents saw another "
           "capacity (every one asked for %d)\n", round, cap, free_slots, bad,
           NPROC, WANT);
    return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: %s DIR [ROUNDS]\n", argv[0]), 2;
  int rounds = argc > 2 ? atoi(argv[2]) : 40, wrong = 0;
  for (int r = 0; r < rounds; r++) wrong += !round_ok(argv[1], r);
  printf("%d of %d rounds left capacity %d\n", rounds - wrong, rounds, WANT);
  return wrong ? 1 : 0;
}
