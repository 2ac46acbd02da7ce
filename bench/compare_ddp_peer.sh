#!/usr/bin/env bash
# Cohort DDP against Debian's Python PyTorch DDP (gloo) on the same MLP, batch and threads, with 1
# and 2 ranks, in one run. Needs python3-torch (scripts/install-deps --bench) and a build.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${COHORT_BUILD_DIR:-build}/cohort
for n in 1 2; do
  ours=$("$bin" launch -n "$n" -- "$bin" bench ddp --json | grep -o '"samples_per_s": [0-9.]*' | awk '{print $2}')
  theirs=$(/usr/bin/python3 -m torch.distributed.run --nproc_per_node "$n" --master_port $((29500 + n)) \
    bench/ddp_peer.py 2>/dev/null | grep -o '"samples_per_s": [0-9.]*' | awk '{print $2}')
  awk -v n="$n" -v a="$ours" -v b="$theirs" \
    'BEGIN { printf "%d rank(s): cohort %.0f samples/s, pytorch ddp/gloo %.0f samples/s, ratio %.2f\n", n, a, b, a / b }'
done
