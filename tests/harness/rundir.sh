#!/usr/bin/env bash
# Smaller promises: `--runner` on a file that is not executable says why
# (exit 3); a test program that loses its exec bit mid-run is an error
# naming it, exit 3 (not a fail with status 127); a test that deletes KILN_RUN_DIR gives a warning and a
# non-zero status, and the report names no log that is gone. Two kilns
# given one run folder: the second refuses before it runs anything (the
# folder's lock), and the first's report is its own; a folder used again
# later gets a journal of the new run alone.
. "$(dirname "$0")/lib.sh"

printf 'not a program\n' >"$T/notexec"
k run --runner "$T/notexec" faults/pass
expect_rc 3 "--runner on a file that is not executable"
expect_out 'Permission denied \(the file is not executable' "...says why"

cat >"$T/m.yaml" <<'EOF2'
suite: d
tests:
  - {name: a_first, command: [true], needs_gpu: false}
  - {name: b_wipes, command: [bash, -c, 'rm -rf "$KILN_RUN_DIR"'], needs_gpu: false}
  - {name: c_after, command: [true], needs_gpu: false}
EOF2
k run -j 1 --manifest "$T/m.yaml" -o "$T/run"
expect_rc 3 "a test deleted the run folder: not a clean run"
expect_out 'warning: the run folder .* lost [0-9]+ test logs? and its journal' "the console warns"
flat "$T/run/report.yaml"
for t in a_first b_wipes c_after; do
  log=$(tfield d/$t log.path)
  if [ -n "$log" ] && [ "$log" != null ] && [ ! -e "$T/run/$log" ]; then fail "d/$t: the report names $log, which is gone"
  else ok "d/$t: no log named that is gone (${log:-none})"; fi
done

# The exec bit lost mid-run: the program is fine when the run starts.
printf '#!/bin/sh\nexit 0\n' >"$T/prog.sh"
chmod +x "$T/prog.sh"
cat >"$T/x.yaml" <<EOF2
suite: x
tests:
  - {name: a, command: [sleep, "1"], needs_gpu: false}
  - {name: b, command: ["$T/prog.sh"], needs_gpu: false}
EOF2
(sleep 0.4; chmod -x "$T/prog.sh") &
k run -j 1 --manifest "$T/x.yaml" -o "$T/x" x/a x/b
wait
expect_rc 3 "a program that lost its exec bit mid-run"
flat "$T/x/report.yaml"
expect_eq "$(tfield x/b outcome)" error "...is an error"
expect_match "$(tfield x/b message)" 'not executable: .*prog.sh: Permission denied' "...that names it"

KILN_FAULT_SLEEP_MS=1500 "$KILN" run --backend host -o "$T/same" faults/sleeper >"$T/same1.txt" 2>&1 &
first=$!
for i in $(seq 100); do grep -qs '^start ' "$T/same/journal" && break; sleep 0.05; done
k run --backend host -o "$T/same" faults/fail_assert
expect_rc 3 "a second kiln given the run folder of a running one"
expect_out "run folder .*/same is in use by another kiln \(pid $first," "...refuses, naming the kiln that has it"
wait $first
expect_eq "$?" 0 "the first kiln's run passes"
flat "$T/same/report.yaml"
expect_eq "$(field summary.runs)/$(tfield faults/sleeper outcome)" 1/pass "its report is its own one test run"
[ -e "$T/same/logs/faults/fail_assert.log" ] && fail "the refused kiln ran a test" ||
  ok "the refused kiln ran nothing"
k run --backend host -o "$T/same" faults/fail_assert
expect_rc 1 "a later run in the same folder"
expect_eq "$(grep -c '^kiln ' "$T/same/journal")" 1 "its journal has one run's header"
k report rebuild "$T/same"
expect_rc 0 "...and rebuilds"
flat "$T/same/report.yaml"
expect_eq "$(field summary.runs)/$(tfield faults/fail_assert outcome)" 1/fail "...into that run alone"
finish
