#!/usr/bin/env bash
# Fuzzes kiln's config readers and the parent's record reader with
# libFuzzer (tests/fuzz): builds the targets with clang, ASan and UBSan if
# needed, then runs each for SECONDS (default 60; CI's short pass) over the
# seed corpus in tests/fuzz/corpus/. New inputs go to a work folder, never
# into the repository; a crash, hang, leak or sanitizer report fails the run
# and leaves its input in OUT/artifacts. The long pass: scripts/fuzz.sh 600.
#
#   scripts/fuzz.sh [SECONDS] [BUILD_DIR] [OUT]
#   (defaults: 60, build-fuzz, /tmp/kiln-fuzz; KILN_FUZZ_TARGETS="record"
#   runs one target)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
build=${2:-build-fuzz}
out=${3:-/tmp/kiln-fuzz}
targets=(${KILN_FUZZ_TARGETS:-config record})

if [ ! -f "$build/build.ninja" ]; then
  CC=clang-14 CXX=clang++-14 meson setup "$build" -Dfuzz=true -Dhip=disabled \
    -Dcuda=disabled -Dplanted_bugs=false \
    -Db_sanitize=address,undefined -Db_lundef=false
fi
ninja -C "$build" "${targets[@]/#/tests/fuzz/fuzz-}"

mkdir -p "$out"
status=0
for t in "${targets[@]}"; do
  work=$out/corpus/$t
  mkdir -p "$work" "$out/artifacts/$t"
  log=$out/$t.log
  echo "== fuzz-$t: $secs s (log $log)"
  # -timeout: an input that takes over 10 s is a hang; -rss_limit_mb bounds
  # memory. UBSan reports abort, so they count as crashes.
  if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
       "$build/tests/fuzz/fuzz-$t" -max_total_time="$secs" -timeout=10 \
       -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$out/artifacts/$t/" \
       "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1; then
    echo "fuzz-$t FAILED: see $log and $out/artifacts/$t/"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' "$log" | head -5 || true
    status=1
  fi
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  cov=$(grep -Eo 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  echo "fuzz-$t: ${execs:-?} executions, $cov, corpus $(ls "$work" | wc -l) new + $(ls "tests/fuzz/corpus/$t" | wc -l) seeds"
done
exit $status
