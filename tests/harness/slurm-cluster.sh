# A one-node Slurm cluster of a test's own (sourced by slurm.sh): config,
# state, spool and logs under $T/cluster, its own ports, auth/none, GRES
# `gpu` with four character devices standing in for GPUs (Slurm refuses
# plain files). Both daemons run in a PID namespace of their own, so that
# whatever the cluster starts (slurmstepd, the jobs' kiln) dies with it:
# stop_cluster ends the daemons by their pids, then the namespace's first
# process, and with it every process left inside. Needs root.

# The host's short name, which slurmd matches against NodeName.
SLURM_HOST=$(hostname -s)

free_port() {
  local p
  for p in $(shuf -i 20000-60000 -n 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  return 1
}

write_config() {  # write_config DIR
  local c=$1 ctl_port node_port
  ctl_port=$(free_port) && node_port=$(free_port) || return 1
  mkdir -p "$c/state" "$c/spool" "$c/log" "$c/dev"
  for i in 0 1 2 3; do mknod "$c/dev/gpu$i" c 1 3 || return 1; done
  cat >"$c/slurm.conf" <<EOF
ClusterName=kilntest
SlurmctldHost=$SLURM_HOST(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$node_port
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$c/state
SlurmdSpoolDir=$c/spool
SlurmctldPidFile=$c/slurmctld.pid
SlurmdPidFile=$c/slurmd.pid
SlurmctldLogFile=$c/log/slurmctld.log
SlurmdLogFile=$c/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=600
KillWait=10
SlurmdParameters=config_overrides
NodeName=$SLURM_HOST NodeAddr=127.0.0.1 CPUs=4 RealMemory=2000 Gres=gpu:4 State=UNKNOWN
PartitionName=debug Nodes=$SLURM_HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
  echo "NodeName=$SLURM_HOST Name=gpu File=$c/dev/gpu[0-3]" >"$c/gres.conf"
  # "disabled" makes slurmd fail to start; v1 is only read, nothing mounted.
  echo "CgroupPlugin=cgroup/v1" >"$c/cgroup.conf"
}

# Children of a process, by its pid (the kernel's list ends in a space).
children() { echo $(cat "/proc/$1/task/$1/children" 2>/dev/null); }

start_cluster() {  # sets CLUSTER_NS (unshare), CLUSTER_INIT, CLUSTER_PIDS
  local c=$T/cluster
  write_config "$c" || return 1
  export SLURM_CONF=$c/slurm.conf
  unshare --pid --fork --mount-proc --kill-child -- bash -c \
    'slurmctld -D -c -f "$1" & slurmd -D -f "$1" & wait' _ "$SLURM_CONF" \
    >"$c/log/daemons.out" 2>&1 &
  CLUSTER_NS=$!
  local i state=""
  for i in $(seq 100); do
    CLUSTER_INIT=$(children "$CLUSTER_NS")
    [ -n "$CLUSTER_INIT" ] && CLUSTER_PIDS=$(children "$CLUSTER_INIT")
    state=$(sinfo -h -o %T 2>/dev/null)
    [ "$state" = idle ] && [ "$(echo $CLUSTER_PIDS | wc -w)" -ge 2 ] && return 0
    sleep 0.3
  done
  echo "the cluster did not come up (node state '$state'); daemons said:"
  tail -20 "$c/log/daemons.out"
  return 1
}

stop_cluster() {
  [ -n "${CLUSTER_NS:-}" ] || return 0
  scancel --quiet $(squeue -h -o %A 2>/dev/null) 2>/dev/null
  local p i
  for p in ${CLUSTER_PIDS:-}; do kill -TERM "$p" 2>/dev/null; done
  for i in $(seq 50); do
    local alive=""
    for p in ${CLUSTER_PIDS:-}; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ -z "$alive" ] && break
    sleep 0.2
  done
  # The namespace's first process: when it dies, the kernel kills every
  # process left in the namespace (job steps included).
  [ -n "${CLUSTER_INIT:-}" ] && kill -KILL "$CLUSTER_INIT" 2>/dev/null
  kill -KILL "$CLUSTER_NS" 2>/dev/null
  wait "$CLUSTER_NS" 2>/dev/null
  CLUSTER_NS=
}
