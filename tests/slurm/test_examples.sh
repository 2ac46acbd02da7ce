#!/usr/bin/env bash
# An example trains under Slurm exactly as a user submits it: examples/digits/digits.sbatch on the
# real cluster (2 nodes x 1 rank), where `cohort launch` inside run.sh must pick srun, the ranks
# must see themselves as a Slurm step, and the MLP must still reach the example's accuracy floor.
source "$(dirname "$0")/lib.sh"
export PATH=$(dirname "$COHORT_BIN"):$PATH
cd "$work"
job=$(submit_wait "$COHORT_SOURCE_DIR/examples/digits/digits.sbatch" --set train.run_dir=runs/under-slurm) || {
  cat "$work"/cohort-digits-*.out >&2; fail "examples/digits/digits.sbatch failed"; }
out=$work/cohort-digits-$job.out
cat "$out"
grep -q '^train: 2 rank(s) (slurm step)' "$out" || fail "the ranks were not a Slurm step of 2"
accuracy=$(sed -n 's/^final eval: .* accuracy \([0-9.]*\) .*/\1/p' "$out")
[ -n "$accuracy" ] || fail "no final evaluation in $out"
awk -v a="$accuracy" 'BEGIN { exit !(a >= 0.96) }' || fail "accuracy $accuracy < 0.96"
[ -f "$work/runs/under-slurm/metrics.jsonl" ] || fail "--set did not reach cohort train (no runs/under-slurm)"
echo "digits under Slurm: accuracy $accuracy"
