#!/usr/bin/env bash
# A throw-away Slurm cluster on localhost: munged + slurmctld + N slurmd (one per fake node), all
# state in one directory, non-default ports. Reusable as a laptop sandbox (docs/slurm-sandbox.md).
#
#   cluster.sh start DIR [NODES]   start it (default 2 nodes); prints `export SLURM_CONF=...`
#   cluster.sh stop DIR            stop exactly the daemons started in DIR (by PID), keep DIR
#   cluster.sh env DIR             print the exports a client needs
#
# Needs root (slurmd runs jobs as their submitting user).
set -euo pipefail

die() { echo "cluster.sh: $*" >&2; exit 1; }
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: cluster.sh start|stop|env DIR [NODES]"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pick_ports() {
  # A base port derived from the directory name, moved on until NODES+1 consecutive ports are free.
  local base=$((20000 + $(printf '%s' "$dir" | cksum | cut -d' ' -f1) % 20000)) n=$1 i ok
  for _ in $(seq 1 50); do
    ok=1
    for i in $(seq 0 "$n"); do port_free $((base + i)) || { ok=0; break; }; done
    [ "$ok" = 1 ] && { echo "$base"; return; }
    base=$((base + n + 1))
  done
  die "no free ports found"
}

write_conf() {
  local nodes=$1 base=$2 host cpus mem i
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 / nodes ))
  cat >"$dir/slurm.conf" <<CONF
ClusterName=cohort-sandbox
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
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
  # Fake nodes share one kernel: give each its own TMPDIR and Open MPI shared-memory directory, or
  # the vader segments of two "nodes" (named by host name, job and local rank, in /dev/shm) collide.
  cat >"$dir/task_prolog.sh" <<PROLOG
#!/bin/sh
echo "export TMPDIR=$dir/tmp/\$SLURMD_NODENAME"
# Every fake node is this host: ranks on two of them reach each other over loopback, which Open
# MPI's TCP transport leaves out by default (Open MPI 5 treats the nodes as remote, and finds no
# interface pair on eth0 that it trusts to reach "another" host).
echo "export OMPI_MCA_btl_tcp_if_include=lo"
# Not in the batch script: mpirun would forward its value to the other node's ranks.
# (vader is Open MPI 4's name of the shared-memory transport, sm Open MPI 5's.)
if [ -n "\$SLURM_STEP_ID" ]; then
  echo "export OMPI_MCA_btl_vader_backing_directory=$dir/tmp/\$SLURMD_NODENAME"
  echo "export OMPI_MCA_btl_sm_backing_directory=$dir/tmp/\$SLURMD_NODENAME"
fi
exit 0
PROLOG
  chmod 0755 "$dir/task_prolog.sh"
  for i in $(seq 1 "$nodes"); do
    echo "NodeName=n$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + i)) CPUs=$cpus RealMemory=$mem State=UNKNOWN" \
      >>"$dir/slurm.conf"
  done
  echo "PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8" \
    >>"$dir/slurm.conf"
}

start_munge() {
  rm -rf "$dir/munge"; mkdir -p "$dir/munge"; chmod 0755 "$dir/munge"
  mungekey -c -k "$dir/munge/munge.key" -b 1024 2>/dev/null || mungekey -c -k "$dir/munge/munge.key"
  chmod 0600 "$dir/munge/munge.key"
  munged --force -S "$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
}

wait_idle() {
  local nodes=$1 i
  for i in $(seq 1 100); do
    if [ "$(sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle')" = "$nodes" ]; then return 0; fi
    sleep 0.1
  done
  sinfo -N >&2 || true
  die "nodes did not become idle in 10 s (logs in $dir/log)"
}

start() {
  local nodes=${1:-2} base i
  [ "$(id -u)" = 0 ] || die "needs root (slurmd must run as root)"
  [ ! -f "$dir/slurmctld.pid" ] || die "$dir already holds a cluster; stop it first"
  mkdir -p "$dir"/{ctld,log}; dir=$(cd "$dir" && pwd)
  for i in $(seq 1 "$nodes"); do mkdir -p "$dir/spool/n$i" "$dir/tmp/n$i"; done
  base=$(pick_ports "$nodes")
  write_conf "$nodes" "$base"
  export SLURM_CONF=$dir/slurm.conf
  start_munge
  slurmctld -i -f "$SLURM_CONF"
  for i in $(seq 1 "$nodes"); do slurmd -N "n$i" -f "$SLURM_CONF"; done
  wait_idle "$nodes"
  echo "export SLURM_CONF=$SLURM_CONF"
}

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

stop() {
  local f
  [ -d "$dir" ] || return 0
  # Jobs first, so that slurmd does not leave orphaned steps behind.
  if [ -f "$dir/slurm.conf" ] && [ -f "$dir/slurmctld.pid" ]; then
    SLURM_CONF=$dir/slurm.conf timeout 5 scancel --quiet --user="$(id -un)" 2>/dev/null || true
  fi
  for f in "$dir"/slurmd-*.pid; do [ -e "$f" ] && stop_pidfile "$f"; done
  stop_pidfile "$dir/slurmctld.pid"
  stop_pidfile "$dir/munge/munged.pid"
}

case "$cmd" in
  start) start "${3:-2}" ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$(cd "$dir" && pwd)/slurm.conf" ;;
  *) die "unknown command '$cmd'" ;;
esac
