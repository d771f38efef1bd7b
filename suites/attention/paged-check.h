/* What the paged attention suite's files share (paged-check.c): a case,
 * the batch built from it (cache blocks shuffled, unused slots NaN), the
 * call, the reference and the check of one case.
 */
#ifndef KILN_SUITES_PAGED_CHECK_H
#define KILN_SUITES_PAGED_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "attention-check.h"
#include "kiln/kernels.h"
#include "kiln/test.h"

typedef struct pa_case {
  int64_t num_seqs;
  const int32_t *lens;
  int64_t num_heads, num_kv_heads, head_dim, block_size;
  ke_dtype q_dtype, kv_dtype, out_dtype;
  int64_t spare_blocks;   /* physical blocks no table names */
  int64_t table_slack;    /* table columns past the longest sequence */
  int workspace;          /* pass a workspace: the split path */
  float scale;            /* 0: the default 1/sqrt(head_dim) */
  float q_std;            /* 0: 1 */
} pa_case;

typedef struct pa_inputs {
  ke_paged_attention_dims dims;
  int32_t *lens, *tables;        /* host copies */
  int32_t *d_lens, *d_tables;    /* device */
  ke_tensor q, k, v, out;
  void *ws;
  size_t ws_bytes;
} pa_inputs;

/* Tolerances by output dtype; f32's grow with the scores' spread
 * (paged-check.c says why). */
kt_tol pa_tol(ke_dtype out, double spread);

/* Writes 0xFF bytes (NaN in f32, f16 and bf16) over n bytes of device
 * memory with a plain copy. */
void pa_fill_nan_bytes(void *dst, size_t n);
/* Fresh inputs for c: lengths, shuffled block tables, caches whose unused
 * slots are NaN, an output of NaN bytes, a workspace when c asks. */
void pa_build(const pa_case *c, pa_inputs *in);
void pa_release(pa_inputs *in);
ke_paged_attention_params pa_params(const pa_case *c, const pa_inputs *in);
int pa_call(const pa_inputs *in, const ke_paged_attention_params *p);
/* The reference on the inputs as the device holds them; malloc'd. */
double *pa_reference(const pa_inputs *in, const ke_paged_attention_params *p);
/* The kernel on in, its output against the reference ("what" names it). */
void pa_run_check(const pa_case *c, pa_inputs *in, const char *what);
void pa_check(const pa_case *c, const char *what);
/* GQA 4 (8 query heads over 2 KV heads), head_dim 128, block_size 16,
 * f32, three spare blocks. */
pa_case pa_default(int64_t num_seqs, const int32_t *lens);

/* The refusal tests (paged-refusals.c). */
void pa_refusals(void);
void pa_workspace_refusals(void);
void pa_host_tables(void);

/* Median time of n calls, as the engine's event timing sees it. */
double pa_median_ms(const pa_inputs *in, const ke_paged_attention_params *p,
                    int n);
/* Writes one element of a cache in its own dtype with a plain copy. */
void pa_poke(ke_tensor *t, int64_t index, float value);
/* Element (kv_head, token, d) of sequence s in a cache. */
int64_t pa_index(const pa_inputs *in, int64_t s, int64_t kv_head,
                 int64_t token, int64_t d);

#endif
