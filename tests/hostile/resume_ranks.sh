#!/usr/bin/env bash
# A hostile newest checkpoint that only one rank can see is bad (rank 1's shard holds a garbage
# rank_state): on resume every rank skips it together, with one warning giving rank 1's reason,
# and both take the previous checkpoint; the run finishes (exit 0).
# usage: resume_ranks.sh COHORT WORKDIR
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$cohort" data make-synthetic --kind classification --samples 512 --features 16 --classes 4 \
  --seed 1 --out set.h5 >/dev/null
train() {
  $MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" train --set data.path=set.h5 --set data.batch_size=16 \
    --set model.hidden=16 --set train.epochs=2 --set train.log_every=0 \
    --set checkpoint.every_steps=8 --set checkpoint.keep_last=0 --set train.run_dir=run "$@"
}
train >first.log 2>&1 || fail "first run: $(cat first.log)"
newest=run/checkpoints/$(cat run/checkpoints/latest)
/usr/bin/python3 - "$newest/shard-00001-of-00002.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "a") as f:
    del f["rank_state"]
    f["rank_state"] = np.frombuffer(b"garbage", np.uint8)
PY
train >second.log 2>&1 || fail "resumed run: $(cat second.log)"
# The lowest rank that found a problem (rank 1, the only one) prints the warning with its reason.
grep -q "skipping checkpoint $newest: .*shard-00001-of-00002.h5: its bytes outside the slices" second.log ||
  fail "no warning naming $newest: $(cat second.log)"
[ "$(grep -c "skipping checkpoint" second.log)" = 1 ] || fail "not one warning: $(cat second.log)"
grep -q "resumed from run/checkpoints/step-00000024" second.log ||
  fail "did not fall back to step 24: $(cat second.log)"
echo "ok: both ranks skipped $newest together and resumed from step 24"
