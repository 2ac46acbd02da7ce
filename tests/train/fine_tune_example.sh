#!/usr/bin/env bash
# The fine-tuning example end to end (issue 18, §3): examples/fine-tune/run.sh on 2 ranks. Its
# data first, against h5py: `cohort data select` kept exactly the samples of the chosen classes
# (the first 30 of each for the few-shot set), in order, inputs byte-equal, labels relabelled
# 0..4 in the order given, class names carried. Then the pretrained run's weights reach the
# fine-tuned run with its head skipped (model.init_skip), and the fine-tuned model beats the
# same training from scratch (the same steps) on the 5000 test images of those classes by at
# least MARGIN (accuracy points, as a fraction).
#   fine_tune_example.sh COHORT WORKDIR MARGIN
set -euo pipefail
cohort=$1 work=$2 margin=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
COHORT=$cohort bash "$(dirname "$0")/../../examples/fine-tune/run.sh" 2 --json \
  --set train.log_every=0 >summary.json 2>run.log || { tail -20 run.log >&2; exit 1; }
grep -qE "^init_from .*: loaded [0-9]+ tensor\(s\); skipped \(model\.init_skip\): head\.(weight|bias), head\.(weight|bias)$" \
  run.log || { grep init_from run.log >&2; echo "FAIL: no init_from line with the head skipped" >&2; exit 1; }
/usr/bin/python3 - "$margin" <<'PY'
import json, sys
import h5py, numpy as np
margin = float(sys.argv[1])
with h5py.File("data/fashion-mnist-train.h5") as full, h5py.File("data/fm-last5-few.h5") as few:
    labels = full["targets"][:]
    rows = np.concatenate([np.flatnonzero(labels == c)[:30] for c in range(5, 10)])
    rows.sort()
    assert np.array_equal(few["inputs"][:], full["inputs"][rows]), "inputs differ"
    assert np.array_equal(few["targets"][:], labels[rows] - 5), "labels not relabelled 5..9 -> 0..4"
    assert few.attrs["classes"] == 5
    names = json.loads(full.attrs["class_names"])
    assert json.loads(few.attrs["class_names"]) == names[5:], few.attrs["class_names"]
    print(f"data select: {len(rows)} of {len(labels)} samples (30 per class), relabelled, "
          f"names {json.loads(few.attrs['class_names'])}")
with h5py.File("data/fashion-mnist-test.h5") as full, h5py.File("data/fm-last5-test.h5") as test:
    labels = full["targets"][:]
    assert np.array_equal(test["targets"][:], labels[labels >= 5] - 5)
s = json.load(open("summary.json"))
tuned, scratch = s["fine_tuned"], s["from_scratch"]
assert tuned["steps"] == scratch["steps"] and tuned["ranks"] == scratch["ranks"] == 2
a, b = tuned["eval"]["accuracy"], scratch["eval"]["accuracy"]
print(f"fine-tuned {a:.4f}, from scratch {b:.4f} on {tuned['eval']['samples']} test images after "
      f"{tuned['steps']} steps each (2 ranks); the difference must be at least {margin}")
assert a >= b + margin, f"fine-tuning did not win by {margin}: {a} vs {b}"
PY
