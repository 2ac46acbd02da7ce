#!/usr/bin/env bash
# `cohort data stage` in a real 2-node allocation: sbcast puts every shard on every node, and each
# node's copy is verified by size and checksum (via srun, one task per node).
source "$(dirname "$0")/lib.sh"
"$COHORT_BIN" data make-synthetic --kind images --samples 600 --shards 3 --out "$work/set" >/dev/null
dest=/tmp/cohort-stage-test-$$
cat >"$work/job.sh" <<JOB
#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=1 -o $work/job.out
set -e
"$COHORT_BIN" data stage "$work/set" --to $dest --json >$work/stage.json
"$COHORT_BIN" data stage "$work/set" --to $dest >$work/staged.txt
JOB
submit_wait "$work/job.sh" >/dev/null || { cat "$work/job.out" >&2; fail "the staging job failed"; }
/usr/bin/python3 - "$work/stage.json" "$dest" <<'PY' || fail "stage report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["method"] == "sbcast", r["method"]
assert sorted(r["nodes"]) == ["n1", "n2"], r["nodes"]
assert len(r["files"]) == 3 and all(f["checksum"].startswith("xxh3-64:") for f in r["files"]), r
assert r["destination"] == sys.argv[2] + "/set", r["destination"]
PY
[ "$(cat "$work/staged.txt")" = "$dest/set" ] || fail "stage printed '$(cat "$work/staged.txt")'"
for f in "$work"/set/*.h5; do
  cmp "$f" "$dest/set/$(basename "$f")" || fail "staged $(basename "$f") differs"
done
"$COHORT_BIN" data inspect "$dest/set" >/dev/null || fail "the staged dataset does not read"
rm -rf "$dest"
echo "OK: 3 shards staged by sbcast to 2 nodes and verified"
