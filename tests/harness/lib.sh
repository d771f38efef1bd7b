# Shared helpers for kiln's harness tests (sourced). Each test gets a private
# folder and a private device-token key, so meson may run them in parallel.
# Environment from meson: KILN (the kiln binary), KH_PROBE, KILN_RUNNER_DIR,
# KILN_SOURCE (the source tree).
set -u

T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-harness-test.XXXXXX")
KEY=$T/tokens
export KILN_TOKEN_KEY=$KEY
export KILN_FAULT_STATE_DIR=$T/state
export NO_COLOR=1
mkdir -p "$KILN_FAULT_STATE_DIR"
cd "$T"

cleanup() {
  # This test's private token set goes with it.
  [ -e "$KEY" ] && "$KH_PROBE" semrm "$KEY" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
finish() {
  if [ "$fails" -ne 0 ]; then echo "$fails check(s) failed"; exit 1; fi
  echo "all checks passed"
}

# kiln with its output kept in $T/out.txt; sets $rc.
k() {
  "$KILN" "$@" >"$T/out.txt" 2>&1
  rc=$?
  return 0
}

expect_rc() {  # expect_rc WANT WHAT
  if [ "$rc" -eq "$1" ]; then ok "$2: exit $rc"
  else fail "$2: exit $rc, expected $1"; sed 's/^/    | /' "$T/out.txt" | tail -30; fi
}

expect_out() {  # expect_out REGEX WHAT (in kiln's output)
  if grep -Eq -- "$1" "$T/out.txt"; then ok "$2"
  else fail "$2: output lacks /$1/"; sed 's/^/    | /' "$T/out.txt" | tail -30; fi
}

# flat REPORT: the report as path=value lines in $T/flat.txt.
flat() { "$KH_PROBE" flat "$1" >"$T/flat.txt" || fail "report $1 does not parse"; }

# field PATH: a value from the flattened report.
field() { grep -m1 "^$1=" "$T/flat.txt" | cut -d= -f2-; }

# test_index ID [N]: index of the N-th (from 0) record of a test id.
test_index() {
  grep -E "^tests\.[0-9]+\.id=$1\$" "$T/flat.txt" | sed -n "$((${2:-0} + 1))p" |
    sed -E 's/^tests\.([0-9]+)\..*/\1/'
}

# tfield ID KEY [N]: a field of a test's record.
tfield() {
  local i
  i=$(test_index "$1" "${3:-0}")
  [ -n "$i" ] && field "tests.$i.$2"
}

# finals ID REPORT: the final outcomes of a test's runs, space-separated.
finals() { awk -v id="$1" '$1 == "-" && $2 == "id:" { on = ($3 == id) } on && $1 == "outcome:" { o = $2 }
  on && $1 == "final:" && $2 == "true" { printf "%s%s", n++ ? " " : "", o }' "$2"; }
# note ID KEY [N]: a note's value in a test's N-th record (after flat).
note() {
  local i k
  i=$(test_index "$1" "${3:-0}")
  k=$(grep -E "^tests\.$i\.notes\.[0-9]+\.key=$2\$" "$T/flat.txt" | head -1 | sed -E 's/.*notes\.([0-9]+)\..*/\1/')
  [ -n "$k" ] && field "tests.$i.notes.$k.value"
}
# pids REPORT: how many processes ran the report's runs.
pids() { grep -E '^  pid: [0-9]+$' "$1" | sort -u | wc -l; }

expect_eq() {  # expect_eq GOT WANT WHAT
  if [ "$1" = "$2" ]; then ok "$3 = $2"; else fail "$3: got '$1', expected '$2'"; fi
}

expect_match() {  # expect_match GOT REGEX WHAT
  if echo "$1" | grep -Eq -- "$2"; then ok "$3"; else fail "$3: '$1' !~ /$2/"; fi
}

# The device-token semaphore of this test's key is back at full value.
expect_tokens_full() {
  local v free cap
  v=$("$KH_PROBE" semval "$KEY" 0) || { fail "no token set at $KEY"; return; }
  free=${v% *} cap=${v#* }
  if [ "$free" = "$cap" ] && [ "$cap" -gt 0 ]; then ok "tokens back at full ($free/$cap) $1"
  else fail "tokens $free free of $cap $1"; fi
}

# No process started for this test (runner or grandchild, whatever it
# exec'd since) is left: any live process with KILN_TEST (or KILN_WARM: a
# warm child, whose test is not in its exec-time environment) and this
# test's token key in its environment (zombies have none).
expect_no_runners() {
  sleep 0.3
  local left="" f
  for f in $(grep -lsEz '^KILN_(TEST|WARM)=' /proc/[0-9]*/environ); do
    grep -qsz "^KILN_TOKEN_KEY=$KEY\$" "$f" && left="$left $(basename "$(dirname "$f")")"
  done
  if [ -n "$left" ]; then fail "processes left $1:$left"; ps -o pid,args -p ${left// /,} 2>/dev/null
  else ok "no runner process left $1"; fi
}

# A test that reads reports with PyYAML skips (77) without it, unless
# KILN_REQUIRE_PYYAML=1 (CI).
need_pyyaml() {
  python3 -c 'import yaml' 2>/dev/null && return 0
  echo "PyYAML not installed (python3-yaml)"
  [ "${KILN_REQUIRE_PYYAML:-0}" = 1 ] && exit 1
  exit 77
}

# kh_python_for_engine: under AddressSanitizer the engine's shared library
# needs the sanitizer runtimes loaded first in the interpreter too (Python
# is not instrumented), and the interpreter's own allocations are no leaks
# of kiln's: point KILN_PYTHON at a wrapper that preloads them. Sets
# KH_ENGINE_SANITIZED=1 when it did.
kh_python_for_engine() {
  local san
  san=$(ldd "${KILN_ENGINE_LIB:-/nonexistent}" 2>/dev/null | awk '/libasan|libubsan/ {print $3}' | tr '\n' ' ')
  KH_ENGINE_SANITIZED=0
  [ -n "$san" ] || return 0
  printf '#!/bin/sh\nLD_PRELOAD="%s" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" exec %s "$@"\n' \
    "$san" "${KILN_PYTHON:-python3}" >"$T/python"
  chmod +x "$T/python"
  export KILN_PYTHON=$T/python
  KH_ENGINE_SANITIZED=1
}

# need_pytest: KILN_PYTHON set to an interpreter with pytest, else a skip
# (exit 77; a failure under KILN_REQUIRE_PYTEST=1).
need_pytest() {
  local p
  for p in "${KILN_PYTHON:-python3}" python3 /usr/bin/python3; do
    if "$p" -c 'import pytest' 2>/dev/null; then export KILN_PYTHON=$p; break; fi
  done
  if ! "${KILN_PYTHON:-python3}" -c 'import pytest' 2>/dev/null; then
    echo "pytest is not installed (python3-pytest)"
    [ "${KILN_REQUIRE_PYTEST:-0}" = 1 ] && exit 1
    exit 77
  fi
}

# For the pytest tests: an interpreter with pytest in KILN_PYTHON (skip, 77,
# without one, unless KILN_REQUIRE_PYTEST=1 says it must be there) that
# loads this build's engine, and a clean copy of the sample suite in $S.
need_pytest_sample() {
  need_pytest
  kh_python_for_engine
  S=$T/suite
  cp -r "$KILN_SOURCE/examples/pytest-suite" "$S"
  rm -rf "$S"/.pytest_cache "$S"/__pycache__ "$S"/tests/__pycache__
}
