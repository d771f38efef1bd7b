#!/usr/bin/env bash
# GoogleTest details under kiln: a passing test keeps its file and line (as
# `kiln list -v` shows them) in report.yaml and JUnit; a test with no time
# of its own (crashed in, or never run after a crash of, a shared process)
# prints no "nan ms"; on the host backend a GoogleTest crash is not followed
# by a device health probe (the emulated devices live in kiln's runner).
. "$(dirname "$0")/lib.sh"
[ -n "${KILN_GTEST:-}" ] || { echo "SKIP: no GoogleTest sample"; exit 77; }
export KILN_EMU_DEVICES=1

k run --backend host -j 1 -o "$T/pass" --junit "$T/pass.xml" --gtest "$KILN_GTEST" -- 'Zeros/0.DefaultIsZero'
expect_rc 0 "a passing GoogleTest test"
flat "$T/pass/report.yaml"
expect_match "$(field tests.0.file):$(field tests.0.line)" '^tests/thirdparty/gtest-sample\.cc:[0-9]+$' \
  "report.yaml keeps its file and line"
grep -qE '<testcase [^>]*file="tests/thirdparty/gtest-sample\.cc"[^>]*line="[0-9]+"' "$T/pass.xml" &&
  ok "JUnit keeps its file and line" || fail "no file/line in JUnit: $(grep -m1 '<testcase' "$T/pass.xml")"

k run --backend host --isolation none -o "$T/none" --gtest "$KILN_GTEST" -- 'Crash.Segfault' 'Zeros/*' 'Pow2/Sizes.PowerOfTwo/0'
expect_out '^CRASH +Crash\.Segfault' "the crash in the shared process"
grep -q 'nan ms' "$T/out.txt" && fail "the console prints nan ms: $(grep 'nan ms' "$T/out.txt" | head -2)" ||
  ok "no nan ms for tests without a time of their own"

k run --backend host -j 1 -o "$T/crash" --gtest "$KILN_GTEST" -- 'Crash.Segfault' 'Zeros/0*'
expect_out '^CRASH +Crash\.Segfault' "a GoogleTest crash in its own process"
grep -qE 'probing the device|health probe' "$T/out.txt" &&
  fail "a health probe follows a GoogleTest crash on the host backend: $(grep -m1 probe "$T/out.txt")" ||
  ok "no health probe after a GoogleTest crash on the host backend"
finish
