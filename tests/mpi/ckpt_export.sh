#!/usr/bin/env bash
# `cohort ckpt export`, checked by Debian's PyTorch (torch.load) and h5py (ckpt_export_check.py):
#  - checkpoints written by 3 ranks and by 2 ranks export to one .pt and one .h5 whose tensors
#    equal both an independent reassembly of the shards in Python and what ckpt_probe saved;
#  - --prefix selects and strips names; a prefix that matches nothing, an unknown extension and a
#    corrupt shard each fail with one line naming the problem and leave no file behind.
set -euo pipefail
probe=$1 work=$2 cohort=$3 check=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
py=/usr/bin/python3

$MPIEXEC $MPIEXEC_FLAGS -np 3 "$probe" save ck 10 >/dev/null
$MPIEXEC $MPIEXEC_FLAGS -np 2 "$probe" save ck 20 >/dev/null
"$cohort" ckpt export ck/step-00000010 --prefix "" -o s10.pt -o s10.h5 >/dev/null
$py "$check" ck/step-00000010 s10.pt s10.h5 ""
"$cohort" ckpt export ck --prefix fc. -o fc.pt --out fc.h5 --json >out.json
$py "$check" ck/step-00000020 fc.pt fc.h5 fc.
$py -c 'import json,sys; r=json.load(open("out.json")); \
  assert [x["tensors"] for x in r] == [2, 2] and r[0]["step"] == 20, r'

expect_error() {  # expect_error PATTERN ARGS...: fails with a one-line error matching PATTERN
  local pattern=$1 rc=0
  shift
  "$cohort" ckpt export "$@" >/dev/null 2>err.txt || rc=$?
  [ "$rc" != 0 ] && [ "$(wc -l <err.txt)" = 1 ] && grep -q "$pattern" err.txt ||
    fail "export $* (exit $rc): $(cat err.txt)"
}
expect_error "no tensor name starts with 'model.'" ck -o none.pt
expect_error "none.npz: unknown export format" ck -o ok.pt -o none.npz
/usr/bin/python3 - ck/step-00000020/shard-00000-of-00002.h5 <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
at = data.find(bytes([0x00, 0x00, 0xa4, 0x41]))  # 20.5 in fc.weight
assert at > 0
data[at + 2] ^= 0x01
open(sys.argv[1], "wb").write(data)
PY
expect_error "slice fc.weight does not match its checksum" ck --prefix "" -o bad.pt
ls | grep -q -e '^none' -e '^ok' -e '^bad' -e '\.tmp-' && fail "an export left a file: $(ls)"
"$cohort" ckpt export ck --prefix "" --no-verify -o unverified.h5 >/dev/null ||
  fail "--no-verify did not export the corrupt checkpoint"
echo "bad exports: one-line errors, nothing left behind"
