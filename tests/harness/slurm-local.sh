#!/usr/bin/env bash
# kiln slurm without a cluster (runs anywhere; tests/harness/slurm.sh has
# the real one):
#   - GPUs from Slurm: SLURM_JOB_GPUS / SLURM_STEP_GPUS narrow the devices,
#     a renumbered mask keeps the node's GPU numbers for the tokens, a bad
#     list is refused;
#   - --dry-run: the plan and the job scripts with every sbatch option, a
#     deterministic hash plan, and a plan balanced by an earlier run's times;
#   - the job scripts run by hand in place of Slurm (sbatch, sacct and
#     scontrol are stand-ins on PATH): a task killed mid-run (NODE_FAIL in
#     sacct), one that never started (no record), one whose state only
#     scontrol knows (TIMEOUT) -- their tests lost with state, job and node,
#     none missing; --resume plans just those, and the merge of both rounds
#     holds exactly the unsharded run's tests.
. "$(dirname "$0")/slurm-lib.sh"
. "$(dirname "$0")/lib.sh"
export KILN_EMU_DEVICES=4

# ---- GPUs from Slurm --------------------------------------------------------------
SLURM_JOB_GPUS=2 k devices --backend host
expect_out "devices from SLURM_JOB_GPUS=2" "kiln devices says where its devices came from"
expect_out "^device 0 \(physical 2, visible as 2\)" "SLURM_JOB_GPUS=2: one device, the node's GPU 2"
[ "$(grep -c '^device ' "$T/out.txt")" = 1 ] && ok "and no other" || fail "more devices than Slurm gave"
SLURM_STEP_GPUS=3 SLURM_JOB_GPUS=1,3 k devices --backend host
expect_out "^device 0 \(physical 3" "a step's GPUs (SLURM_STEP_GPUS) win over the job's"
KILN_EMU_VISIBLE_DEVICES=0,1 SLURM_JOB_GPUS=2,3 k devices --backend host
expect_out "^device 1 \(physical 3, visible as 1\)" \
  "a mask Slurm renumbered from 0 keeps the node's GPU numbers for the tokens"
SLURM_JOB_GPUS=0-1,3 k devices --backend host
expect_out "^device 2 \(physical 3" "GPU ranges (0-1,3)"
SLURM_JOB_GPUS=gpu0 k devices --backend host
expect_rc 3 "a GPU list that does not parse"
expect_out "SLURM_JOB_GPUS=gpu0" "the error names the variable and its value"
SLURM_JOB_GPUS=1,3 k run --backend host -j 2 -o "$T/bound" engine
expect_rc 0 "kiln run inside a job given GPUs 1 and 3"
flat "$T/bound/report.yaml"
expect_eq "$(grep -E '^devices\.[0-9]+\.physical=' "$T/flat.txt" | cut -d= -f2 | paste -sd,)" 1,3 \
  "the run's devices are the job's GPUs"
expect_eq "$(grep -E '^tests\.[0-9]+\.device=' "$T/flat.txt" | cut -d= -f2 | grep -cvE '^(1|3)$')" 0 \
  "every test ran on one of them"

# ---- --dry-run ---------------------------------------------------------------------
mkdir -p "$T/cwd" && cd "$T/cwd"
k slurm --dry-run --backend host --tasks 3 --partition gpu --account proj --time 30:00 \
  --merge-time 5:00 --gpus-per-task 2 --sbatch=--qos=high --repeat 2 -j 1 -- "${SEL[@]}"
expect_rc 0 "kiln slurm --dry-run"
for want in '^#SBATCH --array=0-2$' '^#SBATCH --gres=gpu:2$' '^#SBATCH --partition=gpu$' \
    '^#SBATCH --account=proj$' '^#SBATCH --time=30:00$' '^#SBATCH --time=5:00$' \
    '^# sbatch --parsable --qos=high .*/slurm/array-1.sh$' \
    "^# sbatch --parsable '--dependency=afterany:<array job>' --kill-on-invalid-dep=yes --qos=high .*/slurm/merge-1.sh$" \
    '^exec .*/kiln run --out "\$dir" --shard-plan .*/slurm/plan-1 --runner-dir .* --backend host --repeat 2 --jobs 1 --seed [0-9]+ -- engine rope$' \
    '^/.*/kiln slurm --merge .*/reports/slurm/[0-9T]+Z$' \
    '^kiln slurm: 3 shards of 31 tests, 2 runs each \(hash partition: no earlier report\)'; do
  expect_out "$want" "dry run prints /$want/"
done
[ ! -e "$T/cwd/reports" ] && ok "a dry run writes nothing" || fail "a dry run wrote $T/cwd/reports"
grep '^  shard ' "$T/out.txt" >"$T/plan1"
k slurm --dry-run --backend host --tasks 3 "${SEL[@]}"
grep '^  shard ' "$T/out.txt" >"$T/plan2"
cmp -s "$T/plan1" "$T/plan2" && ok "the hash plan is the same every time" || fail "plans differ"

k run --backend host -j 1 -o "$T/old" "${SEL[@]}"; expect_rc 0 "a run to balance by"
k slurm --dry-run --backend host --tasks 3 --shard-durations "$T/old/report.yaml" "${SEL[@]}"
expect_out "balanced by the times in $T/old/report.yaml" "--shard-durations balances the plan"
flat "$T/old/report.yaml"
longest=$(grep -E '^tests\.[0-9]+\.times\.wall_ms=' "$T/flat.txt" | cut -d= -f2 | sort -g | tail -1)
spread=$(sed -nE 's/^  shard [0-9]+: [0-9]+ tests?, ([0-9.]+) s by the old times$/\1/p' "$T/out.txt" |
         sort -g | sed -n '1p;$p' | paste -sd' ' | awk '{print ($2 - $1) * 1000}')
awk -v s="$spread" -v l="$longest" 'BEGIN { exit !(s != "" && s <= l + 100) }' &&
  ok "balanced shards differ by $spread ms, within the longest test ($longest ms)" ||
  fail "shards differ by '$spread' ms; the longest test takes $longest ms"

# ---- The job scripts, run by hand in place of Slurm ---------------------------------
FAKE=$T/fake
mkdir -p "$FAKE/bin"
cat >"$FAKE/bin/sbatch" <<EOF
#!/bin/bash
n=\$(cat "$FAKE/next" 2>/dev/null || echo 100)
echo \$((n + 1)) >"$FAKE/next"
echo "\$*" >>"$FAKE/sbatch.log"
echo "sbatch: warning: a stand-in for sbatch" >&2
echo "\$n"
EOF
cat >"$FAKE/bin/sacct" <<EOF
#!/bin/bash
[ -f "$FAKE/sacct.txt" ] || { echo "sacct: error: Slurm accounting storage is disabled" >&2; exit 1; }
cat "$FAKE/sacct.txt"
EOF
cat >"$FAKE/bin/scontrol" <<EOF
#!/bin/bash
cat "$FAKE/scontrol.txt" 2>/dev/null
EOF
# squeue answers from $FAKE/squeue-JOB.txt while it exists, else has
# forgotten the job.
cat >"$FAKE/bin/squeue" <<EOF
#!/bin/bash
id=""
while [ \$# -gt 0 ]; do [ "\$1" = -j ] && id=\$2; shift; done
[ -f "$FAKE/squeue-\$id.txt" ] && { cat "$FAKE/squeue-\$id.txt"; exit 0; }
echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1
EOF
printf '#!/bin/bash\necho "$*" >>"%s/scancel.log"\n' "$FAKE" >"$FAKE/bin/scancel"
chmod +x "$FAKE"/bin/*
export PATH=$FAKE/bin:$PATH

k run --backend host -j 1 -o "$T/ref" "${SEL[@]}"; ids "$T/ref/report.yaml" >"$T/ref.ids"
R=$T/root/r
k slurm --backend host -j 1 --tasks 3 --no-wait -o "$R" "${SEL[@]}"
expect_rc 0 "kiln slurm --no-wait (a stand-in sbatch)"
expect_out "round 1: array job 100 \(3 tasks\), merge job 101" "it names the jobs"
expect_eq "$(sed -n 2p "$FAKE/sbatch.log")" \
  "--parsable --dependency=afterany:100 --kill-on-invalid-dep=yes $R/slurm/merge-1.sh" \
  "the merge job depends on the array job"
slurm_env() {  # slurm_env ROUND TASK COUNT: what Slurm gives an array task
  echo SLURM_ARRAY_JOB_ID=$((100 + 2 * ($1 - 1))) SLURM_ARRAY_TASK_ID=$2 \
    SLURM_ARRAY_TASK_COUNT=$3 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=$(($3 - 1)) \
    SLURM_ARRAY_TASK_STEP=1 SLURM_JOB_GPUS=$2 SLURMD_NODENAME=node$2
}
task() { env $(slurm_env "$@") bash "$R/slurm/array-$1.sh"; }
task 1 0 3 >"$T/task0.out" 2>&1 && ok "task 0 ran its shard" || fail "task 0: $(tail -3 "$T/task0.out")"
# Task 1 dies mid-run (its node fails): the script execs kiln, so $! is kiln.
# Task 2 never starts.
env $(slurm_env 1 1 3) KILN_EMU_INIT_MS=300 bash "$R/slurm/array-1.sh" >"$T/task1.out" 2>&1 &
pid=$!
for i in $(seq 200); do grep -qs '^run ' "$R/shards/1-2/journal" && break; sleep 0.05; done
kill -KILL $pid; wait $pid 2>/dev/null
grep -qs '^run ' "$R/shards/1-2/journal" && ok "task 1 finished a test before it died" ||
  fail "task 1 finished nothing"
echo "100_1|NODE_FAIL|node1" >"$FAKE/sacct.txt"
k slurm --merge "$R"
expect_rc 1 "the merge of a run with dead tasks exits 1"
expect_eq "$(head -1 "$R/status")" lost "status"
same_tests "$R/report.yaml" "every test of the selection is in the merged report"
lost_of() {  # lost_of JOB: by/state/node of each lost test of that task, uniq'd
  for i in $(grep -E "^tests\.[0-9]+\.lost\.job=$1\$" "$T/flat.txt" | sed -E 's/^tests\.([0-9]+)\..*/\1/'); do
    echo "$(field tests.$i.outcome) $(field tests.$i.lost.by) $(field tests.$i.lost.state) $(field tests.$i.lost.node)"
  done | sort -u
}
expect_eq "$(lost_of 100_1)" "lost slurm NODE_FAIL node1" "task 1's tests: lost, NODE_FAIL on node1 (sacct)"
expect_eq "$(lost_of 100_2)" "lost slurm null null" "task 2's tests: lost, never started, no record"
n2=$(grep -c ' shard=3 ' "$R/slurm/plan-1")
expect_eq "$(grep -cE '^tests\.[0-9]+\.lost\.job=100_2$' "$T/flat.txt")" "$n2" "all $n2 tests of shard 3 are lost"
i=$(grep -E '^tests\.[0-9]+\.lost\.job=100_2$' "$T/flat.txt" | head -1 | sed -E 's/^tests\.([0-9]+)\..*/\1/')
expect_match "$(field tests.$i.message)" "never started" "a task that never ran says so"
passed1=$(grep -E '^tests\.[0-9]+\.outcome=pass$' "$T/flat.txt" | wc -l)
expect_match "$passed1" '^[1-9]' "what the tasks finished is kept ($passed1 passed)"
# Without accounting, scontrol knows the state (for MinJobAge).
rm "$FAKE/sacct.txt"
echo "JobId=7 ArrayJobId=100 ArrayTaskId=1 JobName=kiln JobState=TIMEOUT Reason=TimeLimit ReqNodeList=(null) NodeList=node1 BatchHost=node1" \
  >"$FAKE/scontrol.txt"
k slurm --merge "$R"
flat "$R/report.yaml"
expect_eq "$(lost_of 100_1)" "lost slurm TIMEOUT node1" "from scontrol when sacct has no accounting"

k slurm --resume "$R" --no-wait
expect_rc 0 "kiln slurm --resume --no-wait"
nlost=$(grep -c '^test ' "$R/slurm/plan-2")
expect_eq "$nlost" "$(grep -c 'outcome=lost' <(grep -E '^tests\.[0-9]+\.outcome=' "$T/flat.txt"))" \
  "the resume plans exactly the lost tests"
tasks2=$(sed -nE 's/^plan .*count=([0-9]+).*/\1/p' "$R/slurm/plan-2")
for t in $(seq 0 $((tasks2 - 1))); do task 2 "$t" "$tasks2" >"$T/r2-$t.out" 2>&1 || fail "round 2 task $t"; done
k slurm --merge "$R"
expect_rc 0 "the merge after the resume"
expect_eq "$(head -1 "$R/status")" good "status"
same_tests "$R/report.yaml" "after --resume: exactly the unsharded run's tests, once each"
expect_eq "$(field summary.lost)" 0 "nothing lost"
expect_eq "$(grep -cE '^run\.merged_from\.[0-9]+\.round=2$' "$T/flat.txt")" "$tasks2" \
  "the merged report names the resumed round's $tasks2 shards"
k slurm --follow "$R" --poll 0.1
expect_rc 0 "--follow of a merged run: its status"

# ---- One run seed: every task, every round, and the next run ------------------------
seed=$(grep -A1 -x 'arg value=--seed' "$R/slurm/state" | sed -n 2p | cut -d= -f2)
expect_match "$seed" '^[0-9]+$' "the run's state holds the seed every task is given"
expect_eq "$(grep -E '^tests\.[0-9]+\.seed=' "$T/flat.txt" | cut -d= -f2 | sort -u)" "$seed" \
  "every test of both rounds ran with the run's seed (a rerun draws the same inputs)"
k slurm --dry-run --backend host --tasks 3 -o "$T/root/next" "${SEL[@]}"
expect_out "--seed $seed --" "the next run takes the seed of its diff's base (the last good run)"
k slurm --dry-run --backend host --tasks 3 --seed 7 -o "$T/root/next" "${SEL[@]}"
expect_out "--seed 7 -- engine rope$" "--seed wins"

# ---- Third-party tests; a task given no emulated devices; tasks that test nothing -----
[ -n "${KILN_GTEST:-}" ] || fail "no GoogleTest sample (KILN_GTEST)"
unset KILN_EMU_DEVICES
# Tests of the sample that pass quickly (it also has hangs and crashes).
SEL3=('Zeros/*' 'Pow2/Sizes.PowerOfTwo/0' 'Environment.UnderKiln' pysuite/passes pysuite/cpu_only)
k run --backend host -j 1 -o "$T/ref3" --gtest "$KILN_GTEST" --manifest "$KILN_MANIFEST" -- "${SEL3[@]}"
expect_rc 0 "the third-party tests, unsharded"
ids "$T/ref3/report.yaml" >"$T/ref3.ids"
S=$T/root/s
k slurm --backend host -j 1 --tasks 2 --no-wait -o "$S" --gtest "$KILN_GTEST" --manifest "$KILN_MANIFEST" \
  -- "${SEL3[@]}"
expect_rc 0 "kiln slurm --gtest --manifest"
grep -qF -- " --gtest $KILN_GTEST --manifest $(realpath "$KILN_MANIFEST") " "$S/slurm/array-1.sh" &&
  ok "every task lists the GoogleTest binary and the manifest" ||
  fail "the array script does not pass --gtest and --manifest: $(grep '^exec' "$S/slurm/array-1.sh")"
sjob=$(sed -nE 's/^round n=1 .*array=([0-9]+).*/\1/p' "$S/slurm/state")
stask() {  # stask TASK [ENV...]: task TASK of run S as Slurm would start it
  local t=$1
  shift
  env $(slurm_env 1 "$t" 2) SLURM_ARRAY_JOB_ID=$sjob "$@" bash "$S/slurm/array-1.sh" >"$T/s$t.out" 2>&1
}
stask 0
expect_eq "$?" 0 "task 0 (GPU 0) ran its shard"
# Task 1 gets the node's GPU 1; one emulated device has no GPU 1.
stask 1 KILN_EMU_DEVICES=1
expect_eq "$?" 3 "task 1 with KILN_EMU_DEVICES=1 and GPU 1 tested nothing (exit 3)"
bash "$S/slurm/merge-1.sh" >"$T/merge.out" 2>&1
expect_eq "$?" 3 "the merge job of a run with a task that tested nothing exits 3"
expect_eq "$(head -1 "$S/status")" nothing-tested "status"
flat "$S/report.yaml"
expect_match "$(field run.nothing_tested)" "^1 of 2 shards tested nothing: shard 1-2: the host runner found no device" \
  "the merged report says which shard tested nothing and why"
k slurm --follow "$S" --poll 0.1
expect_rc 3 "kiln slurm exits 3, not 0, when a task tested nothing"
expect_out "nothing tested: 1 of 2 shards" "and says so"
stask 1
expect_eq "$?" 0 "task 1 (GPU 1) with no KILN_EMU_DEVICES: the script emulates the node's GPUs"
flat "$S/shards/1-2/report.yaml"
expect_eq "$(field devices.0.physical)" 1 "task 1 ran on the node's GPU 1"
bash "$S/slurm/merge-1.sh" >"$T/merge.out" 2>&1
expect_eq "$?" 0 "the merge job"
expect_eq "$(head -1 "$S/status")" good "status once every task tested"
ids "$S/report.yaml" >"$T/s.ids"
cmp -s "$T/ref3.ids" "$T/s.ids" && ok "the merged report holds the GoogleTest and manifest tests of kiln run" ||
  { fail "merged third-party tests differ"; diff "$T/ref3.ids" "$T/s.ids" | head; }

# A shard the plan filled with a test that skips itself, beside a shard that
# tested: the run tested something (a resume of a few lost tests can plan
# such a shard). Every run skipped: the run tested nothing.
for what in mixed skips; do
  Q=$T/root/q-$what
  sel=(faults/skip faults/pass) n=2; [ $what = skips ] && sel=(faults/skip) n=1
  k slurm --backend host -j 1 --tasks $n --no-wait -o "$Q" -- "${sel[@]}"
  qjob=$(sed -nE 's/^round n=1 .*array=([0-9]+).*/\1/p' "$Q/slurm/state")
  for t in $(seq 0 $((n - 1))); do
    env $(slurm_env 1 "$t" $n) SLURM_ARRAY_JOB_ID=$qjob KILN_EMU_DEVICES=2 \
      bash "$Q/slurm/array-1.sh" >"$T/q$t.out" 2>&1
  done
  bash "$Q/slurm/merge-1.sh" >"$T/merge.out" 2>&1
  qrc=$?
  if [ $what = mixed ]; then
    expect_eq "$(grep -l 'outcome: skip' "$Q"/shards/1-*/report.yaml | wc -l)/$qrc/$(head -1 "$Q/status")" \
      1/0/good "a shard whose one test skipped itself, beside one that passed: merge exits 0, status good"
  else
    expect_eq "$qrc/$(head -1 "$Q/status")" 3/nothing-tested "every run skipped: merge exits 3, nothing-tested"
  fi
done

# A pytest suite goes to every task the same way.
for p in "${KILN_PYTHON:-python3}" python3 /usr/bin/python3; do
  if "$p" -c 'import pytest' 2>/dev/null; then export KILN_PYTHON=$p; break; fi
done
kh_python_for_engine
cp -r "$KILN_SOURCE/examples/pytest-suite" "$T/pysuite"
k slurm --dry-run --backend host --tasks 2 -o "$T/root/py" --pytest "$T/pysuite"
expect_rc 0 "kiln slurm --pytest --dry-run"
expect_out "^exec .* --pytest $T/pysuite --seed [0-9]+ --\$" "every task lists the pytest suite"

# ---- Pending tasks: Slurm's reason on the follow line and on the lost records ---------
export KILN_EMU_DEVICES=4
P=$T/root/p
k slurm --backend host -j 1 --tasks 2 --no-wait -o "$P" "${SEL[@]}"
pjob=$(sed -nE 's/^round n=1 .*array=([0-9]+).*/\1/p' "$P/slurm/state")
printf '0|RUNNING|node0|None\n1|PENDING||ReqNodeNotAvail, UnavailableNodes:node1\n' >"$FAKE/squeue-$pjob.txt"
echo "0|PENDING||Dependency" >"$FAKE/squeue-$((pjob + 1)).txt"
# Task 0 is stopped by SIGTERM mid-test (scancel): its tests in flight are lost.
env $(slurm_env 1 0 2) SLURM_ARRAY_JOB_ID=$pjob KILN_EMU_INIT_MS=400 bash "$P/slurm/array-1.sh" \
  >"$T/p0.out" 2>&1 &
ppid=$!
for i in $(seq 200); do grep -qs '^run ' "$P/shards/1-1/journal" && break; sleep 0.05; done
kill -TERM $ppid; wait $ppid
# A test whose result was lost, as the journal of a kiln stopped mid-test
# records it.
grep -m1 '^run .*outcome=pass' "$P/shards/1-1/journal" | sed 's/outcome=pass/outcome=lost/' \
  >>"$P/shards/1-1/journal"
rm -f "$FAKE/scontrol.txt"
"$KILN" slurm --follow "$P" --poll 0.1 >"$T/follow.out" 2>&1 &
fpid=$!
for i in $(seq 100); do grep -q 'pending (ReqNodeNotAvail' "$T/follow.out" && break; sleep 0.1; done
# The pending task is cancelled; a cluster without accounting forgets it.
rm "$FAKE/squeue-$pjob.txt" "$FAKE/squeue-$((pjob + 1)).txt"
wait $fpid
expect_eq "$?" 1 "following a run with lost tests exits 1"
cat "$T/follow.out"
grep -qE "job $pjob: 1 pending \(ReqNodeNotAvail, UnavailableNodes:node1\), 1 running" "$T/follow.out" &&
  ok "the follow line says why Slurm holds the pending task" || fail "no pending reason on the follow line"
nl0=$(grep -c 'outcome=lost' "$P/shards/1-1/journal")
expect_match "$nl0" '^[1-9]' "task 0's journal has lost tests ($nl0)"
# The test in flight at the SIGTERM is lost, or keeps the result that had
# arrived (an ASan runner's exit is slow): never failed. Failed is what
# the journals say failed; the lost ones are counted apart.
expect_eq "$(grep -cE 'outcome=(fail|crash|timeout|error|leak)' "$P/shards/1-1/journal")" 0 \
  "no test of the task stopped mid-run failed"
nf0=$(cat "$P"/shards/*/journal | grep -cE 'outcome=(fail|crash|timeout|error|leak)')
grep -qE "tests [0-9]+/[0-9]+ done, $nf0 failed, $nl0 lost;" "$T/follow.out" &&
  ok "while following, lost tests are counted as lost, not failed" || fail "lost tests counted as failed"
flat "$P/report.yaml"
i=$(grep -E "^tests\.[0-9]+\.lost\.job=${pjob}_1\$" "$T/flat.txt" | head -1 | sed -E 's/^tests\.([0-9]+)\..*/\1/')
expect_eq "$(field tests.$i.lost.state)/$(field tests.$i.lost.reason)" \
  "PENDING/ReqNodeNotAvail, UnavailableNodes:node1" "the never-started task's lost tests keep its last state and reason"
expect_match "$(field tests.$i.message)" "last saw it PENDING \(ReqNodeNotAvail" "and their message says so"
grep -q "lost with Slurm task ${pjob}_1 (PENDING on no node; held for ReqNodeNotAvail" "$T/follow.out" &&
  ok "the summary names the reason" || fail "the summary does not name the reason"
bash "$P/slurm/merge-1.sh" >"$T/merge.out" 2>&1
expect_eq "$?" 0 "a merge job whose run lost tests ends COMPLETED (exit 0): the verdict is the run's status"
expect_eq "$(head -1 "$P/status")" lost "status"
# ---- A requeued task: its journal starts again --------------------------------------
# Slurm requeues a task whose node went DOWN (or on `scontrol requeue`): its
# kiln runs the shard again in the same folder and starts the journal anew.
# A follower that watched the first run counts the second from its start:
# never more tests than the run has, nothing of the first run's (before:
# "tests 19/13 done, 0 failed, 3 lost" while the report was right).
Q=$T/root/requeue
k slurm --backend host -j 1 --warm 0 --tasks 1 --no-wait -o "$Q" engine
read -r qjob qmerge < <(sed -nE 's/^round n=1 .*array=([0-9]+) merge=([0-9]+).*/\1 \2/p' "$Q/slurm/state")
qtotal=$(grep -c '^test ' "$Q/slurm/plan-1")
echo "0|RUNNING|node0|None" >"$FAKE/squeue-$qjob.txt"
echo "0|PENDING||Dependency" >"$FAKE/squeue-$qmerge.txt"
# (The script execs kiln, so $! is kiln.)
env $(slurm_env 1 0 1) SLURM_ARRAY_JOB_ID=$qjob KILN_EMU_INIT_MS=300 bash "$Q/slurm/array-1.sh" \
  >"$T/rq1.out" 2>&1 &
qp=$!
for i in $(seq 300); do
  n=$(grep -c '^run ' "$Q/shards/1-1/journal" 2>/dev/null)
  [ "${n:-0}" -ge 3 ] && break
  sleep 0.05
done
"$KILN" slurm --follow "$Q" --poll 0.1 >"$T/rqf.out" 2>&1 &
fpid=$!
for i in $(seq 100); do grep -qE 'tests [1-9][0-9]*/' "$T/rqf.out" && break; sleep 0.1; done
kill -TERM $qp; wait $qp          # the requeue ends the first run, mid-test
for i in $(seq 100); do grep -q ' lost;' "$T/rqf.out" && break; sleep 0.1; done
echo "0|PENDING||BeginTime" >"$FAKE/squeue-$qjob.txt"
sleep 0.3
echo "0|RUNNING|node0|None" >"$FAKE/squeue-$qjob.txt"
env $(slurm_env 1 0 1) SLURM_ARRAY_JOB_ID=$qjob bash "$Q/slurm/array-1.sh" >"$T/rq2.out" 2>&1
expect_eq "$?" 0 "the requeued task's second run"   # the whole shard
sleep 0.5
echo "0|COMPLETED|node0|None" >"$FAKE/squeue-$qjob.txt"
bash "$Q/slurm/merge-1.sh" >"$T/rqm.out" 2>&1
rm "$FAKE/squeue-$qmerge.txt"
wait $fpid
grep -q ' lost;' "$T/rqf.out" && ok "while the first run ran, the follower saw its lost test" ||
  fail "the follower never saw the first run's lost test"
over=$(sed -nE 's/.* tests ([0-9]+)\/([0-9]+) done.*/\1 \2/p' "$T/rqf.out" | awk '$1 > $2' | head -1)
expect_eq "$over" "" "no follow line counts past the run's $qtotal tests"
expect_match "$(grep 'tests [0-9]*/' "$T/rqf.out" | tail -1)" \
  "tests $qtotal/$qtotal done, 0 failed; merge" "the last follow line counts the second run alone"
expect_eq "$(head -1 "$Q/status")" good "the requeued run's status"

# ---- A task killed for memory: its state, and Slurm's reason as such ------------------
O=$T/root/oom
k slurm --backend host -j 1 --tasks 1 --no-wait -o "$O" engine
ojob=$(sed -nE 's/^round n=1 .*array=([0-9]+).*/\1/p' "$O/slurm/state")
env $(slurm_env 1 0 1) SLURM_ARRAY_JOB_ID=$ojob KILN_EMU_INIT_MS=300 bash "$O/slurm/array-1.sh" \
  >"$T/oom.out" 2>&1 &
op=$!
for i in $(seq 200); do grep -qs '^run ' "$O/shards/1-1/journal" && break; sleep 0.05; done
kill -KILL $op; wait $op 2>/dev/null
echo "0|OUT_OF_MEMORY|node0|JobLaunchFailure" >"$FAKE/squeue-$ojob.txt"
k slurm --merge "$O"
expect_rc 1 "the merge of a run whose task was killed for memory"
k slurm --follow "$O" --poll 0.1
expect_out "lost with Slurm task ${ojob}_0 \(OUT_OF_MEMORY on node0; Slurm's reason: JobLaunchFailure\)" \
  "the summary gives the task's state and Slurm's reason as such"
grep -q 'held for' "$T/out.txt" && fail "a task that ran is 'held for' its reason" ||
  ok "a task that ran is not 'held for' anything"
flat "$O/report.yaml"
i=$(grep -E "^tests\.[0-9]+\.lost\.job=${ojob}_0\$" "$T/flat.txt" | head -1 | sed -E 's/^tests\.([0-9]+)\..*/\1/')
expect_match "$(field tests.$i.message)" "on node0 ended OUT_OF_MEMORY \(Slurm's reason: JobLaunchFailure\) before" \
  "a lost test's message says how its task ended"
finish
