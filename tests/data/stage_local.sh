#!/usr/bin/env bash
# `cohort data stage` outside Slurm: a verified copy (temp file + rename), the staged path on stdout;
# an unusable destination is a one-line error with exit code 3.
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
"$cohort" data make-synthetic --samples 300 --shards 2 --out "$work/set" >/dev/null
staged=$(env -u SLURM_JOB_ID "$cohort" data stage "$work/set" --to "$work/local")
[ "$staged" = "$work/local/set" ] || fail "stage printed '$staged'"
for f in "$work"/set/*.h5; do cmp "$f" "$staged/$(basename "$f")" || fail "$(basename "$f") differs"; done
env -u SLURM_JOB_ID "$cohort" data stage "$work/set/shard-00000-of-00002.h5" --to "$work/one" --json \
  | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); assert r["method"]=="copy" and len(r["files"])==1, r'
ls "$work/local/set" | grep -q tmp && fail "temporary files left behind"
touch "$work/blocker"
set +e
err=$(env -u SLURM_JOB_ID "$cohort" data stage "$work/set" --to "$work/blocker/x" 2>&1 >/dev/null)
rc=$?
set -e
[ "$rc" = 3 ] || fail "unusable destination: exit $rc, expected 3 ($err)"
echo "$err" | grep -q "$work/blocker/x" || fail "message does not name the destination: $err"
echo "OK: staged by copy and verified; bad destination: $err"
