#!/usr/bin/env bash
# Peak resident memory per rank, measured (metrics.jsonl's `end` record: getrusage's maximum RSS
# of each rank over the run; its `memory` record's startup_peak_rss_bytes: the same once the
# model is built and each rank's part kept, before the first step), of one GPT trained with AdamW on 4 ranks under plain DDP (parallel.zero = 0), under
# ZeRO 3, and under ZeRO 3 with model.materialize = own (no rank builds the whole model), side by
# side, against a per-rank budget. The GPT is sized so that DDP's 16 bytes per parameter exceed
# the budget and stage 3's 16/N fit in it. All runs
# use glibc's default allocator settings (train.malloc_tuning = false): the tuned one keeps freed
# memory in the heap (no mmap, trim at 1 GiB), and a rank's peak then also counts fragmentation
# (stage 3 frees and re-allocates blocks; measured up to 1024 MiB instead of 856 MiB here).
#   bench/zero_peak_rss.sh [--budget-mib B] [--width W] [--blocks K] [--json]
# Defaults: width 512, 24 blocks (75.7 M parameters), budget 1024 MiB. Needs a build
# (COHORT_BUILD_DIR, default build) and mpirun; ~2 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${COHORT_BUILD_DIR:-build}/cohort")
budget=1024 width=512 blocks=24 json=0
while (($#)); do
  case $1 in
  --budget-mib) budget=$2 && shift ;;
  --width) width=$2 && shift ;;
  --blocks) blocks=$2 && shift ;;
  --json) json=1 ;;
  *) echo "usage: $0 [--budget-mib B] [--width W] [--blocks K] [--json]" >&2 && exit 2 ;;
  esac
  shift
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" data make-synthetic --kind tokens --tokens 20000 --vocab 128 --seq-len 32 --seed 3 \
  --out "$work/tok.h5" >/dev/null
flags=(--oversubscribe)
[ "$(id -u)" = 0 ] && flags+=(--allow-run-as-root)
# name zero materialize
runs=("ddp 0 whole" "zero3 3 whole" "zero3-own 3 own")
for run in "${runs[@]}"; do
  read -r name zero materialize <<<"$run"
  mpirun "${flags[@]}" -np 4 "$bin" train --set data.path="$work/tok.h5" --set model.name=gpt \
    --set model.width="$width" --set model.heads=8 --set model.blocks="$blocks" \
    --set model.context=32 --set model.dropout=0 --set optim.name=adamw --set optim.lr=1e-4 \
    --set data.batch_size=2 --set train.max_steps=3 --set train.log_every=1000 \
    --set parallel.zero="$zero" --set model.materialize="$materialize" \
    --set train.malloc_tuning=false --set checkpoint.at_end=false \
    --set train.run_dir="$work/$name" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log" >&2; exit 1; }
done
/usr/bin/python3 - "$work" "$budget" "$json" <<'PY'
import json, sys
work, budget, as_json = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "1"
def record(run, event):
    with open(f"{work}/{run}/metrics.jsonl") as f:
        return [r for r in map(json.loads, f) if r.get("event") == event][-1]
params = record("ddp", "run")["parameters"]
runs = []
for name, zero, own in (("ddp", 0, False), ("zero3", 3, False), ("zero3-own", 3, True)):
    peaks = record(name, "end")["peak_rss_bytes"]
    startup = record(name, "memory")["startup_peak_rss_bytes"]
    runs.append({"run": name, "zero": zero, "materialize": "own" if own else "whole",
                 "peak_rss_mib": [p / 2**20 for p in peaks],
                 "startup_peak_rss_mib": [p / 2**20 for p in startup],
                 "max_mib": max(peaks) / 2**20, "startup_max_mib": max(startup) / 2**20,
                 "fits": max(peaks) / 2**20 <= budget,
                 "theory_mib": (16 if zero == 0 else 4) * params / 2**20})
out = {"parameters": params, "ranks": 4, "budget_mib": budget, "model_mib": 4 * params / 2**20,
       "runs": runs}
if as_json:
    print(json.dumps(out, indent=2))
    sys.exit(0)
print(f"GPT {params} parameters ({4 * params / 2**20:.0f} MiB in fp32), AdamW, 4 ranks, "
      f"per-rank budget {budget:.0f} MiB")
for r in runs:
    ranks = " ".join(f"{m:.0f}" for m in r["peak_rss_mib"])
    start = " ".join(f"{m:.0f}" for m in r["startup_peak_rss_mib"])
    print(f"  {r['run']:>9} (zero {r['zero']}, materialize {r['materialize']}): peak RSS per rank "
          f"{ranks} MiB ({'fits' if r['fits'] else 'exceeds'} the budget); at the end of "
          f"start-up {start} MiB; training state in theory {r['theory_mib']:.0f} MiB")
PY
