/* Configs: YAML run profiles (configs/NAME.yaml), loaded with kiln's
 * bounded loader (base/input.c: no aliases, limited nesting) so that every
 * error names file:line:column. A config's scalar keys are the run
 * settings (run/settings.c checks them) and the sources' own keys (their
 * tables declare them); its lists are selection, tolerances, devices,
 * test rules and resources. The
 * reader takes any bytes: it is a fuzz target (tests/fuzz/fuzz-config.c),
 * as is the CTest resource-spec reader (spec.c).
 */
#include "cli-impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "kiln-config.h"

/* ---- Run profiles ----------------------------------------------------------- */

typedef struct cfg {
  yaml_document_t *doc;
  const char *name;
  krun_settings *s;
  kh_err *err;
} cfg;

static const char *const node_kind[] = {"nothing", "a scalar", "a sequence",
                                        "a mapping"};

static int fail(cfg *c, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(cfg *c, const yaml_node_t *n, const char *fmt, ...) {
  char what[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return kh_errf(c->err, "%s:%zu:%zu: %s", c->name, n->start_mark.line + 1,
                  n->start_mark.column + 1, what);
}

static const char *scalar(const yaml_node_t *n) {
  return (const char *)n->data.scalar.value;
}

static int is_plain(const yaml_node_t *n) {
  return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* A scalar setting: plain scalars for numbers and booleans, so that
 * `jobs: "4"` is reported as the string it is. */
static int cfg_scalar(cfg *c, const char *name, const char *expect, int textual,
                      yaml_node_t *v) {
  if (v->type != YAML_SCALAR_NODE)
    return fail(c, v, "'%s' must be %s, not %s", name, expect, node_kind[v->type]);
  const char *t = scalar(v);
  if (!textual && !is_plain(v))
    return fail(c, v, "'%s' must be %s, not the quoted string \"%s\"", name, expect, t);
  if (!*t && is_plain(v)) return fail(c, v, "'%s' needs a value (%s)", name, expect);
  kh_err e;
  if (krun_setting_set(c->s, name, t, &e) != 0) return fail(c, v, "%s", e.msg);
  return 0;
}

static int cfg_selection(cfg *c, yaml_node_t *v) {
  if (v->type != YAML_SEQUENCE_NODE)
    return fail(c, v, "'selection' must be a sequence of selectors, "
                              "not %s", node_kind[v->type]);
  for (yaml_node_item_t *i = v->data.sequence.items.start;
       i < v->data.sequence.items.top; i++) {
    yaml_node_t *n = yaml_document_get_node(c->doc, *i);
    if (n->type != YAML_SCALAR_NODE || !*scalar(n))
      return fail(c, n, "a selector must be a non-empty string");
    krun_setting_add_selector(c->s, scalar(n));
  }
  return 0;
}

/* A source's own key (run.h's krun_sopt): a switch, or a
 * path or a sequence of paths, each relative to the config's folder as a
 * manifest's commands are to the manifest's; one that is not there is an
 * error here, before any test runs. */
static int cfg_sopt_path(cfg *c, int i, const krun_sopt *o, yaml_node_t *n) {
  if (n->type != YAML_SCALAR_NODE || !*scalar(n))
    return fail(c, n, "'%s' must be a path (%s) or a sequence of paths, not %s", o->name,
                o->what, n->type == YAML_SCALAR_NODE ? "an empty string" : node_kind[n->type]);
  const char *p = scalar(n), *slash = strrchr(c->name, '/');
  char *path = p[0] == '/' || !slash ? kh_strdup(p)
               : kh_asprintf("%.*s/%s", (int)(slash - c->name), c->name, p);
  int rc = 0;
  kh_err e;
  if (access(path, F_OK) != 0)
    rc = fail(c, n, "'%s': '%s' (from the config's folder: %s): %s", o->name, p, path,
              strerror(errno));
  else if (krun_setting_sopt(c->s, i, path, &e) != 0)
    rc = fail(c, n, "%s", e.msg);
  free(path);
  return rc;
}

static int cfg_sopt(cfg *c, int i, const krun_sopt *o, yaml_node_t *v) {
  if (o->type == KRUN_SOPT_BOOL) {
    if (v->type != YAML_SCALAR_NODE)
      return fail(c, v, "'%s' must be true or false, not %s", o->name, node_kind[v->type]);
    if (!is_plain(v))
      return fail(c, v, "'%s' must be true or false, not the quoted string \"%s\"", o->name,
                  scalar(v));
    kh_err e;
    if (krun_setting_sopt(c->s, i, scalar(v), &e) != 0) return fail(c, v, "%s", e.msg);
    return 0;
  }
  if (v->type != YAML_SEQUENCE_NODE) return cfg_sopt_path(c, i, o, v);
  if (v->data.sequence.items.top == v->data.sequence.items.start)
    return fail(c, v, "'%s' must name at least one path", o->name);
  for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
       it++)
    if (cfg_sopt_path(c, i, o, yaml_document_get_node(c->doc, *it)) != 0) return -1;
  return 0;
}

/* A number inside a tolerance or device entry. */
static int cfg_number(cfg *c, const char *what, yaml_node_t *v,
                          double lo, double hi, double *out) {
  if (v->type != YAML_SCALAR_NODE || !is_plain(v) ||
      kh_parse_double(scalar(v), lo, hi, out) != 0)
    return fail(c, v, "'%s' must be a number from %g to %g, not %s%s%s",
                        what, lo, hi,
                        v->type == YAML_SCALAR_NODE ? "'" : node_kind[v->type],
                        v->type == YAML_SCALAR_NODE ? scalar(v) : "",
                        v->type == YAML_SCALAR_NODE ? "'" : "");
  return 0;
}

typedef int (*entry_key)(cfg *c, const char *key, yaml_node_t *v,
                             void *acc);

/* Walks a sequence of mappings, giving each key to fn; `keys` names the
 * accepted ones for the error. */
static int cfg_entries(cfg *c, yaml_node_t *v, const char *what,
                           const char *keys, entry_key fn, void *acc,
                           size_t acc_size,
                           int (*done)(cfg *, yaml_node_t *, void *)) {
  if (v->type != YAML_SEQUENCE_NODE)
    return fail(c, v, "'%s' must be a sequence of mappings with %s, "
                              "not %s", what, keys, node_kind[v->type]);
  for (yaml_node_item_t *i = v->data.sequence.items.start;
       i < v->data.sequence.items.top; i++) {
    yaml_node_t *m = yaml_document_get_node(c->doc, *i);
    if (m->type != YAML_MAPPING_NODE)
      return fail(c, m, "an entry of '%s' must be a mapping with %s",
                          what, keys);
    memset(acc, 0, acc_size);
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start;
         p < m->data.mapping.pairs.top; p++) {
      yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
      yaml_node_t *val = yaml_document_get_node(c->doc, p->value);
      if (k->type != YAML_SCALAR_NODE)
        return fail(c, k, "keys of '%s' must be strings", what);
      int r = fn(c, scalar(k), val, acc);
      if (r == -2)
        return fail(c, k, "unknown key '%s' in '%s' (known: %s)",
                            scalar(k), what, keys);
      if (r != 0) return -1;
    }
    if (done(c, m, acc) != 0) return -1;
  }
  return 0;
}

typedef struct tol_acc {
  const char *match;
  double atol, rtol, max_over;
  int has_atol, has_rtol, has_max_over;
} tol_acc;

static int tol_key(cfg *c, const char *key, yaml_node_t *v, void *p) {
  tol_acc *a = p;
  if (strcmp(key, "match") == 0) {
    if (v->type != YAML_SCALAR_NODE || !*scalar(v))
      return fail(c, v, "'match' must be a non-empty glob");
    a->match = scalar(v);
    return 0;
  }
  if (strcmp(key, "atol") == 0)
    return a->has_atol = 1, cfg_number(c, "atol", v, 0, 1e30, &a->atol);
  if (strcmp(key, "rtol") == 0)
    return a->has_rtol = 1, cfg_number(c, "rtol", v, 0, 1e30, &a->rtol);
  if (strcmp(key, "max_over") == 0) {
    a->has_max_over = 1;
    if (cfg_number(c, "max_over", v, 0, 1e12, &a->max_over) != 0) return -1;
    return a->max_over == (long long)a->max_over
               ? 0 : fail(c, v, "'max_over' must be a whole count of elements");
  }
  return -2;
}

static int tol_done(cfg *c, yaml_node_t *m, void *p) {
  tol_acc *a = p;
  if (!a->match || !a->has_atol || !a->has_rtol)
    return fail(c, m, "a tolerance needs match, atol and rtol");
  char *spec = a->has_max_over ? kh_asprintf("%s=%.17g:%.17g:%lld", a->match, a->atol,
                                             a->rtol, (long long)a->max_over)
                               : kh_asprintf("%s=%.17g:%.17g", a->match, a->atol, a->rtol);
  kh_err e;
  int rc = krun_setting_add_tolerance(c->s, spec, &e);
  free(spec);
  return rc == 0 ? 0 : fail(c, m, "%s", e.msg);
}

typedef struct dev_acc {
  double id, slots;
  int has_id, has_slots;
} dev_acc;

static int dev_key(cfg *c, const char *key, yaml_node_t *v, void *p) {
  dev_acc *a = p;
  if (strcmp(key, "id") == 0)
    return a->has_id = 1,
           cfg_number(c, "id", v, 0, KRUN_MAX_DEVICES - 1, &a->id);
  if (strcmp(key, "slots") == 0)
    return a->has_slots = 1, cfg_number(c, "slots", v, 1, 1024, &a->slots);
  return -2;
}

static int dev_done(cfg *c, yaml_node_t *m, void *p) {
  dev_acc *a = p;
  if (!a->has_id || a->id != (int)a->id || a->slots != (int)a->slots)
    return fail(c, m, "a device needs an integer id (and integer "
                              "slots, optional)");
  if (krun_setting_add_device(c->s, (int)a->id, a->has_slots ? (int)a->slots : -1, NULL) != 0)
    return fail(c, m, "more than %d devices", KRUN_MAX_DEVICES);
  return 0;
}

/* A `tests:` entry: tags, slots, timeout for the tests match names. */
typedef struct rule_acc {
  krun_rule r;
  char tags[512];           /* (no allocation: an error may end the entry) */
  int has;                  /* tags, slots or timeout given */
} rule_acc;

static int rule_tag(cfg *c, yaml_node_t *n, rule_acc *a) {
  if (n->type != YAML_SCALAR_NODE || !*scalar(n) || strchr(scalar(n), ',') ||
      scalar(n)[0] == '-' || scalar(n)[0] == '@')
    return fail(c, n, "a tag must be a word (no comma, no leading '-' or '@')");
  size_t len = strlen(a->tags);
  if (len + strlen(scalar(n)) + 2 > sizeof a->tags)
    return fail(c, n, "the tags of one entry take more than %zu bytes", sizeof a->tags - 1);
  snprintf(a->tags + len, sizeof a->tags - len, "%s%s", len ? "," : "", scalar(n));
  return 0;
}

static int rule_key(cfg *c, const char *key, yaml_node_t *v, void *p) {
  rule_acc *a = p;
  double d;
  if (strcmp(key, "match") == 0) {
    if (v->type != YAML_SCALAR_NODE || !*scalar(v))
      return fail(c, v, "'match' must be a non-empty glob (or a suite)");
    a->r.match = (char *)scalar(v);
    return 0;
  }
  a->has = 1;
  if (strcmp(key, "tags") == 0) {
    if (v->type != YAML_SEQUENCE_NODE) return rule_tag(c, v, a);
    for (yaml_node_item_t *i = v->data.sequence.items.start; i < v->data.sequence.items.top; i++)
      if (rule_tag(c, yaml_document_get_node(c->doc, *i), a) != 0) return -1;
    return 0;
  }
  if (strcmp(key, "slots") == 0) {
    if (v->type == YAML_SCALAR_NODE && strcmp(scalar(v), "all") == 0) return a->r.slots = -1, 0;
    if (cfg_number(c, "slots", v, 1, 1024, &d) != 0) return -1;
    if (d != (int)d) return fail(c, v, "'slots' must be an integer, or all");
    return a->r.slots = (int)d, 0;
  }
  if (strcmp(key, "timeout") == 0) {
    if (cfg_number(c, "timeout", v, 1, 604800, &d) != 0) return -1;
    if (d != (int)d) return fail(c, v, "'timeout' must be whole seconds");
    return a->r.timeout_s = (int)d, 0;
  }
  return -2;
}

static int rule_done(cfg *c, yaml_node_t *m, void *p) {
  rule_acc *a = p;
  if (!a->r.match || !a->has)
    return fail(c, m, "a tests entry needs match and at least one of tags, slots, timeout");
  a->r.tags = a->tags[0] ? a->tags : NULL;
  krun_setting_add_rule(c->s, &a->r);
  return 0;
}

typedef struct res_acc {
  const char *match;
  double gpus, slots;
  int has_gpus;
} res_acc;

static int res_key(cfg *c, const char *key, yaml_node_t *v, void *p) {
  res_acc *a = p;
  if (strcmp(key, "match") == 0) {
    if (v->type != YAML_SCALAR_NODE || !*scalar(v))
      return fail(c, v, "'match' must be a non-empty glob");
    a->match = scalar(v);
    return 0;
  }
  if (strcmp(key, "gpus") == 0)
    return a->has_gpus = 1, cfg_number(c, "gpus", v, 1, KRUN_MAX_DEVICES, &a->gpus);
  if (strcmp(key, "slots") == 0) return cfg_number(c, "slots", v, 1, 1024, &a->slots);
  return -2;
}

static int res_done(cfg *c, yaml_node_t *m, void *p) {
  res_acc *a = p;
  if (!a->match || !a->has_gpus || a->gpus != (int)a->gpus || a->slots != (int)a->slots)
    return fail(c, m, "a resource needs match and an integer gpus (and integer slots, "
                      "optional)");
  kh_err e;
  if (krun_setting_add_resource(c->s, a->match, (int)a->gpus, (int)a->slots, &e) != 0)
    return fail(c, m, "%s", e.msg);
  return 0;
}

/* The keys a config knows, for the error: the settings', the sources'. */
static void known_keys(kh_buf *b) {
  kh_buf_addf(b, "jobs, backend, slots, devices, timeout, grace, retries, repeat, "
                 "isolation, leaks, poison, seed, cap, wrap, warm, allow_empty, contain, "
                 "sanitize");
  const krun_sopt *o;
  for (int i = 0; (o = krun_sopt_at(i, NULL)); i++)
    if (o->config) kh_buf_addf(b, ", %s", o->name);
  kh_buf_addf(b, ", selection, tolerances, tests, resources");
}

static int cfg_key(cfg *c, yaml_node_t *k, yaml_node_t *v) {
  const char *key = scalar(k);
  char expect[160];
  int textual = 0;
  if (krun_setting_expect(key, expect, sizeof expect, &textual))
    return cfg_scalar(c, key, expect, textual, v);
  if (strcmp(key, "selection") == 0) return cfg_selection(c, v);
  int si = krun_sopt_index(key);
  if (si >= 0 && krun_sopt_at(si, NULL)->config) return cfg_sopt(c, si, krun_sopt_at(si, NULL), v);
  tol_acc ta;
  dev_acc da;
  res_acc ra;
  if (strcmp(key, "resources") == 0)
    return cfg_entries(c, v, "resources", "match, gpus, slots", res_key, &ra, sizeof ra,
                       res_done);
  if (strcmp(key, "tolerances") == 0)
    return cfg_entries(c, v, "tolerances", "match, atol, rtol, max_over",
                           tol_key, &ta, sizeof ta, tol_done);
  if (strcmp(key, "devices") == 0)
    return cfg_entries(c, v, "devices", "id, slots", dev_key, &da,
                           sizeof da, dev_done);
  rule_acc rua;
  if (strcmp(key, "tests") == 0)
    return cfg_entries(c, v, "tests", "match, tags, slots, timeout", rule_key, &rua,
                       sizeof rua, rule_done);
  kh_buf known = {0};
  known_keys(&known);
  fail(c, k, "unknown key '%s' (known: %s)", key, known.data);
  kh_buf_free(&known);
  return -1;
}

static int cfg_root(cfg *c, yaml_node_t *root) {
  if (!root) return 0;                    /* an empty file is an empty config */
  if (root->type == YAML_SCALAR_NODE && !*scalar(root)) return 0;
  if (root->type != YAML_MAPPING_NODE)
    return fail(c, root, "a config must be a mapping of settings, "
                                 "not %s", node_kind[root->type]);
  for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
       p < root->data.mapping.pairs.top; p++) {
    yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
    yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
    if (k->type != YAML_SCALAR_NODE)
      return fail(c, k, "a key must be a string, not %s",
                          node_kind[k->type]);
    for (yaml_node_pair_t *q = root->data.mapping.pairs.start; q < p; q++)
      if (strcmp(scalar(yaml_document_get_node(c->doc, q->key)),
                 scalar(k)) == 0)
        return fail(c, k, "key '%s' appears twice", scalar(k));
    if (cfg_key(c, k, v) != 0) return -1;
  }
  return 0;
}

int kcli_config_parse(const char *buf, size_t len, const char *name, krun_settings *out,
                      kh_err *err) {
  yaml_document_t doc;
  if (kh_yaml_load(buf, len, name, KH_YAML_MAX_DEPTH, &doc, err) != 0) return -1;
  cfg c = {&doc, name, out, err};
  int rc = cfg_root(&c, yaml_document_get_root_node(&doc));
  yaml_document_delete(&doc);
  return rc;
}

static int readable(const char *p) { return access(p, R_OK) == 0; }

/* Where `--config NAME` looks: ./configs, then this kiln's own profiles:
 * the source tree's for a kiln run from its build tree, else the
 * installed ones (found from this kiln's folder first, as the runners
 * are). The places tried, NULL-terminated; free with free(). */
static char **profile_dirs(void) {
  char **dirs = kh_xcalloc(4, sizeof *dirs);
  int n = 0;
  dirs[n++] = kh_strdup("configs");
  if (kh_same_file(kh_self_dir(), KILN_BUILD_PARENT_DIR)) {
    dirs[n++] = kh_strdup(KILN_SOURCE_DIR "/configs");
  } else {
    if (*KILN_BIN_TO_DATA) dirs[n++] = kh_asprintf("%s/%s/configs", kh_self_dir(), KILN_BIN_TO_DATA);
    dirs[n++] = kh_strdup(KILN_DATADIR "/configs");
  }
  return dirs;
}

int kcli_config_load(const char *arg, krun_settings *out, char **path_out,
                   kh_err *err) {
  char *path = NULL;
  if (strchr(arg, '/') || readable(arg)) {
    path = kh_strdup(arg);
  } else {
    char **dirs = profile_dirs();
    kh_buf tried = {0};
    for (char **d = dirs; *d; d++) {
      char *p = kh_asprintf("%s/%s.yaml", *d, arg);
      if (!path && readable(p)) path = p;
      else kh_buf_addf(&tried, "%s%s", tried.len ? ", " : "", p), free(p);
      free(*d);
    }
    free(dirs);
    if (!path) {
      kh_errf(err, "--config: no file '%s' and no profile %s.yaml (tried %s)", arg, arg,
              tried.data);
      kh_buf_free(&tried);
      return -1;
    }
    kh_buf_free(&tried);
  }
  char *buf;
  size_t len;
  if (kh_read_input(path, 1 << 20, &buf, &len, err) != 0) {
    free(path);
    return -1;
  }
  int rc = kcli_config_parse(buf, len, path, out, err);
  free(buf);
  if (path_out && rc == 0) *path_out = path;
  else free(path);
  return rc;
}
