#!/usr/bin/env bash
# A layer test with one planted bug on (planted.h) must fail, and fail
# because of it: the program must take the bug (it says so) and end in a
# failed check or a reported fault, not a usage error (exit 2).
# Usage: planted-layer.sh TEST_PROGRAM BUG_NAME
set -u
prog=$1 bug=$2
out=$("$prog" --planted "$bug" 2>&1); rc=$?
name=$(basename "$prog")
if ! grep -q "planted bug '$bug' on" <<<"$out"; then
  echo "FAIL: $name did not take the planted bug '$bug' (exit $rc):"; echo "$out" | tail -20
  exit 1
fi
if [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ]; then
  echo "FAIL: $name with the planted bug '$bug' ended with exit $rc, not a caught bug:"
  echo "$out" | tail -20
  exit 1
fi
echo "ok: $name caught the planted bug '$bug' (exit $rc); its last lines:"
echo "$out" | tail -5
