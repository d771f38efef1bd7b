#!/usr/bin/env bash
# A green run means something was tested: a run whose backend was asked for
# and found no device, or whose every selected test was skipped, exits 3
# with a one-line reason (and says so in the report), unless the user opts
# in with --allow-empty or `allow_empty: true` in a config.
. "$(dirname "$0")/lib.sh"

# No device: the host emulation with none, asked for by name (on a machine
# without a GPU, as `--backend cuda` is).
KILN_EMU_DEVICES=0 k run --backend host -o "$T/nodev" softmax/causal engine/device_query
expect_rc 3 "backend asked for, no device found"
expect_out '^kiln: nothing was tested: the host runner found no device' "one-line reason on the console"
flat "$T/nodev/report.yaml"
expect_match "$(field run.nothing_tested)" 'no device' "the report says why"
expect_eq "$(tfield softmax/causal outcome)" skip "its GPU tests are skipped"
KILN_EMU_DEVICES=0 k run --backend host --allow-empty -o "$T/nodev-ok" softmax/causal
expect_rc 0 "--allow-empty accepts a run without a device"
printf 'allow_empty: true\n' >"$T/allow.yaml"
KILN_EMU_DEVICES=0 k run --backend host --config "$T/allow.yaml" -o "$T/nodev-cfg" softmax/causal
expect_rc 0 "allow_empty: true in a config accepts it too"
flat "$T/nodev-cfg/report.yaml"
expect_eq "$(field settings.allow_empty)" true "the setting is in the report"

# Every selected test skipped (a device, but each test skips itself).
k run --backend host -o "$T/skips" faults/skip
expect_rc 3 "every selected test skipped"
expect_out '^kiln: nothing was tested: every selected test was skipped \(1 skipped\)' "one-line reason"
k run --backend host --allow-empty -o "$T/skips-ok" faults/skip
expect_rc 0 "--allow-empty: every test skipped is fine"
k run --backend host -o "$T/mixed" faults/skip faults/pass
expect_rc 0 "a skip beside a pass is a normal green run"
flat "$T/mixed/report.yaml"
expect_eq "$(field run.nothing_tested)" null "nothing_tested is null when something ran"

# A real GPU backend without a device (CI builds the cuda and hip runners
# on machines without a GPU): the case that used to go green.
for b in cuda hip; do
  [ -x "$KILN_RUNNER_DIR/kiln-runner-$b" ] || { echo "skip: no $b runner in this build"; continue; }
  "$KILN" devices --backend $b 2>&1 | grep -q '^no devices' || { echo "skip: $b has a device here"; continue; }
  k run --backend $b -o "$T/$b" softmax
  expect_rc 3 "--backend $b with no device"
  expect_out "^kiln: nothing was tested: the $b runner found no device" "$b: one-line reason"
done
expect_no_runners "after the runs"
finish
