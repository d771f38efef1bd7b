#!/usr/bin/env bash
# scripts/gpu.sh isolation: [PART...] the price of isolation: kiln suite, Liger-Kernel tests
# The price of isolation on a lent GPU host, in one call or a few: kiln's own
# cuda suite per process and in workers, and a third-party pytest suite
# (Liger-Kernel's op tests, docs/pytest.md) three ways beside `pytest
# -n 8` (scripts/bench-pytest.sh). Parts, in the order given (default:
# build suite liger-cold):
#
#   build        build kiln and the cuda runner there (scripts/gpu.sh
#                build; .device/deps from `scripts/gpu.sh pack` here)
#   unpack       instead of building: restore the binaries an earlier call's
#                `keep` sent back (carry them as .device/built.tgz)
#   kiln         after unpack: build kiln alone from this tree (a harness
#                change; the unpacked cuda runner stays)
#   suite        the whole default cuda suite, --isolation process then worker
#   liger-cold   bench-pytest over $KILN_LIGER_FILES, empty compiler caches
#   liger-warm   the same with warm caches (primed by an untimed pytest -n 8)
#   keep         tar the built binaries into $OUT/built.tgz, to carry next time
#
# Run there from the repository root with .device and .thirdparty carried:
#   bash scripts/gpu.sh isolation [PART...]
# $OUT gets summary.txt (every part's figures) and isolation.tgz (the logs,
# the reports, bench-pytest's folders without their caches).
set -u
. "$(dirname "$0")/env.sh"
build=$PWD/build-gpu
kiln=$build/harness/parent/kiln   # the kiln part's, where it ran
liger=$PWD/.thirdparty/Liger-Kernel
files=${KILN_LIGER_FILES:-test/transformers/test_rms_norm.py test/transformers/test_swiglu.py}
s=$out/summary.txt
work=$out/isolation
mkdir -p "$work"
say() { echo "$*" | tee -a "$s"; }
took() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f s", b - a}'; }

[ $# -gt 0 ] || set -- build suite liger-cold
{ nvidia-smi -L; echo "host cores: $(nproc)"; python3 -c "import torch, triton, transformers; print(\"torch\", torch.__version__, \"triton\", triton.__version__, \"transformers\", transformers.__version__)"; } >>"$s" 2>&1
for part in "$@"; do
  t=$(date +%s.%N)
  case $part in
  build)
    bash scripts/gpu.sh build >"$work/build.log" 2>&1 || { tail -30 "$work/build.log" >>"$s"; say "build failed"; exit 1; }
    say "== build: $(took "$t")" ;;
  unpack)
    tar -xzf "$stage/built.tgz" && cp build-gpu/harness/parent/kiln build-gpu/suites/kiln-runner-cuda "$stage/" && say "== unpacked $(tar -tzf "$stage/built.tgz" | tr '\n' ' ')" ;;
  kiln)
    # Run from its build tree, where it finds kiln_pytest in this tree.
    bash scripts/gpu.sh build build-kiln kiln >"$work/kiln.log" 2>&1 &&
      kiln=$PWD/build-kiln/harness/parent/kiln ||
      { tail -30 "$work/kiln.log" >>"$s"; say "kiln build failed"; exit 1; }
    say "== kiln built alone: $(took "$t")" ;;
  suite)
    for iso in process worker; do
      OUT=$work/suite-$iso bash scripts/gpu.sh suite --isolation "$iso" >/dev/null 2>&1
      say "== cuda suite, --isolation $iso"
      sed -n '/^kiln run:/,/^slowest/p' "$work/suite-$iso/summary.txt" | grep -v '^slowest' >>"$s"
      sed -n '/^slowest/,/^report:/p' "$work/suite-$iso/summary.txt" | head -6 >>"$s"
    done ;;
  liger-cold|liger-warm)
    [ -d "$liger" ] || { say "no $liger (carry .thirdparty)"; continue; }
    say "== Liger-Kernel ($files), ${part#liger-} caches"
    # shellcheck disable=SC2086
    PYTHONPATH=$liger/src KILN=$kiln KILN_RUNNER_DIR=$build/suites \
      timeout "${KILN_LIGER_TIMEOUT:-540}" scripts/bench-pytest.sh -C "$liger" -o "$work/$part" \
      --cache "${part#liger-}" ${KILN_LIGER_WAYS:+--ways $KILN_LIGER_WAYS} $files >"$work/$part.out" 2>&1
    say "(exit $?, $(took "$t"))"
    cat "$work/$part.out" | grep -v '^bench-pytest:' >>"$s" ;;
  keep)
    tar -czf "$out/built.tgz" build-gpu/harness/parent/kiln build-gpu/suites/kiln-runner-cuda &&
      say "== kept $(du -h "$out/built.tgz" | cut -f1) in built.tgz" ;;
  *) say "unknown part $part"; exit 2 ;;
  esac
done
tar -czf "$out/isolation.tgz" -C "$out" --exclude='*.cache' --exclude='*.listing' isolation 2>/dev/null
cat "$s"
