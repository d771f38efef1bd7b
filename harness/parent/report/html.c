/* The HTML report: one self-contained file. The style sheet and the filter
 * script are string constants, the plots are SVG drawn from the report's
 * numbers (html-svg.c), and text from tests is escaped with the JUnit
 * writer's XML escaper (valid in HTML too). Each test's row says how it
 * ran (alone, in which worker at which place, or alone to confirm a
 * worker's run; ran.c's words). The filter reads its initial
 * state from the URL fragment (#outcome=fail&suite=softmax), so a link can
 * point at "the failures of last night".
 */
#include "report-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LIT(b, s) kh_buf_add((b), (s), sizeof(s) - 1)

/* ---- Style and script ------------------------------------------------------ */

static const char css[] =
  "body{font:14px/1.4 system-ui,sans-serif;margin:0 24px 40px;color:#222}"
  "h1{font-size:20px;margin:16px 0 4px}h2{font-size:16px;margin:24px 0 8px}"
  ".meta{color:#555}.chips span{display:inline-block;padding:2px 10px;margin:4px 6px 0 0;"
  "border-radius:10px;background:#eee}.o-pass{color:#176c2e}.o-fail,.o-crash,.o-error,"
  ".o-timeout,.o-lost,.o-collateral{color:#b3261e;font-weight:600}.o-leak,.o-flaky,.o-polluted{color:#8a5a00;font-weight:600}"
  ".o-skip{color:#00639b}.plots{display:flex;flex-wrap:wrap;gap:16px}"
  ".plots figure{margin:0;border:1px solid #ddd;border-radius:6px;padding:8px}"
  "figcaption{font-weight:600;margin-bottom:4px}svg text{font:11px sans-serif;fill:#333}"
  "table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:3px 8px;"
  "border-bottom:1px solid #eee;vertical-align:top}th{background:#f5f5f5}"
  "tr.test{cursor:pointer}tr.test:hover{background:#f8f8ff}.hidden{display:none}"
  "tr.detail>td{background:#fafafa}pre{background:#f3f3f3;padding:6px;max-height:300px;"
  "overflow:auto;white-space:pre-wrap}.filters select,.filters input{margin-right:12px}"
  "td.num{text-align:right;font-variant-numeric:tabular-nums}.bad{color:#b3261e}"
  ".dist{display:flex;gap:24px;align-items:flex-start;margin:4px 0 10px}"
  ".dist table{width:auto}.dist p{margin:2px 0}svg.hist rect{fill:#5b7fb5}";

static const char js[] =
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
  "var open=null;location.hash.slice(1).split('&').forEach(function(kv){var p=kv.split('=');"
  "if(p[0]==='open'&&p[1]!==undefined)open=decodeURIComponent(p[1]);"
  "else if(f[p[0]]&&p[1]!==undefined)f[p[0]].value=decodeURIComponent(p[1]);});\n"
  "['outcome','suite','tag'].forEach(function(k){f[k].addEventListener('change',apply);});\n"
  "f.text.addEventListener('input',apply);\n"
  "rows.forEach(function(r){r.addEventListener('click',function(){var d=document."
  "getElementById('d-'+r.dataset.row);if(d)d.classList.toggle('hidden');});});\n"
  "apply();if(open)rows.forEach(function(r){if(r.dataset.id===open){var d=document."
  "getElementById('d-'+r.dataset.row);if(d)d.classList.remove('hidden');}});\n"
  "document.body.setAttribute('data-filter','ready');\n"
  "})();\n";

/* ---- Small writers ------------------------------------------------------------ */

static void text(kh_buf *b, const char *s) { krep__xml_text(b, s, 0); }
static void attr(kh_buf *b, const char *s) { krep__xml_text(b, s, 1); }

static void number(kh_buf *b, double v) {
  if (isnan(v)) LIT(b, "-");
  else kh_buf_addf(b, "%.4g", v);
}

static void iso(double wall_s, char *out, size_t n) {
  if (isnan(wall_s)) snprintf(out, n, "?");
  else kh_iso_time(wall_s, out, n);
}

/* The comma-separated tags of t, one at a time: *p starts at t->tags. */
static int next_tag(const char **p, char *out, size_t n) {
  while (**p == ',') (*p)++;
  if (!**p) return 0;
  size_t len = strcspn(*p, ",");
  snprintf(out, n, "%.*s", (int)(len < n - 1 ? len : n - 1), *p);
  *p += len;
  return 1;
}

/* ---- Plot data ------------------------------------------------------------------ */

static void plot_suites(kh_buf *b, const krep_report *rep) {
  krep__pt *p = kh_xcalloc((size_t)rep->ntests + 1, sizeof *p);
  int n = 0;
  for (int i = 0; i < rep->ntests; i++) {
    const krep_test *t = rep->tests[i];
    int k = 0;
    while (k < n && strcmp(p[k].label, t->suite) != 0) k++;
    if (k == n) p[n++].label = t->suite;
    if (!isnan(t->wall_ms)) p[k].y += t->wall_ms / 1000.0, p[k].x += 1;
  }
  for (int k = 0; k < n; k++)
    snprintf(p[k].title, sizeof p[k].title, "%s: %.3f s over %d test runs", p[k].label,
             p[k].y, (int)p[k].x);
  krep__svg_bars(b, "plot-suites", "Time per suite (sum of test wall times)", p, n, "s");
  free(p);
}

static void plot_checks(kh_buf *b, const krep_report *rep) {
  krep__pt *p = NULL;
  int n = 0;
  for (int i = 0; i < rep->ntests; i++) {
    krep__view v;
    krep__view_of(rep->tests[i], &v);
    p = kh_xrealloc(p, (size_t)(n + v.nchecks + 1) * sizeof *p);
    for (int c = 0; c < v.nchecks; c++, n++) {
      const kp_check *k = &v.checks[c];
      memset(&p[n], 0, sizeof p[n]);
      p[n].y = v.ratios[c];
      p[n].bad = !k->pass;
      snprintf(p[n].title, sizeof p[n].title, "%s %s: error/tolerance %.3g (max abs %.3g, "
               "atol %.3g, rtol %.3g)", rep->tests[i]->id, k->name, v.ratios[c], k->max_abs,
               k->atol, k->rtol);
    }
    krep__view_free(&v);
  }
  for (int i = 0; i < n; i++) p[i].x = n > 1 ? (double)i / (n - 1) : 0.5;
  krep__axis a = krep__svg_log_axis(p, n);
  krep__svg_open(b, "plot-checks", "Error / tolerance per numeric check (log; 1 = at the limit)");
  krep__svg_yaxis(b, &a, "");
  double one = krep__svg_y(&a, 1.0);
  int right = KREP__SVG_W - KREP__SVG_R;
  kh_buf_addf(b, "<line x1=\"60\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#b3261e\" "
              "stroke-dasharray=\"4 3\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">"
              "tolerance</text>\n", one, right, one, right, one - 4);
  krep__svg_points(b, p, n, &a, 0);
  kh_buf_addf(b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%d checks, in report "
              "order</text>\n", KREP__SVG_W / 2, KREP__SVG_H - 8, n);
  krep__svg_close(b);
  free(p);
}

static double max_ratio(const krep_report *r) {
  double m = 0;
  for (int i = 0; i < r->ntests; i++) {
    krep__view v;
    krep__view_of(r->tests[i], &v);
    for (int c = 0; c < v.nchecks; c++)
      if (isfinite(v.ratios[c])) m = fmax(m, v.ratios[c]);
    krep__view_free(&v);
  }
  return m;
}

static int by_start(const void *x, const void *y) {
  double a = (*(const krep_report *const *)x)->start_s;
  double b = (*(const krep_report *const *)y)->start_s;
  return (a > b) - (a < b);
}

static void trend(kh_buf *b, const char *id, const char *caption,
                  const krep_report **nights, int n, int which) {
  krep__pt *p = kh_xcalloc((size_t)n + 1, sizeof *p);
  char (*labels)[12] = kh_xcalloc((size_t)n + 1, sizeof *labels);
  double hi = 0;
  for (int i = 0; i < n; i++) {
    const krep_report *r = nights[i];
    int counts[KREP_NOUTCOMES];
    int total = krep_count(r, counts);
    char start[40];
    iso(r->start_s, start, sizeof start);
    /* "MM-DD HH:MM": nights are days apart, test runs minutes apart */
    snprintf(labels[i], sizeof labels[i], "%.5s %.5s", start + (strlen(start) > 5 ? 5 : 0),
             start + (strlen(start) > 11 ? 11 : 0));
    p[i].label = labels[i];
    p[i].x = n > 1 ? (double)i / (n - 1) : 0.5;
    p[i].y = which ? max_ratio(r) : krep_duration(r);
    for (int o = 0; o < KREP_NOUTCOMES; o++) p[i].bad |= counts[o] && krep_outcome_failed(o);
    hi = fmax(hi, p[i].y);
    snprintf(p[i].title, sizeof p[i].title, "%s (git %s): %s %.4g, %d tests", start,
             r->git && *r->git ? r->git : "?", which ? "max error/tolerance" : "duration s",
             p[i].y, total);
  }
  krep__axis a = which ? krep__svg_log_axis(p, n) : (krep__axis){0, 0, hi > 0 ? hi * 1.1 : 1};
  krep__svg_open(b, id, caption);
  krep__svg_yaxis(b, &a, which ? "" : " s");
  krep__svg_points(b, p, n, &a, 1);
  krep__svg_close(b);
  free(p), free(labels);
}

static void plots(kh_buf *b, const krep_report *rep, const krep_report *hist, int nhist) {
  LIT(b, "<h2>Plots</h2><div class=\"plots\">\n");
  plot_suites(b, rep);
  plot_checks(b, rep);
  const krep_report **nights = kh_xcalloc((size_t)nhist + 2, sizeof *nights);
  int n = 0;
  for (int i = 0; i < nhist; i++) nights[n++] = &hist[i];
  nights[n++] = rep;
  qsort(nights, (size_t)n, sizeof *nights, by_start);
  trend(b, "trend-duration", "Trend: run duration per night", nights, n, 0);
  trend(b, "trend-error", "Trend: largest error/tolerance per night (log)", nights, n, 1);
  free(nights);
  LIT(b, "</div>\n");
}

/* ---- Summary, filters, table ----------------------------------------------------- */

static void summary(kh_buf *b, const krep_report *r) {
  char start[40];
  iso(r->start_s, start, sizeof start);
  int counts[KREP_NOUTCOMES];
  int total = krep_count(r, counts);
  LIT(b, "<h1>kiln report</h1><div class=\"meta\">");
  text(b, r->backend), LIT(b, " backend on "), text(b, r->host);
  LIT(b, " &middot; git "), text(b, r->git && *r->git ? r->git : "unknown");
  LIT(b, " &middot; "), text(b, start);
  kh_buf_addf(b, " &middot; %.1f s%s<br><code>", krep_duration(r),
              r->interrupted ? " &middot; <b class=bad>INTERRUPTED</b>" : "");
  text(b, r->command);
  kh_buf_addf(b, "</code></div><div class=\"chips\" id=\"summary\"><span>%d tests</span>",
              total);
  for (int o = 0; o < KREP_NOUTCOMES; o++)
    if (counts[o])
      kh_buf_addf(b, "<span class=\"o-%s\">%d %s</span>", krep_outcome_name(o), counts[o],
                  krep_outcome_name(o));
  LIT(b, "</div>\n");
}

/* A select with every distinct value. */
static void choice(kh_buf *b, const char *id, const char *label, char **v, int n) {
  kh_buf_addf(b, "<label>%s <select id=\"%s\"><option value=\"\">all</option>", label, id);
  for (int i = 0; i < n; i++) {
    LIT(b, "<option>"), text(b, v[i]), LIT(b, "</option>");
  }
  LIT(b, "</select></label>");
}

static void uniq(char ***list, int *n, const char *v) {
  for (int i = 0; i < *n; i++)
    if (strcmp((*list)[i], v) == 0) return;
  *list = kh_xrealloc(*list, (size_t)(*n + 1) * sizeof **list);
  (*list)[(*n)++] = kh_strdup(v);
}

static void filters(kh_buf *b, const krep_report *r) {
  char **lists[3] = {NULL, NULL, NULL};
  int ns[3] = {0, 0, 0};
  for (int i = 0; i < r->ntests; i++) {
    const krep_test *t = r->tests[i];
    uniq(&lists[0], &ns[0], krep_outcome_name(t->outcome));
    uniq(&lists[1], &ns[1], t->suite);
    char tag[256];
    for (const char *p = t->tags; next_tag(&p, tag, sizeof tag);) uniq(&lists[2], &ns[2], tag);
  }
  LIT(b, "<h2>Tests</h2><div class=\"filters\">");
  choice(b, "f-outcome", "status", lists[0], ns[0]);
  choice(b, "f-suite", "suite", lists[1], ns[1]);
  choice(b, "f-tag", "tag", lists[2], ns[2]);
  LIT(b, "<label>id <input id=\"f-text\" size=\"24\"></label>"
         "<span id=\"shown\"></span></div>\n");
  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < ns[k]; i++) free(lists[k][i]);
    free(lists[k]);
  }
}

/* The relative-error histogram of a check (records.h: KP_HIST_*), one bar
 * per decade, with the check's rtol marked. */
static void histogram(kh_buf *b, const kp_check *k) {
  double n[KP_HIST_BINS];
  int bins = kp_nums_get(k->hist, n, KP_HIST_BINS);
  if (bins != KP_HIST_BINS) return;
  double max = 0;
  for (int i = 0; i < bins; i++) max = fmax(max, n[i]);
  enum { W = 22, H = 90, TOP = 6, BASE = TOP + H };
  kh_buf_addf(b, "<svg class=\"hist\" width=\"%d\" height=\"%d\" role=\"img\">"
              "<title>relative error |a-e|/|e|, elements per decade</title>",
              bins * W + 10, BASE + 34);
  for (int i = 0; i < bins; i++) {
    double h = max > 0 ? H * n[i] / max : 0;
    char label[32];
    if (i == 0) snprintf(label, sizeof label, "0");
    else if (i == 1) snprintf(label, sizeof label, "<%d", (int)k->hist_lo);
    else if (i == bins - 1) snprintf(label, sizeof label, "&#8805;%d", (int)k->hist_lo + i - 2);
    else snprintf(label, sizeof label, "%d", (int)k->hist_lo + i - 2);
    kh_buf_addf(b, "<rect class=\"bin\" x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\">"
                "<title>%s: %.0f elements</title></rect><text x=\"%d\" y=\"%d\" "
                "text-anchor=\"middle\">%s</text>", 5 + i * W, BASE - h, W - 2, h,
                label, n[i], 5 + i * W + W / 2, BASE + 14, label);
  }
  if (k->rtol > 0) {
    double x = 5 + W * (2 + log10(k->rtol) - (double)k->hist_lo);
    if (x > 5 && x < 5 + bins * W)
      kh_buf_addf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#b3261e\" "
                  "stroke-dasharray=\"3 2\"/><text x=\"%.1f\" y=\"%d\">rtol</text>", x, TOP,
                  x, BASE, x + 2, TOP + 8);
  }
  kh_buf_addf(b, "<text x=\"5\" y=\"%d\">log10 relative error</text></svg>", BASE + 30);
}

/* The check's worst elements and its quantiles, under its row. */
static void distribution(kh_buf *b, const kp_check *k) {
  if (!k->hist && !k->worst_k_index) return;
  LIT(b, "<tr class=\"dist-row\"><td colspan=\"10\"><div class=\"dist\">");
  if (k->hist) histogram(b, k);
  double idx[KP_WORST_K], act[KP_WORST_K], exp_[KP_WORST_K];
  int n = k->worst_k_index ? kp_nums_get(k->worst_k_index, idx, KP_WORST_K) : 0;
  if (!k->worst_k_actual || kp_nums_get(k->worst_k_actual, act, KP_WORST_K) != n ||
      !k->worst_k_expected || kp_nums_get(k->worst_k_expected, exp_, KP_WORST_K) != n)
    n = 0;
  LIT(b, "<div>");
  kh_buf_addf(b, "<p>relative error over %lld elements: median %.3g, p90 %.3g, p99 %.3g, "
              "p99.9 %.3g, max %.3g</p><p>%lld over tolerance", k->rel_n, k->rel_p50,
              k->rel_p90, k->rel_p99, k->rel_p999, k->max_rel, k->over);
  if (k->budget > 0) kh_buf_addf(b, " (budget %lld)", k->budget);
  LIT(b, "</p>");
  if (n > 0) {
    LIT(b, "<table class=\"worst\"><tr><th>worst index</th><th>actual</th>"
           "<th>expected</th><th>abs error</th></tr>");
    for (int i = 0; i < n; i++)
      kh_buf_addf(b, "<tr><td class=num>%.0f</td><td class=num>%.9g</td><td class=num>%.9g"
                  "</td><td class=num>%.3g</td></tr>", idx[i], act[i], exp_[i],
                  fabs(act[i] - exp_[i]));
    LIT(b, "</table>");
  }
  LIT(b, "</div></div></td></tr>");
}

static void detail_checks(kh_buf *b, const krep__view *v) {
  if (!v->nchecks) return;
  LIT(b, "<table><tr><th>check</th><th>dtype</th><th>n</th><th>max abs</th>"
         "<th>max rel</th><th>atol</th><th>rtol</th><th>error/tol</th>"
         "<th>over</th><th>pass</th></tr>");
  for (int c = 0; c < v->nchecks; c++) {
    const kp_check *k = &v->checks[c];
    LIT(b, "<tr><td>"), text(b, k->name), LIT(b, "</td><td>");
    text(b, k->dtype);
    kh_buf_addf(b, "</td><td class=num>%lld</td>", k->n);
    double x[] = {k->max_abs, k->max_rel, k->atol, k->rtol, v->ratios[c]};
    for (int i = 0; i < 5; i++) {
      kh_buf_addf(b, "<td class=\"num%s\">", i == 4 && v->ratios[c] > 1 ? " bad" : "");
      number(b, x[i]);
      LIT(b, "</td>");
    }
    kh_buf_addf(b, "<td class=num>%lld</td><td class=\"%s\">%s</td></tr>", k->over,
                k->pass ? "o-pass" : "o-fail", k->pass ? "yes" : "NO");
    distribution(b, k);
  }
  LIT(b, "</table>");
}

static void detail_kernels(kh_buf *b, const krep__view *v) {
  if (!v->nkernels) return;
  LIT(b, "<table><tr><th>kernel</th><th>launches</th><th>total ms</th>"
         "<th>median ms</th></tr>");
  for (int k = 0; k < v->nkernels; k++) {
    LIT(b, "<tr><td>"), text(b, v->kernels[k].name);
    kh_buf_addf(b, "</td><td class=num>%llu</td><td class=num>", v->kernels[k].launches);
    number(b, v->kernels[k].total_ms);
    LIT(b, "</td><td class=num>");
    number(b, v->kernels[k].median_ms);
    LIT(b, "</td></tr>");
  }
  LIT(b, "</table>");
}

static void detail_metrics(kh_buf *b, const krep__view *v) {
  if (!v->nmetrics) return;
  LIT(b, "<table class=metrics><tr><th>metric</th><th>value</th><th>unit</th></tr>");
  for (int m = 0; m < v->nmetrics; m++) {
    LIT(b, "<tr><td>"), text(b, v->metrics[m].name);
    LIT(b, "</td><td class=num>");
    number(b, v->metrics[m].value);
    LIT(b, "</td><td>"), text(b, v->metrics[m].unit), LIT(b, "</td></tr>");
  }
  LIT(b, "</table>");
}

/* How it ran, with what its worker ran before it (a worker's run) or what
 * it confirms (a run alone after a worker's). */
static void detail_ran(kh_buf *b, const krep_report *rep, const krep_test *t) {
  char ran[200];
  krep_ran_text(rep, t, ran, sizeof ran);
  if (!*ran) return;
  LIT(b, "<p class=\"ran\">ran "), text(b, ran);
  const krep_test *w = krep_test_confirms(rep, t);
  const char *after = krep_test_note(w ? w : t, "worker_after");
  if (after) LIT(b, "; in the worker after "), text(b, *after ? after : "no other test");
  const char *alone = krep_test_note(t, "confirmed_alone");
  if (alone) LIT(b, "; confirmed alone: "), text(b, alone);
  LIT(b, "</p>");
}

static void detail(kh_buf *b, const krep_report *rep, const krep_test *t, const krep__view *v,
                   int row) {
  kh_buf_addf(b, "<tr class=\"detail hidden\" id=\"d-%d\"><td colspan=\"8\">", row);
  if (t->message && *t->message) {
    LIT(b, "<p><b>");
    if (t->file && *t->file) text(b, t->file), kh_buf_addf(b, ":%d: ", t->line);
    LIT(b, "</b>"), text(b, t->message), LIT(b, "</p>");
  }
  detail_ran(b, rep, t);
  detail_checks(b, v);
  detail_kernels(b, v);
  detail_metrics(b, v);
  LIT(b, "<p>log "), text(b, t->log_path && *t->log_path ? t->log_path : "(none)");
  LIT(b, "</p><pre class=\"log\">");
  text(b, t->log_tail);
  LIT(b, "</pre></td></tr>\n");
}

static void row(kh_buf *b, const krep_report *rep, const krep_test *t, int n) {
  krep__view v;
  krep__view_of(t, &v);
  double worst = NAN;
  for (int c = 0; c < v.nchecks; c++)
    if (isnan(worst) || v.ratios[c] > worst) worst = v.ratios[c];
  const char *o = krep_outcome_name(t->outcome);
  char tag[256];
  kh_buf_addf(b, "<tr class=\"test\" data-row=\"%d\" data-outcome=\"%s\" data-suite=\"", n, o);
  attr(b, t->suite), LIT(b, "\" data-tags=\"");
  int k = 0;
  for (const char *p = t->tags; next_tag(&p, tag, sizeof tag); k++) {
    if (k) LIT(b, " ");
    attr(b, tag);
  }
  LIT(b, "\" data-id=\""), attr(b, t->id), LIT(b, "\"><td>");
  text(b, t->id);
  LIT(b, "</td><td>");
  for (const char *p = t->tags; next_tag(&p, tag, sizeof tag);) LIT(b, " "), text(b, tag);
  kh_buf_addf(b, "</td><td class=\"o-%s\">%s%s</td><td>", o, o, t->final ? "" : " (retried)");
  char ran[200];
  krep_ran_text(rep, t, ran, sizeof ran);
  text(b, ran);
  kh_buf_addf(b, "</td><td class=num>%d/%d</td><td class=num>", t->repeat, t->attempt);
  number(b, t->wall_ms);
  LIT(b, "</td><td class=num>");
  number(b, worst);
  kh_buf_addf(b, "</td><td class=num>%d</td></tr>\n", v.nkernels);
  detail(b, rep, t, &v, n);
  krep__view_free(&v);
}

static void table(kh_buf *b, const krep_report *r) {
  filters(b, r);
  LIT(b, "<table id=\"tests\"><tr><th>test</th><th>tags</th><th>status</th><th>ran</th>"
         "<th>repeat/attempt</th><th>wall ms</th><th>worst error/tol</th>"
         "<th>kernels</th></tr>\n");
  for (int i = 0; i < r->ntests; i++) row(b, r, r->tests[i], i);
  LIT(b, "</table>\n");
}

int krep_html_write(const krep_report *rep, const krep_report *history, int nhistory,
                    const char *path, kh_err *err) {
  kh_buf b = {0};
  char start[40];
  iso(rep->start_s, start, sizeof start);
  LIT(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<title>kiln report ");
  text(&b, start);
  kh_buf_addf(&b, "</title><style>%s</style></head><body>\n", css);
  summary(&b, rep);
  plots(&b, rep, history, nhistory);
  table(&b, rep);
  kh_buf_addf(&b, "<script>%s</script></body></html>\n", js);
  int rc = krep__write_out(path, &b, err);
  kh_buf_free(&b);
  return rc;
}
