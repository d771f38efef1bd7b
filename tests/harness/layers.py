#!/usr/bin/env python3
"""The files of a room call downwards only: no cycle in its call graph.

For each folder given, every .c file is a node; file A has an edge to file B
when A names (calls, or takes the address of) a non-static function that B
defines. A cycle means two files are peers that call back into each other,
which the room's layering forbids. Prints each cycle found, exits 1 if any.

With --sources DIR (the parent's folder), also: the sources of tests stay
behind their tables. A source file is one that defines a krun__source_i
table; every other .c/.h file under DIR is core, and a core file
  - names no pytest or zygote (in code or comment): what a source needs
    lives in its own file, its flags and keys in its table;
  - names no type a source file defines (its struct in a cast, a
    declaration or sizeof): the core sees a source's state only as the
    void pointers of its view;
  - names no function or table a source file defines, except the table
    list in sources.c and kiln's own runner's lister (the default source).
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


TABLE = re.compile(r"^const krun__source_i (\w+)\s*=", re.M)
TYPE = re.compile(r"^typedef struct (\w+)\s*\{.*?\}\s*(\w+);", re.M | re.S)
WORDS = re.compile(r"pytest|zygote", re.I)
# Named by the core on purpose: kiln's own runner is the default source.
ALLOWED = {"krun_registry_add_runner"}


def sources_check(parent):
    files = []
    for root, _, names in os.walk(parent):
        files += [os.path.join(root, n) for n in sorted(names) if n.endswith((".c", ".h"))]
    text = {}
    for f in files:
        with open(f, encoding="utf-8") as fh:
            text[f] = fh.read()
    srcs = [f for f in files if TABLE.search(text[f])]
    core = [f for f in files if f not in srcs]
    types, funcs = set(), set()
    for f in srcs:
        code = strip(text[f])
        for m in TYPE.finditer(code):
            types.update(m.groups())
        for line in code.split("\n"):
            m = DEF.match(line) or VAR.match(line)
            if m and not line.startswith(("typedef", "return", "extern")):
                funcs.add(m.group(1))
    funcs -= ALLOWED
    bad = []
    for f in core:
        rel = os.path.relpath(f, parent)
        table_list = os.path.basename(f) == "sources.c"
        for n, line in enumerate(text[f].split("\n"), 1):
            if WORDS.search(line) and not (table_list and re.search(r"krun__\w+_source", line)):
                bad.append(f"{rel}:{n}: names a source: {line.strip()}")
        code = strip(text[f])
        for n, line in enumerate(code.split("\n"), 1):
            for t in types:
                if re.search(rf"\bstruct\s+{t}\b|\b{t}\s*\*+\s*[\w)]|sizeof\s*\(\s*{t}\s*\)", line):
                    bad.append(f"{rel}:{n}: uses a source's type {t}: {line.strip()}")
            for name in set(NAME.findall(line)) & funcs:
                if not (table_list and name.endswith("_source")):
                    bad.append(f"{rel}:{n}: calls into a source ({name}): {line.strip()}")
    for b in bad:
        print(b)
    print(f"{parent}: {len(srcs)} source files, {len(core)} core files, "
          f"{len(bad)} lines where the core reaches into a source")
    return 1 if bad else 0


def main(argv):
    if len(argv) < 2:
        print("usage: layers.py FOLDER... [--sources PARENT]", file=sys.stderr)
        return 2
    bad = 0
    if "--sources" in argv:
        i = argv.index("--sources")
        bad |= sources_check(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
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
