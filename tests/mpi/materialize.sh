#!/usr/bin/env bash
# model.materialize = own (src/models/materialize.hpp) through `cohort train`, on real mpirun ranks.
#   materialize.sh COHORT WORK
# 1. Initial values (one SGD step at learning rate 1e-30, which moves no value by a thousandth of
#    its last bit except exact zeros, then the checkpoint, joined by `cohort ckpt export`) equal
#    within 1e-20 between one process and every layout, though no rank builds the
#    whole model: the GPT on 4 data ranks (DDP), 4 ranks under ZeRO 3 (each block given its values
#    as it is sharded), 2 pipeline stages x 2 data ranks under ZeRO 3 (the tied embedding drawn
#    alike on the first and the last stage), tensor 2 x data 2 (each part cut from its whole
#    value); the MLP under ZeRO 3 on 4 ranks; the CNN with BatchNorm on 2 ranks (its statistics
#    move in the step's forward on each rank's batch: not compared). They differ from
#    model.materialize = whole's (so the comparison can fail), and follow the initialisation's
#    laws (GPT: 2-D weights N(0, 0.02), LayerNorm ones and zeros, biases within 1/sqrt(fan_in)).
# 2. 20 steps of the GPT from those values: ZeRO 3 on 4 ranks bit-identical to DDP on 4 ranks
#    (Open MPI's linear algorithms pinned, as mpi.zero.equivalence does).
# 3. Measured (bench/zero_peak_rss.sh, a 38 M-parameter GPT, 145 MiB, on 4 ranks): ZeRO 3's peak
#    RSS at start-up with own at least 40 % of the model below the same run with whole (each
#    rank then holds its quarter and one block, not the model); and `cohort train` itself, width
#    512, 12 blocks, on 2 pipeline stages x 2 data ranks under ZeRO 3: own at least a quarter of
#    the model below whole.
# 4. own with model.init_from, and a materialize that is neither whole nor own: one line, exit 2.
set -euo pipefail
cohort=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$cohort" data make-synthetic --kind tokens --tokens 20000 --vocab 64 --seq-len 16 --seed 3 \
  --out tok.h5 >/dev/null
"$cohort" data make-synthetic --kind classification --samples 512 --features 48 --classes 5 \
  --seed 4 --out set.h5 >/dev/null
"$cohort" data make-synthetic --kind images --samples 256 --classes 4 --seed 5 --out img.h5 \
  >/dev/null
GPT=(--set data.path=tok.h5 --set model.name=gpt --set model.width=32 --set model.heads=4
  --set model.blocks=3 --set model.context=16 --set model.dropout=0 --set train.seed=5
  --set optim.name=adamw --set data.batch_size=8)
MLP=(--set data.path=set.h5 --set model.hidden=96,64,32 --set train.seed=11 --set data.batch_size=8)
CNN=(--set data.path=img.h5 --set model.name=cnn --set train.seed=7 --set data.batch_size=8)
PINNED=(OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_allreduce_algorithm=1
  OMPI_MCA_coll_tuned_reduce_algorithm=1 OMPI_MCA_coll_tuned_reduce_scatter_block_algorithm=1)
train() {  # ranks run_dir args...
  local ranks=$1 dir=$2
  shift 2
  (export "${PINNED[@]}" && $MPIEXEC $MPIEXEC_FLAGS -np "$ranks" "$cohort" train \
    --set train.log_every=1000 --set checkpoint.every_steps=1000 --set checkpoint.keep_last=0 \
    --set train.run_dir="$dir" "$@" >"$dir.log" 2>&1) ||
    { echo "FAIL: $dir"; cat "$dir.log"; exit 1; }
}
# initial RANKS NAME ARGS...: the values after one step at learning rate 1e-30 (0 is refused),
# exported whole.
initial() {
  local n=$1 name=$2
  shift 2
  train "$n" "$name" "$@" --set optim.name=sgd --set optim.momentum=0 --set optim.lr=1e-30 \
    --set train.max_steps=1
  "$cohort" ckpt export "$name/checkpoints/step-00000001" -o "$name.h5" >/dev/null
}
same() {  # REF RUN...: every exported tensor within 1e-20 (and the same names)
  /usr/bin/python3 - "$@" <<'PY'
import sys, h5py, numpy as np
def load(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[...]) if isinstance(o, h5py.Dataset) else None)
    return out
ref = load(sys.argv[1] + ".h5")
assert ref, sys.argv[1]
for run in sys.argv[2:]:
    got = load(run + ".h5")
    assert got.keys() == ref.keys(), (run, sorted(set(got) ^ set(ref)))
    # BatchNorm's statistics move in the step's forward, on each rank's own batch: not compared.
    moving = ("running_mean", "running_var", "num_batches_tracked")
    bad = [k for k in ref if not k.endswith(moving) and
           np.abs(ref[k].astype(np.float64) - got[k]).max(initial=0) > 1e-20]
    assert not bad, f"{run}: initial values differ from {sys.argv[1]}'s in {bad}"
    print(f"{run}: {len(ref)} initial tensors equal to {sys.argv[1]}'s")
PY
}
OWN=(--set model.materialize=own)
initial 1 G1 "${GPT[@]}" "${OWN[@]}"
initial 4 G4 "${GPT[@]}" "${OWN[@]}"
initial 4 G4z3 "${GPT[@]}" "${OWN[@]}" --set parallel.zero=3
initial 4 Gp2z3 "${GPT[@]}" "${OWN[@]}" --set parallel.zero=3 --set parallel.pipeline_stages=2 \
  --set parallel.micro_batches=2
initial 4 Gt2 "${GPT[@]}" "${OWN[@]}" --set parallel.tensor=2
same G1 G4 G4z3 Gp2z3 Gt2
initial 1 M1 "${MLP[@]}" "${OWN[@]}"
initial 4 M4z3 "${MLP[@]}" "${OWN[@]}" --set parallel.zero=3
same M1 M4z3
initial 1 C1 "${CNN[@]}" "${OWN[@]}"
initial 2 C2 "${CNN[@]}" "${OWN[@]}"
same C1 C2
initial 1 Gwhole "${GPT[@]}"
/usr/bin/python3 - <<'PY'
import h5py, numpy as np
def load(path):
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda n, o: out.__setitem__(n, o[...]) if isinstance(o, h5py.Dataset) else None)
    return out
own, whole = load("G1.h5"), load("Gwhole.h5")
assert own.keys() == whole.keys()
assert any(not np.array_equal(own[k], whole[k]) for k in own), "own drew what whole drew"
for name, v in own.items():
    norm = name.rsplit(".", 2)[-2].startswith("ln")  # ln1, ln2, ln_f: LayerNorms
    if name.endswith("weight") and v.ndim == 2:  # GPT-2's N(0, 0.02), embeddings included
        assert abs(v.std() - 0.02) < 0.004 and abs(v.mean()) < 0.004, (name, v.mean(), v.std())
    elif norm and name.endswith("weight"):
        assert (v == 1).all(), name
    elif norm and name.endswith("bias"):
        assert (np.abs(v) <= 1e-20).all(), name
    elif name.endswith("bias"):  # a linear layer's: within 1/sqrt(fan_in)
        fan_in = own[name[:-len("bias")] + "weight"].shape[1]
        assert np.abs(v).max() <= 1 / np.sqrt(fan_in) and v.std() > 0, name
print(f"own: {len(own)} tensors follow the initialisation's laws and differ from whole's")
PY
# 2. Training from those values: ZeRO 3 equals DDP.
train 4 T0 "${GPT[@]}" "${OWN[@]}" --set optim.lr=0.003 --set train.max_steps=20
train 4 T3 "${GPT[@]}" "${OWN[@]}" --set optim.lr=0.003 --set train.max_steps=20 \
  --set parallel.zero=3
/usr/bin/python3 "$here/zero_check.py" same T0 T3
# 3. Start-up memory, measured.
COHORT_BUILD_DIR=$(dirname "$cohort") "$here/../../bench/zero_peak_rss.sh" --width 512 \
  --blocks 12 --budget-mib 100000 --json >rss.json
/usr/bin/python3 - <<'PY'
import json
r = json.load(open("rss.json"))
runs = {x["run"]: x for x in r["runs"]}
whole, own = runs["zero3"]["startup_max_mib"], runs["zero3-own"]["startup_max_mib"]
print(f"ZeRO 3 start-up peak RSS per rank: whole {whole:.0f} MiB, own {own:.0f} MiB "
      f"(model {r['model_mib']:.0f} MiB)")
assert own <= whole - 0.4 * r["model_mib"], r
PY
# The pipeline's border shapes are a pass over the skeleton too, block by block with each block's
# pages given back: 2 stages x 2 data ranks of the same GPT under ZeRO 3, own at least a quarter
# of the model below whole at start-up (each rank holds half its stage's parameters and one block,
# not the model; without ZeRO 3, DDP's gradient buckets for the stage, made at start-up, would
# bring own back to whole's peak). On a kernel that backs reads of untouched pages (Linux 6.18
# here) a pass without the release holds the whole model.
for m in whole own; do
  train 4 "P$m" --set data.path=tok.h5 --set model.name=gpt --set model.width=512 \
    --set model.heads=8 --set model.blocks=12 --set model.context=16 --set model.dropout=0 \
    --set data.batch_size=4 --set train.max_steps=1 --set train.malloc_tuning=false \
    --set parallel.pipeline_stages=2 --set parallel.zero=3 --set model.materialize="$m"
done
/usr/bin/python3 - <<'PY'
import json
def startup(run):
    with open(f"{run}/metrics.jsonl") as f:
        records = [r for r in map(json.loads, f) if r.get("event") == "memory"]
    return max(records[-1]["startup_peak_rss_bytes"]) / 2**20
with open("Pown/metrics.jsonl") as f:
    params = [r for r in map(json.loads, f) if r.get("event") == "run"][-1]["parameters"]
model = 4 * params / 2**20
whole, own = startup("Pwhole"), startup("Pown")
print(f"2 stages x 2 data under ZeRO 3, start-up peak RSS per rank: whole {whole:.0f} MiB, own {own:.0f} MiB "
      f"(model {model:.0f} MiB)")
assert own <= whole - 0.25 * model, (whole, own, model)
PY
# 4. Refusals.
source "$here/expect_error.sh"
expect "model.init_from" "${MLP[@]}" "${OWN[@]}" --set model.init_from=G1.h5
expect "model.materialize.*not one of whole|own" "${MLP[@]}" --set model.materialize=sometimes
