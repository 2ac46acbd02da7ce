#!/usr/bin/env bash
# A rank lost mid-run on the real cluster (issue 7, tests b and h): sbatch/train.sbatch --requeue,
# and after the first checkpoint one rank's process gets SIGNAL (first argument): KILL (the rank
# is gone) or STOP (the rank hangs). The other stops within parallel.timeout_s (its watchdog:
# exit 76) or on an MPI error (77); the batch script sees the failed step and requeues the job
# through `cohort slurm requeue` (libslurm); Slurm's requeue kills what is left (a stopped process
# too); the next run resumes from the last checkpoint and finishes with parameters bit-identical
# to an uninterrupted run.
signal=${1:-KILL}
source "$(dirname "$0")/lib.sh"
export PATH=$(dirname "$COHORT_BIN"):$PATH
cd "$work"
train_set
train_settings 16 200 500
settings+=(--set parallel.timeout_s=10)
reference_run ref "${settings[@]}"

job=$(sbatch --parsable --requeue --job-name=lost-$signal "$COHORT_SOURCE_DIR/sbatch/train.sbatch" \
  "$(run_ini lost)" "${settings[@]}")
for _ in $(seq 1 600); do
  [ -f lost/checkpoints/latest ] && break
  sleep 0.1
done
[ -f lost/checkpoints/latest ] || fail "job $job never checkpointed"
pkill -"$signal" -n -f "^$(command -v cohort) train --config $work/lost.ini" || fail "no rank to kill"
killed=$(date +%s)
state=$(wait_end "$job")
out=$work/lost-$signal-$job.out
grep -v '^  ' "$out"
[ "$state" = COMPLETED ] || fail "job $job ended $state"
# 76 or 77 from the surviving rank, 137 from a killed task (Slurm 22.05), or 14: srun under
# Slurm 24.11's PMIx plugin aborts the step as soon as a task dies.
grep -q "^step failed (exit 7[67]\|^step failed (exit 137\|^step failed (exit 14)" "$out" ||
  fail "the step did not fail with 76, 77, 137 or 14"
grep -q "^step failed (exit [0-9]*): requeued job $job (failure 1/3); the next run resumes from step-" "$out" ||
  fail "the batch script did not requeue the job"
grep -q "^resumed from .*/checkpoints/step-" "$out" || fail "the restart did not resume"
# The run's own record says it too (cohort report / top show it): supervise's requeue record and
# a second start.
grep -q '"event":"requeue".*requeued job '"$job" lost/metrics.jsonl ||
  fail "no requeue record in lost/metrics.jsonl"
[ "$(grep -c '"event":"run"' lost/metrics.jsonl)" -ge 2 ] || fail "no second start in metrics.jsonl"
same_final_state ref lost 1360
echo "SIG$signal to one rank: $(( $(date +%s) - killed )) s from the signal to the end of the requeued job"
