/* What the MXFP suite's files share (mxfp-check.c): the element formats
 * as the spec tabulates them, host and device MX matrices, the exact
 * dequantisation check, the encoder's nearest-value check and one fused
 * GEMM case against the double reference.
 */
#ifndef KILN_SUITES_MXFP_CHECK_H
#define KILN_SUITES_MXFP_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "kiln/kernels.h"
#include "kiln/test.h"

/* E2M1, E2M3, E3M2. */
extern const ke_mxfp_format mx_formats[3];
extern const kt_tol mx_exact; /* atol = rtol = 0 */

/* The element formats as the spec tabulates them, written out here rather
 * than derived, so that the reference decoder is checked against them. */
typedef struct format_facts {
  int bits, mbits, emin, emax;
  double max_normal;
  const double *positive; /* values of codes 0 .. 2^(bits-1) - 1 */
} format_facts;
format_facts facts(ke_mxfp_format f);

/* splitmix64: the suite's own stream, seeded from kt_seed(). */
uint64_t rng_next(uint64_t *s);

/* A host MX matrix with its own buffers (zeroed). */
ke_mxfp_matrix mx_host(ke_mxfp_format f, int64_t rows, int64_t cols);
void mx_host_free(ke_mxfp_matrix *w);
/* Packs code as element i of a zeroed row, bit by bit from the layout in
 * kiln/mxfp.h (a third implementation, beside the reference and kernel). */
void pack_code(uint8_t *row, int bits, int64_t i, unsigned code);
/* rows x cols fresh N(0, 1) values, drawn on the device as f32. */
double *mx_normal_doubles(int64_t rows, int64_t cols);
/* Random data bytes, and scale bytes scale_lo + (0 .. scale_span - 1). */
void mx_random_fill(ke_mxfp_matrix *w, uint64_t *rng, unsigned scale_lo,
                    unsigned scale_span);

/* A device copy of a host MX matrix. data_pad and scale_pad bytes of
 * guard sit before and after each buffer, filled with guard_byte; with
 * pad 0 the buffer is exactly the data, so its last block ends where the
 * allocation ends (a read past it is an ASan / compute-sanitizer error). */
typedef struct mx_device {
  ke_mxfp_matrix w;
  void *data_base, *scale_base;
} mx_device;

void mx_upload(mx_device *d, const ke_mxfp_matrix *host, size_t data_pad,
               size_t scale_pad, int guard_byte);
void mx_device_free(mx_device *d);

/* Dequantises d on the device into [rows, cols + gap] (a view of width
 * cols) of dtype dt and checks it exactly against the reference decode of
 * host; the gap columns must keep their random contents. */
void check_dequant(const char *what, const mx_device *d,
                   const ke_mxfp_matrix *host, ke_dtype dt, int64_t gap);

/* The encoder's largest allowed error on x under scale byte s. */
double roundtrip_bound(const format_facts *ff, int s, double x);
/* Every decoded element a nearest value of its input, ties to even, within
 * roundtrip_bound; returns the largest error relative to the bound. */
double check_nearest(ke_mxfp_format f, const double *x,
                     const ke_mxfp_matrix *w, const double *dec);
/* Quantises one block of 32 values and returns its scale byte; codes[i]
 * receives element i's code. */
unsigned quantize_block(ke_mxfp_format f, const double *x, unsigned *codes);

/* Runs the fused GEMM of x [m, k] against d and returns Y as doubles. */
double *mx_gemm_doubles(const ke_tensor *x, const mx_device *d, ke_dtype ty);

/* One fused GEMM: X [batch, m, k] of tx (x_off: a view that many elements
 * into rows of k + 8), W [n, k] quantised from fresh normal weights with
 * its bytes w_off into their allocations, Y of ty. */
typedef struct mx_gemm_case {
  int64_t batch, m, k, n;
  ke_dtype tx, ty;
  int64_t x_off;
  size_t w_off;
} mx_gemm_case;
void check_mx_gemm(ke_mxfp_format f, const mx_gemm_case *c);

#endif
