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

# sbatch/stage-data.sbatch: a dataset staged to both nodes and read there.
"$COHORT_BIN" data make-synthetic --samples 500 --shards 2 --out "$work/set" >/dev/null
job=$(submit_wait --export=ALL,DATASET="$work/set" "$COHORT_SOURCE_DIR/sbatch/stage-data.sbatch") || {
  cat "$work"/cohort-stage-*.out >&2; fail "sbatch/stage-data.sbatch failed"; }
out=$work/cohort-stage-$job.out
cat "$out"
grep -q "staged to /tmp/cohort-$job/set on 2 node(s)" "$out" || fail "no staging line in $out"
[ "$(grep -c 'samples dataset' "$out")" = 2 ] || fail "expected the dataset read on 2 nodes"
