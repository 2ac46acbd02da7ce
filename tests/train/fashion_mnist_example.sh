#!/usr/bin/env bash
# examples/fashion-mnist end to end on 2 ranks (real images from dataset-fashion-mnist): the test
# accuracy must reach 90 %. About 5-7 minutes on the 2-core CI machine.
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
COHORT=$cohort bash "$(dirname "$0")/../../examples/fashion-mnist/run.sh" 2 \
  --set train.log_every=0 --json >summary.json
/usr/bin/python3 - <<'PY'
import json
s = json.load(open("summary.json"))
acc = s["eval"]["accuracy"]
print(f"fashion-mnist, {s['ranks']} ranks: test accuracy {acc:.4f} after {s['epochs']} epochs, "
      f"{s['seconds']:.0f} s, {s['samples_per_s']:.0f} samples/s")
assert s["eval"]["samples"] == 10000, s
assert acc >= 0.90, f"test accuracy {acc} below 0.90"
PY
