#!/usr/bin/env python3
"""torch beside dev/gemm-hopper.cu on the same H100 (docs/performance.md).

  python3 dev/gemm-hopper.py DIR     (DIR: gemm-hopper --dump DIR's files)

Accuracy: for each dumped case (A [256, K], B [K, 256], f16 or bf16), the
max relative error max |x - e| / max(|e|, rms(e)) against float64 of kiln's
Hopper kernel at each promotion interval (and unpromoted), kiln's mma.sync
kernel and torch's matmul with f32 output on the very same inputs (NaN,
an unwritten output, shows as nan). Speed: torch.matmul at 4096^3 and 8192^3 with operand
sets rotated over 2x L2, 5 warm-ups, the median of 30 event-timed calls,
queued (torch-compare.py's method, the one to compare with) and synced.
"""
import os
import sys

import numpy as np
import torch


def rel_err(x, e):
    rms = e.pow(2).mean().sqrt()
    return ((x - e).abs() / torch.maximum(e.abs(), rms)).max().item()


def torch_f32_out(a, b):
    """torch's 16-bit GEMM with an f32 result, or None where this torch has
    no such call."""
    try:
        return torch.mm(a, b, out_dtype=torch.float32), "torch.mm(out_dtype=f32)"
    except (TypeError, RuntimeError):
        return None, "no f32-output 16-bit GEMM in this torch"


VARIANTS = ("wg-e1", "wg-e2", "wg-e4", "wg-e2-stagger", "wg-raw")  # gemm-hopper's dump


def accuracy(d):
    dev = "cuda"
    names = {"wg-e1": "wgmma every 64 k", "wg-e2": "every 128 k",
             "wg-e4": "every 256 k", "wg-e2-stagger": "every 128 k, staggered",
             "wg-raw": "unpromoted"}
    print("| inputs | K | " + " | ".join(names[v] for v in VARIANTS) +
          " | kiln mma.sync | torch | torch call |")
    print("| --- | ---: | " + " | ".join("---:" for _ in VARIANTS) + " | ---: | ---: | --- |")
    for dt, tdt in (("bf16", torch.bfloat16), ("f16", torch.float16)):
        for k in (1024, 4096, 16384, 65536):
            base = os.path.join(d, f"acc-{dt}-{k}")
            if not os.path.exists(base + ".a"):
                continue
            raw = lambda ext, n: torch.from_numpy(np.fromfile(base + ext, dtype=np.int16)[:n].copy())
            f32 = lambda ext: torch.from_numpy(np.fromfile(base + ext, dtype=np.float32)).reshape(256, 256).to(dev)
            a = raw(".a", 256 * k).view(tdt).reshape(256, k).to(dev)
            b = raw(".b", k * 256).view(tdt).reshape(k, 256).to(dev)
            e = a.double() @ b.double()
            errs = []
            for v in VARIANTS:
                x = f32("." + v) if os.path.exists(base + "." + v) else None
                errs.append(f"{rel_err(x.double(), e):.3g}" if x is not None else "n/a")
            mm = f32(".mma")
            t, call = torch_f32_out(a, b)
            te = f"{rel_err(t.double(), e):.3g}" if t is not None else "n/a"
            print(f"| {dt} in, f32 out | {k} | " + " | ".join(errs) +
                  f" | {rel_err(mm.double(), e):.3g} | {te} | {call} |")


def speed():
    """torch.matmul timed two ways: queued (events around each call, one
    synchronize at the end: scripts/torch-compare.py's and the perf suite's
    method) and synced (a synchronize after each call: the Python call's
    host time then falls inside the events)."""
    dev = "cuda"
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    print("| case | torch TFLOP/s, queued | torch TFLOP/s, synced |")
    print("| --- | ---: | ---: |")
    for s in (4096, 8192):
        for dt, tdt in (("bf16", torch.bfloat16), ("f16", torch.float16)):
            set_bytes = 3 * s * s * 2
            n = max(2, -(-2 * l2 // set_bytes))
            a = [torch.randn(s, s, device=dev, dtype=tdt) for _ in range(n)]
            b = [torch.randn(s, s, device=dev, dtype=tdt) for _ in range(n)]
            c = [torch.empty(s, s, device=dev, dtype=tdt) for _ in range(n)]
            fig = []
            for synced in (False, True):
                for i in range(5):
                    torch.matmul(a[i % n], b[i % n], out=c[i % n])
                ev = []
                for i in range(30):
                    e0 = torch.cuda.Event(enable_timing=True)
                    e1 = torch.cuda.Event(enable_timing=True)
                    e0.record()
                    torch.matmul(a[i % n], b[i % n], out=c[i % n])
                    e1.record()
                    if synced:
                        e1.synchronize()
                    ev.append((e0, e1))
                torch.cuda.synchronize()
                ms = sorted(x.elapsed_time(y) for x, y in ev)[len(ev) // 2]
                fig.append(f"{2 * s ** 3 / ms / 1e9:.1f}")
            print(f"| GEMM {s}^3 {dt} NN | {fig[0]} | {fig[1]} |")
            del a, b, c
            torch.cuda.empty_cache()


if __name__ == "__main__":
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    if len(sys.argv) > 1:
        accuracy(sys.argv[1])
    speed()
