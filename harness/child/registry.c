/* The suites a runner holds. Each KT_SUITE (kiln/test.h) puts a pointer
 * to its suite in the kt_suites linker section, and the linker gathers
 * them in link order, so no list is kept by hand: linking a suite file is
 * registering it. This file walks that section: test ids, lookup by id,
 * the whole registry for selection and --list, and the checks that keep
 * ids unique.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child-impl.h"
#include "select.h"
#include "kiln-config.h"

/* The linker defines these around the section; a runner without suites
 * has no section and both read as NULL. */
extern const kt_suite *const __start_kt_suites[] __attribute__((weak));
extern const kt_suite *const __stop_kt_suites[] __attribute__((weak));

#define EACH_SUITE(s)                                                        \
  for (const kt_suite *const *s = __start_kt_suites; s && s < __stop_kt_suites; s++) \
    if (*s)

static void entry_of(const kt_suite *s, const kt_test *t, kt__entry *e) {
  e->suite = s;
  e->test = t;
  /* The id escapes what a console or a report cannot show (select.h), so
   * the parent gets it as it will print it and sends it back the same. */
  size_t n = ksel_id_escape(s->name, strlen(s->name), e->id, sizeof e->id);
  if (n + 1 < sizeof e->id) {
    e->id[n] = '/';
    ksel_id_escape(t->name, strlen(t->name), e->id + n + 1, sizeof e->id - n - 1);
  }
  snprintf(e->tags, sizeof e->tags, "%s%s%s", s->tags ? s->tags : "",
           s->tags && *s->tags && t->tags && *t->tags ? "," : "", t->tags ? t->tags : "");
}

kt__entry *kt__registry(size_t *n) {
  *n = 0;
  EACH_SUITE(s) *n += (*s)->ntests;
  kt__entry *all = calloc(*n + 1, sizeof *all);
  if (!all) abort();
  size_t k = 0;
  EACH_SUITE(s)
  for (size_t i = 0; i < (*s)->ntests; i++) entry_of(*s, &(*s)->tests[i], &all[k++]);
  return all;
}

int kt__find(const char *id, kt__entry *e) {
  EACH_SUITE(s) {
    for (size_t i = 0; i < (*s)->ntests; i++) {
      entry_of(*s, &(*s)->tests[i], e);
      if (strcmp(id, e->id) == 0) return 1;
    }
  }
  return 0;
}

/* Two suites of one name, or two tests of one id, would make ids that
 * kiln cannot tell apart: refused before anything runs. */
int kt__registry_check(const char *argv0) {
  size_t n;
  kt__entry *all = kt__registry(&n);
  int bad = 0;
  EACH_SUITE(s) {
    for (const kt_suite *const *t = __start_kt_suites; t < s && !bad; t++)
      if (*t && *t != *s && strcmp((*t)->name, (*s)->name) == 0) {
        fprintf(stderr, "%s: two suites are named '%s': rename one (KT_SUITE's "
                        "second argument)\n", argv0, (*s)->name);
        bad = 1;
      }
  }
  for (size_t i = 0; i < n && !bad; i++)
    for (size_t j = 0; j < i && !bad; j++)
      if (strcmp(all[i].id, all[j].id) == 0) {
        fprintf(stderr, "%s: test '%s' is registered twice in its suite's table\n",
                argv0, all[i].id);
        bad = 1;
      }
  free(all);
  return bad ? -1 : 0;
}

void kt__runner_record(void) {
  kp_runner r = {KILN_VERSION, KP_VERSION, ke_backend_name()};
  kp_record_out rec;
  kp_encode(&rec, &kp_rec_runner, &r);
  kp_send(&rec, STDOUT_FILENO);
}

void kt__list(void) {
  size_t n;
  kt__entry *all = kt__registry(&n);
  kt__runner_record();
  for (size_t i = 0; i < n; i++) {
    const kt__entry *e = &all[i];
    kp_listing l = {e->id, e->suite->name, e->test->name, e->tags,
                    e->test->slots == 0 ? 1 : e->test->slots, kt__devices_needed(e->test),
                    e->test->timeout_s, !e->test->host_only,
                    (*e->test->check_test)->file, (*e->test->check_test)->line};
    kp_record_out rec;
    kp_encode(&rec, &kp_rec_listing, &l);
    kp_send(&rec, STDOUT_FILENO);
  }
  free(all);
}
