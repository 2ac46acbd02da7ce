#!/usr/bin/env bash
# The cluster of network hosts (netns_cluster.sh) is what it claims: each node its own hostname and
# address, MPI traffic between two nodes crossing their links (the all-reduce of `cohort doctor`
# shows up in the veth's byte counters), a cut link seen by the controller as a node that stops
# responding, and `reset` bringing every node back.
source "$(dirname "$0")/lib.sh"
export PATH=$(dirname "$COHORT_BIN"):$PATH
nc=$COHORT_SOURCE_DIR/tests/slurm/netns_cluster.sh
cd "$work"
nodes=$(wc -l <"$COHORT_SLURM_DIR/nodes.tsv")
[ "$nodes" -ge 4 ] || fail "the netns cluster has $nodes nodes, not 4 or more"

srun -N "$nodes" -n "$nodes" bash -c 'echo "$SLURMD_NODENAME $(hostname) $(ip -o -4 addr show eth0 | awk "{print \$4}")"' |
  sort >hosts.out
cat hosts.out
[ "$(wc -l <hosts.out)" = "$nodes" ] || fail "not one line per node"
while read -r node host addr; do
  [ "$node" = "$host" ] || fail "node $node has the hostname $host"
  grep -qP "^$node\t[^\t]+\t[^\t]+\t${addr%/24}$" "$COHORT_SLURM_DIR/nodes.tsv" ||
    fail "node $node has the address $addr, not its own"
done <hosts.out
[ "$(cut -d' ' -f3 hosts.out | sort -u | wc -l)" = "$nodes" ] || fail "two nodes share an address"

cohort data make-synthetic --kind classification --samples 256 --features 16 --classes 2 \
  --out set.h5 >/dev/null
veth=$(awk -F'\t' '$1 == "n2" {print $3}' "$COHORT_SLURM_DIR/nodes.tsv")
before=$(cat "/sys/class/net/$veth/statistics/tx_bytes")
salloc -N 2 -w n[1-2] -Q srun --mpi=pmix -N 2 --ntasks-per-node=1 cohort doctor \
  --set data.path="$work/set.h5" --set train.run_dir="$work/run" \
  --set slurm.preflight_bandwidth=1 >doctor.out 2>&1 || fail "doctor failed: $(cat doctor.out)"
after=$(cat "/sys/class/net/$veth/statistics/tx_bytes")
grep -q "^all nodes  network  pass  all-reduce of 16 MiB among 2 nodes" doctor.out ||
  fail "no all-reduce among 2 nodes: $(cat doctor.out)"
# The all-reduce moves 16 MiB each way between the two: at least that crossed n2's link.
[ $((after - before)) -ge $((16 << 20)) ] ||
  fail "only $((after - before)) bytes crossed $veth: the MPI traffic did not take the links"
echo "MPI traffic on $veth: $(((after - before) >> 20)) MiB"

victim=n$nodes
trap 'bash "$nc" reset "$COHORT_SLURM_DIR" >/dev/null 2>&1 || true' EXIT
bash "$nc" cut "$COHORT_SLURM_DIR" "$victim"
cut_at=$SECONDS
state=idle
while [ $((SECONDS - cut_at)) -lt 60 ]; do
  state=$(sinfo -h -N -n "$victim" -o '%t')
  case "$state" in *'*'*|down*) break ;; esac
  sleep 1
done
case "$state" in *'*'*|down*) ;; *) fail "$victim still '$state' 60 s after its link was cut" ;; esac
echo "$victim cut: '$state' after $((SECONDS - cut_at)) s"
bash "$nc" reset "$COHORT_SLURM_DIR"
[ "$(sinfo -h -N -o '%t' | grep -cx idle)" = "$nodes" ] || fail "not every node idle after reset: $(sinfo -N)"
echo "netns cluster: $nodes nodes, own names and addresses, MPI over the links, cut and reset"
