#!/usr/bin/env bash
# `kiln list` shows exactly what `kiln run` with the same arguments runs:
# for each set of arguments below, the ids (with repeats) of `kiln list
# --format json` equal the test runs of a `kiln run` whose every child is
# /bin/true (each test run is recorded, none does any work). The JSON shape
# is versioned. The nightly profile runs what docs/reports.md says: every
# suite.
. "$(dirname "$0")/lib.sh"

# list_runs ARGS...: "id repeat" lines of `kiln list --format json`.
list_runs() {
  "$KILN" list --format json "$@" >"$T/list.json" 2>"$T/list.err" || { echo "LIST FAILED: $(cat "$T/list.err")"; return; }
  python3 - "$T/list.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["format"] == "kiln-list" and d["format_version"] == 1, d.get("format")
for t in d["tests"]:
    for r in range(1, d["repeat"] + 1):
        print(t["id"], r)
PY
}
# run_runs ARGS...: the same from the report of a real `kiln run`.
run_runs() {
  "$KILN" run --wrap /bin/true --warm 0 -j 2 -o "$T/rr" "$@" >"$T/run.out" 2>&1
  python3 - "$T/rr/report.yaml" <<'PY'
import sys, yaml
for t in yaml.safe_load(open(sys.argv[1]))["tests"]:
    if t["final"]:
        print(t["id"], t["repeat"])
PY
}
same() {  # same WHAT ARGS...
  local what=$1; shift
  rm -rf "$T/rr"
  list_runs "$@" | sort >"$T/a"
  run_runs "$@" | sort >"$T/b"
  if [ -s "$T/a" ] && cmp -s "$T/a" "$T/b"; then ok "$what: list = run ($(wc -l <"$T/a") test runs)"
  else fail "$what: list has $(wc -l <"$T/a"), run has $(wc -l <"$T/b")"; diff "$T/a" "$T/b" | head -5; fi
}

same "no selector, the auto backend" 
same "softmax, the auto backend" softmax
same "a shard" --shard 2/3
same "a shard of two suites" --shard 2/3 softmax engine
same "@slow and an exclusion" @slow -softmax/sizes_large_f32
same "repeats" --repeat 2 faults/pass faults/skip
same "the nightly profile" --config nightly --backend host
"$KILN" list --backend host faults/pass >"$T/text.txt" 2>&1
grep -q '^faults/pass ' "$T/text.txt" && ok "the text form is the default" || fail "text list"

# The JSON shape: what a tool may rely on.
"$KILN" list --format json --shard 1/2 engine >"$T/l.json" 2>/dev/null
python3 - "$T/l.json" <<'PY' && ok "JSON shape" || fail "JSON shape"
import json, sys
d = json.load(open(sys.argv[1]))
for k in ("format", "format_version", "backend", "repeat", "selection", "held_back", "shard", "tests"):
    assert k in d, k
assert d["shard"]["index"] == 1 and d["shard"]["count"] == 2, d["shard"]
t = d["tests"][0]
for k in ("id", "suite", "name", "tags", "slots", "timeout_s", "needs_gpu", "file", "line"):
    assert k in t, k
assert isinstance(t["tags"], list) and isinstance(t["needs_gpu"], bool) and isinstance(t["line"], int)
PY
k list --format yaml engine
expect_rc 2 "an unknown format"

# The nightly profile runs every suite (docs/reports.md).
"$KILN" list --format json >"$T/all.json" 2>/dev/null
"$KILN" list --format json --config nightly >"$T/nightly.json" 2>/dev/null
python3 - "$T/all.json" "$T/nightly.json" <<'PY' && ok "nightly: every suite" || fail "nightly: not every suite"
import json, sys
suites = lambda f: sorted({t["suite"] for t in json.load(open(f))["tests"]})
a, n = suites(sys.argv[1]), suites(sys.argv[2])
print("default:", a); print("nightly:", n)
assert a == n
PY
grep -q 'configs/nightly.yaml: every suite' "$KILN_SOURCE/docs/reports.md" && ok "docs/reports.md says so" || fail "docs/reports.md"
finish
