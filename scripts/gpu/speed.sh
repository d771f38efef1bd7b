#!/usr/bin/env bash
# scripts/gpu.sh speed: kiln bench --backend cuda, then perf
# kiln's own speed and the kernels' on a lent NVIDIA GPU, in one device call
# (docs/measuring.md): `kiln bench --backend cuda` (context ceiling, kiln
# warm and cold, isolation none), then the perf suite next to PyTorch
# (scripts/gpu.sh perf). Build here first with `scripts/gpu.sh stage`;
# run there from the repository root with .device carried:
#
#   bash scripts/gpu.sh speed            (both halves)
#   KILN_SPEED_SKIP=bench|perf bash scripts/gpu.sh speed
#
# KILN_BENCH_ARGS adds arguments to kiln bench (e.g. "--tests 96").
# Files land flat under $OUT: bench.txt, bench.yaml, and those of scripts/gpu.sh perf.
set -u
. "$(dirname "$0")/env.sh"
rc=0
if [ "${KILN_SPEED_SKIP:-}" != bench ]; then
  read -r -a bench_args <<< "${KILN_BENCH_ARGS:-}"
  t0=$(date +%s)
  "$stage/kiln" bench --backend cuda --runner-dir "$stage" --skip host \
    --out /tmp/kiln-bench "${bench_args[@]}" > "$out/bench.txt" 2>&1 || rc=$?
  echo "kiln bench: exit $rc in $(( $(date +%s) - t0 )) s" >> "$out/bench.txt"
  cp /tmp/kiln-bench/bench.yaml "$out/bench.yaml" 2>/dev/null
  cat "$out/bench.txt"
fi
if [ "${KILN_SPEED_SKIP:-}" != perf ]; then
  bash scripts/gpu.sh perf "${KILN_PERF_SEL:-perf}" || rc=$?
fi
exit $rc
