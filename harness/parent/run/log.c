/* A child's output, bounded: the first 256 KiB and a rolling last 64 KiB
 * are kept, the bytes between are counted and marked in the log file, so a
 * child that floods cannot exhaust kiln's memory or disk. */
#include "run-impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG_HEAD (256u << 10)
#define LOG_TAIL (64u << 10)
/* What the report carries of it: the last lines. */
#define TAIL_LINES 40
#define TAIL_BYTES 4096

long long krun__log_max_bytes(void) { return (long long)LOG_HEAD + LOG_TAIL + 128; }

void krun__log_add(krun__log *l, const char *d, size_t n) {
  l->total += (long long)n;
  if (l->head_len < LOG_HEAD) {
    size_t take = n < LOG_HEAD - l->head_len ? n : LOG_HEAD - l->head_len;
    /* Grown as output comes: most tests print little. */
    if (l->head_len + take > l->head_cap) {
      size_t cap = l->head_cap ? l->head_cap : 4096;
      while (cap < l->head_len + take) cap *= 2;
      l->head = kh_xrealloc(l->head, cap < LOG_HEAD ? cap : LOG_HEAD);
      l->head_cap = cap < LOG_HEAD ? cap : LOG_HEAD;
    }
    memcpy(l->head + l->head_len, d, take);
    l->head_len += take;
    d += take, n -= take;
  }
  if (n == 0) return;
  if (!l->ring) l->ring = kh_xmalloc(LOG_TAIL);
  if (n > LOG_TAIL) d += n - LOG_TAIL, n = LOG_TAIL;
  while (n > 0) {
    size_t take = LOG_TAIL - l->ring_pos < n ? LOG_TAIL - l->ring_pos : n;
    memcpy(l->ring + l->ring_pos, d, take);
    l->ring_pos = (l->ring_pos + take) % LOG_TAIL;
    l->ring_len = l->ring_len + take > LOG_TAIL ? LOG_TAIL : l->ring_len + take;
    d += take, n -= take;
  }
}

/* The ring in order, NUL-terminated. */
static char *ring_in_order(const krun__log *l) {
  char *out = kh_xmalloc(l->ring_len + 1);
  size_t start = (l->ring_pos + LOG_TAIL - l->ring_len) % LOG_TAIL;
  size_t first = LOG_TAIL - start < l->ring_len ? LOG_TAIL - start : l->ring_len;
  if (l->ring_len) {
    memcpy(out, l->ring + start, first);
    memcpy(out + first, l->ring, l->ring_len - first);
  }
  out[l->ring_len] = '\0';
  return out;
}

long long krun__log_dropped(const krun__log *l) {
  return l->total - (long long)l->head_len - (long long)l->ring_len;
}

char *krun__log_tail(const krun__log *l) {
  char *all = l->ring_len ? ring_in_order(l)
                          : kh_strndup(l->head ? l->head : "", l->head_len);
  size_t len = strlen(all);     /* output holding NUL bytes stops there */
  const char *p = all + len;
  int lines = 0;
  if (p > all && p[-1] == '\n') p--;
  while (p > all && (size_t)(all + len - p) < TAIL_BYTES) {
    if (p[-1] == '\n' && ++lines == TAIL_LINES) break;
    p--;
  }
  char *tail = kh_strdup(p);
  free(all);
  kh_text_clean(tail);
  return tail;
}

int krun__log_write(const krun__log *l, const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  int rc = 0;
  if (l->head_len) rc |= kh_write_all(fd, l->head, l->head_len);
  long long dropped = krun__log_dropped(l);
  if (dropped > 0 && rc == 0) {
    char mark[128];
    int n = snprintf(mark, sizeof mark, "\n[kiln: %lld bytes of output "
                                        "dropped here]\n", dropped);
    rc |= kh_write_all(fd, mark, (size_t)n);
  }
  if (l->ring_len && rc == 0) {
    char *ring = ring_in_order(l);
    rc |= kh_write_all(fd, ring, l->ring_len);
    free(ring);
  }
  int saved = errno;
  if (close(fd) != 0 && errno != EINTR && rc == 0) return -1;
  errno = saved;
  return rc ? -1 : 0;
}

void krun__log_free(krun__log *l) {
  free(l->head);
  free(l->ring);
  memset(l, 0, sizeof *l);
}
