#!/usr/bin/env bash
# scripts/gpu.sh stage: (here) build cuda, deps static; stage it and the dev/ tools in .device/
# Configures build-gpu/ with only the cuda backend (MESON_SETUP_ARGS added
# to the setup), builds it, copies kiln and kiln-runner-cuda into .device/
# and builds the measuring tools of dev/ that the GPU scripts run there
# (docs/gpu-runs.md).
#   scripts/gpu.sh stage [MESON_SETUP_ARGS]
set -euo pipefail
cd "$(dirname "$0")/../.."
stage=.device
rm -rf build-gpu "$stage"
meson setup build-gpu -Dhost=disabled -Dhip=disabled -Dcuda=enabled \
  -Dstatic_deps=true -Dbuildtype=release -Dnvidia_archs=sm_90,sm_90a "$@"
ninja -C build-gpu
mkdir -p "$stage"
cp build-gpu/suites/kiln-runner-cuda "$stage/"
if [ -x build-gpu/harness/parent/kiln ]; then cp build-gpu/harness/parent/kiln "$stage/"; fi
# The memory-pattern roofs (docs/measuring.md), run by `scripts/gpu.sh perf`.
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
"$nvcc_bin" -O3 -std=c++17 -arch=sm_90 dev/kernel-limits.cu \
  -o "$stage/kernel-limits"
# The GEMM tile sweep (docs/measuring.md, "Measuring tools outside the
# engine"), run by hand.
"$nvcc_bin" -O3 -std=c++17 -arch=sm_90 -DKILN_BACKEND_CUDA -Ikernels \
  -Iengine/include dev/gemm-tune.cu -o "$stage/gemm-tune"
# The Hopper GEMM's sweep and accuracy dump (docs/measuring.md), by hand.
"$nvcc_bin" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
  -DKILN_BACKEND_CUDA -DKD_SM90A -Ikernels -Iengine/include \
  dev/gemm-hopper.cu -o "$stage/gemm-hopper"
# The fused-attention tuning sweep (docs/measuring.md), run by `scripts/gpu.sh perf`.
"$nvcc_bin" -O3 -std=c++17 -arch=sm_90 -DKILN_BACKEND_CUDA -Ikernels \
  -Iengine/include dev/attn-tune.cu -o "$stage/attn-tune"
git rev-parse HEAD > "$stage/REVISION" 2>/dev/null || true
du -sh "$stage"
