/* Internals of the report room (prefix krep__), shared by its files and
 * seen by no other room.
 */
#ifndef KILN_PARENT_REPORT_IMPL_H
#define KILN_PARENT_REPORT_IMPL_H

#include "report.h"

/* Memory from the report's pool, freed with the report. */
void *krep__alloc(krep_pool *p, size_t n);
/* Forgets the last test run (a journal's run that never finished). */
void krep__drop_last(krep_report *rep);
/* The records a test lists under a key of its own, in the report's order:
 * tag and key ("kernel", "kernels"). A new record type a test should list
 * is a row here; write.c and read.c go by the table. */
typedef struct krep__list {
  const char *tag, *key;
} krep__list;
extern const krep__list krep__lists[];
extern const int krep__nlists;
/* 1 for a record tag the model keeps: phase, device and memory (written
 * in a test's times, device and memory keys) and the listed ones. */
int krep__kept_tag(const char *tag);

/* Appends text to b as XML character data (attr: for an attribute value),
 * dropping what XML 1.0 cannot hold: control characters, invalid UTF-8,
 * U+FFFE/U+FFFF and surrogates become '?'. JUnit and HTML use it. */
void krep__xml_text(kh_buf *b, const char *text, int attr);
/* Writes data to path atomically ("-": stdout). */
int krep__write_out(const char *path, const kh_buf *b, kh_err *err);

/* A number as the YAML writer spells it (".nan", "1.0e+20"), back in the
 * protocol's spelling ("nan", "1.0e+20"): what a reader keeps as a
 * record's value. */
const char *krep__yaml_to_protocol(const char *text);

/* The check's error against its tolerance at the worst element:
 * |actual - expected| / (atol + rtol*|expected|); 1 = at the limit. */
double krep__check_ratio(const kp_check *c);

/* ---- A test's records, decoded (diff and HTML) -------------------------- */

typedef struct krep__view {
  kp_check *checks;
  double *ratios;           /* krep__check_ratio of each check */
  int nchecks;
  kp_kernel *kernels;
  int nkernels;
  kp_metric *metrics;
  int nmetrics;
  double body_ms;           /* the body phase; NAN when the child sent none */
} krep__view;

void krep__view_of(const krep_test *t, krep__view *v);
void krep__view_free(krep__view *v);

/* ---- SVG for the HTML page (html-svg.c) ----------------------------------- */

enum { KREP__SVG_W = 560, KREP__SVG_H = 260, KREP__SVG_L = 150, KREP__SVG_R = 16,
       KREP__SVG_T = 12, KREP__SVG_B = 40 };

typedef struct krep__pt {
  double x, y;              /* y: value (log plots: positive) */
  const char *label;        /* axis label (bars, trends) */
  char title[256];          /* hover text */
  int bad;
} krep__pt;

typedef struct krep__axis {
  int log;
  double lo, hi;            /* linear: values; log: decades */
} krep__axis;

void krep__svg_open(kh_buf *b, const char *id, const char *caption);
void krep__svg_close(kh_buf *b);
/* Horizontal bars: one per point, label at the left. */
void krep__svg_bars(kh_buf *b, const char *id, const char *caption,
                    const krep__pt *p, int n, const char *unit);
double krep__svg_y(const krep__axis *a, double v);
void krep__svg_yaxis(kh_buf *b, const krep__axis *a, const char *unit);
/* Decades spanning the positive values (zero is drawn at the floor). */
krep__axis krep__svg_log_axis(const krep__pt *p, int n);
/* Points over x in 0..1 with a y axis; line: join them (trends). */
void krep__svg_points(kh_buf *b, const krep__pt *p, int n, const krep__axis *a,
                      int line);

#endif
