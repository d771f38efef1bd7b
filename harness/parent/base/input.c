/* Bounded readers of outside input (configs, resource specs, reports,
 * journals): a file read up to a size limit, a YAML document loaded with a
 * limit on nesting and no aliases, lines of a bounded length, and output
 * paths checked before any work. libyaml's own document loader has none of
 * these limits: a 400 KB file of nested lists took minutes (its time grows
 * with the square of the depth), and an alias to an alias to ... expands
 * exponentially in any walk of the document.
 */
#include "base.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

int kh_read_input(const char *path, size_t max, char **out, size_t *len, kh_err *err) {
  if (kh_read_file(path, max, out, len) == 0) return 0;
  if (errno == EFBIG)
    return kh_errf(err, "%s: larger than %zu %s, the most kiln reads from such a file", path,
                   max >= (1u << 20) ? max >> 20 : max >> 10, max >= (1u << 20) ? "MiB" : "KiB");
  return kh_errf(err, "%s: %s", path, strerror(errno));
}

/* ---- YAML documents ------------------------------------------------------------ */

typedef struct open_node {
  int id;                   /* the collection's node */
  int is_map;
  int key;                  /* a mapping's key waiting for its value; 0: none */
} open_node;

static int fail_at(kh_err *err, const char *name, const yaml_mark_t *m, const char *what) {
  return kh_errf(err, "%s:%zu:%zu: %s", name, m->line + 1, m->column + 1, what);
}

/* Adds node id to the collection it belongs to (none for the root). */
static int attach(yaml_document_t *doc, open_node *top, int id) {
  if (!top) return 1;
  if (!top->is_map) return yaml_document_append_sequence_item(doc, top->id, id);
  if (!top->key) {
    top->key = id;
    return 1;
  }
  int ok = yaml_document_append_mapping_pair(doc, top->id, top->key, id);
  top->key = 0;
  return ok;
}

static void mark(yaml_document_t *doc, int id, const yaml_event_t *e) {
  doc->nodes.start[id - 1].start_mark = e->start_mark;
  doc->nodes.start[id - 1].end_mark = e->end_mark;
}

/* One event into the document; 1 when the document is complete, 0 to go
 * on, -1 on an error (err filled). */
static int event(yaml_document_t *doc, yaml_event_t *e, open_node *stack, int *depth,
                 int max_depth, int *docs, const char *name, kh_err *err) {
  open_node *top = *depth ? &stack[*depth - 1] : NULL;
  int id = 0;
  switch (e->type) {
  case YAML_DOCUMENT_START_EVENT:
    if (++*docs > 1) return fail_at(err, name, &e->start_mark, "more than one document");
    return 0;
  case YAML_DOCUMENT_END_EVENT:
    /* Kept for readers that need proof a file is whole: a writer's "..."
     * is its last line, so a cut file has an implicit end. */
    doc->end_implicit = e->data.document_end.implicit;
    return 0;
  case YAML_STREAM_END_EVENT:
    return 1;
  case YAML_ALIAS_EVENT: {
    char what[200];
    snprintf(what, sizeof what, "an alias (*%.80s): kiln accepts no anchors and aliases",
             (const char *)e->data.alias.anchor);
    return fail_at(err, name, &e->start_mark, what);
  }
  case YAML_SCALAR_EVENT:
    id = yaml_document_add_scalar(doc, NULL, e->data.scalar.value, (int)e->data.scalar.length,
                                  e->data.scalar.style);
    break;
  case YAML_SEQUENCE_START_EVENT:
  case YAML_MAPPING_START_EVENT: {
    if (*depth >= max_depth) {
      char what[120];
      snprintf(what, sizeof what, "lists and mappings nest deeper than %d levels", max_depth);
      return fail_at(err, name, &e->start_mark, what);
    }
    int is_map = e->type == YAML_MAPPING_START_EVENT;
    id = is_map ? yaml_document_add_mapping(doc, NULL, e->data.mapping_start.style)
                : yaml_document_add_sequence(doc, NULL, e->data.sequence_start.style);
    if (!id) break;
    mark(doc, id, e);
    if (!attach(doc, top, id)) return kh_errf(err, "%s: out of memory", name);
    stack[(*depth)++] = (open_node){id, is_map, 0};
    return 0;
  }
  case YAML_SEQUENCE_END_EVENT:
  case YAML_MAPPING_END_EVENT:
    if (*depth) doc->nodes.start[stack[*depth - 1].id - 1].end_mark = e->end_mark;
    (*depth)--;
    return 0;
  default:
    return 0;
  }
  if (!id) return kh_errf(err, "%s: out of memory", name);
  mark(doc, id, e);
  if (!attach(doc, top, id)) return kh_errf(err, "%s: out of memory", name);
  return 0;
}

int kh_yaml_load(const char *buf, size_t len, const char *name, int max_depth,
                 struct yaml_document_s *doc, kh_err *err) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser))
    return kh_errf(err, "%s: cannot start the YAML parser", name);
  yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
  if (!yaml_document_initialize(doc, NULL, NULL, NULL, 1, 1)) {
    yaml_parser_delete(&parser);
    return kh_errf(err, "%s: out of memory", name);
  }
  open_node *stack = kh_xcalloc((size_t)max_depth + 1, sizeof *stack);
  int depth = 0, docs = 0, rc = 0;
  while (rc == 0) {
    yaml_event_t e;
    if (!yaml_parser_parse(&parser, &e)) {
      char what[400];
      snprintf(what, sizeof what, "malformed YAML: %s%s%s",
               parser.problem ? parser.problem : "error", parser.context ? " " : "",
               parser.context ? parser.context : "");
      rc = fail_at(err, name, &parser.problem_mark, what);
      break;
    }
    rc = event(doc, &e, stack, &depth, max_depth, &docs, name, err);
    yaml_event_delete(&e);
  }
  free(stack);
  yaml_parser_delete(&parser);
  if (rc < 0) {
    yaml_document_delete(doc);
    return -1;
  }
  return 0;
}

/* ---- Lines ------------------------------------------------------------------------ */

int kh_lines_open(kh_lines *l, const char *path, size_t max_line) {
  memset(l, 0, sizeof *l);
  l->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (l->fd < 0) return -1;
  l->max = max_line;
  l->buf = kh_xmalloc(max_line + 1);
  return 0;
}

int kh_lines_next(kh_lines *l, char **line) {
  for (;;) {
    char *nl = memchr(l->buf + l->start, '\n', l->len - l->start);
    if (nl) {
      *nl = '\0';
      *line = l->buf + l->start;
      l->start = (size_t)(nl - l->buf) + 1;
      l->lineno++;
      return 1;
    }
    /* Keep the partial line at the front, then read more behind it. */
    memmove(l->buf, l->buf + l->start, l->len - l->start);
    l->len -= l->start;
    l->start = 0;
    if (l->len >= l->max) return errno = EMSGSIZE, -1;
    ssize_t n = kh_read(l->fd, l->buf + l->len, l->max - l->len);
    if (n < 0) return -1;
    if (n == 0) return 0;     /* end of file; a last line without '\n' is torn */
    l->len += (size_t)n;
  }
}

void kh_lines_close(kh_lines *l) {
  if (l->fd >= 0) close(l->fd);
  free(l->buf);
  memset(l, 0, sizeof *l);
  l->fd = -1;
}

/* ---- Output paths ------------------------------------------------------------------- */

int kh_check_output(const char *path, int is_dir, const char *what, kh_err *err) {
  struct stat st;
  char dir[PATH_MAX];
  if (stat(path, &st) == 0) {
    if (is_dir && !S_ISDIR(st.st_mode))
      return kh_errf(err, "%s %s: %s", what, path, strerror(ENOTDIR));
    if (!is_dir && S_ISDIR(st.st_mode))
      return kh_errf(err, "%s %s: %s", what, path, strerror(EISDIR));
  }
  /* A file is written beside itself and renamed (kh_write_atomic); a
   * folder gets files: either way its folder must take a new file. The
   * probe is the honest test (access() says yes to root on a read-only
   * mount's files and no to nothing else). */
  if (is_dir) {
    if (kh_mkdir_p(path, 0755) != 0) return kh_errf(err, "%s %s: %s", what, path, strerror(errno));
    snprintf(dir, sizeof dir, "%s", path);
  } else {
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
  }
  char probe[PATH_MAX + 32];
  snprintf(probe, sizeof probe, "%s/.kiln-probe.%ld", dir, (long)getpid());
  int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    int e = errno;
    if (is_dir || strcmp(dir, ".") == 0)
      return kh_errf(err, "%s %s: %s", what, path, strerror(e));
    return kh_errf(err, "%s %s: folder %s: %s", what, path, dir, strerror(e));
  }
  close(fd);
  unlink(probe);
  return 0;
}
