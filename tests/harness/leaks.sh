#!/usr/bin/env bash
# Leak lists are complete: faults/many_leaks leaves 300 device allocations;
# the report lists every one (with its bytes and call site) and says the
# exact totals, and the outcome's message counts all 300.
. "$(dirname "$0")/lib.sh"

k run --backend host -o "$T/run" faults/many_leaks
expect_rc 1 "300 leaks fail the test"
flat "$T/run/report.yaml"
expect_eq "$(tfield faults/many_leaks outcome)" leak "outcome"
n=$(grep -cE "^tests\.0\.leaks\.[0-9]+\.bytes=" "$T/flat.txt")
expect_eq "$n" 300 "every leak listed"
expect_eq "$(tfield faults/many_leaks leaks_total.count)" 300 "leaks_total.count"
want=$(python3 -c "print(sum(64 + i for i in range(300)))")
expect_eq "$(tfield faults/many_leaks leaks_total.bytes)" "$want" "leaks_total.bytes"
expect_eq "$(tfield faults/many_leaks leaks_total.listed)" 300 "leaks_total.listed"
expect_match "$(tfield faults/many_leaks message)" "^$want bytes in 300 device allocations" "the message counts all of them"
line=$(grep -n 'ke_malloc(kt_ctx(), &p, 64 + (size_t)i)' "$KILN_SOURCE/suites/harness/faults.c" | cut -d: -f1)
expect_eq "$(tfield faults/many_leaks leaks.299.line)" "$line" "the last one has its call site"
expect_eq "$(tfield faults/many_leaks leaks.299.bytes)" 363 "and its bytes"
# The same through the journal.
k report rebuild "$T/run"
flat "$T/run/report.yaml"
expect_eq "$(grep -cE "^tests\.0\.leaks\.[0-9]+\.bytes=" "$T/flat.txt")" 300 "rebuilt: every leak listed"
expect_eq "$(tfield faults/many_leaks leaks_total.count)" 300 "rebuilt: totals"
# Allocations made before the test (a shared process) are not its leaks,
# however many: the writer leaves one, the reader's own are counted.
k run --backend host --isolation none -o "$T/shared" faults/many_leaks faults/leak
flat "$T/shared/report.yaml"
expect_eq "$(tfield faults/leak leaks_total.count)" 1 "--isolation none: the next test's leaks are its own"
finish
