#!/usr/bin/env bash
# The defaults kiln picks where the user chose nothing: workers on a GPU
# backend and a process per test on the host backend (a flag, a config
# key or --warm win), and each test's deadline: its own, else --timeout
# when given, else its source's (pytest: 900 s), else 120 s. The GPU
# backend is a stand-in runner that answers --devices; the tests are a
# GoogleTest binary's, which need no runner.
. "$(dirname "$0")/lib.sh"

need_pytest
G=$KILN_GTEST
mkdir -p "$T/fake"
cat >"$T/fake/kiln-runner-cuda" <<'EOF'
#!/bin/sh
# Stands in for a cuda runner's answer to --devices on a 1-GPU host.
[ "$1" = --devices ] || exit 2
echo "runner kiln=0 protocol=$KILN_PROTOCOL backend=cuda"
echo "backend name=cuda devices=1"
echo "device backend=cuda index=0 name=GPU0 arch=sm_90 warp_size=32 total_bytes=1000 free_bytes=1000"
EOF
chmod +x "$T/fake/kiln-runner-cuda"
two() { k run "$@" -j 1 --slots 1 --gtest "$G" Arith.Adds Zeros/2.DefaultIsZero; }
ran() { flat "$T/$1/report.yaml"; echo "$(field settings.isolation) $(tfield Arith.Adds ran) $(tfield Zeros/2.DefaultIsZero ran)"; }

# ---- Isolation --------------------------------------------------------------------------------
two --backend cuda --runner-dir "$T/fake" -o "$T/gpu"
expect_rc 0 "two tests on the GPU backend"
expect_eq "$(ran gpu)" "worker worker worker" "GPU backend, nothing chosen: both in a worker"
two --backend host -o "$T/host"
expect_rc 0 "two tests on the host backend"
expect_eq "$(ran host)" "process alone alone" "host backend, nothing chosen: a process each"
two --backend cuda --runner-dir "$T/fake" --isolation process -o "$T/flag"
expect_rc 0 "--isolation process on the GPU backend"
expect_eq "$(ran flag)" "process alone alone" "the flag wins"
printf 'isolation: process\n' >"$T/kiln.yaml"
two --backend cuda --runner-dir "$T/fake" --config "$T/kiln.yaml" -o "$T/config"
expect_rc 0 "isolation: process in a config"
expect_eq "$(ran config)" "process alone alone" "the config key wins"
two --backend cuda --runner-dir "$T/fake" --warm 1 -o "$T/warm"
expect_rc 0 "--warm 1 on the GPU backend"
expect_eq "$(ran warm)" "process alone alone" "--warm asks for a process per test"

# ---- Deadlines --------------------------------------------------------------------------------
P=$T/py
mkdir -p "$P"
touch "$P/pytest.ini"
cat >"$P/test_d.py" <<'EOF'
import pytest


def test_plain():
    pass


@pytest.mark.kiln(timeout=7)
def test_marked():
    pass
EOF
deadline() {  # deadline ID: its deadline_s in $T/list.json
  python3 -c 'import json, sys
for t in json.load(open(sys.argv[1]))["tests"]:
    if t["id"].endswith(sys.argv[2]): print(t["deadline_s"])' "$T/list.json" "$1"
}
lst() { "$KILN" list --backend host --format json "$@" --pytest "$P" --gtest "$G" Arith.Adds \
  'test_d.py::*' >"$T/list.json" 2>"$T/out.txt"; rc=$?; }
lst
expect_rc 0 "kiln list --format json"
expect_eq "$(deadline test_plain)" 900 "a pytest test without a mark: pytest's own default"
expect_eq "$(deadline test_marked)" 7 "a pytest test's own mark"
expect_eq "$(deadline Arith.Adds)" 120 "a GoogleTest test: the run's default"
lst --timeout 30
expect_rc 0 "kiln list --timeout 30"
expect_eq "$(deadline test_plain)" 30 "--timeout wins over pytest's default"
expect_eq "$(deadline test_marked)" 7 "the test's own mark wins over --timeout"
expect_eq "$(deadline Arith.Adds)" 30 "--timeout for the GoogleTest test"
lst --timeout 2.5
expect_rc 0 "kiln list --timeout 2.5"
expect_eq "$(deadline test_plain) $(deadline Arith.Adds)" "2.5 2.5" "a fraction of a second is kept"
finish
