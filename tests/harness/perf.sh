#!/usr/bin/env bash
# The perf suite in host emulation (small sizes, same code): held back from
# a plain selection, every benchmark passes its correctness check and leaves
# finite metrics and a shape note in the report; the metrics survive report
# rebuild and merge; scripts/torch-compare.py plans the same cases from the
# suite's table (suites/perf/cases.c); and
# scripts/perf-table.py joins a report with a torch file (made here from the
# plan, since no torch is installed) with both of its report readers.
source "$(dirname "$0")/lib.sh"
S=$KILN_SOURCE/scripts

# ---- Selection: perf runs only when named -------------------------------------------
k list
if grep -q '^perf/' "$T/out.txt"; then fail "perf tests listed without being named"; else ok "perf tests held back by default"; fi
k list '*'
if grep -q '^perf/' "$T/out.txt"; then fail "'*' swept up perf tests"; else ok "a bare glob does not select perf tests"; fi
k list @perf;  expect_eq "$(grep -c '^perf/' "$T/out.txt")" 14 "@perf selects the perf suite"
k list perf;   expect_eq "$(grep -c '^perf/' "$T/out.txt")" 14 "the suite name selects it"
k list perf/gemm; expect_eq "$(grep -c '^perf/' "$T/out.txt")" 1 "an id selects one perf test"

# ---- The suite on the host backend ----------------------------------------------------
k run --backend host --jobs 2 --out perf -- @perf
expect_rc 0 "kiln run @perf on host"
flat perf/report.yaml
BENCHES="copy softmax rmsnorm rmsnorm_residual swiglu rope kv_repeat mxfp_dequant gemm mxfp_gemm attention decode paged_decode decode_sweep"
for b in $BENCHES; do
  expect_eq "$(tfield "perf/$b" outcome)" pass "perf/$b outcome"
  i=$(test_index "perf/$b")
  nm=$(grep -c "^tests\.$i\.metrics\.[0-9]*\.name=" "$T/flat.txt")
  [ "$nm" -ge 4 ] && ok "perf/$b has $nm metrics" || fail "perf/$b has $nm metrics"
  bad=$(grep -E "^tests\.$i\.checks\.[0-9]+\.pass=" "$T/flat.txt" | grep -vc '=1$')
  expect_eq "$bad" 0 "perf/$b: checks that did not pass"
  nc=$(grep -c "^tests\.$i\.checks\.[0-9]*\.name=" "$T/flat.txt")
  [ "$nc" -ge 1 ] && ok "perf/$b checks its output ($nc checks)" || fail "perf/$b has no check"
done
expect_eq "$(tfield perf/copy device_info.l2_bytes)" 4194304 "device_info.l2_bytes (host emulation)"
expect_eq "$(tfield perf/copy slots)" 2 "perf tests hold the whole device (both of --jobs 2 slots)"

# Every figure is a finite positive number and every case has its shape.
if python3 - "$T/flat.txt" <<'PY'
import math, re, sys
metrics, notes = {}, {}
for line in open(sys.argv[1]):
    m = re.match(r"tests\.(\d+)\.(metrics|notes)\.(\d+)\.(\w+)=(.*)", line.rstrip("\n"))
    if m:
        (metrics if m[2] == "metrics" else notes).setdefault((m[1], m[3]), {})[m[4]] = m[5]
vals = {d["name"]: float(d["value"]) for d in metrics.values()}
shapes = {d["key"] for d in notes.values()}
want = [f"{b}.{dt}" for b in ("softmax", "rmsnorm", "rmsnorm_residual", "swiglu", "rope",
                             "kv_repeat", "mxfp4_dequant", "mxfp6_e2m3_dequant")
        for dt in ("f32", "f16", "bf16")] + ["copy.f32"]
want_flop = [f"gemm_s{s}.{dt}" for s in (64, 128) for dt in ("f32", "f16", "bf16")]
want_flop += ["mxfp4_gemm_s128.bf16"]
want_flop += [f"{b}_s{s}.{dt}" for b in ("attention", "attention_causal")
              for s in (64, 128) for dt in ("f32", "f16", "bf16")]
want_flop += ["attention_d64_s128.bf16", "attention_d256_s128.bf16"]
want_flop += [f"{b}_round_p_s128.{dt}" for b in ("attention", "attention_causal")
              for dt in ("f16", "bf16")]
want_flop += ["attention_d64_round_p_s128.bf16", "attention_d256_round_p_s128.bf16"]
for k in want:
    for q in ("GBps", "ratio_to_copy", "ms", "bytes", "rotation_bytes"):
        v = vals[f"{k}.{q}"]
        assert math.isfinite(v) and v > 0, (k, q, v)
    assert f"{k}.shape" in shapes, k
    # The rotation covers twice the emulated L2 (4 MiB).
    assert vals[f"{k}.rotation_bytes"] >= 8 << 20, (k, vals[f"{k}.rotation_bytes"])
    assert vals[f"{k}.bytes"] >= 2 << 20, k
# Decode: the K/V bytes of 32 and 256 keys, B 1 and 8, dense and paged.
for p in ("", "paged_"):
    for b in (1, 8):
        for s in (32, 256):
            for dt in ("f16", "bf16"):
                k = f"{p}decode_b{b}_s{s}.{dt}"
                for q in ("GBps", "ratio_to_copy", "ms", "bytes", "rotation_bytes"):
                    v = vals[f"{k}.{q}"]
                    assert math.isfinite(v) and v > 0, (k, q, v)
                assert vals[f"{k}.bytes"] == 2 * b * 8 * s * 128 * 2, k
                assert f"{k}.shape" in shapes, k
assert vals["decode_b1_s32.bf16.bpm1_mc128_GBps"] > 0
for k in want_flop:
    for q in ("TFLOPs", "ms", "flop"):
        v = vals[f"{k}.{q}"]
        assert math.isfinite(v) and v > 0, (k, q, v)
    assert f"{k}.shape" in shapes, k
assert vals["gemm_s128.f32.flop"] == 2 * 128 ** 3
assert vals["mxfp4_gemm_s128.bf16.flop"] == 2 * 128 ** 3
# No dense peak is known for the host emulation: no fraction is made up.
assert not any(k.endswith("ratio_to_peak") for k in vals), "peak on the host"
assert vals["attention_s64.bf16.flop"] == 4 * 2 * 64 * 64 * 128
# Causal attention counts the visible pairs only: S (S + 1) / 2 per head.
assert vals["attention_causal_s64.f16.flop"] == 4 * 2 * (64 * 65 // 2) * 128
g = vals["softmax.f32.bytes"] / (vals["softmax.f32.ms"] * 1e-3) / 1e9
assert abs(g / vals["softmax.f32.GBps"] - 1) < 1e-9, "GB/s is bytes over the median"
PY
then ok "metrics finite and positive, shapes noted, rotation >= 2x L2"
else fail "perf metrics"; fi

# ---- Metrics survive rebuild and merge ------------------------------------------------------
count_metrics() { "$KH_PROBE" flat "$1" | grep -c '\.metrics\.[0-9]*\.name='; }
n0=$(count_metrics perf/report.yaml)
k report rebuild perf --report "$T/rebuilt.yaml"
expect_rc 0 "report rebuild"
expect_eq "$(count_metrics "$T/rebuilt.yaml")" "$n0" "metrics after rebuild from the journal"
k report merge perf/report.yaml -o "$T/merged.yaml"
expect_rc 0 "report merge"
expect_eq "$(count_metrics "$T/merged.yaml")" "$n0" "metrics after merge"

# ---- diff flags a lower throughput metric; html lists metrics ---------------------------
# The diff judges a change against the noise its repeats measure: BASE is
# the perf run as three repeats (every time and metric as run, 1% above, 1%
# below); NEW the same with softmax.f32.GBps halved (a regression), a
# TFLOP/s figure raised and a ms figure doubled (neither is one).
python3 - perf/report.yaml "$T/base3.yaml" "$T/lower.yaml" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
head, _, tests = s.partition("\ntests:\n")
tests = tests.rstrip().rstrip(".").rstrip() + "\n"
recs = re.findall(r"^- id: .*\n(?:(?!- id: ).*\n)*", tests, re.M)
def num(f):
    return lambda m: m[1] + repr(float(m[2]) * f)
def repeats(recs):
    out = []
    for r in recs:
        for k, f in ((1, 1.0), (2, 1.01), (3, 0.99)):
            c = re.sub(r"(\n\s+(?:\w+_ms|value): )([-0-9.e+]+)(?=\n)", num(f), r)
            out.append(re.sub(r"\n  repeat: \d+\n", "\n  repeat: %d\n" % k, c))
    return "".join(out)
def scale(s, name, f):
    out, n = re.subn(r"(- name: %s\n    value: )([^\n]+)" % re.escape(name), num(f), s)
    assert n == 3, (name, n)
    return out
base = repeats(recs)
# Three times the runs: the summary's counts follow, or the report is not
# whole (kiln refuses a report whose summary differs from its list).
summ, _, counts = head.rpartition("\nsummary:\n")
head = summ + "\nsummary:\n" + re.sub(
    r"^(  \w+: )(\d+)$", lambda m: m[1] + str(3 * int(m[2])), counts, flags=re.M)
open(sys.argv[2], "w").write(head + "\ntests:\n" + base + "...\n")
low = scale(scale(scale(base, "softmax.f32.GBps", 0.5), "gemm_s128.bf16.TFLOPs", 1.5), "rope.f16.ms", 2.0)
open(sys.argv[3], "w").write(head + "\ntests:\n" + low + "...\n")
PY
k report diff "$T/base3.yaml" "$T/lower.yaml" --yaml "$T/diff.yaml"
expect_rc 1 "diff with a halved GB/s"
expect_out 'lower metric +perf/softmax metric softmax.f32.GBps: .* GB/s \(x0.50;' "the finding names test, metric and factor"
expect_eq "$(grep -c 'kind: lower_metric' "$T/diff.yaml")" 1 "exactly one lower_metric finding"
k report diff "$T/base3.yaml" "$T/lower.yaml" --metric-rel 0.6
expect_rc 0 "a 50% drop within --metric-rel 0.6"
k report diff perf/report.yaml perf/report.yaml
expect_rc 0 "a report against itself"
k report html perf -o "$T/perf.html"
expect_rc 0 "report html"
grep -q '<td>softmax.f32.GBps</td>' "$T/perf.html" && ok "html lists metrics" || fail "html lacks metrics"

# ---- torch-compare.py without torch: plan, arguments, writer ------------------------------
python3 "$S/torch-compare.py" --plan --host-sizes --out "$T/plan.json"
[ $? -eq 0 ] && ok "torch-compare.py --plan runs without torch" || fail "torch-compare.py --plan"
python3 "$S/torch-compare.py" --iters 0 >/dev/null 2>&1
expect_eq "$?" 2 "torch-compare.py refuses --iters 0"
python3 "$S/torch-compare.py" --target-mb -1 --plan >/dev/null 2>&1
expect_eq "$?" 2 "torch-compare.py refuses --target-mb -1"
python3 "$S/torch-compare.py" --only softmax,nosuch --plan >/dev/null 2>"$T/err.txt"
expect_eq "$?" 1 "torch-compare.py refuses --only with a bench not in the plan"
grep -q 'nosuch' "$T/err.txt" && ok "names it" || fail "no name in: $(cat "$T/err.txt")"
# The plan comes from the suite's table: a row it cannot read stops it,
# named by file and line, instead of planning fewer cases.
tbl=$KILN_SOURCE/suites/perf/cases.c
line=$(grep -n '\.bench = "rope"' "$tbl" | head -1 | cut -d: -f1)
sed "${line}s/\.heads = 32/.hedas = 32/" "$tbl" > "$T/bad-field.c"
python3 "$S/torch-compare.py" --plan --table "$T/bad-field.c" >/dev/null 2>"$T/err.txt"
expect_eq "$?" 1 "torch-compare.py refuses a table row with an unknown field"
grep -q "bad-field.c:$line: unknown field \`.hedas = 32\`" "$T/err.txt" && ok "names the file, line and field" \
  || fail "bad table row not named: $(cat "$T/err.txt")"
sed 's/\.bench = "swiglu"/.bench = "swiglu2"/' "$tbl" > "$T/bad-bench.c"
python3 "$S/torch-compare.py" --plan --table "$T/bad-bench.c" >/dev/null 2>"$T/err.txt"
expect_eq "$?" 1 "torch-compare.py refuses a bench it has no plan for"
grep -q "no torch plan for bench swiglu2" "$T/err.txt" && ok "says which" \
  || fail "unplanned bench not named: $(cat "$T/err.txt")"
if python3 - "$S" "$T/flat.txt" "$T/plan.json" "$T/torch.json" <<'PY'
import importlib.util, json, re, sys
src, flat, plan_path, out = sys.argv[1:5]
spec = importlib.util.spec_from_file_location("tc", src + "/torch-compare.py")
tc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tc)            # importing needs no torch
shapes, values = {}, {}
for line in open(flat):
    m = re.match(r"tests\.\d+\.(notes|metrics)\.\d+\.(key|name|value)=(.*)", line.rstrip("\n"))
    if m and m[2] in ("key", "name"):
        key = m[3]
    elif m and m[1] == "notes" and key.endswith(".shape"):
        shapes[key[:-len(".shape")]] = m[3]
    elif m and m[1] == "metrics":
        values[key] = float(m[3])
cases = json.load(open(plan_path))["cases"]
planned = {f"{c['bench']}.{c['dtype']}": c["shape"] for c in cases}
assert planned == shapes, {k: (planned.get(k), shapes.get(k))
                           for k in set(planned) | set(shapes) if planned.get(k) != shapes.get(k)}
# The same bytes or FLOP, and the same rotation (sets of set_bytes over
# twice the emulated 4 MiB L2, at most 64 in emulation), case for case.
for c in cases:
    k = f"{c['bench']}.{c['dtype']}"
    q = "bytes" if c["kind"] == "mem" else "flop"
    assert values[f"{k}.{q}"] == c[q], (k, q, values[f"{k}.{q}"], c[q])
    rot = min(64, tc.rotation_sets(4 << 20, c["set_bytes"])) * c["set_bytes"]
    assert values[f"{k}.rotation_bytes"] == rot, (k, values[f"{k}.rotation_bytes"], rot)
# A torch file as measure() would write it: copy twice kiln's speed, the
# rest at 1 ms, MXFP6 not measured.
res = tc.new_results({"device": "fake", "torch": "0"})
copy = None
for c in cases:
    if c["bench"].startswith("mxfp6"):
        tc.record_case(res, c, None, note="n/a in this test")
        continue
    ms = 1.0
    if c["bench"] == "copy":
        copy = c["bytes"] / 1e-3 / 1e9
    tc.record_case(res, c, ms, copy, note="unfused" if c["bench"] == "rope" else None)
tc.write(res, out)
doc = json.load(open(out))
assert doc["format"] == "kiln-torch-compare/1"
names = {m["name"] for m in doc["metrics"]}
assert "softmax.bf16.GBps" in names and "gemm_s128.f32.TFLOPs" in names
assert "mxfp6_e2m3_dequant.f32.GBps" not in names
PY
then ok "torch-compare.py plans kiln's shapes, bytes, FLOP and rotation; its writer makes a torch file"
else fail "torch-compare.py plan/writer"; fi

# ---- perf-table.py ---------------------------------------------------------------------------
# A device peak as the perf suite records it on a known GPU: gemm_s128.bf16
# at half of its peak.
python3 - perf/report.yaml <<'PY'
import re, sys
s = open(sys.argv[1]).read()
s, n = re.subn(r"(  - name: gemm_s128\.bf16\.TFLOPs\n    value: [^\n]+\n    unit: TFLOP/s\n)",
               lambda m: m[1] + "  - name: gemm_s128.bf16.ratio_to_peak\n    value: 0.5\n"
                                "    unit: ratio\n", s)
assert n == 1, n
open(sys.argv[1], "w").write(s)
PY
for reader in "" --no-pyyaml; do
  python3 "$S/perf-table.py" $reader perf "$T/torch.json" -o "$T/table$reader.md" 2>"$T/err.txt"
  expect_eq "$?" 0 "perf-table.py ${reader:-(PyYAML if present)}"
done
cmp -s "$T/table.md" "$T/table--no-pyyaml.md" && ok "both report readers give one table" \
  || fail "the report readers disagree"
if python3 - "$T/table.md" <<'PY'
import sys
lines = [l for l in open(sys.argv[1]) if l.startswith("| ") and not l.startswith("| kernel") and "---" not in l]
rows = {tuple(c.strip() for c in l.strip().strip("|").split("|")[:2]): l for l in lines}
# copy, fill, 8 memory benches x 3, 6 GEMM, 1 MX GEMM, 14 attention FLOP
# cases and 6 more with round_p, 16 decode
assert len(rows) == 2 + 8 * 3 + 6 + 1 + 14 + 6 + 16, len(rows)
assert "below 0.9x torch" in rows[("decode_b8_s256", "bf16")]
assert "meets targets" not in rows[("paged_decode_b1_s32", "f16")]
assert "reference" in rows[("copy", "f32")]
assert "reference" in rows[("fill", "f32")]
# Host emulation is far below a 2x-copy torch: every memory kernel misses.
assert "slower than torch" in rows[("softmax", "f32")]
assert "no torch figure" in rows[("mxfp6_e2m3_dequant", "bf16")]
assert "ratio only" in rows[("gemm_s128", "bf16")] and "TFLOP/s" in rows[("gemm_s128", "bf16")]
assert "| 50% |" in rows[("gemm_s128", "bf16")], rows[("gemm_s128", "bf16")]
assert "| n/a |" in rows[("gemm_s128", "f16")].split("TFLOP/s", 1)[1]
assert "torch notes" in open(sys.argv[1]).read()
PY
then ok "table rows, verdicts and notes"
else fail "table content"; sed 's/^/    | /' "$T/table.md" | head -20; fi
python3 "$S/perf-table.py" perf > "$T/nt.md"
expect_eq "$?" 0 "perf-table.py without a torch file"
grep -q '| softmax | f32 | .* | n/a |' "$T/nt.md" && ok "torch columns n/a without a torch file" || fail "no-torch table"
k run --backend host --jobs 1 --out plain faults/pass
python3 "$S/perf-table.py" plain >/dev/null 2>"$T/err.txt"
expect_eq "$?" 2 "perf-table.py on a report without perf metrics"
grep -q 'no perf metrics' "$T/err.txt" && ok "says why" || fail "no reason given"
echo '{"format": "other"}' > "$T/bad.json"
python3 "$S/perf-table.py" perf "$T/bad.json" >/dev/null 2>&1
expect_eq "$?" 2 "perf-table.py refuses a file that is not torch-compare output"

finish
