/* How each test run ran: alone (a process of its own), in a worker's
 * sequence, or in the one shared process of --isolation none, with the
 * worker's number and the run's place in it; and the words for it that
 * the console, `kiln report show`, JUnit, HTML and `kiln report diff` all
 * use, so that they say it the same way.
 */
#include "report-impl.h"

#include <stdlib.h>
#include <string.h>

static const char *const names[] = {NULL, "alone", "worker", "shared"};

const char *krep_ran_name(int ran) {
  return ran > 0 && ran < (int)(sizeof names / sizeof names[0]) ? names[ran] : NULL;
}

int krep_ran_parse(const char *name) {
  for (int i = 1; name && i < (int)(sizeof names / sizeof names[0]); i++)
    if (strcmp(names[i], name) == 0) return i;
  return KREP_RAN_UNKNOWN;
}

const char *krep_test_note(const krep_test *t, const char *key) {
  int i = 0;
  const krep_rec *r;
  while ((r = krep_test_next(t, "note", &i)) != NULL) {
    kp_note note;
    if (krep_rec_decode(r, &kp_rec_note, &note) == 0 && note.key && strcmp(note.key, key) == 0)
      return note.value;
  }
  return NULL;
}

const krep_test *krep_test_confirms(const krep_report *rep, const krep_test *t) {
  if (t->ran != KREP_RAN_ALONE || !krep_test_note(t, "confirmed_alone")) return NULL;
  for (int i = 0; i < rep->ntests; i++) {
    const krep_test *w = rep->tests[i];
    if (!w->final && w->ran == KREP_RAN_WORKER && w->repeat == t->repeat &&
        w->attempt == t->attempt - 1 && w->merged_from == t->merged_from &&
        strcmp(w->id, t->id) == 0)
      return w;
  }
  return NULL;
}

void krep_ran_text(const krep_report *rep, const krep_test *t, char *out, size_t n) {
  const krep_test *w = krep_test_confirms(rep, t);
  if (t->ran == KREP_RAN_WORKER)
    snprintf(out, n, "in worker %d at %d", t->worker, t->position);
  else if (t->ran == KREP_RAN_SHARED)
    snprintf(out, n, "in the shared process at %d", t->position);
  else if (w)
    snprintf(out, n, "alone, after %s in worker %d at %d", krep_outcome_name(w->outcome),
             w->worker, w->position);
  else
    snprintf(out, n, "%s", t->ran == KREP_RAN_ALONE ? "alone" : "");
}

void krep_ran_summary(const krep_report *rep, char *out, size_t n) {
  int runs = 0, nworkers = 0, again = 0, confirmed = 0, polluted = 0;
  int *seen = kh_xcalloc((size_t)rep->ntests + 1, sizeof *seen);
  for (int i = 0; i < rep->ntests; i++) {
    const krep_test *t = rep->tests[i];
    if (t->ran == KREP_RAN_WORKER) {
      runs++;
      int k = 0;
      while (k < nworkers && seen[k] != t->worker) k++;
      if (k == nworkers) seen[nworkers++] = t->worker;
    }
    const char *c = t->ran == KREP_RAN_ALONE ? krep_test_note(t, "confirmed_alone") : NULL;
    if (!c) continue;
    again++;
    confirmed += strcmp(c, "true") == 0;
    polluted += t->outcome == KREP_POLLUTED;
  }
  free(seen);
  out[0] = '\0';
  if (!runs) return;
  size_t len = (size_t)snprintf(out, n, "workers: %d run%s in %d worker%s", runs,
                                runs == 1 ? "" : "s", nworkers, nworkers == 1 ? "" : "s");
  if (again && len < n)
    snprintf(out + len, n - len, "; %d run again alone: %d confirmed, %d polluted", again,
             confirmed, polluted);
}
