#!/usr/bin/env bash
# Runs kiln's own tests (engine, kernels in host emulation, harness) with
# meson test, after installing what they need and building if needed.
# Extra arguments go to `meson test`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
# Twice the cores: many harness tests spend most of their time waiting
# (timeouts, a Slurm cluster, workers that sleep), and at one per core
# a third of the CPU sat idle.
meson test -C build --print-errorlogs --num-processes $(( $(nproc) * 2 )) "$@"
