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
#   scripts/gpu-run.sh pack             (here) put Check's and libyaml's
#                                       static libraries and headers, and a
#                                       small pkg-config that names them, in
#                                       .device/deps/, so that the GPU machine
#                                       can build kiln itself
#   scripts/gpu-run.sh build [DIR]      (on the GPU machine, with .device
#                                       carried) build the cuda backend from
#                                       this tree with every core there, and
#                                       stage it into .device/ (DIR: the build
#                                       folder, default build-gpu)
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
  # The GEMM tile sweep (docs/performance.md, "Measuring tools outside the
  # engine"), run by hand.
  "$nvcc_bin" -O3 -std=c++17 -arch=sm_90 -DKILN_BACKEND_CUDA -Ikernels \
    -Iengine/include -Iengine/src scripts/gemm-tune.cu -o "$stage/gemm-tune"
  # The Hopper GEMM's sweep and accuracy dump (docs/performance.md), by hand.
  "$nvcc_bin" -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
    -DKILN_BACKEND_CUDA -DKD_SM90A -Ikernels -Iengine/include -Iengine/src \
    scripts/gemm-hopper.cu -o "$stage/gemm-hopper"
  # The fused-attention tuning sweep (docs/performance.md), run by gpu-perf.sh.
  "$nvcc_bin" -O3 -std=c++17 -arch=sm_90 -DKILN_BACKEND_CUDA -Ikernels \
    -Iengine/include -Iengine/src dev/attn-tune.cu -o "$stage/attn-tune"
  git rev-parse HEAD > "$stage/REVISION" 2>/dev/null || true
  du -sh "$stage"
  ;;
pack)
  # Only the static archives, so that the link there cannot pick a shared
  # library the GPU machine lacks.
  deps=$stage/deps
  rm -rf "$deps"; mkdir -p "$deps/include" "$deps/lib"
  cp /usr/include/check.h /usr/include/check_stdint.h /usr/include/yaml.h "$deps/include/"
  lib=/usr/lib/x86_64-linux-gnu
  cp "$lib/libcheck_pic.a" "$deps/lib/libcheck.a"
  cp "$lib/libsubunit.a" "$lib/libyaml.a" "$deps/lib/"
  # A pkg-config for the three packages meson asks for (the GPU machine may
  # have none): --modversion, --cflags, --libs, with or without --static.
  cat >"$deps/pkg-config" <<'PKG'
#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
what= pkg=
for a in "$@"; do
  case $a in
    --modversion|--cflags|--libs) what=$a ;;
    --version) echo 0.29.2; exit 0 ;;
    -*) ;;
    *) pkg=$a ;;
  esac
done
case $pkg in
  check) ver=0.15.2 libs="-L$here/lib -lcheck -lsubunit -lrt -lm -pthread" cflags="-I$here/include -pthread" ;;
  libsubunit) ver=1.4.0 libs="-L$here/lib -lsubunit" cflags="-I$here/include" ;;
  yaml-0.1) ver=0.2.5 libs="-L$here/lib -lyaml" cflags="-I$here/include" ;;
  *) exit 1 ;;
esac
case $what in
  --modversion) echo "$ver" ;;
  --cflags) echo "$cflags" ;;
  --libs) echo "$libs" ;;
  *) exit 0 ;;
esac
PKG
  chmod +x "$deps/pkg-config"
  git rev-parse HEAD > "$stage/REVISION" 2>/dev/null || true
  du -sh "$deps"
  ;;
build)
  dir=${2:-build-gpu}
  nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  export PATH=$(dirname "$nvcc_bin"):$PATH
  printf '[binaries]\npkg-config = '"'"'%s'"'"'\npkgconfig = '"'"'%s'"'"'\n' \
    "$PWD/$stage/deps/pkg-config" "$PWD/$stage/deps/pkg-config" >"$stage/deps/native.ini"
  rm -rf "$dir"
  meson setup "$dir" --native-file "$stage/deps/native.ini" -Dhost=disabled -Dhip=disabled \
    -Dcuda=enabled -Dstatic_deps=true -Dbuildtype=release -Dplanted_bugs=false \
    -Dnvidia_archs=sm_90,sm_90a
  ninja -C "$dir" harness/parent/kiln suites/kiln-runner-cuda
  cp "$dir/suites/kiln-runner-cuda" "$dir/harness/parent/kiln" "$stage/"
  ls -l "$stage/kiln-runner-cuda"
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
