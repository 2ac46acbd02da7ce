#!/usr/bin/env bash
# examples/gpt-tiny end to end on 2 ranks: the validation loss (nats per byte) must drop well below
# the unigram entropy of the training bytes — what a model that ignores context can reach.
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
COHORT=$cohort bash "$(dirname "$0")/../../examples/gpt-tiny/run.sh" 2 --set train.log_every=0 \
  --json >summary.json
/usr/bin/python3 - <<'PY'
import json, math
import h5py, numpy as np
s = json.load(open("summary.json"))
with h5py.File("data/corpus-train.h5") as f:
    counts = np.bincount(f["tokens"][:], minlength=256).astype(float)
p = counts[counts > 0] / counts.sum()
entropy = float(-(p * np.log(p)).sum())
loss = s["eval"]["loss"]
print(f"gpt-tiny, {s['ranks']} ranks, {s['steps']} steps in {s['seconds']:.0f} s: validation loss "
      f"{loss:.3f} nats/byte (perplexity {s['eval']['perplexity']:.2f}) against a unigram "
      f"entropy of {entropy:.3f}: {loss / entropy:.2f} of it")
assert loss < 0.8 * entropy, f"validation loss {loss} not well below the unigram entropy {entropy}"
PY
