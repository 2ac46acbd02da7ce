#!/usr/bin/env bash
# `cohort bench ckpt` plumbing (figures are never asserted; docs/performance.md has them): a
# 2-rank run on a small MLP reports every field, its checkpoint size is the MLP's parameters and
# momentum buffers plus the position and the metric watch's state, and it leaves nothing behind in --dir.
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
print("bench ckpt:", {k: round(v, 4) for k, v in r.items() if isinstance(v, float)})
PY
[ -z "$(ls -d cohort-bench-ckpt-* 2>/dev/null)" ] || { echo "FAIL: bench files left" >&2; exit 1; }
