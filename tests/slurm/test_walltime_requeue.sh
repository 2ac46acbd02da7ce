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
# Long enough (13 600 steps: ~27 s on an idle 2-core VM, 13 s at 50 000 samples/s) that the
# ~10 s each run gets always ends in a wall-time stop at least once (8160 steps ran out in 9.8 s
# on a fresh Debian 13); restarts allowed up to 10. The pre-flight checks are off: each run has
# only ~10 s before the margin, and `cohort doctor` (LibTorch, MPI, a model built) took several
# of them on a loaded machine (a fresh Debian 12 run reached the training with 49 s left).
train_settings 160 500 2000
reference_run ref "${settings[@]}"

job=$(sbatch --parsable --requeue --time=1 --signal=B:USR1@2 --job-name=wall \
  "$COHORT_SOURCE_DIR/sbatch/train.sbatch" "$(run_ini wall)" "${settings[@]}" \
  --set slurm.time_margin=50 --set slurm.max_restarts=10 --set slurm.preflight=off)
state=$(wait_end "$job")
out=$work/wall-$job.out
cat "$out"
[ "$state" = COMPLETED ] || fail "job $job ended $state"
grep -q "^time limit in 50 s or less at step [0-9]*: checkpoint saved; requeued job $job (preemption 1, no limit)$" \
  "$out" || fail "no wall-time stop with a requeue"
grep -q "^cohort-train: job $job .*restart 1$" "$out" || fail "the job never ran with restart 1"
grep -q "^resumed from " "$out" || fail "no resume"
same_final_state ref wall 13600
