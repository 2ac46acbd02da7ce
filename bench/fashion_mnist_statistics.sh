#!/usr/bin/env bash
# What the Fashion-MNIST importer's statistics are worth (issue 44): the built-in MLP (256, 128;
# SGD 0.05, momentum 0.9; 3 epochs; 2 ranks) trained with the statistics the importer stores now
# (mean 72.94, std 90.02) and with the ones it stored before its fix (mean -7.61, std 49.26,
# pixels read through a signed char), side by side, over seeds 0..2, on the test split.
# The old statistics cannot be given to uint8 inputs any more (the trainer refuses a mean outside
# the inputs' range), so that run reads float32 copies of the same pixels; a third column, the
# float32 copies with the right statistics, shows that the copy alone changes nothing.
#   bench/fashion_mnist_statistics.sh [--json]
# Needs a build (COHORT_BUILD_DIR, default build), mpirun, Debian's dataset-fashion-mnist and
# /usr/bin/python3 with h5py.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${COHORT_BUILD_DIR:-build}/cohort")
json=0
[[ ${1:-} == --json ]] && json=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
for split in train test; do
  "$bin" data import fashion-mnist --split "$split" --out "right-$split.h5" >/dev/null
done
/usr/bin/python3 - <<'PY'
import h5py, numpy as np
for split in ("train", "test"):
    with h5py.File(f"right-{split}.h5") as src:
        for name, mean, std in (("old", -7.61, 49.26), ("float", None, None)):
            with h5py.File(f"{name}-{split}.h5", "w") as dst:
                dst["inputs"] = src["inputs"][...].astype(np.float32)
                dst["targets"] = src["targets"][...]
                for key, value in src.attrs.items():
                    dst.attrs[key] = value
                if mean is not None:
                    dst.attrs["mean"], dst.attrs["std"] = np.array([mean]), np.array([std])
PY
cat >mlp.ini <<'EOF'
[model]
name = mlp
hidden = 256, 128
[data]
batch_size = 128
[optim]
name = sgd
lr = 0.05
momentum = 0.9
[train]
epochs = 3
log_every = 1000
EOF
accuracy() {  # variant seed -> the final test accuracy
  "$bin" launch -n 2 -- "$bin" train --config mlp.ini --set "data.path=$1-train.h5" \
    --set "data.val_path=$1-test.h5" --set "train.seed=$2" --set "train.run_dir=runs/$1-$2" |
    sed -n 's/^final eval: .* accuracy \([0-9.]*\) .*/\1/p'
}
for seed in 0 1 2; do
  for variant in right old float; do echo "$variant $seed $(accuracy "$variant" "$seed")"; done
done >accuracy.txt
/usr/bin/python3 - "$json" <<'PY'
import json, statistics, sys
raw = {(v, int(s)): float(a) for v, s, a in (line.split() for line in open("accuracy.txt"))}
rows = {v: [raw[(v, s)] for s in range(3)] for v in ("right", "old", "float")}
means = {v: statistics.mean(x) for v, x in rows.items()}
if sys.argv[1] == "1":
    print(json.dumps({"accuracy": rows, "mean": means,
                      "gain": means["right"] - means["old"]}, indent=2))
    sys.exit()
print(f"{'seed':>4} {'now (72.94/90.02)':>18} {'before (-7.61/49.26)':>21} {'float32 copy':>13}")
for s in range(3):
    print(f"{s:>4} {rows['right'][s]:>18.4f} {rows['old'][s]:>21.4f} {rows['float'][s]:>13.4f}")
print(f"mean {means['right']:>18.4f} {means['old']:>21.4f} {means['float']:>13.4f}")
print(f"the corrected statistics: +{100 * (means['right'] - means['old']):.1f} points of test accuracy")
PY
