#!/usr/bin/env bash
# The Hopper attention kernel (kernels/kd-attn-wgmma.h, the default on
# compute capability 9.0; KILN_HOPPER_ATTN=0 turns it off) on an H100, in
# one device call, from the staged build in .device/ (`scripts/gpu-run.sh
# stage` here first; KILN_STAGE names another folder):
#   1. its SASS: HGMMA, UTMALDG and SYNCS in kd_fa3_fwd, no local memory
#      outside the lane-by-lane path;
#   2. correctness on the GPU: the attention suites, tag slow included,
#      through the Hopper kernel (the default);
#   3. speed: the perf suite's attention cases (B 1, H 16, S 4096: D 128
#      f16/bf16 causal and not, D 64 and D 256 bf16) with the mma.sync
#      kernel (KILN_HOPPER_ATTN=0), the Hopper kernel and its timing
#      variants (KILN_FA3_VARIANT=p1: P rounded once; serial: no softmax /
#      P V overlap), in the same call, beside torch's
#      F.scaled_dot_product_attention on the same inputs;
#   4. one table per run (scripts/perf-table.py), Nsight Compute on one
#      D 128 f16 launch at S 4096 when ncu is there, and a summary.
# Everything lands flat under $OUT.
#
#   bash scripts/gpu-hopper-attn.sh
set -u
. "$(dirname "$0")/gpu-env.sh"
summary="$out/summary.txt"
{ nvidia-smi -L; "$stage/kiln-runner-cuda" --devices; } > "$summary" 2>&1

# 1. The instructions the kernel compiled to.
if command -v cuobjdump >/dev/null || [ -x /usr/local/cuda/bin/cuobjdump ]; then
  objdump_bin=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  "$objdump_bin" -sass "$stage/kiln-runner-cuda" 2>&1 |
    awk '/Function : /{f = /kd_fa3_fwd/} f' > "$out/fa3-sass.txt"
  echo "sass functions kd_fa3_fwd: $(grep -c 'Function : ' "$out/fa3-sass.txt")" >> "$summary"
  for op in HGMMA UTMALDG SYNCS USETMAXREG LDL STL; do
    echo "sass $op: $(grep -c "$op" "$out/fa3-sass.txt")" >> "$summary"
  done
fi

# 2. The attention suites through the Hopper kernel (the default).
rm -rf /tmp/kiln-fa3-check
t0=$(date +%s)
"$stage/kiln" run --backend cuda --runner-dir "$stage" \
  --out /tmp/kiln-fa3-check -- attention attention_tiled \
  > "$out/check.log" 2>&1
check_rc=$?
cp /tmp/kiln-fa3-check/report.yaml "$out/check-report.yaml" 2>/dev/null
echo "suites attention, attention_tiled (Hopper kernel): exit $check_rc in $(( $(date +%s) - t0 )) s" >> "$summary"
grep -E '^[0-9]+ test runs' "$out/check.log" >> "$summary"

# 3. Speed: the mma.sync kernel, the Hopper kernel, its variants, torch.
modes="mma wgmma p1 serial"
perf_rc=0
for mode in $modes; do
  rm -rf /tmp/kiln-fa3-perf
  case $mode in
    mma) setting=KILN_HOPPER_ATTN=0 ;;
    wgmma) setting=KILN_FA3_VARIANT= ;;
    *) setting=KILN_FA3_VARIANT=$mode ;;
  esac
  env $setting \
    "$stage/kiln" run --backend cuda --runner-dir "$stage" \
    --out /tmp/kiln-fa3-perf -- perf/attention > "$out/perf-$mode.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || perf_rc=$rc
  cp /tmp/kiln-fa3-perf/report.yaml "$out/perf-$mode.yaml" 2>/dev/null
  echo "perf/attention ($mode): exit $rc" >> "$summary"
done
python3 scripts/torch-compare.py --out "$out/torch.json" \
  --only attention_s4096,attention_causal_s4096,attention_d64_s4096,attention_d256_s4096 \
  > "$out/torch.log" 2>&1
torch_rc=$?
echo "torch-compare.py (attention): exit $torch_rc" >> "$summary"

# 4. Tables, and the profiler on one launch (the 61st of the D 128 f16
# kernel: past S 1024's warm-up and timed launches, at S 4096).
for mode in $modes; do
  args=("$out/perf-$mode.yaml")
  [ "$torch_rc" -eq 0 ] && args+=("$out/torch.json")
  python3 scripts/perf-table.py "${args[@]}" -o "$out/perf-table-$mode.md" \
    >> "$summary" 2>&1
  echo "perf-table.py ($mode): exit $?" >> "$summary"
done
ncu_bin=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
if [ -n "$ncu_bin" ]; then
  timeout 120 "$ncu_bin" --kernel-name-base demangled \
    -k regex:'kd_half, kd_fa3_d128<.int.0>' --launch-skip 60 -c 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section SchedulerStats --section WarpStateStats --section Occupancy \
    --metrics regex:'smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
    "$stage/kiln-runner-cuda" perf/attention > "$out/ncu-fa3.txt" 2>&1
  echo "ncu (kd_fa3_fwd<half, d128>, S 4096): exit $?" >> "$summary"
fi
cat "$summary" "$out"/perf-table-*.md 2>/dev/null
[ "$check_rc" -eq 0 ] && [ "$perf_rc" -eq 0 ] && [ "$torch_rc" -eq 0 ]
