#!/usr/bin/env bash
# Every outcome through real child processes: pass, fail (Check's message,
# file and line), crash (signal, exit before the end), timeout (SIGTERM, and
# SIGKILL after the grace), leak (bytes and call site), skip (reason),
# protocol errors (garbage, truncated record), flaky under --retries; the
# leak policy; slots back at full value; report show and journal rebuild.
. "$(dirname "$0")/lib.sh"

# (The device faults and the rest are in every-fault.sh, one run each.)
sel=(faults -faults/flood -faults/grandchild -faults/sleeper -faults/gpu_sleeper -faults/flaky_once -@pollution
     -@device -faults/closed_pipe -faults/uninit_branch -faults/yaml_strings -faults/long_record
     -faults/escape -faults/helper -faults/kill_kiln -faults/many_leaks
     -@sanitizer -@chain -faults/memory_hog -faults/two_devices)
k run --backend host -j 2 --grace 0.5 -o "$T/run" "${sel[@]}"
expect_rc 1 "a run with failing tests"
flat "$T/run/report.yaml"
expect_eq "$(field format_version)" 3 "format_version"
expect_eq "$(field run.backend)" host "backend"
expect_eq "$(field run.interrupted)" false "interrupted"
expect_eq "$(field run.parent_gpu_clean)" true "parent_gpu_clean"
expect_eq "$(field summary.total)" 11 "summary.total"

declare -A want=([pass]=pass [fail_assert]=fail [segfault]=crash [abort_call]=crash
  [exit_early]=crash [hang]=timeout [hang_ignores_term]=timeout [leak]=leak
  [skip]=skip [garbage]=error [truncated]=error)
for t in "${!want[@]}"; do
  expect_eq "$(tfield "faults/$t" outcome)" "${want[$t]}" "faults/$t outcome"
done
src=$KILN_SOURCE/suites/harness/faults.c
expect_eq "$(tfield faults/fail_assert line)" "$(grep -n 'ck_assert_int_eq(answer, 42)' "$src" | cut -d: -f1)" "fail: Check's line"
expect_match "$(tfield faults/fail_assert file)" 'faults\.c$' "fail: Check's file"
expect_match "$(tfield faults/fail_assert message)" "answer == 42" "fail: Check's message"
# Under AddressSanitizer the runner reports the SEGV itself and exits; under
# UBSan (halt_on_error) the null store is reported before it happens.
expect_match "$(tfield faults/segfault signal) $(tfield faults/segfault log.tail)" \
  '^SIGSEGV|AddressSanitizer: SEGV|runtime error: store to null pointer' "segfault: signal name (or ASan's or UBSan's report)"
expect_eq "$(tfield faults/abort_call signal)" SIGABRT "abort: signal name"
expect_match "$(tfield faults/exit_early message)" "exited with status 0 without finishing" "exit(0) before the result is a crash"
expect_match "$(tfield faults/hang message)" "timed out after 1 s" "timeout message"
expect_eq "$(tfield faults/hang signal)" SIGTERM "hang: ended by SIGTERM"
expect_eq "$(tfield faults/hang_ignores_term signal)" SIGKILL "SIGTERM ignored: SIGKILL after the grace"
expect_eq "$(tfield faults/leak leaks.0.bytes)" 4096 "leak: bytes"
expect_match "$(tfield faults/leak leaks.0.file)" 'faults\.c$' "leak: file"
expect_eq "$(tfield faults/leak leaks.0.line)" "$(grep -n 'ke_malloc(kt_ctx(), &p, 4096)' "$src" | cut -d: -f1)" "leak: line"
expect_match "$(tfield faults/leak memory.before.free_bytes)" '^[0-9]+$' "memory before"
expect_match "$(tfield faults/skip message)" "skipped on purpose" "skip: reason"
expect_match "$(tfield faults/garbage message)" "protocol error" "garbage: protocol error"
expect_match "$(tfield faults/truncated message)" "truncated record" "truncated: protocol error"
expect_match "$(tfield faults/pass times.token_wait_ms)" '^[0-9.e-]+$' "times: token_wait"
expect_match "$(tfield faults/pass times.runtime_init_ms)" '^[0-9.e-]+$' "times: runtime_init"
expect_match "$(tfield faults/pass times.body_ms)" '^[0-9.e-]+$' "times: body"
expect_match "$(tfield faults/pass times.teardown_ms)" '^[0-9.e-]+$' "times: teardown"
expect_eq "$(tfield faults/pass device)" 0 "device recorded"
expect_match "$(tfield faults/pass log.path)" '^logs/faults/pass\.log$' "log path"
[ -f "$T/run/logs/faults/pass.log" ] && ok "log file exists" || fail "no log file"
expect_out 'FAIL +faults/fail_assert' "console: one line per test"
expect_out 'Assertion .answer == 42' "console: message of a failed test"
expect_tokens_full "after crashes, timeouts and SIGKILL"
expect_no_runners "after the run"

# report show, and a report rebuilt from the journal matches.
k report show "$T/run";        expect_rc 0 "report show"
expect_out '11 tests: 1 pass 1 fail 3 crash 2 timeout 1 leak 2 error 1 skip' "report show summary"
cp "$T/run/report.yaml" "$T/orig.yaml"
k report rebuild "$T/run";     expect_rc 0 "report rebuild"
"$KH_PROBE" flat "$T/orig.yaml" | grep -E '^(summary|tests)\.' | grep -v '\.log\.tail=' >"$T/a.txt"
"$KH_PROBE" flat "$T/run/report.yaml" | grep -E '^(summary|tests)\.' | grep -v '\.log\.tail=' >"$T/b.txt"
if diff -q "$T/a.txt" "$T/b.txt" >/dev/null; then ok "rebuilt report has the same tests and summary"
else fail "rebuilt report differs"; diff "$T/a.txt" "$T/b.txt" | head; fi

# Leak policy warn: the leak is listed, the test passes.
k run --backend host --leaks warn -o "$T/warn" faults/leak
expect_rc 0 "leaks: warn"
flat "$T/warn/report.yaml"
expect_eq "$(tfield faults/leak outcome)" pass "leak under warn is a pass"
expect_eq "$(tfield faults/leak leaks.0.bytes)" 4096 "the leak is still listed"

# Retries: a test that fails once is flaky, and its first attempt is kept.
k run --backend host --retries 2 -o "$T/retry" faults/flaky_once
expect_rc 0 "a flaky test does not fail the run"
flat "$T/retry/report.yaml"
expect_eq "$(tfield faults/flaky_once outcome 0)" fail "attempt 1 recorded as fail"
expect_eq "$(tfield faults/flaky_once final 0)" false "attempt 1 is not final"
expect_eq "$(tfield faults/flaky_once outcome 1)" flaky "attempt 2 is flaky, not pass"
expect_eq "$(tfield faults/flaky_once attempt 1)" 2 "attempt number"
expect_eq "$(field summary.flaky)" 1 "summary counts it once, as flaky"

# Repeat: every run recorded.
k run --backend host --repeat 3 -o "$T/rep" faults/pass
expect_rc 0 "--repeat 3"
flat "$T/rep/report.yaml"
expect_eq "$(field summary.pass)" 3 "three runs recorded"
expect_eq "$(tfield faults/pass repeat 2)" 3 "repeat numbers"
finish
