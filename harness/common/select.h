/* Which tests run, and with which tolerances (prefix ksel_): tags,
 * selectors (suite, suite/test, globs, @tag, -exclusions), the tags held
 * back from a sweep, and tolerance overrides "GLOB=ATOL:RTOL". The kiln
 * parent and a runner run by hand both select through here, so a runner
 * with no pattern leaves out the same tests as `kiln run` with none.
 * Plain C, no allocation the caller does not see, no GPU runtime.
 */
#ifndef KILN_SELECT_H
#define KILN_SELECT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Tests and tags ------------------------------------------------------ */

/* What selection needs to know of a test. */
typedef struct ksel_test {
  const char *id;           /* suite/name */
  const char *suite;
  const char *tags;         /* comma-separated, the suite's and the test's */
} ksel_test;

/* 1 when the comma-separated list holds tag. */
int ksel_has_tag(const char *tags, const char *tag);
/* 1 when pattern (suite, a glob over suite/test, or @tag) matches t. */
int ksel_matches(const char *pattern, const ksel_test *t);

/* ---- Selection ---------------------------------------------------------- */

/* Marks chosen[i] for the selected tests of tests[0..n). Positive selectors
 * add (none: every test a sweep takes), "-SEL" removes, whatever its
 * position. Some tags hold their tests back from a sweep (no selector,
 * another suite, a glob that does not start with their suite, another tag):
 * `fault`, `bench`, `perf` and `disabled` (GoogleTest's DISABLED_ tests)
 * always, `slow` with hold_slow (the host backend, where GPU-sized cases
 * take minutes); one table in select.c.
 * *held (may be NULL) counts the tests only `slow` kept out, which a GPU
 * run would have taken. Returns 0, or the 1-based index of the first
 * selector that matches no test. */
int ksel_select(const ksel_test *tests, size_t n, char *const *sel, int nsel,
                int hold_slow, unsigned char *chosen, int *held);

/* ---- Test ids ---------------------------------------------------------------- */

/* A test id is text that a console, a log path and a report show as it
 * is: each byte of a name that is a control character (C0, DEL, or a C1
 * code point U+0080-U+009F), not part of valid UTF-8, or '%' is written
 * %HH (upper-case hex), NUL included. So two names never share an id, and
 * the name comes back from it. Writes at most cap - 1 bytes and a NUL
 * (cap may be 0); returns the id's full length, as snprintf does. */
size_t ksel_id_escape(const char *name, size_t len, char *out, size_t cap);
/* The name back from an id into out (at most cap bytes, no NUL added: a
 * name may hold one); its length, or -1 when id is not ksel_id_escape's
 * writing or out is too small. */
long ksel_id_unescape(const char *id, char *out, size_t cap);
/* 1 when id is exactly as ksel_id_escape writes some name. */
int ksel_id_valid(const char *id);

/* ---- Tolerance overrides --------------------------------------------------- */

typedef struct ksel_tol {
  char match[256];          /* glob over suite, suite/test, suite/test/check */
  double atol, rtol;
  long long max_over;       /* mismatch budget; -1: the check's own */
} ksel_tol;

/* Parses "GLOB=ATOL:RTOL[:MAX_OVER]" (ATOL and RTOL from 0 to 1e30,
 * MAX_OVER elements allowed over tolerance; the glob may hold '=', not
 * past 255 bytes). 0, or -1 when the text is not that. */
int ksel_tol_parse(const char *spec, ksel_tol *out);
/* The spec back, exactly (for a runner's --tolerance); 320 bytes hold it. */
void ksel_tol_format(const ksel_tol *t, char *out, size_t n);
/* The last override in tols[0..n) whose glob matches the suite, the test
 * id or "id/check", or NULL: later overrides win. */
const ksel_tol *ksel_tol_pick(const ksel_tol *tols, int n, const char *suite,
                              const char *test_id, const char *check);

#ifdef __cplusplus
}
#endif
#endif
