#!/usr/bin/env bash
# The job scripts shipped in sbatch/ run as-is on the real cluster.
source "$(dirname "$0")/lib.sh"
export PATH=$(dirname "$COHORT_BIN"):$PATH
cd "$work"
job=$(submit_wait "$COHORT_SOURCE_DIR/sbatch/env.sbatch") || {
  cat "$work"/cohort-env-*.out >&2; fail "sbatch/env.sbatch failed"; }
out=$work/cohort-env-$job.out
cat "$out"
grep -q '(slurm batch script)' "$out" || fail "the batch script's own view is missing"
[ "$(grep -c ' slurm step$' "$out")" = 4 ] || fail "expected 4 ranks of the step in $out"

# sbatch/stage-data.sbatch: a dataset staged to both nodes and read there.
"$COHORT_BIN" data make-synthetic --samples 500 --shards 2 --out "$work/set" >/dev/null
job=$(submit_wait --export=ALL,DATASET="$work/set" "$COHORT_SOURCE_DIR/sbatch/stage-data.sbatch") || {
  cat "$work"/cohort-stage-*.out >&2; fail "sbatch/stage-data.sbatch failed"; }
out=$work/cohort-stage-$job.out
cat "$out"
grep -q "staged to /tmp/cohort-$job/set on 2 node(s)" "$out" || fail "no staging line in $out"
[ "$(grep -c 'samples dataset' "$out")" = 2 ] || fail "expected the dataset read on 2 nodes"

# sbatch/sweep.sbatch: a job array of two tasks, each training with its own optim.lr in its own run
# directory, one log per rank.
train_set
printf '[data]\npath = %s\nbatch_size = 32\n[model]\nhidden = 64\n[train]\nepochs = 2\nseed = 3\nthreads = 1\n[checkpoint]\nevery_steps = 50\n' \
  "$work/set.h5" >"$work/sweep.ini"
job=$(sbatch --parsable --array=0-1 --export=ALL,COHORT_SWEEP_DIR="$work/sweeps" \
  "$COHORT_SOURCE_DIR/sbatch/sweep.sbatch" "$work/sweep.ini" optim.lr 0.2 0.02)
for task in 0 1; do
  state=$(wait_end "${job}_$task")
  cat "$work/cohort-sweep-${job}_$task.out"
  [ "$state" = COMPLETED ] || fail "array task $task ended $state"
done
for pair in 0:0.2 1:0.02; do
  task=${pair%%:*} lr=${pair#*:}
  run=$work/sweeps/$job/optim.lr=$lr
  grep -qx "cohort-sweep: task $task of job $job: optim.lr=$lr in $run, restart 0" \
    "$work/cohort-sweep-${job}_$task.out" || fail "task $task did not say its value"
  "$COHORT_BIN" ckpt inspect "$run/checkpoints" --json |
    /usr/bin/python3 -c 'import json,sys; m=json.load(sys.stdin); assert m["step"] == 128, m["step"]' ||
    fail "task $task did not reach its last step in $run"
  grep -qx "lr = $lr" "$run/config.resolved.ini" || fail "the run in $run did not use optim.lr = $lr"
  grep -q "^done: 128 steps" "$work/cohort-sweep-${job}_$task-0.log" ||
    fail "rank 0's log cohort-sweep-${job}_$task-0.log does not hold the run's end"
  [ -f "$work/cohort-sweep-${job}_$task-1.log" ] || fail "no log for rank 1 of task $task"
done
echo "sweep: 2 array tasks, each with its own optim.lr, run directory and per-rank logs"

# sbatch/predict.sbatch: the first sweep task's run predicts the training set on 2 nodes; the
# file equals a one-process `cohort predict` of the same checkpoint (to float32 rounding).
run=$work/sweeps/$job/optim.lr=0.2
pjob=$(submit_wait "$COHORT_SOURCE_DIR/sbatch/predict.sbatch" "$run/checkpoints" "$work/set.h5" \
  "$work/preds.h5" --batch-size 37) || {
  cat "$work"/cohort-predict-*.out >&2; fail "sbatch/predict.sbatch failed"; }
cat "$work/cohort-predict-$pjob.out"
grep -q "cohort-predict: job $pjob, 2 rank(s)" "$work/cohort-predict-$pjob.out" ||
  fail "predict.sbatch did not run 2 ranks"
"$COHORT_BIN" predict --checkpoint "$run/checkpoints" --data "$work/set.h5" --out "$work/one.h5" \
  >/dev/null
/usr/bin/python3 - "$work/preds.h5" "$work/one.h5" <<'PY' || fail "predict.sbatch's file differs"
import sys
import h5py
import numpy as np
two, one = (h5py.File(p, "r") for p in sys.argv[1:3])
assert two["outputs"].shape == one["outputs"].shape and two["outputs"].shape[0] > 0
a, b = two["outputs"][()], one["outputs"][()]
diff = float(np.abs(a - b).max())
assert diff <= 1e-6 * max(1.0, float(np.abs(b).max())), (diff, float(np.abs(b).max()))
assert (two["argmax"][()] == one["argmax"][()]).all()
print(f"predict.sbatch: {two['outputs'].shape} on 2 nodes, within {diff:.1e} of one process "
      f"(outputs up to {float(np.abs(b).max()):.0f}: batch sizes 37 and 256 sum in other orders)")
PY
