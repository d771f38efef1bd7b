#!/usr/bin/env python3
"""The files of a room call downwards only: no cycle in its call graph.

For each folder given, every .c file is a node; file A has an edge to file B
when A names (calls, or takes the address of) a non-static function that B
defines. A cycle means two files are peers that call back into each other,
which the room's layering forbids. Prints each cycle found, exits 1 if any.
"""
import os
import re
import sys

DEF = re.compile(r"^(?!static\b)[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(")
# A table or other object defined at file scope (not static).
VAR = re.compile(r"^(?!static\b|extern\b|typedef\b)[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*(\[\w*\])?\s*=")
NAME = re.compile(r"\b([A-Za-z_]\w*)\b")


def strip(src):
    """The code without comments and string or character literals."""
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    src = re.sub(r"//[^\n]*", " ", src)
    return re.sub(r'"(\\.|[^"\\\n])*"|\'(\\.|[^\'\\\n])*\'', '""', src)


def graph(folder):
    files = sorted(f for f in os.listdir(folder) if f.endswith(".c"))
    code = {}
    defines = {}
    for f in files:
        with open(os.path.join(folder, f), encoding="utf-8") as fh:
            code[f] = strip(fh.read())
        # A definition: a line at column 0, not static, whose declarator is
        # followed by a body (the '{' on this line or a later one).
        lines = code[f].split("\n")
        for i, line in enumerate(lines):
            v = VAR.match(line)
            if v:
                defines.setdefault(v.group(1), f)
                continue
            m = DEF.match(line)
            if not m or line.startswith(("typedef", "return", "extern")):
                continue
            rest = "\n".join(lines[i:i + 6])
            body = rest.find("{")
            semi = rest.find(";")
            if body >= 0 and (semi < 0 or body < semi):
                defines.setdefault(m.group(1), f)
    edges = {f: set() for f in files}
    for f in files:
        for name in set(NAME.findall(code[f])):
            owner = defines.get(name)
            if owner and owner != f:
                edges[f].add(owner)
    return edges


def cycles(edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main(argv):
    if len(argv) < 2:
        print("usage: layers.py FOLDER...", file=sys.stderr)
        return 2
    bad = 0
    for folder in argv[1:]:
        if not os.path.isdir(folder):
            print(f"layers.py: {folder}: not a folder", file=sys.stderr)
            return 2
        edges = graph(folder)
        for comp in cycles(edges):
            bad = 1
            links = [f"{a} -> {b}" for a in comp for b in sorted(edges[a]) if b in comp]
            print(f"{folder}: a cycle of {len(comp)} files: {', '.join(comp)}")
            for link in links:
                print(f"  {link}")
        if not bad:
            n = sum(len(e) for e in edges.values())
            print(f"{folder}: {len(edges)} files, {n} calls between files, no cycle")
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv))
