#!/usr/bin/env bash
# CTest fixture around cluster.sh: `fixture.sh start DIR` (FIXTURES_SETUP) and `fixture.sh stop DIR`
# (FIXTURES_CLEANUP). Without root there is no cluster: start records why and the slurm tests skip.
# stop fails when any process started from DIR survives, so a leaked daemon is a red test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmd=$1; dir=$2; nodes=${3:-2}
case "$cmd" in
  start)
    "$here/cluster.sh" stop "$dir" 2>/dev/null || true
    rm -rf "$dir"; mkdir -p "$dir"
    if [ "$(id -u)" != 0 ]; then
      echo "slurmd must run as root; the slurm tests are skipped" | tee "$dir/unavailable"
      exit 0
    fi
    "$here/cluster.sh" start "$dir" "$nodes"
    ;;
  stop)
    [ -f "$dir/unavailable" ] && exit 0
    "$here/cluster.sh" stop "$dir"
    sleep 0.2
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
  *) echo "usage: fixture.sh start|stop DIR [NODES]" >&2; exit 2 ;;
esac
