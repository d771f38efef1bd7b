#!/usr/bin/env bash
# The one entry for work on a lent GPU machine (docs/gpu-runs.md). Each
# subcommand is a file in scripts/gpu/ whose second line reads
# "# scripts/gpu.sh NAME: what it does" (--help lists those lines); the
# parts that run there share scripts/gpu/env.sh.
#   scripts/gpu.sh SUBCOMMAND [ARGS]
#   scripts/gpu.sh --help
set -u
parts=$(cd "$(dirname "$0")/gpu" && pwd)

usage() {
  echo "usage: scripts/gpu.sh SUBCOMMAND [ARGS]   (docs/gpu-runs.md)"
  echo "Here: stage (or pack); there, from the repository root with .device"
  echo "carried: build after pack, then any of the others."
  echo
  local f line
  for f in "$parts"/*.sh; do
    line=$(sed -n '2s/^# scripts\/gpu\.sh \([a-z-]*\): /\1 /p' "$f")
    [ -n "$line" ] && printf '  %-14s %s\n' "${line%% *}" "${line#* }"
  done
}

case ${1:-} in
  -h | --help | help) usage; exit 0 ;;
  '') usage >&2; exit 2 ;;
esac
sub=$1
shift
f=$parts/$sub.sh
# A subcommand is a file that names itself on its second line (env.sh,
# which the parts source, does not).
if [[ ! $sub =~ ^[a-z][a-z-]*$ ]] || [ ! -f "$f" ] ||
   [ "$(sed -n 2p "$f" | cut -d: -f1)" != "# scripts/gpu.sh $sub" ]; then
  echo "scripts/gpu.sh: unknown subcommand '$sub' (scripts/gpu.sh --help lists them)" >&2
  exit 2
fi
exec bash "$f" "$@"
