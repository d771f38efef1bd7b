#!/usr/bin/env bash
# scripts/gpu.sh build: (there, after pack) build kiln and the cuda runner; stage them in .device/
# Needs .device/deps from `scripts/gpu.sh pack` here; DIR is the build
# folder, default build-gpu (docs/gpu-runs.md); `kiln` after it builds and
# stages kiln alone (a harness change, the cuda runner kept from before).
#   scripts/gpu.sh build [DIR] [kiln]
set -euo pipefail
cd "$(dirname "$0")/../.."
stage=.device
dir=${1:-build-gpu}
what=${2:-all}
[[ $what == all || $what == kiln ]] || { echo "scripts/gpu.sh build: '$what': kiln or nothing" >&2; exit 2; }
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
export PATH=$(dirname "$nvcc_bin"):$PATH
printf '[binaries]\npkg-config = '"'"'%s'"'"'\npkgconfig = '"'"'%s'"'"'\n' \
  "$PWD/$stage/deps/pkg-config" "$PWD/$stage/deps/pkg-config" >"$stage/deps/native.ini"
rm -rf "$dir"
meson setup "$dir" --native-file "$stage/deps/native.ini" -Dhost=disabled -Dhip=disabled \
  -Dcuda=enabled -Dstatic_deps=true -Dbuildtype=release -Dplanted_bugs=false \
  -Dnvidia_archs=sm_90,sm_90a
if [ "$what" = kiln ]; then
  ninja -C "$dir" harness/parent/kiln
  cp "$dir/harness/parent/kiln" "$stage/"
  exit 0
fi
ninja -C "$dir" harness/parent/kiln suites/kiln-runner-cuda
cp "$dir/suites/kiln-runner-cuda" "$dir/harness/parent/kiln" "$stage/"
ls -l "$stage/kiln-runner-cuda"
