/* Drawing for the HTML report: inline SVG bars, axes and points, each
 * data point with a <title> for its hover text. No script, no external
 * resource. */
#include "report-impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LIT(b, s) kh_buf_add((b), (s), sizeof(s) - 1)

static void text(kh_buf *b, const char *s) { krep__xml_text(b, s, 0); }

static void svg_open_h(kh_buf *b, const char *id, const char *caption, int h) {
  kh_buf_addf(b, "<figure><figcaption>%s</figcaption><svg id=\"%s\" width=\"%d\" "
               "height=\"%d\" viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">\n",
               caption, id, KREP__SVG_W, h, KREP__SVG_W, h);
}

void krep__svg_open(kh_buf *b, const char *id, const char *caption) {
  svg_open_h(b, id, caption, KREP__SVG_H);
}

void krep__svg_close(kh_buf *b) { LIT(b, "</svg></figure>\n"); }

/* Horizontal bars: one per point, label at the left. */
void krep__svg_bars(kh_buf *b, const char *id, const char *caption,
                     const krep__pt *p, int n, const char *unit) {
  double max = 0, row = 24;
  for (int i = 0; i < n; i++) max = fmax(max, p[i].y);
  svg_open_h(b, id, caption, KREP__SVG_T * 2 + (int)row * (n ? n : 1));
  for (int i = 0; i < n; i++) {
    double w = max > 0 ? p[i].y / max * (KREP__SVG_W - KREP__SVG_L - KREP__SVG_R - 60) : 0;
    double y = KREP__SVG_T + i * row;
    kh_buf_addf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", KREP__SVG_L - 6, y + row * 0.65);
    text(b, p[i].label);
    kh_buf_addf(b, "</text><rect class=\"pt bar\" x=\"%d\" y=\"%.1f\" width=\"%.1f\" "
                 "height=\"%.1f\" fill=\"#4c78a8\"><title>", KREP__SVG_L, y + 2, w, row - 4);
    text(b, p[i].title);
    kh_buf_addf(b, "</title></rect><text x=\"%.1f\" y=\"%.1f\">%.3g %s</text>\n",
                 KREP__SVG_L + w + 4, y + row * 0.65, p[i].y, unit);
  }
  krep__svg_close(b);
}

double krep__svg_y(const krep__axis *a, double v) {
  double t = a->log ? (log10(v) - a->lo) / (a->hi - a->lo) : (v - a->lo) / (a->hi - a->lo);
  if (t < 0) t = 0;
  if (t > 1) t = 1;
  return KREP__SVG_H - KREP__SVG_B - t * (KREP__SVG_H - KREP__SVG_T - KREP__SVG_B);
}

void krep__svg_yaxis(kh_buf *b, const krep__axis *a, const char *unit) {
  int L = 60;
  kh_buf_addf(b, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>\n", L,
               KREP__SVG_T, L, KREP__SVG_H - KREP__SVG_B);
  for (int i = 0; i <= 4; i++) {
    double v = a->log ? pow(10, a->lo + (a->hi - a->lo) * i / 4.0)
                      : a->lo + (a->hi - a->lo) * i / 4.0;
    if (a->log && (a->hi - a->lo) >= 4) v = pow(10, round(log10(v)));
    double y = krep__svg_y(a, v);
    kh_buf_addf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#eee\"/>"
                 "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.3g%s</text>\n", L, y,
                 KREP__SVG_W - KREP__SVG_R, y, L - 4, y + 4, v, unit);
  }
}

/* Decades spanning the positive values (zero is drawn at the floor). */
krep__axis krep__svg_log_axis(const krep__pt *p, int n) {
  double lo = 1, hi = 1;
  for (int i = 0; i < n; i++)
    if (p[i].y > 0 && isfinite(p[i].y)) lo = fmin(lo, p[i].y), hi = fmax(hi, p[i].y);
  krep__axis a = {1, floor(log10(lo)), ceil(log10(hi))};
  if (a.lo < -9) a.lo = -9;
  if (a.hi <= a.lo) a.hi = a.lo + 1;
  return a;
}

/* Points over x in 0..n-1 with a y axis; line: join them (trends). */
void krep__svg_points(kh_buf *b, const krep__pt *p, int n, const krep__axis *a, int line) {
  int L = 60;
  double span = KREP__SVG_W - KREP__SVG_R - L - 60;
  if (line && n > 1) {
    LIT(b, "<polyline fill=\"none\" stroke=\"#4c78a8\" points=\"");
    for (int i = 0; i < n; i++)
      kh_buf_addf(b, "%.1f,%.1f ", L + 30 + span * p[i].x, krep__svg_y(a, p[i].y));
    LIT(b, "\"/>\n");
  }
  for (int i = 0; i < n; i++) {
    double x = L + 30 + span * p[i].x;
    double v = a->log && !(p[i].y > 0) ? pow(10, a->lo) : p[i].y;
    kh_buf_addf(b, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\">"
                 "<title>", x, krep__svg_y(a, v), line ? 4 : 3,
                 p[i].bad ? "#b3261e" : "#4c78a8");
    text(b, p[i].title);
    LIT(b, "</title></circle>\n");
    if (line && p[i].label) {
      kh_buf_addf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", x, KREP__SVG_H - KREP__SVG_B + 16);
      text(b, p[i].label);
      LIT(b, "</text>\n");
    }
  }
}

