#!/bin/bash
# kiln bench on the host backend with small counts: every section of
# bench.yaml is there with positive numbers (the runner-alone point, the
# CPU ratio and the two peak-RSS runs included), the table and the summary
# are printed, bad options are refused with exit 2; and the bench suite is
# held back from a default `kiln run` but runs when named.
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
k bench --rss-tests 10 --tests 2
expect_rc 2 "--rss-tests with one count"
k bench --backend host --tests 6 --host-tests 20 --rss-tests 10,30 --concurrency 1,2 --out "$T/b"
expect_rc 0 "kiln bench --backend host"
for re in '^what +conc +tests +wall_s +tests/s +cpu_ms/test +ratio' \
          '^ceiling +1 +6 ' '^ceiling +2 +6 ' '^kiln +1 +6 ' '^kiln +2 +6 ' \
          '^kiln_cold +2 +6 ' '^none +1 +6 ' '^host +2 +20 ' '^runner +2 +20 ' \
          '^rss +2 +10 .*kiln peak RSS [0-9]+ KiB' '^rss +2 +30 .*kiln peak RSS [0-9]+ KiB' \
          '^ceiling: +[0-9.]+ tests/s' \
          '^kiln best: .*(PASS|MISS)' '^isolation none: +[0-9.]+ tests/s' \
          '^host CPU: +[0-9.]+ ms per test = [0-9.]+x the runner alone \([0-9.]+ ms\) +(PASS|MISS)' \
          '^host tests/s: +[0-9.]+ with 2 jobs \(the runner alone, 2 at a time: [0-9.]+\) +(PASS|MISS)' \
          '^kiln peak RSS: +[0-9]+ KiB at 10 tests, [0-9]+ KiB at 30: [-+][0-9]+ KiB +(PASS|MISS)'; do
  expect_out "$re" "table: /$re/"
done
flat "$T/b/bench.yaml"
expect_eq "$(field format_version)" 1 "bench.yaml format_version"
expect_eq "$(field backend)" host "bench.yaml backend"
expect_match "$(field kiln_version)" '^[0-9]+\.[0-9]+' "bench.yaml kiln_version"
expect_match "$(field host.cpus)" '^[1-9][0-9]*$' "bench.yaml host.cpus"
pos='^([1-9][0-9]*(\.[0-9]+)?|0\.[0-9]*[1-9][0-9]*)(e[-+]?[0-9]+)?$'
# Points: ceiling 1,2; kiln and kiln_cold 1,2; none; host and runner in
# turns, 3 rounds; rss x2.
npts=$(grep -c '^points\.[0-9]*\.what=' "$T/flat.txt")
expect_eq "$npts" 15 "bench.yaml has every point"
expect_eq "$(field points.7.what) $(field points.8.what) $(field points.11.what) $(field points.12.what)" \
  "host runner host runner" "host and runner points in turns"
expect_eq "$(field summary.host.rounds)" 3 "summary.host.rounds"
for i in $(seq 0 $((npts - 1))); do
  what=$(field "points.$i.what")
  expect_eq "$(field "points.$i.available")" true "point $i ($what) available"
  expect_eq "$(field "points.$i.failed")" 0 "point $i ($what) failed"
  for key in wall_s tests_per_s cpu_ms_per_test tests concurrency; do
    expect_match "$(field "points.$i.$key")" "$pos" "point $i ($what) $key positive"
  done
  case $what in
    host|runner|rss) expect_eq "$(field "points.$i.ratio_to_ceiling")" null "point $i ($what) has no ratio to the ceiling" ;;
    *) expect_match "$(field "points.$i.ratio_to_ceiling")" "$pos" "point $i ($what) ratio positive" ;;
  esac
  [ "$what" = rss ] && expect_match "$(field "points.$i.kiln_peak_rss_kb")" '^[1-9][0-9]*$' "point $i: kiln's peak RSS"
  if [ "$what" = ceiling ]; then
    expect_match "$(field "points.$i.context_open_ms_mean")" "$pos" "ceiling $i context open ms"
    expect_match "$(field "points.$i.process_start_ms_mean")" "$pos" "ceiling $i process start ms"
  elif [ "$what" != runner ]; then
    [ -f "$(field "points.$i.run_dir")/report.yaml" ] && ok "point $i ($what) left its kiln report" ||
      fail "point $i ($what): no report.yaml in its run_dir"
  fi
done
for key in ceiling.tests_per_s kiln.tests_per_s kiln.ratio_to_ceiling \
           isolation_none.tests_per_s host.cpu_ms_per_test host.tests_per_s \
           host.runner_cpu_ms_per_test host.runner_tests_per_s host.cpu_ratio \
           rss.peak_rss_kb_a rss.peak_rss_kb_b; do
  expect_match "$(field "summary.$key")" "$pos" "summary.$key positive"
done
awk -v r="$(field summary.host.cpu_ratio)" -v h="$(field summary.host.cpu_ms_per_test)" \
    -v a="$(field summary.host.runner_cpu_ms_per_test)" 'BEGIN { exit !(r > 0 && (r - h / a) ^ 2 < 1e-4 * r * r) }' &&
  ok "cpu_ratio is kiln's CPU per test over the runner's" || fail "cpu_ratio does not match its parts"
expect_match "$(field summary.rss.growth_kb)" '^-?[0-9]+$' "summary.rss.growth_kb"
for key in kiln.pass host.cpu_pass host.tests_per_s_pass rss.pass; do
  expect_match "$(field "summary.$key")" '^(true|false)$' "summary.$key"
done
# The kiln rows ran the trivial test N times each, all passing.
flat "$T/b/kiln-c2/report.yaml"
expect_eq "$(field summary.pass)" 6 "kiln c=2 ran 6 passing tests"
for d in host-c2 host-c2-r2 host-c2-r3; do
  flat "$T/b/$d/report.yaml"
  expect_eq "$(field summary.pass)" 20 "host point $d ran 20 passing no-op tests"
done

# --skip leaves sections out, and the summary says n/a.
k bench --backend host --tests 3 --concurrency 1 --skip ceiling,kiln,none --host-tests 5 --rss-tests 5,10 --out "$T/s"
expect_rc 0 "kiln bench --skip ceiling,kiln,none"
expect_out '^ceiling: +n/a' "skipped ceiling is n/a"
flat "$T/s/bench.yaml"
expect_eq "$(grep -c '^points\.[0-9]*\.what=' "$T/flat.txt")" 8 "the host points left"
expect_eq "$(field points.0.what) $(field points.1.what) $(field points.6.what)" "host runner rss" "the host points"
expect_eq "$(field summary.ceiling)" null "summary.ceiling null"

finish
