#!/usr/bin/env bash
# Every run says how it ran: alone, in which worker at which place, or in
# the shared process; a run alone that confirms a worker's says so. The
# report (and its rebuild from the journal), the console's result lines
# and summary, `kiln report show`, JUnit's test case properties, the HTML
# report and `kiln report diff` (a test that passed in a worker before and
# is polluted now) each show it.
. "$(dirname "$0")/lib.sh"
export KILN_EMU_DEVICES=1
MARK=$KILN_FAULT_STATE_DIR/flaky_once.marker

# ---- A worker: the report ------------------------------------------------------------------
# With the marker flaky_once passes at once: the base for the diff below.
touch "$MARK"
k run --backend host -j 1 --isolation worker -o "$T/base" faults/skip faults/flaky_once
expect_rc 0 "a worker in which both pass"
rm -f "$MARK"
k run --backend host -j 1 --isolation worker -o "$T/w" --junit "$T/w.xml" faults/skip faults/flaky_once
expect_rc 0 "a worker with a polluted test"
cp "$T/out.txt" "$T/w.out"
flat "$T/w/report.yaml"
N=$(tfield faults/skip worker)
expect_match "$N" '^[0-9]+$' "the worker's number"
expect_eq "$(tfield faults/skip ran)" worker "skip ran in a worker"
expect_eq "$(tfield faults/skip position)" 1 "first in it"
expect_eq "$(tfield faults/skip log.path)" "logs/worker-$N.log" "its log is the worker's of that number"
expect_eq "$(tfield faults/flaky_once ran)" worker "flaky_once's first run: in the worker"
expect_eq "$(tfield faults/flaky_once worker)" "$N" "the same worker"
expect_eq "$(tfield faults/flaky_once position)" 2 "second in it"
expect_eq "$(tfield faults/flaky_once ran 1)" alone "its confirmation: alone"
expect_eq "$(tfield faults/flaky_once worker 1)" "" "no worker for the run alone"
expect_eq "$(tfield faults/flaky_once position 1)" "" "no place for the run alone"
expect_eq "$(note faults/flaky_once confirmed_alone 1)" false "it passed alone"
expect_eq "$(tfield faults/flaky_once outcome 1)" polluted "polluted"

# The journal keeps it: a rebuilt report says the same.
cp "$T/w/report.yaml" "$T/w.yaml"
rm "$T/w/report.yaml"
k report rebuild "$T/w"
expect_rc 0 "kiln report rebuild"
for key in ran worker position; do
  a=$(flat "$T/w.yaml"; grep -E "^tests\.[0-9]+\.$key=" "$T/flat.txt")
  b=$(flat "$T/w/report.yaml"; grep -E "^tests\.[0-9]+\.$key=" "$T/flat.txt")
  [ -n "$a" ] && [ "$a" = "$b" ] && ok "rebuilt from the journal: the same $key" ||
    fail "rebuilt $key: '$b', written '$a'"
done

# ---- The console ------------------------------------------------------------------------------
cp "$T/w.out" "$T/out.txt"
expect_out "^SKIP +faults/skip .*, in worker $N at 1\$" "a result line: in which worker at which place"
expect_out "^RETRY +faults/flaky_once .*, in worker $N at 2\$" "the worker's failing run"
expect_out "^POLLUTED +faults/flaky_once .*, alone, after fail in worker $N at 2\$" \
  "its confirmation: alone, after the worker's run"
expect_out '^workers: 2 runs in 1 worker; 1 run again alone: 0 confirmed, 1 polluted$' \
  "the summary counts workers and confirmations"
k report show "$T/w"
expect_out "^        ran: alone, after fail in worker $N at 2\$" "report show: how the polluted test ran"
expect_out '^        after in the worker: faults/skip$' "report show: what ran before it in the worker"
expect_out '^workers: 2 runs in 1 worker' "report show: the workers line"

# One process per test, and the shared process.
k run --backend host -j 1 -o "$T/alone" faults/pass
flat "$T/alone/report.yaml"
expect_eq "$(tfield faults/pass ran)" alone "by default: alone"
expect_eq "$(tfield faults/pass worker)" "" "no worker"
if grep -q 'in worker\|^workers:' "$T/out.txt"; then fail "the console speaks of workers"
else ok "nothing said of workers when there were none"; fi
k run --backend host -j 1 --isolation none -o "$T/none" faults/pass faults/skip
flat "$T/none/report.yaml"
expect_eq "$(tfield faults/skip ran)" shared "--isolation none: shared"
expect_eq "$(tfield faults/skip position)" 2 "its place in the shared process"
expect_out '^SKIP +faults/skip .*, in the shared process at 2$' "the console says so"

# ---- JUnit --------------------------------------------------------------------------------------
if python3 - "$T/w.xml" "$N" <<'PY'
import sys, xml.etree.ElementTree as ET
n = sys.argv[2]
props = {}
for c in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    props[c.get("name")] = {p.get("name"): p.get("value") for p in c.iter("property")}
skip, flaky = props["skip"], props["flaky_once"]
assert skip == {"kiln.ran": "worker", "kiln.worker": n, "kiln.position": "1",
                "kiln.log": "logs/worker-%s.log" % n}, skip
assert flaky["kiln.ran"] == "alone", flaky
assert flaky["kiln.confirmed_alone"] == "false", flaky
assert flaky["kiln.worker_run"] == "fail in worker %s at 2" % n, flaky
assert flaky["kiln.worker_after"] == "faults/skip", flaky
assert "kiln.worker" not in flaky, flaky
PY
then ok "JUnit: each test case's properties say how it ran"
else fail "JUnit properties"; fi

# ---- HTML -----------------------------------------------------------------------------------------
k report html "$T/w" -o "$T/w.html"
expect_rc 0 "kiln report html"
if python3 - "$T/w.html" "$N" <<'PY'
import re, sys
page, n = open(sys.argv[1]).read(), sys.argv[2]
assert "<th>ran</th>" in page, "no ran column"
rows = re.findall(r'<tr class="test"[^>]*data-id="faults/flaky_once"><td>.*?</tr>', page)
assert len(rows) == 2, rows
assert "<td>in worker %s at 2</td>" % n in rows[0], rows[0]
assert "<td>alone, after fail in worker %s at 2</td>" % n in rows[1], rows[1]
assert ("ran alone, after fail in worker %s at 2; in the worker after faults/skip; "
        "confirmed alone: false" % n) in page, "detail"
PY
then ok "HTML: the ran column and the detail"
else fail "HTML: how it ran"; fi

# ---- diff: passed in a worker before, polluted now ------------------------------------------------
k report diff "$T/base" "$T/w" --yaml "$T/diff.yaml"
expect_rc 1 "a newly polluted test is a regression"
B=$(flat "$T/base/report.yaml"; tfield faults/flaky_once worker)
expect_out "^  newly polluted faults/flaky_once: polluted: .*\[before: pass in worker $B at 2; now: polluted alone, after fail in worker $N at 2\]\$" \
  "diff: how it ran before and now"
flat "$T/diff.yaml"
expect_eq "$(field findings.0.kind)" newly_polluted "diff YAML: the finding"
expect_eq "$(field findings.0.base_ran)" "in worker $B at 2" "diff YAML: how it ran in the base"
expect_eq "$(field findings.0.new_ran)" "alone, after fail in worker $N at 2" "diff YAML: and now"
k report diff "$T/w" "$T/w"
expect_rc 0 "the same report twice: still polluted, no regression"
expect_out '^  still polluted faults/flaky_once' "diff: still polluted"
finish
