#!/usr/bin/env bash
# Device health: after a test on a device crashes, times out or meets a
# device fault, kiln probes the device before it gets another test. A
# device that passes goes back into service and the tests that ran beside
# the fault keep their results; one that fails (the host emulation's
# device loss, kept across processes in KILN_EMU_STATE_DIR) is taken out of
# the run, the tests that ran on it then become `collateral` and run again
# on a healthy device, and with no device left the rest are not run; in
# a worker, the test that lost its device is not run again alone on
# another.
. "$(dirname "$0")/lib.sh"
need_pyyaml

export KILN_FAULT_SLEEP_MS=1500
slots_full() {  # slots_full DEVICE WHAT
  local v
  v=$("$KH_PROBE" semval "$KEY" "$1")
  [ "${v% *}" = "${v#* }" ] && ok "device $1 slots back at full ($v) $2" || fail "device $1 slots $v $2"
}

# 1. A crash that leaves the device healthy: one probe, which passes; the
# test that ran beside it is published as it was.
k run --backend host -j 2 --slots 2 -o "$T/ok" faults/gpu_sleeper faults/oob_write_far
expect_rc 1 "a crash fails the run"
expect_out 'device 0: faults/oob_write_far ended badly; probing' "console: the probe starts"
expect_out 'device 0 passed its health probe' "console: the verdict"
flat "$T/ok/report.yaml"
expect_eq "$(field health_probes.0.device)" 0 "probe: the device"
expect_eq "$(field health_probes.0.after)" faults/oob_write_far "probe: after the crash"
expect_eq "$(field health_probes.0.passed)" true "probe: passed"
expect_eq "$(field devices.0.in_service)" "" "the device stays in service"
expect_eq "$(tfield faults/gpu_sleeper outcome)" pass "the test beside it keeps its pass"
expect_eq "$(tfield faults/gpu_sleeper final)" true "...as its final run"
slots_full 0 "after a passed probe"
expect_no_runners "after a passed probe"

# 2. A device lost mid-run, two devices: the lost one fails its probe and
# is taken out; the test that was running on it is collateral and runs
# again on the other device; the rest of the run uses that one. Device 0
# has one slot, device 1 two, so gpu_sleeper runs on 0 and device_lost and
# memory_hog share 1 (tests go to the least used device with room).
export KILN_EMU_STATE_DIR=$T/emu KILN_EMU_DEVICES=2 KILN_FAULT_LOSE_AFTER_MS=300
mkdir -p "$KILN_EMU_STATE_DIR"
echo '{"version":{"major":1,"minor":0},"local":[{"gpus":[{"id":"0","slots":1},{"id":"1","slots":2}]}]}' >"$T/spec.json"
k run --backend host -j 3 --warm 0 --resource-spec "$T/spec.json" -o "$T/lost" \
  faults/gpu_sleeper faults/device_lost faults/memory_hog faults/chain_arm
expect_rc 1 "a lost device (and its test's failure) fails the run"
flat "$T/lost/report.yaml"
lost=$(tfield faults/device_lost device)
expect_match "$(tfield faults/device_lost message)" 'KE_EDEVICE' "the test that lost it fails with KE_EDEVICE"
expect_eq "$(tfield faults/device_lost device_faults.0.status)" KE_EDEVICE "its device_fault record"
expect_eq "$(field health_probes.0.device)" "$lost" "the lost device was probed"
expect_eq "$(field health_probes.0.passed)" false "...and failed"
expect_match "$(field health_probes.0.message)" 'hipErrorLaunchFailure' "...with the reason"
expect_eq "$(field devices.$lost.in_service)" false "the device is out of service"
expect_eq "$(field devices.$lost.removed_after)" faults/device_lost "...after the test that lost it"
if python3 - "$T/lost/report.yaml" "$lost" <<'PY'
import sys, yaml
rep = yaml.safe_load(open(sys.argv[1])); lost = int(sys.argv[2])
col = [t for t in rep["tests"] if t["outcome"] == "collateral"]
assert col, "no collateral run"
for c in col:
    assert c["device"] == lost, ("collateral run on", c["device"])
    assert c["final"] is False, c
    assert c["message"].startswith("collateral: device %d failed its health probe after "
                                   "faults/device_lost" % lost), c["message"]
    again = [t for t in rep["tests"] if t["id"] == c["id"] and t["attempt"] == c["attempt"] + 1]
    assert again and again[0]["final"] and again[0]["outcome"] == "pass", again
    assert again[0]["device"] != lost, ("run again on", again[0]["device"])
late = [t for t in rep["tests"] if t["device"] == lost and t["started"] > col[0]["ended"]]
assert not late, ("tests started on the lost device afterwards", late)
print("collateral:", ", ".join("%s (attempt %d)" % (c["id"], c["attempt"]) for c in col))
PY
then ok "the tests beside the loss are collateral and ran again on the healthy device"
else fail "collateral runs"; fi
expect_eq "$(tfield faults/device_lost device)" 1 "the lost device is device 1"
expect_eq "$(field summary.pass)" 3 "every other test passed in the end"
slots_full 0 "after the loss"
slots_full 1 "after the loss"
expect_no_runners "after the loss"
k report rebuild "$T/lost" --report "$T/rebuilt.yaml"
flat "$T/rebuilt.yaml"
expect_eq "$(field health_probes.0.passed)" false "rebuilt from the journal: the probe is kept"
expect_eq "$(field devices.$lost.in_service)" false "rebuilt: the device out of service"

# 3. One device, lost: nothing left to run on; the rest are not run, with
# the reason. The test that lost the device failed on its own, and a
# test's own verdict comes first: kiln exits 1 (3, infrastructure, only
# when no test failed by itself; the exit statuses are in docs/harness.md).
rm -rf "$KILN_EMU_STATE_DIR"/*
export KILN_EMU_DEVICES=1
k run --backend host -j 2 --slots 2 --warm 0 -o "$T/none" faults/pass faults/gpu_sleeper \
  faults/device_lost faults/chain_arm
expect_rc 1 "no device left: the failed test's verdict first"
flat "$T/none/report.yaml"
expect_eq "$(field devices.0.in_service)" false "the only device is out"
expect_match "$(tfield faults/chain_arm message)" '^not run: no healthy device left: device 0 was taken out after faults/device_lost' \
  "a queued test is not run, with the reason"
expect_eq "$(tfield faults/chain_arm outcome)" error "...as an error"
expect_eq "$(tfield faults/gpu_sleeper outcome)" collateral "the test beside the loss is collateral"
expect_match "$(tfield faults/gpu_sleeper message 1)" '^not run: no healthy device left' \
  "...and its second run is not run"
slots_full 0 "after the last device went"
expect_no_runners "after the last device went"

# 4. In a worker, two devices: the test that loses its device is not run
# again alone on the other one (where it would take that one out too);
# its own failure stands, with the reason, and the other device stays in
# service for the rest of the run.
rm -rf "$KILN_EMU_STATE_DIR"/*
export KILN_EMU_DEVICES=2
k run --backend host -j 3 --isolation worker --resource-spec "$T/spec.json" -o "$T/wlost" \
  faults/gpu_sleeper faults/device_lost faults/memory_hog faults/chain_arm
expect_rc 1 "a lost device in a worker fails the run"
flat "$T/wlost/report.yaml"
wl=$(tfield faults/device_lost device)
expect_eq "$(tfield faults/device_lost ran)" worker "the test that lost its device ran in a worker"
expect_eq "$(finals faults/device_lost "$T/wlost/report.yaml")" fail "its own failure is its one result"
expect_match "$(note faults/device_lost not_confirmed)" "^device $wl failed its health probe after it: not run again alone" \
  "not confirmed alone, with the reason"
expect_eq "$(field devices.$((1 - wl)).in_service)" "" "the other device stays in service"
for t in gpu_sleeper memory_hog chain_arm; do
  expect_eq "$(finals faults/$t "$T/wlost/report.yaml")" pass "faults/$t passes"
done
slots_full $((1 - wl)) "after the loss in a worker"
expect_no_runners "after the loss in a worker"
finish
