#!/usr/bin/env bash
# An example end to end on 2 ranks through its run.sh (import or make the data, launch, train,
# evaluate): its final evaluation accuracy must reach MIN, and the run directory must hold the
# resolved config and the metrics log.
#   example_accuracy.sh COHORT WORKDIR EXAMPLE MIN
set -euo pipefail
cohort=$1 work=$2 example=$3 min=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
COHORT=$cohort bash "$(dirname "$0")/../../examples/$example/run.sh" 2 --set train.log_every=0 \
  --json >summary.json
/usr/bin/python3 - "$example" "$min" <<'PY'
import json, sys
example, floor = sys.argv[1], float(sys.argv[2])
s = json.load(open("summary.json"))
acc = s["eval"]["accuracy"]
print(f"{example}, {s['ranks']} ranks: accuracy {acc:.4f} on {s['eval']['samples']} held-out "
      f"samples after {s['steps']} steps ({s['epochs']} epochs), {s['seconds']:.0f} s, "
      f"{s['samples_per_s']:.0f} samples/s")
assert s["ranks"] == 2, s
assert acc >= floor, f"accuracy {acc} below {floor}"
PY
ls runs/*/config.resolved.ini runs/*/metrics.jsonl >/dev/null
