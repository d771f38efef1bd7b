#!/usr/bin/env bash
# One listing per run: every --pytest source collected in one interpreter
# (a module the test files import, imported once for all of them), the
# listing kept beside the run folders and reused on a rerun of an
# unchanged tree (no collection at all), collected again after a test
# file, a conftest.py, an imported module or an environment variable the
# collection read changed, entries no run used for 40 days removed; the
# console says how long listing took and where it came from.
. "$(dirname "$0")/lib.sh"

need_pytest_sample
export PYTHONDONTWRITEBYTECODE=1
P=$T/proj
C=$T/collections
mkdir -p "$P/tests/a" "$P/tests/b" "$T/lib"
export LISTING_COUNTER=$C PYTHONPATH=$T/lib${PYTHONPATH:+:$PYTHONPATH}
# heavy: what a suite imports from outside the project (torch, say); it
# counts the collections that import it, with their process.
cat >"$T/lib/heavy.py" <<'PY'
import os, sys
if sys.argv[1:2] == ["collect"]:
    with open(os.environ["LISTING_COUNTER"], "a") as f:
        f.write("heavy %d\n" % os.getpid())
PY
printf '[pytest]\n' >"$P/pytest.ini"
cat >"$P/conftest.py" <<'PY'
import os, sys
if sys.argv[1:2] == ["collect"]:
    with open(os.environ["LISTING_COUNTER"], "a") as f:
        f.write("conftest %d\n" % os.getpid())
PY
cat >"$P/tests/a/test_a.py" <<'PY'
import heavy

def test_one():
    pass

def test_two():
    pass
PY
cat >"$P/tests/b/test_b.py" <<'PY'
import os
import pytest
import heavy

@pytest.mark.parametrize("n", range(int(os.environ.get("LISTING_N", "1"))))
def test_n(n):
    pass
PY
A=$P/tests/a
B=$P/tests/b
# heavies: how many collections imported heavy; procs: in how many processes.
heavies() { cat "$C" 2>/dev/null | grep -c "^heavy"; }
procs() { cat "$C" 2>/dev/null | awk "{print \$2}" | sort -u | wc -l; }
lines() { cat "$C" 2>/dev/null | wc -l; }
listed() { grep -cE '^tests/(a|b)/' "$T/out.txt"; }

# ---- Two sources collected in one go ---------------------------------------------------
k list --pytest "$A" --pytest "$B"
expect_rc 0 "kiln list of two pytest sources"
expect_eq "$(listed)" 3 "both sources' tests listed"
expect_eq "$(heavies)" 1 "heavy imported by one collection for both sources"
expect_eq "$(procs)" 1 "one interpreter collected both sources"
expect_eq "$(grep -c '^conftest' "$C")" 2 "each source's session imported the conftest.py"
expect_out "^kiln: listed 3 pytest tests of 2 sources in [0-9]+\.[0-9] s: collected, kept in reports/runs/\.pytest-listing\$" \
  "the console line: the time, collected, where it is kept"
n=$(find reports/runs/.pytest-listing -name '*.json' 2>/dev/null | wc -l)
expect_eq "$n" 2 "one cache entry per source beside the run folders"

# ---- A rerun of the unchanged tree: from the cache -------------------------------------
before=$(lines)
L=reports/runs/.pytest-listing
touch -d '40 days ago' "$L"/*.json
k list --pytest "$A" --pytest "$B"
expect_eq "$(find "$L" -name '*.json' -mtime -1 | wc -l)" 2 "an entry used is marked used"
expect_rc 0 "kiln list again"
expect_eq "$(listed)" 3 "the same tests from the cache"
expect_eq "$(lines)" "$before" "no collection on a rerun of the unchanged tree"
expect_out "^kiln: listed 3 pytest tests of 2 sources in [0-9]+\.[0-9] s: from the cache \(reports/runs/\.pytest-listing\)\$" \
  "the console says the listing came from the cache"
k run --pytest "$A" --pytest "$B" --zygote false
expect_rc 0 "kiln run with the listing from the cache"
expect_eq "$(grep -cE '^PASS +tests/' "$T/out.txt")" 3 "every test ran and passed"
expect_out "^kiln: listed 3 pytest tests of 2 sources in .* from the cache" "kiln run says so too"
expect_eq "$(lines)" "$before" "kiln run did not collect either"

# ---- What changes collection: collected again ------------------------------------------
printf '{}' >"$L/0000.json"
touch -d '40 days ago' "$L/0000.json"
printf '\ndef test_three():\n    pass\n' >>"$A/test_a.py"
k list --pytest "$A" --pytest "$B"
[ -e "$L/0000.json" ] && fail "an entry no run used for 40 days is kept" \
  || ok "an entry no run used for 40 days is removed when a listing is kept"
expect_rc 0 "kiln list after a test file changed"
expect_eq "$(listed)" 4 "the new test is listed"
expect_eq "$(heavies)" 2 "the changed source was collected again"
expect_out "^kiln: listed 4 pytest tests of 2 sources in .*: 1 from the cache, 1 collected" \
  "only the changed source was collected"

before=$(lines)
printf '# a comment\n' >>"$P/conftest.py"
k list --pytest "$A" --pytest "$B"
expect_rc 0 "kiln list after the conftest.py changed"
expect_eq "$(heavies)" 3 "a changed conftest.py: collected again"
expect_eq "$(grep -c '^conftest' "$C")" 5 "both sources collected again (their conftest.py changed)"
expect_out "^kiln: listed 4 pytest tests of 2 sources in .*: collected, kept in" \
  "the console says collected"

before=$(lines)
LISTING_N=3 k list --pytest "$A" --pytest "$B"
expect_eq "$(listed)" 6 "an environment variable the collection read changed: its tests"
expect_out "1 from the cache, 1 collected" "only the source that read it was collected again"
expect_out "^kiln: 1 kept listing not used: .*: \\\$LISTING_N changed\$" "the console says what changed"
k list --pytest "$A" --pytest "$B"
expect_eq "$(listed)" 4 "the variable unset again: the tests as before"

printf '# changed\n' >>"$T/lib/heavy.py"
before=$(heavies)
k list --pytest "$A" --pytest "$B"
expect_eq "$(heavies)" $((before + 1)) "a module the collection imported changed: collected again"
expect_out "collected, kept in" "both sources (both import it)"

before=$(lines)
KILN_PYTEST_LISTING=none k list --pytest "$A"
expect_rc 0 "KILN_PYTEST_LISTING=none"
expect_out "collected \(not kept: KILN_PYTEST_LISTING=none\)" "none: collected, not kept"
[ "$(lines)" -gt "$before" ] && ok "none: no cache used" || fail "none: the cache was used"

# A module that does not import: listed (its error comes when it runs), never kept.
mkdir -p "$P/tests/broken"
printf 'import no_such_module\n\ndef test_x():\n    pass\n' >"$P/tests/broken/test_broken.py"
for i in 1 2; do
  k list --pytest "$A" --pytest "$P/tests/broken"
  expect_rc 0 "a source whose module does not import ($i)"
  expect_out "^kiln: listed 4 pytest tests of 2 sources in .*: 1 from the cache, 1 collected, 1 not kept \($P/tests/broken: a module did not import\)\$" \
    "its listing is not kept ($i)"
done

# ---- Errors name the source ------------------------------------------------------------
mkdir -p "$P/tests/empty"
printf 'X = 1\n' >"$P/tests/empty/helpers.py"
k list --pytest "$A" --pytest "$P/tests/empty"
expect_rc 3 "a source without tests"
expect_out "--pytest $P/tests/empty: pytest collected no test" "the error names that source"

finish
