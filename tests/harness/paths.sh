#!/usr/bin/env bash
# JUnit and YAML carry repository-relative paths, and the file:line of a
# failure is the line in the test's own source that failed: an assertion,
# a guard-byte check in kt_free, a numeric check; for a pass, a skip and a
# crash, the test itself (its START_TEST line).
. "$(dirname "$0")/lib.sh"

src=$KILN_SOURCE/suites/harness/faults.c
k run --backend host --poison -o "$T/run" --junit "$T/j.xml" \
  faults/pass faults/fail_assert faults/oob_write_near faults/unwritten_read faults/leak faults/segfault faults/skip
expect_rc 1 "the run"
python3 - "$T/j.xml" "$T/run/report.yaml" "$KILN_SOURCE" <<'PY' && ok "JUnit and YAML paths and lines" || fail "JUnit and YAML paths and lines"
import os, re, sys, xml.etree.ElementTree as ET
import yaml
junit, report, root = sys.argv[1:]
src = open(os.path.join(root, "suites/harness/faults.c")).read().split("\n")
def start_line(name):
    return next(i + 1 for i, l in enumerate(src) if l.startswith(f"START_TEST({name})"))
def body(name):
    a = start_line(name)
    b = next(i + 1 for i in range(a, len(src)) if src[i].startswith("END_TEST"))
    return a, b
def line_of(text):
    return next(i + 1 for i, l in enumerate(src) if text in l)
want = {  # test: the line it must point at
    "pass": start_line("pass"),
    "skip": start_line("skip"),
    "segfault": start_line("segfault"),
    "fail_assert": line_of("ck_assert_int_eq(answer, 42)"),
    "leak": line_of("ke_malloc(kt_ctx(), &p, 4096)"),
}
bad = []
cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
tests = {t["id"].split("/")[1]: t for t in yaml.safe_load(open(report))["tests"]}
for name in ["pass", "fail_assert", "oob_write_near", "unwritten_read", "leak", "segfault", "skip"]:
    for where, f, l in (("junit", cases[name].get("file"), cases[name].get("line")),
                        ("yaml", tests[name].get("file"), tests[name].get("line"))):
        if f != "suites/harness/faults.c":
            bad.append(f"{where} {name}: file {f!r}, want 'suites/harness/faults.c'"); continue
        l = int(l)
        if name in want and l != want[name]:
            bad.append(f"{where} {name}: line {l}, want {want[name]}")
        a, b = body(name)
        if not a <= l <= b:
            bad.append(f"{where} {name}: line {l} is not in the test ({a}..{b})")
# The failures' lines: the kt_free that found the guard bytes, the check.
fl = lambda n: int(tests[n]["line"])
if "kt_free" not in src[fl("oob_write_near") - 1]: bad.append(f"oob_write_near: line {fl('oob_write_near')} is not its kt_free")
if "kt_check" not in src[fl("unwritten_read") - 1] and "ck_assert_msg(ok" not in src[fl("unwritten_read") - 1]:
    bad.append(f"unwritten_read: line {fl('unwritten_read')}: {src[fl('unwritten_read') - 1].strip()}")
for t in tests.values():
    for leak in t.get("leaks") or []:
        if leak["file"] != "suites/harness/faults.c": bad.append(f"leak file {leak['file']!r}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
# Every path the report names exists under the repository root.
k report show "$T/run"
grep -oE '(suites|harness|engine|kernels)/[A-Za-z0-9_./-]+\.(c|h|hip|cc):[0-9]+' "$T/out.txt" | cut -d: -f1 | sort -u >"$T/paths"
[ -s "$T/paths" ] && ok "report show names source lines" || fail "no file:line in report show"
while read -r p; do [ -f "$KILN_SOURCE/$p" ] || fail "report show names $p, which is not in the repository"; done <"$T/paths"
finish
