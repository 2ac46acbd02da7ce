# Sourced by the slurm tests. Needs COHORT_SLURM_DIR (the fixture's cluster) and COHORT_BIN.
set -euo pipefail
if [ -f "$COHORT_SLURM_DIR/unavailable" ]; then
  echo "SKIP: $(cat "$COHORT_SLURM_DIR/unavailable")"
  exit 79
fi
export SLURM_CONF=$COHORT_SLURM_DIR/slurm.conf
[ -f "$SLURM_CONF" ] || { echo "no Slurm cluster in $COHORT_SLURM_DIR (fixture not started?)" >&2; exit 1; }
work=$(mktemp -d "$COHORT_SLURM_DIR/test.XXXXXX")
fail() { echo "FAIL: $*" >&2; exit 1; }

# netns_ready: a test on the cluster of network hosts starts with every node up and leaves them so
# however it ends ($nc: netns_cluster.sh, for the test's own cuts); cohort on PATH; in $work.
netns_ready() {
  nc=$COHORT_SOURCE_DIR/tests/slurm/netns_cluster.sh
  bash "$nc" reset "$COHORT_SLURM_DIR"
  trap 'bash "$nc" reset "$COHORT_SLURM_DIR" >/dev/null 2>&1 || true' EXIT
  export PATH=$(dirname "$COHORT_BIN"):$PATH
  cd "$work"
}

# submit_wait ARGS...: sbatch ARGS, poll the job every 0.2 s (sbatch --wait polls with backoff up to
# 30 s), and succeed when it COMPLETED with exit code 0. Prints the job id.
submit_wait() {
  local id state i
  id=$(sbatch --parsable "$@") || fail "sbatch $* failed"
  for i in $(seq 1 600); do
    state=$(scontrol show job "$id" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
    case "$state" in
      PENDING|RUNNING|CONFIGURING|COMPLETING|"") sleep 0.2 ;;
      COMPLETED) echo "$id"; return 0 ;;
      *) echo "$id"; echo "job $id ended $state" >&2; return 1 ;;
    esac
  done
  fail "job $id did not end within 120 s"
}

# Training jobs that stop and come back (the preempt/walltime/rank-lost tests):
# train_set: the 4096-sample dataset in $work/set.h5.
train_set() {
  cohort data make-synthetic --kind classification --samples 4096 --features 256 --classes 10 \
    --seed 4 --out "$work/set.h5" >/dev/null
}
# train_settings EPOCHS CHECKPOINT_EVERY LOG_EVERY: sets `settings`, the --set options of the
# training these tests run (2 x 24 samples per step, 85 steps per epoch), with those three values.
train_settings() {
  settings=(--set data.path="$work/set.h5" --set data.batch_size=24 --set model.hidden=512,512
    --set optim.lr=0.05 --set train.epochs="$1" --set train.seed=11 --set train.threads=1
    --set train.log_every="$3" --set checkpoint.every_steps="$2" --set checkpoint.keep_last=0)
}
# run_ini NAME: an INI putting the run in $work/NAME; prints its path.
run_ini() {
  printf '[train]\nrun_dir = %s\n' "$work/$1" >"$work/$1.ini"
  echo "$work/$1.ini"
}
# reference_run NAME SETTINGS...: the same training uninterrupted, under mpirun on 2 ranks (or
# $ref_ranks).
reference_run() {
  local name=$1
  shift
  $MPIEXEC $MPIEXEC_FLAGS -np "${ref_ranks:-2}" cohort train --config "$(run_ini "$name")" "$@" \
    >"$work/$name.log" 2>&1 || fail "the uninterrupted run failed: $(cat "$work/$name.log")"
}
# wait_end JOB [SECONDS]: waits until the job is COMPLETED or failed for good (a requeue passes
# through other states), at most SECONDS (default 600: the test's own timeout is usually the
# shorter); prints the final state, or the last one seen when the time ran out.
wait_end() {
  local s= deadline=$((SECONDS + ${2:-600}))
  while [ "$SECONDS" -lt "$deadline" ]; do
    s=$(scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
    case "$s" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL) break ;; esac
    sleep 0.2
  done
  echo "$s"
}
# signal_mid_run JOB RUN_DIR: once the job's first checkpoint exists, USR1 to its batch shell.
signal_mid_run() {
  for _ in $(seq 1 600); do
    [ -f "$2/checkpoints/latest" ] && break
    sleep 0.1
  done
  [ -f "$2/checkpoints/latest" ] || fail "job $1 never checkpointed: $(cat "$work"/*-"$1".out)"
  scancel --batch --signal=USR1 "$1"
}
# requeued_and_resumed JOB OUT: the job's output OUT says that USR1 stopped it with a checkpoint
# and requeued it, that it ran again with SLURM_RESTART_COUNT=1 and resumed from that checkpoint.
requeued_and_resumed() {
  local stopped
  stopped=$(sed -n "s/^SIGUSR1 at step \([0-9]*\): checkpoint saved; requeued job $1 (preemption 1, no limit)$/\1/p" "$2")
  [ -n "$stopped" ] || fail "no 'SIGUSR1 at step N: checkpoint saved; requeued job $1' line"
  grep -q "restart 1$" "$2" || fail "the job did not run again with SLURM_RESTART_COUNT=1"
  grep -q "resumed from .*/step-0*$stopped " "$2" || fail "the restart did not resume from $stopped"
}
# same_final_state REF RUN STEPS: both runs' latest checkpoints are at STEPS and hold the same
# slices (checksums), i.e. bit-identical parameters and optimizer state.
same_final_state() {
  /usr/bin/python3 - "$work" "$@" <<'PY'
import json, sys
work, ref, run, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def sums(name):
    latest = open(f"{work}/{name}/checkpoints/latest").read().strip()
    m = json.load(open(f"{work}/{name}/checkpoints/{latest}/manifest.json"))
    assert m["step"] == steps, (name, m["step"], steps)
    return {t["name"]: [s["checksum"] for s in t["slices"]] for t in m["tensors"]}
assert sums(ref) == sums(run), f"{run} differs from the uninterrupted {ref}"
print(f"{run}: final parameters bit-identical to the uninterrupted run")
PY
}
# ran_without JOB NODE OUT: the job's excluded node list is NODE, and its run after the requeue
# (restart 1, per OUT) was on two other nodes. Sets `nodes` to where it ran.
ran_without() {
  local record excluded
  record=$(scontrol show job "$1")
  excluded=$(echo "$record" | grep -o 'ExcNodeList=[^ ]*' | cut -d= -f2)
  nodes=$(echo "$record" | grep -o ' NodeList=[^ ]*' | cut -d= -f2)
  [ "$excluded" = "$2" ] || fail "ExcNodeList is '$excluded', not $2"
  [ "$(scontrol show hostnames "$nodes" | grep -c -x "$2")" = 0 ] ||
    fail "the requeued job ran on $nodes, the excluded node $2 included"
  [ "$(scontrol show hostnames "$nodes" | wc -l)" = 2 ] || fail "the requeued job ran on $nodes"
  grep -qxF "cohort-train: job $1 on $nodes, restart 1" "$3" || fail "no restart on $nodes"
}
