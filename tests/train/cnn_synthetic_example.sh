#!/usr/bin/env bash
# examples/cnn-synthetic end to end on 2 ranks: the CNN learns the synthetic classes (>= 95 %
# validation accuracy on held-out images).
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
COHORT=$cohort bash "$(dirname "$0")/../../examples/cnn-synthetic/run.sh" 2 \
  --set train.log_every=0 --json >summary.json
/usr/bin/python3 - <<'PY'
import json
s = json.load(open("summary.json"))
acc = s["eval"]["accuracy"]
print(f"cnn-synthetic, {s['ranks']} ranks: validation accuracy {acc:.4f}, {s['seconds']:.0f} s, "
      f"{s['samples_per_s']:.0f} samples/s")
assert acc >= 0.95, f"validation accuracy {acc} below 0.95"
PY
