#!/usr/bin/env bash
# scripts/gpu.sh pack: (here) Check's and libyaml's static archives, a pkg-config: .device/deps/
# With them the GPU machine builds kiln itself (`scripts/gpu.sh build`
# there), which it does far faster than this machine (docs/gpu-runs.md).
#   scripts/gpu.sh pack
set -euo pipefail
cd "$(dirname "$0")/../.."
stage=.device
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
