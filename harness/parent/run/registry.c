/* The registry of a run: every test of every source (kiln runners,
 * GoogleTest binaries, manifests, ...; run.h), one list for selection, shards,
 * the queue and the report. The sources (source-impl.h) add their tests
 * here; this file applies a config's test rules (tags, slots, timeouts for
 * tests that cannot say so themselves), and checks that ids are unique
 * across sources.
 */
#include "run-impl.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

int krun__registry_source(krun_registry *reg, int kind, const char *path) {
  reg->sources = kh_xrealloc(reg->sources, (size_t)(reg->nsources + 1) * sizeof *reg->sources);
  krun_source *src = &reg->sources[reg->nsources];
  memset(src, 0, sizeof *src);
  src->kind = kind;
  src->path = kh_strdup(path);
  return reg->nsources++;
}

krun_test *krun__registry_add(krun_registry *reg, int source, const krun_test *t) {
  reg->tests = kh_xrealloc(reg->tests, (size_t)(reg->n + 1) * sizeof *reg->tests);
  krun_test *x = &reg->tests[reg->n++];
  *x = *t;
  /* Kiln runners and manifests give escaped ids (select.h); any other
   * source's raw bytes are escaped here, so no console or report shows
   * them and no two names share an id. */
  if (ksel_id_valid(t->id)) {
    x->id = kh_strdup(t->id);
  } else {
    size_t n = ksel_id_escape(t->id, strlen(t->id), NULL, 0);
    x->id = kh_xmalloc(n + 1);
    ksel_id_escape(t->id, strlen(t->id), x->id, n + 1);
  }
  x->suite = kh_strdup(t->suite ? t->suite : "");
  x->name = kh_strdup(t->name ? t->name : "");
  x->tags = kh_strdup(t->tags ? t->tags : "");
  x->file = kh_strdup(t->file ? t->file : "");
  x->source = source;
  x->kind = reg->sources[source].kind;
  if (x->devices < 1) x->devices = 1;
  return x;
}

/* ---- Finishing ------------------------------------------------------------------------ */

/* Adds tag to t's comma-separated tags unless it has it. */
static void add_tag(krun_test *t, const char *tag, size_t len) {
  char one[128];
  snprintf(one, sizeof one, "%.*s", (int)(len < sizeof one - 1 ? len : sizeof one - 1), tag);
  if (!*one || ksel_has_tag(t->tags, one)) return;
  char *tags = kh_asprintf("%s%s%s", t->tags, *t->tags ? "," : "", one);
  free(t->tags);
  t->tags = tags;
}

/* A rule's glob matches as a selector does: the suite, or the id. */
static void apply_rules(krun_registry *reg, const krun_settings *s) {
  for (int i = 0; i < reg->n; i++) {
    krun_test *t = &reg->tests[i];
    for (int k = 0; k < s->nrules; k++) {
      const krun_rule *r = &s->rules[k];
      ksel_test view = {t->id, t->suite, t->tags};
      if (!ksel_matches(r->match, &view)) continue;
      for (const char *p = r->tags ? r->tags : ""; *p;) {
        size_t len = strcspn(p, ",");
        add_tag(t, p, len);
        p += len + (p[len] == ',');
      }
      if (r->slots) t->slots = r->slots;
      if (r->timeout_s > 0) t->timeout_s = r->timeout_s;
    }
  }
}

static int by_id(const void *a, const void *b) {
  return strcmp((*(const krun_test *const *)a)->id, (*(const krun_test *const *)b)->id);
}

/* Two tests of one id would share logs and report records: refused,
 * naming both sources. */
static int unique_ids(const krun_registry *reg, kh_err *err) {
  const krun_test **sorted = kh_xcalloc((size_t)reg->n + 1, sizeof *sorted);
  for (int i = 0; i < reg->n; i++) sorted[i] = &reg->tests[i];
  qsort(sorted, (size_t)reg->n, sizeof *sorted, by_id);
  int rc = 0;
  for (int i = 1; i < reg->n && rc == 0; i++)
    if (strcmp(sorted[i]->id, sorted[i - 1]->id) == 0)
      rc = kh_errf(err, "two tests have the id '%s' (from %s and %s): kiln cannot tell "
                   "them apart", sorted[i]->id, reg->sources[sorted[i - 1]->source].path,
                   reg->sources[sorted[i]->source].path);
  free(sorted);
  return rc;
}

int krun_registry_finish(krun_registry *reg, const krun_settings *s, kh_err *err) {
  apply_rules(reg, s);
  krun_registry_needs(reg, s);
  if (unique_ids(reg, err) != 0) return -1;
  free(reg->views);
  reg->views = kh_xcalloc((size_t)reg->n + 1, sizeof *reg->views);
  for (int i = 0; i < reg->n; i++)
    reg->views[i] = (ksel_test){reg->tests[i].id, reg->tests[i].suite, reg->tests[i].tags};
  return 0;
}

void krun_registry_needs(krun_registry *reg, const krun_settings *s) {
  for (int i = 0; i < reg->n; i++) {
    krun_test *t = &reg->tests[i];
    for (int k = 0; k < s->nres; k++) {
      const krun_resource *r = &s->res[k];
      if (fnmatch(r->match, t->id, 0) != 0 && fnmatch(r->match, t->suite, 0) != 0) continue;
      t->devices = r->gpus;
      if (r->slots > 0) t->slots = r->slots;
    }
  }
}

void krun_registry_free(krun_registry *reg) {
  for (int i = 0; i < reg->n; i++) {
    krun_test *t = &reg->tests[i];
    free(t->id), free(t->suite), free(t->name), free(t->tags), free(t->file);
    for (char **a = t->argv; a && *a; a++) free(*a);
    free(t->argv);
  }
  for (int i = 0; i < reg->nsources; i++) {
    krun_source *src = &reg->sources[i];
    if (src->data && src->data_free) src->data_free(src->data);
    for (int k = 0; k < src->nset; k++) free(src->set[k]);
    free(src->path), free(src->dir), free(src->set);
  }
  free(reg->tests), free(reg->views), free(reg->sources);
  memset(reg, 0, sizeof *reg);
}
