#!/usr/bin/env bash
# Runs kiln's suites on a lent NVIDIA GPU machine, which has nvcc but no
# Debian packages (no libcheck, no libyaml). Two halves:
#
#   scripts/gpu-run.sh stage            (here) build the cuda backend with
#                                       Check and libyaml linked statically,
#                                       copy kiln + runner into .device/
#   scripts/gpu-run.sh remote [ARGS]    (on the GPU machine, repo root, with
#                                       .device carried) run the suites, write
#                                       logs and reports under $OUT
#
# ARGS go to `kiln run` (default: the whole suite). See docs/gpu-runs.md.
set -euo pipefail
cd "$(dirname "$0")/.."
stage=.device

case "${1:-}" in
stage)
  rm -rf build-gpu "$stage"
  meson setup build-gpu -Dhost=disabled -Dhip=disabled -Dcuda=enabled \
    -Dstatic_deps=true -Dbuildtype=release -Dnvidia_archs=sm_90,sm_90a "${@:2}"
  ninja -C build-gpu
  mkdir -p "$stage"
  cp build-gpu/suites/kiln-runner-cuda "$stage/"
  if [ -x build-gpu/harness/parent/kiln ]; then cp build-gpu/harness/parent/kiln "$stage/"; fi
  # The memory-pattern roofs (docs/performance.md), run by gpu-perf.sh.
  nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  "$nvcc_bin" -O3 -std=c++17 -arch=sm_90 scripts/kernel-limits.cu \
    -o "$stage/kernel-limits"
  # The GEMM tile sweep (docs/performance.md, GEMM notes), run by hand.
  "$nvcc_bin" -O3 -std=c++17 -arch=sm_90 -DKILN_BACKEND_CUDA -Ikernels \
    -Iengine/include -Iengine/src scripts/gemm-tune.cu -o "$stage/gemm-tune"
  # The Hopper GEMM's sweep and accuracy dump (docs/performance.md), by hand.
  "$nvcc_bin" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
    -DKILN_BACKEND_CUDA -DKD_SM90A -Ikernels -Iengine/include -Iengine/src \
    scripts/gemm-hopper.cu -o "$stage/gemm-hopper"
  # The fused-attention tuning sweep (docs/performance.md), run by gpu-perf.sh.
  "$nvcc_bin" -O3 -std=c++17 -arch=sm_90 -DKILN_BACKEND_CUDA -Ikernels \
    -Iengine/include -Iengine/src scripts/attn-tune.cu -o "$stage/attn-tune"
  git rev-parse HEAD > "$stage/REVISION" 2>/dev/null || true
  du -sh "$stage"
  ;;
remote)
  shift
  . scripts/gpu-env.sh
  log="$out/gpu-run.log"
  {
    echo "== machine"; nvidia-smi -L || true; nproc
    echo "== runner devices"; "$stage/kiln-runner-cuda" --devices
    if [ -x "$stage/kiln" ]; then
      echo "== kiln run $*"
      "$stage/kiln" run --backend cuda --runner-dir "$stage" --out "$out/run" "$@" || echo "kiln run exit $?"
    else
      echo "== runner (standalone, in-process) $*"
      "$stage/kiln-runner-cuda" "$@" || echo "runner exit $?"
    fi
  } 2>&1 | tee "$log"
  ;;
*)
  sed -n '2,14p' "$0"; exit 2 ;;
esac
