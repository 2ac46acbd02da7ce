#!/usr/bin/env bash
# Cohort's trainer against Debian's Python PyTorch 1.13 DDP (gloo), side by side in one run: the
# same MLP and CNN (bench/peer/{mlp,cnn}.ini = peer_train.py --model ...), data, batch, optimizer
# and threads per rank (torch intra-op and OpenBLAS alike), with 1 and 2 ranks, glibc's allocator
# tuned and not. Each cell runs both sides --reps times, alternating, and keeps the medians.
#
#   bench/peer/run.sh [--reps R] [--threads T] [--out DIR] [--quick]
# (--quick: a few steps per run, to check that the benchmark works, not to measure.)
#
# Prints a table; DIR/results.jsonl has every run, DIR/summary.json the cells. Needs a build
# (COHORT_BUILD_DIR, default build) and python3-torch + python3-h5py for /usr/bin/python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${COHORT_BUILD_DIR:-$here/../../build}" && pwd)
cohort=$build/cohort
reps=3
threads=1
out=$build/bench-peer
quick=0
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "bench/peer/run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
cd "$out"
: >results.jsonl
[ -f images.h5 ] || "$cohort" data make-synthetic --kind images --samples 8192 --seed 1 \
  --out images.h5 >/dev/null

# The allocator policy each side runs with: cohort's own mallopt() (train.malloc_tuning), and
# the same settings through glibc's environment variables for Python.
peer_malloc_on=(MALLOC_ARENA_MAX=1 MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=1073741824
  MALLOC_TOP_PAD_=268435456)
declare -A steps=([mlp]=100 [cnn]=60) batch=([mlp]=128 [cnn]=64)
[ "$quick" = 1 ] && steps=([mlp]=10 [cnn]=8)
# A port the kernel says is free, for each PyTorch run's rendezvous: a fixed one collided with
# another run on the same host (two fresh systems share the network namespace).
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

run_cohort() {  # MODEL RANKS MALLOC(on|off) -> one JSON line
  local tuning=true
  [ "$3" = off ] && tuning=false
  OPENBLAS_NUM_THREADS=$threads "$cohort" launch -n "$2" -- "$cohort" train \
    --config "$here/$1.ini" --set data.path=images.h5 --set train.threads="$threads" \
    --set train.malloc_tuning=$tuning --set train.max_steps="${steps[$1]}" \
    --set checkpoint.at_end=false --set checkpoint.resume=false \
    --set train.run_dir="runs/$1" --json 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); print(json.dumps({
      "side": "cohort", "samples_per_s": r["steady_samples_per_s"],
      "malloc": r["malloc_tuning"], "threads_per_rank": r["threads_per_rank"],
      "blas_threads_per_rank": r["blas_threads_per_rank"]}))'
}

run_peer() {  # MODEL RANKS MALLOC(on|off) -> one JSON line
  local env_malloc=()
  [ "$3" = on ] && env_malloc=("${peer_malloc_on[@]}")
  local port pids=() r
  port=$(free_port)
  for ((r = 0; r < $2; r++)); do
    # USE_LIBUV=0: torch >= 2.4's TCPStore wants libuv, which Debian's torch 2.6 is built without.
    env "${env_malloc[@]}" USE_LIBUV=0 OPENBLAS_NUM_THREADS="$threads" RANK=$r WORLD_SIZE="$2" \
      LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
      /usr/bin/python3 "$here/peer_train.py" --model "$1" --data images.h5 \
      --batch "${batch[$1]}" --steps "${steps[$1]}" --threads "$threads" >"peer.$r.out" &
    pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || { echo "run.sh: the PyTorch peer failed" >&2; exit 1; }; done
  cat peer.0.out
}

# The machine's own limit on 2-rank scaling: two independent 1-rank trainings at once (no
# communication at all); what they lose against one alone is shared caches, memory bandwidth and
# clocks, which no all-reduce can win back.
run_independent() {  # MODEL -> one JSON line: the two runs' samples/s summed
  local r
  for r in 0 1; do
    OPENBLAS_NUM_THREADS=$threads "$cohort" train --config "$here/$1.ini" \
      --set data.path=images.h5 --set train.threads="$threads" \
      --set train.max_steps="${steps[$1]}" --set checkpoint.at_end=false \
      --set checkpoint.resume=false --set train.run_dir="runs/alone$r" --json \
      2>/dev/null >"alone.$r.json" &
  done
  wait
  /usr/bin/python3 -c 'import json,sys; print(json.dumps({"side": "cohort-independent",
    "samples_per_s": sum(json.load(open(f))["steady_samples_per_s"] for f in sys.argv[1:])}))' \
    alone.0.json alone.1.json
}

for model in mlp cnn; do
  for ((i = 0; i < reps; i++)); do
    line=$(run_independent "$model")
    echo "{\"model\": \"$model\", \"ranks\": 2, \"malloc_setting\": \"on\", \"run\": $line}" \
      >>results.jsonl
  done
  for ranks in 1 2; do
    for malloc in on off; do
      for ((i = 0; i < reps; i++)); do
        for side in cohort peer; do
          line=$("run_$side" "$model" "$ranks" "$malloc")
          echo "{\"model\": \"$model\", \"ranks\": $ranks, \"malloc_setting\": \"$malloc\", \"run\": $line}" \
            >>results.jsonl
        done
      done
    done
  done
done
/usr/bin/python3 "$here/summarize.py" results.jsonl "$threads" | tee summary.txt
