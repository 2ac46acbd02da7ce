#!/usr/bin/env bash
# `cohort bench allreduce` on 2 ranks reports a row per message size in --json (no timing is
# asserted); --backend nccl without a usable GPU stops in one line with exit 2 (on a GPU machine
# scripts/gpu-check runs it for real), as does a backend that does not exist.
set -uo pipefail
bin=$1
fail() { echo "FAIL: $*"; exit 1; }
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
if ! "$bin" env --json | grep -q '"cuda_available":true'; then
  err=$("$bin" bench allreduce --backend nccl --max-bytes 4096 2>&1 >/dev/null); rc=$?
  [ "$rc" = 2 ] && echo "$err" | grep -q "^cohort: error: .*\(not compiled\|CUDA device\)" ||
    fail "--backend nccl without a GPU -> exit $rc: $err"
  echo "ok: --backend nccl without a GPU -> $err"
fi
err=$("$bin" bench allreduce --backend gloo 2>&1 >/dev/null); rc=$?
[ "$rc" = 2 ] && echo "$err" | grep -q "is not mpi or nccl" || fail "--backend gloo -> exit $rc: $err"
echo "ok: --backend gloo -> $err"
