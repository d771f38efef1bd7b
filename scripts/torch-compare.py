#!/usr/bin/env python3
"""PyTorch side of kiln's perf suite: the same kernels, shapes, dtypes and
method as suites/perf (docs/measuring.md), timed with torch.cuda.Event.
The cases come from the suite's own table, suites/perf/cases.c, so a
benchmark is added once; a new kind of benchmark also needs its sizing in
size_case and its torch version in measure.

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
import os
import re
import statistics
import sys

# The perf suite's table of cases (one row per case, read here and by the
# suite itself) and the method's target, both in this C file.
TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                     "suites", "perf", "cases.c")
ES = {"f32": 4, "f16": 2, "bf16": 2}
DTYPE_BITS = {"PERF_F32": ("f32",), "PERF_F16": ("f16",),
              "PERF_BF16": ("bf16",), "PERF_ALL": ("f32", "f16", "bf16")}
MX_FORMATS = {  # name: (bits, exponent bits, mantissa bits, bias)
    "mxfp4": (4, 2, 1, 1),
    "mxfp6_e2m3": (6, 2, 3, 1),
}
# [rows, cols] tensors a row kernel moves per launch, holds per rotation
# set, and whether a [cols] weight is read once (as suites/perf/memory.c).
ROW_KERNELS = {"softmax": (2, 2, 0), "rmsnorm": (2, 2, 1),
               "rmsnorm_residual": (4, 3, 1), "swiglu": (3, 3, 0)}


def ceil_div(a, b):
    return (a + b - 1) // b


# ---- The table: suites/perf/cases.c ---------------------------------------------

def _uncomment(text):
    """C comments blanked out, newlines kept (so offsets keep their lines)."""
    return re.sub(r"/\*.*?\*/|//[^\n]*",
                  lambda m: re.sub(r"[^\n]", " ", m[0]), text, flags=re.S)


def read_table(path=TABLE):
    """The rows of perf_cases[] as dicts (fields left out are 0, as in C),
    their dtypes as names, and the targets in bytes."""
    try:
        with open(path, encoding="utf-8") as f:
            text = _uncomment(f.read())
    except OSError as e:
        raise SystemExit(f"torch-compare: cannot read the perf table: {e}")

    def where(pos):
        return f"{path}:{text.count(chr(10), 0, pos) + 1}"

    targets = {}
    for name in ("perf_target_mib", "perf_target_mib_host"):
        m = re.search(r"\b%s\s*=\s*(\d+)\s*;" % name, text)
        if not m:
            raise SystemExit(f"torch-compare: {path}: no `{name} = N;`")
        targets[name] = int(m[1]) << 20
    m = re.search(r"\bperf_cases\[\]\s*=\s*\{(.*?)\n\};", text, re.S)
    if not m:
        raise SystemExit(f"torch-compare: {path}: no `perf_cases[] = {{ ... }};`")
    rows = []
    for r in re.finditer(r"\{([^{}]*)\}", m[1]):
        pos = m.start(1) + r.start()
        row = {"seq": 0, "seq_host": 0, "batch": 0, "cols": 0, "heads": 0,
               "heads_host": 0, "kv_heads": 0, "head_dim": 0, "causal": 0, "round_p": 0,
               "fmt": None}
        for field in filter(None, (x.strip() for x in r[1].split(","))):
            f = re.fullmatch(r'\.(\w+)\s*=\s*("([^"]*)"|\d+|[A-Z0-9_|\s]+)', field)
            if not f:
                raise SystemExit(f"torch-compare: {where(pos)}: cannot read `{field}`")
            key, value = f[1], f[2]
            if key in ("test", "bench", "fmt") and f[3] is not None:
                row[key] = f[3]
            elif key == "dtypes":
                names = [t.strip() for t in value.split("|")]
                if any(t not in DTYPE_BITS for t in names):
                    raise SystemExit(f"torch-compare: {where(pos)}: dtypes `{value}`")
                row["dtypes"] = [d for d in ("f32", "f16", "bf16")
                                 if any(d in DTYPE_BITS[t] for t in names)]
            elif key in row and value.isdigit():
                row[key] = int(value)
            else:
                raise SystemExit(f"torch-compare: {where(pos)}: unknown field `{field}`")
        if "bench" not in row or "dtypes" not in row:
            raise SystemExit(f"torch-compare: {where(pos)}: a row needs .bench and .dtypes")
        row["where"] = where(pos)
        rows.append(row)
    if not rows:
        raise SystemExit(f"torch-compare: {path}: perf_cases[] has no rows")
    return rows, targets


# ---- The plan: every case with its shape and the bytes / FLOP that count -----

def plan(rows, target, host):
    """One case per row and dtype, sized as the perf suite sizes it: rows
    (or positions) so that the bytes that must move reach `target`; a row's
    seq (seq_host, heads_host in host emulation) as given."""
    cases = []
    for row in rows:
        for dt in row["dtypes"]:
            case = size_case(row, dt, target, host)
            if case is None:
                raise SystemExit(f"torch-compare: {row['where']}: no torch plan "
                                 f"for bench {row['bench']} (add it to size_case)")
            cases.append(case)
    return cases


def bench_name(row, seq):
    """BENCH[_b<batch>][_s<seq>], as the perf suite names its metrics."""
    name = row["bench"]
    if row["batch"]:
        name += f"_b{row['batch']}"
    if row["seq"]:
        name += f"_s{seq}"
    return name


def size_case(row, dt, target, host):
    b, es = row["bench"], ES[dt]
    s = row["seq_host"] if host and row["seq_host"] else row["seq"]
    heads = row["heads_host"] if host and row["heads_host"] else row["heads"]
    cols, d, hkv = row["cols"], row["head_dim"], row["kv_heads"]
    name = bench_name(row, s)

    def mem(shape, nbytes, set_bytes, **extra):
        return dict(bench=name, dtype=dt, shape=shape, bytes=nbytes,
                    set_bytes=set_bytes, kind="mem", **extra)

    def flop(shape, nflop, set_bytes, **extra):
        return dict(bench=name, dtype=dt, shape=shape, flop=nflop,
                    set_bytes=set_bytes, kind="flop", seq=s, **extra)

    if b in ("copy", "fill"):
        # Rows as the copy's (read + written reach the target); a fill's
        # set is its destination only.
        r = ceil_div(target, 2 * cols * es)
        moved = 2 if b == "copy" else 1
        return mem(f"{r}x{cols}", moved * r * cols * es, moved * r * cols * es,
                   rows=r, cols=cols)
    if b in ROW_KERNELS:
        moved, held, weight = ROW_KERNELS[b]
        r = ceil_div(target, moved * cols * es)
        return mem(f"{r}x{cols}", moved * r * cols * es + weight * cols * es,
                   held * r * cols * es, rows=r, cols=cols)
    if b == "rope":
        s = ceil_div(target, 2 * heads * d * es)
        return mem(f"1x{heads}x{s}x{d}", 2 * heads * s * d * es + 4 * s,
                   heads * s * d * es, seq=s, heads=heads, head_dim=d)
    if b == "kv_repeat":
        s = ceil_div(target, (hkv + heads) * d * es)
        return mem(f"1x{hkv}x{s}x{d}->1x{heads}x{s}x{d}",
                   (hkv + heads) * s * d * es, (hkv + heads) * s * d * es,
                   seq=s, heads=heads, kv_heads=hkv, head_dim=d)
    if b.endswith("_dequant"):
        per_row = cols * MX_FORMATS[row["fmt"]][0] // 8 + cols // 32 + cols * es
        r = ceil_div(target, per_row)
        return mem(f"{r}x{cols}", r * per_row, r * per_row, rows=r,
                   fmt=row["fmt"], cols=cols)
    if b == "gemm":
        return flop(f"{s}x{s}x{s}", 2 * s ** 3, 3 * s * s * es)
    if b == "mxfp4_gemm":
        return flop(f"{s}x{s}x{s}", 2 * s ** 3,
                    2 * s * s * es + s * s // 2 + s * s // 32, fmt=row["fmt"])
    if b.startswith("attention"):
        pairs = s * (s + 1) // 2 if row["causal"] else s * s
        return flop(f"1x{heads}x{s}x{d}", 4 * heads * pairs * d,
                    4 * heads * s * d * es, heads=heads, head_dim=d,
                    causal=bool(row["causal"]))
    if b in ("decode", "paged_decode"):
        bb = row["batch"]
        kv = 2 * bb * hkv * s * d * es
        return mem(f"q {bb}x{heads}x1x{d}, kv {bb}x{hkv}x{s}x{d}", kv,
                   kv + 2 * bb * heads * d * es, batch=bb, seq=s, heads=heads,
                   kv_heads=hkv, head_dim=d)
    return None


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
        cols = case.get("cols")
        hq, hkv, hd = case.get("heads"), case.get("kv_heads"), case.get("head_dim")
        if b == "copy":
            src = [randn((case["rows"], cols), dt) for _ in range(nsets)]
            dst = [torch.empty_like(s) for s in src]
            fn = lambda i: dst[i].copy_(src[i])
        elif b == "fill":
            dst = [torch.empty((case["rows"], cols), device=dev, dtype=dts[dt])
                   for _ in range(nsets)]
            fn = lambda i: dst[i].fill_(0.747)
            note = "Tensor.fill_ (write only)"
        elif b == "softmax":
            x = [randn((case["rows"], cols), dt) for _ in range(nsets)]
            fn = lambda i: torch.softmax(x[i], dim=-1)
        elif b in ("rmsnorm", "rmsnorm_residual"):
            if not hasattr(F, "rms_norm"):
                record_case(results, case, None, note="n/a: no F.rms_norm in this torch")
                continue
            x = [randn((case["rows"], cols), dt) for _ in range(nsets)]
            w = randn((cols,), dt)
            if b == "rmsnorm":
                fn = lambda i: F.rms_norm(x[i], (cols,), w, 1e-6)
            else:
                r = [randn((case["rows"], cols), dt) for _ in range(nsets)]

                def fn(i):
                    x[i].add_(r[i])
                    return F.rms_norm(x[i], (cols,), w, 1e-6)
                note = "two ops: x.add_(residual), then F.rms_norm"
        elif b == "swiglu":
            g = [randn((case["rows"], cols), dt) for _ in range(nsets)]
            u = [randn((case["rows"], cols), dt) for _ in range(nsets)]
            fn = lambda i: F.silu(g[i]) * u[i]
            note = "F.silu(gate) * up: two kernels"
        elif b == "rope":
            s, h = case["seq"], hd // 2
            x = [randn((1, hq, s, hd), dt) for _ in range(nsets)]
            pos = torch.arange(s, device=dev, dtype=torch.float64)
            inv = 10000.0 ** (-torch.arange(h, device=dev, dtype=torch.float64) * 2 / hd)
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
            kv = [randn((1, hkv, s, hd), dt) for _ in range(nsets)]
            g = hq // hkv
            fn = lambda i: kv[i][:, :, None].expand(1, hkv, g, s, hd) \
                .reshape(1, hq, s, hd).contiguous()
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
            data = [torch.randint(0, 256, (rows, cols * bits // 8), device=dev,
                                  dtype=torch.uint8) for _ in range(nsets)]
            scales = [torch.randint(117, 138, (rows, cols // 32), device=dev,
                                    dtype=torch.uint8) for _ in range(nsets)]
            lut = torch.tensor(mx_value_table(fmt), device=dev, dtype=torch.float32)

            def codes_of(d):
                if bits == 4:
                    return torch.stack((d & 15, d >> 4), dim=-1).reshape(rows, cols)
                w = d.view(rows, cols // 4, 3).to(torch.int32)
                w = w[..., 0] | (w[..., 1] << 8) | (w[..., 2] << 16)
                return torch.stack([(w >> (6 * j)) & 63 for j in range(4)],
                                   dim=-1).reshape(rows, cols)

            def fn(i):
                v = lut[codes_of(data[i]).long()].view(rows, cols // 32, 32)
                sc = torch.exp2(scales[i].float() - 127.0)[..., None]
                return (v * sc).view(rows, cols).to(dts[dt])
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
            q = [randn((bb, hq, 1, hd), dt) for _ in range(nsets)]
            k = [randn((bb, hkv, s, hd), dt) for _ in range(nsets)]
            v = [randn((bb, hkv, s, hd), dt) for _ in range(nsets)]
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
        description="PyTorch side of kiln's perf suite (docs/measuring.md)")
    p.add_argument("--out", default="-", help="JSON output file (default stdout)")
    p.add_argument("--plan", action="store_true",
                   help="print the cases and shapes as JSON, measure nothing")
    p.add_argument("--host-sizes", action="store_true",
                   help="kiln's host-emulation sizes (the table's seq_host, "
                        "heads_host and perf_target_mib_host)")
    p.add_argument("--table", default=TABLE,
                   help="the perf suite's table of cases (default "
                        "suites/perf/cases.c beside this script)")
    p.add_argument("--target-mb", type=float, default=None,
                   help="MiB a memory-bound launch moves (default: the table's)")
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
    if a.target_mb is not None and a.target_mb <= 0:
        p.error(f"--target-mb must be positive (got {a.target_mb:g})")
    a.only = [x for x in a.only.split(",") if x]
    return a


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    rows, targets = read_table(args.table)
    target = targets["perf_target_mib_host" if args.host_sizes else "perf_target_mib"]
    if args.target_mb is not None:
        target = int(args.target_mb * (1 << 20))
    cases = plan(rows, target, args.host_sizes)
    unknown = sorted(set(args.only) - {c["bench"] for c in cases})
    if unknown:
        raise SystemExit(f"torch-compare: --only names benches not in the plan: "
                         f"{', '.join(unknown)} (see --plan)")
    if args.plan:
        write({"format": "kiln-torch-plan/1", "cases": cases}, args.out)
        return 0
    results = new_results({"settings": {"target_bytes": target,
                                        "warmup": args.warmup,
                                        "iters": args.iters}})
    measure(args, cases, results)
    write(results, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
