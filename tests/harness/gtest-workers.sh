#!/usr/bin/env bash
# A GoogleTest binary nobody wrote for kiln (tests/thirdparty/gtest-sample)
# under --isolation worker: many of its tests in one process (one filter),
# each result taken as the test ends (from the console: failure file and
# line, skip reason), GoogleTest's properties from its JSON at exit; a
# crash, an exit and a hang mid-sequence, after which the rest resume in a
# new worker and every run gets exactly one final result; every non-pass
# confirmed alone (a test failing only in the worker is `polluted`); a
# --repeat that never puts a test twice in one filter; the check between
# tests, which names a process the binary left running.
. "$(dirname "$0")/lib.sh"

G=$KILN_GTEST
SRC=$KILN_SOURCE/tests/thirdparty/gtest-sample.cc

# runs ID: how many records the report has of a test.
runs() { grep -cE "^tests\.[0-9]+\.id=$1\$" "$T/flat.txt"; }

cat >"$T/gt.yaml" <<'EOF'
tests:
  - match: Hang.*
    timeout: 1
EOF

# ---- Many tests in one process, each result as it ends -----------------------------
k run --gtest "$G" -j 1 --isolation worker -o "$T/w" Arith.Adds Arith.FailsOnPurpose \
  'Zeros/*' Skip.NoDevice 'Pow2/*'
expect_rc 1 "a worker with two failing tests"
flat "$T/w/report.yaml"
R=$T/w/report.yaml
declare -A want=([Arith.Adds]=pass [Arith.FailsOnPurpose]=fail [Zeros/0.DefaultIsZero]=pass
  [Zeros/1.DefaultIsZero]=pass [Zeros/2.DefaultIsZero]=pass [Skip.NoDevice]=skip
  [Pow2/Sizes.PowerOfTwo/0]=pass [Pow2/Sizes.PowerOfTwo/1]=pass [Pow2/Sizes.PowerOfTwo/2]=fail)
for t in "${!want[@]}"; do
  expect_eq "$(finals "$t" "$R")" "${want[$t]}" "$t: its one final outcome"
done
p=$(for t in Arith.Adds Zeros/0.DefaultIsZero Skip.NoDevice Pow2/Sizes.PowerOfTwo/1; do
  tfield "$t" pid; done | sort -u | wc -l)
expect_eq "$p" 1 "the passing and skipped tests ran in one process"
expect_eq "$(pids "$R")" 3 "one worker and the two failures alone: 3 processes for 11 records"
expect_match "$(tfield Arith.Adds log.path)" '^logs/worker-[0-9]+\.log$' "the worker's log"
expect_match "$(tfield Arith.Adds times.body_ms)" '^[0-9.e-]+$' "each test's time, from its end line"
# The failure as the worker's console gave it (no JSON is read for it).
expect_eq "$(tfield Arith.FailsOnPurpose line)" "$(grep -n 'planted failure' "$SRC" | cut -d: -f1)" \
  "the failure's line, in the worker"
expect_match "$(tfield Arith.FailsOnPurpose message)" 'planted failure' "the failure's message, in the worker"
expect_eq "$(tfield Arith.FailsOnPurpose final)" false "the worker's failing run is replaced..."
expect_eq "$(tfield Arith.FailsOnPurpose final 1)" true "...by its run alone"
expect_eq "$(note Arith.FailsOnPurpose confirmed_alone 1)" true "failing alone too: confirmed"
expect_eq "$(note Arith.FailsOnPurpose worker_after)" Arith.Adds "the test before it in the worker"
expect_match "$(tfield Skip.NoDevice message)" 'needs a device this machine lacks' "the skip reason, in the worker"
# The binary runs its filter in its own order; the worker's tests before
# the last one, in that order.
expect_eq "$(note Pow2/Sizes.PowerOfTwo/2 worker_after)" \
  "Arith.Adds, Arith.FailsOnPurpose, Zeros/0.DefaultIsZero, Zeros/1.DefaultIsZero, Zeros/2.DefaultIsZero, Skip.NoDevice, Pow2/Sizes.PowerOfTwo/0, Pow2/Sizes.PowerOfTwo/1" \
  "the tests before it, in the order the binary ran them"
expect_eq "$(note Pow2/Sizes.PowerOfTwo/1 value_param)" 64 "a property from GoogleTest's JSON, in the worker"

# ---- --repeat: a test once per filter ----------------------------------------------------
k run --gtest "$G" -j 1 --isolation worker --repeat 2 -o "$T/rep" Arith.Adds 'Zeros/*'
expect_rc 0 "--repeat 2 in workers"
flat "$T/rep/report.yaml"
expect_eq "$(field summary.pass)" 8 "every repeat passed"
expect_eq "$(pids "$T/rep/report.yaml")" 2 "one worker per round of the repeat"

# ---- A crash and an exit mid-sequence: the rest resume in new workers ---------------------
k run --gtest "$G" -j 1 --isolation worker -o "$T/crash" Arith.Adds Crash.Segfault \
  Quits.Early Skip.NoDevice 'Pow2/*'
expect_rc 1 "a crash and an exit in workers"
flat "$T/crash/report.yaml"
R=$T/crash/report.yaml
declare -A want=([Arith.Adds]=pass [Crash.Segfault]=crash [Quits.Early]=crash
  [Skip.NoDevice]=skip [Pow2/Sizes.PowerOfTwo/0]=pass [Pow2/Sizes.PowerOfTwo/1]=pass
  [Pow2/Sizes.PowerOfTwo/2]=fail)
for t in "${!want[@]}"; do
  expect_eq "$(finals "$t" "$R")" "${want[$t]}" "$t: exactly one final result"
done
for t in Arith.Adds Skip.NoDevice Pow2/Sizes.PowerOfTwo/0; do
  expect_eq "$(runs "$t")" 1 "$t: in the report once"
done
expect_eq "$(note Crash.Segfault worker_after)" Arith.Adds "the crash in the worker, after Arith.Adds"
expect_eq "$(note Crash.Segfault confirmed_alone 1)" true "the crash confirmed alone"
expect_match "$(tfield Quits.Early message 1)" 'exited with status 3' "the exit, confirmed alone"
a=$(tfield Arith.Adds pid) q=$(tfield Quits.Early pid) s=$(tfield Skip.NoDevice pid)
[ "$a" != "$q" ] && [ "$q" != "$s" ] && [ "$s" = "$(tfield Pow2/Sizes.PowerOfTwo/0 pid)" ] &&
  ok "after each end a new worker took the rest" || fail "workers: Arith $a, Quits $q, Skip $s"

# ---- A hang mid-sequence -----------------------------------------------------------------
k run --gtest "$G" -c "$T/gt.yaml" --grace 0.5 -j 1 --isolation worker -o "$T/hang" \
  Arith.Adds Hang.Forever Skip.NoDevice Pow2/Sizes.PowerOfTwo/0
expect_rc 1 "a hang in a worker"
flat "$T/hang/report.yaml"
R=$T/hang/report.yaml
expect_eq "$(finals Hang.Forever "$R")" timeout "the hang: one final timeout"
expect_match "$(tfield Hang.Forever message 1)" 'timed out after 1 s' "confirmed alone, the config's timeout"
for t in Arith.Adds Skip.NoDevice Pow2/Sizes.PowerOfTwo/0; do
  expect_eq "$(runs "$t")" 1 "$t: one result beside the hang"
done
expect_eq "$(finals Pow2/Sizes.PowerOfTwo/0 "$R")" pass "after the hang, resumed: pass"

# ---- Failing in the worker, passing alone: polluted --------------------------------------
k run --gtest "$G" -j 1 --isolation worker -o "$T/flk" Arith.Adds Flaky.OnceThenPasses
expect_rc 0 "a polluted test does not fail the run"
expect_eq "$(finals Flaky.OnceThenPasses "$T/flk/report.yaml")" polluted "failed in the worker, passed alone"
expect_out '^POLLUTED +Flaky\.OnceThenPasses ' "the console says polluted"
expect_out 'in a worker after Arith\.Adds; passed alone \(`kiln bisect Flaky\.OnceThenPasses`' \
  "naming the test before it and the bisect command"

# ---- The check between tests: a process the binary left running --------------------------
# The stray's test runs first: a process is named at the first end line
# kiln reads after it started, which for a test mid-sequence may be the
# end of the test before it (docs/third-party.md).
k run --gtest "$G" -j 1 --isolation worker -o "$T/stray" Strays.DISABLED_LeavesChild \
  'Pow2/Sizes.PowerOfTwo/[01]'
expect_rc 1 "a worker that left a process fails the run"
flat "$T/stray/report.yaml"
expect_match "$(note Strays.DISABLED_LeavesChild worker_check)" \
  'processes besides the GoogleTest binary alive when kiln read this test.s end: pid [0-9]+ `sleep 37`' \
  "the check names the process at the end of the test that started it"
expect_eq "$(note Pow2/Sizes.PowerOfTwo/0 worker_check)" "" "named once, not again at later tests"
expect_eq "$(finals Pow2/Sizes.PowerOfTwo/1 "$T/stray/report.yaml")" pass "the worker went on"
expect_match "$(field run.processes_left.0.command)" '^sleep 37$' "the worker's leftover, killed at its end"
expect_no_runners "after the worker that left one"
# A task that shares the binary's memory until its exit (LeakSanitizer's
# tracer, a vfork child) is the binary, not a process it left.
k run --gtest "$G" -j 1 --isolation worker -o "$T/vm" Strays.DISABLED_SharesMemory \
  'Pow2/Sizes.PowerOfTwo/[01]'
expect_rc 0 "a task sharing the binary's memory"
flat "$T/vm/report.yaml"
for t in Strays.DISABLED_SharesMemory Pow2/Sizes.PowerOfTwo/0; do
  expect_eq "$(note "$t" worker_check)" "" "$t: the memory-sharing task not named"
done
# Alone (one process per test), containment charges it to the test.
k run --gtest "$G" -o "$T/alone" Strays.DISABLED_LeavesChild
flat "$T/alone/report.yaml"
expect_eq "$(tfield Strays.DISABLED_LeavesChild outcome)" leak "alone: the test leaked a process"

expect_tokens_full "after the workers"
expect_no_runners "at the end"
finish
