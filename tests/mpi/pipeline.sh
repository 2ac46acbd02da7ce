#!/usr/bin/env bash
# Pipeline and tensor parallelism through `cohort train`, on real mpirun ranks.
#   pipeline.sh COHORT WORK equivalence|memory|bad_config|resume
# equivalence: the MLP and the GPT, 2 stages (2 ranks) and 2 stages x 2 replicas (4 ranks), under
#   GPipe and 1F1B, the CNN (BatchNorm: against one process accumulating the same micro-batches)
#   on 2 stages, plus the GPT 2-way tensor-parallel and 2 stages x 2-way tensor, and clipping by the
#   global norm (MLP on 2 stages, GPT on 2 stages x 2-way tensor): the parameters
#   after 10 steps (exported from the final checkpoint, tensor parts reassembled) equal one
#   process's within 1e-5, and so do the loss curves and the final evaluation (run through the
#   pipeline, forward only). The GPT's tied token table: in every pipelined GPT run, what the
#   first stage and what the last stage wrote of their copies (the table, its AdamW state: the
#   checkpoint stores a shared tensor once, spread among its holders) each equals one process's
#   (pipeline_check.py tied_copies), and each stage must have written some of it.
# memory: M = 16, p = 2: 1F1B holds at most p - s micro-batches of activations on stage s,
#   GPipe all M; the heap growth measured inside the steps shows it too. Then a smoke run of
#   `cohort bench pipeline`.
# bad_config: more stages than blocks, a world not divisible, heads not divisible by the tensor
#   size, a model without tensor-parallel layers, micro-batches not dividing the batch, GPUs asked
#   for on a machine without: one clear line each, exit 2.
# layout: `cohort env --parallel` prints the mapping the trainer uses (the trainer's own groups
#   are checked by equivalence), alone and inside mpirun, and refuses impossible ones.
# resume: a 2-stage x 2-replica checkpoint resumes on 2 ranks (1 replica) and on 1 process (no
#   pipeline); a parallel.tensor = 2 checkpoint resumes with 1, with 4 and with 1 x 4 data ranks
#   under ZeRO 2 (its parts joined and cut again), each ending like the uninterrupted run, and
#   its export holds whole tensors, and so does model.init_from of it; one without the layouts
#   of its parts is refused clearly, one whose layout is wrong is skipped with a warning.
set -euo pipefail
cohort=$1 work=$2 mode=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$cohort" data make-synthetic --kind classification --samples 1024 --features 24 --classes 5 \
  --seed 4 --out set.h5 >/dev/null
"$cohort" data make-synthetic --kind tokens --tokens 40000 --vocab 64 --seq-len 16 --seed 3 \
  --out tok.h5 >/dev/null
"$cohort" data make-synthetic --kind classification --samples 200 --features 24 --classes 5 \
  --seed 5 --out val.h5 >/dev/null
"$cohort" data make-synthetic --kind tokens --tokens 3000 --vocab 64 --seq-len 16 --seed 6 \
  --out tok_val.h5 >/dev/null
MLP=(--set data.path=set.h5 --set data.val_path=val.h5 --set model.hidden=64,32,16
  --set optim.lr=0.05 --set optim.momentum=0.9 --set train.seed=11)
GPT=(--set data.path=tok.h5 --set data.val_path=tok_val.h5 --set model.name=gpt
  --set model.width=32 --set model.heads=4 --set model.blocks=3 --set model.context=16
  --set model.dropout=0 --set optim.name=adamw --set optim.lr=0.003 --set train.seed=5)
train() {  # ranks run_dir args...; 0 ranks: one process without mpirun
  local ranks=$1 dir=$2
  shift 2
  local launch=($MPIEXEC $MPIEXEC_FLAGS -np "$ranks")
  [ "$ranks" = 0 ] && launch=()
  "${launch[@]}" "$cohort" train --set train.log_every=0 --set train.max_steps=10 \
    --set checkpoint.every_steps=10 --set train.run_dir="$dir" "$@" >"$dir.log" 2>&1
}
export_final() { "$cohort" ckpt export "$1/checkpoints/step-00000010" -o "$1.h5" >/dev/null; }

case $mode in
equivalence)
  for model in MLP GPT; do
    declare -n args=$model
    train 0 "$model-one" "${args[@]}" --set data.batch_size=16
    export_final "$model-one"
    for schedule in gpipe 1f1b; do
      train 2 "$model-p2-$schedule" "${args[@]}" --set data.batch_size=16 \
        --set parallel.pipeline_stages=2 --set parallel.schedule=$schedule
      train 4 "$model-p2d2-$schedule" "${args[@]}" --set data.batch_size=8 \
        --set parallel.pipeline_stages=2 --set parallel.micro_batches=2 \
        --set parallel.schedule=$schedule
      export_final "$model-p2-$schedule"
      export_final "$model-p2d2-$schedule"
    done
  done
  # The CNN's BatchNorm normalises each micro-batch: its reference is one process accumulating
  # the same 4 micro-batches (the same samples in the same order).
  "$cohort" data make-synthetic --kind images --samples 256 --image-size 8 --seed 2 \
    --out img.h5 >/dev/null
  CNN=(--set data.path=img.h5 --set model.name=cnn --set model.width=4 --set model.blocks=1
    --set optim.lr=0.05 --set optim.momentum=0.9 --set train.seed=3)
  train 0 CNN-one "${CNN[@]}" --set data.batch_size=4 --set optim.accumulation=4
  export_final CNN-one
  for schedule in gpipe 1f1b; do
    train 2 "CNN-p2-$schedule" "${CNN[@]}" --set data.batch_size=16 \
      --set parallel.pipeline_stages=2 --set parallel.schedule=$schedule
    export_final "CNN-p2-$schedule"
  done
  train 2 GPT-t2 "${GPT[@]}" --set data.batch_size=16 --set parallel.tensor=2
  train 4 GPT-p2t2 "${GPT[@]}" --set data.batch_size=16 --set parallel.tensor=2 \
    --set parallel.pipeline_stages=2
  export_final GPT-t2
  export_final GPT-p2t2
  # Clipping: the norm is one sum over stages and tensor parts (each parameter once).
  train 0 MLP-one-clip "${MLP[@]}" --set data.batch_size=16 --set optim.clip_norm=0.05
  train 2 MLP-p2-clip "${MLP[@]}" --set data.batch_size=16 --set optim.clip_norm=0.05 \
    --set parallel.pipeline_stages=2
  train 0 GPT-one-clip "${GPT[@]}" --set data.batch_size=16 --set optim.clip_norm=0.05
  train 4 GPT-p2t2-clip "${GPT[@]}" --set data.batch_size=16 --set optim.clip_norm=0.05 \
    --set parallel.tensor=2 --set parallel.pipeline_stages=2
  for run in MLP-one-clip MLP-p2-clip GPT-one-clip GPT-p2t2-clip; do export_final $run; done
  /usr/bin/python3 "$here/pipeline_check.py" equivalence
  ;;
memory)
  "$cohort" data make-synthetic --kind classification --samples 16384 --features 64 --classes 5 \
    --seed 4 --out deep.h5 >/dev/null
  for schedule in gpipe 1f1b; do
    train 2 "mem-$schedule" --set data.path=deep.h5 --set data.batch_size=8192 \
      --set model.hidden=256,256,256,256 --set train.max_steps=3 --set checkpoint.every_steps=0 \
      --set parallel.pipeline_stages=2 --set parallel.micro_batches=16 \
      --set parallel.schedule=$schedule
  done
  /usr/bin/python3 "$here/pipeline_check.py" memory
  # The bubble benchmark runs the same executor: a smoke run (its figures are not timed here).
  $MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" bench pipeline --steps 1 --micro-batches 1 4 \
    --forward-ms 1 --json >bench.json
  /usr/bin/python3 "$here/pipeline_check.py" bench
  ;;
bad_config)
  expect() {  # ranks "message" args...: exit code 2 and the message, on one line
    local ranks=$1 message=$2 rc=0
    shift 2
    train "$ranks" bad "$@" || rc=$?
    [ "$rc" = 2 ] || { echo "exit $rc, wanted 2: $*"; cat bad.log; exit 1; }
    grep -q "^cohort: error: .*$message" bad.log || { echo "no '$message':"; cat bad.log; exit 1; }
    echo "ok: $(grep -m1 '^cohort: error' bad.log)"
  }
  expect 3 "more than the model's 2 blocks" "${MLP[@]}" --set model.hidden=8 \
    --set parallel.pipeline_stages=3
  expect 3 "world size 3 is not divisible by parallel.pipeline_stages (2)" "${MLP[@]}" \
    --set parallel.pipeline_stages=2
  expect 2 "model.heads = 3 is not divisible by parallel.tensor = 2" "${GPT[@]}" \
    --set model.heads=3 --set model.width=24 --set parallel.tensor=2
  expect 2 "model mlp has no tensor-parallel layers" "${MLP[@]}" --set parallel.tensor=2
  expect 2 "data.batch_size = 30 is not divisible by parallel.micro_batches = 4" "${MLP[@]}" \
    --set data.batch_size=30 --set parallel.pipeline_stages=2
  expect 2 "parallel.partition adds up to 3 blocks; the model has 4" "${MLP[@]}" \
    --set parallel.pipeline_stages=2 --set parallel.partition=1,2
  expect 0 "parallel.devices: cuda:0 asked for, but this machine has no CUDA device" "${MLP[@]}" \
    --set parallel.devices=cuda:0,cuda:1
  ;;
layout)
  "$cohort" env --parallel pipeline=2,tensor=2 --world 8 >layout.txt
  grep -q "^layout: world 8 = data 2 x pipeline 2 x tensor 2" layout.txt
  grep -q "^rank 5: data 0 stage 1 tensor 1 | data group \[5 7\] pipeline \[1 5\] tensor \[4 5\]$" \
    layout.txt
  $MPIEXEC $MPIEXEC_FLAGS -np 4 "$cohort" env --parallel pp=2 --json >layout.json
  /usr/bin/python3 - <<'PY'
import json
layout = json.load(open("layout.json"))  # printed once, by rank 0
assert (layout["world"], layout["data"], layout["pipeline_stages"], layout["tensor"]) == (4, 2, 2, 1)
assert [r["stage"] for r in layout["ranks"]] == [0, 0, 1, 1], layout
assert layout["ranks"][3]["pipeline_group"] == [1, 3] and layout["ranks"][3]["node"] == 0
print("env --parallel: mapping and JSON as documented")
PY
  rc=0
  "$cohort" env --parallel pipeline=3 --world 8 2>err.txt || rc=$?
  [ "$rc" = 2 ] || { echo "exit $rc"; exit 1; }
  grep -q "world size 8 is not divisible" err.txt
  rc=0
  "$cohort" env --parallel stages=2 2>err.txt || rc=$?
  [ "$rc" = 2 ] || { echo "exit $rc"; exit 1; }
  grep -q "is not pipeline=N or tensor=N" err.txt
  echo "env --parallel: impossible layouts refused (exit 2)"
  ;;
resume)
  # 10 steps straight, and 5 + 5 with a change of layout in between.
  train 4 straight "${GPT[@]}" --set data.batch_size=8 --set parallel.pipeline_stages=2
  train 4 parted "${GPT[@]}" --set data.batch_size=8 --set parallel.pipeline_stages=2 \
    --set train.max_steps=5 --set checkpoint.every_steps=5
  cp -r parted parted1
  train 2 parted "${GPT[@]}" --set data.batch_size=16 --set parallel.pipeline_stages=2
  train 0 parted1 "${GPT[@]}" --set data.batch_size=16
  grep -q "resumed from .*step-00000005 at step 5" parted.log
  grep -q "resumed from .*step-00000005 at step 5" parted1.log
  export_final straight
  export_final parted
  export_final parted1
  # Tensor-parallel resharding: a parallel.tensor = 2 checkpoint at step 5 resumed with 1 (one
  # process), with 4, and with 1 x 4 data ranks under ZeRO 2; each ends like the uninterrupted run.
  train 2 tp-straight "${GPT[@]}" --set data.batch_size=16 --set parallel.tensor=2
  train 2 tp "${GPT[@]}" --set data.batch_size=16 --set parallel.tensor=2 --set train.max_steps=5 \
    --set checkpoint.every_steps=5
  for run in tp1 tp4 tp1d4z2 tp-old; do cp -r tp "$run"; done
  train 0 tp1 "${GPT[@]}" --set data.batch_size=16
  train 4 tp4 "${GPT[@]}" --set data.batch_size=16 --set parallel.tensor=4
  train 4 tp1d4z2 "${GPT[@]}" --set data.batch_size=4 --set parallel.zero=2
  for run in tp1 tp4 tp1d4z2; do
    grep -q "resumed from .*step-00000005 at step 5" "$run.log" || { cat "$run.log"; exit 1; }
    export_final "$run"
  done
  export_final tp-straight
  # model.init_from of a tensor-parallel checkpoint takes the joined tensors.
  train 0 tp-init "${GPT[@]}" --set data.batch_size=16 --set train.max_steps=1 \
    --set model.init_from=tp-straight/checkpoints
  grep -q "^init_from tp-straight/checkpoints/step-00000010: loaded 40 tensor(s)" tp-init.log ||
    { echo "init_from a tensor-parallel checkpoint:"; cat tp-init.log; exit 1; }
  # A checkpoint without the layouts of its parts (an older Cohort's) is refused in one line.
  /usr/bin/python3 - tp-old/checkpoints/step-00000005/manifest.json <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["tensors"] = [t for t in m["tensors"] if not t["name"].startswith("layout.")]
json.dump(m, open(sys.argv[1], "w"))
PY
  rc=0
  train 0 tp-old "${GPT[@]}" --set data.batch_size=16 || rc=$?
  [ "$rc" = 2 ] || { echo "tensor split change without layouts: exit $rc"; cat tp-old.log; exit 1; }
  grep "^cohort: error: .*written with parallel.tensor = 2 without the layouts of its parts" \
    tp-old.log
  # A layout that does not describe its parts (here: the whole's length, rewritten in a shard,
  # read without verification) rejects the checkpoint with a warning naming the tensor; nothing
  # else of it is used, and the run starts over.
  cp -r tp tp-bad
  /usr/bin/python3 - tp-bad/checkpoints/step-00000005 <<'PY'
import glob, h5py, sys
for path in glob.glob(sys.argv[1] + "/shard-*.h5"):
    with h5py.File(path, "r+") as f:
        for name in f["slices"]:
            if name.startswith("layout.") and f["slices/" + name].attrs["offset"] == 0:
                f["slices/" + name][1] = 1 << 40  # the dimension's length
PY
  train 0 tp-bad "${GPT[@]}" --set data.batch_size=16 --set checkpoint.verify=false
  grep -q "warning: skipping checkpoint .*step-00000005: .*layout" tp-bad.log ||
    { echo "a bad layout was not refused"; cat tp-bad.log; exit 1; }
  ! grep -q "resumed from" tp-bad.log || { echo "resumed from a bad layout"; exit 1; }
  /usr/bin/python3 "$here/pipeline_check.py" resume
  ;;
*)
  echo "unknown mode $mode" >&2
  exit 2
  ;;
esac
