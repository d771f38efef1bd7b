#!/usr/bin/env bash
# One token set per key, whatever happens to the key file: while a run
# holds both slots of a 2-slot device, the key file is deleted and a second
# run starts, then replaced by a new file (another inode) and a third run
# starts. All three share one set: never more than two tests hold a slot
# at once across the three reports, and the slots are back at full after.
# And one set per file, however it is named: six runs on a 1-slot device,
# each naming the key another way (., //, a relative name, a symbolic link
# to the file, one to its folder), never hold the slot two at once.
. "$(dirname "$0")/lib.sh"

export KILN_FAULT_SLEEP_MS=1500
run() { KILN_FAULT_SLEEP_LOG="$T/$1.sleeps" "$KILN" run --backend host --slots 2 -j 2 --repeat 2 -o "$T/$1" faults/sleeper \
  >"$T/$1.txt" 2>&1; }
# held: 1 when both slots of device 0 are taken.
held() { [ "$("$KH_PROBE" semval "$KEY" 0 2>/dev/null)" = "0 2" ]; }

run a & a=$!
for i in $(seq 100); do held && break; sleep 0.05; done
held && ok "run a holds both slots" || fail "run a never held both slots"
rm -f "$KEY"
run b & b=$!
sleep 0.3
echo new >"$KEY.new" && mv -f "$KEY.new" "$KEY"
run c & c=$!
wait $a; ra=$?; wait $b; rb=$?; wait $c; rc3=$?
expect_eq "$ra/$rb/$rc3" 0/0/0 "the three runs pass"
n=$("$KH_PROBE" overlap "$T"/{a,b,c}.sleeps)
expect_eq "$n" 2 "key file deleted, then replaced: at most 2 tests held the 2 slots at once"
waits=$(cat "$T"/{b,c}/report.yaml | grep -E '^ +token_wait_ms:' | awk '$2 > 300' | wc -l)
[ "$waits" -ge 2 ] && ok "$waits tests of runs b and c waited for run a's slots" ||
  fail "only $waits tests of runs b and c waited for a slot"
expect_tokens_full "after the three runs"
expect_no_runners "after the three runs"

ln -s "$KEY" "$T/key-link"
ln -s "$T" "$T/dir-link"
names=("$KEY" "$T/./tokens" "$T//tokens" tokens "$T/key-link" "$T/dir-link/tokens")
export KILN_FAULT_SLEEP_MS=300
pids=()
for i in "${!names[@]}"; do
  KILN_TOKEN_KEY=${names[$i]} KILN_FAULT_SLEEP_LOG="$T/n$i.sleeps" "$KILN" run --backend host \
    --slots 1 -j 1 --repeat 2 -o "$T/n$i" faults/sleeper >"$T/n$i.txt" 2>&1 &
  pids+=($!)
done
rcs=""
for p in "${pids[@]}"; do wait "$p"; rcs="$rcs$?"; done
expect_eq "$rcs" 000000 "six runs, the key named six ways, pass"
n=$("$KH_PROBE" overlap "$T"/n[0-5].sleeps)
expect_eq "$n" 1 "one key file named six ways: at most 1 test held the 1 slot at once"
ids=""
for i in "${!names[@]}"; do
  KILN_TOKEN_KEY=${names[$i]} k devices --backend host
  expect_out 'slots 1 total, 1 free' "kiln devices with the key named ${names[$i]}: free again"
  ids="$ids $(grep -oE 'semaphore set [0-9]+' "$T/out.txt")"
done
expect_eq "$(echo "$ids" | tr ' ' '\n' | grep -E '^[0-9]+$' | sort -u | wc -l)" 1 "kiln devices: one set id under the six names"
# Sets that a name of its own made (before keys were canonical) go too.
for i in "${!names[@]}"; do "$KH_PROBE" semrm "${names[$i]}" 2>/dev/null; done
finish
