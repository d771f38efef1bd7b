#!/usr/bin/env python3
"""Compares the keys reports/README.md documents with the keys kiln writes,
both ways. Written -> documented: every key path in the reports given (list
items as []) is in the annotated example. Documented -> written: every key
name of the example is one kiln's writer can write (a string literal of
the report room, harness/parent/report/, a setting's name, or a field of a
protocol record that reports copy, harness/common/records.c). Prints what differs; exit 1 if anything."""
import glob
import re
import sys

import yaml


def paths(node, prefix, out):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "...":
                continue
            p = f"{prefix}.{k}" if prefix else str(k)
            out.add(p)
            paths(v, p, out)
    elif isinstance(node, list):
        for v in node:
            paths(v, prefix + "[]", out)


def documented(readme):
    text = open(readme).read()
    doc = set()
    for block in re.findall(r"```yaml\n(.*?)```", text, re.S):
        if "format_version" not in block:
            continue
        # "..." and "[...]" stand for elided values; quote them for YAML.
        block = re.sub(r":\s*\.\.\.\s*$", ': "..."', block, flags=re.M)
        data = yaml.safe_load(block.replace("[...]", '["..."]'))
        paths(data, "", doc)
    return doc


def writable(source):
    names = set()
    files = glob.glob(f"{source}/harness/**/*.[ch]", recursive=True)
    for f in files:
        text = open(f).read()
        names |= set(re.findall(r'"([a-z_][a-z0-9_]*)', text))
        names |= set(re.findall(r"(?:KEY|OPT|K)\(\w+, (\w+),", text))
        names |= set(re.findall(r"F\(\"(\w+)\"", text))
        # Names made from a word and a unit ("%s_ms" of a phase).
        names |= {w + u for w in re.findall(r'"([a-z_]+)"', text) for u in ("_ms", "_mhz")}
    return names


def main():
    source, readme, reports = sys.argv[1], sys.argv[2], sys.argv[3:]
    doc = documented(readme)
    bad = 0
    # Documented paths generalise: a documented map whose keys are data
    # (settings.tolerances etc.) is not expanded by kiln's writer.
    written = set()
    for r in reports:
        paths(yaml.safe_load(open(r)), "", written)
    for p in sorted(written - doc):
        print(f"written but not documented in {readme}: {p}")
        bad += 1
    names = writable(source)
    for p in sorted(doc):
        leaf = re.sub(r"\[\]$", "", p.split(".")[-1])
        if leaf not in names:
            print(f"documented but kiln never writes it: {p}")
            bad += 1
    print(f"{len(written)} key paths written, {len(doc)} documented; {bad} differ")
    return 1 if bad else 0


sys.exit(main())
