#!/usr/bin/env bash
# --isolation worker: a kiln runner's tests in sequences of one process
# each, checked between two tests (a test that leaves device memory behind
# ends its worker); every run that does not pass in a worker runs again
# alone before it counts: failing alone it is confirmed, passing alone it
# is `polluted`, naming the tests before it; the runs a crashed worker
# never started go to a new worker, and every run gets one final result.
. "$(dirname "$0")/lib.sh"
export KILN_EMU_DEVICES=1


# ---- Many tests, few processes ----------------------------------------------------
k run --backend host -j 2 --isolation worker -o "$T/own" engine
expect_rc 0 "kiln's engine suite in workers"
n=$(grep -c '^- id: ' "$T/own/report.yaml")
expect_match "$n" '^[1-9][0-9]*$' "the report has the suite's runs ($n)"
p=$(pids "$T/own/report.yaml")
if [ "$p" -lt "$n" ]; then ok "$n runs in $p processes"
else fail "$n runs in $p processes (expected fewer: workers)"; fi
ls "$T"/own/logs/worker-*.log >/dev/null 2>&1 && ok "each worker has its log" \
  || fail "no logs/worker-N.log"
grep -q '^  isolation: worker$' "$T/own/report.yaml" && ok "settings record isolation: worker" \
  || fail "settings lack isolation: worker"

# ---- A polluter: the check ends its worker, so the next test is not polluted -----
k run --backend host -j 1 --isolation worker -o "$T/pol" faults/pollution_writer \
  faults/pollution_reader
expect_rc 1 "a polluter in a worker (it leaks)"
expect_eq "$(finals faults/pollution_reader "$T/pol/report.yaml")" pass \
  "the reader after the polluter: no false failure"
expect_eq "$(finals faults/pollution_writer "$T/pol/report.yaml")" leak \
  "the polluter's leak, confirmed alone"
grep -q 'worker_check' "$T/pol/report.yaml" && ok "the worker's check named what it left" \
  || fail "no worker_check note"
grep -A1 'key: confirmed_alone' "$T/pol/report.yaml" | grep -q 'value: "true"' &&
  ok "the leak was confirmed alone" || fail "no confirmed_alone: true"
# The same pair in one shared process: the false failure kiln avoids above.
k run --backend host -j 1 --isolation none -o "$T/none" faults/pollution_writer \
  faults/pollution_reader
expect_eq "$(finals faults/pollution_reader "$T/none/report.yaml")" fail \
  "in one shared process the reader fails"

# ---- Failing in a worker, passing alone: polluted, its predecessors named ---------
k run --backend host -j 1 --isolation worker -o "$T/flk" faults/skip faults/flaky_once
expect_rc 0 "a polluted test does not fail the run"
expect_eq "$(finals faults/flaky_once "$T/flk/report.yaml")" polluted \
  "failed in the worker, passed alone: polluted"
expect_out '^POLLUTED +faults/flaky_once ' "the console says polluted"
expect_out 'in a worker after faults/skip; passed alone \(`kiln bisect faults/flaky_once`' \
  "and names the test before it and the bisect command"

# ---- Fresh allocations poisoned: no pass on memory an earlier test wrote -----------
# faults/unwritten_read reads a device buffer nobody wrote and assumes zeros.
# Without --poison it passes or fails on what the allocator (or the test
# before it in the worker) left; in worker mode every allocation is NaN
# bytes, in the worker and in the run alone that confirms it.
k run --backend host -j 1 --isolation worker -o "$T/psn" engine/ledger_reports_call_site \
  faults/unwritten_read
expect_rc 1 "an unwritten read in a worker"
expect_eq "$(finals faults/unwritten_read "$T/psn/report.yaml")" fail \
  "the unwritten read fails in worker mode"
flat "$T/psn/report.yaml"
expect_eq "$(tfield faults/unwritten_read checks.0.nan 0)" 4096 \
  "in its worker: every element read NaN (poisoned)"
expect_eq "$(tfield faults/unwritten_read checks.0.nan 1)" 4096 \
  "alone, confirming it: poisoned the same"
expect_eq "$(note faults/unwritten_read confirmed_alone 1)" true "confirmed alone"

# ---- A crash mid-sequence: the rest resumes in a new worker, one result each ------
k run --backend host -j 1 --isolation worker --repeat 2 -o "$T/crash" faults/segfault \
  faults/skip
expect_rc 1 "crashes in workers"
expect_eq "$(finals faults/segfault "$T/crash/report.yaml")" "crash crash" \
  "each crash confirmed alone, one final result per run"
expect_eq "$(finals faults/skip "$T/crash/report.yaml")" "skip skip" \
  "the runs after each crash resumed, one final result per run"
expect_eq "$(grep -c '^- id: faults/skip$' "$T/crash/report.yaml")" 2 \
  "a run the crashed worker never started is not in the report twice"
expect_tokens_full "after the workers"
finish
