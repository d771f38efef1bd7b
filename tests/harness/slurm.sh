#!/usr/bin/env bash
# kiln slurm against a real Slurm: a one-node cluster of the test's own
# (slurm-cluster.sh) with four GRES GPUs, kiln's host backend emulating four
# devices. Checks that
#   - the merged report holds exactly the test runs of the same selection run
#     unsharded, and the run's JUnit, HTML, diff and status are written;
#   - each task saw only the GPU Slurm gave it (the shard's devices, every
#     test's device, and the GPU the task's own environment named);
#   - a second run is balanced by the first one's times;
#   - a task killed with scancel leaves its tests lost, with its Slurm state,
#     job and node, and `kiln slurm --resume` completes the run, its reruns
#     with the run's seed (status good, no false "error growth");
#   - a task cancelled while its test's process is still ending after its
#     result keeps that result (a note says the task's kiln was stopped);
#   - a GoogleTest binary and a manifest are spread over the tasks like
#     kiln's own tests, with no KILN_EMU_DEVICES set anywhere;
#   - on a drained node the follow line says why the tasks pend, and the
#     lost tests keep the state and reason; the merge is not "FAILED";
#   - no process of the cluster is left, however the test ends.
# Skips (77) without root or Slurm's packages, unless KILN_REQUIRE_SLURM=1.
# lib.sh changes into its temporary folder: the cluster script first.
. "$(dirname "$0")/slurm-cluster.sh"
. "$(dirname "$0")/slurm-lib.sh"
. "$(dirname "$0")/lib.sh"

skip() {
  echo "SKIP: $*"
  [ "${KILN_REQUIRE_SLURM:-0}" = 1 ] && { echo "KILN_REQUIRE_SLURM=1: that is a failure here"; exit 1; }
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "starting slurmctld and slurmd needs root"
for c in slurmctld slurmd sbatch squeue scontrol scancel sinfo unshare; do
  command -v $c >/dev/null || skip "no $c (Debian: apt-get install slurmctld slurmd slurm-client)"
done

# The cluster goes first, whatever ends the test (a failure, meson's timeout).
trap 'stop_cluster; cleanup' EXIT
trap 'exit 143' TERM INT
start_cluster || { fail "start a Slurm cluster"; finish; }
ok "a one-node Slurm cluster is up ($(sinfo -h -o '%P %D %G %T'))"

# No KILN_EMU_DEVICES: the task script emulates the GPUs Slurm gives.
unset KILN_EMU_DEVICES
count() { grep -cE "$1" "$T/flat.txt"; }

# ---- The reference: the same selection, unsharded ----
KILN_EMU_DEVICES=4 k run --backend host -j 1 -o "$T/ref" "${SEL[@]}"; expect_rc 0 "unsharded reference run"
ids "$T/ref/report.yaml" >"$T/ref.ids"
nref=$(wc -l <"$T/ref.ids")

# ---- A whole run across four tasks ----
A=$T/root/a
k slurm --backend host -j 1 --tasks 4 --poll 0.3 -o "$A" "${SEL[@]}"
expect_rc 0 "kiln slurm runs the selection and exits with the merged run's status"
expect_out "kiln slurm: job [0-9]+: .* done; tests $nref/$nref done, 0 failed" "the progress line counts tasks and tests"
same_tests "$A/report.yaml" "the merged report holds exactly the unsharded run's $nref test runs"
expect_eq "$(head -1 "$A/status")" good "status"
expect_eq "$(field summary.total)" "$nref" "merged summary total"
expect_eq "$(count '^run\.merged_from\.[0-9]+\.report=')" 4 "four shards merged"
xmllint --noout "$A/junit.xml" 2>/dev/null && ok "junit.xml is well-formed XML" || fail "junit.xml"
grep -q '<html' "$A/report.html" && ok "report.html written" || fail "no report.html"
expect_match "$(cat "$A/diff.txt")" "no earlier good run" "the first run has no base"

# Each task saw exactly the GPU Slurm gave it: the task's SLURM_JOB_GPUS is
# the shard's one device, and every test ran on it.
gpus=""
for k in 1 2 3 4; do
  s=$A/shards/1-$k
  g=$(sed -nE 's/.* gpus=([0-9,]*).*/\1/p' "$s/task")
  flat "$s/report.yaml"
  devs=$(count '^devices\.[0-9]+\.physical=')
  phys=$(field devices.0.physical)
  # (A test that needs more devices than the task has is a skip on none.)
  other=$(grep -E '^tests\.[0-9]+\.device=' "$T/flat.txt" | grep -vcE "=($g|null|)\$")
  if [ -n "$g" ] && [ "$devs" = 1 ] && [ "$phys" = "$g" ] && [ "$other" = 0 ]; then
    ok "task $k: Slurm gave GPU $g; kiln saw 1 device (physical $phys), every test ran on it"
  else
    fail "task $k: Slurm gave GPU '$g'; kiln saw $devs device(s), physical $phys; $other tests elsewhere"
  fi
  expect_eq "$(field run.shard.method)/$(field run.shard.source)" hash/slurm "task $k: shard of the hash plan, from the array"
  gpus="$gpus $g"
done

# ---- A second run: balanced by the first's times; a task killed ----
B=$T/root/b
KILN_EMU_INIT_MS=400 k slurm --backend host -j 1 --warm 0 --tasks 4 --no-wait -o "$B" "${SEL[@]}"
expect_rc 0 "kiln slurm --no-wait submits and returns"
expect_match "$(head -1 "$B/slurm/plan-1")" "method=durations durations=$A/report.yaml" \
  "the plan is balanced by the newest earlier run's times"
array=$(sed -nE 's/^round n=1 .*array=([0-9]+).*/\1/p' "$B/slurm/state")
for i in $(seq 300); do grep -qs '^run ' "$B/shards/1-2/journal" && break; sleep 0.1; done
grep -qs '^run ' "$B/shards/1-2/journal" || fail "task 1 finished no test in 30 s"
scancel "${array}_1"
k slurm --follow "$B" --poll 0.3
expect_rc 1 "a run with a cancelled task exits 1"
expect_out "lost with Slurm task ${array}_1 \(CANCELLED on $SLURM_HOST\)" "the summary names the task, its state and node"
expect_eq "$(head -1 "$B/status")" lost "status"
same_tests "$B/report.yaml" "no test run is missing: the cancelled task's are there as lost"
nlost=$(field summary.lost)
expect_match "$nlost" '^[1-9]' "the cancelled task's tests are lost"
bad=0
for i in $(grep -E '^tests\.[0-9]+\.outcome=lost$' "$T/flat.txt" | sed -E 's/^tests\.([0-9]+)\..*/\1/'); do
  [ "$(field tests.$i.lost.by)/$(field tests.$i.lost.state)/$(field tests.$i.lost.job)/$(field tests.$i.lost.node)" = \
    "slurm/CANCELLED/${array}_1/$SLURM_HOST" ] || bad=$((bad + 1))
done
expect_eq "$bad" 0 "every lost test says slurm, CANCELLED, ${array}_1, $SLURM_HOST"
k report junit "$B/report.yaml"
expect_out 'type="lost"' "JUnit reports lost tests as errors of type lost"

k slurm --resume "$B" --poll 0.3
status=$(head -1 "$B/status")
expect_eq "$status" good "after --resume every test has a result, and the rerun tests are no regression"
expect_rc 0 "kiln slurm --resume exits with the run's status"
expect_match "$(grep -c 'error growth' "$B/diff.txt")" '^0$' "no error growth against run a"
expect_eq "$(grep -E '^tests\.[0-9]+\.seed=' "$T/flat.txt" | cut -d= -f2 | sort -u | wc -l)" 1 \
  "every test of both rounds ran with one seed"
same_tests "$B/report.yaml" "the resumed run holds exactly the unsharded run's test runs"
expect_eq "$(field summary.lost)/$(field summary.fail)" 0/0 "nothing lost or failed after --resume"
expect_match "$(grep -E '^run\.merged_from\.[0-9]+\.round=2$' "$T/flat.txt" | wc -l)" '^[1-9]' \
  "the resumed round's shards are among the merged reports"
expect_eq "$(grep -c '^round ' "$B/slurm/state")" 2 "two rounds in the run's state"

# ---- scancel's SIGTERM reaches a task whose test is past its result ----
# The test's process lingers after its result (a --wrap that sleeps); the
# cancel signals it and the task's kiln: the result that arrived stands,
# with a note, and the run is good.
cat >"$T/linger" <<'EOF2'
#!/usr/bin/env bash
"$@"; rc=$?
touch "$MARK"; sleep 30; exit $rc
EOF2
chmod +x "$T/linger"
W=$T/root/w
MARK=$T/w.mark k slurm --backend host -j 1 --tasks 1 --no-wait --wrap "$T/linger" -o "$W" faults/pass
for i in $(seq 600); do [ -e "$T/w.mark" ] && break; sleep 0.1; done
[ -e "$T/w.mark" ] && ok "the task's test is past its result" || fail "the task's test never ended"
sleep 0.3
scancel "$(sed -nE 's/^round n=1 .*array=([0-9]+).*/\1/p' "$W/slurm/state")"
k slurm --follow "$W" --poll 0.3
flat "$W/report.yaml"
expect_eq "$(tfield faults/pass outcome)" pass "scancel after the test's result: its result stands (not a crash)"
grep -q "kiln was stopped by SIGTERM after the test's result arrived" "$W/report.yaml" &&
  ok "...with a note that the task's kiln was stopped" || fail "no note that the task's kiln was stopped"
expect_eq "$(head -1 "$W/status")" good "...and the run is good"

# ---- A GoogleTest binary and a manifest, spread over the cluster ----
if [ -n "${KILN_GTEST:-}" ]; then
  SEL3=('Zeros/*' 'Pow2/Sizes.PowerOfTwo/0' 'Environment.UnderKiln' pysuite/passes pysuite/cpu_only)
  KILN_EMU_DEVICES=4 k run --backend host -j 1 -o "$T/ref3" --gtest "$KILN_GTEST" --manifest "$KILN_MANIFEST" -- "${SEL3[@]}"
  ids "$T/ref3/report.yaml" >"$T/ref3.ids"
  G=$T/root/g
  k slurm --backend host -j 1 --tasks 3 --poll 0.3 -o "$G" --gtest "$KILN_GTEST" \
    --manifest "$KILN_MANIFEST" -- "${SEL3[@]}"
  expect_rc 0 "kiln slurm --gtest --manifest on the cluster"
  expect_eq "$(head -1 "$G/status")" good "status"
  ids "$G/report.yaml" >"$T/g.ids"
  cmp -s "$T/ref3.ids" "$T/g.ids" && ok "the merged report holds the GoogleTest and manifest tests of kiln run" ||
    { fail "merged third-party tests differ"; diff "$T/ref3.ids" "$T/g.ids" | head; }
else
  fail "no GoogleTest sample (KILN_GTEST)"
fi

# ---- A drained node: why the tasks pend, and what the lost tests keep ----
scontrol update nodename="$SLURM_HOST" state=drain reason=kiln-test
D=$T/root/d
k slurm --backend host -j 1 --tasks 2 --no-wait -o "$D" "${SEL[@]}"
"$KILN" slurm --follow "$D" --poll 0.3 >"$T/follow.out" 2>&1 &
fpid=$!
for i in $(seq 100); do grep -q 'pending (' "$T/follow.out" && break; sleep 0.2; done
scancel $(sed -nE 's/^round n=1 .*array=([0-9]+) merge=([0-9]+).*/\1 \2/p' "$D/slurm/state")
wait $fpid
expect_eq "$?" 1 "a run whose tasks never started exits 1 (lost)"
cat "$T/follow.out"
grep -qE '2 pending \((ReqNodeNotAvail|Nodes_required|Resources)' "$T/follow.out" &&
  ok "the follow line gives squeue's reason for the pending tasks" || fail "no reason on the follow line"
grep -q 'merge FAILED' "$T/follow.out" && fail "the follow line says merge FAILED" || ok "no merge FAILED"
flat "$D/report.yaml"
expect_match "$(field tests.0.lost.state)/$(field tests.0.lost.reason)" '^(PENDING|CANCELLED)/[A-Za-z]' \
  "a lost test keeps its task's state and squeue's reason"
scontrol update nodename="$SLURM_HOST" state=resume

# ---- Nothing of the cluster is left ----
pids="$CLUSTER_NS $CLUSTER_INIT $CLUSTER_PIDS"
stop_cluster
left=""
for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
[ -z "$left" ] && ok "the cluster's daemons and namespace are gone" || fail "left running:$left"
expect_no_runners "after the cluster stopped"
finish
