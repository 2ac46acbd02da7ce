#!/usr/bin/env bash
# Activation recompute (model.recompute) through `cohort train`, on real processes:
#  - the GPT at the gpt-tiny example's size (width 128, 4 heads, 2 blocks, context 64, batch 16)
#    with dropout 0.1, AdamW, 10 steps: recompute none, blocks and every:2 end bit-identical
#    (the recomputation restores the random generator, so dropout draws the same masks), and the
#    activation bytes the first forward leaves held (metrics.jsonl's `memory` record) are at most
#    half without recompute for `blocks`;
#  - the CNN (BatchNorm, channels-last): bit-identical, buffers included (a recomputation does not
#    move the running statistics again);
#  - 2 ranks: the GPT under DDP (its tied embedding is used by the first and the last segment, so
#    its gradient arrives in two parts), and with ZeRO 2, bf16 and overlap: bit-identical to the
#    same runs without recompute; 2 pipeline stages: the same;
#  - the MLP with every:2; malformed values and a model without blocks: one line, exit 2.
set -euo pipefail
cohort=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work"
check() { /usr/bin/python3 "$here/zero_check.py" "$@"; }
"$cohort" data make-synthetic --kind tokens --tokens 60000 --vocab 256 --seq-len 64 --seed 3 \
  --out tok.h5 >/dev/null
"$cohort" data make-synthetic --kind images --samples 256 --image-size 8 --seed 2 \
  --out img.h5 >/dev/null
"$cohort" data make-synthetic --kind classification --samples 1024 --features 32 --classes 5 \
  --seed 4 --out set.h5 >/dev/null
train() {  # ranks run_dir args...
  local ranks=$1 dir=$2
  shift 2
  $MPIEXEC $MPIEXEC_FLAGS -np "$ranks" "$cohort" train --set train.log_every=1000 \
    --set train.max_steps=10 --set checkpoint.every_steps=10 --set train.run_dir="$dir" "$@" \
    >"$dir.log" 2>&1 || { echo "FAIL: $dir"; cat "$dir.log"; exit 1; }
}
GPT=(--set data.path=tok.h5 --set model.name=gpt --set model.width=128 --set model.heads=4
  --set model.blocks=2 --set model.context=64 --set model.dropout=0.1 --set optim.name=adamw
  --set optim.lr=0.003 --set train.seed=0)
for r in none blocks every:2; do train 1 "gpt-$r" "${GPT[@]}" --set data.batch_size=16 \
  --set model.recompute=$r; done
check same gpt-none gpt-blocks gpt-every:2
/usr/bin/python3 - <<'PY'
import json
def held(run):
    return next(r["activation_bytes"] for r in map(json.loads, open(f"{run}/metrics.jsonl"))
                if r["event"] == "memory")
none, blocks, two = held("gpt-none"), held("gpt-blocks"), held("gpt-every:2")
print(f"GPT (gpt-tiny size), activation bytes held after the first forward: none {none}, "
      f"blocks {blocks} ({blocks / none:.3f}), every:2 {two} ({two / none:.3f})")
assert blocks <= 0.5 * none and two <= 0.5 * none, (none, blocks, two)
PY
CNN=(--set data.path=img.h5 --set model.name=cnn --set data.batch_size=16 --set train.seed=3)
train 1 cnn-none "${CNN[@]}"
train 1 cnn-blocks "${CNN[@]}" --set model.recompute=blocks
check same cnn-none cnn-blocks
small=("${GPT[@]}" --set model.width=64 --set data.batch_size=8)
for r in none blocks; do
  train 2 "ddp-$r" "${small[@]}" --set model.recompute=$r
  train 2 "zero2-$r" "${small[@]}" --set model.recompute=$r --set parallel.zero=2 \
    --set train.precision=bf16 --set parallel.overlap=true
  train 2 "pipe-$r" "${small[@]}" --set model.recompute=$r --set model.dropout=0 \
    --set parallel.pipeline_stages=2
done
check same ddp-none ddp-blocks
check same zero2-none zero2-blocks
check same pipe-none pipe-blocks
MLP=(--set data.path=set.h5 --set model.hidden=64,64,32 --set data.batch_size=16)
train 2 mlp-none "${MLP[@]}"
train 2 mlp-every2 "${MLP[@]}" --set model.recompute=every:2
check same mlp-none mlp-every2
source "$here/expect_error.sh"
for bad in every:0 every:x sometimes; do
  expect "model.recompute.*not none, blocks or every:K" "${MLP[@]}" --set model.recompute=$bad
done
