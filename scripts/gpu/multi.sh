#!/usr/bin/env bash
# scripts/gpu.sh multi: several GPUs: the suite on all, contexts per second, shared tokens
# kiln on a lent host with several GPUs, in one call (docs/devices.md,
# "Several GPUs"; needs .device/ from `scripts/gpu.sh stage`):
#   1. the whole default cuda suite across every GPU (tag slow included),
#      its wall time, counts and slowest tests, with the device of every
#      test and the most slots in use at once per device;
#   2. the context ceiling, per host or per GPU: bench/noop with no warm
#      children (each test opens a fresh context), on GPU 0 alone and on
#      every GPU, 4 slots per GPU;
#   3. two `kiln run` at once sharing the host's device tokens (no warm
#      children, so that a CUDA context exists only while its slots are
#      held): per device, the slots held at once from both reports (an
#      upper bound) and the compute processes nvidia-smi sees, sampled;
#   4. tests that need two GPUs (engine/multi_device, faults/two_devices),
#      alone and beside one-GPU tests;
#   5. device health: an illegal address on one GPU while the other keeps
#      working (the probe after it, and the tests around it).
# Writes summary.txt and the logs under $OUT.
set -u
. "$(dirname "$0")/env.sh"
s="$out/summary.txt"
kiln() { "$stage/kiln" "$1" --backend cuda --runner-dir "$stage" "${@:2}"; }
dur() { python3 -c 'import sys,yaml; print(yaml.safe_load(open(sys.argv[1]))["run"]["duration_s"])' "$1"; }
{ nvidia-smi -L; "$stage/kiln-runner-cuda" --devices; } > "$s" 2>&1

echo "== 1. the default suite on every GPU" >> "$s"
t0=$(date +%s)
timeout 300 "$stage/kiln" run --backend cuda --runner-dir "$stage" --out /tmp/multi-suite \
  > "$out/suite.log" 2>&1
echo "kiln run: exit $? in $(( $(date +%s) - t0 )) s; $(grep -E '^[0-9]+ test runs' "$out/suite.log")" >> "$s"
sed -n '/^slowest/,/^[0-9]* test runs/p' "$out/suite.log" >> "$s"
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

echo "== 3. two kiln runs at once, shared tokens (2 slots per GPU, no warm children)" >> "$s"
rm -rf /tmp/multi-a /tmp/multi-b
# What the driver sees: compute processes per GPU, sampled every 50 ms.
( while :; do nvidia-smi --query-compute-apps=gpu_bus_id,pid --format=csv,noheader 2>/dev/null \
    | awk -v t="$(date +%s.%N)" '{print t, $0}'; sleep 0.05; done ) > "$out/apps.txt" &
sampler=$!
pair=()
for r in a b; do
  "$stage/kiln" run --backend cuda --runner-dir "$stage" --slots 2 --warm 0 --repeat 12 \
    --out /tmp/multi-$r -- bench/noop softmax > "$out/pair-$r.log" 2>&1 &
  pair+=($!)
done
wait "${pair[@]}"
kill $sampler 2>/dev/null; wait $sampler 2>/dev/null
grep -hE '^[0-9]+ test runs' "$out"/pair-*.log >> "$s"
python3 scripts/device-concurrency.py /tmp/multi-a/report.yaml /tmp/multi-b/report.yaml >> "$s" 2>&1
python3 - "$out/apps.txt" >> "$s" 2>&1 <<'PY'
import sys, collections
samples = collections.defaultdict(lambda: collections.Counter())
for line in open(sys.argv[1]):
    parts = line.split(None, 1)
    if len(parts) < 2 or "," not in parts[1]:
        continue
    bus = parts[1].split(",")[0].strip()
    samples[parts[0]][bus] += 1
most = collections.Counter()
for t, per in samples.items():
    for bus, n in per.items():
        most[bus] = max(most[bus], n)
print("nvidia-smi, %d samples with compute processes: most at once per GPU %s"
      % (len(samples), dict(most) or "{}"))
PY
echo "runners left: $(pgrep -c -x kiln-runner-cud || true)" >> "$s"

echo "== 4. tests that need two GPUs" >> "$s"
KILN_FAULT_SLEEP_MS=2000 "$stage/kiln" run --backend cuda --runner-dir "$stage" \
  --out /tmp/multi-two -- engine/multi_device faults/two_devices softmax rmsnorm \
  > "$out/two.log" 2>&1
echo "kiln run: exit $?; $(grep -E '^[0-9]+ test runs' "$out/two.log")" >> "$s"
python3 - /tmp/multi-two/report.yaml >> "$s" 2>&1 <<'PY'
import sys, yaml
rep = yaml.safe_load(open(sys.argv[1]))
for t in rep["tests"]:
    if t["id"] in ("engine/multi_device", "faults/two_devices"):
        notes = {n["key"]: n["value"] for n in t.get("notes") or []}
        print("  %s: %s, devices %s, %s" % (t["id"], t["outcome"], t.get("devices"),
              notes or (t.get("message") or "")[:160]))
PY
python3 scripts/device-concurrency.py /tmp/multi-two/report.yaml >> "$s" 2>&1

echo "== 5. device health: an illegal address on one GPU, the other working" >> "$s"
KILN_FAULT_SLEEP_MS=3000 "$stage/kiln" run --backend cuda --runner-dir "$stage" --slots 2 \
  --out /tmp/multi-health -- faults/oob_write_far faults/gpu_sleeper softmax \
  > "$out/health.log" 2>&1
echo "kiln run: exit $? (1: the fault test); $(grep -E '^[0-9]+ test runs' "$out/health.log")" >> "$s"
grep -E 'probing|health probe' "$out/health.log" | sed 's/^/  /' >> "$s"
python3 - /tmp/multi-health/report.yaml >> "$s" 2>&1 <<'PY'
import sys, yaml
rep = yaml.safe_load(open(sys.argv[1]))
for p in rep.get("health_probes") or []:
    print("  probe: device %s after %s: %s (%.0f ms) %s" % (p["device"], p["after"],
          "passed" if p["passed"] else "FAILED", p["ms"], p.get("message") or ""))
by = {}
for t in rep["tests"]:
    by.setdefault(t.get("device"), []).append(t["outcome"])
for d, o in sorted(by.items(), key=lambda x: str(x[0])):
    print("  device %s: %d tests, %s" % (d, len(o), {k: o.count(k) for k in set(o)}))
print("  devices in service: %s" % [(d["physical"], d.get("in_service", True)) for d in rep["devices"]])
PY
cp /tmp/multi-health/report.yaml "$out/health.yaml" 2>/dev/null
cat "$s"
