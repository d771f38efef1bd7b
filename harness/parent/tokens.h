/* Device tokens (prefix kh_): a System V semaphore set shared by every kiln
 * on the host, one semaphore per physical device holding its free slots.
 * A child takes its slots with SEM_UNDO before it execs the runner, so the
 * kernel gives them back however the child ends. Holder files say who has
 * them, for `kiln devices`.
 *
 * Layout of the set: semaphore 0 marks it initialised (its sem_otime is set
 * by the creator's first semop, which openers wait for); 1 + d holds device
 * d's free slots; 1 + KH_MAX_DEVICES + d holds device d's capacity.
 */
#ifndef KILN_PARENT_TOKENS_H
#define KILN_PARENT_TOKENS_H

#include <limits.h>
#include <sys/types.h>

#include "settings.h"
#include "base.h"

typedef struct kh_tokens {
  int semid;
  char key_path[PATH_MAX];  /* ftok() path */
  char holders[PATH_MAX];   /* key_path + ".d": <device>/<pid> files */
} kh_tokens;

/* The default key path for a backend: /tmp/kiln-tokens-<backend>. */
char *kh_tokens_default_path(const char *backend);
/* Opens (creating when needed) the set keyed by path (created if
 * missing). */
int kh_tokens_open(kh_tokens *t, const char *path, kh_err *err);
/* Makes device dev's capacity `want` by adding or withdrawing free slots
 * atomically; withdrawing only what is free now. Returns the capacity in
 * effect (want, or the old one with a warning in err->msg), or -1. */
int kh_tokens_ensure(kh_tokens *t, int dev, int want, kh_err *err);
int kh_tokens_capacity(const kh_tokens *t, int dev);
/* The semaphore holding device dev's free slots (a warm child's runner
 * takes its slot itself, from the set's semid). */
int kh_tokens_semnum(int dev);
int kh_tokens_free(const kh_tokens *t, int dev);

/* ---- In the child, before exec --------------------------------------------- */

/* Takes n slots of device dev with SEM_UNDO, waiting as long as it takes
 * (retrying EINTR). 0, or -1 with errno. */
int kh_tokens_take(const kh_tokens *t, int dev, int n);
void kh_tokens_holder_add(const kh_tokens *t, int dev, pid_t pid,
                          const char *test_id, int slots);

/* ---- In the parent ---------------------------------------------------------- */

void kh_tokens_holder_remove(const kh_tokens *t, int dev, pid_t pid);
/* Calls fn for each live holder of dev (dead ones are removed). */
void kh_tokens_holders(const kh_tokens *t, int dev,
                       void (*fn)(pid_t pid, const char *what, void *arg),
                       void *arg);

#endif
