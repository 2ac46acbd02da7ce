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
