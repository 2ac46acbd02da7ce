#!/usr/bin/env bash
# Distribution shown by equivalence, through `cohort train` end to end:
#  - the same config and rank count give a bit-identical loss curve (determinism);
#  - 2 ranks x batch 32 train like 1 process x batch 64 (same seed), and so do gradient
#    accumulation (1 x 32 x 2 steps, 2 x 16 x 2 steps), to floating-point tolerance;
#  - the CNN trains alike with channels-last (NHWC) and NCHW weights on 2 ranks, so DDP's bucket
#    slots follow a parameter's own layout correctly;
#  - train.precision=bf16 (CPU autocast here, CUDA autocast on a GPU) is really in effect (the
#    curve differs from float32) and trains as well.
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$cohort" data make-synthetic --kind classification --samples 2048 --features 24 --classes 5 \
  --seed 4 --out set.h5 >/dev/null
train() {  # ranks batch accumulation run_dir [--set ...]; 0 ranks: one process without mpirun
  local launch=($MPIEXEC $MPIEXEC_FLAGS -np "$1")
  [ "$1" = 0 ] && launch=()
  "${launch[@]}" "$cohort" train --set data.path=set.h5 --set data.batch_size="$2" \
    --set optim.accumulation="$3" --set train.run_dir="$4" --set model.hidden=64,32 \
    --set optim.lr=0.05 --set optim.momentum=0.9 --set train.epochs=3 --set train.seed=11 \
    --set train.log_every=0 --set data.prefetch=2 "${@:5}" >"$4.log"
}
train 2 32 1 a
train 2 32 1 b
train 0 64 1 one  # a singleton: MPI_Init without a launcher
train 1 32 2 acc1
train 2 16 2 acc2
train 2 32 1 bf16 --set train.precision=bf16
"$cohort" data make-synthetic --kind images --samples 512 --image-size 12 --seed 2 \
  --out images.h5 >/dev/null
for layout in true false; do
  $MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" train --set data.path=images.h5 --set model.name=cnn \
    --set model.width=8 --set model.blocks=1 --set model.channels_last=$layout \
    --set data.batch_size=16 --set optim.lr=0.05 --set optim.momentum=0.9 --set train.epochs=1 \
    --set train.log_every=0 --set train.run_dir=cnn-$layout >cnn-$layout.log
done
/usr/bin/python3 - <<'PY'
import json, math
def curve(d):
    return [r["loss"] for r in map(json.loads, open(f"{d}/metrics.jsonl")) if r["event"] == "step"]
a, b, one, acc1, acc2 = (curve(d) for d in ("a", "b", "one", "acc1", "acc2"))
assert len(a) == 96 and a == b, "2-rank runs differ: not deterministic"
print(f"determinism: {len(a)} steps, bit-identical loss curves")
for name, other in (("1 x 64", one), ("1 x 32 x 2 accumulated", acc1), ("2 x 16 x 2 accumulated", acc2)):
    assert len(other) == len(a), (name, len(other))
    rel = [abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, other)]
    print(f"2 x 32 vs {name}: relative loss difference <= {max(rel[:10]):.1e} over the first 10 "
          f"steps (float32 rounding), <= {max(rel):.1e} over all {len(a)}")
    # Summation order differs (two half-batch means vs one mean), so float32 rounding drifts.
    assert max(rel[:10]) < 1e-5 and max(rel) < 1e-3, f"{name}: {max(rel[:10])} {max(rel)}"
assert a[-1] < 0.5 * a[0], f"did not learn: {a[0]} -> {a[-1]}"
bf16 = curve("bf16")
assert len(bf16) == len(a) and bf16 != a, "bf16 autocast changed nothing"
rel = [abs(x - y) / y for x, y in zip(bf16, a)]
print(f"bf16 autocast vs float32: relative loss difference {max(rel[:10]):.1e} over the first 10 "
      f"steps; final loss {bf16[-1]:.4f} vs {a[-1]:.4f}")
assert max(rel[:10]) < 0.05 and bf16[-1] < 1.2 * a[-1] + 0.02, (max(rel[:10]), bf16[-1], a[-1])
nhwc, nchw = curve("cnn-true"), curve("cnn-false")
assert len(nhwc) == len(nchw) == 16, (len(nhwc), len(nchw))
rel = max(abs(x - y) / max(abs(y), 1e-12) for x, y in zip(nhwc, nchw))
print(f"cnn on 2 ranks, channels-last vs NCHW: relative loss difference <= {rel:.1e}")
assert rel < 1e-3, rel  # different convolution kernels round differently, nothing more
PY
