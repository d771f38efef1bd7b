#!/usr/bin/env python3
"""torch's SDPA beside dev/attn-pterms.cu on the same inputs (H100).

  python3 dev/attn-pterms.py DIR    (DIR: attn-pterms --dump DIR's files)

For each dumped case (f16 or bf16 Q, K, V packed [B, H, S, D]): the float64
reference, then the errors of kiln's Hopper attention kernel with P in two
terms (p2), in the kernel's own form (pk: P rounded once to f16, its weights
raised by 2^15; bf16 against V in f16) and rounded once to the input type
(p1), and of
torch.nn.functional.
scaled_dot_product_attention with its default backend on the very same
inputs (K and V repeated over the query heads of a group; causal as
is_causal where the offset is 0, as causal_lower_right where it is Sk - Sq,
else a boolean mask): max |x - e| / max|v|, max |x - e| / max(|e|, rms(e)),
the worst |x - e| / (atol + rtol |e|) against the two-term bound (attn_tol
in suites/attention/attention-check.c without a term for P's rounding) and
NMSE over its limit, over the rows that see at least one key; last, pk's
worst against the suite's bound for it (2 2^-11 max|v| more for P in f16,
and 2^-16 max|v| for bf16 V's f16 copy). The backend that ran is named from the CUDA
kernels the profiler saw.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

U = 2.0 ** -24
LAM = 6.0


def load(d, name, ext, shape, tdt):
    x = np.fromfile(os.path.join(d, f"{name}.{ext}"), dtype=np.int16)
    return torch.from_numpy(x.copy()).view(tdt).reshape(shape).cuda()


def visible(sq, sk, causal, off):
    j = torch.arange(sk, device="cuda")
    i = torch.arange(sq, device="cuda")[:, None]
    return (j[None, :] <= i + off) if causal else torch.ones(sq, sk, dtype=torch.bool, device="cuda")


def reference(q, k, v, scale, vis):
    s = (q.double() @ k.double().transpose(-1, -2)) * scale
    s = s.masked_fill(~vis, float("-inf"))
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)
    return p @ v.double()


def backend_of(fn):
    """The SDPA backend that ran fn, from the CUDA kernels the profiler saw
    (cuDNN's names contain "flash" too, so it is looked for first), and the
    costliest kernel's name."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    ev = sorted(prof.key_averages(), key=lambda e: -getattr(e, "device_time_total",
                                                          getattr(e, "cuda_time_total", 0)))
    names = [e.key for e in ev]
    top = names[0][:60] if names else "?"
    for key, label in (("cudnn", "cuDNN"), ("flash", "flash"), ("fmha", "mem-efficient"),
                       ("efficient", "mem-efficient")):
        if any(key in n.lower() for n in names):
            return label, top
    return "math", top


def metrics(x, e, rows, vmax, atol, rtol, max_nmse):
    x, e = x.double()[..., rows, :], e[..., rows, :]
    d = (x - e).abs().nan_to_num(float("inf"))
    rms = e.pow(2).mean().sqrt()
    ref2 = e.pow(2).sum()
    return (d.max().item() / vmax,
            (d / torch.maximum(e.abs(), rms)).max().item(),
            (d / (atol + rtol * e.abs())).max().item(),
            ((d.pow(2).sum() / ref2).item() if ref2 > 0 else 0.0) / max_nmse)


def main(d):
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    cols = ("abs/max|v|", "max rel", "err/tol", "nmse/limit")
    print("| case | torch backend | " + " | ".join(f"{c} p2 | pk | p1 | torch" for c in cols) +
          " | pk err/its tol |")
    print("| --- | --- |" + " ---: |" * 17)
    kernels = []
    for line in open(os.path.join(d, "cases.txt")):
        f = line.split()
        name, dt = f[0], f[1]
        b, hq, hkv, sq, sk, dd, causal, off = map(int, f[2:10])
        scale = float(f[10])
        tdt = torch.bfloat16 if dt == "bf16" else torch.float16
        q = load(d, name, "q", (b, hq, sq, dd), tdt)
        k = load(d, name, "k", (b, hkv, sk, dd), tdt)
        v = load(d, name, "v", (b, hkv, sk, dd), tdt)
        kr = k.repeat_interleave(hq // hkv, dim=1)
        vr = v.repeat_interleave(hq // hkv, dim=1)
        vis = visible(sq, sk, causal, off)
        rows = vis.any(dim=1)
        e = reference(q, kr, vr, scale, vis)
        # The suite's bound (attn_tol).
        qn = q.double().norm(dim=-1).max().item()
        kn = k.double().norm(dim=-1).max().item()
        vmax = v.double().abs().max().item()
        smax = abs(scale) * qn * kn
        es = LAM * math.sqrt(dd) * U * smax
        atol = max(1e-5, (2 * (es + 3 * U * smax + 4 * U) + LAM * math.sqrt(sk) * U + 4 * U) * vmax)
        rtol, max_nmse = (1.6e-2, 5e-5) if dt == "bf16" else (1e-3, 1e-6)
        mask = lambda: F.scaled_dot_product_attention(q, kr, vr, attn_mask=vis, scale=scale)
        how = "mask"
        if not causal:
            call, how = (lambda: F.scaled_dot_product_attention(q, kr, vr, scale=scale)), ""
        elif off == 0:
            call, how = (lambda: F.scaled_dot_product_attention(q, kr, vr, is_causal=True,
                                                                scale=scale)), "is_causal"
        elif off == sk - sq:
            from torch.nn.attention.bias import causal_lower_right
            bias = causal_lower_right(sq, sk)
            call, how = (lambda: F.scaled_dot_product_attention(q, kr, vr, attn_mask=bias,
                                                                scale=scale)), "lower_right"
        else:
            call = mask
        try:
            t = call()
        except (RuntimeError, ValueError) as err:  # refused: the boolean mask
            print(f"<!-- {name}: {how} refused ({str(err)[:80]}); boolean mask -->")
            call, how = mask, "mask"
            t = call()
        backend, top = backend_of(call)
        kernels.append(f"{name}: {backend}{', ' + how if how else ''}: {top}")
        res = [metrics(load(d, name, p, (b, hq, sq, dd), tdt), e, rows, vmax, atol, rtol, max_nmse)
               for p in ("p2", "pk", "p1")]
        res.append(metrics(t, e, rows, vmax, atol, rtol, max_nmse))
        extra = 2 * 2.0 ** -11 + (2.0 ** -16 if dt == "bf16" else 0.0)
        own = metrics(load(d, name, "pk", (b, hq, sq, dd), tdt), e, rows, vmax,
                      atol + extra * vmax, rtol, max_nmse)
        cells = [f"{res[i][m]:.3g}" for m in range(4) for i in range(4)] + [f"{own[2]:.3g}"]
        print(f"| {name} | {backend}{' (' + how + ')' if how else ''} | " + " | ".join(cells) + " |",
              flush=True)
        del q, k, v, kr, vr, e, t
        torch.cuda.empty_cache()
    print("\ntorch's costliest kernel per case:")
    for k in kernels:
        print("  " + k)


if __name__ == "__main__":
    main(sys.argv[1])
