/* The console of `kiln run`: a live progress line on a terminal (counts,
 * running tests, elapsed, estimate), one plain line per finished test
 * otherwise; colour only on a terminal without NO_COLOR. Tests that did not
 * pass print their message and the tail of their log.
 */
#include "run-impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* Lines of a failing test's log shown on the console (the report has
 * more, the log file everything that was kept). */
#define TAIL_LINES 12
/* The slowest tests listed at the end, with where their time went. */
#define KRUN__DURATIONS 10

void krun__console_init(krun__console *c, int verbose, int quiet, int total) {
  memset(c, 0, sizeof *c);
  c->out = quiet ? NULL : stdout;
  c->tty = isatty(STDOUT_FILENO);
  const char *nc = getenv("NO_COLOR");
  c->color = c->tty && !(nc && *nc);
  c->verbose = verbose;
  c->total = total;
  c->start_ms = kh_now_ms();
}

static void clear(krun__console *c) {
  if (c->progress_shown) fputs("\r\033[K", c->out);
  c->progress_shown = 0;
}

static void paint(krun__console *c, int outcome, const char *text) {
  if (c->color) fprintf(c->out, "\033[%sm%s\033[0m", krep_outcome_color(outcome), text);
  else fputs(text, c->out);
}

void krun__console_note(krun__console *c, const char *fmt, ...) {
  if (!c->out) return;
  clear(c);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(c->out, fmt, ap);
  va_end(ap);
  fputc('\n', c->out);
  fflush(c->out);
}

/* The last n lines of text. */
static const char *last_lines(const char *text, int n) {
  const char *p = text + strlen(text);
  if (p > text && p[-1] == '\n') p--;
  while (p > text) {
    if (p[-1] == '\n' && --n == 0) break;
    p--;
  }
  return p;
}

static void details(krun__console *c, const krep_test *t) {
  if (t->file && *t->file)
    fprintf(c->out, "      %s:%d: %s\n", t->file, t->line,
            t->message ? t->message : "");
  else if (t->message)
    fprintf(c->out, "      %s\n", t->message);
  if (t->outcome == KREP_PASS || t->outcome == KREP_SKIP) return;
  if (t->log_tail && *t->log_tail) {
    fprintf(c->out, "      --- last lines of %s ---\n",
            t->log_path ? t->log_path : "the log");
    const char *tail = last_lines(t->log_tail, TAIL_LINES);
    for (const char *p = tail; *p;) {
      const char *nl = strchr(p, '\n');
      int len = nl ? (int)(nl - p) : (int)strlen(p);
      fprintf(c->out, "      | %.*s\n", len, p);
      p += len + (nl ? 1 : 0);
    }
  }
}

void krun__console_result(krun__console *c, const krep_report *rep, const krep_test *t) {
  if (t->final) c->done++, c->counts[t->outcome]++;
  if (!c->out) return;
  clear(c);
  char label[16];
  /* A run replaced by a later attempt: a retry, or a collateral run made
   * again elsewhere (which says so). */
  snprintf(label, sizeof label, "%-7s",
           !t->final && t->outcome != KREP_COLLATERAL ? "RETRY" : krep_outcome_name(t->outcome));
  for (char *p = label; *p; p++) *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
  paint(c, t->outcome, label);
  fprintf(c->out, " %s", t->id);
  if (t->repeat > 1) fprintf(c->out, " #%d", t->repeat);
  if (t->attempt > 1) fprintf(c->out, " (attempt %d)", t->attempt);
  /* A test of a shared process that crashed, or one never run after it,
   * has no time of its own. */
  if (isnan(t->wall_ms)) fprintf(c->out, "  no time");
  else fprintf(c->out, "  %.0f ms", t->wall_ms);
  if (t->device >= 0) fprintf(c->out, ", device %d", t->device);
  /* How it ran, where that is news: in a worker, a worker's run confirmed
   * alone, the shared process. */
  char ran[160];
  krep_ran_text(rep, t, ran, sizeof ran);
  if (*ran && strcmp(ran, "alone") != 0) fprintf(c->out, ", %s", ran);
  fputc('\n', c->out);
  if (t->outcome != KREP_PASS || c->verbose) details(c, t);
  fflush(c->out);
}

void krun__console_progress(krun__console *c, const char *const *running, int nrunning) {
  if (!c->tty || !c->out) return;
  double el = (kh_now_ms() - c->start_ms) / 1e3;
  char eta[32] = "?";
  if (c->done > 0 && c->total >= c->done)
    snprintf(eta, sizeof eta, "%.0fs", el / c->done * (c->total - c->done));
  char line[512];
  int n = snprintf(line, sizeof line, "[%d/%d] %d pass %d not passed | %.0fs, "
                   "eta %s | running %d:", c->done, c->total,
                   c->counts[KREP_PASS] + c->counts[KREP_SKIP] + c->counts[KREP_FLAKY],
                   c->done - c->counts[KREP_PASS] - c->counts[KREP_SKIP] -
                       c->counts[KREP_FLAKY],
                   el, eta, nrunning);
  for (int i = 0; i < nrunning && n < 200; i++)
    n += snprintf(line + n, sizeof line - (size_t)n, " %s", running[i]);
  /* One terminal line: longer text would wrap and break the redraw. */
  struct winsize ws;
  int width = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10
                  ? ws.ws_col - 1
                  : 79;
  if (n > width) n = width;
  line[n] = '\0';
  /* The loop calls this on every event; repaint only what changed. */
  if (c->progress_shown && strcmp(line, c->last_progress) == 0) return;
  snprintf(c->last_progress, sizeof c->last_progress, "%s", line);
  fprintf(c->out, "\r\033[K%s", line);
  c->progress_shown = 1;
  fflush(c->out);
}

void krun__console_summary(krun__console *c, const krep_report *rep,
                        const char *report_path) {
  if (!c->out) return;
  clear(c);
  krep_durations(rep, KRUN__DURATIONS, c->out);
  int counts[KREP_NOUTCOMES];
  int total = krep_count(rep, counts);
  fprintf(c->out, "%s%d test run%s in %.1f s:", rep->interrupted ? "INTERRUPTED: " : "",
          total, total == 1 ? "" : "s", krep_duration(rep));
  for (int o = 0; o < KREP_NOUTCOMES; o++) {
    if (!counts[o]) continue;
    char part[32];
    snprintf(part, sizeof part, " %d %s", counts[o], krep_outcome_name(o));
    paint(c, o, part);
  }
  if (rep->not_run) fprintf(c->out, " (%d not run)", rep->not_run);
  char workers[200];
  krep_ran_summary(rep, workers, sizeof workers);
  if (*workers) fprintf(c->out, "\n%s", workers);
  if (report_path) fprintf(c->out, "\nreport: %s\n", report_path);
  else fprintf(c->out, "\nreport: not written (see above)\n");
  fflush(c->out);
}
