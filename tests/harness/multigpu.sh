#!/usr/bin/env bash
# Tests that need several devices, on the host emulation's two devices: the
# test API's .devices and a config's resources:, slots taken on every
# device at once (one semop: two kilns running such tests side by side end
# without deadlock), the visible devices narrowed to exactly those, a
# context per device in the child, no starvation of a big test behind small
# ones, and a skip with the reason on a host with too few devices.
. "$(dirname "$0")/lib.sh"
need_pyyaml

export KILN_EMU_DEVICES=2 KILN_FAULT_SLEEP_MS=400
slots_full() {
  local v
  for d in 0 1; do
    v=$("$KH_PROBE" semval "$KEY" $d)
    [ "${v% *}" = "${v#* }" ] && ok "device $d slots back at full ($v) $1" || fail "device $d slots $v $1"
  done
}

# A test of two devices: the engine opens a context on each.
k run --backend host -o "$T/two" engine/multi_device faults/two_devices
expect_rc 0 "two devices: both tests pass"
flat "$T/two/report.yaml"
expect_eq "$(tfield engine/multi_device outcome)" pass "engine/multi_device: a context per device"
# The run ends with its slowest tests and where their time went, and each
# test that opened a context reports its references' share of the body.
expect_out '^slowest 2 tests \(wall: reference \+ kernels' "kiln run lists the slowest tests"
expect_out '^ +[0-9.]+ s  engine/multi_device: reference [0-9.]+ s, kernels [0-9.]+ s \(3 launches\)' \
  "...with a test's reference, kernel and other time"
expect_match "$(tfield engine/multi_device times.reference_ms)" '^[0-9.e+-]+$' \
  "times.reference_ms in the report"
expect_match "$(tfield faults/two_devices devices.0),$(tfield faults/two_devices devices.1)" '^(0,1|1,0)$' \
  "the report lists both devices"
expect_match "$(tfield faults/two_devices notes.1.key)=$(tfield faults/two_devices notes.1.value)" \
  '^KILN_EMU_VISIBLE_DEVICES=(0,1|1,0)$' "the child sees exactly those two devices"
expect_eq "$(tfield faults/two_devices other_devices_info.0.index)" 1 "the second device's record"
k list faults/two_devices
expect_out 'devices=2' "kiln list shows the devices a test needs"

# Two kilns at once, each with tests of two devices and tests of one, one
# slot per device: both finish (the slots of both devices are taken in one
# semop, all or none, so neither holds one device waiting for the other),
# and a two-device test never overlaps another test.
for r in a b; do
  "$KILN" run --backend host --slots 1 -j 3 --warm 0 --repeat 3 -o "$T/$r" faults/gpu_sleeper \
    faults/two_devices >"$T/$r.txt" 2>&1 &
done
wait
for r in a b; do
  grep -q '6 test runs in .*: 6 pass' "$T/$r.txt" && ok "run $r: all six passed" ||
    { fail "run $r"; tail -5 "$T/$r.txt"; }
done
if python3 - "$T/a/report.yaml" "$T/b/report.yaml" <<'PY'
import sys, yaml, datetime
def t(s): return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
runs = []
for p in sys.argv[1:]:
    runs += [(x["id"], t(x["started"]), t(x["ended"]), x.get("devices")) for x in yaml.safe_load(open(p))["tests"]]
m = 0.03   # the parents' reaping latency
for i, (a, s, e, d) in enumerate(runs):
    if a != "faults/two_devices": continue
    assert sorted(d) == [0, 1], d
    for j, (b, s2, e2, _) in enumerate(runs):
        assert i == j or e2 - m <= s or e - m <= s2, (a, s, e, b, s2, e2)
print(len(runs), "runs; no test overlapped a two-device test")
PY
then ok "tests of two devices hold both, alone"; else fail "overlap of a two-device test"; fi
slots_full "after two concurrent kilns"
expect_no_runners "after two concurrent kilns"

# No starvation: a two-device test queued behind one-device tests starts
# before the one-device tests queued after it.
k run --backend host --slots 1 -j 4 --warm 0 -o "$T/fair" --repeat 4 faults/gpu_sleeper \
  faults/two_devices
if python3 - "$T/fair/report.yaml" <<'PY'
import sys, yaml
tests = yaml.safe_load(open(sys.argv[1]))["tests"]
for k, t in enumerate(tests):
    if t["id"] != "faults/two_devices": continue
    later = [u for u in tests[k + 1:] if u["id"] == "faults/gpu_sleeper"]
    assert all(u["started"] >= t["started"] for u in later), (t["repeat"], [u["started"] for u in later])
print("every two-device test started before the one-device tests queued after it")
PY
then ok "no overtaking: the two-device tests were not starved"; else fail "a two-device test was overtaken"; fi

# A config asks for two devices where the test declares one (CTest's
# RESOURCE_GROUPS, kept out of the test's source).
printf 'resources:\n  - {match: "faults/gpu_sleeper", gpus: 2}\n' >"$T/res.yaml"
k run --backend host --config "$T/res.yaml" -o "$T/cfg" faults/gpu_sleeper
expect_rc 0 "config resources: the test runs"
flat "$T/cfg/report.yaml"
expect_match "$(tfield faults/gpu_sleeper devices.0),$(tfield faults/gpu_sleeper devices.1)" '^(0,1|1,0)$' \
  "config resources: the test took two devices"
expect_eq "$(field settings.resources)" "faults/gpu_sleeper:gpus=2,slots=0" "settings record the resources"
printf 'resources:\n  - {match: "faults/*", gpus: 0}\n' >"$T/bad.yaml"
k run --backend host --config "$T/bad.yaml" faults/pass
expect_rc 2 "config resources: gpus 0 refused"
expect_out "bad.yaml:2:31: 'gpus' must be a number from 1 to 32, not '0'" "...naming file, line, column and value"

# Too few devices: a skip with the reason, decided without a child.
KILN_EMU_DEVICES=1 k run --backend host -o "$T/one" engine/multi_device faults/pass
expect_rc 0 "one device: the run still passes"
flat "$T/one/report.yaml"
expect_eq "$(tfield engine/multi_device outcome)" skip "a two-device test skips"
expect_eq "$(tfield engine/multi_device message)" "needs 2 devices at once; the host has 1 (host)" \
  "...saying why"
KILN_EMU_DEVICES=1 "$KILN_RUNNER_DIR/kiln-runner-host" engine/multi_device >"$T/out.txt" 2>&1
expect_out 'needs 2 devices at once; 1 visible' "a runner by hand skips it too"
slots_full "at the end"
finish
