/* The HTML report. Everything is generated here into one file: the style
 * sheet and the filter script are string constants, the plots are SVG
 * drawn from the report's numbers, and text from tests is escaped with the
 * JUnit writer's XML escaper (valid in HTML too). The filter reads its
 * initial state from the URL fragment (#outcome=fail&suite=softmax), so a
 * link can point at "the failures of last night".
 */
#include "html.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "junit.h"
#include "result.h"

/* Appends a string literal. */
#define KH__LIT(b, s) kh_buf_add((b), (s), sizeof(s) - 1)

/* ---- Style and script ------------------------------------------------------ */

static const char kh__css[] =
  "body{font:14px/1.4 system-ui,sans-serif;margin:0 24px 40px;color:#222}"
  "h1{font-size:20px;margin:16px 0 4px}h2{font-size:16px;margin:24px 0 8px}"
  ".meta{color:#555}.chips span{display:inline-block;padding:2px 10px;margin:4px 6px 0 0;"
  "border-radius:10px;background:#eee}.o-pass{color:#176c2e}.o-fail,.o-crash,.o-error,"
  ".o-timeout{color:#b3261e;font-weight:600}.o-leak,.o-flaky{color:#8a5a00;font-weight:600}"
  ".o-skip{color:#00639b}.plots{display:flex;flex-wrap:wrap;gap:16px}"
  ".plots figure{margin:0;border:1px solid #ddd;border-radius:6px;padding:8px}"
  "figcaption{font-weight:600;margin-bottom:4px}svg text{font:11px sans-serif;fill:#333}"
  "table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:3px 8px;"
  "border-bottom:1px solid #eee;vertical-align:top}th{background:#f5f5f5}"
  "tr.test{cursor:pointer}tr.test:hover{background:#f8f8ff}.hidden{display:none}"
  "tr.detail>td{background:#fafafa}pre{background:#f3f3f3;padding:6px;max-height:300px;"
  "overflow:auto;white-space:pre-wrap}.filters select,.filters input{margin-right:12px}"
  "td.num{text-align:right;font-variant-numeric:tabular-nums}.bad{color:#b3261e}";

static const char kh__js[] =
  "(function(){\n"
  "var rows=[].slice.call(document.querySelectorAll('tr.test'));\n"
  "var f={outcome:document.getElementById('f-outcome'),suite:document.getElementById('f-suite'),"
  "tag:document.getElementById('f-tag'),text:document.getElementById('f-text')};\n"
  "function apply(){var n=0;rows.forEach(function(r){\n"
  " var ok=(!f.outcome.value||r.dataset.outcome===f.outcome.value)&&"
  "(!f.suite.value||r.dataset.suite===f.suite.value)&&"
  "(!f.tag.value||(' '+r.dataset.tags+' ').indexOf(' '+f.tag.value+' ')>=0)&&"
  "(!f.text.value||r.dataset.id.indexOf(f.text.value)>=0);\n"
  " r.classList.toggle('hidden',!ok);var d=document.getElementById('d-'+r.dataset.row);\n"
  " if(!ok&&d)d.classList.add('hidden');if(ok)n++;});\n"
  " document.getElementById('shown').textContent=n+' of '+rows.length+' shown';\n"
  " var h=[];['outcome','suite','tag'].forEach(function(k){if(f[k].value)h.push(k+'='+"
  "encodeURIComponent(f[k].value));});if(history.replaceState)history.replaceState(null,'',"
  "h.length?'#'+h.join('&'):location.pathname);}\n"
  "location.hash.slice(1).split('&').forEach(function(kv){var p=kv.split('=');"
  "if(f[p[0]]&&p[1]!==undefined)f[p[0]].value=decodeURIComponent(p[1]);});\n"
  "['outcome','suite','tag'].forEach(function(k){f[k].addEventListener('change',apply);});\n"
  "f.text.addEventListener('input',apply);\n"
  "rows.forEach(function(r){r.addEventListener('click',function(){var d=document."
  "getElementById('d-'+r.dataset.row);if(d)d.classList.toggle('hidden');});});\n"
  "apply();document.body.setAttribute('data-filter','ready');\n"
  "})();\n";

/* ---- Small writers ------------------------------------------------------------ */

static void kh__t(kh_buf *b, const char *s) { kh_xml_text(b, s, 0); }
static void kh__a(kh_buf *b, const char *s) { kh_xml_text(b, s, 1); }

static void kh__num(kh_buf *b, double v) {
  if (isnan(v)) KH__LIT(b, "-");
  else kh_buf_addf(b, "%.4g", v);
}

/* ---- SVG plots ----------------------------------------------------------------- */

enum { KH__W = 560, KH__H = 260, KH__L = 150, KH__R = 16, KH__T = 12, KH__B = 40 };

typedef struct kh__pt {
  double x, y;              /* y: value (log plots: positive) */
  const char *label;        /* axis label (bars, trends) */
  char title[256];          /* hover text */
  int bad;
} kh__pt;

static void kh__svg_open_h(kh_buf *b, const char *id, const char *caption, int h) {
  kh_buf_addf(b, "<figure><figcaption>%s</figcaption><svg id=\"%s\" width=\"%d\" "
               "height=\"%d\" viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">\n",
               caption, id, KH__W, h, KH__W, h);
}

static void kh__svg_open(kh_buf *b, const char *id, const char *caption) {
  kh__svg_open_h(b, id, caption, KH__H);
}

static void kh__svg_close(kh_buf *b) { KH__LIT(b, "</svg></figure>\n"); }

/* Horizontal bars: one per point, label at the left. */
static void kh__bars(kh_buf *b, const char *id, const char *caption,
                     const kh__pt *p, int n, const char *unit) {
  double max = 0, row = 24;
  for (int i = 0; i < n; i++) max = fmax(max, p[i].y);
  kh__svg_open_h(b, id, caption, KH__T * 2 + (int)row * (n ? n : 1));
  for (int i = 0; i < n; i++) {
    double w = max > 0 ? p[i].y / max * (KH__W - KH__L - KH__R - 60) : 0;
    double y = KH__T + i * row;
    kh_buf_addf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", KH__L - 6, y + row * 0.65);
    kh__t(b, p[i].label);
    kh_buf_addf(b, "</text><rect class=\"pt bar\" x=\"%d\" y=\"%.1f\" width=\"%.1f\" "
                 "height=\"%.1f\" fill=\"#4c78a8\"><title>", KH__L, y + 2, w, row - 4);
    kh__t(b, p[i].title);
    kh_buf_addf(b, "</title></rect><text x=\"%.1f\" y=\"%.1f\">%.3g %s</text>\n",
                 KH__L + w + 4, y + row * 0.65, p[i].y, unit);
  }
  kh__svg_close(b);
}

typedef struct kh__axis {
  int log;
  double lo, hi;            /* linear: values; log: decades */
} kh__axis;

static double kh__ypix(const kh__axis *a, double v) {
  double t = a->log ? (log10(v) - a->lo) / (a->hi - a->lo) : (v - a->lo) / (a->hi - a->lo);
  if (t < 0) t = 0;
  if (t > 1) t = 1;
  return KH__H - KH__B - t * (KH__H - KH__T - KH__B);
}

static void kh__yaxis(kh_buf *b, const kh__axis *a, const char *unit) {
  int L = 60;
  kh_buf_addf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>\n", L,
               KH__T, L, KH__H - KH__B);
  for (int i = 0; i <= 4; i++) {
    double v = a->log ? pow(10, a->lo + (a->hi - a->lo) * i / 4.0)
                      : a->lo + (a->hi - a->lo) * i / 4.0;
    if (a->log && (a->hi - a->lo) >= 4) v = pow(10, round(log10(v)));
    double y = kh__ypix(a, v);
    kh_buf_addf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>"
                 "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.3g%s</text>\n", L, y,
                 KH__W - KH__R, y, L - 4, y + 4, v, unit);
  }
}

/* Decades spanning the positive values (zero is drawn at the floor). */
static kh__axis kh__log_axis(const kh__pt *p, int n) {
  double lo = 1, hi = 1;
  for (int i = 0; i < n; i++)
    if (p[i].y > 0 && isfinite(p[i].y)) lo = fmin(lo, p[i].y), hi = fmax(hi, p[i].y);
  kh__axis a = {1, floor(log10(lo)), ceil(log10(hi))};
  if (a.lo < -9) a.lo = -9;
  if (a.hi <= a.lo) a.hi = a.lo + 1;
  return a;
}

/* Points over x in 0..n-1 with a y axis; line: join them (trends). */
static void kh__points(kh_buf *b, const kh__pt *p, int n, const kh__axis *a, int line) {
  int L = 60;
  double span = KH__W - KH__R - L - 60;
  if (line && n > 1) {
    KH__LIT(b, "<polyline fill=\"none\" stroke=\"#4c78a8\" points=\"");
    for (int i = 0; i < n; i++)
      kh_buf_addf(b, "%.1f,%.1f ", L + 30 + span * p[i].x, kh__ypix(a, p[i].y));
    KH__LIT(b, "\"/>\n");
  }
  for (int i = 0; i < n; i++) {
    double x = L + 30 + span * p[i].x;
    double v = a->log && !(p[i].y > 0) ? pow(10, a->lo) : p[i].y;
    kh_buf_addf(b, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\">"
                 "<title>", x, kh__ypix(a, v), line ? 4 : 3,
                 p[i].bad ? "#b3261e" : "#4c78a8");
    kh__t(b, p[i].title);
    KH__LIT(b, "</title></circle>\n");
    if (line && p[i].label) {
      kh_buf_addf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", x, KH__H - KH__B + 16);
      kh__t(b, p[i].label);
      KH__LIT(b, "</text>\n");
    }
  }
}

/* ---- Plot data ------------------------------------------------------------------ */

static void kh__plot_suites(kh_buf *b, const kh_rep *rep) {
  kh__pt *p = kh_xcalloc((size_t)rep->ntests + 1, sizeof *p);
  int n = 0;
  for (int i = 0; i < rep->ntests; i++) {
    const kh_rtest *t = &rep->tests[i];
    int k = 0;
    while (k < n && strcmp(p[k].label, t->suite) != 0) k++;
    if (k == n) p[n++].label = t->suite;
    if (!isnan(t->wall_ms)) p[k].y += t->wall_ms / 1000.0, p[k].x += 1;
  }
  for (int k = 0; k < n; k++)
    snprintf(p[k].title, sizeof p[k].title, "%s: %.3f s over %d test runs", p[k].label,
             p[k].y, (int)p[k].x);
  kh__bars(b, "plot-suites", "Time per suite (sum of test wall times)", p, n, "s");
  free(p);
}

static void kh__plot_checks(kh_buf *b, const kh_rep *rep) {
  int total = 0;
  for (int i = 0; i < rep->ntests; i++) total += rep->tests[i].nchecks;
  kh__pt *p = kh_xcalloc((size_t)total + 1, sizeof *p);
  int n = 0;
  for (int i = 0; i < rep->ntests; i++)
    for (int c = 0; c < rep->tests[i].nchecks; c++, n++) {
      const kh_rcheck *k = &rep->tests[i].checks[c];
      p[n].x = total > 1 ? (double)n / (total - 1) : 0.5;
      p[n].y = k->ratio;
      p[n].bad = !k->pass;
      snprintf(p[n].title, sizeof p[n].title, "%s %s: error/tolerance %.3g (max abs %.3g, "
               "atol %.3g, rtol %.3g)", rep->tests[i].id, k->name, k->ratio, k->max_abs,
               k->atol, k->rtol);
    }
  kh__axis a = kh__log_axis(p, n);
  kh__svg_open(b, "plot-checks", "Error / tolerance per numeric check (log; 1 = at the limit)");
  kh__yaxis(b, &a, "");
  double one = kh__ypix(&a, 1.0);
  kh_buf_addf(b, "<line x1=\"60\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#b3261e\" "
               "stroke-dasharray=\"4 3\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">"
               "tolerance</text>\n", one, KH__W - KH__R, one, KH__W - KH__R, one - 4);
  kh__points(b, p, n, &a, 0);
  kh_buf_addf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%d checks, in report "
               "order</text>\n", KH__W / 2, KH__H - 8, n);
  kh__svg_close(b);
  free(p);
}

static double kh__max_ratio(const kh_rep *r) {
  double m = 0;
  for (int i = 0; i < r->ntests; i++)
    for (int c = 0; c < r->tests[i].nchecks; c++)
      if (isfinite(r->tests[i].checks[c].ratio)) m = fmax(m, r->tests[i].checks[c].ratio);
  return m;
}

static int kh__by_start(const void *x, const void *y) {
  return strcmp((*(const kh_rep *const *)x)->start, (*(const kh_rep *const *)y)->start);
}

static void kh__trend(kh_buf *b, const char *id, const char *caption,
                      const kh_rep **nights, int n, int which) {
  kh__pt *p = kh_xcalloc((size_t)n + 1, sizeof *p);
  char (*labels)[12] = kh_xcalloc((size_t)n + 1, sizeof *labels);
  double hi = 0;
  for (int i = 0; i < n; i++) {
    const kh_rep *r = nights[i];
    /* "MM-DD HH:MM": nights are days apart, test runs minutes apart */
    snprintf(labels[i], sizeof labels[i], "%.5s %.5s", r->start + (strlen(r->start) > 5 ? 5 : 0),
             r->start + (strlen(r->start) > 11 ? 11 : 0));
    p[i].label = labels[i];
    p[i].x = n > 1 ? (double)i / (n - 1) : 0.5;
    p[i].y = which ? kh__max_ratio(r) : r->duration_s;
    p[i].bad = r->counts[KH_FAIL] + r->counts[KH_CRASH] + r->counts[KH_TIMEOUT] +
               r->counts[KH_ERROR] + r->counts[KH_LEAK] > 0;
    hi = fmax(hi, p[i].y);
    snprintf(p[i].title, sizeof p[i].title, "%s (git %s): %s %.4g, %d tests", r->start,
             r->git, which ? "max error/tolerance" : "duration s", p[i].y, r->total);
  }
  kh__axis a = which ? kh__log_axis(p, n) : (kh__axis){0, 0, hi > 0 ? hi * 1.1 : 1};
  kh__svg_open(b, id, caption);
  kh__yaxis(b, &a, which ? "" : " s");
  kh__points(b, p, n, &a, 1);
  kh__svg_close(b);
  free(p), free(labels);
}

static void kh__plots(kh_buf *b, const kh_rep *rep, const kh_rep *hist, int nhist) {
  KH__LIT(b, "<h2>Plots</h2><div class=\"plots\">\n");
  kh__plot_suites(b, rep);
  kh__plot_checks(b, rep);
  const kh_rep **nights = kh_xcalloc((size_t)nhist + 2, sizeof *nights);
  int n = 0;
  for (int i = 0; i < nhist; i++) nights[n++] = &hist[i];
  nights[n++] = rep;
  qsort(nights, (size_t)n, sizeof *nights, kh__by_start);
  kh__trend(b, "trend-duration", "Trend: run duration per night", nights, n, 0);
  kh__trend(b, "trend-error", "Trend: largest error/tolerance per night (log)", nights, n, 1);
  free(nights);
  KH__LIT(b, "</div>\n");
}

/* ---- Summary, filters, table ----------------------------------------------------- */

static void kh__summary(kh_buf *b, const kh_rep *r) {
  KH__LIT(b, "<h1>kiln report</h1><div class=\"meta\">");
  kh__t(b, r->backend), KH__LIT(b, " backend on "), kh__t(b, r->host);
  KH__LIT(b, " &middot; git "), kh__t(b, *r->git ? r->git : "unknown");
  KH__LIT(b, " &middot; "), kh__t(b, r->start);
  kh_buf_addf(b, " &middot; %.1f s%s<br><code>", r->duration_s,
               r->interrupted ? " &middot; <b class=bad>INTERRUPTED</b>" : "");
  kh__t(b, r->command);
  kh_buf_addf(b, "</code></div><div class=\"chips\" id=\"summary\"><span>%d tests</span>",
               r->total);
  for (int o = 0; o < KH_NOUTCOMES; o++)
    if (r->counts[o])
      kh_buf_addf(b, "<span class=\"o-%s\">%d %s</span>", kh_outcome_name(o), r->counts[o],
                   kh_outcome_name(o));
  KH__LIT(b, "</div>\n");
}

/* A select with every distinct value (values: a NULL-terminated list). */
static void kh__select(kh_buf *b, const char *id, const char *label, const char **v, int n) {
  kh_buf_addf(b, "<label>%s <select id=\"%s\"><option value=\"\">all</option>", label, id);
  for (int i = 0; i < n; i++) {
    KH__LIT(b, "<option>"), kh__t(b, v[i]), KH__LIT(b, "</option>");
  }
  KH__LIT(b, "</select></label>");
}

static void kh__uniq(const char ***list, int *n, const char *v) {
  for (int i = 0; i < *n; i++)
    if (strcmp((*list)[i], v) == 0) return;
  *list = kh_xrealloc(*list, (size_t)(*n + 1) * sizeof **list);
  (*list)[(*n)++] = v;
}

static void kh__filters(kh_buf *b, const kh_rep *r) {
  const char **outcomes = NULL, **suites = NULL, **tags = NULL;
  int no = 0, ns = 0, nt = 0;
  for (int i = 0; i < r->ntests; i++) {
    const kh_rtest *t = &r->tests[i];
    kh__uniq(&outcomes, &no, kh_outcome_name(t->outcome));
    kh__uniq(&suites, &ns, t->suite);
    for (int k = 0; k < t->ntags; k++) kh__uniq(&tags, &nt, t->tags[k]);
  }
  KH__LIT(b, "<h2>Tests</h2><div class=\"filters\">");
  kh__select(b, "f-outcome", "status", outcomes, no);
  kh__select(b, "f-suite", "suite", suites, ns);
  kh__select(b, "f-tag", "tag", tags, nt);
  KH__LIT(b, "<label>id <input id=\"f-text\" size=\"24\"></label>"
                 "<span id=\"shown\"></span></div>\n");
  free(outcomes), free(suites), free(tags);
}

static double kh__worst(const kh_rtest *t) {
  double m = NAN;
  for (int c = 0; c < t->nchecks; c++)
    if (isnan(m) || t->checks[c].ratio > m) m = t->checks[c].ratio;
  return m;
}

static void kh__detail_checks(kh_buf *b, const kh_rtest *t) {
  if (!t->nchecks) return;
  KH__LIT(b, "<table><tr><th>check</th><th>dtype</th><th>n</th><th>max abs</th>"
                 "<th>max rel</th><th>atol</th><th>rtol</th><th>error/tol</th>"
                 "<th>over</th><th>pass</th></tr>");
  for (int c = 0; c < t->nchecks; c++) {
    const kh_rcheck *k = &t->checks[c];
    KH__LIT(b, "<tr><td>"), kh__t(b, k->name), KH__LIT(b, "</td><td>");
    kh__t(b, k->dtype);
    kh_buf_addf(b, "</td><td class=num>%lld</td>", k->n);
    double v[] = {k->max_abs, k->max_rel, k->atol, k->rtol, k->ratio};
    for (int i = 0; i < 5; i++) {
      kh_buf_addf(b, "<td class=\"num%s\">", i == 4 && k->ratio > 1 ? " bad" : "");
      kh__num(b, v[i]);
      KH__LIT(b, "</td>");
    }
    kh_buf_addf(b, "<td class=num>%lld</td><td class=\"%s\">%s</td></tr>", k->over,
                 k->pass ? "o-pass" : "o-fail", k->pass ? "yes" : "NO");
  }
  KH__LIT(b, "</table>");
}

static void kh__detail_kernels(kh_buf *b, const kh_rtest *t) {
  if (!t->nkernels) return;
  KH__LIT(b, "<table><tr><th>kernel</th><th>launches</th><th>total ms</th>"
                 "<th>median ms</th></tr>");
  for (int k = 0; k < t->nkernels; k++) {
    KH__LIT(b, "<tr><td>"), kh__t(b, t->kernels[k].name);
    kh_buf_addf(b, "</td><td class=num>%lld</td><td class=num>", t->kernels[k].launches);
    kh__num(b, t->kernels[k].total_ms);
    KH__LIT(b, "</td><td class=num>");
    kh__num(b, t->kernels[k].median_ms);
    KH__LIT(b, "</td></tr>");
  }
  KH__LIT(b, "</table>");
}

static void kh__detail_metrics(kh_buf *b, const kh_rtest *t) {
  if (!t->nmetrics) return;
  KH__LIT(b, "<table class=metrics><tr><th>metric</th><th>value</th><th>unit</th></tr>");
  for (int m = 0; m < t->nmetrics; m++) {
    KH__LIT(b, "<tr><td>"), kh__t(b, t->metrics[m].name);
    KH__LIT(b, "</td><td class=num>");
    kh__num(b, t->metrics[m].value);
    KH__LIT(b, "</td><td>"), kh__t(b, t->metrics[m].unit), KH__LIT(b, "</td></tr>");
  }
  KH__LIT(b, "</table>");
}

static void kh__detail(kh_buf *b, const kh_rtest *t, int row) {
  kh_buf_addf(b, "<tr class=\"detail hidden\" id=\"d-%d\"><td colspan=\"7\">", row);
  if (*t->message) {
    KH__LIT(b, "<p><b>");
    if (*t->file) kh__t(b, t->file), kh_buf_addf(b, ":%d: ", t->line);
    KH__LIT(b, "</b>"), kh__t(b, t->message), KH__LIT(b, "</p>");
  }
  kh__detail_checks(b, t);
  kh__detail_kernels(b, t);
  kh__detail_metrics(b, t);
  KH__LIT(b, "<p>log "), kh__t(b, *t->log_path ? t->log_path : "(none)");
  KH__LIT(b, "</p><pre class=\"log\">");
  kh__t(b, t->log_tail);
  KH__LIT(b, "</pre></td></tr>\n");
}

static void kh__row(kh_buf *b, const kh_rtest *t, int row) {
  const char *o = kh_outcome_name(t->outcome);
  kh_buf_addf(b, "<tr class=\"test\" data-row=\"%d\" data-outcome=\"%s\" data-suite=\"", row, o);
  kh__a(b, t->suite), KH__LIT(b, "\" data-tags=\"");
  for (int k = 0; k < t->ntags; k++) {
    if (k) KH__LIT(b, " ");
    kh__a(b, t->tags[k]);
  }
  KH__LIT(b, "\" data-id=\""), kh__a(b, t->id), KH__LIT(b, "\"><td>");
  kh__t(b, t->id);
  KH__LIT(b, "</td><td>");
  for (int k = 0; k < t->ntags; k++) KH__LIT(b, " "), kh__t(b, t->tags[k]);
  kh_buf_addf(b, "</td><td class=\"o-%s\">%s%s</td><td class=num>%d/%d</td>"
               "<td class=num>", o, o, t->final ? "" : " (retried)", t->repeat, t->attempt);
  kh__num(b, t->wall_ms);
  KH__LIT(b, "</td><td class=num>");
  kh__num(b, kh__worst(t));
  kh_buf_addf(b, "</td><td class=num>%d</td></tr>\n", t->nkernels);
  kh__detail(b, t, row);
}

static void kh__table(kh_buf *b, const kh_rep *r) {
  kh__filters(b, r);
  KH__LIT(b, "<table id=\"tests\"><tr><th>test</th><th>tags</th><th>status</th>"
                 "<th>repeat/attempt</th><th>wall ms</th><th>worst error/tol</th>"
                 "<th>kernels</th></tr>\n");
  for (int i = 0; i < r->ntests; i++) kh__row(b, &r->tests[i], i);
  KH__LIT(b, "</table>\n");
}

int kh_html_write(const kh_rep *rep, const kh_rep *history, int nhistory,
                  const char *path, kh_err *err) {
  kh_buf b = {0};
  KH__LIT(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<title>kiln report ");
  kh__t(&b, rep->start);
  kh_buf_addf(&b, "</title><style>%s</style></head><body>\n", kh__css);
  kh__summary(&b, rep);
  kh__plots(&b, rep, history, nhistory);
  kh__table(&b, rep);
  kh_buf_addf(&b, "<script>%s</script></body></html>\n", kh__js);
  int rc = 0;
  if (strcmp(path, "-") == 0 ? kh_write_all(STDOUT_FILENO, b.data, b.len)
                             : kh_write_atomic(path, b.data, b.len))
    rc = kh_errf(err, "%s: %s", path, strerror(errno));
  kh_buf_free(&b);
  return rc;
}
