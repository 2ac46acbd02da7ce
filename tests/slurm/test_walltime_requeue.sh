#!/usr/bin/env bash
# Wall-time awareness on the real cluster (issue 7, test d): sbatch/train.sbatch with a one-minute
# time limit, no signal asked of Slurm before the last seconds, and slurm.time_margin=50. Rank 0
# reads the job's end time through libslurm; ~10 s into each run the ranks stop with a
# checkpoint, rank 0 requeues the job, and the next run resumes, until the training is done. The
# final parameters are bit-identical to an uninterrupted run's.
source "$(dirname "$0")/lib.sh"
export PATH=$(dirname "$COHORT_BIN"):$PATH
cd "$work"
train_set
# 1020 steps, each at least 20 ms long in the job (debug.slow_ms on rank 0, which the other waits
# for; a sleep, so the values are the reference's): at least 20 s of training, so the ~10 s each
# run gets always ends in a wall-time stop at least once however fast the machine, and few
# enough that a loaded machine finishes within the 25 restarts allowed. At 3400 steps of 5 ms,
# 10 restarts ran out on a fresh Debian 12 with 8.8 runnable on 2 cores (50-170 steps a run: the
# start-up took most of the 10 s). The pre-flight checks are off: each run has only ~10 s before
# the margin, and `cohort doctor` (LibTorch, MPI, a model built) took several of them on a loaded
# machine.
train_settings 12 500 2000
reference_run ref "${settings[@]}"

job=$(sbatch --parsable --requeue --time=1 --signal=B:USR1@2 --job-name=wall \
  "$COHORT_SOURCE_DIR/sbatch/train.sbatch" "$(run_ini wall)" "${settings[@]}" \
  --set debug.slow_rank=0 --set debug.slow_ms=20 \
  --set slurm.time_margin=50 --set slurm.max_restarts=25 --set slurm.preflight=off)
state=$(wait_end "$job" 860)
out=$work/wall-$job.out
cat "$out"
[ "$state" = COMPLETED ] || fail "job $job ended $state"
grep -q "^time limit in 50 s or less at step [0-9]*: checkpoint saved; requeued job $job (preemption 1, no limit)$" \
  "$out" || fail "no wall-time stop with a requeue"
grep -q "^cohort-train: job $job .*restart 1$" "$out" || fail "the job never ran with restart 1"
grep -q "^resumed from " "$out" || fail "no resume"
same_final_state ref wall 1020
