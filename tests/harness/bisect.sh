#!/usr/bin/env bash
# kiln bisect: the fault suite's pollution pair (the reader passes alone
# and fails after the writer in one process) and a planted three-test chain
# (chain_victim fails only after both chain_arm and chain_pollute), each
# among innocent tests: delta debugging finds exactly the polluters, every
# trial is a real run with its report, and the printed command reproduces
# the failure. Also what it says when there is nothing to find.
. "$(dirname "$0")/lib.sh"

innocent=(faults/pass faults/leak faults/skip faults/gpu_sleeper faults/sleeper faults/fail_assert)
export KILN_FAULT_SLEEP_MS=10

k bisect faults/pollution_reader --backend host -o "$T/pair" -- "${innocent[@]}" faults/pollution_writer
expect_rc 0 "pollution pair: a set found"
expect_out 'faults/pollution_reader fails after 1 of the 7 earlier tests' "pollution pair: one test of seven"
expect_out '^  faults/pollution_writer$' "...the writer"
cmd=$(grep '^reproduce: ' "$T/out.txt" | sed 's/^reproduce: kiln //')
expect_match "$cmd" '^run --backend host --isolation none --seed [0-9]+ faults/pollution_writer faults/pollution_reader$' \
  "the reproducing command"
# shellcheck disable=SC2086
k $cmd -o "$T/again"
expect_rc 1 "the command reproduces the failure"
flat "$T/again/report.yaml"
expect_eq "$(tfield faults/pollution_reader outcome)" fail "...the reader fails after the writer"
ls -d "$T/pair"/trial-* >/dev/null 2>&1 && [ -f "$T/pair/trial-1/report.yaml" ] &&
  ok "every trial left its report ($(ls -d "$T/pair"/trial-* | wc -l) trials)" || fail "trial reports"

k bisect faults/chain_victim --backend host -v -o "$T/chain" -- "${innocent[@]}" faults/chain_arm \
  faults/pollution_reader faults/chain_pollute
expect_rc 0 "chain: a set found"
expect_out 'faults/chain_victim fails after 2 of the 9 earlier tests' "chain: two of nine"
expect_eq "$(sed -n '/fails after/,/^reproduce/p' "$T/out.txt" | grep '^  faults/' | tr -d ' ' | tr '\n' ' ')" \
  "faults/chain_arm faults/chain_pollute " "...arm and pollute, in the run's order"
expect_out 'trial [0-9]+: 1 earlier test, then faults/chain_victim: it passes' \
  "one of them alone is not enough (the set is 1-minimal)"
cmd=$(grep '^reproduce: ' "$T/out.txt" | sed 's/^reproduce: kiln //')
# shellcheck disable=SC2086
k $cmd -o "$T/again2"
expect_rc 1 "the chain's command reproduces the failure"

# Nothing to find.
k bisect faults/fail_assert --backend host -o "$T/alone" faults/pass
expect_rc 1 "a test that fails alone"
expect_out 'faults/fail_assert fails on its own: nothing to bisect' "...says so"
k bisect faults/pollution_reader --backend host -o "$T/clean" -- faults/pass faults/leak
expect_rc 1 "no polluter among the earlier tests"
expect_out 'passes after all 2 earlier tests: none of them pollutes it' "...says so"
k bisect faults/pollution_reader --backend host -o "$T/crash" -- faults/segfault faults/pollution_writer
expect_rc 1 "an earlier test ends the shared process"
expect_out 'faults/segfault ended the shared process' "...names it"
k bisect faults/no_such_test --backend host faults/pass
expect_rc 2 "an unknown test"
k bisect --backend host
expect_rc 2 "no test given"
expect_tokens_full "after the bisections"
expect_no_runners "after the bisections"
finish
