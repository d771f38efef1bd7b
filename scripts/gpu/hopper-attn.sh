#!/usr/bin/env bash
# scripts/gpu.sh hopper-attn: the Hopper attention kernel: registers, checks, variants, speed, ncu
# The Hopper attention kernel (kernels/tile/attn_sm90.h, the default on
# compute capability 9.0; KILN_HOPPER_ATTN=0 turns it off) on an H100, in
# one device call, from the staged build in .device/ (`scripts/gpu.sh
# stage` here first; KILN_STAGE names another folder), and
# dev/attn-pterms.cu, which it builds there with the machine's nvcc unless
# the stage holds attn-pterms (it is not staged: the runner's carry stays
# smaller):
#   1. the registers, stack and local memory (cuobjdump -res-usage) of the
#      runner's instances and of every variant's in attn-pterms, and the
#      runner's SASS counts (HGMMA, BAR.SYNC / BAR.ARV of the ping-pong,
#      LDL / STL);
#   2. correctness on the GPU: the attention suites, tag slow included,
#      through the engine (the default schedule), then every variant
#      (kernels/tile/attn_sm90_cfg.h: each schedule with P in two terms, in
#      the kernel's form and in one term) against a double reference at
#      the suites' sizes, and timed at the perf shapes, by attn-pterms
#      --sched all (its default and pp are the same kernel: their spread
#      is the noise);
#   3. speed: perf/attention (B 1, H 16, S 4096: D 128 f16/bf16 causal
#      and not, D 64 and D 256 bf16) with the mma.sync kernel
#      (KILN_HOPPER_ATTN=0) and with the engine's default twice, beside
#      torch's F.scaled_dot_product_attention on the same inputs;
#   4. one table line per case and mode, the variants' times, and Nsight
#      Compute on one D 128 f16 launch at S 4096 with the default and with
#      nopp (in attn-pterms).
# $OUT gets summary.txt, tables.txt (case, dtype, kiln, torch, ratio per
# mode; then every variant's time), regs.txt, variants.txt (attn-pterms'
# output) and hopper-attn.tgz (every log, report and table).
#
#   bash scripts/gpu.sh hopper-attn
set -u
. "$(dirname "$0")/env.sh"
work=$(mktemp -d /tmp/kiln-fa3.XXXXXX)
summary="$out/summary.txt"
keep() { tar czf "$out/hopper-attn.tgz" -C "$work" . 2>/dev/null; }
t00=$(date +%s)
{ date -u; nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
  "$stage/kiln-runner-cuda" --devices; echo "rev $KILN_GIT_REV"; } > "$summary" 2>&1
tool="$stage/attn-pterms"
if [ ! -x "$tool" ]; then
  tool="$work/attn-pterms"; t0=$(date +%s)
  nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  "$nvcc_bin" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
    -DKILN_BACKEND_CUDA -DKD_SM90A -Ikernels -Iengine/include \
    dev/attn-pterms.cu -o "$tool" > "$work/attn-pterms-build.log" 2>&1
  echo "nvcc dev/attn-pterms.cu: exit $? in $(( $(date +%s) - t0 )) s" >> "$summary"
  [ -x "$tool" ] || echo "no attn-pterms: the variants are not measured" >> "$summary"
fi

# 1. Resources and instructions of every kd_attn_sm90_fwd instance.
cu=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -x "$cu" ]; then
  for bin in "$stage/kiln-runner-cuda" "$tool"; do
    [ -x "$bin" ] || continue
    "$cu" -res-usage "$bin" > "$work/res-usage-${bin##*/}.txt" 2>&1
    echo "== ${bin##*/}" >> "$out/regs.txt"
    awk '/Function/{fn = $2} /REG:/{if (fn ~ /kd_attn_sm90_fwd/) print fn, $1, $2, $4}' \
      "$work/res-usage-${bin##*/}.txt" | sort -u >> "$out/regs.txt"
  done
  "$cu" -sass "$stage/kiln-runner-cuda" 2>/dev/null |
    awk '/Function : /{f = /kd_attn_sm90_fwd/} f' > /tmp/kiln-fa3-sass.txt
  echo "sass kd_attn_sm90_fwd instances: $(grep -c 'Function : ' /tmp/kiln-fa3-sass.txt)" >> "$summary"
  for op in HGMMA BAR.SYNC BAR.ARV LDL STL; do
    echo "sass $op: $(grep -c "$op" /tmp/kiln-fa3-sass.txt)" >> "$summary"
  done
  rm -f /tmp/kiln-fa3-sass.txt
fi

# 2. The attention suites through the engine, then every variant.
t0=$(date +%s); rm -rf /tmp/kiln-fa3-check
timeout 90 "$stage/kiln" run --backend cuda --runner-dir "$stage" \
  --out /tmp/kiln-fa3-check -- attention attention_tiled > "$work/check.log" 2>&1
check_rc=$?
cp /tmp/kiln-fa3-check/report.yaml "$work/check.yaml" 2>/dev/null
echo "suites attention, attention_tiled: exit $check_rc in $(( $(date +%s) - t0 )) s:" \
  "$(grep -E '^[0-9]+ test runs' "$work/check.log")" >> "$summary"
variants_rc=0
if [ -x "$tool" ]; then
  t0=$(date +%s)
  timeout 300 "$tool" --sched all > "$out/variants.txt" 2> "$work/variants.err"
  variants_rc=$?
  echo "attn-pterms --sched all: exit $variants_rc in $(( $(date +%s) - t0 )) s," \
    "$(grep -c '^| [bf]' "$out/variants.txt") rows, $(grep -c '^time ' "$out/variants.txt") times" \
    >> "$summary"
  cat "$work/variants.err" >> "$summary"
fi
keep

# 3. Speed: perf/attention through the engine, then torch.
modes="mma default default.2"
perf_rc=0
for mode in $modes; do
  v=${mode%.2}
  case $v in
    mma) setting=KILN_HOPPER_ATTN=0 ;;
    *) setting=KILN_HOPPER_ATTN=1 ;;
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

# 4. Tables: the S 4096 rows of each mode (kernel, dtype, kiln, torch,
# kiln / torch), then the variants' times.
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
if [ -s "$out/variants.txt" ]; then
  echo "== variants (attn-pterms: dtype, shape, schedule, form of P)" >> "$out/tables.txt"
  grep '^time ' "$out/variants.txt" >> "$out/tables.txt"
fi
keep
# The profiler on one launch of the D 128 f16 kernel in the kernel's form
# of P at S 4096 (attn-pterms --only perf: its first timed launch, past
# one checked and three warm-ups), with and without ping-pong (demangled
# names read "kd_attn_sm90_cfg<(int)128, (int)128, ...>").
ncu_bin=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
if [ -n "$ncu_bin" ] && [ -x "$tool" ]; then
  for v in default nopp; do
    t0=$(date +%s)
    timeout 60 "$ncu_bin" --kernel-name-base demangled \
      -k regex:'kd_half, kd_attn_sm90_cfg<.int.128, .int.128, .int.2, .int.0,' \
      --launch-skip 4 -c 1 \
      --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section SchedulerStats --section WarpStateStats --section Occupancy \
      --metrics regex:'smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
      "$tool" --sched "$v" --only perf > "$work/ncu-$v.txt" 2>&1
    echo "ncu (kd_attn_sm90_fwd<half, d128>, S 4096, $v): exit $? in $(( $(date +%s) - t0 )) s" >> "$summary"
    keep
  done
fi
echo "total $(( $(date +%s) - t00 )) s" >> "$summary"
keep
rm -rf "$work"
cat "$summary" "$out/regs.txt" "$out/tables.txt" 2>/dev/null
[ "$check_rc" -eq 0 ] && [ "$variants_rc" -eq 0 ] && [ "$perf_rc" -eq 0 ] && [ "$torch_rc" -eq 0 ]
