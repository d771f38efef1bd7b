#!/usr/bin/env bash
# A session-scoped fixture under kiln, as docs/pytest.md says: each
# node id is a pytest session of its own, so the fixture runs once per
# test (5 times for 5 tests, through the zygote and in fresh
# interpreters), where pytest runs it once; `--isolation worker` runs it
# once per worker (once with -j 1, once in each with more). And the page
# says so.
. "$(dirname "$0")/lib.sh"

need_pytest_sample
P=$T/sess
mkdir -p "$P/tests"
touch "$P/pytest.ini"
cat >"$P/conftest.py" <<'PY'
import os

import pytest


@pytest.fixture(scope="session")
def expensive():
    with open(os.environ["COUNT"], "a") as f:
        f.write("%d\n" % os.getpid())
    return 42
PY
cat >"$P/tests/test_session.py" <<'PY'
import pytest


@pytest.mark.parametrize("i", range(5))
def test_uses(expensive, i):
    assert expensive == 42
PY
runs() { [ -f "$T/count-$1" ] && wc -l <"$T/count-$1" | tr -d ' ' || echo 0; }

(cd "$P" && COUNT=$T/count-pytest "$KILN_PYTHON" -m pytest -q -p no:cacheprovider >/dev/null 2>&1)
expect_eq "$(runs pytest)" 1 "pytest alone: the session fixture runs once for 5 tests"
for z in true false; do
  COUNT=$T/count-$z k run --pytest "$P" --zygote $z -o "$T/run-$z"
  expect_rc 0 "kiln (zygote $z)"
  expect_eq "$(runs $z)" 5 "kiln, one process per test (zygote $z): once per test"
done
# How many processes -j 2 makes is the scheduler's (a worker takes two
# runs at least, and a run left over may run alone); the fixture runs once
# in each: once per worker, once per run alone.
for j in 1 2; do
  COUNT=$T/count-w$j k run --pytest "$P" --isolation worker -j $j -o "$T/worker-$j"
  expect_rc 0 "kiln --isolation worker -j $j"
  w=$(sed -nE 's/^workers: ([0-9]+) runs? in ([0-9]+) workers?$/\1 \2/p' "$T/out.txt")
  n=${w:+$((${w#* } + 5 - ${w% *}))}
  [ "$j" = 1 ] && expect_eq "$w" "5 1" "-j 1: 5 runs in 1 worker"
  expect_eq "$(runs w$j)" "${n:-?}" "--isolation worker -j $j: once per process ($w: runs, workers)"
done
doc=$KILN_SOURCE/docs/pytest.md
tr '\n' ' ' <"$doc" | grep -q 'session-scoped fixture runs once per test' &&
  ok "docs/pytest.md says a session-scoped fixture runs once per test" ||
  fail "docs/pytest.md does not say that a session-scoped fixture runs once per test"
tr '\n' ' ' <"$doc" | tr -s ' ' | grep -q 'the fixture runs once per worker' &&
  ok "...and that a worker runs it once" || fail "docs/pytest.md does not give the worker's count"
finish
