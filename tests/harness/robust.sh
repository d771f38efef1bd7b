#!/usr/bin/env bash
# The parent survives what children do: a grandchild holding the pipes
# (kiln finishes, the grandchild is killed and reported: a leak), a 300 MB output flood (log
# bounded, kiln's memory bounded), a runner that is missing or cannot be
# executed (error outcome, exit 3, a message naming the file), a device that
# is listed but unusable (error outcome for its tests, the rest run).
. "$(dirname "$0")/lib.sh"

start=$(date +%s%N)
k run --backend host -o "$T/gc" faults/grandchild
took=$(( ($(date +%s%N) - start) / 1000000 ))
expect_rc 1 "grandchild holding the pipes: left running, a leak"
[ "$took" -lt 8000 ] && ok "kiln did not hang on the grandchild (${took} ms)" || fail "kiln took ${took} ms"
gpid=$(grep -o 'grandchild pid [0-9]*' "$T/gc/logs/faults/grandchild.log" | awk '{print $3}')
sleep 0.3
# A killed grandchild may linger as a zombie when PID 1 does not reap.
if [ -n "$gpid" ] && [ -e "/proc/$gpid" ] && ! grep -q '^State:.*Z' "/proc/$gpid/status"; then fail "grandchild $gpid still alive"; else ok "grandchild ${gpid:-?} is gone"; fi
expect_no_runners "after the grandchild test"

export KILN_FAULT_FLOOD_MB=300
k run --backend host -o "$T/flood" faults/flood
expect_eq "$rc" 0 "flood run passes"
# kiln's own peak (VmHWM, in the report): the runner's memory is not kiln's,
# and under AddressSanitizer the runner alone passes 64 MiB.
flat "$T/flood/report.yaml"
rss=$(field run.kiln_peak_rss_kb)
[ -n "$rss" ] && [ "$rss" -lt 65536 ] && ok "kiln's peak RSS ${rss} KiB stays under 64 MiB" || fail "kiln's peak RSS '${rss}' KiB"
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

# A runner that is there but not executable: planning refuses it by name...
mkdir -p "$T/noexec"; cp "$KILN_RUNNER_DIR/kiln-runner-host" "$T/noexec/"; chmod -x "$T/noexec/kiln-runner-host"
k run --backend host --runner-dir "$T/noexec" -o "$T/ne" faults/pass; expect_rc 3 "a runner that is not executable"
expect_out "noexec/kiln-runner-host \(not executable\)" "not executable: the message names the file and why"
# ...and when exec itself is refused (EACCES), the test is an error.
k run --backend host --wrap "$T/noexec/kiln-runner-host" -o "$T/eacces" faults/pass faults/fail_assert
expect_rc 3 "exec refused: infrastructure error"
flat "$T/eacces/report.yaml"
expect_eq "$(tfield faults/pass outcome)" error "exec refused: error outcome"
expect_match "$(tfield faults/pass message)" 'runner missing/not executable: .*kiln-runner-host: Permission denied' "exec refused: clear message"
expect_eq "$(tfield faults/fail_assert outcome)" error "exec refused: every test errors, none hangs"
expect_tokens_full "after refused execs"

# A device that is listed but unusable: the host emulation with two devices,
# the second failing every stream and memory call. The test that meets it
# is an error that says why; the device then fails its health probe and is
# taken out of the run, so the other tests run on the first device and
# pass; every slot comes back.
KILN_EMU_DEVICES=2 KILN_EMU_BROKEN_DEVICES=1 k run --backend host -j 2 --slots 1 --repeat 4 -o "$T/broken" faults/pass
expect_rc 1 "a broken device fails the run"
flat "$T/broken/report.yaml"
expect_eq "$(field devices.1.physical)" 1 "both devices are listed"
npass=0 nerr=0 wrongdev=0
for i in 0 1 2 3; do
  o=$(tfield faults/pass outcome $i) d=$(tfield faults/pass device $i)
  [ "$o" = pass ] && npass=$((npass + 1)) && [ "$d" != 0 ] && wrongdev=1
  [ "$o" = error ] && nerr=$((nerr + 1)) && [ "$d" != 1 ] && wrongdev=1
done
[ "$npass" -ge 1 ] && [ "$nerr" -ge 1 ] && [ $((npass + nerr)) -eq 4 ] && [ "$wrongdev" -eq 0 ] &&
  ok "device 0: $npass pass; device 1: $nerr error" || fail "broken device: $npass pass, $nerr error, wrong device $wrongdev"
i=$(grep -E '^tests\.[0-9]+\.outcome=error$' "$T/flat.txt" | head -1 | sed -E 's/^tests\.([0-9]+)\..*/\1/')
expect_match "$(field "tests.$i.message")" 'engine context on device 0: KE_EDEVICE: hipStreamCreateWithFlags failed' "broken device: the error says why"
expect_eq "$(field devices.1.in_service)" false "broken device: taken out of the run after its probe"
expect_eq "$(field health_probes.0.passed)" false "broken device: its health probe failed"
expect_match "$(field "tests.$i.log.tail")" 'device 0 \(physical 1\) is listed but unusable' "broken device: the log names it"
for d in 0 1; do
  v=$("$KH_PROBE" semval "$KEY" $d)
  [ "${v% *}" = "${v#* }" ] && ok "device $d slots back at full ($v)" || fail "device $d slots $v"
done
expect_no_runners "after the broken-device run"

# A resource spec listing a device the runner does not see: a warning that
# names it; the tests run on the device that exists. Listing only missing
# devices: every test is an error that says why, and nothing hangs.
printf '%s' '{"version":{"major":1,"minor":0},"local":[{"gpus":[{"id":"0","slots":1},{"id":"5","slots":2}]}]}' >"$T/spec5.json"
k run --backend host --resource-spec "$T/spec5.json" -o "$T/spec5" faults/pass
expect_rc 0 "a listed device that does not exist: the run goes on"
expect_out "device 5 is listed .* but the host runner does not see it" "the missing device is named"
printf '%s' '{"version":{"major":1,"minor":0},"local":[{"gpus":[{"id":"5","slots":2}]}]}' >"$T/only5.json"
k run --backend host --resource-spec "$T/only5.json" -o "$T/only5" faults/pass faults/leak
expect_rc 1 "only missing devices listed: tests cannot run"
flat "$T/only5/report.yaml"
expect_eq "$(tfield faults/pass outcome)" error "only missing devices: error outcome"
expect_match "$(tfield faults/leak message)" 'no device has slots' "only missing devices: the message says why"
finish
