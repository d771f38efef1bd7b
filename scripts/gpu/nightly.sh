#!/usr/bin/env bash
# scripts/gpu.sh nightly: three nights: clean, planted regressions, clean (summary, HTML)
# The nightly flow on a lent NVIDIA GPU, in one call (docs/gpu-runs.md):
# night 1 clean, night 2 with the drift suite's planted regressions, night 3
# clean again (its base must be night 1, since night 2 is not good). Each
# night runs scripts/nightly.sh with the staged kiln on the cuda backend.
# Needs .device/ from `scripts/gpu.sh stage`. Writes into $OUT (flat):
# summary.txt, night{1,2,3}.html, night2-diff.txt, night2-junit.xml.
set -u
. "$(dirname "$0")/env.sh"
stage=$(cd "$stage" && pwd)
export KILN=$stage/kiln KILN_RUNNER_DIR=$stage KILN_NIGHTLY_ROOT=/tmp/kiln-nightly
export KILN_DIFF_ARGS=${KILN_DIFF_ARGS:-"--time-rel 0.2 --kernel-abs-ms 0.05"}
rm -rf "$KILN_NIGHTLY_ROOT"
args=(--backend cuda --jobs 4 --slots 4 --repeat "${KILN_GPU_REPEAT:-3}"
      engine softmax drift/new_failure drift/slow_kernel drift/error_growth)
summary=$out/summary.txt
: >"$summary"
night() {  # night N DATE [ENV=VALUE...]
  local n=$1 date=$2; shift 2
  env "$@" KILN_NIGHTLY_DATE="$date" scripts/nightly.sh -- "${args[@]}" >"$out/night$n.log" 2>&1
  echo "night $n ($date, $*): exit $?, status $(cat "$KILN_NIGHTLY_ROOT/$date/status")" | tee -a "$summary"
  sed -n '/^kiln report diff/,/^kiln: wrote/p' "$out/night$n.log" | tee -a "$summary"
  cp "$KILN_NIGHTLY_ROOT/$date/report.html" "$out/night$n.html"
}
nvidia-smi -L | tee -a "$summary"
night 1 2026-01-01
night 2 2026-01-02 KILN_DRIFT_FAIL=1 KILN_DRIFT_SLOW=2 KILN_DRIFT_ERROR=10
night 3 2026-01-03
cp "$KILN_NIGHTLY_ROOT/2026-01-02/diff.txt" "$out/night2-diff.txt"
cp "$KILN_NIGHTLY_ROOT/2026-01-02/junit.xml" "$out/night2-junit.xml"
rm -f "$out"/night*.log
