#!/usr/bin/env bash
# examples/digits end to end on 2 ranks (real digits data, imported and split by run.sh): the
# validation accuracy must reach 96 %.
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
COHORT=$cohort bash "$(dirname "$0")/../../examples/digits/run.sh" 2 --set train.log_every=0 --json \
  >summary.json
/usr/bin/python3 - <<'PY'
import json
s = json.load(open("summary.json"))
acc = s["eval"]["accuracy"]
print(f"digits, {s['ranks']} ranks: validation accuracy {acc:.4f} after {s['steps']} steps, "
      f"{s['seconds']:.1f} s, {s['samples_per_s']:.0f} samples/s")
assert s["ranks"] == 2, s
assert acc >= 0.96, f"accuracy {acc} below 0.96"
PY
test -s runs/digits/config.resolved.ini && test -s runs/digits/metrics.jsonl
