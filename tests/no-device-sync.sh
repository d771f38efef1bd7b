#!/usr/bin/env bash
# Synchronisation in the engine is stream-scoped: no device-wide synchronise
# may appear in the engine, the kernels or the CUDA mapping.
set -u
root=${1:-$(dirname "$0")/..}
hits=$(grep -rnE '(hip|cuda)DeviceSynchronize|(hip|cuda)ThreadSynchronize|(hip|cuda)DeviceReset' \
  "$root/engine" "$root/kernels" --include='*.c' --include='*.h' --include='*.hip' --include='*.cc' \
  | grep -v '^.*://' || true)
if [ -n "$hits" ]; then
  echo "device-wide synchronisation found:"; echo "$hits"; exit 1
fi
# The guard must be able to fail: it finds a planted call in a scratch copy.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/engine" "$tmp/kernels"
echo 'void f(void) { hipDeviceSynchronize(); }' > "$tmp/engine/x.c"
if ! grep -rqE '(hip|cuda)DeviceSynchronize' "$tmp/engine"; then
  echo "guard cannot detect a planted call"; exit 1
fi
echo "no device-wide synchronisation in engine/ or kernels/"
