/* `kiln report html` (prefix kh_html): one self-contained HTML page for a
 * report — summary, a filterable table of tests with per-test detail, and
 * inline SVG plots (time per suite, error-to-tolerance per check, trends
 * over earlier nights). No network, no external script or style.
 */
#ifndef KILN_PARENT_HTML_H
#define KILN_PARENT_HTML_H

#include "reader.h"

/* Writes the page for rep; history: earlier reports (any order) for the
 * trend plots, nhistory may be 0. path "-": stdout. */
int kh_html_write(const kh_rep *rep, const kh_rep *history, int nhistory,
                  const char *path, kh_err *err);

#endif
