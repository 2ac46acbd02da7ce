#!/usr/bin/env bash
# Cohort DDP against Debian's Python PyTorch DDP (gloo) on the same MLP, batch and threads, with 1
# and 2 ranks, in one run. Needs python3-torch (scripts/install-deps --bench) and a build.
# Two ranks on a 2-core machine: each rank owns a core, one torch thread each, on both sides.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${COHORT_BUILD_DIR:-build}/cohort
for n in 1 2; do
  ours=$("$bin" launch -n "$n" -- "$bin" bench ddp --json | grep -o '"samples_per_s": [0-9.]*' | awk '{print $2}')
  # Debian's `python3 -m torch.distributed.run` (torch 1.13 on Python 3.11) fails in its own
  # argument handling (AttributeError in elastic/multiprocessing/api.py to_map), so the ranks are
  # started the way torchrun would: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and env://.
  out=$(mktemp)
  # A port the kernel says is free (a fixed one collides with another run on the host).
  port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  for ((r = 0; r < n; r++)); do
    RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      /usr/bin/python3 bench/ddp_peer.py >>"$out" &
  done
  wait
  theirs=$(grep -o '"samples_per_s": [0-9.]*' "$out" | awk '{print $2}')
  rm -f "$out"
  awk -v n="$n" -v a="$ours" -v b="$theirs" \
    'BEGIN { printf "%d rank(s): cohort %.0f samples/s, pytorch ddp/gloo %.0f samples/s, ratio %.2f\n", n, a, b, a / b }'
done
