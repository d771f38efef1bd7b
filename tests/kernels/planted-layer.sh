#!/usr/bin/env bash
# A layer test with one planted bug on (planted.h) must fail, and fail
# because of it: the program must take the bug (it says so) and end in a
# failed check (exit 1, its count of failed checks said) or a fault that
# killed it (a signal), not a usage error (exit 2) or any other exit.
# With a bug planted the program stops at its first failed case
# (planted.h, kt_planted_stop): the run only has to show the bug caught.
# Usage: planted-layer.sh TEST_PROGRAM BUG_NAME
set -u
prog=$1 bug=$2
out=$("$prog" --planted "$bug" 2>&1); rc=$?
name=$(basename "$prog")
if ! grep -q "planted bug '$bug' on" <<<"$out"; then
  echo "FAIL: $name did not take the planted bug '$bug' (exit $rc):"; echo "$out" | tail -20
  exit 1
fi
# Caught: exit 1 after a failed check (the program's count of them), or
# a fault the emulation or a sanitizer ended the program for (a signal).
if [ "$rc" -eq 1 ] && ! grep -Eq "check\(s\) failed|cases failed" <<<"$out"; then
  echo "FAIL: $name with the planted bug '$bug' exited 1 without a failed check:"
  echo "$out" | tail -20
  exit 1
fi
if [ "$rc" -ne 1 ] && [ "$rc" -lt 128 ]; then
  echo "FAIL: $name with the planted bug '$bug' ended with exit $rc, not a caught bug:"
  echo "$out" | tail -20
  exit 1
fi
echo "ok: $name caught the planted bug '$bug' (exit $rc); its last lines:"
echo "$out" | tail -5
