#!/usr/bin/env python3
"""Joins a kiln report's perf metrics with scripts/torch-compare.py output
and prints a markdown table (docs/measuring.md):

    scripts/perf-table.py REPORT.yaml|RUNDIR [TORCH.json] [-o FILE]

Columns: kernel, dtype, shape, kiln GB/s (TFLOP/s for GEMM and attention),
% of copy (kiln's copy measured in the same test), % of the device's dense
peak (FLOP rows, where the perf suite knows the device), torch, kiln/torch,
and the verdict against the targets: a memory-bound kernel must reach 80%
of kiln's measured copy and at least torch's speed; decode (dense and
paged) 0.9x torch, and 70% of copy where its K/V bytes are 128 MB or more;
a FLOP row with a target in FLOP_TARGETS must reach that fraction of
torch, others are compared by ratio only. Reads the report with PyYAML when it is installed,
else with a small reader of the report's own layout (block style, as
`kiln run` writes it). Exit 0 when it printed a table, 2 on bad input.
"""
import argparse
import json
import os
import re
import sys

COPY_TARGET = 0.8
# Decode (dense and paged): at least 0.9x torch everywhere, and 70 % of copy
# where the K/V bytes are 128 MB or more.
DECODE_TORCH = 0.9
DECODE_COPY = 0.7
DECODE_COPY_BYTES = 128e6
# kiln/torch that a FLOP case must reach: attention (fused, B 1, H 16,
# S 4096, D 128, causal or not) at half of torch's SDPA in 16 bits, and
# 0.8 of it in f32 (exact f32 on both sides).
FLOP_TARGETS = {(f"{b}_s4096", dt): (0.5 if dt != "f32" else 0.8)
                for b in ("attention", "attention_causal")
                for dt in ("f16", "bf16", "f32")}
# GEMM 4096^3 at 0.6 of torch (cuBLAS) in 16 bits, 0.8 in f32.
FLOP_TARGETS.update({("gemm_s4096", "bf16"): 0.6, ("gemm_s4096", "f16"): 0.6,
                     ("gemm_s4096", "f32"): 0.8})


# ---- Reading a kiln report -----------------------------------------------------------

def _scalar(text):
    """A plain or quoted YAML scalar as kiln writes them."""
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] == "'":
        return t[1:-1].replace("''", "'")
    if len(t) >= 2 and t[0] == t[-1] == '"':
        return json.loads(t)
    return t


def _number(v):
    if isinstance(v, (int, float)):
        return float(v)
    s = str(v).strip()
    special = {".nan": float("nan"), ".inf": float("inf"), "-.inf": float("-inf")}
    if s in special:
        return special[s]
    try:
        return float(s)
    except ValueError:
        return float("nan")


def _tests_fallback(text):
    """Each test's id, outcome, final, notes and metrics from a report in
    kiln's block layout: `- id:` items under `tests:`, and list items of
    `notes:` / `metrics:` as `  - key: value` lines with continuation lines."""
    tests, cur, section, item = [], None, None, None
    in_tests = False
    for line in text.splitlines():
        if line.startswith("tests:"):
            in_tests = True
            continue
        if not in_tests:
            continue
        if line and not line.startswith((" ", "-")):
            in_tests = False        # the next top-level key
            continue
        m = re.match(r"^- (\w+): ?(.*)$", line)
        if m:
            cur = {"notes": [], "metrics": []}
            tests.append(cur)
            cur[m.group(1)] = _scalar(m.group(2))
            section = item = None
            continue
        if cur is None:
            continue
        m = re.match(r"^  (\w+):(?: (.*))?$", line)
        if m:
            key, val = m.group(1), m.group(2)
            sections = ("notes", "metrics", "device_info")
            section = key if key in sections and not val else None
            item = None
            if section == "device_info":
                item = cur["device_info"] = {}
            if val is not None and section is None:
                cur[key] = _scalar(val)
            continue
        m = re.match(r"^  - (\w+): ?(.*)$", line)
        if m and section:
            item = {m.group(1): _scalar(m.group(2))}
            cur[section].append(item)
            continue
        m = re.match(r"^    (\w+): ?(.*)$", line)
        if m and item is not None:
            item[m.group(1)] = _scalar(m.group(2))
    return tests


def load_report(path, use_yaml=True):
    if os.path.isdir(path):
        path = os.path.join(path, "report.yaml")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if use_yaml:
        try:
            import yaml
        except ImportError:
            use_yaml = False
    if use_yaml:
        doc = yaml.safe_load(text) or {}
        tests = doc.get("tests") or []
    else:
        tests = _tests_fallback(text)
    metrics, shapes, outcomes, device = {}, {}, {}, None
    for t in tests:
        device = device or str((t.get("device_info") or {}).get("name") or "") or None
        if str(t.get("final", "true")).lower() == "false":
            continue
        for m in t.get("metrics") or []:
            metrics[str(m.get("name"))] = _number(m.get("value"))
        for n in t.get("notes") or []:
            key = str(n.get("key", ""))
            if key.endswith(".shape"):
                shapes[key[:-len(".shape")]] = str(n.get("value"))
        outcomes[str(t.get("id"))] = str(t.get("outcome"))
    return {"path": path, "metrics": metrics, "shapes": shapes,
            "outcomes": outcomes, "device": device}


def load_torch(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if not str(doc.get("format", "")).startswith("kiln-torch-compare/"):
        raise ValueError(f"{path}: not scripts/torch-compare.py output")
    metrics = {str(m["name"]): _number(m["value"]) for m in doc.get("metrics", [])}
    return {"path": path, "metrics": metrics, "shapes": doc.get("shapes", {}),
            "notes": doc.get("notes", {}), "device": doc.get("device", "?"),
            "torch": doc.get("torch", "?")}


# ---- The table ---------------------------------------------------------------------------

def _fmt(v, digits=3):
    if v is None or v != v:
        return "n/a"
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.{digits}g}"


def rows(kiln, torch):
    """One row per (bench, dtype) that kiln measured, in report order."""
    out, seen = [], set()
    for name in kiln["metrics"]:
        parts = name.split(".")
        if len(parts) != 3 or parts[2] not in ("GBps", "TFLOPs"):
            continue
        bench, dt, unit = parts
        if (bench, dt) in seen:
            continue
        seen.add((bench, dt))
        key = f"{bench}.{dt}"
        mem = unit == "GBps"
        k = kiln["metrics"][name]
        t = torch["metrics"].get(name) if torch else None
        ratio = k / t if t and t == t and t > 0 else None
        copy = kiln["metrics"].get(f"{key}.ratio_to_copy") if mem else None
        verdict = []
        if "decode_" in bench:
            big = kiln["metrics"].get(f"{key}.bytes", 0) >= DECODE_COPY_BYTES
            if big and (copy is None or copy != copy or copy < DECODE_COPY):
                verdict.append(f"below {DECODE_COPY:.0%} of copy")
            if t is None:
                verdict.append("no torch figure")
            elif ratio is not None and ratio < DECODE_TORCH:
                verdict.append(f"below {DECODE_TORCH}x torch")
            verdict = verdict or ["meets targets"]
        elif mem and bench not in ("copy", "fill"):
            if copy is None or copy != copy:
                verdict.append("no copy figure")
            elif copy < COPY_TARGET:
                verdict.append(f"below {COPY_TARGET:.0%} of copy")
            if t is None:
                verdict.append("no torch figure")
            elif ratio is not None and ratio < 1.0:
                verdict.append("slower than torch")
            verdict = verdict or ["meets targets"]
        elif not mem and (bench, dt) in FLOP_TARGETS:
            want = FLOP_TARGETS[(bench, dt)]
            if ratio is None:
                verdict = ["no torch figure"]
            elif ratio < want:
                verdict = [f"below {want:g}x torch"]
            else:
                verdict = [f"meets {want:g}x torch"]
        elif not mem:
            verdict = ["ratio only"]
        else:
            verdict = ["reference"]
        shape = kiln["shapes"].get(key, "?")
        if torch and key in torch["shapes"] and torch["shapes"][key] != shape:
            verdict.append(f"torch shape {torch['shapes'][key]}")
        peak = None if mem else kiln["metrics"].get(f"{key}.ratio_to_peak")
        out.append({"bench": bench, "dtype": dt, "shape": shape,
                    "unit": "GB/s" if mem else "TFLOP/s", "kiln": k,
                    "copy": copy, "peak": peak, "torch": t, "ratio": ratio,
                    "verdict": "; ".join(verdict),
                    "note": torch["notes"].get(key, "") if torch else ""})
    return out


def markdown(kiln, torch, table):
    lines = [f"kiln report: `{kiln['path']}`"]
    if torch:
        lines.append(f"torch: `{torch['path']}` (torch {torch['torch']} on {torch['device']})")
    failed = [i for i, o in kiln["outcomes"].items() if o not in ("pass", "flaky")]
    if failed:
        lines.append(f"tests that did not pass: {', '.join(sorted(failed))}")
    lines += ["", "| kernel | dtype | shape | kiln | % of copy | % of peak | torch | kiln/torch | verdict |",
              "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]

    def pct(v):
        return "n/a" if v is None or v != v else f"{100 * v:.0f}%"
    for r in table:
        lines.append(f"| {r['bench']} | {r['dtype']} | {r['shape']} | "
                     f"{_fmt(r['kiln'])} {r['unit']} | {pct(r['copy'])} | "
                     f"{pct(r['peak'])} | "
                     f"{_fmt(r['torch'])}{'' if r['torch'] is None else ' ' + r['unit']} | "
                     f"{_fmt(r['ratio'])} | {r['verdict']} |")
    notes = [(f"{r['bench']}.{r['dtype']}", r["note"]) for r in table if r["note"]]
    if notes:
        lines += ["", "torch notes:"]
        lines += [f"- {k}: {n}" for k, n in notes]
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("report", help="kiln report.yaml or run folder")
    p.add_argument("torch", nargs="?", help="torch-compare.py JSON output")
    p.add_argument("-o", "--out", default="-", help="markdown file (default stdout)")
    p.add_argument("--no-pyyaml", action="store_true",
                   help="use the built-in report reader even if PyYAML is there")
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        kiln = load_report(a.report, use_yaml=not a.no_pyyaml)
        torch = load_torch(a.torch) if a.torch else None
    except (OSError, ValueError, KeyError) as e:
        print(f"perf-table: {e}", file=sys.stderr)
        return 2
    table = rows(kiln, torch)
    if not table:
        print(f"perf-table: {kiln['path']} has no perf metrics "
              "(run `kiln run @perf`)", file=sys.stderr)
        return 2
    text = markdown(kiln, torch, table)
    if a.out == "-":
        sys.stdout.write(text)
    else:
        with open(a.out, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
