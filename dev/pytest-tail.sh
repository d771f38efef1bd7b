#!/usr/bin/env bash
# How kiln's pytest workers end a run against `pytest -n J` on the host,
# with tests that only sleep (dev/pytest-tail/): heavy-first is a file of
# twelve 1 s tests and two of short ones, heavy-last a 6 s test, two short
# files, then the twelve; each as one --pytest folder and as a source per
# file. kiln runs twice in one run folder: without times (the first run)
# and with the first run's (the second). Prints a line per way: wall
# seconds and kiln's workers. Nothing here needs a GPU.
#
#   dev/pytest-tail.sh [-j J] [KILN]     (default 2, build/harness/parent/kiln)
set -u
cd "$(dirname "$0")/.."
j=2
[ "${1:-}" = -j ] && { j=$2; shift 2; }
kiln=$(realpath "${1:-build/harness/parent/kiln}")
py=${KILN_PYTHON:-python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export KILN_PYTHON=$py KILN_PYTEST_LISTING=none PYTHONDONTWRITEBYTECODE=1
wall() { /usr/bin/time -f %e -o "$out/t" "$@" >"$out/log" 2>&1; cat "$out/t"; }
for suite in heavy-first heavy-last; do
  dir=$PWD/dev/pytest-tail/$suite
  printf '%-12s pytest -n %s: %6s s\n' "$suite" "$j" \
    "$(cd "$dir" && wall "$py" -m pytest -q -n "$j" -p no:cacheprovider .)"
  files=()
  for f in "$dir"/test_*.py; do files+=(--pytest "$f"); done
  for how in folder files; do
    args=(--pytest "$dir")
    [ $how = files ] && args=("${files[@]}")
    for pass in first second; do
      s=$(wall "$kiln" run --backend host --isolation worker -j "$j" -o "$out/$suite-$how" "${args[@]}")
      printf '%-12s kiln, a source per %-6s %s run: %6s s  %s\n' "$suite" \
        "${how%s}," "$pass" "$s" "$(grep -E '^workers:' "$out/log")"
    done
  done
done
