#!/usr/bin/env bash
# kiln and CTest agree. Every spec file under ctest-specs/accept is one CTest
# 3.25 reads, every one under ctest-specs/refuse one it refuses: the real
# `ctest --resource-spec-file` confirms each (where cmake is installed), and
# `kiln run --resource-spec` must give the same verdict. Then a small CTest
# project runs kiln as a test with RESOURCE_GROUPS on a spec of three
# emulated GPUs of one slot each: kiln must use exactly the GPUs and slots
# CTest gave it (CTEST_RESOURCE_GROUP_*), no others and no more at once.
. "$(dirname "$0")/lib.sh"

specs=$KILN_SOURCE/tests/harness/ctest-specs
have_ctest=0
if command -v ctest >/dev/null && command -v cmake >/dev/null; then have_ctest=1
elif [ "${KILN_REQUIRE_CMAKE:-0}" = 1 ]; then fail "cmake/ctest not installed (KILN_REQUIRE_CMAKE=1)"
else echo "skip: the real-ctest parts (cmake is not installed; scripts/install-deps.sh installs it)"; fi

# ctest's verdict on a spec: 0 read, else refused (it exits 8, or aborts).
if [ $have_ctest = 1 ]; then
  mkdir -p "$T/empty-project"
  echo 'add_test(t "/bin/true")' >"$T/empty-project/CTestTestfile.cmake"
fi
ctest_reads() { (cd "$T/empty-project" && ctest --resource-spec-file "$1") >/dev/null 2>&1; }

n=0 agree=0
for f in "$specs"/accept/*.json "$specs"/refuse/*.json; do
  want=$(basename "$(dirname "$f")") name=$(basename "$f" .json)
  n=$((n + 1))
  if [ $have_ctest = 1 ]; then
    if ctest_reads "$f"; then got=accept; else got=refuse; fi
    [ "$got" = "$want" ] || fail "ctest $(ctest --version | head -1 | awk '{print $3}') ${got}s $name (the corpus says $want)"
  fi
  k list --backend host --resource-spec "$f" faults/pass
  case $rc in 0) got=accept ;; 2) got=refuse ;; *) got="exit $rc" ;; esac
  if [ "$got" = "$want" ]; then agree=$((agree + 1))
  else fail "kiln ${got}s $name, CTest ${want}s it: $(head -c 300 "$T/out.txt")"; fi
  # A refusal names the file (and where, when it can).
  [ "$want" = refuse ] && ! grep -q "$name.json" "$T/out.txt" && fail "kiln's refusal of $name does not name the file"
done
expect_eq "$agree" "$n" "kiln agrees with CTest on every spec file"

# The ids kiln takes from an accepted spec: device indexes name their
# device; other ids ("gpu_a", "32"), as CTest hands them to a test, name the
# lowest devices no index takes, in the spec's order: the tests run there.
for spec in named-id id-32; do
  KILN_EMU_DEVICES=2 k run --backend host --resource-spec "$specs/accept/$spec.json" -o "$T/$spec" faults/pass
  expect_rc 0 "$spec.json: the test runs, as under CTest"
  flat "$T/$spec/report.yaml"
  expect_eq "$(field tests.0.outcome)/$(field tests.0.device)" pass/0 "$spec.json: on device 0"
done
printf '{"version":{"major":1,"minor":0},"local":[{"gpus":[{"id":"gpu_a","slots":2},{"id":"1"},{"id":"gpu_b"}]}]}' >"$T/mixed.json"
KILN_EMU_DEVICES=3 k devices --backend host --resource-spec "$T/mixed.json"
expect_out "^resource spec .*mixed.json gives 3 gpus: 'gpu_a' -> device 0 \(2 slots\), '1' -> device 1 \(1 slot\), 'gpu_b' -> device 2 \(1 slot\)$" \
  "kiln devices says which device each id of the spec names"

[ $have_ctest = 1 ] || finish

# ---- kiln under CTest with RESOURCE_GROUPS ----
proj=$T/proj
mkdir -p "$proj"
cat >"$T/run-kiln.sh" <<SH
#!/usr/bin/env bash
env | grep '^CTEST_RESOURCE_GROUP' | sort >"$T/\$1.env"
exec "$KILN" run --backend host -j 4 --repeat 6 -o "$T/\$1" faults/gpu_sleeper
SH
chmod +x "$T/run-kiln.sh"
cat >"$proj/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.16)
project(kiln_under_ctest NONE)
enable_testing()
add_test(NAME one COMMAND "$T/run-kiln.sh" one)
set_tests_properties(one PROPERTIES RESOURCE_GROUPS "gpus:1")
add_test(NAME two COMMAND "$T/run-kiln.sh" two)
set_tests_properties(two PROPERTIES RESOURCE_GROUPS "2,gpus:1")
CM
printf '%s' '{"version":{"major":1,"minor":0},"local":[{"gpus":[{"id":"0","slots":1},{"id":"1","slots":1},{"id":"2","slots":1}]}]}' >"$T/spec.json"
(cd "$proj" && cmake -S . -B build >"$T/cmake.log" 2>&1) || { fail "cmake configure"; cat "$T/cmake.log"; finish; }
export KILN_EMU_DEVICES=3 KILN_FAULT_SLEEP_MS=150
(cd "$proj/build" && ctest -j 2 --resource-spec-file "$T/spec.json" --output-on-failure) >"$T/ctest.log" 2>&1
rc=$?
expect_rc 0 "ctest runs kiln under RESOURCE_GROUPS"
[ "$rc" -eq 0 ] || cat "$T/ctest.log"
for t in one two; do
  given=$(grep -E '^CTEST_RESOURCE_GROUP_[0-9]+_GPUS=' "$T/$t.env" | sed -E 's/.*id:([^,]*),slots:.*/\1/' | sort -u | paste -sd' ')
  used=$("$KH_PROBE" flat "$T/$t/report.yaml" | grep -E '^tests\.[0-9]+\.device=' | cut -d= -f2 | sort -u | paste -sd' ')
  expect_eq "$used" "$given" "$t: kiln used exactly the GPUs CTest gave it"
  flat "$T/$t/report.yaml"
  expect_eq "$(field run.allotment.source)" ctest "$t: the report says where the devices came from"
  expect_eq "$(field summary.pass)" 6 "$t: every run passed"
  # At most one test per GPU at once (one slot each).
  python3 - "$T/flat.txt" <<'PY' && ok "$t: one test per GPU at a time" || fail "$t: a GPU ran two tests at once"
import sys, collections, datetime
rows = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    k, _, v = line.rstrip("\n").partition("=")
    p = k.split(".")
    if p[0] == "tests" and len(p) == 3 and p[2] in ("device", "started", "ended"):
        rows[p[1]][p[2]] = v
t = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
by = collections.defaultdict(list)
for r in rows.values():
    by[r["device"]].append((t(r["started"]), t(r["ended"]) - 0.02))
for ivs in by.values():
    ivs.sort()
    for (a0, a1), (b0, b1) in zip(ivs, ivs[1:]):
        if b0 < a1: sys.exit(1)
PY
done
finish
