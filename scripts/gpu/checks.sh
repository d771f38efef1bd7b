#!/usr/bin/env bash
# scripts/gpu.sh checks: the suite at 4 jobs, again with --repeat, the pollution pair
# The GPU acceptance runs, in one call on a lent NVIDIA machine (see
# docs/gpu-runs.md): the whole suite with several children at once, the
# suite again with --repeat to hunt flakes, and the state-pollution pair
# under both isolation modes. Needs .device/ from `scripts/gpu.sh stage`.
# Writes reports and a summary under $OUT (flat: the device tool returns at
# most two folder levels and eight files).
set -u
. "$(dirname "$0")/env.sh"
repeat=${KILN_GPU_REPEAT:-20}
# Selection for the repeat run (default: everything, slow tests included).
read -r -a repeat_sel <<< "${KILN_GPU_REPEAT_SEL:-}"
summary="$out/summary.txt"
: > "$summary"
step() { # name, then the kiln command line
  local name=$1; shift
  local t0=$(date +%s%N)
  local log="$out/${name%%-*}.log"   # pollute-p and pollute-n share one log
  echo "== kiln $*" >> "$log"
  # Options go before the command's own, which may end in `-- SELECTORS`.
  "$stage/kiln" "$1" --runner-dir "$stage" --out "/tmp/kiln-$name" "${@:2}" >> "$log" 2>&1
  local rc=$?
  local t1=$(date +%s%N)
  [ "$name" = pollute-p ] || cp "/tmp/kiln-$name/report.yaml" "$out/$name.yaml" 2>/dev/null
  printf '%-12s exit %-3s %6d ms  %s\n' "$name" "$rc" $(( (t1 - t0) / 1000000 )) \
    "$(grep -E '^[0-9]+ test runs' "$log" | tail -1)" | tee -a "$summary"
}
{ nvidia-smi -L; "$stage/kiln-runner-cuda" --devices; } | tee -a "$summary"
step suite     run --backend cuda --jobs 4 --slots 4
step repeat    run --backend cuda --jobs 4 --slots 4 --repeat "$repeat" -- "${repeat_sel[@]}"
step pollute-p run --backend cuda --isolation process faults/pollution_writer faults/pollution_reader
step pollute-n run --backend cuda --isolation none faults/pollution_writer faults/pollution_reader
echo "== outcomes that were not pass in the repeat run" | tee -a "$summary"
grep -E '^(FAIL|CRASH|TIMEOUT|LEAK|ERROR|FLAKY) ' "$out/repeat.log" | sort | uniq -c | tee -a "$summary"
echo "== pollution reader under isolation none" | tee -a "$summary"
sed -n '/isolation none/,$p' "$out/pollute.log" | grep -A3 'pollution_reader' | head -8 | tee -a "$summary"
