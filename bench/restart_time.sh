#!/usr/bin/env bash
# The time a requeued job loses before it trains again, in parts (metrics.jsonl's `startup`
# record of each start: exec to the trainer — LibTorch, MPI_Init, any rendezvous —, setup —
# communicators, the data opened, the model built —, the checkpoint found, verified and loaded,
# and the first step), for a fresh start and for a restart from a checkpoint of the same run, side
# by side; and the checkpoint load against a raw read of the same bytes (read(2) of every shard
# file into one buffer, page cache warm, as the load's are, by as many readers at once as there
# are ranks, each rank reading the whole checkpoint; the best of 5).
#   bench/restart_time.sh [--ranks R] [--hidden W] [--json]
# Defaults: 2 ranks, an MLP 1024 -> 4096 -> 4096 -> 10 (21 M parameters, 168 MB checkpoint with
# SGD momentum). Needs a build (COHORT_BUILD_DIR, default build) and mpirun.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${COHORT_BUILD_DIR:-build}/cohort")
ranks=2 hidden=4096 json=0
while (($#)); do
  case $1 in
  --ranks) ranks=$2 && shift ;;
  --hidden) hidden=$2 && shift ;;
  --json) json=1 ;;
  *) echo "usage: $0 [--ranks R] [--hidden W] [--json]" >&2 && exit 2 ;;
  esac
  shift
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" data make-synthetic --kind classification --samples 4096 --features 1024 --classes 10 \
  --seed 3 --out "$work/set.h5" >/dev/null
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
train() {  # max_steps
  mpirun --oversubscribe "${root[@]}" -np "$ranks" "$bin" train --set data.path="$work/set.h5" \
    --set model.hidden="$hidden,$hidden" --set optim.momentum=0.9 --set data.batch_size=16 \
    --set train.max_steps="$1" --set checkpoint.every_steps=5 --set checkpoint.async=false \
    --set train.run_dir="$work/run" >>"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
}
train 5
for steps in 6 7 8 9 10; do train "$steps"; done  # five restarts, each from the step before
step=$(cat "$work/run/checkpoints/latest")
/usr/bin/python3 - "$work/run/metrics.jsonl" "$work/run/checkpoints/$step" "$ranks" "$json" <<'PY'
import glob, json, mmap, os, sys, time
path, step_dir, ranks, as_json = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
files = sorted(glob.glob(os.path.join(step_dir, "*.h5")))
nbytes = sum(os.path.getsize(f) for f in files)
def raw_read(buffer):  # read(2) of every shard into its own part of one warm buffer of the
    start = time.perf_counter()  # checkpoint's size: what each rank's load reads, into as much
    view = memoryview(buffer)    # memory (a smaller buffer, rewritten, would stay in the cache)
    for f in files:
        with open(f, "rb", buffering=0) as stream:
            while view and (n := stream.readinto(view)):
                view = view[n:]
    return time.perf_counter() - start
def new_memory():  # untouched pages, advised onto huge pages as the load's are
    buffer = mmap.mmap(-1, nbytes)
    buffer.madvise(mmap.MADV_HUGEPAGE)
    return buffer
def reader(fresh):  # one reader's best of 5: into a buffer touched before the clock starts, or
    if fresh:       # into new memory each time (what a new process's first read does)
        return min(raw_read(new_memory()) for _ in range(5))
    buffer = bytearray(b"\1" * nbytes)
    return min(raw_read(buffer) for _ in range(5))
def concurrent_read(fresh=False):  # every rank reads the whole checkpoint: as many readers at once
    from multiprocessing import Pool
    with Pool(ranks) as pool:
        return max(pool.map(reader, [fresh] * ranks))
raw = concurrent_read()
raw_fresh = concurrent_read(fresh=True)
starts = [r for r in map(json.loads, open(path)) if r.get("event") == "startup"]
fresh, restarts = starts[0], starts[1:]
assert not fresh["resumed"] and len(restarts) == 5 and all(r["resumed"] for r in restarts), starts
def median(key):
    return sorted(r[key] for r in restarts)[len(restarts) // 2]
restart = {key: median(key) for key in ("to_trainer_s", "setup_s", "checkpoint_load_s",
                                        "first_step_s", "total_s")}
best_load = min(r["checkpoint_load_s"] for r in restarts)
raw_all = raw
out = {"ranks": ranks, "checkpoint_bytes": nbytes, "fresh": fresh, "restart": restart,
       "raw_read_s": raw_all, "load_vs_raw_read": restart["checkpoint_load_s"] / raw_all,
       "best_load_vs_raw_read": best_load / raw_all, "raw_read_new_memory_s": raw_fresh,
       "load_vs_raw_read_new_memory": restart["checkpoint_load_s"] / raw_fresh}
if as_json:
    print(json.dumps(out, indent=2))
    sys.exit(0)
print(f"start-up to the first step, {ranks} ranks, checkpoint {nbytes / 1e6:.0f} MB")
print(f"{'':24} {'fresh':>8} {'restart':>8} (median of 5 restarts)")
for key, label in (("to_trainer_s", "exec to trainer"), ("setup_s", "setup (data, model)"),
                   ("checkpoint_load_s", "checkpoint load"), ("first_step_s", "first step"),
                   ("total_s", "total")):
    print(f"  {label:22} {fresh[key]:8.3f} {restart[key]:8.3f} s")
print(f"  raw read of the same bytes (read(2) of every shard, warm, {ranks} readers at once): {raw_all:.3f} s; "
      f"load = {out['load_vs_raw_read']:.2f}x the raw read (best restart {out['best_load_vs_raw_read']:.2f}x; floor 1.5x)")
print(f"  the same read into new memory (first touch, as a new process's is): {raw_fresh:.3f} s; "
      f"load = {out['load_vs_raw_read_new_memory']:.2f}x")
PY
