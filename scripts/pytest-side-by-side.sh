#!/usr/bin/env bash
# The sample suite (examples/pytest-suite) under `pytest -n 4` with its
# round-robin conftest, and under `kiln run --pytest -j 4`, on the same
# devices: wall time, where each test ran, and what each does with a
# crash, a hang, two tests that each need most of a device's memory, and
# an outer mask that gives only device 1.
#   scripts/pytest-side-by-side.sh KILN OUT [BACKEND]
# BACKEND host (default): two emulated devices sharing their memory
# between processes (KILN_EMU_STATE_DIR, 2 GiB each); cuda: the real GPUs.
# Writes OUT/side-by-side.txt and every run's output under OUT.
set -u
KILN=$1 OUT=$2 BACKEND=${3:-host}
# An interpreter with pytest: $KILN_PYTHON, else python3, else Debian's
# (a pyenv python3 earlier on the PATH may lack it); kiln uses the same.
for PY in ${KILN_PYTHON:-python3 /usr/bin/python3}; do "$PY" -c 'import pytest' 2>/dev/null && break; done
"$PY" -c 'import pytest' 2>/dev/null || { echo "no python3 with pytest (KILN_PYTHON=${KILN_PYTHON:-})" >&2; exit 2; }
export KILN_PYTHON=$PY
mkdir -p "$OUT"
S=$OUT/suite
rm -rf "$S" && cp -r "$(dirname "$0")/../examples/pytest-suite" "$S"
export KILN_TOKEN_KEY=$OUT/tokens SAMPLE_HANG_S=3600 PYTHONDONTWRITEBYTECODE=1
if [ "$BACKEND" = host ]; then
  export KILN_EMU_DEVICES=2 KILN_EMU_MEMORY_MB=2048 KILN_EMU_STATE_DIR=$OUT/emu SAMPLE_GPUS=2
  mkdir -p "$KILN_EMU_STATE_DIR"
  VIS=KILN_EMU_VISIBLE_DEVICES
else
  export SAMPLE_GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
  VIS=CUDA_VISIBLE_DEVICES
fi
R=$OUT/side-by-side.txt
: >"$R"
say() { echo "$*" | tee -a "$R"; }
# (awk, not bc: the GPU machine's image has no bc)
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
# placement FILE: "devices=D" counts
placement() { [ -f "$1" ] && sed -E 's/.* devices=([^ ]*) .*/\1/' "$1" | sort | uniq -c | tr '\n' ' '; }

xd() {  # xd NAME LIMIT_S ARGS...: pytest -n 4 under a wall-clock limit
  local name=$1 limit=$2
  shift 2
  export SAMPLE_PLACEMENT=$OUT/$name.placement
  rm -f "$SAMPLE_PLACEMENT"
  local s e rc
  s=$(date +%s.%N)
  (cd "$S" && timeout -k 5 "$limit" "$PY" -m pytest -n 4 -p no:cacheprovider -q "$@") >"$OUT/$name.pytest.log" 2>&1
  rc=$?
  e=$(date +%s.%N)
  say "pytest -n 4  $name: exit $rc$([ $rc = 124 ] && echo " (killed at the ${limit} s limit)") in $(secs "$s" "$e") s; $(tail -1 "$OUT/$name.pytest.log")"
  say "    placement: $(placement "$SAMPLE_PLACEMENT")"
}
kr() {  # kr NAME ARGS...: kiln run --pytest -j 4
  local name=$1
  shift
  export SAMPLE_PLACEMENT=$OUT/$name.placement
  rm -f "$SAMPLE_PLACEMENT"
  local s e rc
  s=$(date +%s.%N)
  "$KILN" run --backend "$BACKEND" --pytest "$S" -j 4 --grace 1 -o "$OUT/$name-run" "$@" >"$OUT/$name.kiln.log" 2>&1
  rc=$?
  e=$(date +%s.%N)
  say "kiln run -j 4 $name: exit $rc in $(secs "$s" "$e") s; $(grep -E '^[0-9]+ test runs' "$OUT/$name.kiln.log")"
  say "    placement: $(placement "$SAMPLE_PLACEMENT")"
}

say "== the suite, no faults ($BACKEND, $SAMPLE_GPUS devices)"
xd plain 300 -m "not fault"
grep -E "^FAILED" "$OUT/plain.pytest.log" | sed 's/^/    /' | tee -a "$R"
kr plain
say "== with a segfault"
xd crash 300 tests/test_softmax.py "tests/test_faults.py::test_segfault"
grep -E "crashed|node down|replacing" "$OUT/crash.pytest.log" | head -3 | sed 's/^/    /' | tee -a "$R"
kr crash -- tests/test_softmax.py tests/test_faults.py::test_segfault
grep -E "^CRASH" -A1 "$OUT/crash.kiln.log" | head -2 | sed 's/^/    /' | tee -a "$R"
say "== with a hang (no pytest-timeout installed: nothing bounds it)"
xd hang 60 tests/test_softmax.py "tests/test_faults.py::test_hangs"
kr hang -- tests/test_softmax.py tests/test_faults.py::test_hangs
grep -E "^TIMEOUT" -A1 "$OUT/hang.kiln.log" | head -2 | sed 's/^/    /' | tee -a "$R"
say "== two tests that each hold 60% of a device, beside the others"
for i in 1 2 3; do
  xd "memory$i" 300 tests/test_softmax.py
  grep -E "^FAILED" "$OUT/memory$i.pytest.log" | head -2 | sed 's/^/    /' | tee -a "$R"
done
kr memory -- tests/test_softmax.py
say "== an outer $VIS=1 (this job was given device 1 only)"
env "$VIS=1" bash -c "$(declare -f xd say secs placement); OUT='$OUT' S='$S' PY='$PY' R='$R'; xd outer 300 -m 'not fault'"
env "$VIS=1" bash -c "$(declare -f kr say secs placement); OUT='$OUT' S='$S' KILN='$KILN' BACKEND='$BACKEND' R='$R'; kr outer"
