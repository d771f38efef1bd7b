#!/usr/bin/env bash
# Clocks and throttling. Every GPU test records its device's clocks at its
# start and end; the host emulation has none, which the record says (a
# reason, not an error). `report diff` discounts a slower kernel or a lower
# metric of a test whose device throttled: planted in the data (a copy of a
# real report with a kernel ten times as slow, far outside the noise of
# its three repeats), the diff finds a regression,
# and the same copy with a clocks record saying the device was capped by
# power finds it `throttled` instead, no regression. The readers behind
# the records (NVML, AMD sysfs) are tested in tests/engine/clocks-readers.c.
. "$(dirname "$0")/lib.sh"
need_pyyaml

# Three repeats of enough tests for report diff's noise model to judge a
# figure (docs/reports.md).
k run --backend host --jobs 1 --repeat 3 -o "$T/base" drift/slow_kernel faults/pass softmax
expect_rc 0 "base run"
flat "$T/base/report.yaml"
expect_eq "$(tfield faults/pass clocks.0.when)" start "a clocks record at the test's start"
expect_eq "$(tfield faults/pass clocks.0.source)" none "the host emulation has no clock source"
expect_eq "$(tfield faults/pass clocks.0.error)" "the host emulation has no clocks" "...and says why"
expect_eq "$(tfield faults/pass outcome)" pass "no clocks is not a failure"
expect_eq "$(tfield faults/pass throttled)" "" "not throttled"

# plant F THROTTLE FILE: the base report with drift/slow_kernel F times
# slower; THROTTLE 1 gives it a clocks record of a power-capped device.
plant() {
  python3 - "$T/base/report.yaml" "$1" "$2" "$3" <<'PY'
import sys, yaml
rep = yaml.safe_load(open(sys.argv[1]))
f, throttle = float(sys.argv[2]), sys.argv[3] == "1"
# Every repeat of the test gets the first repeat's times (times f): under a
# loaded machine one slow repeat would widen the measured noise until even
# x10 is within it, and the test is about the judgement, not the load.
first = {}
for t in rep["tests"]:
    if t["id"] != "drift/slow_kernel":
        continue
    for k in t["kernels"]:
        keys = ("total_ms", "min_ms", "median_ms", "max_ms")
        k.update({key: v * f for key, v in first.setdefault(
            k["name"], {key: k[key] for key in keys}).items()})
    t["times"]["body_ms"] = first.setdefault("body", t["times"]["body_ms"]) * f
    if throttle:
        t["clocks"] = [{"when": "end", "device": 0, "source": "nvml", "sm_mhz": 1095,
                        "mem_mhz": 2619, "sm_max_mhz": 1980, "mem_max_mhz": 2619,
                        "temp_c": 83.0, "power_w": 700.0, "reasons": 4,
                        "reason_names": "sw_power_cap", "throttled": 1}]
yaml.safe_dump(rep, open(sys.argv[4], "w"), sort_keys=False, explicit_end=True)
PY
}
ZERO="--time-rel 0 --kernel-abs-ms 0 --test-abs-ms 0"
plant 1 0 "$T/steady.yaml"
plant 10 0 "$T/slow.yaml"
k report diff "$T/steady.yaml" "$T/slow.yaml" $ZERO
expect_rc 1 "a 10x slower kernel is a regression"
expect_out 'slower kernel +drift/slow_kernel kernel softmax' "...named"
plant 10 1 "$T/throttled.yaml"
k report diff "$T/steady.yaml" "$T/throttled.yaml" --yaml "$T/d.yaml" $ZERO
expect_rc 0 "the same, with the device throttled: no regression"
expect_out 'throttled +drift/slow_kernel kernel softmax: median .* \(x10\.00.*\[discounted: the device throttled' \
  "...listed as throttled, discounted"
flat "$T/d.yaml"
expect_eq "$(field findings.0.kind)" throttled "diff YAML: kind throttled"
expect_eq "$(field findings.0.discounted)" slower_kernel "diff YAML: what it would have been"
expect_eq "$(field findings.0.regression)" false "diff YAML: not a regression"
expect_eq "$(field counts.slower_kernel)" 0 "no slower_kernel counted"
# The report marks the test, and a report rewritten by kiln keeps it.
k report merge "$T/throttled.yaml" -o "$T/merged.yaml" --force
flat "$T/merged.yaml"
expect_eq "$(tfield drift/slow_kernel throttled)" true "a throttled test is marked in the report"
expect_eq "$(tfield drift/slow_kernel clocks.0.reason_names)" sw_power_cap "...with its reasons"
expect_eq "$(tfield faults/pass throttled)" "" "...and only that one"
k report diff "$T/throttled.yaml" "$T/base/report.yaml" $ZERO
expect_rc 0 "throttled in the base report: discounted too"
finish
