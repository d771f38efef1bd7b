#!/usr/bin/env bash
# Results survive kiln's death: a test SIGKILLs kiln while two others are in
# flight (one of them with a helper process). The journal holds the plan and
# each test run's start, so `kiln report rebuild` lists the three runs in
# flight as lost (with their ids and device) and counts the rest of the
# plan as not run; `kiln report show` on the folder shows it from the
# journal and says how to write the report. No process of any test, helper
# included, survives kiln; every slot comes back. Then the same with kiln
# killed from outside.
. "$(dirname "$0")/lib.sh"

export KILN_FAULT_SLEEP_MS=20000 KILN_FAULT_KILL_MS=400
# Queue per repeat: pass, sleeper, helper, kill_kiln. Three at a time: pass
# ends at once and kill_kiln starts, which kills kiln while sleeper and
# helper run. Planned: 4 tests x 3 repeats = 12 runs; started: 4.
# helper_sleep: the pid of faults/helper's helper (a `sleep` with this
# test's token key and KILN_TEST=faults/helper in its environment).
helper_sleep() {
  local f
  for f in $(grep -lsz '^KILN_TEST=faults/helper$' /proc/[0-9]*/environ); do
    grep -qsz "^KILN_TOKEN_KEY=$KEY\$" "$f" || continue
    f=${f%/environ}
    grep -qs '^sleep' "$f/cmdline" && { basename "$f"; return; }
  done
}
"$KILN" run --backend host -j 3 --repeat 3 -o "$T/run" faults/pass faults/sleeper faults/helper \
  faults/kill_kiln >"$T/out.txt" 2>&1 &
kiln_pid=$!
hp=
for i in $(seq 100); do hp=$(helper_sleep); [ -n "$hp" ] && break; sleep 0.02; done
wait $kiln_pid; rc=$?
expect_rc 137 "kiln killed by one of its tests"
sleep 0.5
expect_tokens_full "after kiln was killed"
expect_no_runners "after kiln was killed (helpers included)"
if [ -z "$hp" ]; then fail "faults/helper's helper was never seen running"
elif [ -e "/proc/$hp" ] && ! grep -q '^State:.*Z' "/proc/$hp/status"; then
  fail "the helper ($hp) of faults/helper survived kiln"; kill -9 "$hp"
else ok "the helper $hp of faults/helper is gone"; fi
[ -f "$T/run/report.yaml" ] && fail "a killed kiln wrote report.yaml" || ok "no report.yaml"

k report show "$T/run"
expect_rc 0 "report show on a killed run's folder"
expect_out 'kiln report rebuild' "show says how to write the report"
expect_out 'lost +faults/kill_kiln' "show lists the lost runs"

k report rebuild "$T/run"
expect_rc 0 "report rebuild"
flat "$T/run/report.yaml"
expect_eq "$(field summary.lost)" 3 "three runs were in flight: lost"
expect_eq "$(field summary.not_run)" 8 "not_run counts the rest of the plan (12 - 4)"
expect_eq "$(field summary.pass)" 1 "the finished test is kept"
for t in kill_kiln sleeper helper; do
  expect_eq "$(tfield faults/$t outcome)" lost "faults/$t is lost"
  expect_eq "$(tfield faults/$t device)" 0 "faults/$t: its device"
  expect_match "$(tfield faults/$t message)" 'kiln .*died' "faults/$t: says why"
done

# kiln SIGKILLed from outside while a helper runs.
"$KILN" run --backend host -j 2 -o "$T/ext" faults/helper faults/sleeper >"$T/out.txt" 2>&1 &
kiln_pid=$!
for i in $(seq 100); do grep -qs 'helper pid' "$T/ext/logs/faults/helper.log" && break
  grep -qs '^start ' "$T/ext/journal" && [ "$(grep -c '^start ' "$T/ext/journal")" -ge 2 ] && break; sleep 0.05; done
sleep 0.3
kill -KILL $kiln_pid; wait $kiln_pid 2>/dev/null
sleep 0.5
expect_tokens_full "after SIGKILL from outside"
expect_no_runners "after SIGKILL from outside"
k report rebuild "$T/ext"
flat "$T/ext/report.yaml"
expect_eq "$(field summary.lost)" 2 "both runs in flight are lost"
finish
