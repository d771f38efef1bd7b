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
#     job and node, and `kiln slurm --resume` completes the run;
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

count() { grep -cE "$1" "$T/flat.txt"; }

# ---- The reference: the same selection, unsharded ----
k run --backend host -j 1 -o "$T/ref" "${SEL[@]}"; expect_rc 0 "unsharded reference run"
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
expect_match "$status" '^(good|regressed)$' "after --resume every test has a result (status $status)"
want=1
[ "$status" = good ] && want=0
expect_rc "$want" "kiln slurm --resume exits with the run's status"
same_tests "$B/report.yaml" "the resumed run holds exactly the unsharded run's test runs"
expect_eq "$(field summary.lost)/$(field summary.fail)" 0/0 "nothing lost or failed after --resume"
expect_match "$(grep -E '^run\.merged_from\.[0-9]+\.round=2$' "$T/flat.txt" | wc -l)" '^[1-9]' \
  "the resumed round's shards are among the merged reports"
expect_eq "$(grep -c '^round ' "$B/slurm/state")" 2 "two rounds in the run's state"

# ---- Nothing of the cluster is left ----
pids="$CLUSTER_NS $CLUSTER_INIT $CLUSTER_PIDS"
stop_cluster
left=""
for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
[ -z "$left" ] && ok "the cluster's daemons and namespace are gone" || fail "left running:$left"
expect_no_runners "after the cluster stopped"
finish
