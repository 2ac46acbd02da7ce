#!/usr/bin/env bash
# Training on a field dataset (ragged tokens + a label: `cohort data import labelled-text` of the
# text-classify example's sentences, as bytes) with the fields_mlp model:
#  - 2 ranks x batch 16 train like 1 process x batch 32, to float32 tolerance: each rank pads to
#    its own longest sentence, and the masked mean makes the padding count for nothing;
#  - with length bucketing (data.bucket) a run stopped mid-epoch (train.max_steps) and started
#    again resumes where it stopped: its loss after the resume is bit-identical to the
#    uninterrupted run's;
#  - collective MPI-IO reads (data.driver=mpio) give the bit-identical run;
#  - a field dataset refuses pipeline stages with one line naming the file, and its model (no
#    blocks) activation recompute;
#  - several targets (a float 'aaa', 'label', 'zzz' = (label + 1) % 5, written by h5py):
#    data.target=zzz trains bit-identically to a one-target set whose label is zzz, and
#    data.target=label to the original set; the first target (float) and an unknown name are
#    refused in one line naming the file and the targets.
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
/usr/bin/python3 "$(dirname "$0")/../../examples/text-classify/make_sentences.py" sentences.tsv
"$cohort" data import labelled-text sentences.tsv --out all.h5 >/dev/null
"$cohort" data split all.h5 --train train.h5 --val val.h5 --val-fraction 0.2 >/dev/null
train() {  # ranks batch run_dir [--set ...]; 0 ranks: one process without mpirun
  local launch=($MPIEXEC $MPIEXEC_FLAGS -np "$1")
  [ "$1" = 0 ] && launch=()
  "${launch[@]}" "$cohort" train --set model.name=fields_mlp --set model.width=32 \
    --set model.hidden=64 --set data.path=train.h5 --set data.batch_size="$2" \
    --set optim.name=adamw --set optim.lr=3e-3 --set train.epochs=4 --set train.seed=5 \
    --set train.log_every=0 --set checkpoint.every_steps=10 --set checkpoint.keep_last=0 \
    --set train.run_dir="$3" "${@:4}"
}
train 2 16 two >two.log 2>&1 || fail "2 ranks: $(cat two.log)"
train 2 16 mpio --set data.driver=mpio >mpio.log 2>&1 || fail "MPI-IO: $(cat mpio.log)"
train 0 32 one >one.log 2>&1 || fail "1 process: $(cat one.log)"
train 2 16 a --set data.bucket=4 >a.log 2>&1 || fail "bucketed run A: $(cat a.log)"
train 2 16 b --set data.bucket=4 --set train.max_steps=17 >b1.log 2>&1 || fail "B: $(cat b1.log)"
train 2 16 b --set data.bucket=4 >b2.log 2>&1 || fail "resumed B: $(cat b2.log)"
grep -q "resumed from .*step-00000017" b2.log || fail "B did not resume at step 17: $(cat b2.log)"
if train 2 16 pipe --set parallel.pipeline_stages=2 >pipe.log 2>&1; then fail "pipeline stages accepted"; fi
grep -q "train.h5: a field dataset's model runs whole" pipe.log || fail "pipeline: $(cat pipe.log)"
if train 0 32 rc --set model.recompute=blocks >rc.log 2>&1; then fail "recompute accepted"; fi
grep -q "model.recompute: model fields_mlp is not a sequence of blocks" rc.log ||
  fail "recompute of a model without blocks: $(cat rc.log)"
/usr/bin/python3 - <<'PY'
import h5py, numpy as np
with h5py.File("train.h5") as src, h5py.File("three.h5", "w") as a, h5py.File("perm.h5", "w") as b:
    for out in (a, b):
        for k, v in src.attrs.items():
            out.attrs[k] = v
        src.copy("inputs", out)
    label = src["targets/label"][:]
    a["targets/aaa"] = np.linspace(0, 1, len(label), dtype=np.float32)
    a["targets/label"] = label
    a["targets/zzz"] = (label + 1) % 5
    b["targets/label"] = (label + 1) % 5
PY
train 0 32 t_label --set data.path=three.h5 --set data.target=label >t1.log 2>&1 || fail "target label: $(cat t1.log)"
train 0 32 t_zzz --set data.path=three.h5 --set data.target=zzz >t2.log 2>&1 || fail "target zzz: $(cat t2.log)"
train 0 32 perm --set data.path=perm.h5 >t3.log 2>&1 || fail "perm: $(cat t3.log)"
# The first target, a float, is a regression target (train.task = auto); as classes it is refused.
train 0 32 t_first --set data.path=three.h5 >t4.log 2>&1 || fail "float first target: $(cat t4.log)"
grep -q "^done: " t4.log || fail "float first target: $(cat t4.log)"
if train 0 32 t_first_class --set data.path=three.h5 --set train.task=classification >t4.log 2>&1; then
  fail "a float first target accepted as classes"
fi
grep -q "three.h5: float targets of shape \[\] (5 classes); train.task = classification needs one integer class label" t4.log ||
  fail "float target as classes: $(cat t4.log)"
if train 0 32 t_none --set data.path=three.h5 --set data.target=nope >t5.log 2>&1; then fail "unknown target accepted"; fi
grep -q "data.target = 'nope': three.h5 has no such target (its targets: 'aaa', 'label', 'zzz')" t5.log \
  || fail "unknown target: $(cat t5.log)"
/usr/bin/python3 - <<'PY'
import json
def curve(d):
    return [(r["step"], r["loss"]) for r in map(json.loads, open(f"{d}/metrics.jsonl"))
            if r["event"] == "step"]
two, one, a, b, mpio = (curve(d) for d in ("two", "one", "a", "b", "mpio"))
assert mpio == two, "collective MPI-IO reads train otherwise than POSIX reads"
print(f"MPI-IO (collective) and POSIX reads: bit-identical over {len(two)} steps")
assert len(two) == len(one) == 48, (len(two), len(one))
rel = [abs(x[1] - y[1]) / abs(y[1]) for x, y in zip(two, one)]
print(f"2 x 16 vs 1 x 32: relative loss difference <= {max(rel[:10]):.1e} over the first 10 "
      f"steps, <= {max(rel):.1e} over all {len(one)}")
assert max(rel[:10]) < 1e-5 and max(rel) < 1e-3, rel
after = [s for s in b if s[0] > 17]
assert after and after == [s for s in a if s[0] > 17], "bucketed resume differs from run A"
print(f"bucketed: resumed at step 17 (mid-epoch), {len(after)} later steps bit-identical")
t_label, t_zzz, perm = (curve(d) for d in ("t_label", "t_zzz", "perm"))
assert t_label == one and t_zzz == perm and t_zzz != one, "data.target selects another target"
print(f"data.target: 'label' and 'zzz' of a three-target set train as one-target sets of each")
PY
echo PASS
