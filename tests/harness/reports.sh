#!/usr/bin/env bash
# The report tools on real runs of the host runner: JUnit (parsed with
# python3's XML parser, hostile output included), diff (planted regressions
# from the drift suite: exactly those found, exit 1; a report against itself:
# nothing, exit 0), sharding (--shard, Bazel and Slurm variables, durations)
# and merge (3 shards = the unsharded run, no duplicates or gaps; refusals).
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
def kinds(tid): return sorted(e.tag for e in cases[tid] if e.tag != "system-out")
want = {"faults/pass": [], "faults/skip": ["skipped"],
        "faults/flaky_once": ["flakyFailure"],
        "faults/segfault": ["error", "rerunError"],
        "faults/leak": ["failure", "rerunFailure"],
        "drift/hostile_output": ["failure", "rerunFailure"]}
for tid, k in want.items():
    assert kinds(tid) == sorted(k), (tid, kinds(tid), k)
assert cases["faults/segfault"].find("error").get("type") == "crash"
assert float(cases["faults/pass"].get("time")) > 0
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
SEL="drift/new_failure drift/slow_kernel drift/error_growth faults/pass engine/status_table engine/device_query"
k run --backend host --jobs 1 --out base $SEL
expect_rc 0 "base run"
# Thresholds for a shared CI machine (and ASan): a kernel must be 50% slower
# and slower by 40% of drift/slow_kernel's own median, so the planted 2x
# passes both and the jitter of the other, smaller kernels passes neither.
flat base/report.yaml
slow_ms=$(tfield drift/slow_kernel kernels.0.median_ms)
abs_ms=$(awk -v m="$slow_ms" 'BEGIN { printf "%.3f", m * 0.4 }')
echo "drift/slow_kernel median $slow_ms ms: --kernel-abs-ms $abs_ms"
TH="--time-rel 0.5 --kernel-abs-ms $abs_ms --test-abs-ms 1000"
KILN_DRIFT_FAIL=1 KILN_DRIFT_SLOW=2 KILN_DRIFT_ERROR=10 k run --backend host --jobs 1 --out new $SEL
expect_rc 1 "new run (planted failure)"
k report diff base new --yaml "$T/d.yaml" $TH
expect_rc 1 "diff with planted regressions"
cat "$T/out.txt"
flat "$T/d.yaml"
expect_eq "$(field regressions)" 3 "regressions found"
got=$(grep -E '^findings\.[0-9]+\.(kind|test|kernel|check)=' "$T/flat.txt" | cut -d= -f2 | paste -sd' ')
expect_match "$got" "newly_failing drift/new_failure" "the new failure"
expect_match "$got" "slower_kernel drift/slow_kernel softmax" "the 2x slower kernel"
expect_match "$got" "error_growth drift/error_growth softmax_8x1000_f32" "the 10x error growth"
expect_eq "$(grep -c '^findings\.[0-9]*\.kind=' "$T/flat.txt")" 3 "nothing else found"
k report diff new new $TH
expect_rc 0 "diff of a report against itself"
expect_out "no regressions: 0 regressions" "summary says so"
# Test-level timing: a sleeper 4x slower and no kernels to explain it.
KILN_FAULT_SLEEP_MS=150 k run --backend host --out sl1 faults/sleeper
KILN_FAULT_SLEEP_MS=600 k run --backend host --out sl2 faults/sleeper
k report diff sl1 sl2
expect_rc 1 "slower test body"
expect_out "slower test +faults/sleeper: body" "named with its times"
k report diff sl1 sl2 --test-abs-ms 1000
expect_rc 0 "under the absolute threshold"
k report diff sl1 sl2 --drift 0.5
expect_rc 2 "bad --drift value"
expect_out "--drift 0.5" "the error names the flag and value"

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
