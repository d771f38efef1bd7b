#!/usr/bin/env bash
# pytest suites under kiln (examples/pytest-suite, copied): node ids with
# brackets and classes, the kiln mark (slots, gpus, gpu=False, timeout),
# each outcome from pytest's own report (pass, fail with the assertion's
# file:line, setup error, skip with its reason and place, xfail, xpass, a
# segfault as a crash, a hang as a timeout, a module that does not import),
# through the zygote and through a fresh interpreter, the zygote's fallback
# when its imports opened a device or left a thread (not a pool that stops
# before a fork), narrowing inside an outer
# visible-devices mask, a test of two devices, retries, repeat, shards;
# nothing left running and the slots back.
. "$(dirname "$0")/lib.sh"

need_pytest_sample
export SAMPLE_HANG_S=60 PYTHONDONTWRITEBYTECODE=1
F=tests/test_faults.py
X=tests/test_softmax.py

# pfield ID KEY [N]: tfield for a node id (brackets and dots are no regex).
pfield() {
  local i
  i=$(awk -v id="$1" -v n="${3:-0}" 'index($0, "=") {
        k = substr($0, 1, index($0, "=") - 1); v = substr($0, index($0, "=") + 1)
        if (k ~ /^tests\.[0-9]+\.id$/ && v == id && n-- == 0) { split(k, a, "."); print a[2]; exit }
      }' "$T/flat.txt")
  [ -n "$i" ] && field "tests.$i.$2"
}

# Nothing of this test's suite (a zygote, its children) still runs.
expect_none_left() {
  sleep 0.3
  local left
  left=$(pgrep -f "kiln_pytest.*$T" | tr '\n' ' ')
  if [ -n "$left" ]; then fail "kiln_pytest processes left $1: $left"; ps -o pid,args -p "${left// /,}"
  else ok "no kiln_pytest process left $1"; fi
}

k list --pytest "$S"
expect_rc 0 "kiln list --pytest"
expect_out "^$X::test_matches_reference\[8-1000\] +\[\] slots=1\$" "a parametrised node id"
expect_out "^$X::TestRows::test_sums_to_one " "a class's test"
expect_out "^$X::test_reference_alone .* host-only" "gpu=False: host-only"
expect_out "^$X::test_two_devices .*devices=2" "gpus=2"
expect_out "^$X::test_big_buffer\[1\] .*slots=-1" "slots='all': the whole device"
k list -v --pytest "$S"
expect_out "^$X::test_reference_alone .* $X:49\$" "a test's file and line from collection"
if grep -q "$F" "$T/out.txt"; then fail "tests marked fault are held back"; else ok "fault tests held back"; fi

# ---- The default run, through the zygote -------------------------------------------
k run --pytest "$S" -o "$T/run"
expect_rc 0 "kiln run --pytest"
flat "$T/run/report.yaml"
for id in "$X::test_matches_reference[3-4097]" "$X::test_scale[2.0]" "$X::TestRows::test_uniform_row" \
          "$X::test_reference_alone" "$X::test_big_buffer[1]" "$X::test_big_buffer[2]"; do
  expect_eq "$(pfield "$id" outcome)" pass "$id"
done
expect_eq "$(pfield "$X::test_needs_bf16" outcome)" skip "pytest.skip: skip"
expect_eq "$(pfield "$X::test_needs_bf16" message)" "bf16 rows are not wired into kilnpy yet" "the skip's reason"
expect_eq "$(pfield "$X::test_needs_bf16" file):$(pfield "$X::test_needs_bf16" line)" "$X:55" "the skip's place"
expect_eq "$(pfield "$X::test_empty_row" outcome)" skip "strict xfail that failed: skip"
expect_match "$(pfield "$X::test_empty_row" message)" '^xfailed: softmax of an empty row' "xfailed and its reason"
expect_match "$(pfield "$X::test_two_devices" message)" 'needs 2 devices' "two devices on a host of one: not run"
expect_match "$(pfield "$X::test_scale[2.0]" times.body_ms)" '^[0-9.e-]+$' "pytest's call phase is the body"
grep -q 'value: zygote' "$T/run/report.yaml" && ok "tests forked from the zygote (note pytest_start)" \
  || fail "no test forked from the zygote"
grep -q 'value: fresh' "$T/run/report.yaml" && fail "a test started fresh beside a fit zygote" \
  || ok "no fresh interpreter beside a fit zygote"
expect_tokens_full "after the run"
expect_none_left "after the run"

# ---- Each failure kind -----------------------------------------------------------------
for mode in true false; do
  k run --pytest "$S" @fault --zygote $mode --grace 1 -o "$T/faults-$mode"
  expect_rc 1 "@fault (zygote $mode)"
  flat "$T/faults-$mode/report.yaml"
  expect_eq "$(pfield "$F::test_wrong_expectation" outcome)" fail "assertion: fail ($mode)"
  expect_match "$(pfield "$F::test_wrong_expectation" message)" '^AssertionError: softmax of two equal values is not one-hot' "the assertion's message ($mode)"
  expect_eq "$(pfield "$F::test_wrong_expectation" file):$(pfield "$F::test_wrong_expectation" line)" "$F:14" "the assertion's file:line ($mode)"
  expect_eq "$(pfield "$F::test_setup_error" outcome)" error "a fixture that raises: error ($mode)"
  expect_match "$(pfield "$F::test_setup_error" message)" '^setup: RuntimeError: the fixture could not prepare' "setup error message ($mode)"
  expect_eq "$(pfield "$F::test_segfault" outcome)" crash "segfault: crash ($mode)"
  # Under AddressSanitizer (abort_on_error=1) the engine's runtime turns the
# segfault into an abort.
segv=SIGSEGV; [ "$KH_ENGINE_SANITIZED" = 1 ] && segv=SIGABRT
expect_eq "$(pfield "$F::test_segfault" signal)" "$segv" "the signal ($mode)"
  expect_eq "$(pfield "$F::test_hangs" outcome)" timeout "hang: timeout ($mode)"
  expect_match "$(pfield "$F::test_hangs" message)" 'timed out after 3 s' "the mark's timeout ($mode)"
  expect_eq "$(pfield "$F::test_xpass" outcome)" pass "xpass: pass ($mode)"
  expect_match "$(pfield "$F::test_xpass" message)" '^xpassed' "xpassed said ($mode)"
  want=$([ $mode = true ] && echo zygote || echo fresh)
  expect_eq "$(grep -c "value: $want" "$T/faults-$mode/report.yaml")" 5 "every test started $want"
  expect_tokens_full "after @fault ($mode)"
  expect_none_left "after @fault ($mode)"
done

# ---- Retries, repeat, shards ---------------------------------------------------------
k run --pytest "$S" "$F::test_wrong_expectation" --retries 1 -o "$T/retry"
flat "$T/retry/report.yaml"
expect_eq "$(pfield "$F::test_wrong_expectation" attempt 1)" 2 "--retries 1: a second attempt"
k run --pytest "$S" "$X::test_scale[0.5]" --repeat 3 -o "$T/repeat"
expect_rc 0 "--repeat 3"
expect_out '3 test runs .* 3 pass' "three runs of one node id"
k list --pytest "$S"
total=$(grep -c '^tests/' "$T/out.txt")   # 14, 16 where torch imports (test_torch.py)
k list --pytest "$S" --shard 1/2
n1=$(grep -c '^tests/' "$T/out.txt")
k list --pytest "$S" --shard 2/2
n2=$(grep -c '^tests/' "$T/out.txt")
expect_eq "$((n1 + n2))" "$total" "two shards hold every test once ($n1 + $n2)"

# ---- Devices: two emulated, narrowed inside an outer mask ---------------------------
KILN_EMU_DEVICES=2 k run --pytest "$S" "$X::test_two_devices" "$X::test_scale[0.5]" -o "$T/two"
expect_rc 0 "two emulated devices"
flat "$T/two/report.yaml"
expect_eq "$(pfield "$X::test_two_devices" outcome)" pass "gpus=2 on two devices"
expect_match "$(pfield "$X::test_two_devices" devices.0),$(pfield "$X::test_two_devices" devices.1)" '^(0,1|1,0)$' "the test held both"
KILN_EMU_DEVICES=3 KILN_EMU_VISIBLE_DEVICES=2 k run --pytest "$S" "$X::test_scale[0.5]" -o "$T/outer"
expect_rc 0 "inside an outer mask"
flat "$T/outer/report.yaml"
expect_eq "$(pfield "$X::test_scale[0.5]" device)" 2 "the outer mask's device 2, not 0"

# ---- A zygote whose imports opened a device: each test starts fresh ----------------
mkdir -p "$T/site/opens_at_import"
cat >"$T/site/opens_at_import/__init__.py" <<'PY'
import kilnpy
CONTEXT = kilnpy.Context(0)        # a device context at import
PY
cat >"$S/tests/test_dep.py" <<'PY'
import opens_at_import

def test_uses_it():
    assert opens_at_import.CONTEXT.ptr
PY
PYTHONPATH=$T/site:$S k run --pytest "$S" "tests/test_dep.py" -o "$T/unfit"
expect_rc 0 "a dependency that opens a device at import"
flat "$T/unfit/report.yaml"
expect_eq "$(pfield tests/test_dep.py::test_uses_it outcome)" pass "its test passes"
grep -q 'value: "fresh: the zygote cannot fork: an engine context is open' "$T/unfit/report.yaml" \
  && ok "fresh interpreter, and why" || { fail "no fallback note"; grep -A1 pytest_start "$T/unfit/report.yaml"; }
rm "$S/tests/test_dep.py"

# ---- Threads at import: a pool that stops itself before a fork (OpenBLAS's,
# which numpy starts at import, joins its workers in a pthread_atfork handler)
# leaves the zygote fit; a thread that stays makes it unfit, named ----------------
mkdir -p "$T/site/pool_at_import" "$T/site/thread_at_import"
cat >"$T/site/pool_at_import/__init__.py" <<'PY'
import os, threading
_stop = threading.Event()
_workers = [threading.Thread(target=_stop.wait, daemon=True) for _ in range(3)]
for w in _workers:
    w.start()

def _shutdown():                   # restarted lazily on next use, as OpenBLAS's
    _stop.set()
    for w in _workers:
        w.join()

os.register_at_fork(before=_shutdown)
PY
cat >"$T/site/thread_at_import/__init__.py" <<'PY'
import threading, time
threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
PY
# (imported as suites import what may be missing: the zygote imports it too)
printf 'import pytest\npool_at_import = pytest.importorskip("pool_at_import")\n\ndef test_pool():\n    pass\n' \
  >"$S/tests/test_pool.py"
PYTHONPATH=$T/site:$S k run --pytest "$S" tests/test_pool.py -o "$T/pool"
expect_rc 0 "a dependency whose thread pool stops before a fork"
grep -q 'imported .*pool_at_import' "$T/pool/logs/pytest-zygote-0.log" \
  && ok "the zygote imported a module of pytest.importorskip" \
  || fail "the zygote did not import pool_at_import: $(cat "$T/pool/logs/pytest-zygote-0.log")"
grep -q 'value: zygote' "$T/pool/report.yaml" && ok "its test forked from the zygote" \
  || { fail "a pool that stops at fork made the zygote unfit"; cat "$T/pool/logs/pytest-zygote-0.log"; }
rm "$S/tests/test_pool.py"
printf 'import thread_at_import\n\ndef test_thread():\n    pass\n' >"$S/tests/test_thread.py"
PYTHONPATH=$T/site:$S k run --pytest "$S" tests/test_thread.py -o "$T/thread"
expect_rc 0 "a dependency that leaves a thread running"
grep -q 'value: "fresh: the zygote cannot fork: 2 threads after the imports, still there after a fork' \
  "$T/thread/report.yaml" && ok "a thread that stays: fresh, and why" \
  || { fail "no fallback for a thread that stays"; grep -A1 pytest_start "$T/thread/report.yaml"; }
rm "$S/tests/test_thread.py"

# ---- A module that does not import, a mark kiln refuses ------------------------------
printf 'import no_such_module\n\ndef test_never():\n    pass\n' >"$S/tests/test_broken.py"
k run --pytest "$S" tests/test_broken.py -o "$T/broken"
expect_rc 1 "a module that does not import"
flat "$T/broken/report.yaml"
expect_eq "$(pfield tests/test_broken.py outcome)" error "listed as one test, an error"
expect_match "$(pfield tests/test_broken.py message)" "^collection: .*No module named 'no_such_module'" "the import error"
rm "$S/tests/test_broken.py"
printf 'import pytest\n\n@pytest.mark.kiln(slot=2)\ndef test_typo():\n    pass\n' >"$S/tests/test_typo.py"
k list --pytest "$S"
expect_rc 2 "a kiln mark with an unknown keyword"
expect_out "tests/test_typo.py:3: kiln mark: unknown keyword 'slot'" "named with file:line"
rm "$S/tests/test_typo.py"

# A parameter kiln's id escapes ('%' is %25): pytest gets its own node id.
printf 'import pytest\n\n@pytest.mark.parametrize("p", ["50%%"])\ndef test_pct(p):\n    assert p == "50%%"\n' >"$S/tests/test_pct.py"
k run --pytest "$S" tests/test_pct.py -o "$T/pct"
expect_rc 0 "a node id with a '%'"
expect_out 'PASS +tests/test_pct.py::test_pct\[50%25\]' "kiln's id escapes it, the test ran"
rm "$S/tests/test_pct.py"

# ---- kiln slurm spreads the suite: two array tasks (the job scripts run by hand,
# sbatch a stand-in), then the merge holds every test once -------------------------
mkdir -p "$T/fake"
printf '#!/bin/bash\nn=$(cat %s/next 2>/dev/null || echo 100); echo $((n + 1)) >%s/next; echo $n\n' \
  "$T/fake" "$T/fake" >"$T/fake/sbatch"
chmod +x "$T/fake/sbatch"
R=$T/slurm-run
PATH=$T/fake:$PATH k slurm --pytest "$S" --tasks 2 --no-wait -o "$R"
expect_rc 0 "kiln slurm --pytest (a stand-in sbatch)"
grep -q -- "--pytest $S" "$R/slurm/array-1.sh" && ok "each task lists the suite (--pytest, absolute)" \
  || fail "the task script lacks --pytest $S"
for t in 0 1; do
  env SLURM_ARRAY_JOB_ID=100 SLURM_ARRAY_TASK_ID=$t SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_MIN=0 \
    SLURM_ARRAY_TASK_MAX=1 SLURM_ARRAY_TASK_STEP=1 SLURMD_NODENAME=node$t \
    bash "$R/slurm/array-1.sh" >"$T/task$t.out" 2>&1
  grep -q "test runs" "$T/task$t.out" && ok "task $t ran its shard" || fail "task $t: $(tail -3 "$T/task$t.out")"
done
k slurm --merge "$R"
expect_rc 0 "the merge of the two shards"
flat "$R/report.yaml"
expect_eq "$(grep -cE '^tests\.[0-9]+\.id=tests/' "$T/flat.txt")" "$total" "the merged report holds every test"
expect_eq "$(grep -E '^tests\.[0-9]+\.id=' "$T/flat.txt" | sort | uniq -d | wc -l)" 0 "each once"

k run --pytest "$S" "$X::test_scale[0.5]" --isolation none
expect_rc 2 "--isolation none refused for pytest tests"
expect_none_left "at the end"
finish
