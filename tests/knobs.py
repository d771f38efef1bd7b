#!/usr/bin/env python3
"""Every KILN_* name the code reads is in the registry, and docs/knobs.md is
what scripts/knobs.py writes from it.

Reads are found by pattern: in C, C++, HIP and CUDA files a "KILN_..."
literal passed to getenv or to a function named env_*, *_env or *getenv;
in Python os.environ / os.getenv / environ.get / `"KILN_..." in os.environ`;
in the shell scripts users run (scripts/*.sh) $KILN_... and ${KILN_...}.
Prints each name missing from harness/common/knobs.def with the files that
read it, and a diff when docs/knobs.md is stale; exits 1 on either.

  tests/knobs.py SOURCE_ROOT
"""
import difflib
import importlib.util
import os
import re
import sys

C_READ = re.compile(
    r'\b(?:std::)?(?:\w*getenv|env_\w+|\w+_env)\s*\(\s*"(KILN_\w+)"')
PY_READ = re.compile(
    r"""(?:os\.environ(?:\.get)?\s*[\[(]|os\.getenv\s*\(|environ\.get\s*\()"""
    r"""\s*['"](KILN_\w+)['"]|['"](KILN_\w+)['"]\s+(?:not\s+)?in\s+os\.environ""")
SH_READ = re.compile(r"\$\{?(KILN_[A-Z0-9_]+)")
C_EXT = {".c", ".h", ".cc", ".cpp", ".hip", ".cu", ".cuh"}
# The project's own folders; build folders and run output are left out.
FOLDERS = ["engine", "kernels", "harness", "suites", "dev", "examples",
           "tests", "scripts"]


def patterns(rel):
    ext = os.path.splitext(rel)[1]
    if ext in C_EXT:
        return [C_READ]
    if ext == ".py":
        return [PY_READ]
    if ext == ".sh" and rel.startswith("scripts" + os.sep):
        return [SH_READ]
    return []


def names_read(root):
    found = {}
    for top in FOLDERS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = [x for x in dirs if x != "__pycache__"]
            for f in files:
                rel = os.path.relpath(os.path.join(d, f), root)
                pats = patterns(rel)
                if not pats:
                    continue
                with open(os.path.join(root, rel), encoding="utf-8",
                          errors="replace") as fh:
                    text = fh.read()
                for pat in pats:
                    for m in pat.finditer(text):
                        name = next(g for g in m.groups() if g)
                        found.setdefault(name, set()).add(rel)
    return found


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    root = argv[1]
    spec = importlib.util.spec_from_file_location(
        "knobs", os.path.join(root, "scripts", "knobs.py"))
    knobs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(knobs)
    try:
        rows = knobs.read_registry(root)
    except ValueError as e:
        print("knobs: %s" % e)
        return 1
    known = {r["name"] for r in rows}
    read = names_read(root)
    bad = 0
    for name in sorted(set(read) - known):
        print("knobs: %s is read (%s) but not in %s"
              % (name, ", ".join(sorted(read[name])), knobs.REGISTRY))
        bad = 1
    # The scan itself must see the names it exists for: a pattern that
    # stopped matching would pass every check above.
    for name in ("KILN_HOPPER_ATTN", "KILN_WARP_SIZE", "KILN_PYTEST_START",
                 "KILN_STAGE"):
        if name not in read:
            print("knobs: the scan no longer finds %s being read" % name)
            bad = 1
    want = knobs.render(rows)
    path = os.path.join(root, knobs.DOC)
    try:
        with open(path, encoding="utf-8") as f:
            have = f.read()
    except OSError as e:
        have = ""
        print("knobs: %s" % e)
    if have != want:
        print("knobs: %s is not what scripts/knobs.py writes (run it):"
              % knobs.DOC)
        sys.stdout.writelines(difflib.unified_diff(
            have.splitlines(True), want.splitlines(True),
            knobs.DOC, "scripts/knobs.py"))
        bad = 1
    if not bad:
        print("knobs: %d names read, %d in the registry, %s up to date"
              % (len(read), len(rows), knobs.DOC))
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv))
