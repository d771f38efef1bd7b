#!/usr/bin/env bash
# Configures (once) and builds kiln in ./build with the backends this
# machine can run: the host emulation always, cuda where an NVIDIA GPU is
# visible (and nvcc is found), hip where an AMD one is (and hipcc is).
# KILN_ALL_BACKENDS=1 builds every backend whose toolchain is present, to
# check that it compiles and links (CI does that in a folder of its own).
#   scripts/build.sh [MESON_SETUP_ARGS]         everything, tests included
#   scripts/build.sh --run [MESON_SETUP_ARGS]   only what `kiln run` runs:
#                                               kiln and the runners
# MESON_SETUP_ARGS win over the choices above (e.g. -Dcuda=enabled).
set -euo pipefail
cd "$(dirname "$0")/.."
only_run=0
if [ "${1:-}" = --run ]; then only_run=1; shift; fi
if [ ! -f build/build.ninja ]; then
  pick=() runs=host
  if [ "${KILN_ALL_BACKENDS:-0}" != 1 ]; then
    if ls /dev/nvidia[0-9]* >/dev/null 2>&1; then runs+=" cuda"
    else pick+=(-Dcuda=disabled); fi
    if [ -e /dev/kfd ]; then runs+=" hip"
    else pick+=(-Dhip=disabled); fi
    echo "build: the backends this machine runs: $runs (KILN_ALL_BACKENDS=1: every toolchain found)"
  fi
  meson setup build "${pick[@]}" "$@"
fi
if [ $only_run = 1 ]; then
  # meson's default target includes every test program; the main job needs
  # kiln and one runner per backend.
  mapfile -t runners < <(ninja -C build -t targets all |
    sed -n 's/^\(suites\/kiln-runner-\(host\|cuda\|hip\)\): .*/\1/p')
  ninja -C build harness/parent/kiln "${runners[@]}"
else
  ninja -C build
fi
