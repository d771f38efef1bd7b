#!/usr/bin/env bash
# Nothing outlives a kill -9 of kiln: a test's helper that leaves its
# process group (setpgid), clears its environment and execs `sleep` is
# orphaned to init when kiln dies (subreaper containment: no cgroup, no
# KILN_JOB to find it by). kiln's guard, which outlives kiln, saw it below
# kiln and kills it; it appends what it killed to the journal, so the
# rebuilt report lists it under the run.
. "$(dirname "$0")/lib.sh"

cat >"$T/m.yaml" <<'EOF2'
suite: s
tests:
  - name: helper
    command: [python3, -c, "import os, time\nif os.fork() == 0:\n    os.setpgid(0, 0)\n    os.execve('/bin/sleep', ['sleep', '4004'], {})\ntime.sleep(30)"]
    needs_gpu: false
EOF2
for mode in subreaper cgroup; do
  "$KILN" run --contain $mode --manifest "$T/m.yaml" -o "$T/$mode" >"$T/out.txt" 2>&1 &
  kiln=$!
  hp=
  for i in $(seq 100); do hp=$(pgrep -f '^sleep 4004$'); [ -n "$hp" ] && break; sleep 0.05; done
  if [ "$mode" = cgroup ] && [ -z "$hp" ] && grep -q cgroup "$T/out.txt"; then
    echo "skip: no writable cgroup v2 hierarchy here"; wait $kiln; continue
  fi
  [ -n "$hp" ] && ok "$mode: the helper runs ($hp)" || fail "$mode: the helper never ran"
  sleep 0.6                     # the guard looks every 200 ms
  kill -KILL $kiln; wait $kiln 2>/dev/null
  for i in $(seq 60); do [ -e "/proc/$hp" ] || break; sleep 0.05; done
  if [ -n "$hp" ] && [ -e "/proc/$hp" ] && ! grep -q '^State:.*Z' "/proc/$hp/status" 2>/dev/null; then
    fail "$mode: the helper $hp outlived kiln (ppid $(awk '{print $4}' /proc/$hp/stat))"; kill -9 "$hp"
  else ok "$mode: the helper is gone after kill -9 of kiln"; fi
  k report rebuild "$T/$mode"
  expect_rc 0 "$mode: report rebuild"
  flat "$T/$mode/report.yaml"
  if [ "$mode" = subreaper ]; then
    # (The runner itself may be listed too: the guard and PDEATHSIG race.)
    i=$(grep -E '^run\.processes_left\.[0-9]+\.command=sleep 4004$' "$T/flat.txt" |
        sed -E 's/^run\.processes_left\.([0-9]+)\..*/\1/')
    expect_match "$i" '^[0-9]+$' "$mode: the rebuilt report lists it under the run"
    expect_eq "$(field run.processes_left.$i.killed)" true "$mode: ...killed"
    expect_match "$(field run.processes_left.$i.how)" 'guard' "$mode: ...by the guard"
  fi
  expect_eq "$(tfield s/helper outcome)" lost "$mode: the test kiln died during is lost"
done
expect_no_runners "after both"
finish
