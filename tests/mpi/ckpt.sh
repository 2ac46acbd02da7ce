#!/usr/bin/env bash
# Sharded checkpoints through real mpirun ranks and real files (tests/tools/ckpt_probe):
#  - saved by 3 ranks, then by 2; loaded by 1, 2 and 3 ranks: every tensor (float32, float64,
#    channels-last, bfloat16, int64, bool) comes back exactly, whatever world size wrote it; the
#    probe loads into tensors that differ from what it should load in every element (it refuses
#    to check otherwise), so a tensor the load leaves alone fails;
#  - the ranks of one node share the checksum checks when they want the same tensors, and each
#    checks all it reads when they do not;
#  - one flipped byte in a shard: the checksum catches it, the load falls back to the previous
#    checkpoint with a warning naming the file, also when another rank than 0 checks that slice;
#    without verification the corruption gets through: the probe's exit 1 and its line naming
#    the tensor (tests/tools/ckpt_probe.cpp), nothing else;
#  - a manifest naming a shard outside its directory (../../x) is rejected; a missing shard too;
#  - leftovers of interrupted saves are ignored by the loader and removed by clean_partial();
#  - `cohort ckpt list|inspect|verify`: verify exits 0 on a clean checkpoint and 3 naming the
#    slice on a corrupt one.
set -euo pipefail
probe=$1 work=$2 cohort=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
run() { $MPIEXEC $MPIEXEC_FLAGS -np "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
step_of() { /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["step"])'; }

run 3 "$probe" save ck 10 >/dev/null
run 2 "$probe" save ck 20 >/dev/null
[ "$(cat ck/latest)" = step-00000020 ] || fail "latest is $(cat ck/latest)"
for n in 1 2 3; do
  out=$(run "$n" "$probe" load ck)
  [ "$(echo "$out" | step_of)" = 20 ] || fail "$n ranks loaded: $out"
done
out=$(run 2 "$probe" load ck)
echo "$out" | grep -q '"rank_state":"rank 0 at 20"' || fail "same world size: no rank state: $out"
echo "resharding: written by 2 ranks, loaded exactly by 1, 2 and 3"

# Checks shared by the ranks of a node (all ranks here are on one host): when every rank wants the
# same tensors, each slice is matched to its checksum by one rank of the node, so the ranks'
# checked bytes add up to the checkpoint's once; when the ranks want different tensors
# (`uneven`), each rank checks all it reads.
field() { /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])[sys.argv[1]])' "$1"; }
total=$(run 1 "$probe" load ck | field checked_bytes)
[ "$total" -gt 10000 ] || fail "one rank checked $total bytes"
for n in 2 3; do
  out=$(run "$n" "$probe" load ck)
  [ "$(echo "$out" | field checked_bytes_all)" = "$total" ] && \
    [ "$(echo "$out" | field checked_bytes)" -lt "$total" ] || fail "$n ranks, shared checks: $out"
done
out=$(run 2 "$probe" load ck uneven)
[ "$(echo "$out" | field checked_bytes)" = "$total" ] || fail "uneven lists, rank 0 checked: $out"
echo "shared checks: $total bytes checked once by 2 and 3 ranks of one node; all by each when uneven"

# Tensors held in parts (ZeRO's optimizer state): written in parts by 3 ranks, loaded whole by 1
# and 2 and in other parts by 2 and 4 (with and without verification); written whole by 2,
# loaded in parts by 3. `cohort ckpt verify` checks the parts' checkpoint like any other.
run 3 "$probe" save zp 10 parts >/dev/null
for how in "1" "2" "2 parts" "4 parts" "4 parts noverify"; do
  set -- $how
  out=$(run "$1" "$probe" load zp "${@:2}") || fail "parts saved by 3, loaded by $how: $out"
  [ "$(echo "$out" | step_of)" = 10 ] || fail "parts saved by 3, loaded by $how: $out"
done
run 2 "$probe" save zp 20 >/dev/null
out=$(run 3 "$probe" load zp parts) || fail "whole saved by 2, loaded in parts by 3: $out"
[ "$(echo "$out" | step_of)" = 20 ] || fail "whole saved by 2, loaded in parts by 3: $out"
"$cohort" ckpt verify zp/step-00000010 >/dev/null || fail "ckpt verify refuses the parts' checkpoint"
echo "parts: written in parts by 3 ranks, loaded whole by 1 and 2 and in other parts by 2 and 4"

# flip FILE HEX: flips one bit of the third byte of the first occurrence of the bytes HEX in FILE.
flip() {
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
at = data.find(bytes.fromhex(sys.argv[2]))
assert at > 0, "value not found"
data[at + 2] ^= 0x01
open(sys.argv[1], "wb").write(data)
PY
}

# One flipped byte inside fc.weight's data (value 20.5 = bytes 00 00 a4 41) of rank 0's shard.
cp -r ck/step-00000020 pristine
flip ck/step-00000020/shard-00000-of-00002.h5 0000a441
out=$(run 2 "$probe" load ck 2>err.txt) || fail "no fallback after corruption: $(cat err.txt)"
"$cohort" ckpt verify pristine >/dev/null || fail "ckpt verify: the pristine copy is not clean"
rc=0; "$cohort" ckpt verify ck >verify.txt 2>&1 || rc=$?
[ "$rc" = 3 ] && grep -q "shard-00000-of-00002.h5: slice fc.weight does not match its checksum" \
  verify.txt || fail "ckpt verify (exit $rc) missed the corruption: $(cat verify.txt)"
"$cohort" ckpt list ck --json | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); \
  assert [e["step"] for e in r] == [20, 10] and r[0]["latest"] and r[1]["world_size"] == 3, r'
"$cohort" ckpt inspect ck/step-00000010 --json | /usr/bin/python3 -c 'import json,sys; \
  r=json.load(sys.stdin); assert r["world_size"] == 3 and len(r["tensor_index"]) == 6, r'
[ "$(echo "$out" | step_of)" = 10 ] || fail "loaded $out instead of falling back to step 10"
grep -q "skipping checkpoint .*step-00000020.*shard-00000-of-00002.h5.*checksum" err.txt ||
  fail "the warning does not name the shard and the checksum: $(cat err.txt)"
# Exit 1 with the probe's line naming fc.weight, and nothing else: a crash, a refusal to load
# (3) or a launch failure exits otherwise, or without that line.
rc=0; run 2 "$probe" load ck noverify >/dev/null 2>noverify.txt || rc=$?
[ "$rc" = 1 ] && grep -q "^rank [01]: fc.weight differs after loading$" noverify.txt ||
  fail "without verification the corrupt fc.weight should have been loaded and found to differ" \
    "(exit 1): exit $rc: $(cat noverify.txt)"
echo "a flipped byte: caught by its checksum, fell back to step 10"

# One flipped byte in a slice rank 1 checks for both (fc.weight's second slice, in rank 1's shard:
# element 2000 = 1020.0 = bytes 00 00 7f 44): both ranks fall back, rank 1 names the slice.
rm -rf ck/step-00000020 && cp -r pristine ck/step-00000020
flip ck/step-00000020/shard-00001-of-00002.h5 00007f44
out=$(run 2 "$probe" load ck 2>err.txt) || fail "no fallback after corruption: $(cat err.txt)"
[ "$(echo "$out" | step_of)" = 10 ] || fail "loaded $out instead of falling back to step 10"
grep -q "skipping checkpoint .*step-00000020.*shard-00001-of-00002.h5: slice fc.weight .*checksum" \
  err.txt || fail "the warning does not name rank 1's slice: $(cat err.txt)"
echo "a flipped byte that rank 1 alone checks: both ranks fell back to step 10"

# A manifest whose shard path leaves the directory; then a missing shard.
rm -rf ck/step-00000020 && cp -r pristine ck/step-00000020
sed -i 's|"shard-00001-of-00002.h5"|"../../x"|' ck/step-00000020/manifest.json
out=$(run 2 "$probe" load ck 2>err.txt)
[ "$(echo "$out" | step_of)" = 10 ] || fail "a ../../x manifest was taken: $out"
grep -q "leaves the checkpoint directory" err.txt || fail "no reason given: $(cat err.txt)"
rm -rf ck/step-00000020 && cp -r pristine ck/step-00000020
rm ck/step-00000020/shard-00001-of-00002.h5
out=$(run 1 "$probe" load ck 2>err.txt)
[ "$(echo "$out" | step_of)" = 10 ] || fail "a checkpoint with a missing shard was taken: $out"
grep -q "skipping checkpoint .*step-00000020: .*shard-00001-of-00002.h5: no such file" err.txt ||
  fail "the warning does not name the missing shard: $(cat err.txt)"
echo "bad manifests and missing shards: rejected with a reason, fell back"

# Leftovers of an interrupted save: ignored, then cleaned.
mkdir -p ck/step-00000030.tmp-99-0 && echo partial >ck/step-00000030.tmp-99-0/shard-00000-of-00002.h5
echo step-00000030 >ck/latest.tmp-123
out=$(run 2 "$probe" load ck 2>/dev/null)
[ "$(echo "$out" | step_of)" = 10 ] || fail "a partial save was taken: $out"
[ "$(run 1 "$probe" clean ck)" = 2 ] || fail "clean_partial did not remove both leftovers"
[ ! -e ck/step-00000030.tmp-99-0 ] && [ -d ck/step-00000010 ] || fail "clean removed the wrong things"
echo "partial saves: ignored and cleaned"

# A save never writes through what it did not make: a link planted at its temporary directory's
# name, or a file at its shard's name in a directory planted there, is refused (exit 3) and left
# alone, the file and what the link names unchanged.
mkdir -p elsewhere && ln -s "$PWD/elsewhere" ck/step-00000040.tmp-planted
status=0
run 2 "$probe" save ck 40 attempt=planted >planted.out 2>&1 || status=$?
[ "$status" = 3 ] && [ -z "$(ls elsewhere)" ] && [ -L ck/step-00000040.tmp-planted ] ||
  fail "a save through a planted link: exit $status, elsewhere holds '$(ls elsewhere)': $(cat planted.out)"
refusal="cannot create directory: something that is not a directory is there (left alone)"
grep -q "step-00000040.tmp-planted: $refusal" planted.out ||
  fail "the refusal of the planted link does not say why: $(cat planted.out)"
mkdir ck/step-00000041.tmp-mine && echo "someone's notes" >ck/step-00000041.tmp-mine/shard-00000-of-00002.h5
status=0
run 2 "$probe" save ck 41 attempt=mine >planted.out 2>&1 || status=$?
[ "$status" = 3 ] && [ "$(cat ck/step-00000041.tmp-mine/shard-00000-of-00002.h5)" = "someone's notes" ] ||
  fail "a save over a planted shard: exit $status: $(cat planted.out)"
grep -q "something is there already" planted.out || fail "the refusal does not say why: $(cat planted.out)"
rm -rf ck/step-00000040.tmp-planted ck/step-00000041.tmp-mine elsewhere
echo "saves: a planted link or file at their names refused, left alone"
