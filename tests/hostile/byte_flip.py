#!/usr/bin/python3
"""Every byte of a real checkpoint shard is covered (issue 43): a copy of a small real shard gets
one byte flipped at a time, and `cohort ckpt verify` must report each flip (exit 3, the shard
named), or else the flip must change nothing a resume reads: every slice's values and
attributes, the root attributes and rank_state, compared through h5py. A flip of each kind (in
the HDF5 superblock, in a slice's bytes, in rank_state) is also resumed from: the damaged
checkpoint is skipped with a warning and the previous one taken.

BYTE_FLIP_STRIDE=K flips every K-th byte (default: about 400 flips spread over the file, plus
every byte of the first 96, where HDF5's superblock lies, and about 100 of rank_state, the
CPU generator's 5 KB); K=1 flips all of them (label `scale`, about ten minutes).
usage: byte_flip.py COHORT WORKDIR"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import contract as hostile  # noqa: E402

contract = hostile.start("byte_flip.py COHORT WORKDIR")
cohort = contract.cohort
NEWEST, PREVIOUS = "step-00000032", "step-00000024"

subprocess.run([cohort, "data", "make-synthetic", "--kind", "classification", "--samples", "512",
                "--features", "16", "--classes", "4", "--seed", "1", "--out", "set.h5"],
               check=True, capture_output=True)


def train(run_dir, needles=()):
    args = ["train", "--set", "data.path=set.h5", "--set", "data.batch_size=32",
            "--set", "model.hidden=8", "--set", "optim.momentum=0.9", "--set", "train.epochs=2",
            "--set", "train.log_every=0", "--set", "checkpoint.every_steps=8",
            "--set", "checkpoint.keep_last=0", "--set", f"train.run_dir={run_dir}"]
    return contract.run(f"train {run_dir}", args, 0, needles, timeout=120)


train("good")
step_dir = f"good/checkpoints/{NEWEST}"
shard_name = next(n for n in os.listdir(step_dir) if n.endswith(".h5"))
original = open(f"{step_dir}/{shard_name}", "rb").read()


def read_back(path):
    """Everything a resume reads of a shard, through h5py (None when h5py cannot read it)."""
    try:
        with h5py.File(path, "r") as f:
            seen = {"root": {k: np.asarray(v).tobytes() for k, v in sorted(f.attrs.items())},
                    "rank_state": f["rank_state"][()].tobytes()}
            for name, d in sorted(f["slices"].items()):
                seen[name] = (d[()].tobytes(), str(d.dtype),
                              {k: np.asarray(v).tobytes() for k, v in sorted(d.attrs.items())})
            return seen
    except Exception:  # noqa: BLE001 -- any failure to read is a difference
        return None


reference = read_back(f"{step_dir}/{shard_name}")
with h5py.File(f"{step_dir}/{shard_name}", "r") as f:
    slice_extents = [(d.id.get_offset(), d.id.get_storage_size()) for d in f["slices"].values()]
    state = f["rank_state"]
    state_extents = [(state.id.get_chunk_info(i).byte_offset, state.id.get_chunk_info(i).size)
                     for i in range(state.id.get_num_chunks())]
size = len(original)
stride = int(os.environ.get("BYTE_FLIP_STRIDE", "0")) or max(1, size // 400)
offsets = set(range(0, size, stride)) | set(range(min(96, size)))
for at, n in state_extents:
    offsets |= set(range(at, at + n, stride if stride == 1 else max(1, n // 100))) | {at + n - 1}
offsets = sorted(offsets)


def kind_of(at):
    if any(a <= at < a + n for a, n in slice_extents):
        return "slice"
    if any(a <= at < a + n for a, n in state_extents):
        return "rank_state"
    return "metadata"


work = "flip/checkpoints"
shutil.rmtree("flip", ignore_errors=True)
shutil.copytree("good/checkpoints", work)
flip_dir = f"{work}/{NEWEST}"
counts = {"slice": [0, 0, 0], "rank_state": [0, 0, 0], "metadata": [0, 0, 0]}  # flips, found, unused
for at in offsets:
    damaged = bytearray(original)
    damaged[at] ^= 0xFF
    with open(f"{flip_dir}/{shard_name}", "wb") as f:
        f.write(damaged)
    kind = kind_of(at)
    counts[kind][0] += 1
    try:
        proc = subprocess.run([cohort, "ckpt", "verify", flip_dir], capture_output=True, text=True,
                              errors="replace", timeout=60)
    except subprocess.TimeoutExpired:
        contract.fail(f"byte {at} ({kind}): verify gave no answer within 60 s")
        continue
    if proc.returncode == 3 and shard_name in proc.stdout + proc.stderr:
        counts[kind][1] += 1
    elif proc.returncode == 0 and read_back(f"{flip_dir}/{shard_name}") == reference:
        counts[kind][2] += 1  # the byte is not one a resume reads
    else:
        contract.fail(f"byte {at} ({kind}) flipped: verify exit {proc.returncode} "
                      f"({(proc.stdout + proc.stderr).strip()[-200:]}), and what a resume reads "
                      f"{'changed' if proc.returncode == 0 else 'is unknown'}")
for kind, (flips, found, unused) in counts.items():
    print(f"{kind:>10}: {flips} bytes flipped, {found} reported by verify, {unused} proven unused")

# A flip of each kind at resume: the damaged checkpoint skipped with a warning, the previous taken.
for kind in ("metadata", "slice", "rank_state"):
    at = next((o for o in offsets if kind_of(o) == kind and o >= 64), None)
    if at is None:
        contract.fail(f"no byte of kind {kind} in the shard")
        continue
    run_dir = f"resume-{kind}"
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.copytree("good", run_dir)
    damaged = bytearray(original)
    damaged[at] ^= 0xFF
    with open(f"{run_dir}/checkpoints/{NEWEST}/{shard_name}", "wb") as f:
        f.write(damaged)
    train(run_dir, needles=(f"skipping checkpoint {run_dir}/checkpoints/{NEWEST}",
                            f"resumed from {run_dir}/checkpoints/{PREVIOUS}"))
contract.verdict(f"{len(offsets)} byte flips")
