#!/usr/bin/env bash
# The pollution pair reproduces the original problem: the reader passes in
# its own process and fails after the writer in one shared process
# (--isolation none), and the report shows why (the worst element). Also:
# --isolation none really is one process, and --wrap runs each child under a
# command.
. "$(dirname "$0")/lib.sh"

k run --backend host -o "$T/iso" faults/pollution_writer faults/pollution_reader
flat "$T/iso/report.yaml"
expect_eq "$(tfield faults/pollution_reader outcome)" pass "reader passes isolated"
expect_eq "$(tfield faults/pollution_writer outcome)" leak "the polluter shows as a leak"
expect_tokens_full "after the isolated run"

k run --backend host --isolation none -o "$T/none" faults/pollution_writer faults/pollution_reader faults/pass
expect_rc 1 "shared process run fails"
flat "$T/none/report.yaml"
expect_eq "$(tfield faults/pollution_reader outcome)" fail "reader fails in a shared process"
expect_eq "$(tfield faults/pollution_reader checks.0.name)" workspace "the numeric check is in the report"
expect_eq "$(tfield faults/pollution_reader checks.0.worst_actual)" 7.25 "worst element: the writer's value"
expect_eq "$(tfield faults/pollution_reader checks.0.worst_expected)" 0 "worst element: expected zero"
expect_eq "$(tfield faults/pollution_reader checks.0.worst_index)" 8192 "worst element: first unwritten index"
expect_eq "$(tfield faults/pollution_reader checks.0.over)" 8192 "elements over tolerance"
expect_eq "$(tfield faults/pollution_reader checks.0.pass)" 0 "check failed"
pids=$(for t in pass pollution_writer pollution_reader; do tfield "faults/$t" pid; done | sort -u | wc -l)
expect_eq "$pids" 1 "--isolation none runs all tests in one process"
expect_eq "$(field settings.isolation)" none "settings record isolation"
k report show "$T/none"
expect_out 'worst \[8192\] = 7.25, expected 0' "report show prints the worst element"

# --wrap: each child runs under the command (env sets a variable the test
# cannot see otherwise; the run passes, and the command line shows it).
k run --backend host -v --wrap "env KILN_WRAPPED=1" -o "$T/wrap" faults/pass
expect_rc 0 "--wrap env"
expect_out 'exec: env KILN_WRAPPED=1 .*kiln-runner-host --result-fd 3' "the wrap command prefixes the runner"
finish
