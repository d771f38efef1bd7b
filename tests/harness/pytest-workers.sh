#!/usr/bin/env bash
# pytest tests in workers (--isolation worker; the sample in
# tests/harness/pytest-workers): one pytest session runs a sequence of node
# ids and reports each as it ends; a polluter's victim fails in the worker,
# passes alone and is `polluted`, naming the polluter (no false failure);
# between two tests the worker checks for a thread, a child process, CUDA
# memory or a CUDA error left behind (the torch stand-in's counters), notes
# it and ends the sequence there, but not the matrix library's workspace
# that torch makes at a first matmul and keeps; a crash, a hang, pytest.exit() and a
# KeyboardInterrupt in the middle of a sequence leave every other test one
# result, and every non-pass is confirmed alone; a module that does not
# import is an error at its turn; a worker whose collection hangs is timed
# out; through the zygote and through fresh interpreters. And, one test per
# process: pytest.exit() and KeyboardInterrupt name themselves, and a zygote
# child waits, as an interpreter does at its exit, for a multiprocessing
# child that is no daemon.
. "$(dirname "$0")/lib.sh"

need_pytest
S=$T/suite
cp -r "$KILN_SOURCE/tests/harness/pytest-workers" "$S"
export PYTHONDONTWRITEBYTECODE=1 KILN_PYTEST_LISTING=$T/listing
C=tests/test_cache.py L=tests/test_leaks.py F=tests/test_faults.py P=tests/test_stops.py

# recs ID: the indexes of a node id's records in $T/flat.txt, in order.
recs() {
  awk -v id="$1" 'index($0, "=") { k = substr($0, 1, index($0, "=") - 1)
    if (k ~ /^tests\.[0-9]+\.id$/ && substr($0, index($0, "=") + 1) == id) { split(k, a, "."); print a[2] } }' \
    "$T/flat.txt"
}
# finals ID: the final outcomes of its runs; nrecs ID: its records.
finals() {
  local i out=""
  for i in $(recs "$1"); do
    [ "$(field "tests.$i.final")" = true ] && out="$out${out:+ }$(field "tests.$i.outcome")"
  done
  echo "$out"
}
nrecs() { recs "$1" | wc -l | tr -d ' '; }
# rec ID N KEY: a field of its N-th record (from 0).
rec() { local i; i=$(recs "$1" | sed -n "$(($2 + 1))p"); [ -n "$i" ] && field "tests.$i.$3"; }
# note ID KEY: the first note KEY on any of its records ('' for none).
note() {
  local i n
  for i in $(recs "$1"); do
    n=$(grep -E "^tests\.$i\.notes\.[0-9]+\.key=$2\$" "$T/flat.txt" | head -1 |
      sed -E 's/^tests\.[0-9]+\.notes\.([0-9]+)\..*/\1/')
    [ -n "$n" ] && { field "tests.$i.notes.$n.value"; return; }
  done
}
# no_fail: no test's final outcome is fail (false failures).
no_fail() {
  local n
  n=$(awk -F= '$1 ~ /^tests\.[0-9]+\.outcome$/ { o[$1] = $2 } $1 ~ /\.final$/ && $2 == "true" {
        sub(/final$/, "outcome", $1); if (o[$1] == "fail") n++ } END { print n + 0 }' "$T/flat.txt")
  expect_eq "$n" 0 "$1: final failures"
}
expect_none_left() {
  sleep 0.3
  local left
  left=$(pgrep -f "kiln_pytest.*$T|sleep 600" | tr '\n' ' ')
  if [ -n "$left" ]; then fail "processes left $1: $left"; ps -o pid,args -p "${left// /,}"
  else ok "nothing left running $1"; fi
}

# The polluter is real: in one plain pytest process its victim fails.
(cd "$S" && "$KILN_PYTHON" -m pytest -q -p no:cacheprovider "$C" >"$T/out.txt" 2>&1)
rc=$?
expect_rc 1 "plain pytest, one process: the victim fails"
expect_out 'FAILED tests/test_cache.py::test_reads' "plain pytest names the victim"

for zyg in true false; do
  # ---- A polluter: its victim fails in the worker, passes alone: polluted ------------
  k run --pytest "$S" --isolation worker -j 1 --zygote $zyg -o "$T/pol-$zyg" "$C"
  expect_rc 0 "a polluter in a worker (zygote $zyg)"
  flat "$T/pol-$zyg/report.yaml"
  expect_eq "$(finals $C::test_reads)" polluted "the victim: polluted, not failed ($zyg)"
  expect_eq "$(finals $C::test_corrupts)" pass "the polluter passes ($zyg)"
  no_fail "the polluter's run ($zyg)"
  expect_match "$(note $C::test_reads worker_after)" "test_cache.py::test_corrupts" \
    "the victim's worker_after names the polluter ($zyg)"
  expect_eq "$(rec $C::test_reads 0 outcome)" fail "in the worker the victim failed ($zyg)"
  expect_eq "$(note $C::test_reads confirmed_alone)" false "alone it passed ($zyg)"
  expect_out "^POLLUTED +$C::test_reads .*" "the console says polluted ($zyg)"
  expect_out "passed alone \(\`kiln bisect $C::test_reads\`" "and prints kiln bisect ($zyg)"
  p=$(rec $C::test_fills 0 pid)
  expect_eq "$(rec $C::test_plain 0 pid) $(rec $C::test_reads 0 pid)" "$p $p" \
    "the file's tests ran in one pytest process ($zyg)"
  start=$([ $zyg = true ] && echo zygote || echo fresh)
  expect_eq "$(note $C::test_plain pytest_start)" $start "each test says how it started ($zyg)"
  ls "$T/pol-$zyg"/logs/worker-*.log >/dev/null 2>&1 && ok "the worker has its log ($zyg)" \
    || fail "no logs/worker-N.log ($zyg)"

  # ---- What a test leaves behind ends its worker --------------------------------------------
  k run --pytest "$S" --isolation worker -j 1 --zygote $zyg --grace 1 -o "$T/leak-$zyg" "$L"
  expect_rc 1 "tests that leave things behind (zygote $zyg)"
  flat "$T/leak-$zyg/report.yaml"
  expect_eq "$(note $L::test_thread_left worker_check)" \
    "1 thread still running: left-behind (daemon)" "a thread left: worker_check ($zyg)"
  expect_eq "$(note $L::test_thread_joined worker_check)$(note $L::test_thread_ending worker_check)" \
    "" "a thread joined, a thread ending by itself: no worker_check ($zyg)"
  if [ "$(rec $L::test_thread_ending 0 pid)" != "$(rec $L::test_thread_left 0 pid)" ]; then
    ok "the test after the thread ran in a new worker ($zyg)"
  else fail "the test after the thread ran in the same worker ($zyg)"; fi
  expect_match "$(note $L::test_process_left worker_check)" \
    '^1 child process still running: pid [0-9]+ `sleep`$' "a child process left: worker_check ($zyg)"
  expect_eq "$(finals $L::test_process_left)" leak "the process left is a leak ($zyg)"
  expect_match "$(rec $L::test_process_left 0 message)" '^left 1 process running after it ended: pid [0-9]+ `sleep 600`' \
    "charged to the test whose check found it ($zyg)"
  expect_eq "$(note $L::test_process_left confirmed_alone)" true "and confirmed alone ($zyg)"
  # The levels before depend on what the worker collected (its whole
  # source: a module that touches CUDA at import makes the workspaces
  # first); the bytes are the test's.
  expect_match "$(note $L::test_memory_freed worker_check)" \
    '^cuda:0 memory_reserved [0-9]+\.[0-9] MiB -> [0-9]+\.[0-9] MiB \(torch.s caching allocator keeps 1048576 bytes more\)$' \
    "memory freed but the cache grown: memory_reserved ($zyg)"
  expect_match "$(note $L::test_memory_left worker_check)" \
    '^cuda:0 memory_allocated [0-9]+\.[0-9] MiB -> [0-9]+\.[0-9] MiB \(3145728 bytes still allocated\); cuda:0 memory_reserved' \
    "memory left allocated: memory_allocated ($zyg)"
  expect_eq "$(note $L::test_cuda_error_left worker_check)" \
    "a CUDA error after the test: torch.cuda.synchronize() raised RuntimeError: CUDA error: an illegal memory access was encountered" \
    "a sticky CUDA error ($zyg)"
  for t in thread_joined thread_left thread_ending memory_freed memory_left cuda_error_left clean; do
    expect_eq "$(finals $L::test_$t)" pass "test_$t: one result, pass ($zyg)"
  done
  expect_none_left "after the leaks ($zyg)"

  # ---- The matrix library's workspace is torch's, not the first matmul's -----------------
  B=tests/test_blas.py
  k run --pytest "$S" --isolation worker -j 1 --zygote $zyg -o "$T/blas-$zyg" "$B"
  expect_rc 0 "a suite of linear layers in a worker (zygote $zyg)"
  flat "$T/blas-$zyg/report.yaml"
  expect_eq "$(note $B::test_first_matmul worker_check)" "" \
    "the first test to multiply is not charged with the workspace ($zyg)"
  expect_eq "$(rec $B::test_next 0 pid)" "$(rec $B::test_first_matmul 0 pid)" \
    "both tests in one worker ($zyg)"
  expect_eq "$(finals $B::test_first_matmul) $(finals $B::test_next)" "pass pass" "both pass ($zyg)"

  # ---- A crash and a hang mid-sequence: one result each, none twice --------------------
  k run --pytest "$S" --isolation worker -j 1 --zygote $zyg --grace 1 -o "$T/crash-$zyg" "$F"
  expect_rc 1 "a crash and a hang in a worker (zygote $zyg)"
  flat "$T/crash-$zyg/report.yaml"
  expect_eq "$(finals $F::test_exits) $(finals $F::test_segfault) $(finals $F::test_hangs)" \
    "crash crash timeout" "os._exit, SIGSEGV, a hang: confirmed alone ($zyg)"
  expect_match "$(rec $F::test_exits 0 message)" '^exited with status 7 without finishing the test' \
    "os._exit(7) in the worker ($zyg)"
  expect_match "$(rec $F::test_segfault 0 message)" '^killed by SIGSEGV' "SIGSEGV in the worker ($zyg)"
  expect_match "$(rec $F::test_hangs 0 message)" '^timed out after 3 s' "the hang in the worker ($zyg)"
  for t in first second third last; do
    expect_eq "$(finals $F::test_$t)/$(nrecs $F::test_$t)" pass/1 "test_$t: one result, run once ($zyg)"
  done
  for t in exits segfault hangs; do
    expect_eq "$(nrecs $F::test_$t)/$(note $F::test_$t confirmed_alone)" 2/true \
      "test_$t: the worker's run and the one alone ($zyg)"
  done
  if [ "$(rec $F::test_second 0 pid)" != "$(rec $F::test_exits 0 pid)" ]; then
    ok "the rest after the crash resumed in a new worker ($zyg)"
  else fail "test_second ran in the crashed worker ($zyg)"; fi
  expect_none_left "after the crashes ($zyg)"

  # ---- pytest.exit() and KeyboardInterrupt inside a test ---------------------------------
  k run --pytest "$S" --isolation worker -j 1 --zygote $zyg -o "$T/stop-$zyg" "$P"
  expect_rc 1 "tests that stop pytest, in a worker (zygote $zyg)"
  flat "$T/stop-$zyg/report.yaml"
  expect_eq "$(finals $P::test_calls_exit) $(finals $P::test_interrupts)" "error error" \
    "pytest.exit() and KeyboardInterrupt: errors ($zyg)"
  expect_eq "$(rec $P::test_calls_exit 0 message)" \
    "the test called pytest.exit('the test stops the session'): pytest ended its session there" \
    "pytest.exit's message ($zyg)"
  for t in before between after; do
    expect_eq "$(finals $P::test_$t)/$(nrecs $P::test_$t)" pass/1 "test_$t: one result ($zyg)"
  done
done

# ---- multiprocessing's own helpers are no leak; a spawned process left running is ------
W=tests/test_spawn.py
k run --pytest "$S" --isolation worker -j 1 --zygote false -o "$T/spawn" \
  $W::test_spawns_and_joins $W::test_after_the_spawn $W::test_spawn_left
expect_rc 0 "tests that start processes with the spawn method"
flat "$T/spawn/report.yaml"
expect_eq "$(note $W::test_spawns_and_joins worker_check)" "" \
  "a spawned process joined: multiprocessing's resource tracker is not blamed"
expect_eq "$(rec $W::test_after_the_spawn 0 pid)" "$(rec $W::test_spawns_and_joins 0 pid)" \
  "the next test ran in the same worker"
expect_match "$(note $W::test_spawn_left worker_check)" '^1 child process still running: pid [0-9]+ ' \
  "a spawned process left running is still found"
expect_none_left "after the spawned processes"

# ---- A module that does not import: an error at its turn, the rest runs ---------------
k run --pytest "$S" --isolation worker -j 1 -o "$T/broken" tests/test_broken.py \
  tests/test_host.py::test_host_only
expect_rc 1 "a module that does not import, in a worker"
flat "$T/broken/report.yaml"
expect_match "$(rec tests/test_broken.py 0 message)" \
  "^collection: .*ModuleNotFoundError: No module named 'kiln_sample_module_that_is_not_there'" \
  "its error, pytest's reason"
expect_eq "$(finals tests/test_broken.py)" error "confirmed alone"
expect_eq "$(rec tests/test_host.py::test_host_only 0 pid)/$(finals tests/test_host.py::test_host_only)" \
  "$(rec tests/test_broken.py 0 pid)/pass" "the next test, in the same worker, passes"

# ---- The last runs of a queue spread over the free lanes -------------------------------
# Five runs on two lanes: each worker starts with two and asks for the
# fifth; a worker that took four (a file kept together) would leave the
# other lane idle for them. Every worker collects the whole source, so a
# file split over two costs no collection the second lane's start did not.
k run --pytest "$S" --isolation worker -j 2 -o "$T/files" "$C" $P::test_before
flat "$T/files/report.yaml"
expect_eq "$(pids "$T/files/report.yaml")" 2 "-j 2: five runs in two workers"
p=$(rec $C::test_fills 0 pid)
q=$(rec $C::test_reads 0 pid)
[ "$p" != "$q" ] && ok "test_cache.py's tests ran in both lanes" ||
  fail "test_cache.py's four tests all in one worker: the other lane idled"

# ---- A worker whose collection hangs is timed out ------------------------------------
SAMPLE_COLLECT_HANG=1 k run --pytest "$S" --isolation worker -j 1 --timeout 3 --grace 1 \
  -o "$T/hang" $C::test_fills $C::test_plain
expect_rc 1 "a worker that hangs while pytest collects"
flat "$T/hang/report.yaml"
expect_match "$(rec $C::test_fills 0 message)" '^timed out after 3 s' "its first test: timed out"
expect_eq "$(rec $C::test_plain 0 message)" "not run: its worker (--isolation worker) ended before this test began" \
  "the rest: not run by that worker"
expect_eq "$(finals $C::test_fills) $(finals $C::test_plain)" "timeout timeout" "each confirmed alone"
expect_none_left "after the hung collection"

# ---- Workers that ask for more -------------------------------------------------------------
# Two lanes, one file of 24: a worker starts with a quarter of its lane's
# share (3) and asks kiln for more before its last test; the ids kiln adds come on its stdin, so the 24 run in the 2
# processes and most ran without being on their worker's command line.
# Without asking, the share would have to be all a lane will run (the
# next file's tests all to the one lane that frees first).
Y=tests/test_many.py
cat >"$T/argv" <<SH
#!/bin/sh
echo "\$*" >>"$T/argv.txt"
exec "\$@"
SH
chmod +x "$T/argv"
k run --pytest "$S" --isolation worker -j 2 --zygote false --wrap "$T/argv" -o "$T/more" "$Y"
expect_rc 0 "workers that ask for more"
flat "$T/more/report.yaml"
expect_eq "$(pids "$T/more/report.yaml")" 2 "24 tests in 2 processes"
given=$(grep -o "$Y::test_short\[[0-9]*\]" "$T/argv.txt" | wc -l | tr -d ' ')
ran=$(for i in $(seq 0 23); do finals "$Y::test_short[$i]"; done | grep -c pass)
expect_eq "$ran" 24 "each of the 24 passed, one result each"
[ "$given" -lt 24 ] && ok "$given of them were on the workers' command lines, the rest asked for" ||
  fail "all $given were on the command lines: no worker asked for more"
expect_match "$(grep -c -- '--pull' "$T/argv.txt")" '^2$' "both workers were started to ask (--pull)"
# Two sources of one rootdir: a worker collects both and serves both, as
# a `pytest -n` worker does, so two lanes need two processes for the 32
# tests (a worker per file would start a third when the first file ends).
Z=tests/test_few.py
: >"$T/argv.txt"
k run --pytest "$S/$Y" --pytest "$S/$Z" --isolation worker -j 2 --zygote false --wrap "$T/argv" \
  -o "$T/shared"
expect_rc 0 "two sources, workers that serve both"
flat "$T/shared/report.yaml"
expect_eq "$(pids "$T/shared/report.yaml")" 2 "32 tests of two sources in 2 processes"
ran=$( (for i in $(seq 0 23); do finals "$Y::test_short[$i]"; done
        for i in $(seq 0 7); do finals "$Z::test_other[$i]"; done) | grep -c pass)
expect_eq "$ran" 32 "each of the 32 passed, one result each"
expect_eq "$(grep -c -- "--pull [^ ]*$Y --pull [^ ]*$Z" "$T/argv.txt")" 2 \
  "each worker collected both sources (--pull twice)"
# A crash and a hang in a sequence that grows: every test one result, none twice.
k run --pytest "$S" --isolation worker -j 2 --zygote false --grace 1 -o "$T/crash2" "$F" "$Y"
expect_rc 1 "a crash and a hang on two lanes"
flat "$T/crash2/report.yaml"
expect_eq "$(finals $F::test_exits) $(finals $F::test_segfault) $(finals $F::test_hangs)" \
  "crash crash timeout" "confirmed alone, on two lanes"
for t in $F::test_first $F::test_second $F::test_third $F::test_last "$Y::test_short[0]" "$Y::test_short[23]"; do
  expect_eq "$(finals "$t")/$(nrecs "$t")" pass/1 "$t: one result, run once (two lanes)"
done
expect_none_left "after the growing sequences"

# ---- One test per process: pytest.exit() and KeyboardInterrupt say so -----------------
k run --pytest "$S" -j 1 -o "$T/stops" "$P"
flat "$T/stops/report.yaml"
expect_eq "$(rec $P::test_calls_exit 0 message)" \
  "the test called pytest.exit('the test stops the session'): pytest ended its session there" \
  "pytest.exit() alone: its message, not 'ran no test'"
expect_eq "$(rec $P::test_calls_exit 0 file):$(rec $P::test_calls_exit 0 line)" "$P:11" \
  "pytest.exit() alone: where it was called"
expect_eq "$(rec $P::test_interrupts 0 message)" \
  "KeyboardInterrupt during the test: pytest ended its session there" "KeyboardInterrupt alone"

# ---- A zygote child waits for a child that is no daemon, as an interpreter does ----------
for zyg in true false; do
  k run --pytest "$S" -j 1 --zygote $zyg -o "$T/atexit-$zyg" tests/test_exit_handlers.py
  expect_rc 0 "a multiprocessing child not joined (zygote $zyg)"
  flat "$T/atexit-$zyg/report.yaml"
  expect_eq "$(finals tests/test_exit_handlers.py::test_child_not_joined)" pass \
    "joined at exit, as pytest alone does: no leak (zygote $zyg)"
  expect_eq "$(note tests/test_exit_handlers.py::test_child_not_joined pytest_start)" \
    "$([ $zyg = true ] && echo zygote || echo fresh)" "it started as asked (zygote $zyg)"
done
expect_tokens_full "after the runs"
finish
