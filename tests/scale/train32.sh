#!/usr/bin/env bash
# 32 ranks oversubscribed on this machine (issue 24): a tiny MLP trains 8 steps with a checkpoint
# every 4 and stops at step 4 (train.max_steps); the same command with max_steps 8 resumes from
# step 4 and ends bit-identical (the same slice checksums) to an uninterrupted 8-step 32-rank run.
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$cohort" data make-synthetic --kind classification --samples 4096 --features 32 --classes 5 \
  --seed 4 --out set.h5 >/dev/null
train() {  # run_dir max_steps
  $MPIEXEC $MPIEXEC_FLAGS -np 32 "$cohort" train --set data.path=set.h5 --set data.batch_size=4 \
    --set model.hidden=16 --set train.max_steps="$2" --set checkpoint.every_steps=4 \
    --set train.run_dir="$1" --set train.threads=1 --set train.log_every=4 >"$1.log" 2>&1 ||
    fail "$1: $(tail -20 "$1.log")"
}
start=$(date +%s)
train whole 8
train resumed 4
[ "$(cat resumed/checkpoints/latest)" = step-00000004 ] || fail "no checkpoint at step 4"
train resumed 8
grep -q "resumed from .*step-00000004" resumed.log || fail "did not resume from step 4"
/usr/bin/python3 - <<'PY'
import json
def sums(run):
    latest = open(f"{run}/checkpoints/latest").read().strip()
    m = json.load(open(f"{run}/checkpoints/{latest}/manifest.json"))
    assert m["step"] == 8 and len(m["shards"]) == 32, (run, m["step"], len(m["shards"]))
    return {t["name"]: [s["checksum"] for s in t["slices"]] for t in m["tensors"]}
assert sums("whole") == sums("resumed"), "the resumed 32-rank run differs from the uninterrupted one"
print("32 ranks: checkpoint, resume, bit-identical to the uninterrupted run")
PY
echo "32-rank runs: $(( $(date +%s) - start )) s"
