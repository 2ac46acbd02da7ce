#!/usr/bin/env bash
# Preemption on the real cluster (issue 7, test a): sbatch/train.sbatch, submitted with --requeue,
# gets `scancel --batch --signal=USR1` mid-run. The script passes the signal to its step; the
# ranks agree, checkpoint, rank 0 requeues the job through libslurm; the job runs again with
# SLURM_RESTART_COUNT=1, resumes from that checkpoint and finishes. Its final parameters are
# bit-identical to an uninterrupted run's (same slice checksums). Then the restart budget: with
# slurm.max_preemptions=0 the same signal checkpoints and ends the job (exit 75) without requeueing.
source "$(dirname "$0")/lib.sh"
export PATH=$(dirname "$COHORT_BIN"):$PATH
cd "$work"
train_set
train_settings 8 100 100
reference_run ref "${settings[@]}"

job=$(sbatch --parsable --requeue --job-name=pre "$COHORT_SOURCE_DIR/sbatch/train.sbatch" \
  "$(run_ini pre)" "${settings[@]}")
signal_mid_run "$job" "$work/pre"
end=$(wait_end "$job")
out=$work/pre-$job.out
cat "$out"
[ "$end" = COMPLETED ] || fail "job $job ended $end"
requeued_and_resumed "$job" "$out"
grep -qx '{"failures":0,"in_allocation":0,"job":"'"$job"'","last_failure":null,"preemptions":1,"preflight_requeues":0,"step_nodes":0}' \
  pre/restarts.json || fail "restarts.json does not count one preemption: $(cat pre/restarts.json)"
# A preemption is no failure: no restart record (the step's exit after the requeue is Slurm's).
grep -q '"event":"restart"' pre/metrics.jsonl && fail "a preemption left a restart record"
same_final_state ref pre 680

job=$(sbatch --parsable --requeue --job-name=budget "$COHORT_SOURCE_DIR/sbatch/train.sbatch" \
  "$(run_ini budget)" "${settings[@]}" --set slurm.max_preemptions=0)
signal_mid_run "$job" "$work/budget"
end=$(wait_end "$job")
out=$work/budget-$job.out
cat "$out"
[ "$end" = FAILED ] || fail "job $job ended $end, not FAILED (exit 75)"
grep -q "preemption budget spent (0/0 preemptions, slurm.max_preemptions): not requeueing job $job" "$out" ||
  fail "no restart-budget line"
grep -q "step ended with exit code 75" "$out" || fail "the step did not exit 75"
[ "$(grep -c '^cohort-train: job' "$out")" = 1 ] || fail "the job ran more than once"
echo "restart budget: checkpointed, not requeued, exit 75"
