/* The console (prefix kh_): a live progress line on a terminal (counts,
 * running tests, elapsed, estimate), one plain line per finished test
 * otherwise; colour only on a terminal without NO_COLOR. Tests that did not
 * pass print their message and the tail of their log.
 */
#ifndef KILN_PARENT_CONSOLE_H
#define KILN_PARENT_CONSOLE_H

#include <stdio.h>

#include "report.h"
#include "result.h"

typedef struct kh_console {
  FILE *out;
  int tty, color, verbose;
  int total, done;
  int counts[KH_NOUTCOMES];
  double start_ms;
  int progress_shown;
  char last_progress[512];  /* what the progress line shows now */
} kh_console;

void kh_console_init(kh_console *c, int verbose, int total);
/* Prints one finished test run (and details when it did not pass). */
void kh_console_result(kh_console *c, const kh_result *r);
/* Redraws the progress line (terminals only). */
void kh_console_progress(kh_console *c, char *const *running, int nrunning);
void kh_console_note(kh_console *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void kh_console_summary(kh_console *c, const kh_report *rep,
                        const char *report_path);

#endif
