#!/usr/bin/env bash
# --sanitize: each runner under compute-sanitizer (here a stand-in with its
# report layout: fake-compute-sanitizer.sh), its findings in the test's
# record and outcome; on the host backend memcheck through an
# AddressSanitizer runner, which must catch the planted out-of-bounds
# kernel (faults/oob_write_edge) where a plain run does not; clear
# refusals where a tool is missing or does not apply.
. "$(dirname "$0")/lib.sh"

FAKE=$(dirname "$(readlink -f "$0")")/fake-compute-sanitizer.sh
asan=0
"$KILN_RUNNER_DIR/kiln-runner-host" --version | grep -q 'sanitizers: address' && asan=1

# compute-sanitizer's findings become the test's record and outcome.
KILN_COMPUTE_SANITIZER=$FAKE k run --backend host --sanitize memcheck -o "$T/cs" \
  faults/oob_write_edge faults/pass
expect_rc 1 "memcheck: a finding fails the run"
flat "$T/cs/report.yaml"
expect_eq "$(tfield faults/oob_write_edge outcome)" fail "the planted out-of-bounds kernel fails"
expect_match "$(tfield faults/oob_write_edge message)" \
  '^compute-sanitizer found 1 error: Invalid __global__ write of size 4 bytes in ke_fault_store\(float \*, long\) block \(0,0,0\) thread \(0,0,0\)' \
  "...with what, where, block and thread"
expect_eq "$(tfield faults/oob_write_edge sanitizer_findings.0.tool)" memcheck "record: the tool"
expect_eq "$(tfield faults/oob_write_edge sanitizer_findings.0.kind)" "Invalid __global__ write of size 4 bytes" "record: the kind"
expect_eq "$(tfield faults/oob_write_edge sanitizer_findings.0.kernel)" "ke_fault_store(float *, long)" "record: the kernel"
expect_eq "$(tfield faults/oob_write_edge sanitizer_findings.0.address)" 0x7fb992a00fa0 "record: the address"
expect_eq "$(tfield faults/oob_write_edge sanitizer_findings.0.thread)" "(0,0,0)" "record: the thread"
expect_eq "$(tfield faults/oob_write_edge sanitizer_findings.0.block)" "(0,0,0)" "record: the block"
expect_match "$(tfield faults/oob_write_edge sanitizer_findings.0.message)" '1 bytes after the nearest allocation' \
  "record: the tool's own words"
[ -s "$T/cs/logs/faults/oob_write_edge.sanitizer.log" ] && ok "the tool's report is kept beside the log" ||
  fail "no sanitizer log"
expect_eq "$(tfield faults/pass outcome)" pass "a clean test passes under it"
expect_eq "$(tfield faults/pass warm)" false "no warm children under compute-sanitizer"
KILN_COMPUTE_SANITIZER=$FAKE k run --backend host --sanitize racecheck -o "$T/race" faults/shared_race
expect_rc 1 "racecheck: a race fails the test"
flat "$T/race/report.yaml"
expect_eq "$(tfield faults/shared_race sanitizer_findings.0.kind)" "Error: Race reported between Write access" \
  "racecheck: the hazard"
expect_eq "$(tfield faults/shared_race sanitizer_findings.0.kernel)" "ke_fault_race(float *)" "racecheck: the kernel"

# Refusals, before any test runs.
KILN_COMPUTE_SANITIZER=$T/none k run --backend host --sanitize memcheck faults/pass
expect_rc 3 "compute-sanitizer missing: an infrastructure error"
expect_out "needs NVIDIA's compute-sanitizer .*not found in $T/none" "...naming where it looked"
k run --backend host --sanitize racecheck faults/pass
expect_rc 2 "racecheck on the host backend: refused"
expect_out 'only memcheck is offered' "...saying what is"
if [ $asan = 0 ]; then
  k run --backend host --sanitize memcheck faults/pass
  expect_rc 2 "memcheck with a runner built without AddressSanitizer: refused"
  expect_out 'needs a runner built with AddressSanitizer.*-Db_sanitize=address,undefined' "...saying how to build one"
  echo "(the AddressSanitizer runner's checks run in the ASan build's pass)"
else
  # The ASan build: the planted kernel is caught, a clean test passes.
  k run --backend host --sanitize memcheck -o "$T/asan" faults/oob_write_edge faults/pass
  expect_rc 1 "ASan memcheck: the planted kernel fails the run"
  flat "$T/asan/report.yaml"
  expect_eq "$(tfield faults/oob_write_edge outcome)" fail "the out-of-bounds store is caught"
  expect_eq "$(tfield faults/oob_write_edge sanitizer_findings.0.tool)" address "record: AddressSanitizer"
  expect_eq "$(tfield faults/oob_write_edge sanitizer_findings.0.kind)" "heap-buffer-overflow: WRITE of size 4" \
    "record: a heap-buffer-overflow write of 4 bytes"
  expect_eq "$(tfield faults/oob_write_edge sanitizer_findings.0.kernel)" ke_fault_store "record: the kernel"
  expect_eq "$(tfield faults/oob_write_edge sanitizer_findings.0.block)" "(0,0,0)" "record: the block"
  expect_eq "$(tfield faults/oob_write_edge sanitizer_findings.0.thread)" "(0,0,0)" "record: the thread"
  expect_match "$(tfield faults/oob_write_edge message)" '^AddressSanitizer/UBSan found 1 error: heap-buffer-overflow' \
    "the outcome names the finding"
  expect_eq "$(tfield faults/pass outcome)" pass "a clean test passes"
fi
# Without --sanitize the planted kernel goes unnoticed on the host (its
# store lands in the allocator's rounding), except in the ASan build.
k run --backend host -o "$T/plain" faults/oob_write_edge
[ $asan = 0 ] && expect_rc 0 "without a sanitizer the planted kernel passes unnoticed"
expect_tokens_full "at the end"
expect_no_runners "at the end"
finish
