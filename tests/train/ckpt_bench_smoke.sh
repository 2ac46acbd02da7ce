#!/usr/bin/env bash
# `cohort bench ckpt` plumbing (figures are never asserted; docs/performance.md has them): a
# 2-rank run on a small MLP reports every field, its checkpoint size is the MLP's parameters and
# momentum buffers plus the position and the metric watch's state, its floors' verdicts follow
# from its figures (JSON and text), and it leaves nothing behind in --dir.
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
$MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" bench ckpt --hidden 256 256 --features 1024 --rounds 1 \
  --dir "$work" --json >out.json
/usr/bin/python3 - <<'PY'
import json
r = json.load(open("out.json"))
params = 1024 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10
assert r["ranks"] == 2, r
# parameters and momentum (float32), trainer.position (4 int64), trainer.watch (70 float64)
assert r["checkpoint_bytes"] == params * 4 * 2 + 4 * 8 + 70 * 8, (r["checkpoint_bytes"], params)
for key in ("raw_write_s", "sync_save_s", "load_s", "restart_load_s", "raw_read_s",
            "async_background_s", "step_ms"):
    assert r[key] > 0, (key, r)
assert 0 <= r["stall_share"] and r["write_ratio"] > 0 and r["load_ratio"] > 0, r
assert r["restart_load_ratio"] > 0 and len(r["restart_load_rounds_s"]) == 1, r
# The floors' verdicts follow from the figures (each one judged, met or not, as compared).
want = [("sync save speed / raw write speed", r["write_ratio"], ">=", 0.7),
        ("async save stall / sync save time", r["stall_share"], "<=", 0.10),
        ("restart load time / raw read time", 1 / r["restart_load_ratio"], "<=", 1.5)]
assert [(f["name"], f["comparison"], f["limit"]) for f in r["floors"]] == \
    [(n, c, l) for n, _, c, l in want], r["floors"]
for f, (_, value, comparison, limit) in zip(r["floors"], want):
    assert abs(f["value"] - value) <= 1e-12 * max(1, abs(value)), (f, value)
    assert f["met"] == (value <= limit if comparison == "<=" else value >= limit), f
assert r["floors_met"] == all(f["met"] for f in r["floors"]), r
print("bench ckpt:", {k: round(v, 4) for k, v in r.items() if isinstance(v, float)},
      "floors met:", r["floors_met"])
PY
# The text ends with the verdict, one line per floor.
$MPIEXEC $MPIEXEC_FLAGS -np 2 "$cohort" bench ckpt --hidden 64 --features 64 --rounds 1 \
  --dir "$work" >out.txt
grep -q "^verdict: [0-3] of 3 floor(s) met$" out.txt && [ "$(grep -cE ': (met|NOT MET)$' out.txt)" = 3 ] ||
  { echo "FAIL: no verdict in the text: $(cat out.txt)" >&2; exit 1; }
[ -z "$(ls -d cohort-bench-ckpt-* 2>/dev/null)" ] || { echo "FAIL: bench files left" >&2; exit 1; }
