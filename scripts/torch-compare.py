#!/usr/bin/env python3
"""PyTorch side of kiln's perf suite: the same kernels, shapes, dtypes and
method as suites/perf/perf.c (docs/performance.md), timed with torch.cuda.Event.

    scripts/torch-compare.py --out torch.json            (on a CUDA machine)
    scripts/torch-compare.py --plan [--host-sizes]       (no torch needed)

Writes JSON (which is also YAML) with metrics named as kiln's:
BENCH.DTYPE.QUANTITY (softmax.f32.GBps, gemm_s4096.bf16.TFLOPs, ...), the
shape of each case under "shapes", and per-case remarks (unfused ops, the
backend chosen) under "notes". scripts/perf-table.py joins it with a kiln
report. torch is imported only when measuring, so --plan, the argument
parsing and the writer run anywhere.
"""
import argparse
import json
import statistics
import sys

COLS = 4096                 # row length of the row kernels
HEAD_DIM = 128
ROPE_HEADS = 32
KV_HEADS, Q_HEADS = 8, 32
MEM_DTYPES = ("f32", "f16", "bf16")
GEMM_DTYPES = ("f32", "f16", "bf16")
ES = {"f32": 4, "f16": 2, "bf16": 2}
MX_FORMATS = {  # name: (bits, exponent bits, mantissa bits, bias)
    "mxfp4": (4, 2, 1, 1),
    "mxfp6_e2m3": (6, 2, 3, 1),
}


def ceil_div(a, b):
    return (a + b - 1) // b


# ---- The plan: every case with its shape and the bytes / FLOP that count -----

def plan(target, lengths, attn_heads, decode_lengths=(4096, 32768)):
    """Cases as suites/perf/perf.c sizes them: rows so that the bytes that must
    move reach `target`; GEMM and attention at the given lengths."""
    cases = []

    def mem(bench, dt, shape, nbytes, set_bytes, **extra):
        cases.append(dict(bench=bench, dtype=dt, shape=shape, bytes=nbytes,
                          set_bytes=set_bytes, kind="mem", **extra))

    rows = ceil_div(target, 2 * COLS * 4)
    mem("copy", "f32", f"{rows}x{COLS}", 2 * rows * COLS * 4,
        2 * rows * COLS * 4, rows=rows)
    # Write-only roof: a fill of the copy's destinations (suites/perf/perf.c).
    mem("fill", "f32", f"{rows}x{COLS}", rows * COLS * 4,
        2 * rows * COLS * 4, rows=rows)
    for dt in MEM_DTYPES:
        es = ES[dt]
        # tensors moved per row, tensors held per set (and the weight)
        for bench, moved, held, weight in (("softmax", 2, 2, 0),
                                           ("rmsnorm", 2, 2, 1),
                                           ("rmsnorm_residual", 4, 3, 1),
                                           ("swiglu", 3, 3, 0)):
            r = ceil_div(target, moved * COLS * es)
            mem(bench, dt, f"{r}x{COLS}", moved * r * COLS * es + weight * COLS * es,
                held * r * COLS * es, rows=r)
        s = ceil_div(target, 2 * ROPE_HEADS * HEAD_DIM * es)
        mem("rope", dt, f"1x{ROPE_HEADS}x{s}x{HEAD_DIM}",
            2 * ROPE_HEADS * s * HEAD_DIM * es + 4 * s,
            ROPE_HEADS * s * HEAD_DIM * es, seq=s)
        s = ceil_div(target, (KV_HEADS + Q_HEADS) * HEAD_DIM * es)
        mem("kv_repeat", dt,
            f"1x{KV_HEADS}x{s}x{HEAD_DIM}->1x{Q_HEADS}x{s}x{HEAD_DIM}",
            (KV_HEADS + Q_HEADS) * s * HEAD_DIM * es,
            (KV_HEADS + Q_HEADS) * s * HEAD_DIM * es, seq=s)
    for fmt, (bits, _, _, _) in MX_FORMATS.items():
        for dt in MEM_DTYPES:
            row = COLS * bits // 8 + COLS // 32 + COLS * ES[dt]
            r = ceil_div(target, row)
            mem(f"{fmt}_dequant", dt, f"{r}x{COLS}", r * row, r * row, rows=r,
                fmt=fmt)
    for s in lengths:
        for dt in GEMM_DTYPES:
            cases.append(dict(bench=f"gemm_s{s}", dtype=dt, shape=f"{s}x{s}x{s}",
                              flop=2 * s ** 3, set_bytes=3 * s * s * ES[dt],
                              kind="flop", seq=s))
    # The MX linear layer at the longer length: bf16 X [S, S] times MXFP4
    # W [S, S] transposed (suites/perf/perf.c, mxfp_gemm).
    s = lengths[-1]
    cases.append(dict(bench=f"mxfp4_gemm_s{s}", dtype="bf16",
                      shape=f"{s}x{s}x{s}", flop=2 * s ** 3,
                      set_bytes=2 * s * s * 2 + s * s // 2 + s * s // 32,
                      kind="flop", seq=s, fmt="mxfp4"))
    cases += attention_cases(lengths, attn_heads)
    plan_decode(cases, decode_lengths)
    return cases


# ---- Fused attention: suites/perf/perf.c's kAttnPerf ---------------------------------

ATTN_DTYPES = ("f32", "f16", "bf16")
# (bench, which of the lengths, D, causal, dtypes)
ATTN_CASES = (
    ("attention", 0, 128, False, ATTN_DTYPES),
    ("attention", 1, 128, False, ATTN_DTYPES),
    ("attention_causal", 0, 128, True, ATTN_DTYPES),
    ("attention_causal", 1, 128, True, ATTN_DTYPES),
    ("attention_d64", 1, 64, False, ("bf16",)),
    ("attention_d256", 1, 256, False, ("bf16",)),
)


def attention_cases(lengths, heads):
    """B 1, H heads, Sq = Sk = S; FLOP = 4 D per visible (query, key) pair
    and head: S^2, or S (S + 1) / 2 when causal (only the pairs the mask
    leaves are counted, as kiln counts them)."""
    out = []
    for bench, which, d, causal, dts in ATTN_CASES:
        if which >= len(lengths):
            continue
        s = lengths[which]
        pairs = s * (s + 1) // 2 if causal else s * s
        for dt in dts:
            out.append(dict(bench=f"{bench}_s{s}", dtype=dt,
                            shape=f"1x{heads}x{s}x{d}", flop=4 * heads * pairs * d,
                            set_bytes=4 * heads * s * d * ES[dt], kind="flop",
                            seq=s, heads=heads, head_dim=d, causal=causal))
    return out


# ---- Decode (suites/perf/perf.c "Decode"): K/V bandwidth ---------------------------

DEC_DTYPES = ("f16", "bf16")
DEC_BATCHES = (1, 8)


def plan_decode(cases, lengths):
    """One query token per sequence, Hq 32 over Hkv 8, D 128: dense and paged
    cases share torch's measurement (SDPA on dense K/V, enable_gqa)."""
    for s in lengths:
        for b in DEC_BATCHES:
            for dt in DEC_DTYPES:
                kv = 2 * b * KV_HEADS * s * HEAD_DIM * ES[dt]
                q = 2 * b * Q_HEADS * HEAD_DIM * ES[dt]
                for prefix in ("", "paged_"):
                    mem = dict(bench=f"{prefix}decode_b{b}_s{s}", dtype=dt,
                               shape=f"q {b}x{Q_HEADS}x1x{HEAD_DIM}, kv "
                                     f"{b}x{KV_HEADS}x{s}x{HEAD_DIM}",
                               bytes=kv, set_bytes=kv + q, kind="mem",
                               batch=b, seq=s)
                    cases.append(mem)


def rotation_sets(l2_bytes, set_bytes):
    """Sets so that together they are at least twice the L2, and at least 2."""
    return max(2, ceil_div(2 * l2_bytes, set_bytes))


def mx_value_table(fmt):
    """Every code of an OCP MX element format as a float (no Inf/NaN codes)."""
    bits, ebits, mbits, bias = MX_FORMATS[fmt]
    out = []
    for code in range(1 << bits):
        sign = -1.0 if code >> (bits - 1) else 1.0
        e = (code >> mbits) & ((1 << ebits) - 1)
        m = code & ((1 << mbits) - 1)
        frac = m / (1 << mbits)
        v = frac * 2.0 ** (1 - bias) if e == 0 else (1 + frac) * 2.0 ** (e - bias)
        out.append(sign * v)
    return out


# ---- Output ------------------------------------------------------------------------

def metric(results, name, value, unit):
    results["metrics"].append({"name": name, "value": value, "unit": unit})


def new_results(meta):
    return {"format": "kiln-torch-compare/1", **meta, "metrics": [],
            "shapes": {}, "notes": {}}


def record_case(results, case, ms, copy_gbps=None, note=None):
    key = f"{case['bench']}.{case['dtype']}"
    results["shapes"][key] = case["shape"]
    if note:
        results["notes"][key] = note
    if ms is None:
        return
    metric(results, f"{key}.ms", ms, "ms")
    if case["kind"] == "mem":
        gbps = case["bytes"] / (ms * 1e-3) / 1e9
        metric(results, f"{key}.bytes", case["bytes"], "B")
        metric(results, f"{key}.GBps", gbps, "GB/s")
        if copy_gbps:
            metric(results, f"{key}.ratio_to_copy", gbps / copy_gbps, "ratio")
    else:
        metric(results, f"{key}.flop", case["flop"], "FLOP")
        metric(results, f"{key}.TFLOPs", case["flop"] / (ms * 1e-3) / 1e12,
               "TFLOP/s")


def write(results, path):
    text = json.dumps(results, indent=1, sort_keys=False) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


# ---- Measuring (torch from here on) -----------------------------------------------

def measure(args, cases, results):
    import torch
    import torch.nn.functional as F

    dev = torch.device(args.device)
    dts = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    props = torch.cuda.get_device_properties(dev)
    l2 = args.l2_bytes or getattr(props, "L2_cache_size", 0) or (256 << 20)
    results.update(device=props.name, l2_bytes=l2, torch=torch.__version__,
                   cuda=torch.version.cuda,
                   allow_tf32=torch.backends.cuda.matmul.allow_tf32)

    def time_ms(fn, nsets):
        for i in range(args.warmup):
            fn(i % nsets)
        events = []
        for i in range(args.iters):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn((args.warmup + i) % nsets)
            b.record()
            events.append((a, b))
        torch.cuda.synchronize(dev)
        return statistics.median(a.elapsed_time(b) for a, b in events)

    def randn(shape, dt):
        return torch.randn(shape, device=dev, dtype=dts[dt])

    copy_gbps = None
    decode_ms = {}
    for case in cases:
        if args.only and case["bench"] not in args.only:
            continue
        dt, nsets = case["dtype"], rotation_sets(l2, case["set_bytes"])
        note, fn = None, None
        b = case["bench"]
        if b == "copy":
            src = [randn((case["rows"], COLS), dt) for _ in range(nsets)]
            dst = [torch.empty_like(s) for s in src]
            fn = lambda i: dst[i].copy_(src[i])
        elif b == "fill":
            dst = [torch.empty((case["rows"], COLS), device=dev, dtype=dts[dt])
                   for _ in range(nsets)]
            fn = lambda i: dst[i].fill_(0.747)
            note = "Tensor.fill_ (write only)"
        elif b == "softmax":
            x = [randn((case["rows"], COLS), dt) for _ in range(nsets)]
            fn = lambda i: torch.softmax(x[i], dim=-1)
        elif b in ("rmsnorm", "rmsnorm_residual"):
            if not hasattr(F, "rms_norm"):
                record_case(results, case, None, note="n/a: no F.rms_norm in this torch")
                continue
            x = [randn((case["rows"], COLS), dt) for _ in range(nsets)]
            w = randn((COLS,), dt)
            if b == "rmsnorm":
                fn = lambda i: F.rms_norm(x[i], (COLS,), w, 1e-6)
            else:
                r = [randn((case["rows"], COLS), dt) for _ in range(nsets)]

                def fn(i):
                    x[i].add_(r[i])
                    return F.rms_norm(x[i], (COLS,), w, 1e-6)
                note = "two ops: x.add_(residual), then F.rms_norm"
        elif b == "swiglu":
            g = [randn((case["rows"], COLS), dt) for _ in range(nsets)]
            u = [randn((case["rows"], COLS), dt) for _ in range(nsets)]
            fn = lambda i: F.silu(g[i]) * u[i]
            note = "F.silu(gate) * up: two kernels"
        elif b == "rope":
            s, h = case["seq"], HEAD_DIM // 2
            x = [randn((1, ROPE_HEADS, s, HEAD_DIM), dt) for _ in range(nsets)]
            pos = torch.arange(s, device=dev, dtype=torch.float64)
            inv = 10000.0 ** (-torch.arange(h, device=dev, dtype=torch.float64) * 2 / HEAD_DIM)
            ang = pos[:, None] * inv[None, :]
            cos, sin = ang.cos().to(dts[dt]), ang.sin().to(dts[dt])

            def fn(i):
                x1, x2 = x[i][..., :h], x[i][..., h:]
                r1 = x1 * cos - x2 * sin
                r2 = x2 * cos + x1 * sin
                x1.copy_(r1)
                x2.copy_(r2)
            note = "unfused torch ops (NeoX pairing, in place via copy_), cos/sin tables precomputed"
        elif b == "kv_repeat":
            s = case["seq"]
            kv = [randn((1, KV_HEADS, s, HEAD_DIM), dt) for _ in range(nsets)]
            g = Q_HEADS // KV_HEADS
            fn = lambda i: kv[i][:, :, None].expand(1, KV_HEADS, g, s, HEAD_DIM) \
                .reshape(1, Q_HEADS, s, HEAD_DIM).contiguous()
            ms_ri = time_ms(lambda i: kv[i].repeat_interleave(g, dim=1), nsets)
            alt = dict(case, bench="kv_repeat_interleave")
            record_case(results, alt, ms_ri, copy_gbps,
                        note="torch.repeat_interleave(dim=1)")
            note = "expand + reshape (+ contiguous), as Hugging Face's repeat_kv"
        elif b.startswith("mxfp4_gemm_"):
            s = case["seq"]
            x = [randn((s, s), dt) for _ in range(nsets)]
            data = [torch.randint(0, 256, (s, s // 2), device=dev,
                                  dtype=torch.uint8) for _ in range(nsets)]
            scales = [torch.randint(117, 138, (s, s // 32), device=dev,
                                    dtype=torch.uint8) for _ in range(nsets)]
            lut = torch.tensor(mx_value_table("mxfp4"), device=dev,
                               dtype=torch.float32)

            def fn(i):
                d = data[i]
                codes = torch.stack((d & 15, d >> 4), dim=-1).reshape(s, s)
                v = lut[codes.long()].view(s, s // 32, 32)
                sc = torch.exp2(scales[i].float() - 127.0)[..., None]
                w = (v * sc).view(s, s).to(dts[dt])
                return torch.matmul(x[i], w.t())
            note = ("unfused torch ops: dequantise W to bf16 (unpack, table, "
                    "scale), then torch.matmul(X, W.t())")
        elif b.endswith("_dequant"):
            fmt = case["fmt"]
            bits = MX_FORMATS[fmt][0]
            rows = case["rows"]
            data = [torch.randint(0, 256, (rows, COLS * bits // 8), device=dev,
                                  dtype=torch.uint8) for _ in range(nsets)]
            scales = [torch.randint(117, 138, (rows, COLS // 32), device=dev,
                                    dtype=torch.uint8) for _ in range(nsets)]
            lut = torch.tensor(mx_value_table(fmt), device=dev, dtype=torch.float32)

            def codes_of(d):
                if bits == 4:
                    return torch.stack((d & 15, d >> 4), dim=-1).reshape(rows, COLS)
                w = d.view(rows, COLS // 4, 3).to(torch.int32)
                w = w[..., 0] | (w[..., 1] << 8) | (w[..., 2] << 16)
                return torch.stack([(w >> (6 * j)) & 63 for j in range(4)],
                                   dim=-1).reshape(rows, COLS)

            def fn(i):
                v = lut[codes_of(data[i]).long()].view(rows, COLS // 32, 32)
                sc = torch.exp2(scales[i].float() - 127.0)[..., None]
                return (v * sc).view(rows, COLS).to(dts[dt])
            note = "unfused torch ops: unpack, table lookup, scale (f32), convert"
        elif b.startswith("gemm_"):
            s = case["seq"]
            a = [randn((s, s), dt) for _ in range(nsets)]
            bb = [randn((s, s), dt) for _ in range(nsets)]
            c = [torch.empty((s, s), device=dev, dtype=dts[dt]) for _ in range(nsets)]
            fn = lambda i: torch.matmul(a[i], bb[i], out=c[i])
            note = f"torch.matmul, allow_tf32={torch.backends.cuda.matmul.allow_tf32}"
        elif b.startswith("attention"):
            fn, note = attention_fn(case, nsets, randn, F)
        elif "decode_" in b:
            bb, s = case["batch"], case["seq"]
            key = (bb, s, dt)
            if b.startswith("paged_") and key in decode_ms:
                # The same computation as the dense case: measured once.
                record_case(results, case, decode_ms[key], copy_gbps,
                            note="same SDPA as the dense case (torch has no paged cache)")
                continue
            q = [randn((bb, Q_HEADS, 1, HEAD_DIM), dt) for _ in range(nsets)]
            k = [randn((bb, KV_HEADS, s, HEAD_DIM), dt) for _ in range(nsets)]
            v = [randn((bb, KV_HEADS, s, HEAD_DIM), dt) for _ in range(nsets)]
            fn = lambda i: F.scaled_dot_product_attention(q[i], k[i], v[i],
                                                          enable_gqa=True)
            note = "F.scaled_dot_product_attention(enable_gqa=True), Sq 1"
        else:
            raise SystemExit(f"torch-compare: no torch version of {b}")
        ms = time_ms(fn, nsets)
        if "decode_" in b:
            decode_ms[(case["batch"], case["seq"], dt)] = ms
        if b == "copy":
            copy_gbps = case["bytes"] / (ms * 1e-3) / 1e9
        record_case(results, case, ms, copy_gbps, note)
        print(f"{b:24} {dt:5} {case['shape']:34} {ms:9.4f} ms", flush=True)
        fn = None
        torch.cuda.empty_cache()


def attention_fn(case, nsets, randn, F):
    """F.scaled_dot_product_attention on [1, H, S, D] tensors, is_causal as
    the case (top-left aligned, which is kiln's default offset when
    Sq == Sk), the backend torch picks."""
    s, h, d, dt = case["seq"], case["heads"], case["head_dim"], case["dtype"]
    q = [randn((1, h, s, d), dt) for _ in range(nsets)]
    k = [randn((1, h, s, d), dt) for _ in range(nsets)]
    v = [randn((1, h, s, d), dt) for _ in range(nsets)]
    causal = case["causal"]
    fn = lambda i: F.scaled_dot_product_attention(q[i], k[i], v[i], is_causal=causal)
    return fn, ("F.scaled_dot_product_attention, %s, default backend choice"
                % ("is_causal=True" if causal else "non-causal"))


# ---- Command line -------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(
        description="PyTorch side of kiln's perf suite (docs/performance.md)")
    p.add_argument("--out", default="-", help="JSON output file (default stdout)")
    p.add_argument("--plan", action="store_true",
                   help="print the cases and shapes as JSON, measure nothing")
    p.add_argument("--host-sizes", action="store_true",
                   help="kiln's host-emulation sizes (2 MiB, S 64/128, 2 heads, "
                        "decode contexts 32/256)")
    p.add_argument("--target-mb", type=float, default=None,
                   help="MiB a memory-bound launch moves (default 256)")
    p.add_argument("--lengths", default=None,
                   help="GEMM/attention S values, comma-separated (default 1024,4096)")
    p.add_argument("--heads", type=int, default=None, help="attention heads (16)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--l2-bytes", type=int, default=0,
                   help="L2 size (default: the device's)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--only", default="",
                   help="comma-separated benches (softmax,gemm_s4096,...)")
    a = p.parse_args(argv)
    if a.warmup < 0 or a.iters < 1:
        p.error("--warmup must be >= 0 and --iters >= 1")
    host = a.host_sizes
    a.target = int((a.target_mb if a.target_mb else (2 if host else 256)) * (1 << 20))
    try:
        a.lengths = [int(x) for x in (a.lengths or ("64,128" if host else "1024,4096")).split(",")]
    except ValueError:
        p.error("--lengths takes integers, e.g. 1024,4096")
    if a.target <= 0 or any(s < 1 for s in a.lengths):
        p.error("sizes must be positive")
    a.heads = a.heads or (2 if host else 16)
    a.only = [x for x in a.only.split(",") if x]
    return a


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cases = plan(args.target, args.lengths, args.heads,
                 (32, 256) if args.host_sizes else (4096, 32768))
    if args.plan:
        write({"format": "kiln-torch-plan/1", "cases": cases}, args.out)
        return 0
    results = new_results({"settings": {"target_bytes": args.target,
                                        "warmup": args.warmup,
                                        "iters": args.iters}})
    measure(args, cases, results)
    write(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
