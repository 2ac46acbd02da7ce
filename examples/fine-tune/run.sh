#!/usr/bin/env bash
# Fine-tuning end to end on real data: the small ResNet pretrained on five Fashion-MNIST classes,
# then fine-tuned on the other five from 30 images each (a new head, the whole backbone trained),
# against the same training from scratch for the same steps. Prints both accuracies on
# the 5000 test images of those five classes, and with --json their summaries as one object.
#   examples/fine-tune/run.sh [RANKS] [--json] [--set section.key=value ...]  (--set: all three)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../common.sh
source "$here/../common.sh"
json=false
args=()
for arg in "${train_args[@]}"; do
  if [ "$arg" = --json ]; then json=true; else args+=("$arg"); fi
done
for split in train test; do
  if [ ! -f "data/fashion-mnist-$split.h5" ]; then
    "$cohort" data import fashion-mnist --split "$split" --out "data/fashion-mnist-$split.h5" >&2
  fi
done
pick() {  # pick IN CLASSES OUT [--per-class N]
  [ -f "$3" ] || "$cohort" data select "$1" --classes "$2" --out "$3" "${@:4}" >&2
}
pick data/fashion-mnist-train.h5 0,1,2,3,4 data/fm-first5-train.h5
pick data/fashion-mnist-test.h5 0,1,2,3,4 data/fm-first5-test.h5
pick data/fashion-mnist-train.h5 5,6,7,8,9 data/fm-last5-few.h5 --per-class 30
pick data/fashion-mnist-test.h5 5,6,7,8,9 data/fm-last5-test.h5
train() {  # train INI RUN_DIR [--set ...]: the summary as JSON on stdout, progress on stderr
  "$cohort" launch -n "$ranks" -- "$cohort" train --config "$1" --set train.run_dir="$2" "${@:3}" \
    "${args[@]}" --json
}
mkdir -p runs
[ -f runs/fine-tune-pretrain/checkpoints/latest ] ||
  train "$here/pretrain.ini" runs/fine-tune-pretrain >runs/summary-pretrain.json
train "$here/finetune.ini" runs/fine-tune >runs/summary-finetune.json
train "$here/finetune.ini" runs/fine-tune-scratch --set model.init_from= --set model.freeze= \
  >runs/summary-scratch.json
/usr/bin/python3 - "$json" <<'PY'
import json, sys
tuned, scratch = (json.load(open(f"runs/summary-{n}.json")) for n in ("finetune", "scratch"))
if sys.argv[1] == "true":
    print(json.dumps({"fine_tuned": tuned, "from_scratch": scratch}, indent=2))
else:
    for name, s in (("fine-tuned", tuned), ("from scratch", scratch)):
        print(f"{name:12}: accuracy {s['eval']['accuracy']:.4f} on {s['eval']['samples']} test "
              f"images after {s['steps']} steps")
PY
