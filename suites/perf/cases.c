/* Every case of the perf suite, one row each. The perf tests run the rows
 * that name them (perf.c), and scripts/torch-compare.py reads this file to
 * plan the same shapes on PyTorch: a benchmark is added here once. Keep
 * the layout the script reads: one `{...}` per row, `.field = value` with
 * a number, a string or PERF_* dtype bits; comments anywhere.
 *
 * A row's metrics are BENCH[_b<batch>][_s<seq>].DTYPE.*, one set per dtype
 * in `dtypes`. seq 0 means "sized by the target": rows (or positions) so
 * that one launch moves perf_target_mib MiB. Host emulation uses seq_host,
 * heads_host and perf_target_mib_host, so CI runs the same code in seconds.
 */
#include "perf/perf.h"

/* MiB one memory-bound launch moves, on a GPU and in host emulation. */
const int64_t perf_target_mib = 256;
const int64_t perf_target_mib_host = 2;

const perf_case perf_cases[] = {
    /* The bandwidth reference ([rows, cols] f32, read + write) and the
     * write-only roof (a fill of the copy's destinations). */
    {.test = "copy", .bench = "copy", .dtypes = PERF_F32, .cols = 4096},
    {.test = "copy", .bench = "fill", .dtypes = PERF_F32, .cols = 4096},

    /* Row kernels over [rows, cols]. */
    {.test = "softmax", .bench = "softmax", .dtypes = PERF_ALL, .cols = 4096},
    {.test = "rmsnorm", .bench = "rmsnorm", .dtypes = PERF_ALL, .cols = 4096},
    {.test = "rmsnorm_residual", .bench = "rmsnorm_residual",
     .dtypes = PERF_ALL, .cols = 4096},
    {.test = "swiglu", .bench = "swiglu", .dtypes = PERF_ALL, .cols = 4096},

    /* RoPE in place on [1, heads, S, D] (NeoX pairing); K/V replication
     * [1, kv_heads, S, D] -> [1, heads, S, D]. */
    {.test = "rope", .bench = "rope", .dtypes = PERF_ALL, .heads = 32,
     .head_dim = 128},
    {.test = "kv_repeat", .bench = "kv_repeat", .dtypes = PERF_ALL,
     .heads = 32, .kv_heads = 8, .head_dim = 128},

    /* MX dequantisation of [rows, cols] into each dtype. MXFP6 E2M3 stands
     * for MXFP6; the engine has no MXFP8. */
    {.test = "mxfp_dequant", .bench = "mxfp4_dequant", .dtypes = PERF_ALL,
     .cols = 4096, .fmt = "mxfp4"},
    {.test = "mxfp_dequant", .bench = "mxfp6_e2m3_dequant",
     .dtypes = PERF_ALL, .cols = 4096, .fmt = "mxfp6_e2m3"},

    /* Square GEMM C[S, S] = A B, one dtype throughout: 2 S^3 FLOP. */
    {.test = "gemm", .bench = "gemm", .dtypes = PERF_ALL, .seq = 1024,
     .seq_host = 64},
    {.test = "gemm", .bench = "gemm", .dtypes = PERF_ALL, .seq = 4096,
     .seq_host = 128},
    /* The MX linear layer: bf16 X [S, S] times MXFP4 W [S, S] transposed. */
    {.test = "mxfp_gemm", .bench = "mxfp4_gemm", .dtypes = PERF_BF16,
     .seq = 4096, .seq_host = 128, .fmt = "mxfp4"},

    /* Fused attention, B 1, Sq = Sk = S: 4 D FLOP per visible (query, key)
     * pair and head (S (S + 1) / 2 pairs when causal). */
    {.test = "attention", .bench = "attention", .dtypes = PERF_ALL,
     .heads = 16, .heads_host = 2, .seq = 1024, .seq_host = 64,
     .head_dim = 128},
    {.test = "attention", .bench = "attention", .dtypes = PERF_ALL,
     .heads = 16, .heads_host = 2, .seq = 4096, .seq_host = 128,
     .head_dim = 128},
    {.test = "attention", .bench = "attention_causal", .dtypes = PERF_ALL,
     .heads = 16, .heads_host = 2, .seq = 1024, .seq_host = 64,
     .head_dim = 128, .causal = 1},
    {.test = "attention", .bench = "attention_causal", .dtypes = PERF_ALL,
     .heads = 16, .heads_host = 2, .seq = 4096, .seq_host = 128,
     .head_dim = 128, .causal = 1},
    {.test = "attention", .bench = "attention_d64", .dtypes = PERF_BF16,
     .heads = 16, .heads_host = 2, .seq = 4096, .seq_host = 128,
     .head_dim = 64},
    {.test = "attention", .bench = "attention_d256", .dtypes = PERF_BF16,
     .heads = 16, .heads_host = 2, .seq = 4096, .seq_host = 128,
     .head_dim = 256},
    /* The same with round_p: P rounded once to the input dtype, as torch's
     * fused kernels do. */
    {.test = "attention", .bench = "attention_round_p", .dtypes = PERF_F16 | PERF_BF16,
     .heads = 16, .heads_host = 2, .seq = 4096, .seq_host = 128,
     .head_dim = 128, .round_p = 1},
    {.test = "attention", .bench = "attention_causal_round_p",
     .dtypes = PERF_F16 | PERF_BF16, .heads = 16, .heads_host = 2, .seq = 4096,
     .seq_host = 128, .head_dim = 128, .causal = 1, .round_p = 1},
    {.test = "attention", .bench = "attention_d64_round_p", .dtypes = PERF_BF16,
     .heads = 16, .heads_host = 2, .seq = 4096, .seq_host = 128,
     .head_dim = 64, .round_p = 1},
    {.test = "attention", .bench = "attention_d256_round_p", .dtypes = PERF_BF16,
     .heads = 16, .heads_host = 2, .seq = 4096, .seq_host = 128,
     .head_dim = 256, .round_p = 1},

    /* Decode: one query token per sequence over a KV cache of S tokens,
     * heads query heads over kv_heads; the bytes that count are K and V.
     * Dense ([B, H, S, D] tensors) and paged (blocks of 16 tokens). */
    {.test = "decode", .bench = "decode", .dtypes = PERF_F16 | PERF_BF16,
     .batch = 1, .seq = 4096, .seq_host = 32, .heads = 32, .kv_heads = 8,
     .head_dim = 128},
    {.test = "decode", .bench = "decode", .dtypes = PERF_F16 | PERF_BF16,
     .batch = 8, .seq = 4096, .seq_host = 32, .heads = 32, .kv_heads = 8,
     .head_dim = 128},
    {.test = "decode", .bench = "decode", .dtypes = PERF_F16 | PERF_BF16,
     .batch = 1, .seq = 32768, .seq_host = 256, .heads = 32, .kv_heads = 8,
     .head_dim = 128},
    {.test = "decode", .bench = "decode", .dtypes = PERF_F16 | PERF_BF16,
     .batch = 8, .seq = 32768, .seq_host = 256, .heads = 32, .kv_heads = 8,
     .head_dim = 128},
    {.test = "paged_decode", .bench = "paged_decode",
     .dtypes = PERF_F16 | PERF_BF16, .batch = 1, .seq = 4096, .seq_host = 32,
     .heads = 32, .kv_heads = 8, .head_dim = 128},
    {.test = "paged_decode", .bench = "paged_decode",
     .dtypes = PERF_F16 | PERF_BF16, .batch = 8, .seq = 4096, .seq_host = 32,
     .heads = 32, .kv_heads = 8, .head_dim = 128},
    {.test = "paged_decode", .bench = "paged_decode",
     .dtypes = PERF_F16 | PERF_BF16, .batch = 1, .seq = 32768,
     .seq_host = 256, .heads = 32, .kv_heads = 8, .head_dim = 128},
    {.test = "paged_decode", .bench = "paged_decode",
     .dtypes = PERF_F16 | PERF_BF16, .batch = 8, .seq = 32768,
     .seq_host = 256, .heads = 32, .kv_heads = 8, .head_dim = 128},
};
const size_t perf_ncases = sizeof perf_cases / sizeof perf_cases[0];
