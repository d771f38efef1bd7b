#!/usr/bin/env bash
# The report tools on real runs of the host runner: JUnit (parsed with
# python3's XML parser, hostile output included), diff (a failure and an
# error growth planted in a real run of the drift suite, a 2x slower kernel
# planted in a copy of a real report since real kernel times jitter, a
# slower sleeper: exactly those found, exit 1; a report against itself or an
# unchanged copy: nothing, exit 0; the thresholds), sharding (--shard, Bazel
# and Slurm variables, durations) and merge (3 shards = the unsharded run,
# no duplicates or gaps; refusals).
source "$(dirname "$0")/lib.sh"

# py FILE.py ARGS: runs a python3 check; its non-zero exit is a failure.
py() { python3 - "$@"; }

# ---- JUnit --------------------------------------------------------------------
k run --backend host --jobs 2 --retries 1 --out junit --junit "$T/j.xml" \
  drift/hostile_output faults/flaky_once faults/skip faults/segfault faults/pass faults/leak
expect_rc 1 "run with --junit"
XML_OUTPUT_FILE=$T/bazel.xml k run --backend host --jobs 2 --out bz faults/pass
expect_rc 0 "run with XML_OUTPUT_FILE"
[ -s "$T/bazel.xml" ] && ok "XML_OUTPUT_FILE written" || fail "XML_OUTPUT_FILE not written"
k report junit junit -o "$T/j2.xml"
expect_rc 0 "kiln report junit"
cmp -s "$T/j.xml" "$T/j2.xml" && ok "report junit = run --junit" || fail "JUnit files differ"
if py "$T/j.xml" "$T/bazel.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()          # raises on invalid XML
assert root.tag == "testsuites", root.tag
cases = {c.get("classname") + "/" + c.get("name"): c for c in root.iter("testcase")}
def kinds(tid): return sorted(e.tag for e in cases[tid] if e.tag not in ("system-out", "properties"))
want = {"faults/pass": [], "faults/skip": ["skipped"],
        "faults/flaky_once": ["flakyFailure"],
        "faults/segfault": ["error", "rerunError"],
        "faults/leak": ["failure", "rerunFailure"],
        "drift/hostile_output": ["failure", "rerunFailure"]}
for tid, k in want.items():
    assert kinds(tid) == sorted(k), (tid, kinds(tid), k)
assert cases["faults/segfault"].find("error").get("type") == "crash"
assert float(cases["faults/pass"].get("time")) > 0
ran = {p.get("name"): p.get("value") for p in cases["faults/pass"].iter("property")}
assert ran.get("kiln.ran") == "alone", ran
suites = {s.get("name"): s for s in root.iter("testsuite")}
assert suites["faults"].get("tests") == "5" and suites["faults"].get("failures") == "1"
assert suites["faults"].get("errors") == "1" and suites["faults"].get("skipped") == "1"
f = cases["drift/hostile_output"].find("failure")
assert "]]>" in f.get("message") and "<b>" in f.get("message"), f.get("message")
out = cases["drift/hostile_output"].find("system-out").text
assert "]]> <tag attr=\"x\"> &" in out, out
assert "\u00e9" in out and "\u2713" in out, "valid UTF-8 kept"
bad = [c for c in open(sys.argv[1], encoding="utf-8").read() if ord(c) < 32 and c not in "\t\n\r"]
assert not bad, bad
ET.parse(sys.argv[2])
PY
then ok "JUnit parses; elements, counts and hostile text as expected"
else fail "JUnit checks"; fi
if command -v xmllint >/dev/null; then
  xmllint --noout "$T/j.xml" && ok "xmllint accepts the JUnit" || fail "xmllint rejects it"
fi

# ---- diff: planted regressions ----------------------------------------------------
# Three repeats each: the diff judges a speed change against the noise its
# repeats measure (docs/reports.md); noise.sh tests that model on reports
# of known noise.
SEL="drift/new_failure drift/slow_kernel drift/error_growth faults/pass engine/status_table engine/device_query"
k run --backend host --jobs 1 --repeat 3 --out base $SEL
expect_rc 0 "base run"
flat base/report.yaml
expect_eq "$(tfield drift/slow_kernel kernels.0.name) $(tfield drift/slow_kernel kernels.0.launches)" \
  "softmax 7" "drift/slow_kernel's kernel timings recorded (kernel, launches)"
slow_ms=$(python3 -c "import statistics, sys; print(repr(statistics.median(float(x) for x in sys.argv[1:])))" \
  $(for r in 0 1 2; do tfield drift/slow_kernel kernels.0.median_ms $r; done))
awk -v m="$slow_ms" 'BEGIN { exit !(m > 0) }' && ok "softmax median $slow_ms ms" ||
  fail "softmax median '$slow_ms'"
# A failure and an error growth, planted in a real run. The two runs' times
# differ by noise (a loaded CI machine, ASan), so this diff leaves timing
# out (thresholds no time can pass); a slower kernel is planted below.
KILN_DRIFT_FAIL=1 KILN_DRIFT_ERROR=10 k run --backend host --jobs 1 --repeat 3 --out new $SEL
expect_rc 1 "new run (planted failure)"
k report diff base new --yaml "$T/d.yaml" --time-rel 1e6 --test-abs-ms 1e12 --kernel-abs-ms 1e12
expect_rc 1 "diff with planted regressions"
cat "$T/out.txt"
flat "$T/d.yaml"
expect_eq "$(field regressions)" 2 "regressions found"
got=$(grep -E '^findings\.[0-9]+\.(kind|test|kernel|check)=' "$T/flat.txt" | cut -d= -f2 | paste -sd' ')
expect_match "$got" "newly_failing drift/new_failure" "the new failure"
expect_match "$got" "error_growth drift/error_growth softmax_8x1000_f32" "the 10x error growth"
expect_eq "$(grep -c '^findings\.[0-9]*\.kind=' "$T/flat.txt")" 2 "nothing else found"
k report diff new new
expect_rc 0 "diff of a report against itself"
expect_out "no regressions: 0 regressions" "summary says so"
# A slower kernel, planted in the data: plant F FILE writes base's report
# with drift/slow_kernel F times slower in every repeat (its softmax's
# total, min, median and max, its body and wall times; nothing else), so
# the diff sees exactly the planted times whatever the machine's load.
plant() {
  python3 - base/report.yaml "$2" "$1" <<'PY2'
import re, sys
s, f = open(sys.argv[1]).read(), float(sys.argv[3])
recs = list(re.finditer(r"^- id: drift/slow_kernel\n(?: .*\n)*", s, re.M))
assert len(recs) == 3, len(recs)
out, last = [], 0
for m in recs:
    rec = m[0]
    assert len(re.findall(r"\n  - name: ", rec)) == 1 and "\n  - name: softmax\n" in rec, rec
    rec, n = re.subn(r"(\n    (?:total|min|median|max|body|wall)_ms: )([^\n]+)",
                     lambda x: x[1] + repr(float(x[2]) * f), rec)
    assert n == 6, n
    out += [s[last:m.start()], rec]
    last = m.end()
open(sys.argv[2], "w").write("".join(out) + s[last:])
PY2
}
ZERO="--time-rel 0 --kernel-abs-ms 0 --test-abs-ms 0"   # any slower time past the noise
plant 1 "$T/same.yaml" || fail "plant 1"
k report diff base/report.yaml "$T/same.yaml" $ZERO
expect_rc 0 "diff with a rewritten but unchanged copy, zero thresholds"
expect_out "no regressions: 0 regressions" "nothing found"
# 10x: far outside any noise this machine's three repeats can show.
plant 10 "$T/slow.yaml" || fail "plant 10"
k report diff base/report.yaml "$T/slow.yaml" --yaml "$T/d.yaml" $ZERO --confidence 0.99
expect_rc 1 "diff with a 10x slower kernel"
cat "$T/out.txt"
expect_out "slower kernel +drift/slow_kernel kernel softmax: median .* ms -> .* ms \(x10\.00;" \
  "the summary names it with its times"
flat "$T/d.yaml"
got=$(grep -E '^findings\.[0-9]+\.(kind|test|kernel|check)=' "$T/flat.txt" | cut -d= -f2 | paste -sd' ')
# Its body is 10x slower too: the slower kernel explains it, no slower_test.
expect_eq "$got" "slower_kernel drift/slow_kernel softmax" "the 10x slower kernel, and nothing else"
near() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(b > 0 && a / b > 0.99999 && a / b < 1.00001) }'; }
bms=$(field findings.0.base_ms) nms=$(field findings.0.new_ms)
near "$bms" "$slow_ms" && near "$nms" "$(awk -v m="$slow_ms" 'BEGIN { printf "%.17g", 10 * m }')" &&
  ok "base_ms $bms, new_ms $nms" || fail "base_ms $bms, new_ms $nms for a median of $slow_ms ms"
expect_eq "$(field findings.0.factor)" 10 "factor"
expect_match "$(field findings.0.confidence)" '^0\.99' "its confidence"
plant 1.1 "$T/slow11.yaml" || fail "plant 1.1"
k report diff base/report.yaml "$T/slow11.yaml" --kernel-abs-ms 0 --test-abs-ms 0
expect_rc 0 "a 10% slower kernel is within --time-rel 0.2"
k report diff base/report.yaml "$T/slow.yaml" --time-rel 0 --test-abs-ms 1e12 --confidence 0.99 \
  --kernel-abs-ms "$(awk -v m="$slow_ms" 'BEGIN { printf "%.17g", 10 * m }')"
expect_rc 0 "a 10x slower kernel within --kernel-abs-ms (10x its median)"
# Test-level timing on real runs: a sleeper 4x slower and no kernels to
# explain it. Sleeps only overrun, and by milliseconds even on a loaded
# machine: 150 -> 600 ms stays far from both thresholds (100 ms, 1000 ms).
KILN_FAULT_SLEEP_MS=150 k run --backend host --repeat 3 --out sl1 faults/sleeper
KILN_FAULT_SLEEP_MS=600 k run --backend host --repeat 3 --out sl2 faults/sleeper
k report diff sl1 sl2
expect_rc 1 "slower test body"
expect_out "slower test +faults/sleeper: body" "named with its times"
k report diff sl1 sl2 --test-abs-ms 1000
expect_rc 0 "under the absolute threshold"
k report diff sl1 sl2 --drift 0.5
expect_rc 2 "bad --drift value"
expect_out "--drift: '0.5' is not valid" "the error names the flag and value"

# ---- sharding and merge -----------------------------------------------------------
SEL="engine faults/pass faults/skip drift/new_failure drift/error_growth"
ids() { "$KH_PROBE" flat "$1" | grep -E '^tests\.[0-9]+\.id=' | cut -d= -f2 | sort; }
k run --backend host --jobs 2 --out full $SEL
expect_rc 0 "unsharded run"
for s in 1 2 3; do
  k run --backend host --jobs 2 --shard $s/3 --out s$s $SEL
  expect_rc 0 "shard $s/3"
done
k report merge s3 s1 s2 -o "$T/merged.yaml"
expect_rc 0 "merge of 3 shards"
ids full/report.yaml >"$T/full.ids"
ids "$T/merged.yaml" >"$T/merged.ids"
expect_eq "$(wc -l <"$T/merged.ids")" "$(wc -l <"$T/full.ids")" "merged test count"
diff "$T/full.ids" "$T/merged.ids" && ok "merged test set = unsharded" || fail "test sets differ"
expect_eq "$(uniq -d "$T/merged.ids" | wc -l)" 0 "no duplicates"
for s in 1 2 3; do [ "$(ids s$s/report.yaml | wc -l)" -gt 0 ] || fail "shard $s ran nothing"; done
flat "$T/merged.yaml"
expect_eq "$(field summary.total)" "$(wc -l <"$T/full.ids")" "merged summary total"
expect_eq "$(field run.merged_from.2.shard.index)" 3 "inputs in shard order"
k report show "$T/merged.yaml"
expect_rc 0 "kiln report show reads the merged report"
k report merge s1 s2 -o "$T/m.yaml"
expect_rc 2 "a missing shard"
expect_out "shard 3/3 is missing" "names the gap"
k report merge s1 s1 s2 s3 -o "$T/m.yaml"
expect_rc 2 "overlapping reports"
expect_out "is in both" "names the duplicate"
KILN_GIT_REV=0123456789ab k run --backend host --jobs 2 --shard 3/3 --out s3other $SEL
k report merge s1 s2 s3other -o "$T/m.yaml"
expect_rc 2 "different revisions refused"
expect_out "from revision '0123456789ab'" "names both revisions"
k report merge s1 s2 s3other --force -o "$T/m.yaml"
expect_rc 0 "different revisions merged with --force"

# Bazel and Slurm variables pick the same shard as --shard 2/3.
"$KILN" list --backend host --shard 2/3 $SEL 2>/dev/null | cut -d' ' -f1 >"$T/l-flag"
TEST_TOTAL_SHARDS=3 TEST_SHARD_INDEX=1 TEST_SHARD_STATUS_FILE=$T/bazel-status \
  "$KILN" list --backend host $SEL 2>/dev/null | cut -d' ' -f1 >"$T/l-bazel"
SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_MAX=6 SLURM_ARRAY_TASK_COUNT=3 \
  "$KILN" list --backend host $SEL 2>/dev/null | cut -d' ' -f1 >"$T/l-slurm"
[ -s "$T/l-flag" ] && cmp -s "$T/l-flag" "$T/l-bazel" && ok "Bazel TEST_SHARD_INDEX=1 = --shard 2/3" || fail "Bazel shard differs"
cmp -s "$T/l-flag" "$T/l-slurm" && ok "Slurm task 5 of 4..6 = --shard 2/3" || fail "Slurm shard differs"
[ -e "$T/bazel-status" ] && ok "TEST_SHARD_STATUS_FILE touched" || fail "status file not touched"
SLURM_ARRAY_TASK_ID=4 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=9 SLURM_ARRAY_TASK_COUNT=3 \
  k list --backend host $SEL
expect_rc 2 "a Slurm id list (not a range) is refused"
expect_out "not a range" "says why"
k run --backend host --shard 4/3 $SEL
expect_rc 2 "--shard 4/3"
expect_out "--shard 4/3" "names the bad value"
# Adding tests to the selection moves no test between shards.
"$KILN" list --backend host --shard 2/3 engine 2>/dev/null | cut -d' ' -f1 >"$T/l-small"
grep -E '^engine/' "$T/l-flag" >"$T/l-flag-engine"
cmp -s "$T/l-small" "$T/l-flag-engine" && ok "engine's shard 2/3 unchanged by adding tests" || fail "tests moved"
# Durations: balanced from the full run's times; still a partition.
for s in 1 2 3; do
  k run --backend host --jobs 2 --shard $s/3 --shard-durations full --out b$s $SEL
  expect_rc 0 "balanced shard $s/3"
done
k report merge b1 b2 b3 -o "$T/mb.yaml"
expect_rc 0 "merge of balanced shards"
ids "$T/mb.yaml" >"$T/mb.ids"
diff -q "$T/full.ids" "$T/mb.ids" >/dev/null && ok "balanced shards = unsharded set" || fail "balanced sets differ"
flat b1/report.yaml
expect_eq "$(field run.shard.method)" durations "shard method recorded"

finish
