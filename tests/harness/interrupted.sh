#!/usr/bin/env bash
# A run stopped while a test's process is still ending gives one honest
# verdict for it, from every source: when the test's result record had
# arrived, that result stands, with a note `interrupted` saying kiln was
# stopped and how the process ended; when it had not, the test is lost.
# Never a crash or a fail of the test's own:
#   - kiln stopped by SIGTERM after the result, the process still ending (a
#     kiln runner or a GoogleTest binary under a --wrap that lingers after
#     it, pytest in a fresh interpreter and through the zygote, whose
#     pytest_unconfigure is slow): pass, with the note (before: crash, "the
#     runner was killed by SIGTERM after the test ended");
#   - a batch system's cancel, which signals every process of the job, the
#     tests' before kiln's (SIGTERM to each, children first, kiln's once
#     the test's process is reaped): the lingering
#     runner passes with the note; a command whose SIGTERM handler exits
#     143, and a pytest test through the zygote (the cancel ends the zygote
#     too, and the client exits 3), are lost (before: crash, "exited with
#     status 143 / 3 without finishing the test").
. "$(dirname "$0")/lib.sh"

# Every descendant of process $1 (depth first).
descendants() {
  local c
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do echo "$c"; descendants "$c"; done
}
# cancel KILN RUN: a batch system's cancel, SIGTERM to every process of
# the run, the newest first, and kiln's own once kiln has reaped the
# test's process (kiln holds the verdict of a test that such a signal may
# have ended 0.75 s for it).
cancel() {
  local p i tp
  tp=$(sed -n 's/^start .* pid=\([0-9]*\).*/\1/p' "$2/journal" | head -1)
  for p in $(descendants "$1" | sort -rn); do kill -TERM "$p" 2>/dev/null; done
  for i in $(seq 500); do [ -n "$tp" ] && [ -e "/proc/$tp" ] || break; sleep 0.01; done
  kill -TERM "$1"
}
# wait_for FILE: up to 60 s (a sanitized runner starts slowly).
wait_for() {
  local i
  for i in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.1; done
  fail "$1 never appeared"
}
# stopped NAME HOW ARGS...: runs kiln with ARGS into $T/NAME, waits for
# $T/NAME.mark, then stops it: HOW is `kiln` (SIGTERM to kiln alone) or
# `cancel`; flattens the report.
stopped() {
  local name=$1 how=$2 kp
  shift 2
  rm -f "$T/$name.mark"
  MARK=$T/$name.mark "$KILN" run -o "$T/$name" "$@" >"$T/out.txt" 2>&1 &
  kp=$!
  wait_for "$T/$name.mark"
  sleep 0.3
  if [ "$how" = kiln ]; then kill -TERM $kp; else cancel $kp "$T/$name"; fi
  wait $kp; rc=$?
  expect_rc 130 "$name: kiln stopped"
  flat "$T/$name/report.yaml"
}
# stands ID WHAT: the test passed, with the note.
stands() {
  expect_eq "$(tfield "$1" outcome)" pass "$2: the result that arrived stands"
  i=$(test_index "$1")
  expect_match "$(grep -E "^tests\.$i\.notes\.[0-9]+\.value=kiln was stopped by SIGTERM after" "$T/flat.txt")" \
    'its process, still ending, was killed by SIGTERM' "$2: with a note that kiln was stopped"
}

# A --wrap that lingers after the program it runs has ended (as the
# process kiln started: a signal ends it, not a shell that outlives it).
cat >"$T/linger" <<'EOF2'
#!/usr/bin/env bash
"$@"
touch "$MARK"
exec sleep 30
EOF2
chmod +x "$T/linger"

# ---- kiln stopped after the result ------------------------------------------------
stopped runner kiln --backend host --wrap "$T/linger" faults/pass
stands faults/pass "a kiln runner under a lingering --wrap"
if [ -n "${KILN_GTEST:-}" ]; then
  stopped gtest kiln --gtest "$KILN_GTEST" --wrap "$T/linger" Arith.Adds
  stands Arith.Adds "a GoogleTest binary under a lingering --wrap"
else
  fail "no GoogleTest sample (KILN_GTEST)"
fi

# ---- The cancel reaches the tests before kiln ---------------------------------------
stopped cancel-runner cancel --backend host --wrap "$T/linger" faults/pass
stands faults/pass "cancel: a kiln runner under a lingering --wrap"
cat >"$T/m.yaml" <<EOF2
suite: c
tests:
  - name: handler
    command: [python3, -c, "import os, signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(143))\nopen(os.environ['MARK'], 'w').close()\ntime.sleep(30)"]
    needs_gpu: false
EOF2
stopped cancel-handler cancel --manifest "$T/m.yaml"
expect_eq "$(tfield c/handler outcome)" lost "cancel: a command whose handler exits 143 is lost"
expect_match "$(tfield c/handler message)" "interrupted: kiln was stopped by SIGTERM" "cancel: ...with kiln's stop"

# ---- pytest -----------------------------------------------------------------------
have_pytest=0
for p in "${KILN_PYTHON:-python3}" python3 /usr/bin/python3; do
  "$p" -c 'import pytest' 2>/dev/null && have_pytest=1
done
if [ $have_pytest = 1 ] || [ "${KILN_REQUIRE_PYTEST:-0}" = 1 ]; then
  need_pytest_sample
  mkdir -p "$T/py/tests"
  touch "$T/py/pytest.ini"
  cat >"$T/py/conftest.py" <<'PY'
import os
import time


def pytest_unconfigure(config):
    # A test process whose pytest ends slowly (a plugin's report, a pool
    # shut down), only in a test's process, and for a test that says so.
    if os.environ.get("KILN_TEST", "").endswith("test_quick") and os.environ.get("MARK"):
        open(os.environ["MARK"], "w").close()
        time.sleep(30)
PY
  cat >"$T/py/tests/test_stop.py" <<'PY'
import os
import time


def test_quick():
    assert True


def test_sleeps():
    open(os.environ["MARK"], "w").close()
    time.sleep(30)
PY
  Q=tests/test_stop.py::test_quick
  for z in false true; do
    stopped py-$z kiln --pytest "$T/py" --zygote $z $Q
    stands "$Q" "pytest (zygote $z) ending slowly"
  done
  stopped py-cancel cancel --pytest "$T/py" --zygote true tests/test_stop.py::test_sleeps
  expect_eq "$(tfield tests/test_stop.py::test_sleeps outcome)" lost \
    "cancel: a pytest test through the zygote is lost"
else
  echo "skip (pytest part): no interpreter with pytest"
fi
expect_tokens_full "at the end"
expect_no_runners "at the end"
finish
