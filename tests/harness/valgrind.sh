#!/usr/bin/env bash
# kiln and its runners under valgrind. kiln itself runs a fault-suite run
# under memcheck (no invalid access, no definite leak: valgrind's own exit
# status 99 would say so) and still classifies every fault; runners wrapped
# with --wrap valgrind report what valgrind finds, and a test that passed
# but made valgrind exit 99 is not a pass. Skipped without valgrind, and in
# sanitizer builds (valgrind cannot run ASan binaries).
. "$(dirname "$0")/lib.sh"

command -v valgrind >/dev/null || { echo "valgrind not installed"; exit 77; }
if nm -D "$KILN" 2>/dev/null | grep -q __asan_init || nm "$KILN" 2>/dev/null | grep -q __asan_init; then
  echo "sanitizer build: valgrind does not apply"; exit 77
fi

vg=(valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite
    --errors-for-leak-kinds=definite --child-silent-after-fork=yes)
sel=(faults/pass faults/fail_assert faults/segfault faults/abort_call faults/exit_early
     faults/hang_ignores_term faults/leak faults/garbage faults/truncated faults/grandchild
     faults/oob_write_far faults/over_cap faults/closed_pipe faults/flood)
export KILN_FAULT_FLOOD_MB=20
"${vg[@]}" "$KILN" run --backend host -j 2 --grace 0.5 -o "$T/vg" "${sel[@]}" >"$T/out.txt" 2>&1
rc=$?
expect_rc 1 "kiln under valgrind: failing tests, no valgrind error (99)"
if grep -q '^==[0-9]*==' "$T/out.txt"; then fail "valgrind reported on kiln"; sed 's/^/    | /' "$T/out.txt" | grep '==' | head -20
else ok "valgrind reported nothing on kiln"; fi
flat "$T/vg/report.yaml"
declare -A want=([pass]=pass [fail_assert]=fail [segfault]=crash [abort_call]=crash
  [exit_early]=crash [hang_ignores_term]=timeout [leak]=leak [garbage]=error
  [truncated]=error [grandchild]=leak [oob_write_far]=crash [over_cap]=fail
  [closed_pipe]=crash [flood]=pass)
for t in "${!want[@]}"; do
  expect_eq "$(tfield "faults/$t" outcome)" "${want[$t]}" "under valgrind: faults/$t"
done
expect_tokens_full "after the valgrind run"

# Runners under valgrind.
k run --backend host --wrap "valgrind -q --error-exitcode=99" -o "$T/wrap" \
  faults/pass faults/leak faults/uninit_branch faults/unwritten_read
flat "$T/wrap/report.yaml"
expect_eq "$(tfield faults/pass outcome)" pass "--wrap valgrind: a clean test passes"
expect_eq "$(tfield faults/leak outcome)" leak "--wrap valgrind: the device leak is still a leak"
expect_eq "$(tfield faults/uninit_branch outcome)" fail "--wrap valgrind: a pass with a valgrind error is a fail"
expect_match "$(tfield faults/uninit_branch message)" 'exited with status 99 after the test passed' "--wrap valgrind: the message says why"
expect_match "$(tfield faults/uninit_branch log.tail)" 'uninitialised value' "--wrap valgrind: valgrind's report is in the log"
expect_eq "$(tfield faults/unwritten_read outcome)" fail "--wrap valgrind: the unwritten read fails even without --poison"
expect_tokens_full "after the --wrap valgrind run"
expect_no_runners "after the --wrap valgrind run"
finish
