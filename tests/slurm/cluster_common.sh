# Sourced by cluster.sh (slurmd on localhost) and netns_cluster.sh (each slurmd a network host):
# what both throw-away clusters share. Both set `dir` (the cluster's directory) and `die` first.

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# write_common_conf NAME CTLD_HOST CTLD_ADDR PORT: slurm.conf without its nodes and partition,
# and mpi.conf (docs/slurm-sandbox.md has the table of why).
write_common_conf() {
  cat >"$dir/slurm.conf" <<CONF
ClusterName=$1
SlurmctldHost=$2($3)
SlurmctldPort=$4
SlurmUser=$(id -un)
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
TmpFS=$dir/tmp/%n
TaskProlog=$dir/task_prolog.sh
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=pmix
JobRequeue=1
ReturnToService=2
MailProg=/bin/true
SchedulerParameters=bf_interval=1,sched_interval=2
SlurmctldTimeout=10
SlurmdTimeout=10
InactiveLimit=0
KillWait=5
MinJobAge=300
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
CONF
  # The ring algorithm for every PMIx fence. Slurm's default (ring for a fence that collects data,
  # tree for one that does not) gave, 3 times in ~100 three-node starts on a loaded Debian 12
  # (Slurm 22.05, Open MPI 4.1), two ranks the release of MPI_Init's last fence while rank 0 still
  # waited in its first: their first message reached rank 0 before its PML was ready, a SIGSEGV
  # inside MPI_Init; ring alone (or tree alone): none in 60. Tree alone is no cure: on Debian 13
  # (Slurm 24.11, Open MPI 5) it crashed rank 0 of `srun -N2 -n3` in 1 of the first 2 starts,
  # twice, where the default and ring ran 40 each without one (docs/slurm-sandbox.md).
  echo "PMIxCollFence=ring" >"$dir/mpi.conf"
}

# write_task_prolog IFACE: each node's own TMPDIR and Open MPI shared-memory directory (the nodes
# share one kernel's /dev/shm and /tmp: the vader segments of two "nodes", named by host name, job
# and local rank, would collide), and the interface Open MPI's TCP transport takes between nodes:
# lo on localhost (Open MPI leaves loopback out by default, and Open MPI 5 finds no eth0 pair it
# trusts to reach "another" host that is this one), eth0 (the veth) between network hosts. The
# directories are set for steps only, not in the batch script: mpirun would forward its value to
# the other node's ranks. (vader is Open MPI 4's name of the shared-memory transport, sm 5's.)
write_task_prolog() {
  cat >"$dir/task_prolog.sh" <<PROLOG
#!/bin/sh
echo "export TMPDIR=$dir/tmp/\$SLURMD_NODENAME"
echo "export OMPI_MCA_btl_tcp_if_include=$1"
if [ -n "\$SLURM_STEP_ID" ]; then
  echo "export OMPI_MCA_btl_vader_backing_directory=$dir/tmp/\$SLURMD_NODENAME"
  echo "export OMPI_MCA_btl_sm_backing_directory=$dir/tmp/\$SLURMD_NODENAME"
fi
exit 0
PROLOG
  chmod 0755 "$dir/task_prolog.sh"
}

start_munge() {
  rm -rf "$dir/munge"; mkdir -p "$dir/munge"; chmod 0755 "$dir/munge"
  mungekey -c -k "$dir/munge/munge.key" -b 1024 2>/dev/null || mungekey -c -k "$dir/munge/munge.key"
  chmod 0600 "$dir/munge/munge.key"
  munged --force -S "$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
}

# Stops the daemon a pid file names (TERM, up to 5 s, then KILL) and removes the file.
stop_pidfile() {
  local file=$1 pid i
  [ -f "$file" ] || return 0
  pid=$(cat "$file")
  if kill "$pid" 2>/dev/null; then
    for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$file"
}
