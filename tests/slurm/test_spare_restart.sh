#!/usr/bin/env bash
# A node lost on a cluster of network hosts, recovered inside the job on a hot spare (issue 46): a
# job of 4 nodes with slurm.spare_nodes=1 trains on 3 (one rank each) from sbatch/train.sbatch.
# After its first checkpoint the link of rank 1's node is cut (ip link set down: silence, as a
# dead switch port or host). The others' watchdog ends the step (exit 76); `cohort supervise`
# blames the node without waiting for the controller (slurm.node_failure_wait=0: its slurmd is
# found unreachable; the controller flags a lost node only SlurmdTimeout later, so without the
# probe the job would be requeued, not restarted), leaves it out, and starts a new step at once on the two
# survivors and the spare, resuming from the newest checkpoint: no requeue (one run of the batch
# script, SLURM_RESTART_COUNT 0), one restart record with its seconds lost in parts, the ledger's
# failure and in-allocation restart counted, and a final state bit-identical to an uninterrupted
# run on 3 ranks.
source "$(dirname "$0")/lib.sh"
netns_ready
train_set
# 3 ranks x 24 samples per step: 56 steps per epoch; 24 epochs, 1344 steps, a checkpoint every 100.
train_settings 24 100 500
settings+=(--set parallel.timeout_s=8 --set slurm.node_failure_wait=0 --set debug.data_delay_ms=4)
ref_ranks=3 reference_run ref "${settings[@]}"

job=$(sbatch --parsable --requeue --no-kill --nodes=4 --ntasks-per-node=1 --job-name=spare \
  "$COHORT_SOURCE_DIR/sbatch/train.sbatch" "$(run_ini spare)" "${settings[@]}" \
  --set slurm.spare_nodes=1)
for _ in $(seq 1 900); do
  [ -f spare/checkpoints/latest ] && break
  sleep 0.1
done
[ -f spare/checkpoints/latest ] || fail "job $job never checkpointed: $(cat spare-"$job".out)"
for pid in $(pgrep -f "^$(command -v cohort) train --config $work/spare.ini"); do
  if tr '\0' '\n' <"/proc/$pid/environ" | grep -qx 'SLURM_PROCID=1'; then rank1=$pid; fi
done
[ -n "${rank1:-}" ] || fail "rank 1 of job $job not found"
victim=$(bash "$nc" node-of "$COHORT_SLURM_DIR" "$rank1")
bash "$nc" cut "$COHORT_SLURM_DIR" "$victim"
cut_ms=$(date +%s%3N)
echo "link of $victim (rank 1) cut"
state=$(wait_end "$job" 360)
out=$work/spare-$job.out
grep -v '^  ' "$out"
[ "$state" = COMPLETED ] || fail "job $job ended $state"
[ "$victim" = n2 ] || fail "rank 1 ran on $victim, not n2 (the second of the step's nodes)"
grep -Eq "^step failed \(exit [0-9]+\): rank 1 \(node n2\) lost at step [0-9]+ \((not responding|down|unreachable)\); restarting in job $job \(failure 1/3\) on n\[1,3-4\], leaving out n2, spare n4; resuming from step-" "$out" ||
  fail "no restart on the spare n4"
[ "$(grep -c "^cohort-train: job $job " "$out")" = 1 ] || fail "the batch script ran more than once"
grep -q "^requeued job" "$out" && fail "the job was requeued"
grep -Eq "^restart 1 in job $job \(in allocation, failure 1/3\): n2 \((not responding|down|unreachable)\) left out, spare n4 used; [0-9.]+ s lost: detection [0-9.]+ s, start [0-9.]+ s, load [0-9.]+ s, first step [0-9.]+ s; [0-9]+ steps redone$" "$out" ||
  fail "no restart line from the new step's rank 0"
/usr/bin/python3 - "$work/spare" "$job" "$cut_ms" <<'PY'
import json, sys
run, job, cut_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
records = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
restarts = [r for r in records if r.get("event") == "restart"]
assert len(restarts) == 1, restarts
r = restarts[0]
assert r["job"] == job and r["kind"] == "in_allocation" and r["completed"], r
assert [n["node"] for n in r["left_out"]] == ["n2"] and r["spares"] == ["n4"], r
assert r["nodes"] == ["n1", "n3", "n4"], r
lost = r["seconds_lost"]
for part in ("detection", "start", "load", "first_step"):
    assert lost[part] > 0, (part, lost)
assert abs(sum(lost[p] for p in ("detection", "start", "load", "first_step")) - lost["total"]) < 1e-3
ledger = json.load(open(f"{run}/restarts.json"))
assert ledger["failures"] == 1 and ledger["in_allocation"] == 1 and ledger["step_nodes"] == 3, ledger
steps = [s for s in records if s.get("event") == "step" and s["t"] * 1000 > cut_ms]
first = min(s["t"] * 1000 for s in steps if s["step"] > r["resumed_step"])
print(f"cut to the first step after the restart: {(first - cut_ms) / 1000:.1f} s "
      f"(record: {lost['total']:.1f} s from the last step before it)")
PY
[ -f "$work/spare/restart_pending.json" ] && fail "a pending restart record was left behind"
same_final_state ref spare 1344
