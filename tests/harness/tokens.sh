#!/usr/bin/env bash
# Device tokens shared by two and four kiln runs on one host: with one slot,
# two runs' tests never overlap, and with two slots four runs never hold
# more than two at once (asserted from the sleeps the tests log: a sleep
# lies inside its test's hold of the slots); the waiting
# shows as token_wait. `kiln devices` shows slots and holders.
. "$(dirname "$0")/lib.sh"

export KILN_FAULT_SLEEP_MS=300
# Each run's sleepers log their sleeps to the run's own file.
sleeps() { KILN_FAULT_SLEEP_LOG="$T/$1.sleeps" "${@:2}"; }
sleeps a "$KILN" run --backend host --slots 1 -j 2 --repeat 3 -o "$T/a" faults/sleeper >"$T/a.txt" 2>&1 &
a=$!
sleeps b "$KILN" run --backend host --slots 1 -j 2 --repeat 3 -o "$T/b" faults/sleeper >"$T/b.txt" 2>&1 &
b=$!
# Until one of them holds the slot (a fixed pause raced a slow start).
for i in $(seq 200); do [ "$("$KH_PROBE" semval "$KEY" 0 2>/dev/null)" = "0 1" ] && break; sleep 0.02; done
k devices --backend host --slots 1
expect_out 'slots 1 total, 0 free' "kiln devices: the slot is taken"
expect_out 'held by pid [0-9]+: faults/sleeper slots=1' "kiln devices: who holds it"
wait $a; ra=$?; wait $b; rb=$?
expect_eq "$ra/$rb" 0/0 "both runs pass"
expect_eq "$("$KH_PROBE" overlap "$T"/{a,b}.sleeps)" 1 "at most one test held the slot at any time"
waits=$(cat "$T/a/report.yaml" "$T/b/report.yaml" | grep -E '^ +token_wait_ms:' | awk '$2 > 100' | wc -l)
[ "$waits" -ge 3 ] && ok "$waits tests waited >100 ms for the token" || fail "only $waits tests waited for the token"
expect_tokens_full "after two concurrent runs"
k devices --backend host --slots 1
expect_out 'slots 1 total, 1 free' "kiln devices: free again"

# With two slots, the same two runs do overlap: the slots are the limit.
sleeps c "$KILN" run --backend host --slots 2 -j 2 --repeat 2 -o "$T/c" faults/sleeper >/dev/null 2>&1 &
c=$!
sleeps d "$KILN" run --backend host --slots 2 -j 2 --repeat 2 -o "$T/d" faults/sleeper >/dev/null 2>&1
wait $c
n=$("$KH_PROBE" overlap "$T"/{c,d}.sleeps)
[ "$n" -ge 2 ] && [ "$n" -le 2 ] && ok "two slots: up to 2 tests at once ($n)" || fail "two slots: $n at once"

# Four runs at once on two slots: never more than two tests hold a slot,
# every run passes, and the slots are back at full afterwards.
pids=()
for r in 1 2 3 4; do
  sleeps "four$r" "$KILN" run --backend host --slots 2 -j 2 --repeat 3 -o "$T/four$r" faults/sleeper >"$T/four$r.txt" 2>&1 &
  pids+=($!)
done
rcs=""
for p in "${pids[@]}"; do wait "$p"; rcs="$rcs$?"; done
expect_eq "$rcs" 0000 "four concurrent runs pass"
n=$("$KH_PROBE" overlap "$T"/four{1,2,3,4}.sleeps)
expect_eq "$n" 2 "four runs on two slots: at most (and at some point) 2 tests at once"
total=$(cat "$T"/four{1,2,3,4}/report.yaml | grep -c '^  outcome: pass')
expect_eq "$total" 12 "all 12 test runs of the four runs passed"
expect_tokens_full "after four concurrent runs"
finish
