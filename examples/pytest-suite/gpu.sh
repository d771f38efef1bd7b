#!/usr/bin/env bash
# The sample pytest suite on the lent NVIDIA GPU, in one call
# (docs/gpu-runs.md):
#   here:   scripts/gpu.sh stage && bash examples/pytest-suite/gpu.sh stage
#   there:  bash examples/pytest-suite/gpu.sh [suite|speed|sbs]...   (carry: [".device"])
# (no part named: all three; the speed alone takes about three minutes
# there, the side-by-side up to seven)
# `stage` adds the cuda engine's shared library (for kilnpy) and Debian's
# pure-Python pytest, pytest-xdist and their dependencies (used there only
# when that machine's Python has no pytest) to .device/. There it runs the
# suite under kiln (its tests, then @fault), the speed of a no-op torch
# test (fresh interpreter, zygote, kiln's no-op, kiln bench) and the
# side-by-side with `pytest -n 4`; everything under $OUT, summary.txt first
# (the scripts' own output, errors too, in speed.out and sbs.out).
set -u
cd "$(dirname "$0")/../.."
stage=${KILN_STAGE:-.device}
case "${1:-}" in
stage)
  cp build-gpu/engine/libkiln-engine-cuda.so "$stage/"
  rm -rf "$stage/pylib" && mkdir -p "$stage/pylib"
  for m in pytest _pytest pluggy iniconfig packaging attr attrs exceptiongroup tomli \
           xdist execnet py.py; do
    [ -e "/usr/lib/python3/dist-packages/$m" ] && cp -r "/usr/lib/python3/dist-packages/$m" "$stage/pylib/"
  done
  find "$stage/pylib" -name __pycache__ -prune -exec rm -rf {} +
  du -sh "$stage"
  exit 0 ;;
esac
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
sum=$out/summary.txt
# An installed layout: kiln finds kiln_pytest at bin/../share/kiln/python.
k=$out/kiln
mkdir -p "$k/bin" "$k/share/kiln/python"
cp "$stage/kiln" "$k/bin/kiln"
cp -r harness/python/kiln_pytest "$k/share/kiln/python/"
export KILN_RUNNER_DIR=$PWD/$stage KILN_ENGINE_LIB=$PWD/$stage/libkiln-engine-cuda.so
for d in /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 \
         $(python3 -c 'import nvidia.curand, os; print(os.path.dirname(nvidia.curand.__file__) + "/lib")' 2>/dev/null); do
  if ls "$d"/libcurand.so.10* >/dev/null 2>&1; then export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; break; fi
done
export KILN_PYTHON=${KILN_PYTHON:-python3}
if ! "$KILN_PYTHON" -c 'import pytest' 2>/dev/null; then
  export PYTHONPATH=$PWD/$stage/pylib${PYTHONPATH:+:$PYTHONPATH}
  echo "pytest from $stage/pylib (Debian's, staged)" >>"$sum"
fi
parts=" ${*:-suite speed sbs} "
want() { case "$parts" in *" $1 "*) return 0 ;; esac; return 1; }
{
  echo "== machine"; nvidia-smi -L; nproc
  "$KILN_PYTHON" -c 'import sys, pytest; print("python", sys.version.split()[0], "pytest", pytest.__version__)'
  "$KILN_PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())' 2>&1 | tail -1
  "$KILN_PYTHON" -c 'import xdist; print("xdist", xdist.__version__)' 2>&1 | tail -1
} 2>&1 | tee -a "$sum"
if want suite; then {
  echo "== kiln run --pytest examples/pytest-suite"
  "$k/bin/kiln" run --backend cuda --pytest examples/pytest-suite -o "$out/run" 2>&1 | tail -25
  echo "== @fault"
  SAMPLE_HANG_S=600 "$k/bin/kiln" run --backend cuda --pytest examples/pytest-suite @fault \
    --grace 2 -o "$out/faults" 2>&1 | grep -E '^[A-Z]+ +tests|^ +tests/|test runs'
  echo "== zygote notes"; grep -h -A1 'key: pytest_start' "$out/run/report.yaml" | grep value | sort | uniq -c
} 2>&1 | tee -a "$sum"; fi
if want speed; then
  echo "== speed" | tee -a "$sum"
  bash scripts/pytest-speed.sh "$k/bin/kiln" "$out/speed" 24 2 cuda >"$out/speed.out" 2>&1
  cat "$out/speed/speed.txt" >>"$sum"
fi
if want sbs; then
  echo "== side by side" | tee -a "$sum"
  timeout 420 bash scripts/pytest-side-by-side.sh "$k/bin/kiln" "$out/sbs" cuda >"$out/sbs.out" 2>&1
  cat "$out/sbs/side-by-side.txt" >>"$sum"
fi
cat "$sum"
