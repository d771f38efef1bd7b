/* The emulated devices as every process of the host sees them, when
 * KILN_EMU_STATE_DIR names a folder: the device memory each process holds
 * (so that free memory falls while other processes allocate, and parallel
 * tests can run a device out of memory as they would a GPU) and the
 * devices that were lost (so that a device broken by one process stays
 * broken for the next, as a GPU that fell off the bus does). Without the
 * variable each process has its devices to itself, as before.
 *
 * Memory: one file per physical device, `memory-D`, holding a table of
 * (pid, bytes), updated under flock; a process that died no longer counts
 * (its pid is gone), as a GPU driver frees a dead process's memory.
 * Lost devices: a file `lost-D`.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hip-on-host-impl.h"

namespace {

constexpr int kSlots = 256;

struct usage {
  int32_t pid;
  int32_t unused;
  uint64_t bytes;
};

struct table {
  int fd;
  usage *slots;
};

const char *state_dir() {
  static const char *dir = [] {
    const char *d = getenv("KILN_EMU_STATE_DIR");
    return d && *d ? d : nullptr;
  }();
  return dir;
}

bool alive(int32_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

/* The mapped table of a physical device, opened once per process; nullptr
 * when there is no state folder or it cannot be used (then the process
 * counts its own memory only, and says so once). */
table *table_of(int phys) {
  static table tables[64];
  static bool tried[64];
  if (!state_dir() || phys < 0 || phys >= 64) return nullptr;
  table &t = tables[phys];
  if (!tried[phys]) {
    tried[phys] = true;
    char path[4096];
    snprintf(path, sizeof path, "%s/memory-%d", state_dir(), phys);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    void *m = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, sizeof(usage) * kSlots) == 0)
      m = mmap(nullptr, sizeof(usage) * kSlots, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
      fprintf(stderr, "kiln host emulation: KILN_EMU_STATE_DIR: %s: %s; device memory "
                      "is counted per process\n", path, strerror(errno));
      if (fd >= 0) close(fd);
      return nullptr;
    }
    t = table{fd, static_cast<usage *>(m)};
  }
  return t.slots ? &t : nullptr;
}

struct locked {
  table *t;
  explicit locked(table *x) : t(x) {
    if (t)
      while (flock(t->fd, LOCK_EX) != 0 && errno == EINTR) {
      }
  }
  ~locked() {
    if (t) flock(t->fd, LOCK_UN);
  }
};

/* Bytes held by live processes other than this one. */
uint64_t others(const table *t) {
  uint64_t sum = 0;
  int32_t self = (int32_t)getpid();
  for (int i = 0; i < kSlots; i++)
    if (t->slots[i].pid != self && alive(t->slots[i].pid)) sum += t->slots[i].bytes;
  return sum;
}

} // namespace

/* Declares mine as this process's bytes on the table; the lock is held. */
static void declare(table *t, size_t mine) {
  int32_t self = (int32_t)getpid();
  int free_slot = -1;
  for (int i = 0; i < kSlots; i++) {
    if (t->slots[i].pid == self) {
      t->slots[i].bytes = mine;
      return;
    }
    if (free_slot < 0 && !alive(t->slots[i].pid)) free_slot = i;
  }
  if (free_slot >= 0) t->slots[free_slot] = usage{self, 0, mine};
}

size_t kemu__shared_free(int phys, size_t mine, size_t total) {
  table *t = table_of(phys);
  if (!t) return total - mine;
  locked hold(t);
  uint64_t used = others(t) + mine;
  return used >= total ? 0 : total - (size_t)used;
}

bool kemu__shared_take(int phys, size_t mine, size_t want, size_t total) {
  table *t = table_of(phys);
  if (!t) return want <= total - mine;
  /* Checked and declared under one lock: two processes allocating at
   * once cannot both take the last free bytes. */
  locked hold(t);
  uint64_t used = others(t) + mine;
  if (used > total || want > total - used) return false;
  declare(t, mine + want);
  return true;
}

void kemu__shared_memory_set(int phys, size_t mine) {
  table *t = table_of(phys);
  if (!t) return;
  locked hold(t);
  declare(t, mine);
}

bool kemu__device_lost(int phys) {
  if (!state_dir()) return false;
  char path[4096];
  snprintf(path, sizeof path, "%s/lost-%d", state_dir(), phys);
  return access(path, F_OK) == 0;
}

void kemu__device_mark_lost(int phys) {
  if (!state_dir()) return;
  char path[4096];
  snprintf(path, sizeof path, "%s/lost-%d", state_dir(), phys);
  int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd >= 0) close(fd);
}
