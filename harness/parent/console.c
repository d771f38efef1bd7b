/* Console output for `kiln run`; see console.h. */
#include "console.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base.h"

/* Lines of a failing test's log shown on the console (the report has
 * more, the log file everything that was kept). */
#define KH__CONSOLE_TAIL_LINES 12

void kh_console_init(kh_console *c, int verbose, int total) {
  memset(c, 0, sizeof *c);
  c->out = stdout;
  c->tty = isatty(STDOUT_FILENO);
  const char *nc = getenv("NO_COLOR");
  c->color = c->tty && !(nc && *nc);
  c->verbose = verbose;
  c->total = total;
  c->start_ms = kh_now_ms();
}

static void kh__clear(kh_console *c) {
  if (c->progress_shown) fputs("\r\033[K", c->out);
  c->progress_shown = 0;
}

static void kh__paint(kh_console *c, int outcome, const char *text) {
  if (c->color) fprintf(c->out, "\033[%sm%s\033[0m", kh_outcome_color(outcome), text);
  else fputs(text, c->out);
}

void kh_console_note(kh_console *c, const char *fmt, ...) {
  kh__clear(c);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(c->out, fmt, ap);
  va_end(ap);
  fputc('\n', c->out);
  fflush(c->out);
}

/* The last n lines of text. */
static const char *kh__last_lines(const char *text, int n) {
  const char *p = text + strlen(text);
  if (p > text && p[-1] == '\n') p--;
  while (p > text) {
    if (p[-1] == '\n' && --n == 0) break;
    p--;
  }
  return p;
}

static void kh__details(kh_console *c, const kh_result *r) {
  if (r->file && *r->file)
    fprintf(c->out, "      %s:%d: %s\n", r->file, r->line,
            r->message ? r->message : "");
  else if (r->message)
    fprintf(c->out, "      %s\n", r->message);
  if (r->outcome == KH_PASS || r->outcome == KH_SKIP) return;
  if (r->log_tail && *r->log_tail) {
    fprintf(c->out, "      --- last lines of %s ---\n",
            r->log_path ? r->log_path : "the log");
    const char *tail = kh__last_lines(r->log_tail, KH__CONSOLE_TAIL_LINES);
    for (const char *p = tail; *p;) {
      const char *nl = strchr(p, '\n');
      int len = nl ? (int)(nl - p) : (int)strlen(p);
      fprintf(c->out, "      | %.*s\n", len, p);
      p += len + (nl ? 1 : 0);
    }
  }
}

void kh_console_result(kh_console *c, const kh_result *r) {
  kh__clear(c);
  if (!r->retried) c->done++, c->counts[r->outcome]++;
  char label[16];
  snprintf(label, sizeof label, "%-7s", r->retried ? "RETRY" : kh_outcome_name(r->outcome));
  for (char *p = label; *p; p++) *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
  kh__paint(c, r->outcome, label);
  fprintf(c->out, " %s", r->id);
  if (r->repeat > 1) fprintf(c->out, " #%d", r->repeat);
  if (r->attempt > 1) fprintf(c->out, " (attempt %d)", r->attempt);
  fprintf(c->out, "  %.0f ms", r->wall_ms);
  if (r->device >= 0) fprintf(c->out, ", device %d", r->device);
  fputc('\n', c->out);
  if (r->outcome != KH_PASS || c->verbose) kh__details(c, r);
  fflush(c->out);
}

void kh_console_progress(kh_console *c, char *const *running, int nrunning) {
  if (!c->tty) return;
  double el = (kh_now_ms() - c->start_ms) / 1e3;
  char eta[32] = "?";
  if (c->done > 0 && c->total >= c->done)
    snprintf(eta, sizeof eta, "%.0fs", el / c->done * (c->total - c->done));
  char line[512];
  int n = snprintf(line, sizeof line, "[%d/%d] %d pass %d not passed | %.0fs, "
                   "eta %s | running %d:", c->done, c->total,
                   c->counts[KH_PASS] + c->counts[KH_SKIP] + c->counts[KH_FLAKY],
                   c->done - c->counts[KH_PASS] - c->counts[KH_SKIP] -
                       c->counts[KH_FLAKY],
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

void kh_console_summary(kh_console *c, const kh_report *rep,
                        const char *report_path) {
  kh__clear(c);
  int counts[KH_NOUTCOMES] = {0}, total = 0;
  for (int i = 0; i < rep->nresults; i++)
    if (!rep->results[i]->retried) counts[rep->results[i]->outcome]++, total++;
  fprintf(c->out, "%s%d test run%s in %.1f s:", rep->interrupted ? "INTERRUPTED: " : "",
          total, total == 1 ? "" : "s", rep->end_s - rep->start_s);
  for (int o = 0; o < KH_NOUTCOMES; o++) {
    if (!counts[o]) continue;
    char part[32];
    snprintf(part, sizeof part, " %d %s", counts[o], kh_outcome_name(o));
    kh__paint(c, o, part);
  }
  if (rep->not_run) fprintf(c->out, " (%d not run)", rep->not_run);
  fprintf(c->out, "\nreport: %s\n", report_path);
  fflush(c->out);
}
