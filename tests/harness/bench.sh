#!/bin/bash
# kiln bench on the host backend with small counts: every section of
# bench.yaml is there with positive numbers, the table and the summary are
# printed, bad options are refused with exit 2; and the bench suite is held
# back from a default `kiln run` but runs when named.
. "$(dirname "$0")/lib.sh"

# ---- The bench suite is held back unless named ------------------------------
k list
expect_rc 0 "kiln list"
if grep -q '^bench/' "$T/out.txt"; then fail "default selection takes bench tests"
else ok "default selection leaves the bench suite out"; fi
for sel in bench @bench bench/noop 'bench/*'; do
  k list "$sel"
  expect_rc 0 "kiln list $sel"
  expect_out '^bench/noop ' "kiln list $sel names bench/noop"
done
k list 'bench/t*'
expect_out '^bench/trivial ' "a glob under bench/ takes bench/trivial"
if grep -q '^bench/noop' "$T/out.txt"; then fail "glob bench/t* took bench/noop"
else ok "glob bench/t* leaves bench/noop"; fi
# Another suite's glob or another tag does not sweep it up.
k list '*/noop'
if [ "$rc" -eq 0 ] && grep -q '^bench/noop' "$T/out.txt"; then
  fail "'*/noop' swept up bench/noop"
else ok "'*/noop' does not sweep up bench/noop (rc $rc)"; fi

k run --backend host --jobs 2 --out "$T/named" -- bench
expect_rc 0 "kiln run bench"
flat "$T/named/report.yaml"
expect_eq "$(tfield bench/trivial outcome)" pass "bench/trivial outcome"
expect_eq "$(tfield bench/noop outcome)" pass "bench/noop outcome"
expect_match "$(grep -c '^tests\.[0-9]*\.checks\.0\.name=swiglu_64_f32' "$T/flat.txt")" '^1$' \
  "bench/trivial made one check against the reference"

# ---- Usage errors ------------------------------------------------------------
k bench --tests 0
expect_rc 2 "--tests 0"
expect_out "--tests: '0'" "--tests 0 names the bad value"
k bench --concurrency 1,x
expect_rc 2 "--concurrency 1,x"
expect_out "'x' in '1,x'" "--concurrency names the bad entry"
k bench --skip ceiling,gpu
expect_rc 2 "--skip gpu"
expect_out "'gpu' is not a section" "--skip names the bad section"
k bench --frobnicate
expect_rc 2 "unknown bench option"
k bench --help
expect_rc 0 "kiln bench --help"
expect_out "--concurrency LIST" "help lists --concurrency"
expect_out "Exit status" "help gives exit statuses"

# ---- A small bench ---------------------------------------------------------------
k bench --backend host --tests 6 --host-tests 20 --concurrency 1,2 --out "$T/b"
expect_rc 0 "kiln bench --backend host"
for re in '^what +conc +tests +wall_s +tests/s +cpu_ms/test +ratio' \
          '^ceiling +1 +6 ' '^ceiling +2 +6 ' '^kiln +1 +6 ' '^kiln +2 +6 ' \
          '^none +1 +6 ' '^host +2 +20 ' '^ceiling: +[0-9.]+ tests/s' \
          '^kiln best: .*(PASS|MISS)' '^isolation none: +[0-9.]+ tests/s' \
          '^host CPU: +[0-9.]+ ms per test +(PASS|MISS)' \
          '^host tests/s: +[0-9.]+ with 2 jobs +(PASS|MISS)'; do
  expect_out "$re" "table: /$re/"
done
flat "$T/b/bench.yaml"
expect_eq "$(field format_version)" 1 "bench.yaml format_version"
expect_eq "$(field backend)" host "bench.yaml backend"
expect_match "$(field kiln_version)" '^[0-9]+\.[0-9]+' "bench.yaml kiln_version"
expect_match "$(field host.cpus)" '^[1-9][0-9]*$' "bench.yaml host.cpus"
pos='^([1-9][0-9]*(\.[0-9]+)?|0\.[0-9]*[1-9][0-9]*)(e[-+]?[0-9]+)?$'
# Points: ceiling 1,2; kiln 1,2; kiln_cold (n/a without a warm pool, or two
# measured rows); none; host.
npts=$(grep -c '^points\.[0-9]*\.what=' "$T/flat.txt")
expect_match "$npts" '^(7|8)$' "bench.yaml has every point ($npts)"
for i in $(seq 0 $((npts - 1))); do
  what=$(field "points.$i.what")
  [ "$(field "points.$i.available")" = true ] || {
    expect_eq "$what" kiln_cold "only kiln_cold may be unavailable (point $i)"; continue; }
  expect_eq "$(field "points.$i.failed")" 0 "point $i ($what) failed"
  for key in wall_s tests_per_s cpu_ms_per_test tests concurrency; do
    expect_match "$(field "points.$i.$key")" "$pos" "point $i ($what) $key positive"
  done
  [ "$what" = host ] ||
    expect_match "$(field "points.$i.ratio_to_ceiling")" "$pos" "point $i ($what) ratio positive"
  if [ "$what" = ceiling ]; then
    expect_match "$(field "points.$i.context_open_ms_mean")" "$pos" "ceiling $i context open ms"
    expect_match "$(field "points.$i.process_start_ms_mean")" "$pos" "ceiling $i process start ms"
  else
    [ -f "$(field "points.$i.run_dir")/report.yaml" ] && ok "point $i ($what) left its kiln report" ||
      fail "point $i ($what): no report.yaml in its run_dir"
  fi
done
for key in ceiling.tests_per_s kiln.tests_per_s kiln.ratio_to_ceiling \
           isolation_none.tests_per_s host.cpu_ms_per_test host.tests_per_s; do
  expect_match "$(field "summary.$key")" "$pos" "summary.$key positive"
done
expect_match "$(field summary.kiln.pass)" '^(true|false)$' "summary.kiln.pass"
expect_match "$(field summary.host.cpu_pass)" '^(true|false)$' "summary.host.cpu_pass"
# The kiln rows ran the trivial test N times each, all passing.
flat "$T/b/kiln-c2/report.yaml"
expect_eq "$(field summary.pass)" 6 "kiln c=2 ran 6 passing tests"
flat "$T/b/host-c2/report.yaml"
expect_eq "$(field summary.pass)" 20 "host point ran 20 passing no-op tests"

# --skip leaves sections out, and the summary says n/a.
k bench --backend host --tests 3 --concurrency 1 --skip ceiling,kiln,none --host-tests 5 --out "$T/s"
expect_rc 0 "kiln bench --skip ceiling,kiln,none"
expect_out '^ceiling: +n/a' "skipped ceiling is n/a"
flat "$T/s/bench.yaml"
expect_eq "$(grep -c '^points\.[0-9]*\.what=' "$T/flat.txt")" 1 "one point left"
expect_eq "$(field points.0.what)" host "the host point"
expect_eq "$(field summary.ceiling)" null "summary.ceiling null"

finish
