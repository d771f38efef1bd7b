#!/usr/bin/env bash
# Installs what kiln needs on Debian 12, from Debian's archive. Safe to run
# again: it installs only what is missing.
#   (always)   building and testing with the host emulation: meson, ninja,
#              Check, libyaml, Python with PyYAML (tests/harness reads the
#              reports back), valgrind, GoogleTest, pytest and xmllint, whose
#              tests kiln runs in tests/harness;
#   --hip      the ROCm 5.2 HIP toolchain and runtime, for the AMD backend
#              (taken by itself where an AMD GPU is visible: /dev/kfd);
#   --fuzz     clang and its runtime library, for the libFuzzer targets;
#   --browser  Chromium, for the HTML report's test (tests/harness/html.sh);
#   --slurm    Slurm's controller, node daemon and client commands, for the
#              test against a real cluster (tests/harness/slurm.sh starts
#              its own, as root).
# CI passes every flag; a laptop needs none.
set -euo pipefail
pkgs=(build-essential pkg-config meson ninja-build check libsubunit-dev
      libyaml-dev python3 python3-yaml valgrind libxml2-utils libgtest-dev
      python3-pytest python3-pytest-xdist)
hip_pkgs=(hipcc libamdhip64-dev libhiprand-dev librocrand-dev rocm-device-libs)
[ -e /dev/kfd ] && pkgs+=("${hip_pkgs[@]}")
for arg in "$@"; do
  case $arg in
    --hip) pkgs+=("${hip_pkgs[@]}") ;;
    --fuzz) pkgs+=(clang-14 libclang-rt-14-dev) ;;
    --browser) pkgs+=(chromium) ;;
    --slurm) pkgs+=(slurmctld slurmd slurm-client) ;;
    *) echo "install-deps: unknown argument '$arg' (--hip, --fuzz, --browser, --slurm)" >&2
       exit 2 ;;
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
