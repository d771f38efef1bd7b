#!/usr/bin/env bash
# The Hopper attention kernel (kernels/kd-attn-wgmma.h, the default on
# compute capability 9.0; KILN_HOPPER_ATTN=0 turns it off) on an H100, in
# one device call, from the staged build in .device/ (`scripts/gpu-run.sh
# stage` here first; KILN_STAGE names another folder):
#   1. its instances' registers, stack and local memory (cuobjdump
#      -res-usage) and SASS counts (HGMMA, BAR.SYNC / BAR.ARV of the
#      ping-pong, LDL / STL);
#   2. correctness on the GPU: the attention suites, tag slow included,
#      through the default and through each schedule a default could take
#      (KILN_FA3_VARIANT=nopp, pp, pp-serial, pp64: attention_sm90.hip);
#   3. speed: perf/attention (B 1, H 16, S 4096: D 128 f16/bf16 causal
#      and not, D 64 and D 256 bf16) with the mma.sync kernel
#      (KILN_HOPPER_ATTN=0), the default, every schedule with P in two
#      terms and in one (-p1, timing only), bf16's earlier two terms
#      (p2: the default's schedule without V in f16), and the default and the schedule
#      before ping-pong once more (their spread is the noise), beside
#      torch's F.scaled_dot_product_attention on the same inputs;
#   4. one table line per case and variant, and Nsight Compute on one
#      D 128 f16 launch at S 4096 with the default and with nopp.
# $OUT gets summary.txt, tables.txt (case, dtype, kiln, torch, ratio per
# variant), regs.txt and hopper-attn.tgz (every log, report and table).
#
#   bash scripts/gpu-hopper-attn.sh
set -u
. "$(dirname "$0")/gpu-env.sh"
work=$(mktemp -d /tmp/kiln-fa3.XXXXXX)
summary="$out/summary.txt"
keep() { tar czf "$out/hopper-attn.tgz" -C "$work" . 2>/dev/null; }
t00=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  "$stage/kiln-runner-cuda" --devices; echo "rev $KILN_GIT_REV"; } > "$summary" 2>&1

# 1. Resources and instructions of every kd_fa3_fwd instance.
cu=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$cu" ]; then
  "$cu" -res-usage "$stage/kiln-runner-cuda" > "$work/res-usage.txt" 2>&1
  awk '/Function/{fn = $2} /REG:/{if (fn ~ /kd_fa3_fwd/) print fn, $1, $2, $4}' \
    "$work/res-usage.txt" | sort -u > "$out/regs.txt"
  "$cu" -sass "$stage/kiln-runner-cuda" 2>/dev/null |
    awk '/Function : /{f = /kd_fa3_fwd/} f' > /tmp/kiln-fa3-sass.txt
  echo "sass kd_fa3_fwd instances: $(grep -c 'Function : ' /tmp/kiln-fa3-sass.txt)" >> "$summary"
  for op in HGMMA BAR.SYNC BAR.ARV LDL STL; do
    echo "sass $op: $(grep -c "$op" /tmp/kiln-fa3-sass.txt)" >> "$summary"
  done
  rm -f /tmp/kiln-fa3-sass.txt
fi

# 2. The attention suites through the default and each candidate schedule.
check_rc=0
for v in default nopp pp pp-serial pp64; do
  vv=$v; [ "$v" = default ] && vv=
  t0=$(date +%s); rm -rf /tmp/kiln-fa3-check
  KILN_FA3_VARIANT=$vv timeout 90 "$stage/kiln" run --backend cuda \
    --runner-dir "$stage" --out /tmp/kiln-fa3-check -- attention attention_tiled \
    > "$work/check-$v.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || check_rc=$rc
  cp /tmp/kiln-fa3-check/report.yaml "$work/check-$v.yaml" 2>/dev/null
  echo "suites attention, attention_tiled ($v): exit $rc in $(( $(date +%s) - t0 )) s:" \
    "$(grep -E '^[0-9]+ test runs' "$work/check-$v.log")" >> "$summary"
done
keep

# 3. Speed: each variant's perf/attention, then torch.
modes="mma default nopp pp pp-serial pp64 p1 nopp-p1 pp-p1 pp-serial-p1 pp64-p1 p2 serial default.2 nopp.2"
perf_rc=0
for mode in $modes; do
  v=${mode%.2}
  case $v in
    mma) setting=KILN_HOPPER_ATTN=0 ;;
    default) setting=KILN_FA3_VARIANT= ;;
    *) setting=KILN_FA3_VARIANT=$v ;;
  esac
  t0=$(date +%s); rm -rf /tmp/kiln-fa3-perf
  env $setting timeout 60 "$stage/kiln" run --backend cuda --runner-dir "$stage" \
    --out /tmp/kiln-fa3-perf -- perf/attention > "$work/perf-$mode.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || perf_rc=$rc
  cp /tmp/kiln-fa3-perf/report.yaml "$work/perf-$mode.yaml" 2>/dev/null
  echo "perf/attention ($mode): exit $rc in $(( $(date +%s) - t0 )) s" >> "$summary"
done
t0=$(date +%s)
PYTHONUNBUFFERED=1 timeout 90 python3 scripts/torch-compare.py --out "$work/torch.json" \
  --only attention_s4096,attention_causal_s4096,attention_d64_s4096,attention_d256_s4096 \
  > "$work/torch.log" 2>&1
torch_rc=$?
echo "torch-compare.py (attention): exit $torch_rc in $(( $(date +%s) - t0 )) s" >> "$summary"

# 4. Tables: the S 4096 rows of each variant (kernel, dtype, kiln, torch,
# kiln / torch).
for mode in $modes; do
  args=("$work/perf-$mode.yaml")
  [ "$torch_rc" -eq 0 ] && args+=("$work/torch.json")
  python3 scripts/perf-table.py "${args[@]}" -o "$work/perf-table-$mode.md" \
    > /dev/null 2>&1
  echo "== $mode" >> "$out/tables.txt"
  grep -E '^\| attention_(causal_|d64_|d256_)?s4096 \| (f16|bf16)' \
    "$work/perf-table-$mode.md" | awk -F'|' '{print $2 $3 $5 $8 $9}' \
    >> "$out/tables.txt"
done
keep
# The profiler on one launch: the 61st of the D 128 f16 kernel (past S
# 1024's warm-up and timed launches, at S 4096), with and without ping-pong
# (demangled names read "kd_fa3_cfg<(int)128, (int)128, ...>").
ncu_bin=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
if [ -n "$ncu_bin" ]; then
  for v in default nopp; do
    vv=$v; [ "$v" = default ] && vv=
    t0=$(date +%s)
    KILN_FA3_VARIANT=$vv timeout 60 "$ncu_bin" --kernel-name-base demangled \
      -k regex:'kd_half, kd_fa3_cfg<.int.128, .int.128' --launch-skip 60 -c 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section SchedulerStats --section WarpStateStats --section Occupancy \
      --metrics regex:'smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
      "$stage/kiln-runner-cuda" perf/attention > "$work/ncu-$v.txt" 2>&1
    echo "ncu (kd_fa3_fwd<half, d128>, S 4096, $v): exit $? in $(( $(date +%s) - t0 )) s" >> "$summary"
    keep
  done
fi
echo "total $(( $(date +%s) - t00 )) s" >> "$summary"
keep
rm -rf "$work"
cat "$summary" "$out/regs.txt" "$out/tables.txt" 2>/dev/null
[ "$check_rc" -eq 0 ] && [ "$perf_rc" -eq 0 ] && [ "$torch_rc" -eq 0 ]
