/* The perf suite's decode benchmarks: one query token per sequence over a
 * long KV cache, dense (ke_attention on [B, H, S, D] tensors, the
 * split-key decode kernel) and paged (ke_paged_attention without a
 * workspace: blocks of 16 tokens in a shuffled physical order, the
 * engine's scratch, host copies of the lengths and tables in params; the
 * call that reads them back instead is timed too, readback_GBps). The bytes that count are the K and V caches, read
 * once: 2 B Hkv S D element sizes (q and o are 1/S of that). Also the
 * sweep of the split's knobs over the same rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/test-tuning.h"
#include "perf/perf.h"

#define PERF_DEC_BLOCK 16

typedef struct dec_bench {
  int paged;
  int readback; /* paged: no host copies in params, the tables read back */
  int64_t s, hkv, d;
  perf_set q, k, v, o;
  int32_t *tables, *lens;      /* host */
  int32_t *d_tables, *d_lens;  /* device, shared by the sets */
  int64_t blocks_per_seq;
} dec_bench;

static void dec_launch(void *p, int set) {
  dec_bench *d = p;
  ke_context *ctx = kt_ctx();
  if (!d->paged) {
    kt_assert_ok(ke_attention(ctx, &d->q.t[set], &d->k.t[set], &d->v.t[set],
                              &d->o.t[set], NULL));
    return;
  }
  ke_paged_attention_params pp;
  ke_paged_attention_params_init(&pp);
  if (!d->readback) {
    pp.host_seq_lens = d->lens;
    pp.host_block_tables = d->tables;
  }
  kt_assert_ok(ke_paged_attention(ctx, &d->q.t[set], &d->k.t[set],
                                  &d->v.t[set], d->d_tables,
                                  d->blocks_per_seq, d->d_lens, &d->o.t[set],
                                  &pp));
}

/* K or V of (sequence b, KV head hk) of set 0 as packed [S, D] doubles. */
static double *dec_kv_doubles(const dec_bench *d, const ke_tensor *t,
                              int64_t b, int64_t hk) {
  const int64_t S = d->s, D = d->d, HKV = d->hkv;
  if (!d->paged) return perf_span_doubles(t, (b * HKV + hk) * S * D, S * D);
  double *out = perf_doubles((size_t)(S * D));
  for (int64_t i = 0; i * PERF_DEC_BLOCK < S; i++) {
    const int64_t blk = d->tables[b * d->blocks_per_seq + i];
    const int64_t n = S - i * PERF_DEC_BLOCK < PERF_DEC_BLOCK
                          ? S - i * PERF_DEC_BLOCK : PERF_DEC_BLOCK;
    double *part = perf_span_doubles(
        t, (blk * HKV + hk) * PERF_DEC_BLOCK * D, n * D);
    memcpy(out + i * PERF_DEC_BLOCK * D, part, (size_t)(n * D) * sizeof *out);
    free(part);
  }
  return out;
}

/* The paged cache: physical blocks dealt out in a random order (kt_seed
 * draws), every sequence S tokens long. */
static void dec_paged_alloc(dec_bench *d, int64_t B, ke_dtype dt, int nsets,
                            int64_t hq) {
  d->blocks_per_seq = (d->s + PERF_DEC_BLOCK - 1) / PERF_DEC_BLOCK;
  const int64_t nblocks = B * d->blocks_per_seq;
  d->tables = malloc((size_t)nblocks * sizeof *d->tables);
  d->lens = malloc((size_t)B * sizeof *d->lens);
  ck_assert(d->tables && d->lens);
  for (int64_t i = 0; i < nblocks; i++) d->tables[i] = (int32_t)i;
  for (int64_t i = nblocks - 1; i > 0; i--) {
    const int64_t j = (int64_t)(kt_seed() % (uint64_t)(i + 1));
    const int32_t t = d->tables[i];
    d->tables[i] = d->tables[j];
    d->tables[j] = t;
  }
  for (int64_t b = 0; b < B; b++) d->lens[b] = (int32_t)d->s;
  kt_assert_ok(ke_malloc(kt_ctx(), (void **)&d->d_tables,
                         (size_t)nblocks * sizeof(int32_t)));
  kt_assert_ok(ke_malloc(kt_ctx(), (void **)&d->d_lens,
                         (size_t)B * sizeof(int32_t)));
  kt_assert_ok(ke_copy_to_device(kt_ctx(), d->d_tables, d->tables,
                                 (size_t)nblocks * sizeof(int32_t)));
  kt_assert_ok(ke_copy_to_device(kt_ctx(), d->d_lens, d->lens,
                                 (size_t)B * sizeof(int32_t)));
  int64_t qs[3] = {B, hq, d->d};
  int64_t cs[4] = {nblocks, d->hkv, PERF_DEC_BLOCK, d->d};
  perf_set_alloc(&d->q, nsets, dt, 3, qs, 1);
  perf_set_alloc(&d->k, nsets, dt, 4, cs, 1);
  perf_set_alloc(&d->v, nsets, dt, 4, cs, 1);
  perf_set_alloc(&d->o, nsets, dt, 3, qs, 0);
}

/* Sampled query rows (b, h), each against its KV head's whole cache. */
static void dec_check(const perf_cfg *c, const perf_run *r, dec_bench *d,
                      int64_t B, int64_t HQ) {
  const int64_t S = d->s, D = d->d, HKV = d->hkv;
  const int n = c->host || c->samples < 8 ? c->samples : 8;
  int64_t idx[64];
  perf_sample(B * HQ, n, idx);
  dec_launch(d, 0);
  double *qd = perf_rows_doubles(&d->q.t[0], D, idx, n);
  double *ref = perf_doubles((size_t)n * (size_t)D);
  kt_tol tol = {0, 0, 0, 0};
  ke_attention_params p;
  ke_attention_params_init(&p);
  for (int i = 0; i < n; i++) {
    const int64_t b = idx[i] / HQ, hk = idx[i] % HQ / (HQ / HKV);
    double *kd = dec_kv_doubles(d, &d->k.t[0], b, hk);
    double *vd = dec_kv_doubles(d, &d->v.t[0], b, hk);
    ke_attention_ref(qd + (size_t)i * D, kd, vd, ref + (size_t)i * D, 1, 1, 1,
                     1, S, D, &p);
    kt_tol t = perf_attn_tol(r->dt, qd + (size_t)i * D, 1, kd, vd, S, D, 0);
    if (t.atol > tol.atol) tol.atol = t.atol;
    if (t.rtol > tol.rtol) tol.rtol = t.rtol;
    free(vd);
    free(kd);
  }
  perf_check(r, &d->o.t[0], D, idx, n, ref, tol);
  free(ref);
  free(qd);
}

/* Measures one case; with the knobs away from their defaults (the sweep)
 * it records only BENCH.DTYPE.bpmN_mcM_GBps. */
void perf_decode_case(const perf_cfg *c, perf_run *r) {
  const int64_t B = r->pc->batch, HQ = r->heads;
  const ke_dtype dt = r->dt;
  const int64_t es = (int64_t)ke_dtype_size(dt);
  dec_bench d;
  memset(&d, 0, sizeof d);
  d.paged = strcmp(r->pc->test, "paged_decode") == 0;
  d.s = r->seq;
  d.hkv = r->pc->kv_heads;
  d.d = r->pc->head_dim;
  const int64_t S = d.s, HKV = d.hkv, D = d.d;
  const int64_t kv_bytes = 2 * B * HKV * S * D * es;
  r->set_bytes = kv_bytes + 2 * B * HQ * D * es;
  perf_sets(c, r);
  if (!d.paged) {
    int64_t qs[4] = {B, HQ, 1, D}, ks[4] = {B, HKV, S, D};
    perf_set_alloc(&d.q, r->nsets, dt, 4, qs, 1);
    perf_set_alloc(&d.k, r->nsets, dt, 4, ks, 1);
    perf_set_alloc(&d.v, r->nsets, dt, 4, ks, 1);
    perf_set_alloc(&d.o, r->nsets, dt, 4, qs, 0);
  } else {
    dec_paged_alloc(&d, B, dt, r->nsets, HQ);
  }

  double ms = perf_time(c, d.paged ? "paged_attention" : "attention_decode",
                        dec_launch, &d, r->nsets);
  snprintf(r->shape, sizeof r->shape,
           "q %lldx%lldx1x%lld, kv %lldx%lldx%lldx%lld", (long long)B,
           (long long)HQ, (long long)D, (long long)B, (long long)HKV,
           (long long)S, (long long)D);
  ke__decode_tuning tun, def;
  kt_assert_ok(ke__decode_tuning_get(kt_ctx(), &tun));
  ke__decode_tuning_defaults(&def);
  if (memcmp(&tun, &def, sizeof tun) == 0) {
    r->bytes = (double)kv_bytes;
    perf_record(r, ms);
    if (d.paged) {
      /* The call without host copies: each launch after a synchronised
       * read-back, on an idle device. */
      d.readback = 1;
      const double rb = perf_time(c, "paged_attention", dec_launch, &d,
                                  r->nsets);
      d.readback = 0;
      perf_metric(r, "readback_GBps", (double)kv_bytes / (rb * 1e-3) / 1e9,
                  "GB/s");
    }
  } else {
    char what[64];
    snprintf(what, sizeof what, "%s%sbpm%lld_mc%lld%s_GBps",
             tun.matrix == 2 ? "mma2_" : tun.matrix == 3 ? "mma3_" : "",
             tun.dynamic ? "dyn_" : "", (long long)tun.blocks_per_mp,
             (long long)tun.min_chunk, tun.stages == 4 ? "_s4" : "");
    perf_metric(r, what, (double)kv_bytes / (ms * 1e-3) / 1e9, "GB/s");
  }

  dec_check(c, r, &d, B, HQ);
  perf_set_free(&d.q);
  perf_set_free(&d.k);
  perf_set_free(&d.v);
  perf_set_free(&d.o);
  if (d.paged) {
    kt_assert_ok(ke_free(kt_ctx(), d.d_tables));
    kt_assert_ok(ke_free(kt_ctx(), d.d_lens));
    free(d.tables);
    free(d.lens);
  }
}

/* The split's knobs (kiln/test-tuning.h) swept on the bf16 cases of the
 * decode rows, dense then paged, so that one GPU run compares them without
 * a rebuild: fixed ranges or ranges taken a step at a time (dynamic, for
 * dense and paged), blocks per multiprocessor the ranges aim for (1..4) and
 * the fewest keys per range (256 or 1024), and 4 pipeline stages instead
 * of 3 at bpm 2, mc 256, all on the SIMT kernels (matrix 0); then the
 * matrix-unit kernels with 2 and 3 stages over the same bpm and mc.
 * Metrics BENCH.bf16.[mma2_|mma3_][dyn_]bpmN_mcM[_s4]_GBps (not picked up
 * by the perf table). Each setting is also checked against the reference. Host
 * emulation: the first row of each over two settings of each knob, 3
 * stages (the suites run 4). */
void perf_decode_sweep(void) {
  static const char *const tests[] = {"decode", "paged_decode"};
  const int64_t bpms[] = {1, 2, 3, 4}, chunks[] = {128, 256, 512, 1024};
  perf_cfg c = perf_config();
  double copy_gbps = perf_copy_gbps(&c);
  const int nk = c.host ? 2 : 4;
  c.samples = 2;
  for (int t = 0; t < 2; t++) {
    size_t at = 0;
    for (const perf_case *pc; (pc = perf_next_case(tests[t], &at)) != NULL;) {
      for (int matrix = 0; matrix <= 3; matrix++)
      for (int dyn = 0; dyn < 2; dyn++)
        for (int stages = 3; stages <= 4; stages++)
          for (int i = 0; i < nk; i++)
            for (int j = 0; j < nk; j++) {
              /* 4 stages only at the default split (they measured no
               * faster on the H100); the matrix-unit kernels have their
               * own depth and fixed ranges only. */
              if (matrix == 1) continue;
              if (matrix && (dyn || stages == 4)) continue;
              if (!c.host && (j == 0 || j == 2)) continue;
              if (stages == 4 && (c.host || i != 1 || j != 1)) continue;
              ke__decode_tuning tun;
              ke__decode_tuning_defaults(&tun);
              tun.matrix = matrix;
              tun.dynamic = dyn ? 3 : 0;
              tun.stages = stages;
              tun.blocks_per_mp = bpms[i];
              tun.min_chunk = chunks[j];
              ke__decode_tuning def;
              ke__decode_tuning_defaults(&def);
              if (memcmp(&tun, &def, sizeof tun) == 0) continue;
              kt_assert_ok(ke__decode_tuning_set(kt_ctx(), &tun));
              perf_run r;
              perf_run_init(&r, &c, pc, KE_BF16, &copy_gbps);
              perf_decode_case(&c, &r);
            }
      if (c.host) break;
    }
  }
  kt_assert_ok(ke__decode_tuning_set(kt_ctx(), NULL));
}
