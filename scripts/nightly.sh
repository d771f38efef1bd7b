#!/usr/bin/env bash
# The nightly job: runs the nightly profile (configs/nightly.yaml) and writes
# the night's folder reports/nightly/<UTC date>/ with report.yaml, junit.xml,
# report.html (trends over earlier nights), diff.txt/diff.yaml against the
# last good night, and status. Exits non-zero when a test failed (kiln's
# status) or the diff found a regression (1). docs/reports.md explains it.
#
#   scripts/nightly.sh [-- KILN_RUN_ARGS...]   (e.g. -- --repeat 1 engine)
# Environment: KILN (kiln binary; default: scripts/build.sh, then build/...),
#   KILN_NIGHTLY_ROOT (reports/nightly), KILN_NIGHTLY_DATE (today, UTC),
#   KILN_NIGHTLY_HISTORY (nights in the trend plots, 14),
#   KILN_DIFF_ARGS (thresholds for kiln report diff, e.g. "--time-rel 0.3").
set -uo pipefail
cd "$(dirname "$0")/.."
[ "${1:-}" = "--" ] && shift

if [ -z "${KILN:-}" ]; then
  scripts/build.sh >/dev/null || { echo "nightly: build failed" >&2; exit 3; }
  KILN=$PWD/build/harness/parent/kiln
fi
root=${KILN_NIGHTLY_ROOT:-reports/nightly}
date=${KILN_NIGHTLY_DATE:-$(date -u +%Y-%m-%d)}
mkdir -p "$root"
# A second run on the same day gets its own folder: DATE.2, DATE.3, ...
night=$date n=1
while [ -e "$root/$night" ]; do n=$((n + 1)); night=$date.$n; done
dir=$root/$night
mkdir -p "$dir"
echo "nightly: $dir"

# A night is good when its run passed (kiln exit 0: nothing failed, not
# interrupted) and its diff found no regression; `touch DIR/accepted`
# makes a night good by hand (an intended slowdown, a test removed).
is_good() { [ -e "$1/accepted" ] || [ "$(cat "$1/status" 2>/dev/null)" = good ]; }
base=
for d in $(ls -1 "$root" | grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}(\.[0-9]+)?$' |
           sort -t. -k1,1 -k2,2n -r); do
  [ "$d" = "$night" ] && continue
  [ -f "$root/$d/report.yaml" ] && is_good "$root/$d" && { base=$root/$d; break; }
done

"$KILN" run --config nightly --out "$dir/run" --junit "$dir/junit.xml" "$@"
run_rc=$?
if [ ! -f "$dir/run/report.yaml" ]; then
  echo "nightly: no report (kiln exit $run_rc)" >&2
  echo infra >"$dir/status"
  exit $((run_rc ? run_rc : 3))
fi
cp "$dir/run/report.yaml" "$dir/report.yaml"

diff_rc=0
if [ -n "$base" ]; then
  # shellcheck disable=SC2086  # thresholds are words
  "$KILN" report diff "$base/report.yaml" "$dir/report.yaml" --yaml "$dir/diff.yaml" \
    ${KILN_DIFF_ARGS:-} >"$dir/diff.txt"
  diff_rc=$?
  echo "$base" >"$dir/base"
else
  echo "no earlier good night under $root: nothing to compare with" >"$dir/diff.txt"
fi
cat "$dir/diff.txt"

history=()
for d in $(ls -1 "$root" | grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}(\.[0-9]+)?$' |
           sort -t. -k1,1 -k2,2n | grep -vx "$night" | tail -n "${KILN_NIGHTLY_HISTORY:-14}"); do
  [ -f "$root/$d/report.yaml" ] && history+=(--history "$root/$d/report.yaml")
done
"$KILN" report html "$dir/report.yaml" -o "$dir/report.html" "${history[@]}" || run_rc=${run_rc/#0/3}

if [ "$run_rc" -ne 0 ]; then status=failed
elif [ "$diff_rc" -ne 0 ]; then status=regressed
else status=good; fi
echo "$status" >"$dir/status"
ln -sfn "$night" "$root/latest"
echo "nightly: $status (kiln exit $run_rc, diff exit $diff_rc): $dir/report.html"
[ "$run_rc" -ne 0 ] && exit "$run_rc"
exit "$diff_rc"
