#!/usr/bin/env bash
# A run keeps its work by default (issue 44): with checkpoint.every_steps = 0 (the default) a run
# still saves a checkpoint when its training ends (checkpoint.at_end), which `cohort ckpt export`
# and `cohort predict` take and a run with more steps resumes from. With checkpoint.at_end =
# false it writes none, and the export's error names the directory and how to get one; so does
# one for a directory that does not exist. On 2 ranks.
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$cohort" data make-synthetic --kind classification --samples 512 --features 16 --classes 4 \
  --seed 2 --out train.h5 >/dev/null
train() {
  $MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" train --set data.path=train.h5 --set data.batch_size=16 \
    --set model.hidden=32 "$@"
}
# The default: one checkpoint, of the last step, and nothing before it.
train --set train.max_steps=7 --set train.run_dir=kept >kept.log 2>&1 || fail "train: $(cat kept.log)"
[ "$(cat kept/checkpoints/latest 2>/dev/null)" = step-00000007 ] ||
  fail "no checkpoint of step 7 by default: $(ls kept/checkpoints 2>&1)"
[ "$(find kept/checkpoints -maxdepth 1 -name 'step-*' | wc -l)" = 1 ] || fail "more than the final checkpoint"
"$cohort" ckpt export kept/checkpoints -o kept.pt >/dev/null || fail "export of the final checkpoint"
[ -s kept.pt ] || fail "no export"
$MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" predict --checkpoint kept/checkpoints --data train.h5 \
  --out preds.h5 >predict.log 2>&1 || fail "predict from the final checkpoint: $(cat predict.log)"
# More steps later: resumed from step 7, saved again at 12.
train --set train.max_steps=12 --set train.run_dir=kept >more.log 2>&1 || fail "train again: $(cat more.log)"
grep -q "resumed from .*step-00000007" more.log || fail "a longer run did not resume from step 7: $(cat more.log)"
[ "$(cat kept/checkpoints/latest)" = step-00000012 ] || fail "no checkpoint of step 12"
# Switched off: none, and the error says how to get one.
train --set train.max_steps=7 --set train.run_dir=none --set checkpoint.at_end=false >none.log 2>&1 ||
  fail "train without a final checkpoint: $(cat none.log)"
[ -z "$(find none -name 'step-*' 2>/dev/null)" ] || fail "checkpoint.at_end = false still saved"
rc=0
"$cohort" ckpt export none/checkpoints -o none.pt 2>err.txt || rc=$?
[ "$rc" = 3 ] && [ "$(wc -l <err.txt)" = 1 ] && grep -q "none/checkpoints" err.txt &&
  grep -q "checkpoint.at_end" err.txt || fail "export of no checkpoint: exit $rc: $(cat err.txt)"
[ ! -e none.pt ] || fail "an export file without a checkpoint"
rc=0
"$cohort" ckpt export missing/checkpoints -o m.pt 2>err.txt || rc=$?
[ "$rc" = 3 ] && grep -q "missing/checkpoints: no such checkpoint directory" err.txt &&
  grep -q "every_steps" err.txt || fail "export of a missing directory: exit $rc: $(cat err.txt)"
echo "OK: a final checkpoint by default (exported, predicted from, resumed), none when switched off, and the errors say how to get one"
