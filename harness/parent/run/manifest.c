/* Manifests: tests that are commands, in any language (docs/third-party.md).
 * A YAML file names each test and the command that runs it, with device
 * slots, a timeout and tags, as CTest's add_test with RESOURCE_GROUPS
 * does; kiln schedules, isolates and reports them as any other test. A
 * command speaks no protocol: its outcome is its exit status (0 pass, the
 * skip code, 77 unless the manifest says otherwise, skip, anything else
 * fail; a signal or the deadline is decided as for every child), made
 * into records here when it ends.
 *
 *   suite: NAME              optional; default: the file's name
 *   tags: [TAG, ...]         optional, added to every test
 *   skip_code: 77            optional
 *   tests:
 *     - name: NAME           the id is SUITE/NAME
 *       command: [PROGRAM, ARG, ...]   or a string, run by /bin/sh -c
 *       slots: 1             optional: 1..1024, or all (the whole device)
 *       needs_gpu: true      optional: false runs it with no device too
 *       timeout: 30          optional, whole seconds
 *       tags: [TAG, ...]     optional (a comma-separated string too)
 *   pytest: PATH | [PATH, ...]   optional: pytest suites, as --pytest
 *   zygote: true             optional: false starts a fresh interpreter
 *                            for each of those suites' tests
 *
 * Commands run in the manifest's folder; a program with a '/' in its name
 * is found from there, a bare name on the PATH; pytest paths are relative
 * to it too. A manifest names tests, pytest suites or both. The source's
 * table (source-impl.h) is at the end.
 */
#include "run-impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml.h>

#include "records.h"
#include "select.h"

/* ---- Reading a manifest -------------------------------------------------------------- */

typedef struct mf {
  yaml_document_t doc;
  const char *path;
  kh_err *err;
  krun_registry *reg;
  int source;
  const char *suite;
  char *own_suite;          /* the suite key's, escaped */
  kh_buf tags;              /* the manifest's own tags */
} mf;

/* A manifest lists commands: 16 MiB is far past any real one. */
#define MANIFEST_MAX ((size_t)16 << 20)

static int fail(mf *m, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(mf *m, const yaml_node_t *n, const char *fmt, ...) {
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return kh_errf(m->err, "%s:%zu:%zu: %s", m->path, n->start_mark.line + 1,
                 n->start_mark.column + 1, what);
}

static yaml_node_t *node(mf *m, int i) { return yaml_document_get_node(&m->doc, i); }

static const char *scalar(const yaml_node_t *n) {
  return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A word: non-empty, no space or control byte, not read as a selector's
 * '-' or '@'. */
static int word(const char *s) {
  if (!s || !*s || *s == '-' || *s == '@') return 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (*p <= ' ') return 0;
  return 1;
}

/* Tags as a sequence or a comma-separated string, appended to out. */
static int tags(mf *m, yaml_node_t *v, kh_buf *out) {
  if (v->type == YAML_SEQUENCE_NODE) {
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
      const char *t = scalar(node(m, *i));
      if (!word(t) || strchr(t, ','))
        return fail(m, node(m, *i), "a tag must be a word without ','");
      kh_buf_addf(out, "%s%s", out->len ? "," : "", t);
    }
    return 0;
  }
  const char *t = scalar(v);
  if (!t || (*t && !word(t)))
    return fail(m, v, "'tags' must be a sequence of words or a comma-separated string");
  if (*t) kh_buf_addf(out, "%s%s", out->len ? "," : "", t);
  return 0;
}

static int number(mf *m, yaml_node_t *v, const char *key, long long lo, long long hi,
                  long long *out) {
  const char *t = scalar(v);
  if (!t || kh_parse_ll(t, lo, hi, out) != 0)
    return fail(m, v, "'%s' must be an integer from %lld to %lld", key, lo, hi);
  return 0;
}

/* argv[0] must be there: a typo is an error now, not a failed test later. */
static int runnable(mf *m, yaml_node_t *v, const char *prog) {
  if (strchr(prog, '/')) {
    char *p = prog[0] == '/' ? kh_strdup(prog) : kh_asprintf("%s/%s", m->reg->sources[m->source].dir, prog);
    int ok = access(p, X_OK) == 0;
    int e = errno;
    free(p);
    return ok ? 0 : fail(m, v, "command '%s' (from the manifest's folder): %s", prog, strerror(e));
  }
  const char *path = getenv("PATH");
  for (const char *d = path ? path : "/usr/bin:/bin"; *d;) {
    size_t len = strcspn(d, ":");
    char *cand = kh_asprintf("%.*s/%s", (int)len, len ? d : ".", prog);
    int ok = access(cand, X_OK) == 0;
    free(cand);
    if (ok) return 0;
    d += len + (d[len] == ':');
  }
  return fail(m, v, "command '%s' is not on the PATH", prog);
}

static char **command(mf *m, yaml_node_t *v) {
  char **argv = NULL;
  int n = 0;
  if (v->type == YAML_SCALAR_NODE && *scalar(v)) {
    argv = kh_xcalloc(4, sizeof *argv);
    argv[0] = kh_strdup("/bin/sh"), argv[1] = kh_strdup("-c"), argv[2] = kh_strdup(scalar(v));
    return argv;
  }
  if (v->type != YAML_SEQUENCE_NODE || v->data.sequence.items.top == v->data.sequence.items.start) {
    fail(m, v, "'command' must be a non-empty sequence (the argv) or a string for /bin/sh -c");
    return NULL;
  }
  argv = kh_xcalloc((size_t)(v->data.sequence.items.top - v->data.sequence.items.start) + 1,
                    sizeof *argv);
  for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
    const char *a = scalar(node(m, *i));
    if (!a || (n == 0 && !*a)) {
      fail(m, node(m, *i), "each word of 'command' must be a string (the first not empty)");
      for (int k = 0; k < n; k++) free(argv[k]);
      free(argv);
      return NULL;
    }
    argv[n++] = kh_strdup(a);
  }
  if (runnable(m, v, argv[0]) != 0) {
    for (int k = 0; k < n; k++) free(argv[k]);
    free(argv);
    return NULL;
  }
  return argv;
}

static void free_argv(char **argv) {
  for (char **a = argv; a && *a; a++) free(*a);
  free(argv);
}

/* A test's name, NUL and all (YAML's "\0" is a byte of the scalar, not
 * its end): no white space, not read as a selector's '-' or '@'. */
static int name_word(const yaml_node_t *v) {
  const char *s = (const char *)v->data.scalar.value;
  size_t n = v->data.scalar.length;
  if (n == 0 || *s == '-' || *s == '@') return 0;
  for (size_t i = 0; i < n; i++)
    if (strchr(" \t\n\r\v\f", s[i]) && s[i]) return 0;
  return 1;
}

/* The name as an id part: bytes a console cannot show escaped (select.h). */
static char *escaped(const yaml_node_t *v) {
  const char *s = (const char *)v->data.scalar.value;
  size_t n = v->data.scalar.length, len = ksel_id_escape(s, n, NULL, 0);
  char *out = kh_xmalloc(len + 1);
  ksel_id_escape(s, n, out, len + 1);
  return out;
}

static int one_test(mf *m, yaml_node_t *e) {
  if (e->type != YAML_MAPPING_NODE)
    return fail(m, e, "a test must be a mapping with name and command");
  char *name = NULL;
  char **argv = NULL;
  long long slots = 1, timeout = 0;
  int needs_gpu = 1, rc = 0;
  kh_buf tg = {0};
  kh_buf_addf(&tg, "%s", m->tags.data ? m->tags.data : "");
  for (yaml_node_pair_t *p = e->data.mapping.pairs.start; rc == 0 && p < e->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node(m, p->key), *v = node(m, p->value);
    const char *key = scalar(k) ? scalar(k) : "";
    if (strcmp(key, "name") == 0) {
      free(name);
      name = NULL;
      if (!scalar(v) || !name_word(v))
        rc = fail(m, v, "'name' must be a word (no space; not starting '-' or '@')");
      else
        name = escaped(v);
    } else if (strcmp(key, "command") == 0) {
      free_argv(argv);
      if (!(argv = command(m, v))) rc = -1;
    } else if (strcmp(key, "slots") == 0) {
      if (scalar(v) && strcmp(scalar(v), "all") == 0) slots = -1;
      else rc = number(m, v, "slots", 1, 1024, &slots);
    } else if (strcmp(key, "timeout") == 0) {
      rc = number(m, v, "timeout", 1, 604800, &timeout);
    } else if (strcmp(key, "needs_gpu") == 0) {
      const char *b = scalar(v) ? scalar(v) : "";
      needs_gpu = strcmp(b, "true") == 0 ? 1 : strcmp(b, "false") == 0 ? 0 : -1;
      if (needs_gpu < 0) rc = fail(m, v, "'needs_gpu' must be true or false");
    } else if (strcmp(key, "tags") == 0) {
      rc = tags(m, v, &tg);
    } else {
      rc = fail(m, k, "unknown key '%s' in a test (known: name, command, slots, "
                "needs_gpu, timeout, tags)", key);
    }
  }
  if (rc == 0 && (!name || !argv)) rc = fail(m, e, "a test needs a name and a command");
  if (rc == 0) {
    char *id = kh_asprintf("%s/%s", m->suite, name);
    krun_test t = {.id = id, .suite = (char *)m->suite, .name = (char *)name,
                   .tags = tg.data ? tg.data : "", .file = (char *)m->path,
                   .line = (int)e->start_mark.line + 1, .slots = (int)slots,
                   .timeout_s = (int)timeout, .needs_gpu = needs_gpu, .argv = argv};
    krun__registry_add(m->reg, m->source, &t);
    free(id);
    argv = NULL;
  }
  free_argv(argv);
  free(name);
  kh_buf_free(&tg);
  return rc;
}

/* The manifest's pytest suites, after its commands (a new source may
 * move the registry's sources). -3: pytest could not list one (an
 * infrastructure error, as for --pytest). */
static int pytest_path(mf *m, yaml_node_t *n, int zygote) {
  const char *p = scalar(n);
  if (!p || !*p)
    return fail(m, n, "'pytest' must be a path (a pytest folder or file) or a sequence of "
                      "paths");
  char *path = p[0] == '/' ? kh_strdup(p)
                           : kh_asprintf("%s/%s", m->reg->sources[m->source].dir, p);
  kh_err e;
  int rc = 0;
  if (access(path, F_OK) != 0) {
    rc = fail(m, n, "'pytest': '%s' (from the manifest's folder: %s): %s", p, path,
              strerror(errno));
  } else if ((rc = krun_registry_add_pytest(m->reg, path, &e)) != 0) {
    int usage = rc == -2;
    fail(m, n, "%s", e.msg);
    rc = usage ? -1 : -3;
  } else {
    m->reg->sources[m->reg->nsources - 1].no_zygote = !zygote;
  }
  free(path);
  return rc;
}

static int pytest_paths(mf *m, yaml_node_t *v, int zygote) {
  if (v->type != YAML_SEQUENCE_NODE) return pytest_path(m, v, zygote);
  if (v->data.sequence.items.top == v->data.sequence.items.start)
    return fail(m, v, "'pytest' must name at least one path");
  for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
    int rc = pytest_path(m, node(m, *i), zygote);
    if (rc != 0) return rc;
  }
  return 0;
}

static int root(mf *m, yaml_node_t *r) {
  if (!r || r->type != YAML_MAPPING_NODE)
    return r ? fail(m, r, "a manifest must be a mapping with 'tests' or 'pytest'")
             : kh_errf(m->err, "%s: the manifest is empty", m->path);
  yaml_node_t *list = NULL, *pytest = NULL;
  int zygote = 1;
  krun_source *src = &m->reg->sources[m->source];
  for (yaml_node_pair_t *p = r->data.mapping.pairs.start; p < r->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node(m, p->key), *v = node(m, p->value);
    const char *key = scalar(k) ? scalar(k) : "";
    long long code;
    if (strcmp(key, "tests") == 0) list = v;
    else if (strcmp(key, "suite") == 0) {
      if (!scalar(v) || !name_word(v) || memchr(scalar(v), '/', v->data.scalar.length))
        return fail(m, v, "'suite' must be a word without '/'");
      free(m->own_suite);
      m->suite = m->own_suite = escaped(v);
    } else if (strcmp(key, "skip_code") == 0) {
      if (number(m, v, "skip_code", 1, 255, &code) != 0) return -1;
      src->skip_code = (int)code;
    } else if (strcmp(key, "tags") == 0) {
      if (tags(m, v, &m->tags) != 0) return -1;
    } else if (strcmp(key, "pytest") == 0) {
      pytest = v;
    } else if (strcmp(key, "zygote") == 0) {
      const char *b = scalar(v) ? scalar(v) : "";
      zygote = strcmp(b, "true") == 0 ? 1 : strcmp(b, "false") == 0 ? 0 : -1;
      if (zygote < 0) return fail(m, v, "'zygote' must be true or false");
    } else {
      return fail(m, k, "unknown key '%s' (known: suite, tags, skip_code, tests, pytest, "
                  "zygote)", key);
    }
  }
  if ((list || !pytest) &&
      (!list || list->type != YAML_SEQUENCE_NODE ||
       list->data.sequence.items.top == list->data.sequence.items.start))
    return fail(m, list ? list : r, "'tests' must be a non-empty sequence of tests%s",
                list ? "" : " (or 'pytest' name pytest suites)");
  for (yaml_node_item_t *i = list ? list->data.sequence.items.start : NULL;
       list && i < list->data.sequence.items.top; i++)
    if (one_test(m, node(m, *i)) != 0) return -1;
  return pytest ? pytest_paths(m, pytest, zygote) : 0;
}

int krun_registry_add_manifest(krun_registry *reg, const char *path, kh_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return kh_errf(err, "--manifest %s: %s", path, strerror(errno));
  mf m = {.path = path, .err = err, .reg = reg};
  m.source = krun__registry_source(reg, KRUN_KIND_COMMAND, path);
  krun_source *src = &reg->sources[m.source];
  src->skip_code = 77;
  /* The manifest's folder, absolute: commands run there. */
  char *copy = kh_strdup(path), *slash = strrchr(copy, '/');
  if (slash) *slash = '\0';
  src->dir = realpath(slash ? (*copy ? copy : "/") : ".", NULL);
  /* The suite defaults to the file's name, less .yaml or .yml. */
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  char *suite = kh_strdup(base);
  char *dot = strrchr(suite, '.');
  if (dot && (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0)) *dot = '\0';
  m.suite = suite;
  /* The bounded loader (base/input.c): libyaml's own takes time that
   * grows with the square of the nesting (200000 levels: 98 s). */
  int rc;
  char *buf = NULL;
  size_t len;
  if (!src->dir) {
    rc = kh_errf(err, "--manifest %s: its folder: %s", path, strerror(errno));
  } else if (kh_read_input(path, MANIFEST_MAX, &buf, &len, err) != 0 ||
             kh_yaml_load(buf, len, path, KH_YAML_MAX_DEPTH, &m.doc, err) != 0) {
    rc = -1;
  } else {
    rc = root(&m, yaml_document_get_root_node(&m.doc));
    yaml_document_delete(&m.doc);
  }
  free(buf);
  fclose(f);
  kh_buf_free(&m.tags);
  free(copy), free(suite), free(m.own_suite);
  return rc;
}

/* ---- A command's end ------------------------------------------------------------------ */

/* The last line the command printed, for the message. */
static char *last_line(const krun__log *log) {
  char *tail = krun__log_tail(log);
  size_t n = strlen(tail);
  while (n && (tail[n - 1] == '\n' || tail[n - 1] == ' ')) tail[--n] = '\0';
  char *nl = strrchr(tail, '\n');
  char *line = kh_strdup(nl ? nl + 1 : tail);
  free(tail);
  return line;
}

static void feed(krun__run *R, krun__job *j, kp_record_out *rec) {
  rec->buf[rec->len] = '\0';
  krun__ingest(&R->rep, j->tests[0], &j->st[0], rec->buf);
}

static void command_finish(krun__run *R, krun__job *j, krun__emit *emit) {
  (void)emit;   /* it prints no records: what it left is its exit status */
  if (j->exec_errno || j->st[0].started) return;
  const krun_source *src = &R->o->reg->sources[j->defs[0]->source];
  kp_record_out *rec = kh_xmalloc(sizeof *rec);
  kp_begin(rec, "test");
  kp_add_str(rec, "id", j->tests[0]->id);
  kp_add_int(rec, "pid", j->pid);
  feed(R, j, rec);
  /* A signal, the deadline, kiln stopping: decide.c says so. */
  if (WIFEXITED(j->wstatus) && !j->timed_out && !j->interrupted) {
    int code = WEXITSTATUS(j->wstatus);
    char *said = last_line(&j->log);
    char *msg = code == 0 ? kh_strdup("")
                : code == src->skip_code
                    ? (*said ? kh_strdup(said) : kh_asprintf("skipped (exit status %d)", code))
                    : kh_asprintf("exited with status %d%s%s", code, *said ? ": " : "", said);
    kp_result r = {code == 0 ? "pass" : code == src->skip_code ? "skip" : "fail", msg, "", 0};
    kp_encode(rec, &kp_rec_result, &r);
    feed(R, j, rec);
    kp_encode(rec, &kp_rec_end, &(kp_end){0});
    feed(R, j, rec);
    free(msg), free(said);
  }
  free(rec);
}

/* ---- The source ------------------------------------------------------------------------ */

/* Its argv as the manifest gave it. */
static void command_argv(krun__run *R, krun__job *j, char **argv, int *n) {
  (void)R;
  for (char **a = j->defs[0]->argv; *a; a++) argv[(*n)++] = kh_strdup(*a);
}

static const char *program(const krun__run *R, const krun__job *j) {
  (void)R;
  return j->defs[0]->argv[0];
}

const krun__source_i krun__command_source = {
    .name = "command",
    .list = krun_registry_add_manifest,
    .argv = command_argv,
    .program = program,
    .finish = command_finish,
};
