/* libFuzzer target: the parent's side of the runner protocol. Any bytes are
 * fed, in chunks whose size the first byte picks, through the line splitter
 * (kp_reader) into a test run of the report model (krun__ingest: parsing,
 * the protocol's decoders, ordering rules, the record cap), then the
 * outcome is decided as for a child that exited, was killed or timed out,
 * and the test is written as report YAML. Nothing may crash, hang, leak or
 * read out of bounds, and the decided outcome must be a real one. Seeds:
 * corpus/record/.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "protocol.h"
#include "run-impl.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The report YAML goes to stdout, which goes nowhere. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  int fd = open("/dev/null", O_WRONLY);
  if (fd >= 0) dup2(fd, STDOUT_FILENO), close(fd);
  return 0;
}

static kp_reader rd;
static char line[KP_MAX_LINE];

static void drain(krep_report *rep, krep_test *t, krun__stream *st) {
  int k;
  while ((k = kp_reader_next(&rd, line)) != 0) {
    if (k > 0) krun__ingest(rep, t, st, line);
    else krun__protocol_error(rep, t, "record too long", NULL);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  unsigned mode = data[0];
  size_t chunk = 1 + (size_t)(mode & 0x3f) * 97;
  data++, size--;
  kp_reader_init(&rd);
  krep_report rep;
  krep_init(&rep);
  krep_test *t = krep_test_new(&rep, "fuzz/test", "fuzz", "fuzz");
  krun__stream st = {0};
  for (size_t off = 0; off < size;) {
    size_t n = size - off < chunk ? size - off : chunk;
    off += kp_reader_feed(&rd, (const char *)data + off, n);
    drain(&rep, t, &st);
  }
  const char *partial = kp_reader_tail(&rd, line) > 0 ? line : NULL;

  krun__exit x = {0};
  x.runner = "kiln-runner-fuzz";
  x.timeout_s = 1, x.grace_s = 1;
  switch (mode >> 6) {
  case 0: x.exited = 1, x.code = 0; break;
  case 1: x.signaled = 1, x.sig = SIGSEGV; break;
  case 2: x.timed_out = 1, x.kill_sent = 1, x.signaled = 1, x.sig = SIGKILL; break;
  default: x.exited = 1, x.code = 1, x.interrupted = 1; break;
  }
  krun__decide(&rep, t, &st, partial, &x, mode & 0x20);
  if (t->outcome < 0 || t->outcome >= KREP_NOUTCOMES || !t->message) abort();
  long long nleaks = 0;
  (void)krep_test_leaked(t, &nleaks);
  kh_err err;
  if (krep_write(&rep, "-", &err) != 0 && strstr(err.msg, "YAML writer")) {
    fprintf(stderr, "%s\n", err.msg);   /* every model must be writable */
    abort();
  }
  krep_free(&rep);
  return 0;
}
