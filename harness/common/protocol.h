/* The runner protocol: how a child tells the parent what happened.
 *
 * A record is one line: a tag, then space-separated key=value fields, values
 * percent-encoded so that they hold no space, '=', '%' or control byte. The
 * child writes each record as it happens, so a child that dies mid-test still
 * leaves what it reported. The parent reads with a bounded line length and
 * treats anything it cannot parse as a protocol error, never a crash. This
 * file is the line syntax; records.h holds each record type's keys. Shared
 * by the parent and the runners; touches no GPU runtime.
 */
#ifndef KILN_PROTOCOL_H
#define KILN_PROTOCOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version 2: a runner's --list and --devices answers begin with a `runner`
 * record (records.h), and kiln refuses a runner of another version. */
#define KP_VERSION 2
/* Longest record accepted, newline included. */
#define KP_MAX_LINE 65536
/* Most fields one record may carry. */
#define KP_MAX_FIELDS 48

/* ---- Writing ------------------------------------------------------------- */

typedef struct kp_record_out {
  char buf[KP_MAX_LINE];
  size_t len;
  size_t wanted;            /* bytes the record would take, cut or not */
  int overflow;
  char tag[32];
} kp_record_out;

void kp_begin(kp_record_out *r, const char *tag);
void kp_add_str(kp_record_out *r, const char *key, const char *value);
void kp_add_int(kp_record_out *r, const char *key, long long value);
void kp_add_uint(kp_record_out *r, const char *key, unsigned long long value);
/* Doubles round-trip exactly (%.17g); nan, inf and -inf are spelt so. */
void kp_add_double(kp_record_out *r, const char *key, double value);
/* Writes the record and its newline to fd in one write, retrying on EINTR
 * and short writes. A record longer than KP_MAX_LINE is never sent cut:
 * a `truncated tag=TAG bytes=N` record goes instead, which the parent
 * reports. Returns 0, or -1 (errno set) when the fd is gone. */
int kp_send(kp_record_out *r, int fd);

/* ---- Reading ------------------------------------------------------------- */

typedef struct kp_field {
  const char *key;
  const char *value;
} kp_field;

typedef struct kp_record {
  const char *tag;
  kp_field fields[KP_MAX_FIELDS];
  int nfields;
} kp_record;

/* Parses one line (without its newline) in place: decodes values and points
 * the record into the buffer. Returns 0, or -1 with *why set for a line that
 * is not a record (empty, bad tag, bad field, bad escape, too many fields). */
int kp_parse(char *line, kp_record *rec, const char **why);
/* A field's value, or NULL. Typed values come from the records'
 * decoders (records.h). */
const char *kp_get(const kp_record *rec, const char *key);

/* Incremental line splitter for a non-blocking pipe: feed bytes as they come,
 * take complete lines out. A line longer than KP_MAX_LINE is cut and flagged
 * so that the reader can report it and resynchronise at the next newline. */
typedef struct kp_reader {
  char buf[KP_MAX_LINE];
  size_t len;
  int discarding;          /* inside an over-long line */
} kp_reader;

void kp_reader_init(kp_reader *rd);
/* Appends up to n bytes; returns how many were taken (less than n when the
 * buffer is full: take lines out, then feed the rest). */
size_t kp_reader_feed(kp_reader *rd, const char *data, size_t n);
/* Copies the next complete line (NUL-terminated, no newline) into out of
 * size KP_MAX_LINE. Returns 1 for a line, 0 for none yet, -1 for an
 * over-long line that was dropped. */
int kp_reader_next(kp_reader *rd, char *out);
/* At end of stream: the unterminated tail, if any (returns its length). */
size_t kp_reader_tail(kp_reader *rd, char *out);

#ifdef __cplusplus
}
#endif
#endif
