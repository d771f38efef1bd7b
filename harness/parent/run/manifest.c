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
 *   KEY: PATH | [PATH, ...]  optional: suites of another source, by its
 *                            config key (pytest: tests/)
 *   KEY: true|false          optional: another source's switch, for the
 *                            suites this manifest names (zygote: false)
 *
 * Commands run in the manifest's folder; a program with a '/' in its name
 * is found from there, a bare name on the PATH; other sources' paths are
 * relative to it too. A manifest names tests, other suites or both. The
 * keys of other sources are theirs (their tables' opts): this file names
 * none. The source's table (source-impl.h) is at the end.
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
  const krun__lister *L;
  /* Another source's suites a manifest may name instead of tests (for
   * the errors): its key, or NULL. */
  const krun_sopt *suites;
  int suites_kind;
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

/* A key of another source that a manifest may name (a config key of
 * that source): its suites, listed after the commands, or a switch for
 * those suites alone. */
#define OTHER_MAX 16
typedef struct other {
  const krun_sopt *o;
  int kind;
  yaml_node_t *v;
} other;

/* One path of another source's suites, relative to the manifest's
 * folder. -3: that source could not list it (an infrastructure error). */
static int other_path(mf *m, const other *x, yaml_node_t *n) {
  const char *p = scalar(n), *key = x->o->name;
  if (!p || !*p)
    return fail(m, n, "'%s' must be a path (%s) or a sequence of paths", key, x->o->what);
  char *path = p[0] == '/' ? kh_strdup(p)
                           : kh_asprintf("%s/%s", m->reg->sources[m->source].dir, p);
  kh_err e;
  int rc = 0;
  if (access(path, F_OK) != 0) {
    rc = fail(m, n, "'%s': '%s' (from the manifest's folder: %s): %s", key, p, path,
              strerror(errno));
  } else if ((rc = m->L->list(m->L, x->kind, path, &e)) != 0) {
    int usage = rc == -2;
    fail(m, n, "%s", e.msg);
    rc = usage ? -1 : -3;
  }
  free(path);
  return rc;
}

static int other_paths(mf *m, const other *x) {
  yaml_node_t *v = x->v;
  if (v->type != YAML_SEQUENCE_NODE) return other_path(m, x, v);
  if (v->data.sequence.items.top == v->data.sequence.items.start)
    return fail(m, v, "'%s' must name at least one path", x->o->name);
  for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++) {
    int rc = other_path(m, x, node(m, *i));
    if (rc != 0) return rc;
  }
  return 0;
}

/* A switch of another source ("zygote: false") onto the sources of its
 * kind that this manifest listed (first..), as "NAME=VALUE". */
static void other_switch(mf *m, const other *x, int first) {
  for (int k = first; k < m->reg->nsources; k++) {
    krun_source *src = &m->reg->sources[k];
    if (src->kind != x->kind) continue;
    src->set = kh_xrealloc(src->set, (size_t)(src->nset + 1) * sizeof *src->set);
    src->set[src->nset++] = kh_asprintf("%s=%s", x->o->name, scalar(x->v));
  }
}

/* The keys a manifest knows, for the error; the first other source's
 * suites it may name instead of tests. */
static void known_keys(mf *m, kh_buf *b) {
  kh_buf_addf(b, "suite, tags, skip_code, tests");
  const krun_sopt *o;
  int kind;
  for (int i = 0; (o = m->L->option_at(i, &kind)); i++) {
    if (!o->config || m->L->option(o->name, &kind) != o) continue;
    kh_buf_addf(b, ", %s", o->name);
    if (o->lists && !m->suites) m->suites = o, m->suites_kind = kind;
  }
}

static int root(mf *m, yaml_node_t *r) {
  if (!r || r->type != YAML_MAPPING_NODE)
    return r ? fail(m, r, "a manifest must be a mapping with 'tests'%s%s%s",
                    m->suites ? " or '" : "", m->suites ? m->suites->name : "",
                    m->suites ? "'" : "")
             : kh_errf(m->err, "%s: the manifest is empty", m->path);
  yaml_node_t *list = NULL;
  other others[OTHER_MAX];
  int nothers = 0, nsuites = 0;
  for (yaml_node_pair_t *p = r->data.mapping.pairs.start; p < r->data.mapping.pairs.top; p++) {
    yaml_node_t *k = node(m, p->key), *v = node(m, p->value);
    const char *key = scalar(k) ? scalar(k) : "";
    long long code;
    int kind;
    const krun_sopt *o;
    if (strcmp(key, "tests") == 0) list = v;
    else if (strcmp(key, "suite") == 0) {
      if (!scalar(v) || !name_word(v) || memchr(scalar(v), '/', v->data.scalar.length))
        return fail(m, v, "'suite' must be a word without '/'");
      free(m->own_suite);
      m->suite = m->own_suite = escaped(v);
    } else if (strcmp(key, "skip_code") == 0) {
      if (number(m, v, "skip_code", 1, 255, &code) != 0) return -1;
      *(int *)m->reg->sources[m->source].data = (int)code;
    } else if (strcmp(key, "tags") == 0) {
      if (tags(m, v, &m->tags) != 0) return -1;
    } else if ((o = m->L->option(key, &kind)) && nothers < OTHER_MAX &&
               (o->type == KRUN_SOPT_BOOL || o->lists)) {
      const char *b = scalar(v) ? scalar(v) : "";
      if (o->type == KRUN_SOPT_BOOL && strcmp(b, "true") != 0 && strcmp(b, "false") != 0)
        return fail(m, v, "'%s' must be true or false", key);
      others[nothers++] = (other){o, kind, v};
      nsuites += o->lists;
    } else {
      kh_buf known = {0};
      known_keys(m, &known);
      fail(m, k, "unknown key '%s' (known: %s)", key, known.data);
      kh_buf_free(&known);
      return -1;
    }
  }
  if ((list || !nsuites) &&
      (!list || list->type != YAML_SEQUENCE_NODE ||
       list->data.sequence.items.top == list->data.sequence.items.start))
  {
    char alt[160] = "";
    if (!list && m->suites)
      snprintf(alt, sizeof alt, " (or '%s' name %s suites)", m->suites->name,
               m->L->kind_name(m->suites_kind));
    return fail(m, list ? list : r, "'tests' must be a non-empty sequence of tests%s", alt);
  }
  for (yaml_node_item_t *i = list ? list->data.sequence.items.start : NULL;
       list && i < list->data.sequence.items.top; i++)
    if (one_test(m, node(m, *i)) != 0) return -1;
  /* The other sources' suites, after the commands (a new source may move
   * the registry's sources), then their switches. */
  int first = m->reg->nsources;
  for (int i = 0; i < nothers; i++) {
    int rc = others[i].o->lists ? other_paths(m, &others[i]) : 0;
    if (rc != 0) return rc;
  }
  for (int i = 0; i < nothers; i++)
    if (!others[i].o->lists) other_switch(m, &others[i], first);
  return 0;
}

/* The commands of a YAML manifest, and the other sources' suites it
 * names; errors name file:line:column. -2 a usage error, -3 a suite
 * that could not be listed (an infrastructure error). */
static int command_list(const krun__lister *L, const char *path, kh_err *err) {
  krun_registry *reg = L->reg;
  FILE *f = fopen(path, "rb");
  if (!f) return kh_errf(err, "--manifest %s: %s", path, strerror(errno)), -2;
  mf m = {.path = path, .err = err, .reg = reg, .L = L};
  kh_buf known = {0};
  known_keys(&m, &known);
  kh_buf_free(&known);
  m.source = krun__registry_source(reg, L->kind, path);
  krun_source *src = &reg->sources[m.source];
  src->data = kh_xmalloc(sizeof(int));
  *(int *)src->data = 77;   /* the skip code */
  src->data_free = free;
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
  return rc == 0 ? 0 : rc == -3 ? -3 : -2;
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

static void feed(krun__child *c, kp_record_out *rec) {
  rec->buf[rec->len] = '\0';
  c->emit(c, 0, rec->buf);
}

/* It prints no records: what it left is its exit status. */
static void command_finish(krun__child *c) {
  if (c->exec_errno || c->st[0].started) return;
  int skip_code = *(const int *)c->src->data;
  kp_record_out *rec = kh_xmalloc(sizeof *rec);
  kp_begin(rec, "test");
  kp_add_str(rec, "id", c->defs[0]->id);
  kp_add_int(rec, "pid", c->pid);
  feed(c, rec);
  /* A signal, the deadline, kiln stopping: decide.c says so. */
  if (WIFEXITED(c->wstatus) && !c->timed_out && !c->interrupted) {
    int code = WEXITSTATUS(c->wstatus);
    char *said = last_line(c->log);
    char *msg = code == 0 ? kh_strdup("")
                : code == skip_code
                    ? (*said ? kh_strdup(said) : kh_asprintf("skipped (exit status %d)", code))
                    : kh_asprintf("exited with status %d%s%s", code, *said ? ": " : "", said);
    kp_result r = {code == 0 ? "pass" : code == skip_code ? "skip" : "fail", msg, "", 0};
    kp_encode(rec, &kp_rec_result, &r);
    feed(c, rec);
    kp_encode(rec, &kp_rec_end, &(kp_end){0});
    feed(c, rec);
    free(msg), free(said);
  }
  free(rec);
}

/* ---- The source ------------------------------------------------------------------------ */

/* Its argv as the manifest gave it. */
static void command_argv(krun__child *c, char **argv, int *n) {
  for (char **a = c->defs[0]->argv; *a; a++) argv[(*n)++] = kh_strdup(*a);
}

static const char *program(const krun__child *c) { return c->defs[0]->argv[0]; }

/* --manifest FILE, repeatable. */
static const krun_sopt opts[] = {
    {.name = "manifest", .arg = "FILE", .type = KRUN_SOPT_PATHS, .lists = 1,
     .help = "a YAML manifest of tests that are commands (pass: exit 0, skip: exit 77; "
             "repeatable)"},
    {NULL},
};

const krun__source_i krun__command_source = {
    .name = "command",
    .alone = "command",
    .opts = opts,
    .list = command_list,
    .argv = command_argv,
    .program = program,
    .finish = command_finish,
};
