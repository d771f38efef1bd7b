#!/usr/bin/env bash
# kiln on a lent host with several GPUs, in one call (docs/harness.md,
# "Several GPUs"; needs .device/ from `scripts/gpu-run.sh stage`):
#   1. the whole default cuda suite across every GPU (less the one test that
#      takes six minutes), with the device of every test and the most slots
#      in use at once per device;
#   2. the context ceiling, per host or per GPU: bench/noop with no warm
#      children (each test opens a fresh context), on GPU 0 alone and on
#      every GPU, 4 slots per GPU;
#   3. two `kiln run` at once sharing the host's device tokens: per device,
#      never more tests in flight than its slots, across both reports.
# Writes summary.txt and the logs under $OUT.
set -u
cd "$(dirname "$0")/.."
stage=.device
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
for d in /usr/local/cuda/lib64 /usr/local/cuda-*/lib64; do
  if ls "$d"/libcurand.so.10* >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; break
  fi
done
export KILN_GIT_REV=$(cat "$stage/REVISION" 2>/dev/null || echo unknown)
s="$out/summary.txt"
kiln() { "$stage/kiln" "$1" --backend cuda --runner-dir "$stage" "${@:2}"; }
dur() { python3 -c 'import sys,yaml; print(yaml.safe_load(open(sys.argv[1]))["run"]["duration_s"])' "$1"; }
{ nvidia-smi -L; "$stage/kiln-runner-cuda" --devices; } > "$s" 2>&1

echo "== 1. the default suite on every GPU" >> "$s"
t0=$(date +%s)
timeout 300 "$stage/kiln" run --backend cuda --runner-dir "$stage" --out /tmp/multi-suite \
  -- -gemm/matrix_cores_large > "$out/suite.log" 2>&1
echo "kiln run: exit $? in $(( $(date +%s) - t0 )) s; $(grep -E '^[0-9]+ test runs' "$out/suite.log")" >> "$s"
python3 scripts/device-concurrency.py /tmp/multi-suite/report.yaml >> "$s" 2>&1

echo "== 2. fresh contexts per second (bench/noop x 96, --warm 0, 4 slots per GPU)" >> "$s"
for vis in 0 all; do
  rm -rf /tmp/multi-noop
  if [ "$vis" = all ]; then env -u CUDA_VISIBLE_DEVICES "$stage/kiln" run --backend cuda \
      --runner-dir "$stage" --warm 0 --slots 4 --repeat 96 --out /tmp/multi-noop -- bench/noop \
      > "$out/noop-$vis.log" 2>&1
  else CUDA_VISIBLE_DEVICES=$vis "$stage/kiln" run --backend cuda --runner-dir "$stage" \
      --warm 0 --slots 4 --repeat 96 --out /tmp/multi-noop -- bench/noop > "$out/noop-$vis.log" 2>&1
  fi
  rc=$?
  d=$(dur /tmp/multi-noop/report.yaml)
  echo "GPUs $vis: exit $rc, 96 tests in $d s = $(python3 -c "print(round(96 / $d, 2))") tests/s" >> "$s"
  python3 scripts/device-concurrency.py /tmp/multi-noop/report.yaml >> "$s" 2>&1
done

echo "== 3. two kiln runs at once, shared tokens (2 slots per GPU)" >> "$s"
rm -rf /tmp/multi-a /tmp/multi-b
for r in a b; do
  "$stage/kiln" run --backend cuda --runner-dir "$stage" --slots 2 --repeat 12 \
    --out /tmp/multi-$r -- bench/noop softmax > "$out/pair-$r.log" 2>&1 &
done
wait
grep -hE '^[0-9]+ test runs' "$out"/pair-*.log >> "$s"
python3 scripts/device-concurrency.py /tmp/multi-a/report.yaml /tmp/multi-b/report.yaml >> "$s" 2>&1
echo "runners left: $(pgrep -c -x kiln-runner-cud || true)" >> "$s"
cat "$s"
