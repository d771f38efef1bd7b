#!/usr/bin/env bash
# Memory-aware slots: each test's peak device memory is in the report; with
# --slots auto kiln sizes how many tests share a device from the peaks of
# an earlier report and the device's free memory. Shown on the host
# emulation with a 100 MiB device whose memory every process shares
# (KILN_EMU_STATE_DIR): four tests of 40 MiB at once run it out of memory;
# sized by their peaks, two run at a time and all pass.
. "$(dirname "$0")/lib.sh"

export KILN_EMU_STATE_DIR=$T/emu KILN_EMU_MEMORY_MB=100 KILN_FAULT_HOG_MB=40 KILN_FAULT_SLEEP_MS=800
mkdir -p "$KILN_EMU_STATE_DIR"
MB40=$((40 << 20))

# The peak a test reached is in its report.
k run --backend host -j 1 -o "$T/base" faults/memory_hog faults/pass
expect_rc 0 "baseline run"
flat "$T/base/report.yaml"
expect_eq "$(tfield faults/memory_hog memory.peak.bytes)" "$MB40" "memory_hog's peak: its 40 MiB"
expect_eq "$(tfield faults/pass memory.peak.bytes)" 1024 "faults/pass's peak: its 1 KiB"

# Four at once on fixed slots: the device runs out of memory.
k run --backend host -j 4 --slots 4 --warm 0 --repeat 4 -o "$T/fixed" faults/memory_hog
expect_rc 1 "four 40 MiB tests at once on a 100 MiB device fail"
flat "$T/fixed/report.yaml"
expect_match "$(grep -E '^tests\.[0-9]+\.message=' "$T/flat.txt" | grep -m1 -E 'KE_ENOMEM|KE_ECAP')" \
  'KE_ENOMEM|KE_ECAP' "...for want of device memory"

# --slots auto with the baseline's peaks: 100 slots on the device, each
# memory_hog takes 45 (40 MiB of the 90 MiB budget), two at a time.
KILN_FAULT_SLEEP_LOG="$T/auto.sleeps" k run --backend host -j 4 --slots auto --slots-from "$T/base" --warm 0 --repeat 4 -o "$T/auto" \
  faults/memory_hog
expect_rc 0 "--slots auto: all four pass"
expect_out 'slots auto: 1 of 1 tests have a peak in .*base \(largest 40.0 MiB\)' "console: where the peaks came from"
flat "$T/auto/report.yaml"
expect_eq "$(field settings.slots)" auto "settings: slots auto"
expect_eq "$(field devices.0.slots)" 100 "the device has 100 slots"
expect_eq "$(field devices.0.budget_bytes)" $(((100 << 20) * 9 / 10)) "its budget: 90% of its free memory"
expect_match "$(field run.slots_from)" 'base$' "the report names the peaks' source"
expect_eq "$(tfield faults/memory_hog slots)" 45 "each test takes 45 slots"
n=$("$KH_PROBE" overlap "$T/auto.sleeps")
expect_eq "$n" 2 "two tests at a time"
KILN_FAULT_SLEEP_LOG="$T/warm.sleeps" k run --backend host -j 4 --slots auto --slots-from "$T/base" --repeat 4 -o "$T/warm" faults/memory_hog
expect_rc 0 "--slots auto with warm children: all four pass"
flat "$T/warm/report.yaml"
expect_eq "$(tfield faults/memory_hog warm)" true "...in warm children"
expect_eq "$(tfield faults/memory_hog slots)" 45 "...which take the test's share"
expect_eq "$("$KH_PROBE" overlap "$T/warm.sleeps")" 2 "...two at a time"

# A warm runner opens its context before it takes its slots, while other
# tests may hold the device's memory; its cap must be sized when its test
# starts, not from what was free at that early open. Driven by hand: a hog
# holds 60 MiB while the warm runner opens, then ends before the warm
# runner's 60 MiB test is assigned.
R=$KILN_RUNNER_DIR/kiln-runner-host
free_mb() { "$R" --devices | sed -nE 's/.*free_bytes=([0-9]+).*/\1/p' | awk '{print int($1 / 1048576)}'; }
KILN_FAULT_HOG_MB=60 KILN_FAULT_SLEEP_MS=1500 "$R" faults/memory_hog >"$T/hog.txt" 2>&1 &
hog=$!
for _ in $(seq 100); do [ "$(free_mb)" -le 40 ] && break; sleep 0.05; done
expect_eq "$(free_mb)" 40 "the hog holds 60 of the device's 100 MiB"
mkfifo "$T/assign"
KILN_FAULT_HOG_MB=60 KILN_FAULT_SLEEP_MS=0 "$R" --warm --result-fd 3 <"$T/assign" \
  3>"$T/warm.records" >"$T/warm.txt" 2>&1 &
warm=$!
exec 4>"$T/assign"
for _ in $(seq 100); do grep -q '^ready' "$T/warm.records" && break; sleep 0.05; done
expect_match "$(grep '^ready' "$T/warm.records")" 'status=ok' "the warm runner opened its context beside the hog"
wait $hog
echo "assign id=faults/memory_hog" >&4
exec 4>&-
wait $warm
expect_eq "$?" 0 "the warm runner's 60 MiB test, assigned once the hog ended, passes"
expect_match "$(grep '^result' "$T/warm.records")" '^result status=pass' "...and reports a pass"
grep -q 'KE_ECAP' "$T/warm.records" && fail "the warm runner's cap came from its early open: $(grep -m1 -o 'refused.*' "$T/warm.records")"

# A test without history takes the device's default share: 1 of --jobs.
k run --backend host -j 4 --slots auto --slots-from "$T/base" --warm 0 -o "$T/new" faults/gpu_sleeper
expect_rc 0 "a test the report lacks"
flat "$T/new/report.yaml"
expect_eq "$(tfield faults/gpu_sleeper slots)" 25 "...takes 100/jobs slots"

# Without --slots-from, the newest run of the backend under reports/runs.
mkdir -p "$T/cwd" && cd "$T/cwd"
k run --backend host -j 1 faults/memory_hog
k run --backend host -j 4 --slots auto --warm 0 faults/memory_hog
expect_rc 0 "--slots auto from the newest run"
expect_out 'slots auto: 1 of 1 tests have a peak in reports/runs/[0-9TZ]+-host/report.yaml' \
  "...found under reports/runs"
k run --backend host --slots 2 --slots-from "$T/base" faults/pass
expect_rc 2 "--slots-from without --slots auto is refused"
expect_tokens_full "at the end"
finish
