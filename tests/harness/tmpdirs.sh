#!/usr/bin/env bash
# A test's TEST_TMPDIR: TMPDIR points at it too; a failed test keeps it
# and the report names it (a note kept_test_tmpdir) with what the test
# wrote to $TMPDIR in it; a passing test's folder is removed even when it
# holds a tree deeper than PATH_MAX.
. "$(dirname "$0")/lib.sh"

cat >"$T/m.yaml" <<'EOF2'
suite: t
tests:
  - name: fails
    command: [bash, -c, 'echo "tmp $TMPDIR test $TEST_TMPDIR"; mktemp >/dev/null; exit 1']
    needs_gpu: false
  - name: deep
    command: [python3, -c, "import os\nos.chdir(os.environ['TEST_TMPDIR'])\nfor i in range(600):\n    os.mkdir('d123456789')\n    os.chdir('d123456789')\nopen('f', 'w').write('x')"]
    needs_gpu: false
EOF2
k run -j 1 --manifest "$T/m.yaml" -o "$T/run"
expect_rc 1 "a run with a failing test"
flat "$T/run/report.yaml"
expect_eq "$(tfield t/fails notes.0.key)" kept_test_tmpdir "the failed test has a note on its folder"
kept=$(tfield t/fails notes.0.value)
expect_match "$kept" "^$T/run/tmp/[0-9]+\$" "the failed test's kept TEST_TMPDIR is named in the report"
expect_eq "$(grep -c . <<<"$(ls "$kept" 2>/dev/null)")" 1 "...and holds what it wrote to \$TMPDIR"
expect_match "$(cat "$T/run/logs/t/fails.log")" "^tmp $kept test $kept\$" "TMPDIR is TEST_TMPDIR"
expect_eq "$(tfield t/deep outcome)" pass "the deep tree's test passes"
left=$(ls "$T/run/tmp" | grep -vx "$(basename "$kept")")
expect_eq "$left" "" "the passing test's tree (6600+ bytes of path) is removed"
expect_eq "$(tfield t/deep notes.0.key)" "" "...so nothing is reported left"
finish
