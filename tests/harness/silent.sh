#!/usr/bin/env bash
# No silent kills: every stray kiln kills is reported on the test that left
# it, whichever way it was found, and the status shows it. In subreaper
# containment (and with cgroups where they can be written): a helper that
# clears its environment and stays in the test's process group (only the
# group kill reached it), and one that clears its environment, leaves the
# group and execs `sleep` (only the end-of-run sweep found it), are each
# listed under their test's processes_left, the test is a leak, kiln exits
# 1. When two tests ran as the helper started (no one test can be named),
# it is listed under the run and the run still fails.
. "$(dirname "$0")/lib.sh"

cat >"$T/m.yaml" <<'EOF2'
suite: strays
tests:
  - name: in_group
    command: [bash, -c, "env -i sleep 4001 & sleep 0.2"]
    needs_gpu: false
  - name: own_group
    command: [python3, -c, "import os\nif os.fork() == 0:\n    os.setpgid(0, 0)\n    os.execve('/bin/sleep', ['sleep', '4002'], {})\nimport time; time.sleep(0.2)"]
    needs_gpu: false
  - name: quiet
    command: [sleep, "1"]
    needs_gpu: false
EOF2
gone() {  # gone ARG WHAT: no `sleep ARG` is left (any found is killed by its pid)
  local left
  left=$(pgrep -f "^sleep $1\$")
  if [ -n "$left" ]; then fail "$2: sleep $1 still runs ($left)"; kill -9 $left
  else ok "$2: sleep $1 is gone"; fi
}
for mode in subreaper cgroup; do
  k run --contain "$mode" -j 1 --manifest "$T/m.yaml" -o "$T/$mode" strays/in_group strays/own_group
  if [ "$mode" = cgroup ] && [ "$rc" -eq 3 ] && grep -q cgroup "$T/out.txt"; then
    echo "skip: no writable cgroup v2 hierarchy here"; continue
  fi
  expect_rc 1 "$mode: tests that leave processes fail the run"
  flat "$T/$mode/report.yaml"
  for t in in_group own_group; do
    expect_eq "$(tfield strays/$t outcome)" leak "$mode: strays/$t is a leak"
    expect_match "$(tfield strays/$t processes_left.0.command)" '^sleep 400[12]$' "$mode: strays/$t: what it left"
    expect_eq "$(tfield strays/$t processes_left.0.killed)" true "$mode: strays/$t: killed"
  done
  expect_eq "$(field run.processes_left.0.pid)" "" "$mode: nothing left for the run"
  gone 4001 "$mode"; gone 4002 "$mode"
done

# Two tests running as the helper starts: listed under the run, which fails.
k run --contain subreaper -j 2 --manifest "$T/m.yaml" -o "$T/both" strays/own_group strays/quiet
expect_rc 1 "a stray no one test can be named for fails the run"
expect_out 'left running by the run.s tests' "the console says so"
flat "$T/both/report.yaml"
expect_eq "$(field run.processes_left.0.command)" "sleep 4002" "listed under the run"
expect_eq "$(tfield strays/quiet outcome)" pass "the other test's own outcome stands"
gone 4002 both
finish
