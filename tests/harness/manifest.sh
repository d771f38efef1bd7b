#!/usr/bin/env bash
# Tests that are commands (tests/thirdparty/manifest.yaml, a Python
# script): the outcome from the exit status (0 pass, 77 skip with the last
# line it printed, anything else fail), a signal is a crash, the manifest's
# timeout; slots, tags, kiln's environment and the manifest's folder as the
# working directory; a test that needs no device runs without one; a
# manifest with an error is refused with file:line:column; --isolation
# none is refused for commands; no process left.
. "$(dirname "$0")/lib.sh"

M=$KILN_MANIFEST

k list --manifest "$M"
expect_rc 0 "kiln list --manifest"
expect_out '^pysuite/environment +\[python,env\] slots=2' "id SUITE/NAME, tags, slots"

k run --manifest "$M" --grace 0.5 -o "$T/run"
expect_rc 1 "a run with failing commands"
flat "$T/run/report.yaml"
declare -A want=([passes]=pass [fails]=fail [skips]=skip [crashes]=crash [hangs]=timeout
  [environment]=pass [cpu_only]=pass)
for t in "${!want[@]}"; do
  expect_eq "$(tfield "pysuite/$t" outcome)" "${want[$t]}" "pysuite/$t outcome"
done
expect_match "$(tfield pysuite/fails message)" '^exited with status 1: expected 5, got 4$' "fail: status and the last line printed"
expect_eq "$(tfield pysuite/skips message)" "SKIP: needs a device this machine lacks" "skip: the last line printed"
expect_eq "$(tfield pysuite/crashes signal)" SIGSEGV "crash: the signal"
expect_match "$(tfield pysuite/hangs message)" 'timed out after 1 s' "the manifest's timeout"
expect_eq "$(tfield pysuite/environment slots)" 2 "the manifest's slots"
expect_match "$(tfield pysuite/environment times.token_wait_ms)" '^[0-9.e-]+$' "slots taken for the command (token_wait)"
if python3 - "$T/run/environment.json" "$(dirname "$M")" "$T/run" "$(tfield pysuite/environment device)" <<'PY'
import json, os, sys
seen = json.load(open(sys.argv[1]))
assert seen["KILN_TEST"] == "pysuite/environment", seen
assert os.path.realpath(seen["cwd"]) == os.path.realpath(sys.argv[2]), seen
assert seen["KILN_RUN_DIR"] == sys.argv[3], seen
assert seen["TEST_TMPDIR"].startswith(sys.argv[3] + "/tmp/"), seen
assert seen["KILN_DEVICE"] == sys.argv[4], seen
assert seen["KILN_EMU_VISIBLE_DEVICES"] == sys.argv[4], seen
PY
then ok "the command got kiln's environment, its device narrowed, the manifest's folder"
else fail "the command's environment"; fi
expect_tokens_full "after the commands"
expect_no_runners "after the run"

# With no device at all: a test that needs a GPU is skipped, one that does
# not runs.
KILN_EMU_DEVICES=0 k run --manifest "$M" -o "$T/nodev" pysuite/cpu_only pysuite/passes
expect_rc 0 "no device"
flat "$T/nodev/report.yaml"
expect_eq "$(tfield pysuite/cpu_only outcome)" pass "needs_gpu: false runs with no device"
expect_eq "$(tfield pysuite/cpu_only device)" null "...and gets none"
expect_eq "$(tfield pysuite/passes outcome)" skip "a GPU test with no device: skip"

k run --manifest "$M" -o "$T/tag" @env
flat "$T/tag/report.yaml"
expect_eq "$(field summary.total)" 1 "a manifest's tag selects"

k run --manifest "$M" --isolation none -o "$T/none"
expect_rc 2 "--isolation none with commands"
expect_out "is a command from .*a process of" "refused, saying why"

# A manifest with an error: refused before anything runs, with its place.
printf 'tests:\n  - name: a\n    command: [./no-such-script.sh]\n' >"$T/bad.yaml"
k run --manifest "$T/bad.yaml" -o "$T/bad"
expect_rc 2 "a command that is not there: a usage error"
expect_out "bad\.yaml:3:14: command './no-such-script.sh' \(from the manifest's folder\): No such file" "named with file:line:column"
printf 'tests:\n  - name: a\n    command: [true]\n    slots: many\n' >"$T/bad2.yaml"
k run --manifest "$T/bad2.yaml" -o "$T/bad2"
expect_out "bad2\.yaml:4:12: 'slots' must be an integer from 1 to 1024" "a bad value, named with its place"
printf 'suite: s\ntests:\n  - name: a\n    command: [true]\n  - name: a\n    command: [false]\n' >"$T/dup.yaml"
k run --manifest "$T/dup.yaml" -o "$T/dup"
expect_out "two tests have the id 's/a'" "duplicate ids refused"
# The skip code is the manifest's to choose.
printf 'suite: s\nskip_code: 4\ntests:\n  - name: four\n    command: "echo not here; exit 4"\n' >"$T/code.yaml"
k run --manifest "$T/code.yaml" -o "$T/code" --allow-empty
expect_rc 0 "skip_code 4 (a run of one skip is empty: --allow-empty)"
flat "$T/code/report.yaml"
expect_eq "$(tfield s/four outcome)" skip "exit 4 is a skip there"
finish
