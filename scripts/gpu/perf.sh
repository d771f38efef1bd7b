#!/usr/bin/env bash
# scripts/gpu.sh perf: the perf suite beside PyTorch, perf-table.md, roofs, attention sweep
# kiln's perf suite next to PyTorch on a lent NVIDIA GPU (docs/measuring.md):
# `kiln run --backend cuda -- @perf` from the staged build in .device/
# (`scripts/gpu.sh stage` here first), then scripts/torch-compare.py on
# the same device, then scripts/perf-table.py joining the two, then the
# memory-pattern roofs (.device/kernel-limits, from dev/kernel-limits.cu)
# into summary.txt, then the fused-attention sweep (.device/attn-tune, from
# dev/attn-tune.cu). Everything lands flat under $OUT: perf.log,
# perf-report.yaml, torch.json, torch.log, perf-table.md, attn-tune.txt,
# summary.txt.
#
#   bash scripts/gpu.sh perf [SELECTORS...]     (default: @perf)
#
# KILN_PERF_TORCH_ARGS adds arguments to torch-compare.py (e.g. "--iters 100").
set -u
. "$(dirname "$0")/env.sh"
sel=("$@")
[ ${#sel[@]} -eq 0 ] && sel=(@perf)
summary="$out/summary.txt"
{ nvidia-smi -L; "$stage/kiln-runner-cuda" --devices; } > "$summary" 2>&1

run_dir=/tmp/kiln-perf
rm -rf "$run_dir"
t0=$(date +%s)
"$stage/kiln" run --backend cuda --runner-dir "$stage" --out "$run_dir" \
  -- "${sel[@]}" > "$out/perf.log" 2>&1
kiln_rc=$?
cp "$run_dir/report.yaml" "$out/perf-report.yaml" 2>/dev/null
echo "kiln run -- ${sel[*]}: exit $kiln_rc in $(( $(date +%s) - t0 )) s" >> "$summary"
grep -E '^[0-9]+ test runs' "$out/perf.log" >> "$summary"

t0=$(date +%s)
read -r -a torch_args <<< "${KILN_PERF_TORCH_ARGS:-}"
python3 scripts/torch-compare.py --out "$out/torch.json" "${torch_args[@]}" \
  > "$out/torch.log" 2>&1
torch_rc=$?
echo "torch-compare.py: exit $torch_rc in $(( $(date +%s) - t0 )) s" >> "$summary"

table_args=("$out/perf-report.yaml")
[ "$torch_rc" -eq 0 ] && table_args+=("$out/torch.json")
python3 scripts/perf-table.py "${table_args[@]}" -o "$out/perf-table.md" \
  >> "$summary" 2>&1
echo "perf-table.py: exit $?" >> "$summary"
if [ -x "$stage/kernel-limits" ]; then
  echo "== memory-pattern roofs (dev/kernel-limits.cu)" >> "$summary"
  "$stage/kernel-limits" >> "$summary" 2>&1
  echo "kernel-limits: exit $?" >> "$summary"
fi
# The fused-attention configurations, timed and checked (dev/attn-tune.cu);
# KILN_ATTN_TUNE_ARGS adds arguments (e.g. "--only bf16").
if [ -x "$stage/attn-tune" ]; then
  read -r -a tune_args <<< "${KILN_ATTN_TUNE_ARGS:-}"
  "$stage/attn-tune" "${tune_args[@]}" > "$out/attn-tune.txt" 2>&1
  echo "attn-tune: exit $? ($(grep -c '|' "$out/attn-tune.txt") lines in attn-tune.txt)" >> "$summary"
  grep ' best ' "$out/attn-tune.txt" >> "$summary"
fi
cat "$summary" "$out/perf-table.md" 2>/dev/null
[ "$kiln_rc" -eq 0 ] && [ "$torch_rc" -eq 0 ]
