/* What the perf suite's files share: the table of cases (cases.c), the
 * method (method.c: sizes, rotation, event timing, metrics, sampled
 * checks) and the case functions of each family of benchmarks (memory.c,
 * flop.c, decode.c) that the tests in perf.c run over the table's rows.
 */
#ifndef KILN_SUITES_PERF_H
#define KILN_SUITES_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

/* ---- The table of cases (cases.c) ------------------------------------------ */

/* Dtype bits of a row. */
#define PERF_F32 1u
#define PERF_F16 2u
#define PERF_BF16 4u
#define PERF_ALL (PERF_F32 | PERF_F16 | PERF_BF16)

/* One row: a benchmark at one shape, run once per dtype in `dtypes`.
 * Fields left out are 0. scripts/torch-compare.py reads these rows too. */
typedef struct perf_case {
  const char *test;         /* the perf test that runs it (perf.c) */
  const char *bench;        /* metric prefix; _b<batch>, _s<seq> appended */
  unsigned dtypes;          /* PERF_F32 | PERF_F16 | PERF_BF16 */
  int64_t batch;            /* B (decode) */
  int64_t seq, seq_host;    /* S on a GPU / in emulation; 0: from the target */
  int64_t cols;             /* row length (row kernels, copy, MX dequant) */
  int64_t heads, heads_host; /* (query) heads; heads_host 0: heads */
  int64_t kv_heads;         /* K/V heads (kv_repeat, decode) */
  int64_t head_dim;         /* D */
  int causal;               /* attention: causal mask */
  int round_p;              /* attention: P may be rounded (kiln/attention.h) */
  const char *fmt;          /* MX element format: "mxfp4", "mxfp6_e2m3" */
} perf_case;

extern const perf_case perf_cases[];
extern const size_t perf_ncases;
extern const int64_t perf_target_mib, perf_target_mib_host;

/* ---- Method (method.c) ------------------------------------------------------ */

#define PERF_MAX_SETS 64    /* rotation sets at most */

typedef struct perf_cfg {
  int host;                 /* host emulation: small sizes, few launches */
  size_t l2_bytes;
  int64_t target;           /* bytes a memory-bound launch must move */
  int warmup, iters;        /* launches before timing, launches timed */
  int samples;              /* rows the correctness check compares */
} perf_cfg;

perf_cfg perf_config(void);

/* One row of the table at one dtype, sized for this backend: what a case
 * function measures and what its figures are recorded under. */
typedef struct perf_run {
  const perf_case *pc;
  ke_dtype dt;
  int64_t seq, heads;       /* the row's, host emulation's where it has one */
  char bench[64];           /* BENCH[_b<batch>][_s<seq>] */
  char shape[96];           /* the case function writes it */
  int nsets;                /* rotation sets, from set_bytes (perf_sets) */
  int64_t set_bytes;        /* device bytes of one set */
  double bytes;             /* memory bound: the bytes that must move; */
  double flop;              /* else the FLOP of one launch */
  double *copy_gbps;        /* the copy measured in this test (the ratio's base) */
} perf_run;

typedef void (*perf_case_fn)(const perf_cfg *c, perf_run *r);

/* Runs fn on every row of the table whose test is `test`, once per dtype,
 * in table order. vs_copy: measure the copy first (not recorded), the base
 * of the memory-bound ratio_to_copy. */
void perf_run_cases(const char *test, perf_case_fn fn, int vs_copy);

/* The next row of `test` after *i (start at 0), NULL after the last. */
const perf_case *perf_next_case(const char *test, size_t *i);
void perf_run_init(perf_run *r, const perf_cfg *c, const perf_case *pc,
                   ke_dtype dt, double *copy_gbps);

/* Rows so that rows * bytes_per_row >= the target. */
int64_t perf_rows(const perf_cfg *c, int64_t bytes_per_row);
/* r->nsets from r->set_bytes: together at least twice the L2, at least 2. */
void perf_sets(const perf_cfg *c, perf_run *r);

typedef void (*perf_launch_fn)(void *bench, int set);
/* Median event time (ms) of `kernel` over the timed launches. */
double perf_time(const perf_cfg *c, const char *kernel, perf_launch_fn fn,
                 void *bench, int nsets);
/* Records the run's figures for a median of ms: shape, bytes, GB/s and
 * ratio to copy (memory bound, r->bytes) or FLOP, TFLOP/s and the ratio
 * to the device's peak (r->flop); and the rotation's bytes. */
void perf_record(const perf_run *r, double ms);
/* BENCH.DTYPE.what = value [unit] */
void perf_metric(const perf_run *r, const char *what, double value,
                 const char *unit);

/* ---- Buffers and sampled checks --------------------------------------------- */

/* One tensor per rotation set. The big buffers are plain engine tensors;
 * the small ones the checks compare are guarded (kt_alloc). */
typedef struct perf_set {
  ke_tensor t[PERF_MAX_SETS];
  int n;
} perf_set;

void perf_set_alloc(perf_set *s, int n, ke_dtype dt, int rank,
                    const int64_t *shape, int fill);
void perf_set_free(perf_set *s);

/* One MX matrix (device bytes) per rotation set. */
typedef struct perf_mx_sets {
  ke_mxfp_matrix w[PERF_MAX_SETS];
  int n;
} perf_mx_sets;

/* Random codes (every one valid) and scales 117..137 (2^-10 .. 2^10, every
 * value finite in every output dtype). */
void perf_mx_random(unsigned char *data, size_t nd, unsigned char *scales,
                    size_t ns);
/* n sets of a [rows, cols] matrix in fmt, each with fresh random bytes;
 * the last set's bytes stay in data/scales (host, nd and ns bytes). */
void perf_mx_alloc(perf_mx_sets *m, int n, ke_mxfp_format fmt, int64_t rows,
                   int64_t cols, unsigned char *data, unsigned char *scales);
void perf_mx_free(perf_mx_sets *m);
ke_mxfp_format perf_mx_format(const perf_case *pc);

/* n row indices of a matrix of `rows`: the first, the last, and random
 * ones between (fresh each call). */
void perf_sample(int64_t rows, int n, int64_t *idx);
/* The sampled rows (of cols elements, packed) as doubles. */
double *perf_rows_doubles(const ke_tensor *from, int64_t cols,
                          const int64_t *idx, int n);
/* Elements [first, first + n) of a tensor as doubles, in one copy. */
double *perf_span_doubles(const ke_tensor *t, int64_t first, int64_t n);
double *perf_doubles(size_t n);
/* Checks the sampled rows of `out` against ref, named BENCH_DTYPE. */
void perf_check(const perf_run *r, const ke_tensor *out, int64_t cols,
                const int64_t *idx, int n, const double *ref, kt_tol tol);

/* ---- Case functions --------------------------------------------------------- */

/* memory.c; perf_copy_gbps: GB/s of the table's copy row (read +
 * written), measured and not recorded: the base of ratio_to_copy. */
double perf_copy_gbps(const perf_cfg *c);
void perf_copy_case(const perf_cfg *c, perf_run *r);
void perf_row_case(const perf_cfg *c, perf_run *r);
void perf_rope_case(const perf_cfg *c, perf_run *r);
void perf_kv_case(const perf_cfg *c, perf_run *r);
void perf_mx_dequant_case(const perf_cfg *c, perf_run *r);
/* flop.c */
void perf_gemm_case(const perf_cfg *c, perf_run *r);
void perf_mx_gemm_case(const perf_cfg *c, perf_run *r);
void perf_attention_case(const perf_cfg *c, perf_run *r);
/* Fused attention's bound (docs/kernels-attention.md) for nq query rows
 * over sk keys, widened to the dtype's defaults for 16-bit outputs, and
 * for P's rounding where round_p. */
kt_tol perf_attn_tol(ke_dtype dt, const double *q, int nq, const double *k,
                     const double *v, int64_t sk, int64_t d, int round_p);
/* decode.c */
void perf_decode_case(const perf_cfg *c, perf_run *r);
void perf_decode_sweep(void);

#endif
