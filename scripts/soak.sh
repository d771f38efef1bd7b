#!/usr/bin/env bash
# Soak: runs the same kiln selection N times back to back (default 100) and
# reports every test whose outcome changed between runs; zero is expected.
# A change means flakiness in a kernel, a test or kiln itself, the thing
# per-test isolation exists to rule out. Each run's outcomes are kept in
# OUT/outcomes.txt; run folders are kept only for runs where something
# changed (and the first), so a long soak stays small on disk.
#
#   scripts/soak.sh [-n N] [-b BACKEND] [-k KILN] [-o OUT] [-- KILN-RUN-ARGS...]
#
# Defaults: N=100, BACKEND=host, KILN=build/harness/parent/kiln,
# OUT=/tmp/kiln-soak-<time>, and the run arguments `-@slow` on host (the
# host-emulated suite as `meson test` runs it), none on a GPU (everything).
# GPU soak on the H100: scripts/soak.sh -n 50 -b cuda -k DIR/kiln
set -uo pipefail
cd "$(dirname "$0")/.."
n=100 backend=host kiln=build/harness/parent/kiln out=""
while getopts "n:b:k:o:" opt; do
  case $opt in
    n) n=$OPTARG ;; b) backend=$OPTARG ;; k) kiln=$OPTARG ;; o) out=$OPTARG ;;
    *) sed -n '2,15p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
args=("$@")
[ ${#args[@]} -eq 0 ] && [ "$backend" = host ] && args=(-- -@slow)
[ -x "$kiln" ] || { echo "soak: no kiln at $kiln (build first, or -k PATH)"; exit 2; }
out=${out:-/tmp/kiln-soak-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
: >"$out/outcomes.txt"

# id[#repeat] outcome, one per line, from a report (in its test order).
outcomes() {
  awk '/^- id: / {id=$3} /^  repeat: / {rep=$2}
       /^  final: / {fin=$2}
       /^  outcome: / {o=$2}
       /^  (ended|times):/ && id != "" && o != "" {
         if (fin != "false") print id (rep > 1 ? "#" rep : ""), o; id=""; o="" }' "$1" | sort
}

start=$(date +%s)
changed_runs=0
for i in $(seq 1 "$n"); do
  dir=$out/run-$i
  t0=$(date +%s.%N)
  "$kiln" run --backend "$backend" -o "$dir" "${args[@]}" >"$out/last-console.txt" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  if [ ! -f "$dir/report.yaml" ]; then
    echo "run $i: no report (kiln exit $rc); console:"; tail -5 "$out/last-console.txt"
    changed_runs=$((changed_runs + 1)); continue
  fi
  outcomes "$dir/report.yaml" | sed "s/^/$i /" >>"$out/outcomes.txt"
  [ "$i" -eq 1 ] && outcomes "$dir/report.yaml" >"$out/first.txt"
  if [ "$i" -gt 1 ] && ! outcomes "$dir/report.yaml" | cmp -s - "$out/first.txt"; then
    changed_runs=$((changed_runs + 1))
    echo "run $i: outcomes differ from run 1 (kept in $dir)"
    diff <(outcomes "$dir/report.yaml") "$out/first.txt" | grep '^[<>]' | head -10
  elif [ "$i" -gt 1 ]; then
    rm -rf "$dir"
  fi
  printf 'run %d/%d: kiln exit %d, %.1f s, %s\n' "$i" "$n" "$rc" \
    "$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')" "$(grep -m1 -Eo '^[0-9]+ test runs in .*' "$out/last-console.txt" || true)"
done

echo "== soak: $n runs of kiln run --backend $backend ${args[*]} in $(( $(date +%s) - start )) s"
tests=$(cut -d' ' -f2 "$out/outcomes.txt" | sort -u | wc -l)
echo "tests per run: $tests; outcomes recorded: $(wc -l <"$out/outcomes.txt")"
# Per test, the distinct outcomes it had over all runs.
flips=$(awk '{c[$2 " " $3]++; if (!((($2) " " $3) in seen)) {seen[$2 " " $3]=1; k[$2]++}}
          END {for (tc in c) {split(tc, a, " "); if (k[a[1]] > 1) print "  " a[1] ": " a[2] " in " c[tc] " runs"}}' \
        "$out/outcomes.txt" | sort)
if [ -n "$flips" ] || [ "$changed_runs" -ne 0 ]; then
  echo "tests whose outcome changed:"; echo "${flips:-  (a run left no report)}"
  exit 1
fi
echo "no test changed outcome; every run's outcomes:"
awk '{print $2}' "$out/first.txt" | sort | uniq -c
exit 0
