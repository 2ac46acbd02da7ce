#!/usr/bin/env bash
# bench/peer/run.sh --quick end to end: both sides train every cell (MLP and CNN, 1 and 2 ranks,
# allocator on and off) and the summary has a positive figure for each. A smoke test of the
# benchmark's plumbing; it measures nothing (docs/performance.md has the figures).
set -euo pipefail
source_dir=$1 out=$2
rm -rf "$out"
bash "$source_dir/bench/peer/run.sh" --quick --reps 1 --out "$out"
/usr/bin/python3 - "$out/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert len(s["cells"]) == 4, s["cells"]
for c in s["cells"]:
    for k in ("cohort_tuned", "cohort_untuned", "pytorch_tuned", "pytorch_untuned", "ratio"):
        assert c[k] > 0, (c, k)
assert len(s["weak_scaling"]) == 4 and len(s["allocator"]) == 4
print("bench/peer: every cell ran on both sides")
PY
