#!/usr/bin/env bash
# Goodput under node failures, requeue-only recovery beside hot spares, on a cluster of network
# hosts (tests/slurm/netns_cluster.sh): a job trains for a fixed wall time while a fault injector
# takes a node away at stated intervals (its link cut, its processes killed or frozen; the rank
# and kind from a seeded schedule, the same for every mode), and repairs it a while later. Goodput
# = the time of the steps that count towards the result (each step number's last run) / the wall
# time from the first step to the last. Per fault: the seconds from the loss to the first step
# after the resume, and the restart record's parts (detection, new step start, load, first step).
#   bench/goodput.sh [--wall 600] [--interval 300] [--faults cut,kill,freeze] [--seed 7]
#                    [--active 3] [--spares 2] [--repair-after 60] [--modes requeue,spares]
#                    [--json OUT]
# Needs root and a build (COHORT_BUILD_DIR, default build). The modes run one after the other,
# each on a fresh cluster of active + spares nodes (the requeue mode's idle nodes take its
# requeued job). Minutes: about modes x (wall + 1).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
bin=$(realpath "${COHORT_BUILD_DIR:-build}/cohort")
wall=600 interval=300 faults=cut,kill,freeze seed=7 active=3 spares=2 repair=60
modes=requeue,spares json=
while (($#)); do
  case $1 in
  --wall) wall=$2 && shift ;;
  --interval) interval=$2 && shift ;;
  --faults) faults=$2 && shift ;;
  --seed) seed=$2 && shift ;;
  --active) active=$2 && shift ;;
  --spares) spares=$2 && shift ;;
  --repair-after) repair=$2 && shift ;;
  --modes) modes=$2 && shift ;;
  --json) json=$2 && shift ;;
  *) echo "usage: $0 [--wall S] [--interval S] [--faults cut,kill,freeze] [--seed N] [--active N] [--spares K] [--repair-after S] [--modes requeue,spares] [--json OUT]" >&2 && exit 2 ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || { echo "goodput.sh: needs root (the network-namespace cluster)" >&2; exit 2; }
[ "$active" -ge 2 ] || { echo "goodput.sh: --active is at least 2 (rank 0's node is never the victim)" >&2; exit 2; }
export PATH=$(dirname "$bin"):$PATH
nc=$src/tests/slurm/netns_cluster.sh
work=$(mktemp -d /var/tmp/cohort-goodput.XXXXXX)
cluster=
cleanup() { [ -z "$cluster" ] || bash "$nc" stop "$cluster" >/dev/null 2>&1 || true; }
trap cleanup EXIT
cohort data make-synthetic --kind classification --samples 4096 --features 256 --classes 10 \
  --seed 4 --out "$work/set.h5" >/dev/null
# The schedule, before any run: fault k at k x interval after the first step, its kind cycling
# through --faults, its victim the node of a seeded rank in 1 .. active-1.
/usr/bin/python3 - "$wall" "$interval" "$faults" "$seed" "$active" >"$work/schedule.json" <<'PY'
import json, random, sys
wall, interval, faults, seed, active = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(","), int(sys.argv[4]), int(sys.argv[5])
rng = random.Random(seed)
print(json.dumps([{"at_s": k * interval, "kind": faults[(k - 1) % len(faults)],
                   "rank": rng.randint(1, active - 1)} for k in range(1, (wall - 1) // interval + 1)]))
PY
settings=(--set data.path="$work/set.h5" --set data.batch_size=24 --set model.hidden=512,512
  --set optim.lr=0.05 --set train.epochs=100000 --set train.seed=11 --set train.threads=1
  --set train.log_every=100000 --set checkpoint.every_steps=400 --set checkpoint.keep_last=3
  --set parallel.timeout_s=5 --set slurm.node_failure_wait=25 --set slurm.max_failures=-1
  --set slurm.max_excluded_nodes=16 --set monitor.console=lines)

rank_pid() {  # rank_pid RUN RANK: the pid of that rank of the run's training, if one runs
  local pid
  for pid in $(pgrep -f "^$bin train --config $work/$1.ini" || true); do
    tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "SLURM_PROCID=$2" && { echo "$pid"; return; }
  done
  return 0
}

inject() {  # inject MODE T0: the schedule's faults, at T0 + at_s each; a line of JSON per fault
  local mode=$1 t0=$2 at kind rank pid node i
  for i in $(seq 0 $(($(/usr/bin/python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$work/schedule.json") - 1))); do
    read -r at kind rank < <(/usr/bin/python3 -c "import json,sys; f=json.load(open(sys.argv[1]))[int(sys.argv[2])]; print(f['at_s'], f['kind'], f['rank'])" "$work/schedule.json" "$i")
    while [ "$(date +%s)" -lt $((t0 + at)) ]; do sleep 0.2; done
    pid=
    for _ in $(seq 1 300); do pid=$(rank_pid "$mode" "$rank"); [ -n "$pid" ] && break; sleep 0.2; done
    [ -n "$pid" ] || { echo "{\"at_s\": $at, \"kind\": \"$kind\", \"skipped\": \"rank $rank not running\"}"; continue; }
    node=$(bash "$nc" node-of "$cluster" "$pid")
    bash "$nc" "$kind" "$cluster" "$node"
    echo "{\"at_s\": $at, \"t_unix\": $(date +%s.%N), \"kind\": \"$kind\", \"rank\": $rank, \"node\": \"$node\"}"
    (sleep "$repair"; bash "$nc" revive "$cluster" "$node" >/dev/null 2>&1 || true) &
  done
  wait  # the repairs: none may outlive the cluster
}

for mode in ${modes//,/ }; do
  case $mode in requeue) k=0 ;; spares) k=$spares ;; *) echo "goodput.sh: no mode '$mode'" >&2; exit 2 ;; esac
  cluster=$work/$mode-cluster
  mkdir -p "$cluster"
  eval "$(bash "$nc" start "$cluster" $((active + spares)))"
  printf '[train]\nrun_dir = %s\n' "$work/$mode" >"$work/$mode.ini"
  job=$(cd "$work" && sbatch --parsable --requeue --no-kill --nodes=$((active + k)) --ntasks-per-node=1 \
    --job-name="$mode" "$src/sbatch/train.sbatch" "$work/$mode.ini" "${settings[@]}" \
    --set slurm.spare_nodes="$k")
  for _ in $(seq 1 1200); do grep -qs '"event":"step"' "$work/$mode/metrics.jsonl" && break; sleep 0.1; done
  grep -qs '"event":"step"' "$work/$mode/metrics.jsonl" || {
    echo "goodput.sh: job $job took no step in 120 s:" >&2
    tail -5 "$work/$mode-$job.out" >&2
    exit 1
  }
  t0=$(date +%s)
  echo "goodput: $mode (job $job, $((active + k)) nodes): training from $(date -d "@$t0" +%T) for ${wall} s" >&2
  inject "$mode" "$t0" >"$work/$mode-faults.jsonl" &
  injector=$!
  while [ "$(date +%s)" -lt $((t0 + wall)) ]; do sleep 1; done
  # The window ends here; what the job does after it is not counted. The injector's faults all
  # fell inside it; it ends once their repairs are done.
  echo "{\"t_stop\": $(date +%s.%N)}" >"$work/$mode-window.json"
  # KILL, not TERM: TERM is a stop signal (slurm.signals), which would checkpoint and requeue.
  scancel --full --signal=KILL "$job" 2>/dev/null || true
  scancel "$job" 2>/dev/null || true
  wait "$injector" 2>/dev/null || true
  for _ in $(seq 1 600); do
    case $(scontrol show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2) in
      RUNNING|COMPLETING|CONFIGURING|PENDING|REQUEUED) sleep 0.2 ;;
      *) break ;;
    esac
  done
  cp "$work/$mode-"*.out "$work/$mode.out" 2>/dev/null || true
  bash "$nc" stop "$cluster" >/dev/null
  cluster=
done
/usr/bin/python3 "$src/bench/goodput.py" "$work" "$modes" "$wall" "$interval" "$faults" "$seed" \
  "$active" "$spares" "$repair" ${json:+--json "$json"}
