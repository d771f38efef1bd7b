#!/usr/bin/env bash
# Nothing a test starts outlives it: faults/escape leaves one sleeper in its
# own process group and one daemon in a new session (setsid, double fork).
# kiln finds both when the test ends, kills them, and reports them on the
# test (`processes_left`, outcome leak under --leaks fail), with each way
# of finding them (--contain subreaper, and cgroup where a writable cgroup
# v2 hierarchy exists), and with the whole run's processes gone after. A
# helper of test A that joins test B's process group is A's (by A's cgroup,
# or by A's KILN_JOB), not B's: A is the leak, B passes.
. "$(dirname "$0")/lib.sh"

# pids: the escaped sleepers the test printed in its log.
escaped() { grep -o 'pid [0-9]*' "$1/logs/faults/escape.log" | awk '{print $2}'; }

check_escape() {  # check_escape MODE DIR
  local mode=$1 dir=$2 p
  flat "$dir/report.yaml"
  expect_eq "$(field run.containment)" "$mode" "$mode: containment recorded"
  expect_eq "$(tfield faults/escape outcome)" leak "$mode: a test that leaves processes is a leak"
  expect_match "$(tfield faults/escape message)" 'left 2 processes running' "$mode: the message counts them"
  expect_match "$(tfield faults/escape processes_left.0.command) $(tfield faults/escape processes_left.1.command)" \
    '^sleep 100000 sleep 100000$' "$mode: what they were"
  expect_match "$(tfield faults/escape processes_left.0.how) / $(tfield faults/escape processes_left.1.how)" \
    'own process group|new session' "$mode: how they left"
  expect_eq "$(tfield faults/escape processes_left.0.killed)$(tfield faults/escape processes_left.1.killed)" \
    truetrue "$mode: both were killed"
  for p in $(escaped "$dir"); do
    if [ -e "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null; then
      fail "$mode: escaped process $p still runs"; kill -9 "$p" 2>/dev/null
    else ok "$mode: escaped process $p is gone"; fi
  done
}

k run --backend host -o "$T/auto" faults/escape faults/pass
expect_rc 1 "a test that leaves processes fails the run (leak)"
mode=$("$KH_PROBE" flat "$T/auto/report.yaml" | grep -m1 '^run.containment=' | cut -d= -f2)
expect_match "$mode" '^(cgroup|subreaper)$' "auto picks cgroup or subreaper"
check_escape "$mode" "$T/auto"
expect_no_runners "after --contain auto"
flat "$T/auto/report.yaml"
expect_eq "$(tfield faults/pass outcome)" pass "a clean test beside it passes"

k run --backend host --contain subreaper -o "$T/sub" faults/escape
expect_rc 1 "--contain subreaper"
check_escape subreaper "$T/sub"
expect_no_runners "after --contain subreaper"

k run --backend host --contain cgroup -o "$T/cg" faults/escape
if [ "$rc" -eq 3 ] && grep -q 'cgroup' "$T/out.txt"; then
  echo "skip: no writable cgroup v2 hierarchy here: $(grep -m1 cgroup "$T/out.txt")"
  expect_out '^kiln: --contain cgroup: .*(cgroup v2|cgroup)' "cgroup refused with a reason"
else
  expect_rc 1 "--contain cgroup"
  check_escape cgroup "$T/cg"
  expect_no_runners "after --contain cgroup"
fi

# --leaks warn: reported, killed, and the test passes.
k run --backend host --leaks warn -o "$T/warn" faults/escape
expect_rc 0 "--leaks warn keeps it a pass"
flat "$T/warn/report.yaml"
expect_eq "$(tfield faults/escape outcome)" pass "pass under --leaks warn"
expect_eq "$(tfield faults/escape processes_left.1.killed)" true "still listed and killed"
expect_no_runners "after --leaks warn"

# The grandchild that keeps the test's process group (and its pipes) is
# left behind too, and said so.
k run --backend host -o "$T/gc" faults/grandchild
flat "$T/gc/report.yaml"
expect_eq "$(tfield faults/grandchild processes_left.0.how)" "the test's process group" "grandchild: listed"
expect_no_runners "after the grandchild"

# A well-behaved helper leaves nothing.
KILN_FAULT_SLEEP_MS=50 k run --backend host -o "$T/helper" faults/helper
expect_rc 0 "a test that stops its helper"
flat "$T/helper/report.yaml"
expect_eq "$(tfield faults/helper processes_left.0.pid)" "" "nothing listed"
for mode in cgroup subreaper; do
  cat >"$T/join.yaml" <<EOF2
suite: j
tests:
  - name: a_owner
    command: [python3, -c, "import os, time\nwhile not os.path.exists('$T/$mode.b'): time.sleep(0.01)\nb = int(open('$T/$mode.b').read())\nif os.fork() == 0:\n    os.setpgid(0, b)\n    open('$T/$mode.joined', 'w').close()\n    os.execv('/bin/sleep', ['sleep', '4007'])\ntime.sleep(0.8)"]
    needs_gpu: false
  - name: b_host
    command: [python3, -c, "import os, time\nopen('$T/$mode.b.new', 'w').write(str(os.getpgid(0)))\nos.rename('$T/$mode.b.new', '$T/$mode.b')\nwhile not os.path.exists('$T/$mode.joined'): time.sleep(0.01)\ntime.sleep(0.1)"]
    needs_gpu: false
EOF2
  k run --contain $mode -j 2 --manifest "$T/join.yaml" -o "$T/join-$mode"
  if [ "$mode" = cgroup ] && [ "$rc" -eq 3 ] && grep -q 'cgroup' "$T/out.txt"; then
    echo "skip: no writable cgroup v2 hierarchy here"; continue
  fi
  expect_rc 1 "$mode: a helper that joined another test's process group"
  flat "$T/join-$mode/report.yaml"
  expect_eq "$(tfield j/a_owner outcome)/$(tfield j/b_host outcome)" leak/pass \
    "$mode: the helper's own test is the leak, the test whose group it joined passes"
  expect_eq "$(tfield j/a_owner processes_left.0.command)" "sleep 4007" "$mode: ...listed on its own test"
  expect_match "$(tfield j/a_owner processes_left.0.how)" 'joined the process group of j/b_host' \
    "$mode: ...saying whose group it joined"
  pgrep -f '^sleep 4007$' >/dev/null && { fail "$mode: the helper outlived the run"; pkill -9 -f '^sleep 4007$'; } ||
    ok "$mode: the helper is gone"
done
expect_tokens_full "after every run"
finish
