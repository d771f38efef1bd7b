#!/usr/bin/env bash
# scripts/gpu.sh device-checks: NVML clocks, compute-sanitizer tools, two-device skips, health
# Device health, clocks, sanitizers and tests of several devices on a lent
# NVIDIA GPU, in one call (docs/gpu-runs.md): needs .device/ from
# `scripts/gpu.sh stage`; builds nothing. Writes summary.txt, the run
# reports and compute-sanitizer's own reports under $OUT.
#   1. clocks: a few kernel tests with NVML's clocks at each test's start
#      and end (SM and memory MHz, temperature, power, throttle reasons),
#      NVML's start-up cost, and each check's error distribution;
#   2. --sanitize memcheck, racecheck, initcheck, synccheck, each on its
#      planted kernel and on clean tests: outcomes, findings, and the head
#      of compute-sanitizer's report (its real text layout);
#   3. tests of two devices on one GPU: a skip that says why;
#   4. a device fault (an illegal address: the process's context dies, the
#      GPU does not) and the health probe after it; faults/device_lost
#      skips (nothing breaks a shared GPU on purpose);
#   5. --slots auto sized from step 1's peaks.
# KILN_BACKEND=host KILN_STAGE=DIR tries the script without a GPU.
set -u
. "$(dirname "$0")/env.sh"
B=${KILN_BACKEND:-cuda}
export KILN_TOKEN_KEY=/tmp/kiln-gpu-device-tokens
S=$out/summary.txt
: >"$S"
say() { echo "$*" | tee -a "$S"; }
kiln() { "$stage/kiln" "$@" --backend "$B" --runner-dir "$stage"; }

# Per test of a report: outcome, message, and the keys this script is about.
show() {
  python3 - "$1" "$2" <<'PY' 2>&1 | tee -a "$S"
import sys
try:
    import yaml
except ImportError:
    print("  (no PyYAML here: see", sys.argv[1], ")"); sys.exit(0)
rep, what = yaml.safe_load(open(sys.argv[1])), sys.argv[2]
for p in rep.get("health_probes") or []:
    print("  health probe: device %s after %s: %s %s (%.0f ms)" % (
        p["device"], p["after"], "passed" if p["passed"] else "FAILED", p["message"], p["ms"]))
for t in rep["tests"]:
    print("  %-28s %-10s %s" % (t["id"], t["outcome"], (t.get("message") or "")[:200]))
    if what == "clocks":
        times = t.get("times", {})
        print("      runtime_init %.1f ms, clocks_init %s ms, throttled: %s" % (
            times.get("runtime_init_ms", float("nan")), times.get("clocks_init_ms", "-"),
            t.get("throttled", False)))
        for c in t.get("clocks") or []:
            print("      clocks %-5s sm %s/%s MHz, mem %s/%s MHz, %s C, %s W, reasons %s (%s) %s" % (
                c.get("when"), c.get("sm_mhz"), c.get("sm_max_mhz"), c.get("mem_mhz"),
                c.get("mem_max_mhz"), c.get("temp_c"), c.get("power_w"), c.get("reasons"),
                c.get("reason_names", ""), c.get("error", "")))
        for c in (t.get("checks") or [])[:2]:
            print("      check %s: rel. error median %.3g p90 %.3g p99 %.3g p99.9 %.3g max %.3g "
                  "over %d worst %s" % (c["name"], c["rel_p50"], c["rel_p90"], c["rel_p99"],
                                        c["rel_p999"], c["max_rel"], c["over"],
                                        c.get("worst_k_index")))
        print("      peak device memory %s bytes" % t.get("memory", {}).get("peak", {}).get("bytes"))
    if what == "sanitize":
        for f in t.get("sanitizer_findings") or []:
            print("      finding %s: %s | kernel %s | block %s thread %s | address %s | %s" % (
                f.get("tool"), f.get("kind"), f.get("kernel"), f.get("block"), f.get("thread"),
                f.get("address"), f.get("where")))
    if what == "slots":
        print("      slots %s, devices %s" % (t.get("slots"), t.get("devices")))
if what == "slots":
    for d in rep["devices"]:
        print("  device %s: %s slots over %s bytes" % (d["physical"], d.get("slots"), d.get("budget_bytes")))
PY
}

{ nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,clocks_throttle_reasons.active --format=csv
  "$stage/kiln-runner-$B" --version; "$stage/kiln-runner-$B" --devices
  command -v compute-sanitizer && compute-sanitizer --version | tail -2
  ls -l /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 2>&1; } 2>&1 | tee -a "$S"

say "== 1. clocks (NVML) and error distributions: softmax, rmsnorm, gemm, a sleeper"
kiln run -j 1 --out /tmp/kiln-clocks softmax/causal softmax/sizes_bf16 rmsnorm/sizes_f32 \
  gemm/shapes_f32 faults/gpu_sleeper >"$out/clocks.log" 2>&1
say "  kiln exit $?"
cp /tmp/kiln-clocks/report.yaml "$out/clocks.yaml"
show "$out/clocks.yaml" clocks

say "== 2. --sanitize: each tool on its planted kernel and on clean tests"
for pair in memcheck:faults/oob_write_edge memcheck:faults/oob_write_far \
            racecheck:faults/shared_race initcheck:faults/unwritten_read \
            synccheck:faults/divergent_barrier; do
  tool=${pair%%:*} t=${pair#*:}
  o=/tmp/kiln-san-$tool-${t#faults/}
  kiln run -j 1 --timeout 600 --sanitize "$tool" --out "$o" "$t" faults/pass softmax/causal \
    >"$out/sanitize-$tool-${t#faults/}.log" 2>&1
  say "-- $tool on $t and two clean tests: kiln exit $?"
  cp "$o/report.yaml" "$out/sanitize-$tool-${t#faults/}.yaml"
  show "$o/report.yaml" sanitize
  f=$(ls "$o"/logs/faults/"${t#faults/}".sanitizer.log 2>/dev/null)
  [ -n "$f" ] && cp "$f" "$out/" && { say "   compute-sanitizer's report of $t (first 14 lines):"
    head -14 "$f" | sed 's/^/     /' | tee -a "$S"; }
done
say "-- refusal where the tool is missing"
KILN_COMPUTE_SANITIZER=/nonexistent/compute-sanitizer "$stage/kiln" run --backend "$B" \
  --runner-dir "$stage" --sanitize memcheck faults/pass 2>&1 | tail -1 | tee -a "$S"
say "  (kiln exit ${PIPESTATUS[0]}; 3 expected)"

say "== 3. tests of two devices on a host with $(nvidia-smi -L | wc -l) GPU(s)"
kiln run --out /tmp/kiln-two engine/multi_device faults/two_devices >"$out/two.log" 2>&1
say "  kiln exit $? (3 on one GPU: every test skipped, so the run tested nothing)"
show /tmp/kiln-two/report.yaml none

say "== 4. device health: a test beside an illegal address; a device lost on purpose"
KILN_FAULT_SLEEP_MS=3000 kiln run -j 2 --slots 2 --out /tmp/kiln-health faults/gpu_sleeper \
  faults/oob_write_far >"$out/health.log" 2>&1
say "  kiln exit $? (1: the fault test)"
grep -E 'probing|health probe' "$out/health.log" | sed 's/^/  /' | tee -a "$S"
show /tmp/kiln-health/report.yaml none
kiln run --out /tmp/kiln-lost faults/device_lost >>"$out/health.log" 2>&1
say "  faults/device_lost: kiln exit $?"
show /tmp/kiln-lost/report.yaml none

say "== 5. --slots auto from step 1's peaks"
kiln run -j 4 --slots auto --slots-from "$out/clocks.yaml" --out /tmp/kiln-auto softmax/causal \
  rmsnorm/sizes_f32 faults/gpu_sleeper >"$out/slots.log" 2>&1
say "  kiln exit $?"
grep 'slots auto\|slots over' "$out/slots.log" | sed 's/^/  /' | tee -a "$S"
show /tmp/kiln-auto/report.yaml slots
"$stage/kiln" devices --backend "$B" --runner-dir "$stage" 2>&1 | grep slots | tee -a "$S"
