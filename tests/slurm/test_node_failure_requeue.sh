#!/usr/bin/env bash
# A node lost mid-run (issue 7, test g), on a cluster of three nodes (the fixture's cluster3): a
# 2-node training job runs from sbatch/train.sbatch with --requeue; after its first checkpoint the
# node that is not the batch host dies: kill -9 of its slurmd, of the step's slurmstepd there and
# of the rank it ran. The surviving rank's watchdog ends the step (exit 76, parallel.timeout_s);
# `cohort slurm requeue` finds the node the controller flags as not responding, requeues the job
# through libslurm and puts that node in the job's excluded list (libslurm job update). The job
# comes back on the two live nodes, resumes from the last checkpoint and ends bit-identical to an
# uninterrupted run.
source "$(dirname "$0")/lib.sh"
export PATH=$(dirname "$COHORT_BIN"):$PATH
cd "$work"
train_set
train_settings 16 200 500
settings+=(--set parallel.timeout_s=8 --set slurm.node_failure_wait=25)
reference_run ref "${settings[@]}"

job=$(sbatch --parsable --requeue --nodes=2 --job-name=nodefail \
  "$COHORT_SOURCE_DIR/sbatch/train.sbatch" "$(run_ini nodefail)" "${settings[@]}")
for _ in $(seq 1 600); do
  [ -f nodefail/checkpoints/latest ] && break
  sleep 0.1
done
[ -f nodefail/checkpoints/latest ] || fail "job $job never checkpointed"
batch_host=$(scontrol show job "$job" | grep -o 'BatchHost=[^ ]*' | cut -d= -f2)
# The rank that does not run beside the batch script, its node, and that node's slurmstepd.
for pid in $(pgrep -f "^$(command -v cohort) train --config $work/nodefail.ini"); do
  node=$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^SLURMD_NODENAME=//p')
  if [ -n "$node" ] && [ "$node" != "$batch_host" ]; then victim=$node rank_pid=$pid; fi
done
[ -n "${victim:-}" ] || fail "no rank found outside the batch host $batch_host"
stepd=$(ps -o ppid= "$rank_pid" | tr -d ' ')
ps -o args= "$stepd" | grep -q '^slurmstepd' || fail "the parent of rank $rank_pid is not a slurmstepd"
kill -9 "$(cat "$COHORT_SLURM_DIR/slurmd-$victim.pid")" "$stepd" "$rank_pid"
killed=$(date +%s)
echo "node $victim killed (slurmd, slurmstepd $stepd, rank $rank_pid)"
state=$(wait_end "$job")
out=$work/nodefail-$job.out
grep -v '^  ' "$out"
[ "$state" = COMPLETED ] || fail "job $job ended $state"
grep -Eq "^step failed \(exit [0-9]+\): rank 1 \(node $victim\) lost at step [0-9]+ \((not responding|down|unreachable)\); requeued job $job \(failure 1/3\), excluding $victim; the next run resumes from step-" "$out" ||
  fail "the batch script did not requeue the job excluding $victim"
ran_without "$job" "$victim" "$out"
grep -q "^resumed from .*/checkpoints/step-" "$out" || fail "the restart did not resume"
same_final_state ref nodefail 1360
echo "node $victim lost: $(( $(date +%s) - killed )) s from the kill to the end of the requeued job on $nodes"
