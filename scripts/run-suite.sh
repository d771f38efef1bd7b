#!/usr/bin/env bash
# kiln's main job on a fresh Debian 12 machine: install dependencies, build,
# and run the whole GPU suite with one kiln command -- on the GPU when a GPU
# runner finds a device, otherwise in host emulation. The report lands in
# reports/runs/<time>-<backend>/report.yaml. Extra arguments go to `kiln run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh --run
exec build/harness/parent/kiln run --backend auto "$@"
