#!/usr/bin/env bash
# A GoogleTest binary nobody wrote for kiln (tests/thirdparty/gtest-sample,
# Debian's GoogleTest) under `kiln run --gtest`: every outcome as the
# report must say it (from GoogleTest's JSON: failure file, line and
# message, skip reason, parameterised and typed tests by their full names,
# properties), crash, hang, exit mid-test, flaky under --retries; tags and
# timeouts from a config; selection, disabled tests, repeat, shards and
# merge, JUnit, HTML, diff; --isolation none in one process; device tokens
# and narrowing (a 2-device cuda runner stand-in answers --devices; the
# test reads CUDA_VISIBLE_DEVICES); no process left.
. "$(dirname "$0")/lib.sh"

G=$KILN_GTEST
SRC=$KILN_SOURCE/tests/thirdparty/gtest-sample.cc

cat >"$T/gt.yaml" <<'EOF'
jobs: 2
tests:
  - match: Hang.*
    timeout: 1
  - match: "Pow2/*"
    tags: [param, sizes]
  - match: Zeros/*
    tags: typed
EOF

# ---- Listing ------------------------------------------------------------------
k list --gtest "$G" -c "$T/gt.yaml"
expect_rc 0 "kiln list --gtest"
expect_out '^Pow2/Sizes\.PowerOfTwo/2 +\[param,sizes\]' "parameterised: full name, tags from the config"
expect_out '^Zeros/1\.DefaultIsZero +\[typed\]' "typed: full name"
if grep -q 'DISABLED_' "$T/out.txt"; then fail "a DISABLED_ test is listed by default"; else ok "DISABLED_ tests held back"; fi
k list --gtest "$G" -v Arith.Adds
expect_out "gtest-sample\.cc:$(grep -n '^TEST(Arith, Adds)' "$SRC" | cut -d: -f1)\$" "file and line from GoogleTest's JSON listing"

# ---- Every outcome, one process per test -----------------------------------------
k run --gtest "$G" -c "$T/gt.yaml" --grace 0.5 -o "$T/all" --junit "$T/all.xml"
expect_rc 1 "a run with failing tests"
flat "$T/all/report.yaml"
declare -A want=([Arith.Adds]=pass [Arith.FailsOnPurpose]=fail [Crash.Segfault]=crash
  [Hang.Forever]=timeout [Quits.Early]=crash [Skip.NoDevice]=skip
  [Pow2/Sizes.PowerOfTwo/0]=pass [Pow2/Sizes.PowerOfTwo/1]=pass [Pow2/Sizes.PowerOfTwo/2]=fail
  [Zeros/0.DefaultIsZero]=pass [Zeros/1.DefaultIsZero]=pass [Zeros/2.DefaultIsZero]=pass
  [Flaky.OnceThenPasses]=fail [Environment.UnderKiln]=pass [Devices.SeesOneDevice]=skip)
for t in "${!want[@]}"; do
  expect_eq "$(tfield "$t" outcome)" "${want[$t]}" "$t outcome"
done
expect_eq "$(field summary.total)" 15 "15 tests (the disabled one left out)"
expect_match "$(tfield Arith.FailsOnPurpose file)" 'gtest-sample\.cc$' "failure: GoogleTest's file"
expect_eq "$(tfield Arith.FailsOnPurpose line)" "$(grep -n 'planted failure' "$SRC" | cut -d: -f1)" "failure: GoogleTest's line"
expect_match "$(tfield Arith.FailsOnPurpose message)" 'planted failure' "failure: GoogleTest's message"
expect_match "$(tfield Pow2/Sizes.PowerOfTwo/2 message)" '96 is no power of two' "parameterised failure message"
expect_eq "$(note Pow2/Sizes.PowerOfTwo/2 value_param)" 96 "the parameter, as a note"
expect_eq "$(note Zeros/2.DefaultIsZero type_param)" double "the type, as a note"
expect_eq "$(tfield Pow2/Sizes.PowerOfTwo/2 suite)" Pow2/Sizes "suite: GoogleTest's"
expect_match "$(tfield Skip.NoDevice message)" 'needs a device this machine lacks' "skip: GTEST_SKIP's reason"
expect_eq "$(tfield Skip.NoDevice line)" "$(grep -n 'GTEST_SKIP() << "needs a device' "$SRC" | cut -d: -f1)" "skip: its line"
# Under AddressSanitizer the binary reports the SEGV itself and aborts.
expect_match "$(tfield Crash.Segfault signal)" '^SIG(SEGV|ABRT)$' "crash: the signal"
expect_match "$(tfield Crash.Segfault message)" '^killed by SIG' "crash: message"
expect_match "$(tfield Hang.Forever message)" 'timed out after 1 s' "timeout from the config's rule"
expect_match "$(tfield Quits.Early message)" 'exited with status 3 without finishing the test \(no result\)' "exit mid-test"
expect_match "$(tfield Arith.Adds times.body_ms)" '^[0-9.e-]+$' "GoogleTest's time as the body phase"
expect_match "$(tfield Arith.Adds log.path)" '^logs/Arith\.Adds\.log$' "a log per test"
grep -q '^\[ RUN      \] Arith.Adds$' "$T/all/logs/Arith.Adds.log" && ok "the log is GoogleTest's console" || fail "no console in the log"
pids=$(for t in Arith.Adds Arith.FailsOnPurpose Zeros/0.DefaultIsZero; do tfield "$t" pid; done | sort -u | wc -l)
expect_eq "$pids" 3 "one process per test"
expect_tokens_full "after crashes and timeouts"
expect_no_runners "after the run"
if python3 - "$T/all.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
cases = {(c.get("classname"), c.get("name")): c for c in ET.parse(sys.argv[1]).getroot().iter("testcase")}
assert ("Pow2/Sizes", "PowerOfTwo/2") in cases, sorted(cases)
assert cases[("Pow2/Sizes", "PowerOfTwo/2")].find("failure") is not None
assert cases[("Crash", "Segfault")].find("error") is not None
assert cases[("Skip", "NoDevice")].find("skipped") is not None
assert cases[("Zeros/1", "DefaultIsZero")].find("failure") is None
PY
then ok "JUnit: GoogleTest's suites as classnames, full names, verdicts"
else fail "JUnit of a GoogleTest run"; fi

# ---- Selection, disabled tests, retries, repeat ----------------------------------------
k run --gtest "$G" -c "$T/gt.yaml" -o "$T/tag" @param
flat "$T/tag/report.yaml"
expect_eq "$(field summary.total)" 3 "@param (a tag from the config) selects the three"
k run --gtest "$G" -o "$T/dis" Arith.DISABLED_Slow
expect_rc 0 "a DISABLED_ test named by its id runs"
flat "$T/dis/report.yaml"
expect_eq "$(tfield Arith.DISABLED_Slow outcome)" pass "disabled test run on request"
k run --gtest "$G" --retries 1 -o "$T/retry" Flaky.OnceThenPasses
expect_rc 0 "flaky under --retries"
flat "$T/retry/report.yaml"
expect_eq "$(tfield Flaky.OnceThenPasses outcome 1)" flaky "second attempt: flaky"
k run --gtest "$G" --repeat 3 -o "$T/rep" Arith.Adds
flat "$T/rep/report.yaml"
expect_eq "$(field summary.pass)" 3 "--repeat 3"

# ---- diff: flaky before, failing now ----------------------------------------------------------
k run --gtest "$G" -o "$T/fl2" Flaky.OnceThenPasses Arith.Adds
k report diff "$T/retry" "$T/fl2"
expect_rc 1 "report diff finds the regression"
expect_out 'Flaky\.OnceThenPasses' "diff names the test"

# ---- Shards and merge, HTML -------------------------------------------------------------------
sel=('Arith.*' 'Pow2/*' 'Zeros/*' 'Environment.*' 'Skip.*')
for s in 1 2; do k run --gtest "$G" --shard $s/2 -o "$T/sh$s" "${sel[@]}"; done
k report merge "$T/sh1" "$T/sh2" -o "$T/merged.yaml"
expect_rc 0 "merge of two shards"
flat "$T/merged.yaml"
expect_eq "$(field summary.total)" 10 "the shards hold every selected test once"
k report html "$T/all" -o "$T/all.html"
expect_rc 0 "report html"
grep -q 'Pow2/Sizes.PowerOfTwo/2' "$T/all.html" && ok "HTML lists GoogleTest names" || fail "HTML lacks the test"

# ---- --isolation none: the binary once, the old way --------------------------------------------
k run --gtest "$G" --isolation none -o "$T/none" Arith.Adds Arith.FailsOnPurpose 'Pow2/*' Crash.Segfault 'Zeros/*'
expect_rc 1 "--isolation none"
flat "$T/none/report.yaml"
pids=$(grep -E '^tests\.[0-9]+\.pid=' "$T/flat.txt" | cut -d= -f2 | sort -u | wc -l)
expect_eq "$pids" 1 "one process ran every test that started"
expect_eq "$(tfield Arith.Adds outcome)" pass "before the crash: pass"
expect_eq "$(tfield Arith.FailsOnPurpose outcome)" fail "before the crash: fail (from the console: no JSON)"
expect_eq "$(tfield Arith.FailsOnPurpose line)" "$(grep -n 'planted failure' "$SRC" | cut -d: -f1)" "its line, from the console"
expect_eq "$(tfield Zeros/2.DefaultIsZero outcome)" pass "typed test before the crash"
expect_match "$(tfield Crash.Segfault outcome)" crash "the crash ends the process"
expect_match "$(tfield Pow2/Sizes.PowerOfTwo/0 message)" 'not run: the shared' "after the crash: not run"
k run --gtest "$G" --isolation none --repeat 2 -o "$T/none2" Arith.Adds 'Zeros/*'
expect_rc 0 "--isolation none --repeat 2 (GoogleTest repeats in one process)"
flat "$T/none2/report.yaml"
expect_eq "$(field summary.pass)" 8 "every repeat recorded"

# ---- Devices: tokens and the visible-device variable ---------------------------------------------
mkdir -p "$T/fake"
cat >"$T/fake/kiln-runner-cuda" <<'EOF'
#!/bin/sh
# Stands in for a cuda runner's answer to --devices on a 2-GPU host.
[ "$1" = --devices ] || exit 2
echo "runner kiln=0 protocol=$KILN_PROTOCOL backend=cuda"
echo "backend name=cuda devices=2"
echo "device backend=cuda index=0 name=GPU0 arch=sm_90 warp_size=32 total_bytes=1000 free_bytes=1000"
echo "device backend=cuda index=1 name=GPU1 arch=sm_90 warp_size=32 total_bytes=1000 free_bytes=1000"
EOF
chmod +x "$T/fake/kiln-runner-cuda"
k run --backend cuda --runner-dir "$T/fake" --slots 1 -j 2 --repeat 6 --gtest "$G" -o "$T/dev" Devices.SeesOneDevice
expect_rc 0 "a test that reads CUDA_VISIBLE_DEVICES"
flat "$T/dev/report.yaml"
expect_eq "$(field summary.pass)" 6 "it saw one device each time"
devs=""
for r in 0 1 2 3 4 5; do
  d=$(tfield Devices.SeesOneDevice device $r)
  expect_eq "$(note Devices.SeesOneDevice visible_devices $r)" "$d" "run $r sees its own device ($d) as CUDA_VISIBLE_DEVICES"
  devs="$devs$d"
done
case $devs in *0*1*|*1*0*) ok "both devices used" ;; *) fail "devices used: $devs" ;; esac
expect_match "$(tfield Devices.SeesOneDevice times.token_wait_ms)" '^[0-9.e-]+$' "slots taken for it (token_wait)"
expect_tokens_full "after the device runs"
expect_no_runners "at the end"
finish
