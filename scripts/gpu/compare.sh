#!/usr/bin/env bash
# scripts/gpu.sh compare: [BASE] this tree against another commit's: cuda suite, perf suite, kiln list
# "No behaviour change, no kernel slower" checked on one GPU in one call:
# this tree and BASE (default .thirdparty/base, another commit's `git
# archive`, carried) built side by side there (8 jobs each, .device/deps
# from `scripts/gpu.sh pack` here), then for each: `kiln list --format
# json` (every test with its tags), the whole default cuda suite, and the
# perf suite; then torch-compare.py once and this tree's perf-table.py over
# both perf reports. Parts run in order while time is left
# (KILN_COMPARE_BUDGET seconds, default 560: each part is skipped, and
# says so, when it would start too late).
#
#   git archive COMMIT | tar -x -C .thirdparty/base     (here)
#   bash scripts/gpu.sh compare [BASE]                  (there; .device and .thirdparty carried)
#
# $OUT: summary.txt (both suites' counts, the verdicts that differ, the
# listings' difference, both perf tables), compare.tgz (logs and reports).
set -u
. "$(dirname "$0")/env.sh"
base=$(cd "${1:-.thirdparty/base}" && pwd) || { echo "compare: no base tree" >&2; exit 2; }
budget=${KILN_COMPARE_BUDGET:-560}
parts=" ${KILN_COMPARE_PARTS:-list suite perf} "   # which of list, suite, perf run
on() { [[ $parts == *" $1 "* ]]; }
start=$(date +%s)
s=$out/summary.txt
work=/tmp/kiln-compare   # tarred into $OUT at the end: what comes back is a few files
rm -rf "$work"; mkdir -p "$work"
say() { echo "$*" | tee -a "$s"; }
left() { echo $(( budget - ($(date +%s) - start) )); }
{ nvidia-smi -L; echo "host cores: $(nproc)"; echo "this tree: $KILN_GIT_REV; base: $base"; } >>"$s" 2>&1

# Both trees built at once with the same options (scripts/gpu/build.sh's).
build() {   # build SRC DIR LOG
  (cd "$1" && rm -rf "$2" &&
    meson setup "$2" --native-file "$OLDPWD/$stage/deps/native.ini" -Dhost=disabled \
      -Dhip=disabled -Dcuda=enabled -Dstatic_deps=true -Dbuildtype=release \
      -Dplanted_bugs=false -Dnvidia_archs=sm_90,sm_90a &&
    ninja -C "$2" -j 8 harness/parent/kiln suites/kiln-runner-cuda) >"$3" 2>&1
}
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
export PATH=$(dirname "$nvcc_bin"):$PATH
printf '[binaries]\npkg-config = '"'"'%s'"'"'\n' "$PWD/$stage/deps/pkg-config" >"$stage/deps/native.ini"
t=$(date +%s)
build "$PWD" "$PWD/build-gpu" "$work/build-head.log" & h=$!
build "$base" "$base/build-gpu" "$work/build-base.log" & b=$!
wait $h; hrc=$?; wait $b; brc=$?
say "== build: head exit $hrc, base exit $brc, $(( $(date +%s) - t )) s"
[ $hrc -eq 0 ] || tail -20 "$work/build-head.log" >>"$s"
[ $brc -eq 0 ] || tail -20 "$work/build-base.log" >>"$s"
[ $hrc -eq 0 ] && [ $brc -eq 0 ] || exit 1
ls -l build-gpu/suites/kiln-runner-cuda "$base/build-gpu/suites/kiln-runner-cuda" >>"$s"

declare -A K=([head]=$PWD/build-gpu [base]=$base/build-gpu)
on list && for w in head base; do
  "${K[$w]}/harness/parent/kiln" list --backend cuda --runner-dir "${K[$w]}/suites" --format json \
    >"$work/list-$w.json" 2>"$work/list-$w.err"
done
on list && python3 - "$work/list-head.json" "$work/list-base.json" >>"$s" 2>&1 <<'EOF'
import json, sys
def tests(p):
    d = json.load(open(p))
    d = d.get("tests", d) if isinstance(d, dict) else d
    return {t["id"]: t for t in d}
h, b = tests(sys.argv[1]), tests(sys.argv[2])
# Where a test is defined may move, and a newer format may add fields:
# the fields both give must agree.
both = lambda k: sorted((set(h[k]) & set(b[k])) - {"file", "line"})
new = sorted({f for k in h.keys() & b.keys() for f in set(h[k]) ^ set(b[k])})
print(f"== kiln list --format json: head {len(h)} tests, base {len(b)}; "
      f"only head {sorted(set(h) - set(b))}, only base {sorted(set(b) - set(h))}, "
      f"fields in one only {new}, "
      f"differing {sorted(k for k in h.keys() & b.keys() if any(h[k][f] != b[k][f] for f in both(k)))}")
EOF

on suite && for w in head base; do
  [ "$(left)" -gt 90 ] || { say "== suite $w: skipped, $(left) s left"; continue; }
  t=$(date +%s.%N)
  "${K[$w]}/harness/parent/kiln" run --backend cuda --runner-dir "${K[$w]}/suites" \
    --out "$work/suite-$w" >"$work/suite-$w.log" 2>&1
  say "== cuda suite, $w: exit $?, $(awk -v a="$t" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s"
  grep -E '^kiln: [0-9]+ test runs' "$work/suite-$w.log" | head -1 >>"$s"
done
# Verdicts per test id, from both reports.
verdicts() { awk '/^ *- id:/ {id = $3} /^ *outcome:/ {print id, $2}' "$1" | sort -u; }
if [ -f "$work/suite-head/report.yaml" ] && [ -f "$work/suite-base/report.yaml" ]; then
  say "== verdicts that differ (head < , base >):"
  diff <(verdicts "$work/suite-head/report.yaml") <(verdicts "$work/suite-base/report.yaml") >>"$s" \
    && say "none"
fi

on perf && for w in head base; do
  [ "$(left)" -gt 120 ] || { say "== perf $w: skipped, $(left) s left"; continue; }
  t=$(date +%s)
  "${K[$w]}/harness/parent/kiln" run --backend cuda --runner-dir "${K[$w]}/suites" \
    --out "$work/perf-$w" -- @perf >"$work/perf-$w.log" 2>&1
  say "== perf suite, $w: exit $?, $(( $(date +%s) - t )) s"
done
if on perf && [ "$(left)" -gt 60 ]; then
  t=$(date +%s)
  python3 scripts/torch-compare.py --out "$work/torch.json" >"$work/torch.log" 2>&1
  say "== torch-compare.py: exit $?, $(( $(date +%s) - t )) s"
fi
for w in head base; do
  [ -f "$work/perf-$w/report.yaml" ] || continue
  args=("$work/perf-$w/report.yaml")
  [ -s "$work/torch.json" ] && args+=("$work/torch.json")
  python3 scripts/perf-table.py "${args[@]}" -o "$work/perf-table-$w.md" >/dev/null 2>&1
  cp "$work/perf-table-$w.md" "$out/" 2>/dev/null
done
tar -czf "$out/compare.tgz" -C /tmp kiln-compare 2>/dev/null
say "== $(( $(date +%s) - start )) s in all"
# This tree's binaries, for a later call's `isolation unpack`, in parts
# under the 16 MiB a file that comes back may have: `cat built.tgz.*
# >.device/built.tgz` here.
tar -czf - build-gpu/harness/parent/kiln build-gpu/suites/kiln-runner-cuda 2>/dev/null |
  split -b 15M - "$out/built.tgz."
ls -l "$out"/built.tgz.* >>"$s"
cat "$s"
