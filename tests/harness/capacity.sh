#!/usr/bin/env bash
# Only an explicit command changes the host-wide slot capacity, and it says
# so: `kiln devices` only reads it (and makes no token set); `kiln devices
# --slots N` sets it and prints the change; `kiln run` says when it changes
# it.
. "$(dirname "$0")/lib.sh"

k devices --backend host
expect_rc 0 "kiln devices with no token set"
expect_out 'no token set' "says there is none"
[ -e "$KEY" ] && fail "kiln devices made a token key file" || ok "kiln devices made nothing"
k run --backend host --jobs 5 -o "$T/run" faults/pass
expect_rc 0 "a run with --jobs 5"
expect_out 'slot capacity of device 0: 0 -> 5' "the run says it set the capacity"
cap() { "$KH_PROBE" semval "$KEY" 0 | cut -d' ' -f2; }
expect_eq "$(cap)" 5 "capacity 5 after the run"
k devices --backend host
expect_rc 0 "kiln devices"
expect_out 'slots 5 total, 5 free' "devices shows the capacity in force"
expect_eq "$(cap)" 5 "kiln devices left the capacity alone"
k devices --backend host --slots 3
expect_rc 0 "kiln devices --slots 3"
expect_out 'slot capacity of device 0: 5 -> 3' "it says it changed it"
expect_eq "$(cap)" 3 "capacity 3"
k run --backend host --jobs 3 -o "$T/run2" faults/pass
if grep -q 'slot capacity' "$T/out.txt"; then fail "a run that changes nothing says it did"; else ok "no change, nothing said"; fi
finish
