#!/usr/bin/env bash
# `cohort bench allreduce`. Two parts, two tests (tests/cli/CMakeLists.txt):
#   mpi   (cli.bench_allreduce) on 2 ranks it reports a row per message size in --json (no timing
#         is asserted); --backend nccl where it cannot run stops in one line with exit 2, as does
#         a backend that does not exist;
#   nccl  (cli.bench_allreduce.nccl) --backend nccl for real, one rank on its GPU: a row per size
#         with a positive time and bandwidth. Without NCCL in the build, a CUDA LibTorch and a GPU
#         it skips (exit 79).
set -uo pipefail
bin=$1 part=${2:-mpi}
fail() { echo "FAIL: $*"; exit 1; }
case $part in mpi|nccl) ;; *) echo "bench_allreduce.sh: part '$part' is not mpi or nccl" >&2; exit 2 ;; esac
# Why --backend nccl cannot run here, from `cohort env --json`; nothing when it can.
nccl_unusable() {
  "$bin" env --json | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
nccl = [b for b in r["backends"] if b["name"] == "nccl"]
if not nccl or not nccl[0]["compiled"]:
    print("this build has no NCCL backend (COHORT_WITH_NCCL, docs/building.md)")
elif not r["torch"]["cuda_available"]:
    print("LibTorch has no usable CUDA (a CPU-only LibTorch, or no GPU)")
elif nccl[0]["devices"] < 1:
    print("no CUDA device (" + nccl[0]["detail"] + ")")'
}
unusable=$(nccl_unusable) || fail "cohort env --json: exit $?"

if [ "$part" = nccl ]; then
  [ -z "$unusable" ] || { echo "SKIP: cohort bench allreduce --backend nccl not run: $unusable"; exit 79; }
  json=$("$bin" bench allreduce --backend nccl --min-bytes 4096 --max-bytes 16777216 --seconds 0.1 \
    --json) || fail "bench allreduce --backend nccl on one rank: exit $?"
  echo "$json" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
if r["ranks"] != 1 or r["backend"] != "nccl":
    sys.exit(f"not one rank on nccl: {r}")
rows = r["rows"]
sizes = [row["bytes"] for row in rows]
if not rows or sizes[0] != 4096 or sizes[-1] != 16777216:
    sys.exit(f"sizes {sizes}, want 4096 to 16777216")
if not all(row["cohort_ms"] > 0 and row["algbw_gbs"] > 0 for row in rows):
    sys.exit(f"a row without time or bandwidth: {rows}")
print("ok: nccl, one rank,", len(rows), "sizes")' || fail "bad JSON: $json"
  exit 0
fi

# shellcheck disable=SC2086
json=$($MPIEXEC $MPIEXEC_FLAGS -np 2 "$bin" bench allreduce --min-bytes 4096 --max-bytes 65536 \
  --seconds 0.05 --json) || fail "bench allreduce on 2 ranks: exit $?"
echo "$json" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
assert r["ranks"] == 2 and r["backend"] == "mpi", r
sizes = [row["bytes"] for row in r["rows"]]
assert sizes == [4096, 16384, 65536], sizes
assert all(row["cohort_ms"] > 0 and row["raw_mpi_ms"] > 0 and row["busbw_gbs"] > 0 for row in r["rows"]), r
print("ok: 2 ranks, mpi,", len(sizes), "sizes")' || fail "bad JSON: $json"
# Where the NCCL backend cannot run (cli.bench_allreduce.nccl skips there), it is refused.
if [ -n "$unusable" ]; then
  err=$("$bin" bench allreduce --backend nccl --max-bytes 4096 2>&1 >/dev/null); rc=$?
  [ "$rc" = 2 ] && echo "$err" | grep -q "^cohort: error: .*\(not compiled\|CUDA device\)" ||
    fail "--backend nccl without a GPU -> exit $rc: $err"
  echo "ok: --backend nccl without a GPU -> $err"
fi
err=$("$bin" bench allreduce --backend gloo 2>&1 >/dev/null); rc=$?
[ "$rc" = 2 ] && echo "$err" | grep -q "is not mpi or nccl" || fail "--backend gloo -> exit $rc: $err"
echo "ok: --backend gloo -> $err"
