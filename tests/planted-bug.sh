#!/usr/bin/env bash
# The emulation runs the real kernel logic: kernels built with planted bugs
# must fail their suites numerically, while the correct kernels pass the same
# tests. The bugs: softmax's reduction drops the row's last partial warp;
# RoPE forms its angle in f32; RMSNorm adds eps after the square root;
# SwiGLU puts the swish on up (the original engine's form); paged attention
# reads the last cache block past the sequence length; fused attention's
# SIMT kernels stop after 32 keys (the original engine's bug); decode split
# over the keys merges partial results without rescaling them to a common
# maximum; the matrix-core layer (kernels/arch/mma.h) loads fragments in a
# wrong layout, which its GEMM and MX GEMM tests (at both warp sizes) and the
# 16-bit tiled attention tests must catch (tests/meson.build); and one
# wrong element in a large GEMM or attention output (engine/src/faults.c),
# which the full references must see among tens of thousands.
# Usage: planted-bug.sh GOOD_RUNNER MUTANT_RUNNER [TEST...]
set -u
good=$1 mutant=$2
tests=("${@:3}")
[ ${#tests[@]} -gt 0 ] || tests=(softmax/sizes_f32 softmax/causal softmax/mixed_dtypes softmax/row_paths
       rope/large_positions rope/glm_2d rmsnorm/extreme_values
       swiglu/sizes_f32 swiglu/fused_f32
       attention/sizes_f32 attention/decode attention/gqa_ratios
       attention_tiled/head_dims_f32 attention_tiled/head_dims_bf16
       attention_tiled/special_values)

out=$("$good" --seed 7 "${tests[@]}" 2>&1); rc=$?
if [ $rc -ne 0 ]; then
  echo "FAIL: the correct kernel failed (exit $rc):"; echo "$out"; exit 1
fi

# A failed ck_assert leaves the test body by longjmp, so its host buffers
# are never freed: under LeakSanitizer that is expected here, not a bug.
out=$(ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
      "$mutant" --seed 7 "${tests[@]}" 2>&1); rc=$?
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
