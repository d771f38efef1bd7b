/* libFuzzer target: the parent's side of the runner protocol. Any bytes are
 * fed, in chunks whose size the first byte picks, through the line splitter
 * (kp_reader) into a test result (kh_result_line: parsing, ordering rules,
 * the record cap), then the outcome is decided as for a child that exited,
 * was killed or timed out. Nothing may crash, hang, leak or read out of
 * bounds, and the decided outcome must be a real one. Seeds: corpus/record/.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol.h"
#include "result.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static kp_reader rd;
static char line[KP_MAX_LINE];

static void drain(kh_result *r) {
  int k;
  while ((k = kp_reader_next(&rd, line)) != 0) {
    if (k > 0) kh_result_line(r, line);
    else kh_result_protocol_error(r, "record too long", NULL);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  unsigned mode = data[0];
  size_t chunk = 1 + (size_t)(mode & 0x3f) * 97;
  data++, size--;
  kp_reader_init(&rd);
  kh_result *r = kh_result_new("fuzz/test", "fuzz", "fuzz");
  for (size_t off = 0; off < size;) {
    size_t n = size - off < chunk ? size - off : chunk;
    size_t took = kp_reader_feed(&rd, (const char *)data + off, n);
    off += took;
    drain(r);
  }
  if (kp_reader_tail(&rd, line) > 0) kh_result_set(&r->partial, line);

  kh_exit_info x = {0};
  x.runner = "kiln-runner-fuzz";
  x.timeout_s = 1, x.grace_s = 1;
  switch (mode >> 6) {
  case 0: x.exited = 1, x.code = 0; break;
  case 1: x.signaled = 1, x.sig = SIGSEGV; break;
  case 2: x.timed_out = 1, x.kill_sent = 1, x.signaled = 1, x.sig = SIGKILL; break;
  default: x.exited = 1, x.code = 1, x.interrupted = 1; break;
  }
  kh_result_decide(r, &x, mode & 0x20);
  if (r->outcome < 0 || r->outcome >= KH_NOUTCOMES || !r->message) abort();
  int nleaks = 0;
  (void)kh_result_leaked(r, &nleaks);
  kh_result_free(r);
  return 0;
}
