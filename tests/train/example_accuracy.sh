#!/usr/bin/env bash
# An example end to end on 2 ranks through its run.sh (import or make the data, launch, train,
# evaluate): its final evaluation accuracy must reach MIN, and the run directory must hold the
# resolved config and the metrics log. With MAX_WAIT, the time the training steps waited for data
# (the monitor's data phase, over every summary window) must be at most that share of the steps.
#   example_accuracy.sh COHORT WORKDIR EXAMPLE MIN [MAX_WAIT]
set -euo pipefail
cohort=$1 work=$2 example=$3 min=$4 max_wait=${5:-}
rm -rf "$work" && mkdir -p "$work" && cd "$work"
COHORT=$cohort bash "$(dirname "$0")/../../examples/$example/run.sh" 2 --set train.log_every=0 \
  --json >summary.json
/usr/bin/python3 - "$example" "$min" "$max_wait" <<'PY'
import glob, json, sys
example, floor, max_wait = sys.argv[1], float(sys.argv[2]), sys.argv[3]
s = json.load(open("summary.json"))
acc = s["eval"]["accuracy"]
print(f"{example}, {s['ranks']} ranks: accuracy {acc:.4f} on {s['eval']['samples']} held-out "
      f"samples after {s['steps']} steps ({s['epochs']} epochs), {s['seconds']:.0f} s, "
      f"{s['samples_per_s']:.0f} samples/s")
assert s["ranks"] == 2, s
assert acc >= floor, f"accuracy {acc} below {floor}"
if max_wait:
    (log,) = glob.glob("runs/*/metrics.jsonl")
    windows = [r["fields"] for r in map(json.loads, open(log)) if r["event"] == "summary"]
    wait = sum(w["data_s"]["mean"] for w in windows) / sum(w["step_s"]["mean"] for w in windows)
    print(f"data wait: {100 * wait:.1f} % of the step time over {len(windows)} summary windows "
          f"(at most {100 * float(max_wait):.0f} %)")
    assert wait <= float(max_wait), f"data wait {wait}"
PY
ls runs/*/config.resolved.ini runs/*/metrics.jsonl >/dev/null
