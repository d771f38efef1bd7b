/* The parent's base (prefix kh_): exit statuses, error messages, strings
 * and buffers, clocks, files. Every room of harness/parent builds on it and
 * it builds on nothing of theirs. Nothing here touches a GPU runtime; the
 * parent never does.
 */
#ifndef KILN_PARENT_BASE_H
#define KILN_PARENT_BASE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* Exit statuses of the kiln command. */
enum {
  KH_EXIT_OK = 0,
  KH_EXIT_FAIL = 1,        /* a test did not pass */
  KH_EXIT_USAGE = 2,       /* usage or config error */
  KH_EXIT_INFRA = 3,       /* infrastructure error */
  KH_EXIT_INTERRUPTED = 130,
};

/* ---- Errors ------------------------------------------------------------- */

/* An error message buffer that functions fill instead of printing, so that
 * the caller adds where the bad value came from. */
typedef struct kh_err {
  char msg[1024];
} kh_err;

int kh_errf(kh_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- Time --------------------------------------------------------------- */

double kh_now_ms(void);          /* monotonic */
double kh_wall_s(void);          /* seconds since the epoch */
/* ISO 8601 UTC with milliseconds, "2026-11-22T10:00:00.123Z". */
void kh_iso_time(double wall_s, char *out, size_t n);
/* The seconds since the epoch of such a text; NAN when it is not one. */
double kh_iso_parse(const char *s);

/* ---- Strings ------------------------------------------------------------ */

char *kh_strdup(const char *s);  /* NULL-safe; aborts on out of memory */
char *kh_strndup(const char *s, size_t n);
char *kh_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void *kh_xmalloc(size_t n);
void *kh_xcalloc(size_t n, size_t size);
void *kh_xrealloc(void *p, size_t n);
/* Parses a whole string as an integer / double within [lo, hi]. */
int kh_parse_ll(const char *s, long long lo, long long hi, long long *out);
int kh_parse_double(const char *s, double lo, double hi, double *out);
/* Replaces bytes that are not valid UTF-8 or are control characters (other
 * than newline and tab) by '?', in place, so YAML emitters accept it. */
void kh_text_clean(char *s);
/* 1 when kh_text_clean would change s. */
int kh_text_dirty(const char *s);

/* A growable byte buffer. */
typedef struct kh_buf {
  char *data;
  size_t len;
  size_t cap;
} kh_buf;

void kh_buf_add(kh_buf *b, const void *data, size_t n);
void kh_buf_addf(kh_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void kh_buf_free(kh_buf *b);
/* Appends s as a JSON string, quoted and escaped (invalid UTF-8 and
 * control characters as \u escapes or U+FFFD). */
void kh_json_str(kh_buf *b, const char *s);

/* ---- Files -------------------------------------------------------------- */

int kh_mkdir_p(const char *path, mode_t mode);
/* Removes a directory tree of any depth (by descriptors, never a path
 * longer than the one given). */
int kh_rm_rf(const char *path);   /* 0, or -1 when something is left */
/* Reads a whole file (at most max bytes) into a NUL-terminated buffer. */
int kh_read_file(const char *path, size_t max, char **out, size_t *len);
/* Writes data to path atomically: a temporary file beside it, fsync,
 * rename. */
int kh_write_atomic(const char *path, const void *data, size_t len);

/* The running kiln, and its folder ("" when /proc does not say). */
const char *kh_self_exe(void);
const char *kh_self_dir(void);
/* 1 when both paths name the same file or folder. */
int kh_same_file(const char *a, const char *b);

/* Retrying wrappers for calls that signals may interrupt. */
ssize_t kh_read(int fd, void *buf, size_t n);
int kh_write_all(int fd, const void *buf, size_t n);

/* ---- Outside input, bounded (input.c) ------------------------------------ */

/* Nesting that kiln's own YAML never comes near (a report nests 6 deep). */
#define KH_YAML_MAX_DEPTH 64

/* kh_read_file with an error that names the path and, past max, the limit. */
int kh_read_input(const char *path, size_t max, char **out, size_t *len, kh_err *err);
/* Loads one YAML document into doc (libyaml's yaml_document_t) with node
 * positions for errors; refuses nesting deeper than max_depth, any alias,
 * a second document and malformed YAML with name:line:column. Linear in
 * the input. doc->end_implicit is 0 when the document ended with "...".
 * 0, or -1 with err (doc then needs no delete). */
struct yaml_document_s;
int kh_yaml_load(const char *buf, size_t len, const char *name, int max_depth,
                 struct yaml_document_s *doc, kh_err *err);

/* Lines of a file, each at most max bytes (a longer one is an error, not
 * a reason to read without end). */
typedef struct kh_lines {
  int fd;
  char *buf;
  size_t len, start, max;
  long lineno;              /* of the line last returned */
} kh_lines;

int kh_lines_open(kh_lines *l, const char *path, size_t max_line);
/* 1 with *line (NUL-terminated, newline dropped), 0 at the end (a last
 * line without a newline is not returned), -1 with errno (EMSGSIZE: a
 * line longer than max). */
int kh_lines_next(kh_lines *l, char **line);
void kh_lines_close(kh_lines *l);

/* Checks, before any work, that an output can be written: a file (is_dir
 * 0), whose folder must take a new file and which must not be a folder;
 * or a folder (is_dir 1), made if missing. what names where the path came
 * from ("--junit"); the error names it, the path and the reason. */
int kh_check_output(const char *path, int is_dir, const char *what, kh_err *err);

#endif
