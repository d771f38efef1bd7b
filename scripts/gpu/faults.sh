#!/usr/bin/env bash
# scripts/gpu.sh faults: device faults, SIGINT in a kernel, slots after each, a soak
# The reliability checks on a lent NVIDIA GPU, in one call (docs/gpu-runs.md,
# docs/reliability.md): the device faults through the cuda backend (a far
# out-of-bounds store, a near one caught by guard bytes, an unwritten read
# under --poison, a spinning kernel that only the grace kill ends, an
# allocation over the cap, a leak), SIGINT during a spinning kernel, the
# slots back at full value after each, then a GPU soak (scripts/soak.sh,
# KILN_GPU_SOAK runs of the whole suite, default 20). Needs .device/ from
# `scripts/gpu.sh stage`. Writes a summary and reports under $OUT.
# KILN_BACKEND=host KILN_STAGE=DIR tries the script itself without a GPU.
set -u
. "$(dirname "$0")/env.sh"
B=${KILN_BACKEND:-cuda}
soak=${KILN_GPU_SOAK:-20}
export KILN_TOKEN_KEY=/tmp/kiln-gpu-faults-tokens
kiln=("$stage/kiln")
S=$out/summary.txt
: >"$S"
say() { echo "$*" | tee -a "$S"; }

# The report lines that matter, per test: outcome, signal, message.
brief() {
  awk 'function out() { if (id != "") printf "  %-28s %-8s %-8s %s\n", id, o, sig, substr(m, 1, 160) }
       /^- id: / {out(); id=$3; o=""; sig=""; m=""}
       /^  outcome: / {o=$2} /^  signal: / {sig=$2}
       /^  message: / {sub(/^  message: /, ""); m=$0}
       END {out()}' "$1"
}
slots_full() {
  "${kiln[@]}" devices --backend "$B" --runner-dir "$stage" >"$out/devices.txt" 2>&1
  if grep -Eq 'slots ([0-9]+) total, \1 free' "$out/devices.txt"; then say "  slots back at full: $(grep -m1 -Eo 'slots [0-9]+ total, [0-9]+ free' "$out/devices.txt")"
  else say "  SLOTS NOT FULL: $(grep -m1 slots "$out/devices.txt")"; fi
}

{ nvidia-smi -L; "$stage/kiln-runner-$B" --devices; } 2>&1 | tee -a "$S"

say "== device faults ($B, --poison, --grace 2)"
"${kiln[@]}" run --backend "$B" --runner-dir "$stage" --poison --grace 2 -j 2 \
  --out /tmp/kiln-faults faults/pass faults/leak faults/oob_write_far \
  faults/oob_write_near faults/unwritten_read faults/spin_kernel faults/over_cap \
  >"$out/faults.log" 2>&1
say "  kiln exit $?"
cp /tmp/kiln-faults/report.yaml "$out/faults.yaml"
brief "$out/faults.yaml" | tee -a "$S"
slots_full

say "== each device fault alone, slots checked after each"
for t in oob_write_far oob_write_near unwritten_read spin_kernel over_cap; do
  "${kiln[@]}" run --backend "$B" --runner-dir "$stage" --poison --grace 2 \
    --out "/tmp/kiln-one-$t" "faults/$t" >>"$out/faults.log" 2>&1
  say "  faults/$t: kiln exit $?, outcome $(awk '/^  outcome:/ {print $2; exit}' "/tmp/kiln-one-$t/report.yaml")"
  slots_full
done

say "== SIGINT during a spinning kernel"
"${kiln[@]}" run --backend "$B" --runner-dir "$stage" --grace 2 \
  --out /tmp/kiln-int faults/spin_kernel >>"$out/faults.log" 2>&1 &
pid=$!
sleep 1.5
kill -INT $pid
wait $pid
say "  kiln exit $? (130 expected)"
brief /tmp/kiln-int/report.yaml | tee -a "$S"
slots_full
left=$(pgrep -f "$stage/kiln-runner-$B" | wc -l)
say "  runner processes left: $left"

say "== soak: $soak runs of the $B suite (${KILN_GPU_SOAK_SEL:--@slow})"
scripts/soak.sh -n "$soak" -b "$B" -k "$stage/kiln" -o /tmp/kiln-soak -- \
  --runner-dir "$stage" --jobs 4 --slots 4 -- ${KILN_GPU_SOAK_SEL:--@slow} \
  >"$out/soak.log" 2>&1
say "  soak exit $? (0: no test changed outcome)"
tail -12 "$out/soak.log" | tee -a "$S"
