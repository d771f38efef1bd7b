#!/usr/bin/env bash
# Longest first: with an earlier report (the run folder's own, or
# --durations), the queue runs its longest tests first and tests the
# report does not know before them; --durations none keeps the selection's
# order; --isolation worker keeps a binary's tests together, cuts its
# sequences by time so that the lanes end together (the queue over the
# lanes free now or freeing, long tests taking short ones from the tail
# along), and a GoogleTest
# worker given its tests out of the binary's order still runs each once.
# The earlier reports are kiln's own, with their wall times rewritten.
. "$(dirname "$0")/lib.sh"
export KILN_EMU_DEVICES=1

E=(engine/ledger_reports_call_site engine/cap_refuses_with_numbers engine/cap_counts_live_bytes
  engine/uniform_range engine/device_query engine/timing_per_kernel engine/random_inputs)
NEW=engine/ledger_peak

# times REPORT ID=MS...: the report's wall times of those tests set to MS.
times() {
  local r=$1
  shift
  python3 - "$r" "$@" <<'PY'
import re, sys
path, want = sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:])
out, cur = [], None
for line in open(path):
    m = re.match(r"^- id: (.*)$", line)
    if m:
        cur = m.group(1)
    m = re.match(r"^(    wall_ms: )", line)
    if m and cur in want:
        line = m.group(1) + want[cur] + "\n"
    out.append(line)
open(path, "w").write("".join(out))
PY
}
# order REPORT: the report's test ids in the order they started (-j 1).
order() { awk '$1 == "-" && $2 == "id:" { printf "%s%s", n++ ? " " : "", $3 }' "$1"; }

# ---- The run folder's earlier report ------------------------------------------------------
k run --backend host -j 1 -o "$T/r" "${E[@]}"
expect_rc 0 "a first run"
expect_eq "$(order "$T/r/report.yaml")" "${E[*]}" "without times: the selection's order"
times "$T/r/report.yaml" engine/ledger_reports_call_site=30 engine/cap_refuses_with_numbers=700 \
  engine/cap_counts_live_bytes=10 engine/uniform_range=500 engine/device_query=20 \
  engine/timing_per_kernel=900 engine/random_inputs=40
want="$NEW engine/timing_per_kernel engine/cap_refuses_with_numbers engine/uniform_range engine/random_inputs engine/ledger_reports_call_site engine/device_query engine/cap_counts_live_bytes"
k run --backend host -j 1 -o "$T/r" "${E[@]}" $NEW
expect_rc 0 "the run again in its folder"
expect_eq "$(order "$T/r/report.yaml")" "$want" "longest first by the earlier report, the untimed test first"
expect_out "queued longest first by the times in $T/r/report.yaml \(7 of 8 tests timed; the others first\)" \
  "the console says where the order came from"
flat "$T/r/report.yaml"
expect_eq "$(field run.durations_from)" "$T/r/report.yaml" "the report says where the order came from"
cp "$T/r/report.yaml" "$T/earlier.yaml"

# ---- --durations ------------------------------------------------------------------------------
k run --backend host -j 1 -o "$T/n" --durations none "${E[@]}"
expect_eq "$(order "$T/n/report.yaml")" "${E[*]}" "--durations none: the selection's order"
times "$T/earlier.yaml" engine/ledger_reports_call_site=70 engine/cap_refuses_with_numbers=10 \
  engine/cap_counts_live_bytes=60 engine/uniform_range=20 engine/device_query=50 \
  engine/timing_per_kernel=30 engine/random_inputs=40
k run --backend host -j 1 -o "$T/d" --durations "$T/earlier.yaml" "${E[@]}"
expect_eq "$(order "$T/d/report.yaml")" "engine/ledger_reports_call_site engine/cap_counts_live_bytes engine/device_query engine/random_inputs engine/timing_per_kernel engine/uniform_range engine/cap_refuses_with_numbers" \
  "--durations FILE: by that report's times"
k run --backend host -j 1 -o "$T/x" --durations "$T/missing.yaml" "${E[@]}"
expect_rc 2 "--durations of a report that is not there"
expect_out "^kiln: --durations: .*missing\.yaml" "names the flag and the file"
k run --backend host -j 1 --isolation none -o "$T/none" --durations "$T/earlier.yaml" "${E[@]}"
expect_eq "$(order "$T/none/report.yaml")" "${E[*]}" "--isolation none keeps the selection's order"

# ---- Workers: sequences cut by time ------------------------------------------------------------
# One test ten times the others: a free lane's share of the work (1700 ms
# over 2 free lanes) is that test alone; the next sequence is cut from what
# is left over the one lane still free: the seven 100 ms tests together.
# Cutting over every lane instead (guided self-scheduling) gave 3, 2, 1 and
# 1 of them: 5 processes, each a start-up.
cp "$T/r/report.yaml" "$T/w.yaml"
times "$T/w.yaml" engine/timing_per_kernel=1000 engine/ledger_reports_call_site=100 \
  engine/cap_refuses_with_numbers=100 engine/cap_counts_live_bytes=100 engine/uniform_range=100 \
  engine/device_query=100 engine/random_inputs=100 $NEW=100
k run --backend host -j 2 --isolation worker --durations "$T/w.yaml" -o "$T/w" "${E[@]}" $NEW
expect_rc 0 "workers ordered by time"
flat "$T/w/report.yaml"
long=$(tfield engine/timing_per_kernel pid)
shared=0
for t in "${E[@]}" $NEW; do
  [ "$t" != engine/timing_per_kernel ] && [ "$(tfield "$t" pid)" = "$long" ] && shared=$((shared + 1))
done
expect_eq "$shared" 0 "the long test had a worker to itself"
expect_eq "$(order "$T/w/report.yaml" | cut -d' ' -f1)" engine/timing_per_kernel "and started first"
expect_eq "$(pids "$T/w/report.yaml")" 2 "8 runs in 2 processes, one per lane"
# The same with --jobs 8 on one device of 2 slots: 2 runs at once, so the
# same cuts (a share over 8 lanes would give every test a process of its own).
k run --backend host -j 8 --slots 2 --isolation worker --durations "$T/w.yaml" -o "$T/w8" \
  "${E[@]}" $NEW
expect_rc 0 "workers ordered by time, --jobs 8 on 2 slots"
expect_eq "$(pids "$T/w8/report.yaml")" 2 "the slots bound the lanes: 8 runs in 2 processes"

# As many long tests as slots: each takes its part of the short ones from
# the queue's tail (the room its lane's share leaves), instead of every
# slot running a long test alone and the short ones waiting for them in
# new processes (2 slots: 1000 + 3 x 100 ms each; 4 processes before).
cp "$T/r/report.yaml" "$T/l.yaml"
times "$T/l.yaml" engine/timing_per_kernel=1000 engine/cap_refuses_with_numbers=1000 \
  engine/ledger_reports_call_site=100 engine/cap_counts_live_bytes=100 engine/uniform_range=100 \
  engine/device_query=100 engine/random_inputs=100 $NEW=100
k run --backend host -j 2 --isolation worker --durations "$T/l.yaml" -o "$T/l" "${E[@]}" $NEW
expect_rc 0 "two long tests on two slots"
flat "$T/l/report.yaml"
expect_eq "$(pids "$T/l/report.yaml")" 2 "8 runs in 2 processes"
expect_eq "$([ "$(tfield engine/timing_per_kernel pid)" != "$(tfield engine/cap_refuses_with_numbers pid)" ] &&
  echo two)" two "the long tests in two workers"

# Equal tests on 4 lanes: a quarter each, started together, ending
# together; slow start-ups (a second each, --wrap) change nothing, as
# each lane pays one. Cut over every lane, with a floor of one start-up,
# the same runs took 5 processes.
cat >"$T/slow-start" <<'SH'
#!/bin/sh
sleep 1
exec "$@"
SH
chmod +x "$T/slow-start"
cp "$T/r/report.yaml" "$T/s.yaml"
times "$T/s.yaml" engine/timing_per_kernel=100 engine/ledger_reports_call_site=100 \
  engine/cap_refuses_with_numbers=100 engine/cap_counts_live_bytes=100 engine/uniform_range=100 \
  engine/device_query=100 engine/random_inputs=100 $NEW=100
k run --backend host -j 4 --isolation worker --wrap "$T/slow-start" --durations "$T/s.yaml" \
  -o "$T/s" "${E[@]}" $NEW
expect_rc 0 "workers that start slowly"
expect_eq "$(pids "$T/s/report.yaml")" 4 "8 equal runs on 4 lanes: 4 processes of 2 runs"

# ---- A GoogleTest worker given its tests out of the binary's order -----------------------------
if [ -n "${KILN_GTEST:-}" ]; then
  G=$KILN_GTEST
  S=(Arith.Adds Zeros/0.DefaultIsZero Zeros/1.DefaultIsZero Zeros/2.DefaultIsZero Skip.NoDevice)
  k run --gtest "$G" -j 1 -o "$T/g" "${S[@]}"
  times "$T/g/report.yaml" Arith.Adds=1 Zeros/0.DefaultIsZero=2 Zeros/1.DefaultIsZero=3 \
    Zeros/2.DefaultIsZero=4 Skip.NoDevice=5
  k run --gtest "$G" -j 1 --isolation worker -o "$T/g" "${S[@]}" Pow2/Sizes.PowerOfTwo/2
  expect_rc 1 "a GoogleTest worker, queued in reverse"
  R=$T/g/report.yaml
  flat "$R"
  expect_eq "$(order "$R" | cut -d' ' -f1-3)" "Pow2/Sizes.PowerOfTwo/2 Skip.NoDevice Zeros/2.DefaultIsZero" \
    "queued: the untimed test first, then longest first"
  for t in "${S[@]}"; do
    expect_eq "$(finals "$t" "$R")" "$([ "$t" = Skip.NoDevice ] && echo skip || echo pass)" "$t: one result"
  done
  expect_eq "$(pids "$R")" 2 "one worker ran them all in the binary's order (and the failure alone)"
  expect_eq "$(note Pow2/Sizes.PowerOfTwo/2 worker_after)" \
    "Arith.Adds, Zeros/0.DefaultIsZero, Zeros/1.DefaultIsZero, Zeros/2.DefaultIsZero, Skip.NoDevice" \
    "the tests before the failure, in the order the binary ran them"
  # A suite's tests stay together in a worker (a test file is collected
  # once per worker), the suites ranked by their longest; alone, each test
  # by its own time.
  U=(Arith.Adds Arith.FailsOnPurpose Zeros/0.DefaultIsZero Zeros/1.DefaultIsZero)
  k run --gtest "$G" -j 1 -o "$T/gu" "${U[@]}"
  R=$T/gu/report.yaml
  times "$R" Arith.Adds=10 Zeros/0.DefaultIsZero=9 Arith.FailsOnPurpose=8 Zeros/1.DefaultIsZero=7
  k run --gtest "$G" -j 1 --isolation worker --durations "$R" -o "$T/gs" "${U[@]}"
  expect_eq "$(order "$T/gs/report.yaml" | cut -d' ' -f1-4)" \
    "Arith.Adds Arith.FailsOnPurpose Zeros/0.DefaultIsZero Zeros/1.DefaultIsZero" \
    "in a worker: by suite, the suites by their longest"
  k run --gtest "$G" -j 1 --durations "$R" -o "$T/gp" "${U[@]}"
  expect_eq "$(order "$T/gp/report.yaml" | cut -d' ' -f1-4)" \
    "Arith.Adds Zeros/0.DefaultIsZero Arith.FailsOnPurpose Zeros/1.DefaultIsZero" \
    "one process per test: each by its own time"

  # A lane that frees while another still runs takes what brings it level
  # with that one, not the whole queue (nor a share over every lane). Two
  # lanes: the runner's X (3 s by the estimates; its process starts 6 s
  # late, --wrap) alone, then its e (0.1 s) in the other lane, which then
  # frees twice while X has not begun: the GoogleTest tests (1.3, 1.2 and
  # 1.1 s, a suite each) go 2 and 1, level with X's 3 s (3.6 s queued, X's
  # 3 s: 3.3 s each). All in the one free lane would be 3.6 s in one
  # worker; a share over both lanes each time, 3 workers.
  cat >"$T/late-x" <<'SH'
#!/bin/sh
case "$*" in *engine/timing_per_kernel*) sleep 6 ;; esac
exec "$@"
SH
  chmod +x "$T/late-x"
  M=(engine/timing_per_kernel engine/device_query Arith.Adds Zeros/0.DefaultIsZero
    Pow2/Sizes.PowerOfTwo/0)
  RUNNER=$(dirname "$KILN")/../../suites/kiln-runner-host
  k run --backend host --runner "$RUNNER" --gtest "$G" -j 2 -o "$T/mx" "${M[@]}"
  expect_rc 0 "the runner's tests and GoogleTest's in one run"
  times "$T/mx/report.yaml" engine/timing_per_kernel=3000 engine/device_query=100 Arith.Adds=1300 \
    Zeros/0.DefaultIsZero=1200 Pow2/Sizes.PowerOfTwo/0=1100
  k run --backend host --runner "$RUNNER" --gtest "$G" -j 2 --isolation worker --wrap "$T/late-x" \
    --durations "$T/mx/report.yaml" -o "$T/ml" "${M[@]}"
  expect_rc 0 "two sources in workers, one lane late"
  flat "$T/ml/report.yaml"
  expect_eq "$([ "$(tfield Arith.Adds pid)" = "$(tfield Zeros/0.DefaultIsZero pid)" ] &&
    [ "$(tfield Pow2/Sizes.PowerOfTwo/0 pid)" != "$(tfield Arith.Adds pid)" ] && echo level)" level \
    "the freed lane took 2 of the 3 GoogleTest tests, then the third"
fi
finish
