#!/usr/bin/env bash
# Hot spares used up (issue 46): a job of 3 network hosts with slurm.spare_nodes=1 trains on 2.
# Rank 1's link is cut after the first checkpoint: the spare takes its place, no requeue. After the
# next checkpoint the new rank 1's link is cut too: no spare is left, so the job is requeued with
# both lost nodes excluded and its node and task counts lowered to the step's 2 (otherwise it
# would wait for 3 nodes that the exclusion no longer leaves on this 4-node cluster); it runs again on the two live nodes,
# resumes, and ends bit-identical to an uninterrupted 2-rank run.
source "$(dirname "$0")/lib.sh"
netns_ready
train_set
# 2 ranks x 24 samples per step: 85 steps per epoch; 32 epochs, 2720 steps, a checkpoint every 100.
train_settings 32 100 500
settings+=(--set parallel.timeout_s=8 --set slurm.node_failure_wait=25 --set debug.data_delay_ms=6)
reference_run ref "${settings[@]}"

job=$(sbatch --parsable --requeue --no-kill --nodes=3 --ntasks-per-node=1 --job-name=exhaust \
  "$COHORT_SOURCE_DIR/sbatch/train.sbatch" "$(run_ini exhaust)" "${settings[@]}" \
  --set slurm.spare_nodes=1)
out=$work/exhaust-$job.out
# cut_rank1 AFTER [GONE]: once a checkpoint newer than AFTER exists, cut the link of rank 1's node
# (not GONE: the ranks of a step on a cut node live on, silent); prints the node and the checkpoint.
cut_rank1() {
  local pid rank1= latest on
  for _ in $(seq 1 1200); do
    latest=$(cat exhaust/checkpoints/latest 2>/dev/null || true)
    [ -n "$latest" ] && [ "$latest" != "$1" ] && break
    sleep 0.1
  done
  [ -n "$latest" ] && [ "$latest" != "$1" ] || fail "no checkpoint after '$1': $(cat "$out")"
  for _ in $(seq 1 100); do
    for pid in $(pgrep -f "^$(command -v cohort) train --config $work/exhaust.ini"); do
      tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'SLURM_PROCID=1' || continue
      on=$(bash "$nc" node-of "$COHORT_SLURM_DIR" "$pid" 2>/dev/null) || continue
      [ "$on" != "${2:-}" ] && rank1=$pid
    done
    [ -n "$rank1" ] && break
    sleep 0.1
  done
  [ -n "$rank1" ] || fail "rank 1 of job $job not found"
  node=$(bash "$nc" node-of "$COHORT_SLURM_DIR" "$rank1")
  bash "$nc" cut "$COHORT_SLURM_DIR" "$node"
  echo "$node $latest"
}
read -r first at1 < <(cut_rank1 "")
[ -n "${first:-}" ] || fail "the first cut did not happen: $(cat "$out")"
echo "link of $first (rank 1) cut after $at1"
for _ in $(seq 1 600); do grep -q "^restart 1 in job $job" "$out" 2>/dev/null && break; sleep 0.2; done
grep -q "^restart 1 in job $job (in allocation" "$out" || fail "no restart on the spare: $(cat "$out")"
read -r second at2 < <(cut_rank1 "$(cat exhaust/checkpoints/latest)" "$first")
[ -n "${second:-}" ] || fail "the second cut did not happen: $(cat "$out")"
echo "link of $second (rank 1 again) cut after $at2"
state=$(wait_end "$job" 420)
grep -v '^  ' "$out"
[ "$state" = COMPLETED ] || fail "job $job ended $state"
[ "$first" != "$second" ] || fail "the same node was cut twice"
grep -Eq "^step failed \(exit [0-9]+\): rank 1 \(node $second\) lost at step [0-9]+ \((not responding|down|unreachable)\); requeued job $job \(failure 2/3\), excluding .*, on 2 nodes; the next run resumes from step-" "$out" ||
  fail "no requeue excluding $second on 2 nodes"
excluded=$(scontrol show job "$job" | grep -o 'ExcNodeList=[^ ]*' | cut -d= -f2)
for node in "$first" "$second"; do
  scontrol show hostnames "$excluded" | grep -qx "$node" || fail "$node not in ExcNodeList ($excluded)"
done
grep -Eq "^cohort-train: job $job on .+, restart 1$" "$out" || fail "the job did not run again"
ran_on=$(grep "^cohort-train: job $job on .*, restart 1$" "$out" | sed 's/.* on \(.*\), restart 1/\1/')
for node in "$first" "$second"; do
  scontrol show hostnames "$ran_on" | grep -qx "$node" && fail "the requeued job ran on $node"
done
[ "$(scontrol show hostnames "$ran_on" | wc -l)" = 2 ] || fail "the requeued job ran on $ran_on"
/usr/bin/python3 - "$work/exhaust/restarts.json" <<'PY'
import json, sys
ledger = json.load(open(sys.argv[1]))
assert ledger["failures"] == 2 and ledger["in_allocation"] == 1 and ledger["step_nodes"] == 2, ledger
PY
[ "$(grep -c '"event":"restart"' exhaust/metrics.jsonl)" = 2 ] || fail "not two restart records"
same_final_state ref exhaust 2720
