#!/usr/bin/env bash
# The runner protocol's version is checked at start: a runner built against
# another kiln says so clearly, from either side. kiln refuses a runner
# whose `runner` record speaks another protocol, or that sends none (older
# than the check; or no kiln runner at all); a runner refuses a kiln of
# another protocol (KILN_PROTOCOL). Stand-ins answer as such runners would.
. "$(dirname "$0")/lib.sh"

RUNNER=$KILN_RUNNER_DIR/kiln-runner-host
proto=$("$KILN" --version | sed -E 's/.*runner protocol ([0-9]+).*/\1/')

# A runner built against a kiln of protocol 1: no `runner` record yet.
mkdir -p "$T/old" "$T/other"
cat >"$T/old/kiln-runner-host" <<'EOF2'
#!/bin/sh
[ "$1" = --devices ] && echo "backend name=host devices=1" && echo "device backend=host index=0 name=emu"
[ "$1" = --list ] && echo "test id=a/b suite=a name=b tags= slots=1 timeout_s=0 needs_gpu=1 file=a.c line=1"
exit 0
EOF2
# One built against a kiln of a later protocol.
cat >"$T/other/kiln-runner-host" <<EOF2
#!/bin/sh
echo "runner kiln=9.9.9 protocol=$((proto + 1)) backend=host"
echo "backend name=host devices=1"
EOF2
chmod +x "$T/old/kiln-runner-host" "$T/other/kiln-runner-host"

k run --backend host --runner-dir "$T/old" -o "$T/r1"
expect_rc 3 "a runner without a runner record"
expect_out "does not begin its answer with a .runner. record: it was built against a kiln older than .* Rebuild it against this kiln" "says it is older and what to do"
k run --runner "$T/other/kiln-runner-host" -o "$T/r2"
expect_rc 3 "a runner of another protocol"
expect_out "was built against kiln 9\.9\.9, runner protocol $((proto + 1)); this kiln .* speaks protocol $proto\. Rebuild it against this kiln \(pkg-config module kiln-host\)" "names both versions and what to do"
k list --gtest "$RUNNER"
expect_rc 3 "a kiln runner given as a GoogleTest binary"
expect_out "kiln-runner-host --gtest_list_tests failed" "says what failed"

# The runner's side: started by a kiln of another protocol.
KILN_PROTOCOL=$((proto + 1)) "$RUNNER" --list >"$T/out.txt" 2>&1
rc=$?
expect_rc 3 "the runner refuses another protocol"
expect_out "built against kiln .* speaks its runner protocol $proto; the kiln that started it speaks protocol $((proto + 1))\. Rebuild" "the runner says why"
KILN_PROTOCOL=$proto "$RUNNER" --list >"$T/out.txt" 2>&1
rc=$?
expect_rc 0 "the same protocol: fine"
expect_out "^runner kiln=[0-9.]+ protocol=$proto backend=host\$" "--list begins with the runner record"
finish
