#!/usr/bin/env bash
# A throw-away Slurm cluster whose nodes are real network hosts: each slurmd runs in its own network
# namespace (its own address, hostname and /etc/hosts), joined by veth pairs to one bridge, so MPI
# and Slurm traffic between nodes crosses links that can be cut. slurmctld and munged run in the
# root namespace, so clients (sbatch, squeue, the tests) need no `ip netns exec`.
#
#   netns_cluster.sh start DIR [NODES]   start it (default 4 nodes); prints `export SLURM_CONF=...`;
#                                        writes DIR/nodes.tsv (node, netns, host veth, address)
#   netns_cluster.sh stop DIR            stop the daemons, kill what is left in the namespaces,
#                                        delete them and the bridge (idempotent; from DIR's name)
#   netns_cluster.sh env DIR             print the exports a client needs
#   netns_cluster.sh cut|heal DIR NODE   take the node's link down | up (silence, as a dead switch port)
#   netns_cluster.sh freeze|thaw DIR NODE  SIGSTOP | SIGCONT every process of the node (slurmd, steps)
#   netns_cluster.sh kill DIR NODE       SIGKILL every process of the node (a crashed host)
#   netns_cluster.sh revive DIR NODE     heal, thaw, kill what is left, start slurmd, resume the node
#   netns_cluster.sh reset DIR           revive every node that is not idle; wait until all are idle
#   netns_cluster.sh node-of DIR PID     the node whose namespace holds PID
#
# Needs root, iproute2 and util-linux's unshare. Names, subnet and ports derive from DIR, so two
# clusters in two directories do not meet (docs/slurm-sandbox.md).
set -euo pipefail

die() { echo "netns_cluster.sh: $*" >&2; exit 1; }
source "$(cd "$(dirname "$0")" && pwd)/cluster_common.sh"
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: netns_cluster.sh start|stop|env|cut|heal|freeze|thaw|kill|revive|reset|node-of DIR [ARG]"
case "$dir" in /*) ;; *) dir=$(cd "$dir" 2>/dev/null && pwd || echo "$PWD/$dir") ;; esac

# Names from DIR and this system's root (two systems in chroots may use the same path; network
# names are the kernel's, shared by both): netns c<h>n<i>, bridge cb<h>, host end of a veth
# cv<h>n<i> (all under 15 characters). The subnet is the first free one from h, kept in nodes.tsv.
h=$(($(printf '%s %s' "$dir" "$(stat -L -c %d:%i /proc/self/root)" | cksum | cut -d' ' -f1) % 100000))
bridge=cb$h
slurmd_port=6818
if [ -f "$dir/nodes.tsv" ]; then prefix=$(head -1 "$dir/nodes.tsv" | cut -f4 | cut -d. -f1-3); fi
ns_of() { echo "c${h}$1"; }
veth_of() { echo "cv${h}$1"; }
node_index() { [[ $1 =~ ^n([0-9]+)$ ]] || die "no node '$1' (n1, n2, ...)"; echo "${BASH_REMATCH[1]}"; }
node_count() { [ -f "$dir/nodes.tsv" ] && wc -l <"$dir/nodes.tsv" || echo 0; }
need_node() {
  local i; i=$(node_index "$1")
  [ "$i" -ge 1 ] && [ "$i" -le "$(node_count)" ] || die "no node '$1' in $dir"
}

pick_subnet() {
  local i p
  for i in $(seq 0 249); do
    p=10.$((100 + (h + i) % 100)).$(((h / 100 + i) % 250))
    ip -o -4 addr | grep -q " $p\." || { echo "$p"; return; }
  done
  die "no free 10.x.y.0/24 subnet found"
}

pick_port() {
  local p=$((20000 + h % 20000))
  for _ in $(seq 1 50); do port_free "$p" && { echo "$p"; return; }; p=$((p + 1)); done
  die "no free port found"
}

write_conf() {
  local nodes=$1 port=$2 ctld cpus mem i
  ctld=$(hostname -s)
  cpus=$(nproc)
  mem=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 / nodes))
  write_common_conf cohort-netns "$ctld" "$prefix.1" "$port"
  write_task_prolog eth0
  write_nodes "$nodes" "$ctld" "$cpus" "$mem"
}

write_nodes() {
  local nodes=$1 ctld=$2 cpus=$3 mem=$4 i
  echo "$prefix.1 $ctld" >"$dir/hosts"
  echo "127.0.0.1 localhost" >>"$dir/hosts"
  : >"$dir/nodes.tsv"
  for i in $(seq 1 "$nodes"); do
    echo "NodeName=n$i NodeHostname=n$i NodeAddr=$prefix.$((10 + i)) Port=$slurmd_port CPUs=$cpus RealMemory=$mem State=UNKNOWN" \
      >>"$dir/slurm.conf"
    echo "$prefix.$((10 + i)) n$i" >>"$dir/hosts"
    printf 'n%s\t%s\t%s\t%s\n' "$i" "$(ns_of "n$i")" "$(veth_of "n$i")" "$prefix.$((10 + i))" >>"$dir/nodes.tsv"
  done
  echo "PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8" \
    >>"$dir/slurm.conf"
}

make_network() {
  local nodes=$1 i ns veth
  ip link add "$bridge" type bridge || die "cannot add a bridge (no bridge module, or no CAP_NET_ADMIN)"
  ip addr add "$prefix.1/24" dev "$bridge"
  ip link set "$bridge" up
  for i in $(seq 1 "$nodes"); do
    ns=$(ns_of "n$i"); veth=$(veth_of "n$i")
    ip netns add "$ns" || die "cannot add network namespace $ns"
    ip link add "$veth" type veth peer name eth0 netns "$ns" || die "cannot add a veth pair"
    ip link set "$veth" master "$bridge" up
    # nsenter, not `ip -n`: that remounts / as a slave first, which fails where / is no mount
    # point (a chroot, as fresh-debian-run's systems): "mount --make-rslave /" failed.
    nsenter --net="/run/netns/$ns" ip addr add "$prefix.$((10 + i))/24" dev eth0
    nsenter --net="/run/netns/$ns" ip link set lo up
    nsenter --net="/run/netns/$ns" ip link set eth0 up
  done
}


# slurmd in the node's network namespace, with its own UTS (hostname nI) and mount namespace (the
# cluster's hosts file as /etc/hosts). Its steps and jobs inherit all three.
start_slurmd() {
  local node=$1
  # nsenter, not `ip netns exec`: the latter mounts a new /sys without /sys/fs/cgroup, and slurmd
  # refuses to start without it.
  nsenter --net="/run/netns/$(ns_of "$node")" unshare --uts --mount --propagation private \
    sh -c 'hostname "$1" && mount --bind "$2/hosts" /etc/hosts && exec slurmd -N "$1" -f "$2/slurm.conf"' \
    sh "$node" "$dir"
}

wait_idle() {
  local nodes=$1 i
  for i in $(seq 1 300); do
    if [ "$(sinfo -h -N -o '%t' 2>/dev/null | grep -c '^idle$')" = "$nodes" ]; then return 0; fi
    sleep 0.1
  done
  sinfo -N >&2 || true
  die "nodes did not become idle in 30 s (logs in $dir/log)"
}

start() {
  local nodes=${1:-4} i
  [ "$(id -u)" = 0 ] || die "needs root (network namespaces, and slurmd must run as root)"
  [ ! -f "$dir/slurmctld.pid" ] || die "$dir already holds a cluster; stop it first"
  [ "$nodes" -ge 1 ] && [ "$nodes" -le 99 ] || die "NODES is 1 to 99"
  mkdir -p "$dir"/{ctld,log}
  for i in $(seq 1 "$nodes"); do mkdir -p "$dir/spool/n$i" "$dir/tmp/n$i"; done
  port=$(pick_port)
  prefix=$(pick_subnet)
  write_conf "$nodes" "$port"
  export SLURM_CONF=$dir/slurm.conf
  # A start that fails halfway leaves nothing behind: no bridge, namespace or daemon.
  trap stop EXIT
  make_network "$nodes"
  start_munge
  slurmctld -i -f "$SLURM_CONF"
  for i in $(seq 1 "$nodes"); do start_slurmd "n$i"; done
  wait_idle "$nodes"
  trap - EXIT
  echo "export SLURM_CONF=$SLURM_CONF"
}

pids_of() { ip netns pids "$(ns_of "$1")" 2>/dev/null || true; }
signal_node() { local p; p=$(pids_of "$2"); [ -z "$p" ] || kill "-$1" $p 2>/dev/null || true; }


stop() {
  local ns f
  if [ -f "$dir/slurm.conf" ] && [ -f "$dir/slurmctld.pid" ]; then
    SLURM_CONF=$dir/slurm.conf timeout 5 scancel --quiet --user="$(id -un)" 2>/dev/null || true
  fi
  # A frozen or cut node would not stop: thaw every namespace first, then stop and kill.
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^c${h}n[0-9]+$" || true); do
    p=$(ip netns pids "$ns" 2>/dev/null || true); [ -z "$p" ] || kill -CONT $p 2>/dev/null || true
  done
  # A slurmd pid file left by `kill` may name a process that is not ours any more: only a pid in
  # its node's namespace is stopped here (the rest goes with the namespaces below).
  for f in "$dir"/slurmd-*.pid; do
    [ -e "$f" ] || continue
    n=${f##*/slurmd-}; n=${n%.pid}
    if [ "$(ip netns identify "$(cat "$f")" 2>/dev/null)" = "$(ns_of "$n")" ]; then stop_pidfile "$f"; else rm -f "$f"; fi
  done
  stop_pidfile "$dir/slurmctld.pid"
  stop_pidfile "$dir/munge/munged.pid"
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^c${h}n[0-9]+$" || true); do
    p=$(ip netns pids "$ns" 2>/dev/null || true); [ -z "$p" ] || kill -9 $p 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  # The kernel may keep a deleted namespace (and so its veth pair) alive a while; the host ends
  # are ours by name: deleting one deletes the pair.
  for veth in $(ip -o link 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^cv${h}n[0-9]+$" || true); do
    ip link del "$veth" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
}

revive() {
  local node=$1
  need_node "$node"
  # Every process of the node dies before it can run or reach the network again (SIGKILL reaches a
  # stopped one too): a stale slurmstepd of an earlier run, thawed or reconnected, ends the step of
  # the same id in the job's next run (seen in bench/goodput.sh: its PMIx abort cancelled step 1.1
  # of the requeued job, whose batch script then ended with 137).
  signal_node KILL "$node"
  for _ in $(seq 1 50); do [ -z "$(pids_of "$node")" ] && break; sleep 0.1; done
  ip link set "$(veth_of "$node")" up
  rm -f "$dir/slurmd-$node.pid"
  start_slurmd "$node"
  # A node marked down for not responding comes back by itself when it registers (ReturnToService=2);
  # one drained or down for another reason needs the update.
  SLURM_CONF=$dir/slurm.conf scontrol update nodename="$node" state=resume 2>/dev/null || true
}

link_up() { ip -o link show "$(veth_of "$1")" 2>/dev/null | grep -q '<[^>]*[<,]UP[,>]'; }
frozen() {
  local p
  for p in $(pids_of "$1"); do
    [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" = T ] && return 0
  done
  return 1
}

reset() {
  local n state
  export SLURM_CONF=$dir/slurm.conf
  timeout 5 scancel --quiet --user="$(id -un)" 2>/dev/null || true
  while read -r n _; do
    state=$(sinfo -h -N -n "$n" -o '%t' 2>/dev/null | head -1)
    if [ "$state" != idle ] || ! link_up "$n" || frozen "$n"; then
      revive "$n"
    fi
  done <"$dir/nodes.tsv"
  wait_idle "$(node_count)"
}

node_of() {
  local ns; ns=$(ip netns identify "$1" 2>/dev/null) || die "no process $1"
  awk -F'\t' -v ns="$ns" '$2 == ns {print $1}' "$dir/nodes.tsv" | grep . || die "process $1 is on no node of $dir"
}

case "$cmd" in
  start) start "${3:-4}" ;;
  stop) stop ;;
  env) echo "export SLURM_CONF=$dir/slurm.conf" ;;
  cut) need_node "${3:-}"; ip link set "$(veth_of "$3")" down ;;
  heal) need_node "${3:-}"; ip link set "$(veth_of "$3")" up ;;
  freeze) need_node "${3:-}"; signal_node STOP "$3" ;;
  thaw) need_node "${3:-}"; signal_node CONT "$3" ;;
  kill) need_node "${3:-}"; signal_node KILL "$3" ;;
  revive) revive "${3:-}" ;;
  reset) reset ;;
  node-of) node_of "${3:-}" ;;
  *) die "unknown command '$cmd'" ;;
esac
