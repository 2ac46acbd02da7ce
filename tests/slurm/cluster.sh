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

here=$(cd "$(dirname "$0")" && pwd)
source "$here/cluster_common.sh"

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
  write_common_conf cohort-sandbox "$host" 127.0.0.1 "$base"
  write_task_prolog lo
  for i in $(seq 1 "$nodes"); do
    echo "NodeName=n$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + i)) CPUs=$cpus RealMemory=$mem State=UNKNOWN" \
      >>"$dir/slurm.conf"
  done
  echo "PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8" \
    >>"$dir/slurm.conf"
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
