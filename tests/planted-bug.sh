#!/usr/bin/env bash
# The emulation runs the real kernel logic: kernels built with a planted bug
# must fail their suites numerically, while the correct kernels pass the same
# tests. Softmax's reduction drops the row's last partial warp; attention
# stops after 32 keys (the original engine's bug).
# Usage: planted-bug.sh GOOD_RUNNER MUTANT_RUNNER
set -u
good=$1 mutant=$2
tests=(softmax/sizes_f32 softmax/causal softmax/mixed_dtypes
       attention/sizes_f32 attention/decode attention/gqa_ratios)

out=$("$good" --seed 7 "${tests[@]}" 2>&1); rc=$?
if [ $rc -ne 0 ]; then
  echo "FAIL: the correct kernel failed (exit $rc):"; echo "$out"; exit 1
fi

out=$("$mutant" --seed 7 "${tests[@]}" 2>&1); rc=$?
echo "$out" | tail -20
if [ $rc -ne 1 ]; then
  echo "FAIL: the mutant runner exited $rc, expected 1 (tests failed)"; exit 1
fi
for t in "${tests[@]}"; do
  if ! echo "$out" | grep -q "^fail  $t\$"; then
    echo "FAIL: $t did not fail on the mutant kernel"; exit 1
  fi
done
# A numeric failure, not a crash: the check summary names the worst element.
if ! echo "$out" | grep -q "over tolerance"; then
  echo "FAIL: mutant failures are not numeric check failures"; exit 1
fi
echo "planted bug caught: ${#tests[@]} tests failed on the mutant kernel"
