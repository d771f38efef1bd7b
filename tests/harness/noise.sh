#!/usr/bin/env bash
# `kiln report diff` judges a speed change against the noise measured for
# that figure: its repeats' spread, the spread of every figure's change
# between the two runs, and earlier nights (--history). Two runs of the
# same code on the same machine are not a regression; a kernel made 2x
# slower is, with its factor and a confidence; a run whose every timing
# moved is judged against history, and only said without it; a test that
# fails in one repeat says which. The reports are synthetic, with known
# noise (noise-reports.py), so the verdicts do not depend on this machine.
. "$(dirname "$0")/lib.sh"

python3 "$KILN_SOURCE/tests/harness/noise-reports.py" "$T/r" 7 || fail "noise-reports.py"
k report diff "$T/r/base.yaml" "$T/r/same.yaml" --yaml "$T/d.yaml"
expect_rc 0 "same code, same machine: no regression"
expect_out '^no regressions' "the summary says so"
[ "$rc" -eq 0 ] || head -20 "$T/out.txt"

k report diff "$T/r/base.yaml" "$T/r/planted.yaml" --yaml "$T/d.yaml"
expect_rc 1 "a kernel made 2x slower"
cat "$T/out.txt"
flat "$T/d.yaml"
got=$(grep -E '^findings\.[0-9]+\.(kind|test|kernel)=' "$T/flat.txt" | cut -d= -f2 | paste -sd' ')
expect_eq "$got" "slower_kernel syn/t07 k0" "exactly that kernel, nothing else"
expect_match "$(field findings.0.factor)" '^(1\.[89]|2\.[0-2])' "by how much (x2)"
expect_match "$(field findings.0.confidence)" '^0\.99[9]' "with a confidence of at least 99.9%"
expect_match "$(field findings.0.noise_rel)" '^0\.[0-9]' "and the noise it was judged against"
expect_out 'slower kernel +syn/t07 kernel k0: .*\(x(1\.[89]|2\.[0-2])[0-9]*;.*confidence' "the summary line says factor and confidence"

k report diff "$T/r/base.yaml" "$T/r/failing.yaml"
expect_rc 1 "a test failing in one repeat"
expect_out 'newly failing +syn/t03: failed in repeat 2 of 3: fail: boom' "names the repeat and its message"

k report diff "$T/r/h4.yaml" "$T/r/wide.yaml"
expect_rc 0 "every timing 1.5x slower, no history: not judged"
expect_out 'run-wide x1\.[45][0-9]* .*--history' "but said, with how to judge it"
k report diff "$T/r/h4.yaml" "$T/r/wide.yaml" --history "$T/r/h1.yaml" --history "$T/r/h2.yaml" \
  --history "$T/r/h3.yaml" --yaml "$T/d.yaml"
expect_rc 1 "every timing 1.5x slower, beyond four nights of history"
flat "$T/d.yaml"
expect_eq "$(field findings.0.kind)" slower_run "a run-wide slowdown"
k report diff "$T/r/h4.yaml" "$T/r/base.yaml" --history "$T/r/h1.yaml" --history "$T/r/h2.yaml" \
  --history "$T/r/h3.yaml"
expect_rc 0 "a night within history's spread"
finish
