/* GoogleTest binaries under kiln (docs/third-party.md): each test in a
 * process of its own, as any test, and what GoogleTest itself writes
 * turned into the protocol's records, so that decide.c, the report, JUnit,
 * diff and merge treat them as kiln's own tests.
 *
 * Listing: --gtest_list_tests gives the names (and, with --gtest_output,
 * a JSON listing with each test's file and line). Running: the binary with
 * --gtest_filter naming the job's tests and --gtest_output=json:FILE. Its
 * console's `[ RUN      ] Suite.Name` lines become `test` records as they
 * come, so kiln knows which test is running (deadlines, crashes,
 * --isolation none), and each test's end line is kept. When the child is
 * done, GoogleTest's JSON gives each test's result, failures with file
 * and line, time and properties; a test the JSON lacks (the process died
 * after it ended) keeps what the console said, and a test that never
 * ended is left to decide.c: crash, timeout. As a worker (--isolation
 * worker: many tests of one binary in one process, the filter naming
 * them all) each test's result is taken from the console as its end line
 * comes, since GoogleTest writes its JSON only at exit; the JSON then adds
 * the properties of the tests it has. Between two tests kiln looks for
 * processes besides the binary (the one check a foreign binary allows;
 * docs/third-party.md). The source's table (source-impl.h) is at the end.
 */
#include "run-impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "records.h"

/* Console lines GoogleTest starts and ends a test with. */
#define RUN_MARK "[ RUN      ] "
static const struct {
  const char *mark;
  char status;              /* 'p', 'f', 's' */
} ends[] = {{"[       OK ] ", 'p'}, {"[  FAILED  ] ", 'f'}, {"[  SKIPPED ] ", 's'}};

/* Output kept per test run between its [ RUN ] and end lines: the skip
 * reason and, without JSON, the failure are read from it. */
#define CAPTURE_MAX 8192
/* A message taken into a record: the log has the rest. */
#define MESSAGE_MAX 4000
/* Processes a worker's check names, at most, per test and in all. */
#define CHECK_MAX 8
#define NOTED_MAX 64

typedef struct console_end {
  char status;              /* 0: no end line seen */
  double ms;                /* as the end line says, -1 unknown */
  char *text;               /* what it printed in between */
} console_end;

typedef struct gtest {
  kp_reader rd;             /* the console's lines */
  char *json;               /* GoogleTest's JSON output file */
  char *flags;              /* its flag file, for a long filter */
  int capturing;            /* the test run being printed, -1 none */
  kh_buf cap;
  console_end *end;         /* per test run of the job */
  kp_record_out rec;        /* a record being made */
  pid_t noted[NOTED_MAX];   /* a worker's: processes a check has named */
  int nnoted;
} gtest;

static gtest *gt_of(const krun__child *c) { return c->data; }

/* ---- GoogleTest's JSON (read with libyaml: JSON is YAML) ------------------------ */

typedef struct json {
  yaml_document_t doc;
  int loaded;
  char why[256];            /* when it is not */
} json;

/* GoogleTest's JSON of a big binary is some MiB; past this it is no
 * GoogleTest output (and the parent's loop would stall reading it). */
#define GTEST_JSON_MAX ((size_t)64 << 20)

/* Through the bounded loader (base/input.c): libyaml's own document loader
 * takes time that grows with the square of the nesting, and this runs in
 * the parent's loop while other tests' deadlines run. */
static int json_load(const char *path, json *J) {
  memset(J, 0, sizeof *J);
  char *buf = NULL;
  size_t len;
  kh_err err = {{0}};   /* J->why keeps its first 255 bytes */
  if (access(path, F_OK) != 0 && errno == ENOENT)
    return snprintf(J->why, sizeof J->why, "GoogleTest wrote no JSON output (the "
                    "process ended before the end of its run)"), -1;
  if (kh_read_input(path, GTEST_JSON_MAX, &buf, &len, &err) == 0 &&
      kh_yaml_load(buf, len, path, KH_YAML_MAX_DEPTH, &J->doc, &err) == 0) {
    J->loaded = yaml_document_get_root_node(&J->doc) != NULL;
    if (!J->loaded) {
      yaml_document_delete(&J->doc);
      snprintf(err.msg, sizeof err.msg, "%s: empty", path);
    }
  }
  free(buf);
  if (!J->loaded) snprintf(J->why, sizeof J->why, "%.255s", err.msg);
  return J->loaded ? 0 : -1;
}

static void json_free(json *J) {
  if (J->loaded) yaml_document_delete(&J->doc);
  J->loaded = 0;
}

static yaml_node_t *get(json *J, yaml_node_t *map, const char *key) {
  if (!map || map->type != YAML_MAPPING_NODE) return NULL;
  for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(&J->doc, p->key);
    if (k && k->type == YAML_SCALAR_NODE && strcmp((char *)k->data.scalar.value, key) == 0)
      return yaml_document_get_node(&J->doc, p->value);
  }
  return NULL;
}

static const char *text(yaml_node_t *n) {
  return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* Calls fn for each test case: testsuites[].testsuite[], with its suite. */
static void each_case(json *J, void (*fn)(json *, const char *, yaml_node_t *, void *),
                      void *arg) {
  yaml_node_t *suites = get(J, yaml_document_get_root_node(&J->doc), "testsuites");
  if (!suites || suites->type != YAML_SEQUENCE_NODE) return;
  for (yaml_node_item_t *i = suites->data.sequence.items.start;
       i < suites->data.sequence.items.top; i++) {
    yaml_node_t *s = yaml_document_get_node(&J->doc, *i);
    const char *name = text(get(J, s, "name"));
    yaml_node_t *cases = get(J, s, "testsuite");
    if (!name || !cases || cases->type != YAML_SEQUENCE_NODE) continue;
    for (yaml_node_item_t *c = cases->data.sequence.items.start;
         c < cases->data.sequence.items.top; c++)
      fn(J, name, yaml_document_get_node(&J->doc, *c), arg);
  }
}

/* ---- Listing ---------------------------------------------------------------------- */

/* GoogleTest's own rule: a suite or test whose name starts DISABLED_, or
 * has /DISABLED_ in it, runs only when asked for. */
static int disabled(const char *name) {
  return strncmp(name, "DISABLED_", 9) == 0 || strstr(name, "/DISABLED_") != NULL;
}

/* One line of --gtest_list_tests: "Suite." (a comment after two spaces
 * and '#' for typed and parameterised tests), then "  Name" per test. */
static void list_line(krun_registry *reg, int source, char *line, char *suite, size_t cap) {
  char *hash = strstr(line, "  #");
  if (hash) *hash = '\0';
  size_t len = strlen(line);
  while (len && (line[len - 1] == ' ' || line[len - 1] == '\r')) line[--len] = '\0';
  if (len == 0) return;
  if (line[0] != ' ') {
    /* Not a suite: a line a main() printed before the list. */
    if (line[len - 1] == '.') snprintf(suite, cap, "%.*s", (int)(len - 1), line);
    else suite[0] = '\0';
    return;
  }
  const char *name = line + strspn(line, " ");
  if (!*suite || !*name) return;
  char *id = kh_asprintf("%s.%s", suite, name);
  krun_test t = {.id = id, .suite = suite, .name = (char *)name,
                 .tags = disabled(suite) || disabled(name) ? "disabled" : "",
                 .slots = 1, .needs_gpu = 1};
  krun__registry_add(reg, source, &t);
  free(id);
}

typedef struct where {
  krun_registry *reg;
  int first, next;          /* the binary's tests; the next expected */
} where;

/* The JSON listing is in the order of the text one: each case is looked
 * for at the expected place first. */
static void list_case(json *J, const char *suite, yaml_node_t *c, void *arg) {
  where *w = arg;
  const char *name = text(get(J, c, "name")), *file = text(get(J, c, "file"));
  const char *line = text(get(J, c, "line"));
  if (!name || !file) return;
  char *id = kh_asprintf("%s.%s", suite, name);
  int hit = -1;
  if (w->next < w->reg->n && strcmp(w->reg->tests[w->next].id, id) == 0) hit = w->next;
  for (int i = w->first; hit < 0 && i < w->reg->n; i++)
    if (strcmp(w->reg->tests[i].id, id) == 0) hit = i;
  free(id);
  if (hit < 0) return;
  krun_test *t = &w->reg->tests[hit];
  free(t->file);
  t->file = kh_strdup(file);
  t->line = line ? atoi(line) : 0;
  w->next = hit + 1;
}

/* A GoogleTest binary's tests (--gtest_list_tests): id SUITE.NAME as
 * GoogleTest spells it, suite the GoogleTest suite; tests named DISABLED_
 * get the tag `disabled`. */
static int gtest_list(const krun__lister *L, const char *binary, kh_err *err) {
  krun_registry *reg = L->reg;
  /* A bare name is a file here, not a command on the PATH. */
  char *path = strchr(binary, '/') ? kh_strdup(binary) : kh_asprintf("./%s", binary);
  if (access(path, X_OK) != 0) {
    kh_errf(err, "--gtest %s: %s", binary, strerror(errno));
    free(path);
    return -1;
  }
  const char *tmp = getenv("TMPDIR");
  char *listing = kh_asprintf("%s/kiln-gtest-list-XXXXXX.json", tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemps(listing, 5);
  if (fd >= 0) close(fd);
  char *flag = kh_asprintf("--gtest_output=json:%s", listing);
  char *argv[] = {path, "--gtest_list_tests", flag, NULL};
  char *out = NULL, *errs = NULL;
  int st = krun_capture(argv, 64u << 20, 120, &out, NULL, &errs);
  int source = krun__registry_source(reg, L->kind, path), first = reg->n, rc = 0;
  if (st != 0) {
    size_t n = errs ? strlen(errs) : 0;
    while (n && errs[n - 1] == '\n') errs[--n] = '\0';
    const char *said = errs ? (strrchr(errs, '\n') ? strrchr(errs, '\n') + 1 : errs) : "";
    rc = kh_errf(err, "%s --gtest_list_tests %s%s%s", path,
                 st < 0 ? "could not run" : "failed", *said ? ": " : "", said);
  } else {
    char suite[1024] = "", *save = NULL;
    for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
      list_line(reg, source, line, suite, sizeof suite);
    if (reg->n == first)
      rc = kh_errf(err, "%s --gtest_list_tests listed no test: is it a GoogleTest binary?",
                   path);
  }
  json J;
  if (rc == 0 && fd >= 0 && json_load(listing, &J) == 0) {
    where w = {reg, first, first};
    each_case(&J, list_case, &w);
    json_free(&J);
  }
  if (fd >= 0) unlink(listing);
  free(listing), free(flag), free(out), free(errs), free(path);
  return rc;
}

/* ---- Starting a child ---------------------------------------------------------------- */

/* A filter longer than this goes in a flag file: one argument may not
 * pass 128 KiB (MAX_ARG_STRLEN), and --isolation none over a large
 * binary names thousands of tests. */
#define FILTER_ARG_MAX 65536

static void gtest_argv(krun__child *c, char **argv, int *n) {
  gtest *gt = kh_xcalloc(1, sizeof *gt);
  kp_reader_init(&gt->rd);
  gt->capturing = -1;
  gt->end = kh_xcalloc((size_t)c->ntests, sizeof *gt->end);
  gt->json = kh_asprintf("%s.gtest.json", c->tmpdir);
  c->data = gt;
  argv[(*n)++] = kh_strdup(c->src->path);
  /* Each name once: --isolation none repeats with --gtest_repeat. */
  kh_buf filter = {0};
  int any_disabled = 0;
  for (int i = 0; i < c->ntests; i++) {
    int seen = 0;
    for (int k = 0; k < i && !seen; k++) seen = strcmp(c->defs[k]->id, c->defs[i]->id) == 0;
    if (!seen) kh_buf_addf(&filter, "%s%s", filter.len ? ":" : "", c->defs[i]->id);
    any_disabled |= ksel_has_tag(c->defs[i]->tags, "disabled");
  }
  char *flag = kh_asprintf("--gtest_filter=%s", filter.data);
  kh_buf_free(&filter);
  gt->flags = kh_asprintf("%s.gtest.flags", c->tmpdir);
  if (strlen(flag) > FILTER_ARG_MAX && kh_write_atomic(gt->flags, flag, strlen(flag)) == 0) {
    free(flag);
    flag = kh_asprintf("--gtest_flagfile=%s", gt->flags);
  }
  argv[(*n)++] = flag;
  argv[(*n)++] = kh_asprintf("--gtest_output=json:%s", gt->json);
  argv[(*n)++] = kh_strdup("--gtest_color=no");
  if (any_disabled) argv[(*n)++] = kh_strdup("--gtest_also_run_disabled_tests");
  /* A worker's sequence names each test once (worker.c). */
  if (c->ntests > 1 && !c->worker && c->run->s->repeat > 1)
    argv[(*n)++] = kh_asprintf("--gtest_repeat=%d", c->run->s->repeat);
}

static void gtest_free(krun__child *c) {
  gtest *gt = c->data;
  if (!gt) return;
  for (int i = 0; i < c->ntests; i++) free(gt->end[i].text);
  free(gt->end), free(gt->json), free(gt->flags);
  kh_buf_free(&gt->cap);
  free(gt);
  c->data = NULL;
}

/* ---- The console ------------------------------------------------------------------ */

/* The record's text, for emit. */
static const char *line_of(kp_record_out *rec) {
  rec->buf[rec->len] = '\0';
  return rec->buf;
}

/* "NAME (12 ms)" or "NAME, where GetParam() = 4 (0 ms)" after an end mark:
 * 1 when it is test id's, with *ms from it (-1 when not said). */
static int ends_test(const char *rest, const char *id, double *ms) {
  size_t n = strlen(id);
  if (strncmp(rest, id, n) != 0 || (rest[n] && rest[n] != ' ' && rest[n] != ','))
    return 0;
  const char *paren = strrchr(rest + n, '(');
  *ms = paren ? strtod(paren + 1, NULL) : -1;
  return 1;
}

static void worker_ended(krun__child *c, int i);

static void console_line(krun__child *c, const char *line) {
  gtest *gt = c->data;
  if (strncmp(line, RUN_MARK, strlen(RUN_MARK)) == 0) {
    /* The next run of that test that has not started, after the current
     * one first (--isolation none repeats in order), else any (a filter
     * runs in the binary's order, not the filter's): anything else is no
     * test of this job. The core routes the record the same way. */
    const char *name = line + strlen(RUN_MARK);
    gt->capturing = -1;
    for (int k = 1; k <= c->ntests && gt->capturing < 0; k++) {
      int i = (c->cur + k) % c->ntests;
      if (!c->st[i].started && strcmp(c->defs[i]->id, name) == 0) gt->capturing = i;
    }
    if (gt->capturing < 0) return;
    kp_begin(&gt->rec, "test");
    kp_add_str(&gt->rec, "id", name);
    kp_add_int(&gt->rec, "pid", c->pid);
    c->emit(c, -1, line_of(&gt->rec));
    gt->cap.len = 0;
    return;
  }
  if (gt->capturing < 0) return;
  console_end *e = &gt->end[gt->capturing];
  for (size_t k = 0; k < sizeof ends / sizeof ends[0]; k++)
    if (strncmp(line, ends[k].mark, strlen(ends[k].mark)) == 0 &&
        ends_test(line + strlen(ends[k].mark), c->defs[gt->capturing]->id, &e->ms)) {
      e->status = ends[k].status;
      e->text = kh_strndup(gt->cap.data ? gt->cap.data : "", gt->cap.len);
      int i = gt->capturing;
      gt->capturing = -1;
      if (c->worker) worker_ended(c, i);
      return;
    }
  if (gt->cap.len < CAPTURE_MAX) kh_buf_addf(&gt->cap, "%s\n", line);
}

static void gtest_output(krun__child *c, const char *data, size_t n) {
  gtest *gt = c->data;
  if (!gt) return;
  for (size_t off = 0; off < n;) {
    off += kp_reader_feed(&gt->rd, data + off, n - off);
    while (kp_reader_next(&gt->rd, c->line) > 0) console_line(c, c->line);
  }
}

/* ---- Results ------------------------------------------------------------------------ */

/* Splits GoogleTest's "FILE:LINE" (the first line of a failure, or of a
 * skip: "FILE:LINE: Skipped") off msg. */
static const char *location(const char *msg, char *file, size_t cap, long long *line) {
  const char *nl = strchr(msg, '\n');
  size_t len = nl ? (size_t)(nl - msg) : strlen(msg);
  char first[1024];
  snprintf(first, sizeof first, "%.*s", (int)(len < sizeof first - 1 ? len : sizeof first - 1), msg);
  file[0] = '\0';
  *line = 0;
  char *colon = strrchr(first, ':');
  if (colon && colon[1] == ' ') {          /* "FILE:LINE: Skipped" */
    *colon = '\0';
    colon = strrchr(first, ':');
  }
  if (colon && colon[1] >= '0' && colon[1] <= '9') {
    *line = strtoll(colon + 1, NULL, 10);
    *colon = '\0';
    snprintf(file, cap, "%s", first);
  } else if (strcmp(first, "unknown file") != 0) {
    return msg;                            /* no location line */
  }
  return nl ? nl + 1 : msg + len;
}

/* Sends one record into test run i. */
static void feed(krun__child *c, int i) { c->emit(c, i, line_of(&gt_of(c)->rec)); }

static void end_record(krun__child *c, int i) {
  kp_encode(&gt_of(c)->rec, &kp_rec_end, &(kp_end){0});
  feed(c, i);
}

/* Test run i's result record, and its end record unless held (a worker's
 * test ends when the JSON has added what it holds). */
static void verdict(krun__child *c, int i, const char *status, const char *msg,
                    const char *file, long long line, int hold) {
  kp_result r = {status, msg, file, line};
  char cut[MESSAGE_MAX + 64];
  if (strlen(msg) > MESSAGE_MAX) {
    snprintf(cut, sizeof cut, "%.*s... (cut; the log has it all)", MESSAGE_MAX, msg);
    r.message = cut;
  }
  kp_encode(&gt_of(c)->rec, &kp_rec_result, &r);
  feed(c, i);
  if (!hold) end_record(c, i);
}

static void result(krun__child *c, int i, const char *status, const char *msg,
                   const char *file, long long line) {
  verdict(c, i, status, msg, file, line, 0);
}

static void note(krun__child *c, int i, const char *key, const char *value) {
  kp_encode(&gt_of(c)->rec, &kp_rec_note, &(kp_note){key, value});
  feed(c, i);
}

/* The skip reason GoogleTest printed ("FILE:LINE: Skipped", the reason). */
static void skipped(krun__child *c, int i, int hold) {
  const char *cap = gt_of(c)->end[i].text;
  if (!cap) cap = "";
  const char *at = strstr(cap, ": Skipped\n");
  while (at && at > cap && at[-1] != '\n') at--;
  char file[1024] = "";
  long long line = 0;
  char *why = kh_strdup(at ? location(at, file, sizeof file, &line) : "");
  size_t n = strlen(why);
  while (n && why[n - 1] == '\n') why[--n] = '\0';
  verdict(c, i, "skip", *why ? why : "skipped (GTEST_SKIP)", file, line, hold);
  free(why);
}

static double seconds(const char *t) { return t ? strtod(t, NULL) : -1; }

/* Keys of a JSON test case that are GoogleTest's own; the rest are its
 * properties (RecordProperty), kept as notes. */
static int own_key(const char *k) {
  static const char *const keys[] = {"name", "file", "line", "status", "result",
                                     "timestamp", "time", "classname", "failures", NULL};
  for (int i = 0; keys[i]; i++)
    if (strcmp(k, keys[i]) == 0) return 1;
  return 0;
}

static void body(krun__child *c, int i, double ms) {
  if (ms < 0) return;
  kp_encode(&gt_of(c)->rec, &kp_rec_phase, &(kp_phase){"body", ms});
  feed(c, i);
}

/* The JSON case's properties (RecordProperty) as notes of test run i. */
static void properties(krun__child *c, int i, json *J, yaml_node_t *tc) {
  for (yaml_node_pair_t *p = tc->data.mapping.pairs.start; p < tc->data.mapping.pairs.top; p++) {
    const char *k = text(yaml_document_get_node(&J->doc, p->key));
    const char *v = text(yaml_document_get_node(&J->doc, p->value));
    if (k && v && !own_key(k)) note(c, i, k, v);
  }
}

/* Test run i from its JSON case tc; returns its time in ms (-1 unknown). */
static double from_json(krun__child *c, int i, json *J, yaml_node_t *tc) {
  double ms = seconds(text(get(J, tc, "time"))) * 1e3;
  body(c, i, ms);
  properties(c, i, J, tc);
  const char *status = text(get(J, tc, "status")), *res = text(get(J, tc, "result"));
  yaml_node_t *fails = get(J, tc, "failures");
  int nfail = fails && fails->type == YAML_SEQUENCE_NODE
                  ? (int)(fails->data.sequence.items.top - fails->data.sequence.items.start) : 0;
  if (nfail > 0) {
    yaml_node_t *f = yaml_document_get_node(&J->doc, *fails->data.sequence.items.start);
    const char *msg = text(get(J, f, "failure"));
    char file[1024];
    long long line;
    const char *body = location(msg ? msg : "", file, sizeof file, &line);
    char *all = nfail > 1 ? kh_asprintf("%s\n(and %d more failure%s; see the log)", body,
                                        nfail - 1, nfail > 2 ? "s" : "")
                          : kh_strdup(body);
    result(c, i, "fail", all, file, line);
    free(all);
  } else if (res && strcmp(res, "SKIPPED") == 0) {
    skipped(c, i, 0);
  } else if (status && strcmp(status, "RUN") == 0) {
    result(c, i, "pass", "", "", 0);
  } else {
    char *msg = kh_asprintf("GoogleTest did not run it (status %s, result %s)",
                            status ? status : "?", res ? res : "?");
    result(c, i, "error", msg, "", 0);
    free(msg);
  }
  return ms;
}

/* Test run i from the console alone (no JSON case for it, or a worker's
 * test as it ends: hold its end record). */
static double from_console(krun__child *c, int i, const char *why, int hold) {
  console_end *e = &gt_of(c)->end[i];
  if (why) note(c, i, "gtest_json", why);
  if (e->status == 'p') verdict(c, i, "pass", "", "", 0, hold);
  else if (e->status == 's') skipped(c, i, hold);
  else {
    const char *at = strstr(e->text ? e->text : "", ": Failure\n");
    while (at && at > e->text && at[-1] != '\n') at--;
    char file[1024] = "";
    long long line = 0;
    const char *msg = at ? location(at, file, sizeof file, &line) : "failed (see the log)";
    verdict(c, i, "fail", msg, file, line, hold);
  }
  return e->ms;
}

/* ---- A worker --------------------------------------------------------------------- */

/* pid's command line, cut short (malloc'd). */
static char *command_line(pid_t pid) {
  char path[64], *cmd = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
  if (kh_read_file(path, 1 << 16, &cmd, &len) != 0) return kh_strdup("?");
  for (size_t k = 0; k + 1 < len; k++)
    if (cmd[k] == '\0') cmd[k] = ' ';
  if (len > 80) memcpy(cmd + 77, "...", 4);
  return cmd;
}

/* The check after a worker's test run i: the processes the worker has
 * besides the binary, each named once, at the first end it is seen at.
 * Only seen, not charged: the binary goes on to its next test while kiln
 * reads, so one the next test started at once may be among them, and the
 * worker goes on (killing it would skip the binary's own teardown, which
 * may be what ends them). What is still there when the worker ends is the
 * worker's, found and killed as any worker's leftovers. */
static void check(krun__child *c, int i) {
  gtest *gt = c->data;
  /* Under --wrap the binary may be a child of the wrapper: kiln could not
   * tell it from what it started. */
  const char *wrap = c->run->s->wrap;
  pid_t pids[CHECK_MAX];
  int n = c->others && !(wrap && *wrap) ? c->others(c, pids, CHECK_MAX) : -1;
  kh_buf b = {0};
  for (int k = 0; k < n; k++) {
    int seen = 0;
    for (int m = 0; m < gt->nnoted && !seen; m++) seen = gt->noted[m] == pids[k];
    if (seen) continue;
    if (gt->nnoted < NOTED_MAX) gt->noted[gt->nnoted++] = pids[k];
    char *cmd = command_line(pids[k]);
    kh_buf_addf(&b, "%spid %ld `%s`", b.len ? ", " : "", (long)pids[k], cmd);
    free(cmd);
  }
  if (b.len) {
    char *why = kh_asprintf("processes besides the GoogleTest binary alive when kiln read "
                            "this test's end: %s", b.data);
    note(c, i, "worker_check", why);
    free(why);
  }
  kh_buf_free(&b);
}

/* A worker's test run i as its end line comes: its time and result from
 * the console (its end record waits for the JSON's properties), then the
 * check. */
static void worker_ended(krun__child *c, int i) {
  body(c, i, gt_of(c)->end[i].ms);
  from_console(c, i, NULL, 1);
  check(c, i);
}

typedef struct lookup {
  const char *id;
  yaml_node_t *hit;
} lookup;

static void find_case(json *J, const char *suite, yaml_node_t *c, void *arg) {
  lookup *l = arg;
  const char *name = text(get(J, c, "name"));
  size_t n = strlen(suite);
  if (name && strncmp(l->id, suite, n) == 0 && l->id[n] == '.' && strcmp(l->id + n + 1, name) == 0)
    l->hit = c;
}

/* Is run i the last run of its test that started (the one GoogleTest's
 * JSON describes when --gtest_repeat ran it more than once)? */
static int last_run(const krun__child *c, int i) {
  for (int k = i + 1; k < c->ntests; k++)
    if (c->st[k].started && strcmp(c->defs[k]->id, c->defs[i]->id) == 0) return 0;
  return 1;
}

static void gtest_finish(krun__child *c) {
  gtest *gt = c->data;
  if (!gt) return;
  if (kp_reader_tail(&gt->rd, c->line) > 0) console_line(c, c->line);
  json J;
  int have = json_load(gt->json, &J) == 0;
  for (int i = 0; i < c->ntests; i++) {
    if (!c->st[i].started || c->st[i].ended) continue;
    /* The test that was running when time ran out is decided as such;
     * one when kiln stopped, too, unless its result came (the JSON, the
     * console's end line): that stands. */
    if (i == c->cur && c->timed_out) continue;
    lookup l = {c->defs[i]->id, NULL};
    if (have && last_run(c, i)) each_case(&J, find_case, &l);
    if (i == c->cur && c->interrupted && !l.hit && !gt->end[i].status) continue;
    double ms = -1;
    if (c->worker && gt->end[i].status) {
      /* Its result came as it ended. */
      if (l.hit) properties(c, i, &J, l.hit);
      end_record(c, i);
      ms = gt->end[i].ms;
    } else if (l.hit) ms = from_json(c, i, &J, l.hit);
    else if (gt->end[i].status)
      ms = from_console(c, i, have ? NULL : J.why, 0);
    /* A shared process's test took what GoogleTest says it took. */
    c->took_ms[i] = ms;
  }
  json_free(&J);
  unlink(gt->json);
  unlink(gt->flags);
}

/* ---- The source ------------------------------------------------------------------------ */

static const char *program(const krun__child *c) { return c->src->path; }

/* What a GoogleTest binary must not take from kiln's environment: its
 * own sharding (kiln selects and shards), brief output and repeats (kiln
 * reads one [ RUN ] line per test run), a Bazel output file (kiln names
 * the JSON file). */
static const char *const unenv[] = {"GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS",
    "GTEST_SHARD_STATUS_FILE", "GTEST_BRIEF", "GTEST_REPEAT", "XML_OUTPUT_FILE", NULL};

/* --gtest PATH, repeatable. */
static const krun_sopt opts[] = {
    {.name = "gtest", .arg = "PATH", .type = KRUN_SOPT_PATHS, .lists = 1,
     .help = "a GoogleTest binary: each of its tests in its own process (many in one "
             "under --isolation worker), ids Suite.Name as GoogleTest spells them "
             "(repeatable)"},
    {NULL},
};

const krun__source_i krun__gtest_source = {
    .name = "gtest",
    .opts = opts,
    .workers = 1,
    .list = gtest_list,
    .argv = gtest_argv,
    .program = program,
    .unenv = unenv,
    .output = gtest_output,
    .finish = gtest_finish,
    .free = gtest_free,
};
