#!/usr/bin/env bash
# Every YAML/JSON input goes through the bounded reader, and parsing never
# delays another test's deadline. A manifest nested 200000 levels deep is
# refused in well under a second (libyaml's own loader: 98 s, quadratic);
# a GoogleTest binary whose listing JSON nests 200000 levels is listed at
# once (the JSON refused, the console listing kept). Then a run where a
# GoogleTest test writes a JSON nested 100000 levels just as a command
# with `timeout: 2` runs: the command's timeout holds against the wall
# clock (SIGTERM at 2 s, not when a parse ends), and its message says so.
. "$(dirname "$0")/lib.sh"

deep() { python3 -c "import sys; n=int(sys.argv[1]); print('{\"a\": ' + '[' * n + ']' * n + '}')" "$1"; }

{ echo "suite: deep"; echo -n "tests: "; deep 200000; } >"$T/deep.yaml"
t0=$(date +%s%N)
k list --manifest "$T/deep.yaml"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_rc 2 "a manifest nested 200000 levels"
expect_out 'nest deeper than 64 levels' "...refused for its nesting, with file:line:column"
[ "$ms" -lt 3000 ] && ok "refused in $ms ms" || fail "refusing the deep manifest took $ms ms"

# A GoogleTest stand-in: lists Deep.big and Deep.other, writes a deeply
# nested JSON wherever --gtest_output asks, and passes what it runs.
cat >"$T/fake-gtest" <<EOF2
#!/usr/bin/env bash
for a; do case \$a in --gtest_output=json:*) out=\${a#--gtest_output=json:};;
  --gtest_list_tests) list=1;; esac; done
if [ -n "\${list:-}" ]; then
  printf 'Deep.\n  big\n  other\n'
  [ -n "\${out:-}" ] && cp "$T/deep.json" "\$out"
  exit 0
fi
sleep "\${KILN_DEEP_SLEEP:-0}"
echo "[==========] Running 1 test from 1 test suite."
echo "[ RUN      ] Deep.big"
echo "[       OK ] Deep.big (0 ms)"
[ -n "\${out:-}" ] && cp "$T/deep.json" "\$out"
echo "[  PASSED  ] 1 test."
EOF2
chmod +x "$T/fake-gtest"
deep 200000 >"$T/deep.json"
t0=$(date +%s%N)
k list --gtest "$T/fake-gtest"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_rc 0 "kiln list of a GoogleTest binary whose JSON listing nests 200000 levels"
expect_out '^Deep\.big ' "its tests are listed from the console"
[ "$ms" -lt 3000 ] && ok "listed in $ms ms" || fail "listing took $ms ms"

# The timeout against the wall clock while the parent reads a deep JSON.
deep 100000 >"$T/deep.json"
cat >"$T/slow.yaml" <<'EOF2'
suite: slow
tests:
  - {name: sleeps, command: [sleep, "30"], timeout: 2, needs_gpu: false}
EOF2
export KILN_DEEP_SLEEP=0.5
t0=$(date +%s%N)
k run --backend host -j 2 --grace 0.5 --gtest "$T/fake-gtest" --manifest "$T/slow.yaml" \
  -o "$T/run" Deep.big slow/sleeps
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_rc 1 "the run with a timeout"
flat "$T/run/report.yaml"
expect_eq "$(tfield slow/sleeps outcome)" timeout "the command timed out"
wall=$(tfield slow/sleeps times.wall_ms)
expect_match "$wall" '^[0-9.]+$' "its wall time is reported"
awk -v w="$wall" 'BEGIN { exit !(w < 3500) }' && ok "killed at $wall ms of a 2 s timeout (0.5 s grace)" ||
  fail "the 2 s timeout ended at $wall ms: the parse delayed it"
expect_match "$(tfield slow/sleeps message)" '^timed out after 2 s; sent SIGTERM' \
  "the message states the timeout it kept"
[ "$ms" -lt 10000 ] && ok "the whole run took $ms ms" || fail "the run took $ms ms"
expect_no_runners "after the run"
finish
