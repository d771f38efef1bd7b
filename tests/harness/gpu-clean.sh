#!/usr/bin/env bash
# The parent never touches a GPU runtime: kiln links no engine and no GPU
# library, and after a run it holds no GPU device file or library (the
# report's parent_gpu_clean, from /proc/self/fd and /proc/self/maps).
. "$(dirname "$0")/lib.sh"

needed=$(readelf -d "$KILN" | awk '/NEEDED/ {print $5}' | tr -d '[]' | tr '\n' ' ')
echo "kiln needs: $needed"
if echo "$needed" | grep -Eiq 'cuda|amdhip|hsa|nvidia|rocm|kiln-engine|stdc\+\+'; then
  fail "kiln links a GPU or engine library: $needed"
else ok "kiln links no GPU runtime, engine or C++ library"; fi
if nm -D --undefined-only "$KILN" | grep -Eq ' (hip|cuda|cu|ke_)[A-Z_a-z]'; then
  fail "kiln references engine or GPU symbols"
else ok "no engine or GPU symbols"; fi
k run --backend host -o "$T/r" faults/pass
expect_rc 0 "a run"
flat "$T/r/report.yaml"
expect_eq "$(field run.parent_gpu_clean)" true "parent_gpu_clean after the run"
finish
