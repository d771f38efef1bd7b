#!/usr/bin/env bash
# kiln stopped from outside: SIGINT mid-run (exit 130, report marked
# interrupted, no child left, slots back); SIGKILL of kiln itself (children
# die with it, slots come back through SEM_UNDO, and the journal rebuilds a
# report).
. "$(dirname "$0")/lib.sh"

export KILN_FAULT_SLEEP_MS=20000

# ---- SIGINT ----
"$KILN" run --backend host -j 1 --grace 0.5 -o "$T/int" faults/pass faults/sleeper --repeat 2 >"$T/out.txt" 2>&1 &
kiln_pid=$!
for i in $(seq 50); do grep -q 'PASS' "$T/out.txt" 2>/dev/null && break; sleep 0.1; done
sleep 0.3
kill -INT $kiln_pid
wait $kiln_pid; rc=$?
expect_rc 130 "SIGINT"
flat "$T/int/report.yaml"
expect_eq "$(field run.interrupted)" true "report marked interrupted"
expect_match "$(field summary.not_run)" '^[1-9]' "tests not started are counted"
expect_match "$(tfield faults/sleeper message)" "interrupted" "a running test is recorded as interrupted"
expect_tokens_full "after SIGINT"
expect_no_runners "after SIGINT"

# ---- SIGKILL of kiln ----
"$KILN" run --backend host -j 2 -o "$T/kill" faults/pass faults/sleeper >"$T/out.txt" 2>&1 &
kiln_pid=$!
for i in $(seq 50); do grep -q '^run ' "$T/kill/journal" 2>/dev/null && break; sleep 0.1; done
sleep 0.3
v=$("$KH_PROBE" semval "$KEY" 0)
expect_match "$v" '^[0-9]+ [0-9]+$' "token set exists"
[ "${v% *}" -lt "${v#* }" ] && ok "the sleeper holds a slot ($v)" || fail "no slot held while the sleeper runs ($v)"
kill -KILL $kiln_pid
wait $kiln_pid 2>/dev/null
sleep 0.5
expect_tokens_full "after SIGKILL of kiln"
expect_no_runners "after SIGKILL of kiln"
[ -f "$T/kill/report.yaml" ] && fail "a killed kiln wrote a report?" || ok "no report from the killed kiln"
k report rebuild "$T/kill";    expect_rc 0 "report rebuild after SIGKILL"
flat "$T/kill/report.yaml"
expect_eq "$(field run.interrupted)" true "rebuilt report is marked interrupted"
expect_eq "$(field run.rebuilt_from_journal)" true "rebuilt report says so"
expect_eq "$(tfield faults/pass outcome)" pass "the finished test survives in the rebuilt report"
k report show "$T/kill";       expect_rc 0 "report show of the rebuilt report"; expect_out INTERRUPTED "show marks it"

# ---- SIGINT while a kernel spins in a child that ignores SIGTERM ----
# kiln's SIGTERM is ignored, so the grace kill must end it; kiln still
# exits 130 with the test recorded and every slot back.
"$KILN" run --backend host --grace 0.3 -o "$T/spin" faults/spin_kernel >"$T/out.txt" 2>&1 &
kiln_pid=$!
# SIGINT only once the test body runs. Before kiln hands the test to a
# runner (a sanitized runner starts slowly) there is no test to record;
# before the body ignores SIGTERM, kiln's SIGTERM alone would end it. The
# journal names the test's process when kiln hands it over; /proc then
# shows SIGTERM ignored (bit 15 of SigIgn) once the body has begun.
pid=""; body=""
for i in $(seq 400); do
  [ -z "$pid" ] && pid=$(sed -n 's/^start .*id=faults\/spin_kernel .*pid=\([0-9]*\).*/\1/p' \
    "$T/spin/journal" 2>/dev/null)
  if [ -n "$pid" ]; then
    m=$(awk '/^SigIgn:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
    [ -n "$m" ] && (( (16#$m >> 14) & 1 )) && body=1 && break
  fi
  sleep 0.05
done
[ -n "$body" ] && ok "the spinning test's body runs (process $pid ignores SIGTERM)" \
  || fail "the spinning test's body never started (process '$pid')"
kill -INT $kiln_pid
wait $kiln_pid; rc=$?
expect_rc 130 "SIGINT during a spinning kernel"
flat "$T/spin/report.yaml"
expect_match "$(tfield faults/spin_kernel message)" "interrupted" "the spinning test is recorded as interrupted"
expect_eq "$(tfield faults/spin_kernel signal)" SIGKILL "SIGTERM ignored: the grace kill ended it"
expect_tokens_full "after SIGINT during a spinning kernel"
expect_no_runners "after SIGINT during a spinning kernel"

# ---- A stop signal that reaches the test before kiln ----
# A batch system's cancel (Slurm's scancel) signals every process of the
# job: the test may die of it a moment before kiln reads its own. The test
# is then lost with kiln's stop, not a crash. The same signal with no stop
# of kiln after it stays a crash, and says kiln did not send it.
test_pid() {
  local f
  for f in $(grep -lsz "^KILN_TEST=$1\$" /proc/[0-9]*/environ); do
    grep -qsz "^KILN_TOKEN_KEY=$KEY\$" "$f" && basename "$(dirname "$f")" && return
  done
}
for mode in stop alone; do
  "$KILN" run --backend host -j 1 --grace 0.5 -o "$T/out-$mode" faults/sleeper >"$T/out.txt" 2>&1 &
  kiln_pid=$!
  child=""
  for i in $(seq 100); do child=$(test_pid faults/sleeper); [ -n "$child" ] && break; sleep 0.05; done
  [ -n "$child" ] && ok "$mode: the sleeper's process found ($child)" || fail "$mode: no sleeper process"
  sleep 0.2
  kill -TERM "$child"
  if [ $mode = stop ]; then sleep 0.1; kill -TERM $kiln_pid; fi
  wait $kiln_pid; rc=$?
  flat "$T/out-$mode/report.yaml"
  if [ $mode = stop ]; then
    expect_rc 130 "stop: kiln stopped by SIGTERM exits 130 (interrupted)"
    expect_eq "$(tfield faults/sleeper outcome)" lost "stop: the test killed by the same stop is lost, not a crash"
    expect_match "$(tfield faults/sleeper message)" "interrupted" "stop: and says kiln was stopped"
  else
    expect_rc 1 "alone: the run fails"
    expect_eq "$(tfield faults/sleeper outcome)" crash "alone: a test killed from outside, kiln running on, is a crash"
    expect_match "$(tfield faults/sleeper message)" "which kiln did not send" "alone: and says kiln did not send the signal"
  fi
  expect_tokens_full "after the outside SIGTERM ($mode)"
  expect_no_runners "after the outside SIGTERM ($mode)"
done
finish
