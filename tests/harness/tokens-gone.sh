#!/usr/bin/env bash
# The token set removed (`ipcrm -s`) while runs hold slots. The running
# kiln notices before its next test takes slots: those tests are kiln's
# errors (never the test's fail), the console says why, exit 3; the tests
# that held slots finish with their own outcome. A test whose child was
# waiting for a slot when the set went is kiln's error too. While the
# holders live, `kiln devices` says the set was removed and who holds
# slots, and a new kiln refuses to make a fresh set at full capacity (exit
# 3); once they have ended, a run makes a new set and passes.
. "$(dirname "$0")/lib.sh"

gone_msg='token set of .* was removed during the run'
held() { [ "$("$KH_PROBE" semval "$1" 0 2>/dev/null)" = "$2" ]; }

# A runner's tests: two hold both slots when the set goes.
KILN_FAULT_SLEEP_MS=1000 "$KILN" run --backend host --slots 2 -j 2 --repeat 4 -o "$T/a" \
  faults/sleeper >"$T/a.txt" 2>&1 &
a=$!
# Manifest commands on a second key: m/a holds the one slot, w/a of
# another kiln waits for it.
KEY2=$T/tokens2
cat >"$T/m.yaml" <<'EOF'
suite: m
tests:
  - {name: a, command: [sleep, "3"]}
  - {name: b, command: [sleep, "0.1"]}
EOF
cat >"$T/w.yaml" <<'EOF'
suite: w
tests:
  - {name: a, command: [sleep, "0.1"]}
EOF
KILN_TOKEN_KEY=$KEY2 "$KILN" run --backend host --slots 1 -j 1 --manifest "$T/m.yaml" \
  -o "$T/m" >"$T/m.txt" 2>&1 &
m=$!
for i in $(seq 100); do held "$KEY" "0 2" && held "$KEY2" "0 1" && break; sleep 0.05; done
held "$KEY" "0 2" && held "$KEY2" "0 1" && ok "both runs hold their slots" ||
  fail "the runs never held their slots"
KILN_TOKEN_KEY=$KEY2 "$KILN" run --backend host --slots 1 -j 1 --manifest "$T/w.yaml" \
  -o "$T/w" >"$T/w.txt" 2>&1 &
w=$!
# Removed only once w/a's child waits on the set (a fixed pause was too
# short for a kiln starting under ASan beside three other tests: m/a had
# ended, and w made a fresh set).
for i in $(seq 200); do [ "$("$KH_PROBE" semwaiters "$KEY2" 0 2>/dev/null)" = 1 ] && break; sleep 0.05; done
[ "$("$KH_PROBE" semwaiters "$KEY2" 0 2>/dev/null)" = 1 ] && ok "w/a waits for m/a's slot" ||
  fail "w/a never waited for the slot"
"$KH_PROBE" semrm "$KEY" && "$KH_PROBE" semrm "$KEY2" && ok "both sets removed" ||
  fail "could not remove the sets"

k devices --backend host
expect_out 'it was removed .* while 2 tests held slots' "kiln devices: the set was removed under holders"
expect_out 'device 0: pid [0-9]+ \(faults/sleeper slots=1\)' "kiln devices: who holds slots"
k run --backend host --slots 2 -j 2 -o "$T/b" faults/sleeper
expect_rc 3 "a second kiln while the holders live"
expect_out 'token set of .* is gone, but 2 tests still hold slots' "...refuses a fresh set, saying why"
[ -e "$T/b/report.yaml" ] && fail "the refused run wrote a report" || ok "the refused run ran nothing"

wait $a; ra=$?
wait $m; rm=$?
wait $w; rw=$?
expect_eq "$ra/$rm/$rw" 3/3/3 "the three runs end with kiln's error"
expect_match "$(cat "$T/a.txt")" 'error: the device token set of .* was removed while this run held slots' \
  "the running kiln says so"
flat "$T/a/report.yaml"
expect_eq "$(grep -c '^tests\.[0-9]*\.outcome=pass$' "$T/flat.txt")/$(grep -c '^tests\.[0-9]*\.outcome=error$' "$T/flat.txt")" \
  2/2 "runner tests: the two holders pass, the two after are errors"
expect_match "$(grep '^tests\.[0-9]*\.message=not run' "$T/flat.txt" | head -1)" "$gone_msg" "...naming the removed set"
flat "$T/m/report.yaml"
expect_eq "$(tfield m/a outcome)/$(tfield m/b outcome)" pass/error "commands: the holder passes, the next is an error"
expect_match "$(tfield m/b message)" "$gone_msg" "...naming the removed set"
flat "$T/w/report.yaml"
expect_eq "$(tfield w/a outcome)" error "a command waiting for its slot when the set went: an error"
expect_match "$(tfield w/a message)" "$gone_msg" "...naming the removed set"

k run --backend host --slots 2 -j 2 --repeat 2 -o "$T/c" faults/sleeper
expect_rc 0 "once the holders have ended, a run makes a new set"
expect_tokens_full "after the new set's run"
expect_no_runners "after the runs"
"$KH_PROBE" semrm "$KEY2" 2>/dev/null
finish
