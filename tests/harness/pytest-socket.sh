#!/usr/bin/env bash
# The zygote's socket wherever the run folder is: a relative -o given from
# a folder other than the suite's rootdir (the zygote and the tests run in
# the rootdir), and a run folder whose path is too long for a socket's
# address (108 bytes): every test forks from the zygote, and nothing of
# the socket is left after the run.
. "$(dirname "$0")/lib.sh"

need_pytest
P=$T/mine
mkdir -p "$P/tests"
touch "$P/pytest.ini"
printf 'def test_one():\n    assert True\n\n\ndef test_two():\n    assert True\n' >"$P/tests/test_a.py"
starts() { grep -A1 'key: pytest_start' "$1" | sed -n 's/^ *value: //p' | sort | uniq -c | tr -s ' '; }

cd "$T" && k run --pytest mine -o rel && cd - >/dev/null
expect_rc 0 "a relative -o, from the rootdir's parent"
expect_eq "$(starts "$T/rel/report.yaml")" " 2 zygote" "both tests forked from the zygote"

long=$T/$(printf 'd%.0s' $(seq 1 60))/$(printf 'e%.0s' $(seq 1 60))
before=$(ls /tmp | grep -c 'pytest-zygote' || true)
k run --pytest "$P" -o "$long"
expect_rc 0 "a run folder of ${#long} bytes"
expect_eq "$(starts "$long/report.yaml")" " 2 zygote" "both tests forked from the zygote (its socket in /tmp)"
expect_eq "$(ls /tmp | grep -c 'pytest-zygote' || true)" "$before" "no socket left in /tmp"
finish
