#!/usr/bin/env bash
# Nothing outlives a kill -9 of kiln: a test's helper that leaves its
# process group (setpgid), clears its environment and execs `sleep` is
# orphaned to init when kiln dies (subreaper containment: no cgroup, no
# KILN_JOB to find it by). kiln's guard, which outlives kiln, saw it below
# kiln and kills it; it appends what it killed to the journal, so the
# rebuilt report lists it under the run. So too for a helper started after
# the guard last looked below kiln, which it finds by the helper's KILN_JOB
# (subreaper containment) or in the run's cgroup (the helper's environment
# cleared): it is killed and listed as well.
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
for mode in subreaper cgroup; do
  cat >"$T/late.yaml" <<EOF2
suite: l
tests:
  - name: late
    command: [python3, -c, "import os, time\nopen('$T/pid-$mode', 'w').write(str(os.getpid()))\ntime.sleep(30)"]
    needs_gpu: false
EOF2
  "$KILN" run --contain $mode --manifest "$T/late.yaml" -o "$T/late-$mode" >"$T/out.txt" 2>&1 &
  kiln=$!
  for i in $(seq 100); do [ -s "$T/pid-$mode" ] && break; sleep 0.05; done
  tp=$(cat "$T/pid-$mode" 2>/dev/null)
  # The test's cgroup v2 folder (a hybrid host mounts v2 aside).
  cg=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)$(sed -n 's/^0:://p' "/proc/$tp/cgroup" 2>/dev/null)
  if [ "$mode" = cgroup ] && ! grep -qs ' containment=cgroup' "$T/late-$mode/journal"; then
    echo "skip: no cgroup containment here"; kill $kiln; wait $kiln; continue
  fi
  # The helper is no descendant of kiln (started from here), so the
  # guard's look below kiln cannot see it: only the test's KILN_JOB, or
  # the test's cgroup, ties it to the run.
  if [ "$mode" = subreaper ]; then
    job=$(tr '\0' '\n' <"/proc/$tp/environ" | grep '^KILN_JOB=')
    setsid -f env -i "$job" sleep 4005
  else
    setsid -f env -i sleep 4005
  fi
  hp=
  for i in $(seq 100); do hp=$(pgrep -f '^sleep 4005$'); [ -n "$hp" ] && break; sleep 0.01; done
  [ "$mode" = cgroup ] && [ -n "$hp" ] && echo "$hp" >"$cg/cgroup.procs"
  kill -KILL $kiln; wait $kiln 2>/dev/null
  [ -n "$hp" ] && ok "$mode: the late helper ran ($hp)" || fail "$mode: the late helper never ran"
  for i in $(seq 60); do [ -e "/proc/$hp" ] || break; sleep 0.05; done
  if [ -n "$hp" ] && [ -e "/proc/$hp" ] && ! grep -q '^State:.*Z' "/proc/$hp/status" 2>/dev/null; then
    fail "$mode: the late helper $hp outlived kiln"; kill -9 "$hp"
  else ok "$mode: the late helper is gone after kill -9 of kiln"; fi
  # The guard appends to the journal once it has killed everything.
  for i in $(seq 100); do pgrep -f "guard $kiln " >/dev/null || break; sleep 0.05; done
  k report rebuild "$T/late-$mode"
  expect_rc 0 "$mode: report rebuild"
  flat "$T/late-$mode/report.yaml"
  i=$(grep -E '^run\.processes_left\.[0-9]+\.command=sleep 4005$' "$T/flat.txt" |
      sed -E 's/^run\.processes_left\.([0-9]+)\..*/\1/')
  expect_match "$i" '^[0-9]+$' "$mode: the rebuilt report lists the late helper under the run"
  expect_eq "$(field run.processes_left.$i.killed)" true "$mode: ...killed"
  want='its KILN_JOB; killed by its guard'
  [ "$mode" = cgroup ] && want="in the run's cgroup; killed by its guard"
  expect_match "$(field run.processes_left.$i.how)" "$want" "$mode: ...by the guard, saying how it found it"
done
expect_no_runners "after both"
finish
