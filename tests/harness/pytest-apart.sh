#!/usr/bin/env bash
# A module whose collection depends on the other files of its source: two
# test files of one name in folders without __init__.py (pytest: an
# import file mismatch). Listing the source cannot collect the second, so
# it is one id of its own; alone it collects, and its first test's verdict
# must not stand for the module: the id is an error that says why, per
# process (zygote or fresh) and in a worker, and never a pass.
. "$(dirname "$0")/lib.sh"

need_pytest
P=$T/apart
mkdir -p "$P/a" "$P/b"
touch "$P/pytest.ini"
printf 'def test_one():\n    assert True\n\n\ndef test_two():\n    assert False\n' >"$P/a/test_x.py"
printf 'def test_three():\n    assert True\n\n\ndef test_four():\n    assert False\n' >"$P/b/test_x.py"
(cd "$P" && "$KILN_PYTHON" -m pytest -q -p no:cacheprovider >"$T/pytest.out" 2>&1)
expect_eq "$?" 2 "pytest itself: an error collecting the source"

for how in "--zygote true" "--zygote false" "--isolation worker -j 1"; do
  name=$(echo "$how" | tr -dc 'a-z0-9')
  # shellcheck disable=SC2086
  k run --pytest "$P" $how -o "$T/$name"
  expect_rc 1 "$how: the run fails"
  flat "$T/$name/report.yaml"
  id=$(grep -E '^tests\.[0-9]+\.id=b/test_x\.py$' "$T/flat.txt" | head -1)
  [ -n "$id" ] && ok "$how: the module listed as one id" || fail "$how: no id b/test_x.py"
  expect_eq "$(finals b/test_x.py "$T/$name/report.yaml")" error "$how: the module is an error"
  expect_match "$(tfield b/test_x.py message)" \
    'could not collect this module when kiln listed it .* collected apart it holds 2 tests \(b/test_x\.py::test_three, b/test_x\.py::test_four\)' \
    "$how: the message says why and what it holds"
  expect_eq "$(finals a/test_x.py::test_one "$T/$name/report.yaml")" pass "$how: a's tests by id (pass)"
  expect_eq "$(finals a/test_x.py::test_two "$T/$name/report.yaml")" fail "$how: a's tests by id (fail)"
done
finish
