#!/usr/bin/env bash
# CTest fixture around cluster.sh (or netns_cluster.sh, KIND netns): `fixture.sh start DIR NODES
# [KIND]` (FIXTURES_SETUP) and `fixture.sh stop DIR [KIND]` (FIXTURES_CLEANUP). Without root (or,
# for netns, without network namespaces) there is no cluster: start records why and the slurm
# tests skip. stop fails when any process started from DIR survives, or a namespace or bridge of
# it, so a leak is a red test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmd=$1; dir=$2; nodes=${3:-2}; kind=${4:-${3:-local}}
case "$kind" in netns) script=$here/netns_cluster.sh ;; *) script=$here/cluster.sh ;; esac
case "$cmd" in
  start)
    "$script" stop "$dir" 2>/dev/null || true
    rm -rf "$dir"; mkdir -p "$dir"
    if [ "$(id -u)" != 0 ]; then
      echo "slurmd must run as root; the slurm tests are skipped" | tee "$dir/unavailable"
      exit 0
    fi
    # Each node's slurmd gets a private mount namespace (its own /etc/hosts): not possible where /
    # is no mount point, as in a chroot (fresh-debian-run's systems).
    if [ "$kind" = netns ] && ! unshare --mount --propagation private true 2>/dev/null; then
      echo "no private mount namespace here (/ is no mount point: a chroot?); the netns tests are skipped" |
        tee "$dir/unavailable"
      exit 0
    fi
    if [ "$kind" = netns ] && ! ip netns add "cohort-probe-$$" 2>/dev/null; then
      echo "no network namespaces here (ip netns add failed); the netns tests are skipped" |
        tee "$dir/unavailable"
      exit 0
    fi
    [ "$kind" = netns ] && ip netns del "cohort-probe-$$"
    "$script" start "$dir" "$nodes"
    ;;
  stop)
    [ -f "$dir/unavailable" ] && exit 0
    "$script" stop "$dir"
    sleep 0.2
    if [ "$kind" = netns ] && [ -f "$dir/nodes.tsv" ]; then
      left=$(ip netns list | awk '{print $1}' | grep -xF -f <(cut -f2 "$dir/nodes.tsv") || true)
      [ -z "$left" ] || { echo "fixture.sh: namespaces of the test cluster survived: $left" >&2; exit 1; }
      bridge=$(ip -o link show type bridge | grep -o "cb$(cut -f2 "$dir/nodes.tsv" | head -1 | sed 's/^c\([0-9]*\)n.*/\1/'):" || true)
      [ -z "$bridge" ] || { echo "fixture.sh: the bridge ${bridge%:} survived" >&2; exit 1; }
      veths=$(ip -o link | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -xF -f <(cut -f3 "$dir/nodes.tsv") || true)
      [ -z "$veths" ] || { echo "fixture.sh: veth links of the test cluster survived: $veths" >&2; exit 1; }
    fi
    # Only this system's processes: a second system run beside this one in a chroot (two fresh
    # Debians at once) has a cluster under the same path, which pgrep sees too.
    root=$(stat -L -c %d:%i /proc/self/root)
    survivors=$({ pgrep -f -- "$dir/" || true; } | while read -r pid; do
      [ "$(stat -L -c %d:%i "/proc/$pid/root" 2>/dev/null)" = "$root" ] &&
        ps -o pid=,args= -p "$pid" || true
    done)
    if [ -n "$survivors" ]; then
      echo "fixture.sh: processes of the test cluster survived its stop:" >&2
      echo "$survivors" >&2
      exit 1
    fi
    echo "fixture.sh: cluster in $dir stopped, no daemon left"
    ;;
  *) echo "usage: fixture.sh start|stop DIR [NODES] [netns]" >&2; exit 2 ;;
esac
