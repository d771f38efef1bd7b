#!/usr/bin/env bash
# The parent survives what children do: a grandchild holding the pipes
# (kiln finishes, the grandchild is killed), a 300 MB output flood (log
# bounded, kiln's memory bounded), a runner that cannot be executed (error
# outcome, exit 3).
. "$(dirname "$0")/lib.sh"

start=$(date +%s%N)
k run --backend host -o "$T/gc" faults/grandchild
took=$(( ($(date +%s%N) - start) / 1000000 ))
expect_rc 0 "grandchild holding the pipes"
[ "$took" -lt 8000 ] && ok "kiln did not hang on the grandchild (${took} ms)" || fail "kiln took ${took} ms"
gpid=$(grep -o 'grandchild pid [0-9]*' "$T/gc/logs/faults/grandchild.log" | awk '{print $3}')
sleep 0.3
# A killed grandchild may linger as a zombie when PID 1 does not reap.
if [ -n "$gpid" ] && [ -e "/proc/$gpid" ] && ! grep -q '^State:.*Z' "/proc/$gpid/status"; then fail "grandchild $gpid still alive"; else ok "grandchild ${gpid:-?} is gone"; fi
expect_no_runners "after the grandchild test"

export KILN_FAULT_FLOOD_MB=300
read -r frc rss < <("$KH_PROBE" maxrss "$KILN" run --backend host -o "$T/flood" faults/flood)
expect_eq "$frc" 0 "flood run passes"
[ "$rss" -lt 65536 ] && ok "kiln's peak RSS ${rss} KiB stays under 64 MiB" || fail "peak RSS ${rss} KiB"
size=$(stat -c %s "$T/flood/logs/faults/flood.log")
[ "$size" -le 340000 ] && ok "log bounded: $size bytes" || fail "log is $size bytes"
flat "$T/flood/report.yaml"
b=$(tfield faults/flood log.bytes); d=$(tfield faults/flood log.dropped_bytes)
[ "$b" -ge 314572800 ] && ok "all $b bytes were read" || fail "log.bytes $b"
[ "$d" -ge 314000000 ] && ok "dropped bytes counted: $d" || fail "dropped $d"
grep -q 'bytes of output dropped here' "$T/flood/logs/faults/flood.log" && ok "the log marks the cut" || fail "no cut marker"
expect_match "$(tfield faults/flood log.tail)" 'flood done: 300 MB' "the log tail is the end of the output"

k run --backend host --wrap /nonexistent/wrapper -o "$T/missing" faults/pass
expect_rc 3 "an exec failure is an infrastructure error"
flat "$T/missing/report.yaml"
expect_eq "$(tfield faults/pass outcome)" error "exec failure: error outcome"
expect_match "$(tfield faults/pass message)" 'runner missing/not executable: /nonexistent/wrapper: No such file' "exec failure: clear message"
expect_tokens_full "after exec failures"

k list --backend host --runner-dir "$T/empty-dir"; expect_rc 3 "no runner in --runner-dir"
expect_out "no runner for backend 'host'" "missing runner: clear message"
finish
