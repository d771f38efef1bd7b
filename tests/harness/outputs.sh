#!/usr/bin/env bash
# Output paths are checked before the first test starts, and an error names
# the path and the reason; a run's status is never replaced by a later one
# that hides a test failure.
. "$(dirname "$0")/lib.sh"

# no_test_ran DIR: the run folder, if any, holds no test run.
no_test_ran() {
  if [ -f "$1/journal" ] && grep -q '^start \|^run ' "$1/journal"; then fail "$2: a test ran first"
  else ok "$2: refused before any test ran"; fi
}

touch "$T/file"
k run --backend host --report "$T/missing/r.yaml" -o "$T/r1" faults/pass
expect_rc 2 "--report into a missing folder"
expect_out "--report $T/missing/r.yaml: .*No such file or directory" "the error names the path and the reason"
no_test_ran "$T/r1" "--report"
k run --backend host --junit "$T/file/j.xml" -o "$T/r2" faults/pass
expect_rc 2 "--junit under a file"
expect_out "--junit $T/file/j.xml: .*Not a directory" "names the path and the reason"
no_test_ran "$T/r2" "--junit"
XML_OUTPUT_FILE=$T/missing/x.xml k run --backend host -o "$T/r3" faults/pass
expect_rc 2 "XML_OUTPUT_FILE into a missing folder"
expect_out "XML_OUTPUT_FILE $T/missing/x.xml: .*No such file or directory" "names where it came from"
mkdir -p "$T/isdir.xml"
k run --backend host --junit "$T/isdir.xml" -o "$T/r4" faults/pass
expect_rc 2 "--junit naming a folder"
expect_out "Is a directory" "says it is a folder"
k run --backend host -o "$T/file/run" faults/pass
expect_rc 2 "-o under a file"
expect_out "-o $T/file/run: .*Not a directory" "-o: names the path and the reason"
if [ "$(id -u)" -ne 0 ]; then
  mkdir -p "$T/ro"; chmod 555 "$T/ro"
  k run --backend host --report "$T/ro/r.yaml" -o "$T/r5" faults/pass
  expect_rc 2 "--report into a read-only folder"
  expect_out "Permission denied" "the reason"
else
  echo "note: running as root; the read-only folder case is the same check (a probe file)"
fi

# Without -o, from a folder where reports/runs cannot be made.
mkdir -p "$T/wd" && touch "$T/wd/reports"
(cd "$T/wd" && "$KILN" run --backend host faults/pass) >"$T/out.txt" 2>&1; rc=$?
expect_rc 2 "default run folder that cannot be made"
expect_out "reports/runs.*: .*Not a directory" "says which path and why"
expect_out "-o DIR" "and how to choose another"

# A report that cannot be written after all (its folder vanished during the
# run): the test failure's status (1) stands, not 3.
mkdir -p "$T/gone"
KILN_FAULT_SLEEP_MS=1500 "$KILN" run --backend host -j 2 --report "$T/gone/r.yaml" \
  --junit "$T/gone/j.xml" -o "$T/late" faults/fail_assert faults/sleeper >"$T/out.txt" 2>&1 &
kp=$!
sleep 0.6; rm -rf "$T/gone"
wait $kp; rc=$?
expect_rc 1 "a failed test's status survives a report that could not be written"
expect_out "$T/gone/r.yaml: .*No such file or directory" "the write error is still said"
finish
