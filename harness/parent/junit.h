/* JUnit XML from a report (prefix kh_junit), in the Jenkins/Surefire
 * variant CI systems read: a <testsuite> per kiln suite, a <testcase> per
 * test run, <failure>/<error>/<skipped>, retried attempts as
 * <flakyFailure>/<rerunFailure>. Valid XML whatever the tests printed.
 */
#ifndef KILN_PARENT_JUNIT_H
#define KILN_PARENT_JUNIT_H

#include "reader.h"

/* Writes the JUnit file for a loaded report ("-": stdout), atomically. */
int kh_junit_write(const kh_rep *rep, const char *path, kh_err *err);

/* Appends text to b as XML character data (esc_attr: for an attribute),
 * dropping what XML 1.0 cannot hold: control characters, invalid UTF-8,
 * U+FFFE/U+FFFF and surrogates become '?'. */
void kh_xml_text(kh_buf *b, const char *text, int esc_attr);

#endif
