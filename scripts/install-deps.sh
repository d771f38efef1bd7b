#!/usr/bin/env bash
# Installs what kiln needs to build and test on Debian 12, from Debian's
# archive: meson, ninja, Check, libyaml, and the ROCm 5.2 HIP toolchain for
# compile-and-link checks of the AMD backend; clang and its runtime library
# for the libFuzzer targets (tests/fuzz); valgrind; PyYAML, which reads
# kiln's reports back in tests/harness/yaml-strings.sh; GoogleTest and
# Python, whose tests kiln runs in tests/harness/gtest.sh and manifest.sh.
# Safe to run again.
# --browser also installs Chromium, which only the HTML report's test needs
# (tests/harness/html.sh skips without it); --slurm installs Slurm's
# controller, node daemon and client commands, which only the test against
# a real cluster needs (tests/harness/slurm.sh starts its own, as root, and
# skips without them). CI passes both; a laptop need not.
set -euo pipefail
pkgs=(build-essential pkg-config meson ninja-build check libsubunit-dev
      libyaml-dev hipcc libamdhip64-dev libhiprand-dev librocrand-dev
      rocm-device-libs valgrind libxml2-utils clang-14 libclang-rt-14-dev
      python3-yaml python3 libgtest-dev python3-pytest python3-pytest-xdist)
for arg in "$@"; do
  case $arg in
    --browser) pkgs+=(chromium) ;;
    --slurm) pkgs+=(slurmctld slurmd slurm-client) ;;
    *) echo "install-deps: unknown argument '$arg' (--browser, --slurm)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
