#!/usr/bin/env bash
# Error distributions: every numeric check records the quantiles of its
# relative error (median, p90, p99, p99.9, max), a histogram in decades,
# how many elements are over tolerance, and its worst elements with their
# indices; a mismatch budget lets a documented number of finite elements
# exceed tolerance. Checked on real kernel checks and on the pollution
# pair's check (8192 elements wrong).
. "$(dirname "$0")/lib.sh"
need_pyyaml

k run --backend host -o "$T/run" softmax/causal softmax/sizes_bf16 rmsnorm/sizes_f16
expect_rc 0 "kernel checks pass"
if python3 - "$T/run/report.yaml" <<'PY'
import sys, yaml
rep = yaml.safe_load(open(sys.argv[1]))
n = 0
for t in rep["tests"]:
    for c in t.get("checks", []):
        q = [c["rel_p50"], c["rel_p90"], c["rel_p99"], c["rel_p999"], c["max_rel"]]
        assert q == sorted(q), (c["name"], q)
        assert c["rel_n"] <= c["n"] and c["rel_n"] > 0, c["name"]
        assert len(c["hist"]) == 15 and sum(c["hist"]) == c["rel_n"], (c["name"], c["hist"])
        assert c["hist_lo"] == -10
        k = len(c["worst_k_index"])
        assert len(c["worst_k_actual"]) == k == len(c["worst_k_expected"])
        if c["max_abs"] == 0:          # exact: no element is listed as worst
            assert k == 0, c["name"]
            continue
        assert 1 <= k <= 5
        assert c["worst_k_index"][0] == c["worst_index"], c["name"]
        assert c["worst_k_actual"][0] == c["worst_actual"]
        tol = lambda a, e: abs(a - e) / (c["atol"] + c["rtol"] * abs(e))
        r = [tol(a, e) for a, e in zip(c["worst_k_actual"], c["worst_k_expected"])]
        assert r == sorted(r, reverse=True), (c["name"], r)
        assert c["budget"] == 0
        n += 1
print(n, "checks: quantiles in order, histogram sums to rel_n, worst elements worst first")
assert n >= 5
PY
then ok "every check's distribution is consistent"; else fail "check distributions"; fi

# The pollution pair: 8192 elements over tolerance, the worst first.
k run --backend host --isolation none -o "$T/pol" faults/pollution_writer faults/pollution_reader
expect_rc 1 "the reader fails after the writer"
flat "$T/pol/report.yaml"
expect_eq "$(tfield faults/pollution_reader checks.0.over)" 8192 "elements over tolerance"
expect_eq "$(tfield faults/pollution_reader checks.0.worst_k_index.0)" 8192 "the worst element's index"
expect_eq "$(tfield faults/pollution_reader checks.0.worst_k_index.4)" 8196 "the fifth worst's"
expect_eq "$(tfield faults/pollution_reader checks.0.worst_k_actual.4)" 7.25 "its value"
expect_eq "$(tfield faults/pollution_reader checks.0.rel_n)" 8191 "relative errors over the nonzero expected values"
k report show "$T/pol"
expect_out 'rel. error median 0, p99 0' "report show: the quantiles"

# A budget: 8192 misses allowed pass the check, 8191 do not.
k run --backend host --isolation none --tolerance 'faults/pollution_reader=1e-5:1.3e-6:8192' \
  -o "$T/budget" faults/pollution_writer faults/pollution_reader
flat "$T/budget/report.yaml"
expect_eq "$(tfield faults/pollution_reader outcome)" pass "a budget of 8192 lets 8192 misses pass"
expect_eq "$(tfield faults/pollution_reader checks.0.budget)" 8192 "the check records its budget"
expect_eq "$(tfield faults/pollution_reader checks.0.over)" 8192 "...and still counts them"
printf 'tolerances:\n  - {match: "faults/pollution_reader", atol: 1e-5, rtol: 1.3e-6, max_over: 8191}\n' >"$T/b.yaml"
k run --backend host --isolation none --config "$T/b.yaml" -o "$T/budget2" faults/pollution_writer \
  faults/pollution_reader
flat "$T/budget2/report.yaml"
expect_eq "$(tfield faults/pollution_reader outcome)" fail "a budget of 8191 does not"
expect_match "$(tfield faults/pollution_reader message)" '8192 over tolerance \(atol 1e-05, rtol 1.3e-06, budget 8191\)' \
  "...and the message names the budget"
# A budget never excuses a NaN.
k run --backend host --poison --tolerance 'faults/unwritten_read=1e-5:1.3e-6:100000' -o "$T/nan" \
  faults/unwritten_read
flat "$T/nan/report.yaml"
expect_eq "$(tfield faults/unwritten_read outcome)" fail "NaN fails whatever the budget"
finish
