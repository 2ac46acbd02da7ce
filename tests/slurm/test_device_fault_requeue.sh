#!/usr/bin/env bash
# A device fault and a crash loop (issue 24), on the three-node cluster: a 2-node training job
# (sbatch/train.sbatch, --requeue) whose rank 1 fails at step 130 as a CUDA error would
# (debug.device_fault_step, the documented fault switch; exit 78). The rank files a node fault
# report and ends the job at once; `cohort supervise` requeues it under slurm.max_failures
# (failure 1/3, counted in restarts.json), excluding that node. The job comes back on the two
# other nodes, resumes from step 100 and fails at step 130 again: the same checkpoint as the
# failure before, so it is a crash loop, said in one line and in metrics.jsonl, and not requeued.
source "$(dirname "$0")/lib.sh"
export PATH=$(dirname "$COHORT_BIN"):$PATH
cd "$work"
train_set
train_settings 4 50 10
settings+=(--set debug.device_fault_step=130 --set debug.device_fault_rank=1
  --set parallel.timeout_s=30 --set slurm.node_failure_wait=5)
job=$(sbatch --parsable --requeue --nodes=2 --job-name=devfault \
  "$COHORT_SOURCE_DIR/sbatch/train.sbatch" "$(run_ini devfault)" "${settings[@]}")
state=$(wait_end "$job")
out=$work/devfault-$job.out
grep -v '^  ' "$out"
[ "$state" = FAILED ] || fail "job $job ended $state, not FAILED (the crash loop's step code)"
first=$(sed -n "s/^step failed (exit [0-9]*): rank 1 (node \([a-z0-9]*\)) faulty at step [0-9]* (device fault: injected device fault at step 130 (debug.device_fault_step), as a CUDA error fails); requeued job $job (failure 1\/3), excluding \([a-z0-9]*\); the next run resumes from step-00000100$/\1 \2/p" "$out")
read -r victim excluded_now <<<"$first"
[ -n "${victim:-}" ] && [ "$victim" = "$excluded_now" ] ||
  fail "no 'rank 1 (node N) faulty ... requeued job $job (failure 1/3), excluding N' line"
grep -q "rank 1 on node $victim: device fault:" "$out" || fail "the rank did not say its device fault"
ran_without "$job" "$victim" "$out"
grep -q "^resumed from .*/checkpoints/step-00000100" "$out" || fail "the restart did not resume"
grep -q "^step failed (exit [0-9]*): crash loop: failed again from step-00000100 (at step [0-9]*; the failure before at step [0-9]*) without a newer checkpoint: not requeueing job $job$" "$out" ||
  fail "no crash-loop line"
[ "$(grep -c '^cohort-train: job' "$out")" = 2 ] || fail "the job did not run exactly twice"
grep -q '"event":"crash_loop".*crash loop: failed again' devfault/metrics.jsonl ||
  fail "metrics.jsonl has no crash_loop record"
/usr/bin/python3 - devfault/restarts.json "$job" <<'PY'
import json, sys
ledger = json.load(open(sys.argv[1]))
want = {"job": sys.argv[2], "preemptions": 0, "failures": 1, "preflight_requeues": 0}
assert {k: ledger[k] for k in want} == want, ledger
assert ledger["last_failure"]["checkpoint"] == "step-00000100", ledger
assert 100 <= ledger["last_failure"]["step"] < 130, ledger
PY
[ -z "$(ls devfault/node_faults)" ] || fail "node fault reports left behind: $(ls devfault/node_faults)"
echo "device fault on $victim: excluded, requeued (failure 1/3); the same fault again: crash loop, stopped"
