#!/usr/bin/env bash
# Wall-time awareness on the real cluster (issue 7, test d): sbatch/train.sbatch with a one-minute
# time limit, no signal asked of Slurm before the last seconds, and slurm.time_margin=50. Rank 0
# reads the job's end time through libslurm; ~10 s into each run the ranks stop with a
# checkpoint, rank 0 requeues the job, and the next run resumes, until the training is done. The
# final parameters are bit-identical to an uninterrupted run's.
source "$(dirname "$0")/lib.sh"
export PATH=$(dirname "$COHORT_BIN"):$PATH
cd "$work"
cohort data make-synthetic --kind classification --samples 4096 --features 256 --classes 10 \
  --seed 4 --out set.h5 >/dev/null
settings=(--set data.path="$work/set.h5" --set data.batch_size=24 --set model.hidden=512,512
  --set optim.lr=0.05 --set train.epochs=24 --set train.seed=11 --set train.threads=1
  --set train.log_every=500 --set checkpoint.every_steps=500 --set checkpoint.keep_last=0)
printf '[train]\nrun_dir = %s\n' "$work/ref" >ref.ini
$MPIEXEC $MPIEXEC_FLAGS -np 2 cohort train --config ref.ini "${settings[@]}" >ref.log 2>&1 ||
  fail "the uninterrupted run failed: $(cat ref.log)"

printf '[train]\nrun_dir = %s\n' "$work/wall" >wall.ini
job=$(sbatch --parsable --requeue --time=1 --signal=B:USR1@2 --job-name=wall \
  "$COHORT_SOURCE_DIR/sbatch/train.sbatch" "$work/wall.ini" "${settings[@]}" \
  --set slurm.time_margin=50)
state=
for _ in $(seq 1 1200); do
  state=$(scontrol show job "$job" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2)
  case "$state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL) break ;; esac
  sleep 0.2
done
out=$work/wall-$job.out
cat "$out"
[ "$state" = COMPLETED ] || fail "job $job ended $state"
grep -q "^time limit in 50 s or less at step [0-9]*: checkpoint saved; requeued job $job (restart 1/3)$" \
  "$out" || fail "no wall-time stop with a requeue"
grep -q "^cohort-train: job $job .*restart 1$" "$out" || fail "the job never ran with restart 1"
grep -q "^resumed from " "$out" || fail "no resume"
/usr/bin/python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
def sums(run):
    latest = open(f"{work}/{run}/checkpoints/latest").read().strip()
    m = json.load(open(f"{work}/{run}/checkpoints/{latest}/manifest.json"))
    assert m["step"] == 2040, (run, m["step"])
    return {t["name"]: [s["checksum"] for s in t["slices"]] for t in m["tensors"]}
assert sums("ref") == sums("wall"), "the run stopped by its time limit differs from the uninterrupted one"
print("wall-time stops: final parameters bit-identical to the uninterrupted run")
PY
