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

/* ---- The noise model of report diff (noise.c) --------------------------- */

/* A timed figure of one test in two reports: its samples (one per repeat),
 * and its medians on earlier nights. */
typedef struct krep__fig {
  const char *test, *what;  /* what: a kernel or metric name; NULL: the body */
  int kind;                 /* diff.c's: body, kernel, metric */
  const char *unit;         /* a metric's */
  int higher_better;        /* a throughput */
  const double *b, *n;      /* samples, base and new */
  int nb, nn;
  const double *h;          /* medians on earlier nights (NAN: absent) */
  int nh;
  /* Set by krep__noise_judge: */
  int used;                 /* both runs have positive samples */
  double base, neu;         /* medians */
  double shift;             /* ln(new/base), + worse (a throughput: lower) */
  double excess;            /* shift beyond the run-wide shift */
  double var;               /* pooled variance of its log samples */
  int dof;
  double df, se, noise;     /* noise: of the excess, log units */
  double p;                 /* one-sided chance of an excess this large from
                               noise alone; 1 when not judged */
} krep__fig;

typedef struct krep__noise {
  int nfig;                 /* figures judged */
  double run_shift;         /* the median shift: run-wide */
  double prior_var;         /* the typical figure's variance */
  double lambda;            /* how much more figures moved than their spread said */
  int nhist;
  int run_judged;           /* against history */
  double run_noise, run_p;
} krep__noise;

double krep__median(double *v, int n);   /* sorts v */
/* P(T > t) for Student's t with df degrees of freedom. */
double krep__t_tail(double t, double df);
void krep__noise_judge(krep__fig *f, int n, krep__noise *out);
/* Judges out->run_shift against the run-wide shifts of earlier nights
 * against the base (hist_shift, nhist of them). */
void krep__noise_run(const double *hist_shift, int nhist, krep__noise *out);

/* ---- report diff's findings (diff.c finds, diff-out.c writes) ----------- */

/* X(enum, name, is a regression, summary heading) */
#define KREP__FIND_MAP(X)                                        \
  X(NEWLY_FAILING, "newly_failing", 1, "newly failing")          \
  X(NEWLY_FLAKY, "newly_flaky", 1, "newly flaky")                \
  X(NEWLY_POLLUTED, "newly_polluted", 1, "newly polluted")       \
  X(SLOWER_RUN, "slower_run", 1, "slower run")                   \
  X(SLOWER_TEST, "slower_test", 1, "slower test")                \
  X(SLOWER_KERNEL, "slower_kernel", 1, "slower kernel")          \
  X(ERROR_GROWTH, "error_growth", 1, "error growth")             \
  X(LOWER_METRIC, "lower_metric", 1, "lower metric")             \
  X(THROTTLED, "throttled", 0, "throttled")                      \
  X(FIXED, "fixed", 0, "fixed")                                  \
  X(STILL_FAILING, "still_failing", 0, "still failing")          \
  X(STILL_POLLUTED, "still_polluted", 0, "still polluted")       \
  X(NEW_TEST, "new_test", 0, "new test")                         \
  X(REMOVED_TEST, "removed_test", 0, "removed test")

enum {
#define KREP__FE(e, n, r, h) F_##e,
  KREP__FIND_MAP(KREP__FE)
#undef KREP__FE
  KREP__NFIND
};

typedef struct krep__find_kind {
  const char *name, *heading;
  int regression;
} krep__find_kind;
extern const krep__find_kind krep__find_kinds[KREP__NFIND];

typedef struct krep__finding {
  int kind;
  int as;                   /* throttled: the speed kind it would have been */
  const char *test, *what;  /* kernel, check or metric name, or NULL */
  double base, neu;         /* ms, max abs error or metric; NAN when n/a */
  double ratio;             /* check: error/tolerance in NEW */
  const char *unit;         /* metric */
  const krep_test *rec;     /* NEW's record (the first failing one for a
                               failure; BASE's for removed) */
  int failed, repeats;      /* a failure: repeats that failed, of all */
  /* A failure or a polluted run: how it ran in BASE (its record there,
   * with its outcome; -1: none) and in NEW (krep_ran_text); "" unknown. */
  char ran_base[160], ran_new[160];
  int base_outcome;
  int failed_repeat[8];
  int speed;                /* a speed finding: fig holds its judgment */
  krep__fig fig;
  double p;                 /* speed: the chance noise alone did it */
} krep__finding;

typedef struct krep__findings {
  krep__finding *f;
  int n;
  int counts[KREP__NFIND];
  krep__noise noise;        /* the speed judgment over every figure */
  double p_needed;          /* a figure counts at p at most this */
} krep__findings;

void krep__diff_summary(FILE *out, const krep_report *b, const krep_report *n,
                        const krep_diff_opts *o, const krep__findings *fs, int regressions);
int krep__diff_yaml(const krep_report *b, const krep_report *n, const krep_diff_opts *o,
                    const krep__findings *fs, int regressions, kh_err *err);

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
