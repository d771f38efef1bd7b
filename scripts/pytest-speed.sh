#!/usr/bin/env bash
# Tests per second of a no-op pytest test whose module imports something
# heavy (torch where it imports, else a stand-in that costs about as much
# to import: say which), under kiln: a fresh interpreter per test
# (--zygote false) against the zygote (--zygote true), beside kiln's own
# no-op test (bench/noop, the host runner) and `kiln bench`'s ceiling.
#   scripts/pytest-speed.sh KILN OUT [N] [JOBS] [BACKEND]
# Writes OUT/speed.txt (and each run's folder under OUT).
set -u
# Arithmetic in awk: the GPU machine's image has no bc (its missing figures
# read as 0 tests/s there once).
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { printf "%.2f", n / (b - a) }'; }
KILN=$1 OUT=$2 N=${3:-24} J=${4:-2} B=${5:-host}
# An interpreter with pytest: $KILN_PYTHON, else python3, else Debian's
# (a pyenv python3 earlier on the PATH may lack it); kiln uses the same.
for PY in ${KILN_PYTHON:-python3 /usr/bin/python3}; do "$PY" -c 'import pytest' 2>/dev/null && break; done
"$PY" -c 'import pytest' 2>/dev/null || { echo "no python3 with pytest (KILN_PYTHON=${KILN_PYTHON:-})" >&2; exit 2; }
export KILN_PYTHON=$PY
mkdir -p "$OUT"
P=$OUT/project
rm -rf "$P" && mkdir -p "$P/tests"
if "$PY" -c 'import torch' 2>/dev/null; then
  heavy=torch
  what="torch $("$PY" -c 'import torch; print(torch.__version__)')"
else
  # A stand-in outside the project: compiles and runs ~1.5 s of Python
  # at import, as a big package does.
  mkdir -p "$OUT/site/heavydep"
  cat >"$OUT/site/heavydep/__init__.py" <<'PY'
import time
_t = time.process_time()
while time.process_time() - _t < 1.5:
    compile("x = [i * i for i in range(100)]\n" * 50, "<heavy>", "exec")
PY
  export PYTHONPATH=$OUT/site${PYTHONPATH:+:$PYTHONPATH}
  heavy=heavydep
  what="a stand-in module that spends 1.5 s of CPU at import (torch does not import here)"
fi
printf '[pytest]\ntestpaths = tests\n' >"$P/pytest.ini"
for i in $(seq 1 "$N"); do
  printf 'import %s\n\n\ndef test_noop_%d():\n    pass\n' "$heavy" "$i" >"$P/tests/test_$i.py"
done
t0=$(date +%s.%N)
"$PY" -c "import $heavy" 2>/dev/null
t1=$(date +%s.%N)
imp=$(secs "$t0" "$t1")
{
  echo "host: $(nproc) CPUs, $(uptime | sed 's/.*load/load/')"
  echo "heavy import: $what; one interpreter importing it: ${imp} s"
  echo "tests: $N no-op pytest tests, one module each, --jobs $J, backend $B"
} | tee "$OUT/speed.txt"
run() {  # run NAME ARGS...: tests/s over kiln's whole wall time (listing included)
  local name=$1 s e
  shift
  s=$(date +%s.%N)
  "$KILN" run "$@" -o "$OUT/$name-run" >"$OUT/$name.log" 2>&1
  local rc=$?
  e=$(date +%s.%N)
  local n
  n=$(grep -oE '^[0-9]+ test runs' "$OUT/$name.log" | cut -d' ' -f1)
  printf '%-28s exit %d, %s tests in %s s: %s tests/s\n' "$name" "$rc" "${n:-?}" \
    "$(secs "$s" "$e")" "$(rate "${n:-0}" "$s" "$e")" | tee -a "$OUT/speed.txt"
}
run pytest-fresh --backend "$B" --pytest "$P" --zygote false -j "$J"
run pytest-zygote --backend "$B" --pytest "$P" --zygote true -j "$J"
run kiln-noop --backend "$B" -j "$J" --repeat "$N" bench/noop
grep -c 'value: zygote' "$OUT/pytest-zygote-run/report.yaml" | sed 's/^/tests forked from the zygote: /' | tee -a "$OUT/speed.txt"
# What the zygote imported and whether it could fork (why not, if not).
sed 's/^/zygote: /' "$OUT"/pytest-zygote-run/logs/pytest-zygote-*.log 2>/dev/null | head -3 | tee -a "$OUT/speed.txt"
"$KILN" bench --backend "$B" --tests "$N" --concurrency 1,"$J" --skip none,host \
  --out "$OUT/bench" >"$OUT/bench.log" 2>&1
echo "kiln bench (backend $B; ceiling = context open+close processes):" | tee -a "$OUT/speed.txt"
grep -iE 'ceiling|kiln|tests/s' "$OUT/bench.log" | head -12 | tee -a "$OUT/speed.txt"
