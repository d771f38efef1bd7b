#!/usr/bin/env bash
# Configures (once) and builds kiln in ./build with every backend whose
# toolchain is present: host emulation always, hip with hipcc, cuda with nvcc.
# Extra arguments go to `meson setup` (e.g. -Dcuda=disabled).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  meson setup build "$@"
fi
ninja -C build
