#!/usr/bin/env bash
# scripts/gpu.sh remote: kiln run --backend cuda [ARGS]: gpu-run.log and run/ under $OUT
# ARGS go to `kiln run` (default: the whole suite); without a staged kiln
# the runner runs them by itself, in one process (docs/gpu-runs.md).
#   scripts/gpu.sh remote [ARGS]
set -euo pipefail
. "$(dirname "$0")/env.sh"
log="$out/gpu-run.log"
{
  echo "== machine"; nvidia-smi -L || true; nproc
  echo "== runner devices"; "$stage/kiln-runner-cuda" --devices
  if [ -x "$stage/kiln" ]; then
    echo "== kiln run $*"
    "$stage/kiln" run --backend cuda --runner-dir "$stage" --out "$out/run" "$@" || echo "kiln run exit $?"
  else
    echo "== runner (standalone, in-process) $*"
    "$stage/kiln-runner-cuda" "$@" || echo "runner exit $?"
  fi
} 2>&1 | tee "$log"
