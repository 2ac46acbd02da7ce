#!/usr/bin/python3
"""Hostile and broken checkpoint directories against the real `cohort` (issue: hostile input).

A real run writes real checkpoints; each case then damages a copy the way an attacker or a
careless user would (h5py, JSON, FIFOs, folders of their own) and checks the contract of
docs/exit-codes.md: the documented exit code, one `cohort: error:` line naming the file and the
field, bounded time and peak memory (/usr/bin/time), nothing written or deleted outside what Cohort
created, and resume falling back to the previous valid checkpoint with a warning.
usage: hostile_checkpoints.py COHORT WORKDIR"""
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import contract as hostile  # noqa: E402

contract = hostile.start("hostile_checkpoints.py COHORT WORKDIR")
cohort = contract.cohort
run, failures = contract.run, contract.failures


def train(run_dir, *sets, code=0, needles=()):
    args = ["train", "--set", "data.path=set.h5", "--set", "data.batch_size=32",
            "--set", "model.hidden=16", "--set", "train.epochs=2", "--set", "train.log_every=0",
            "--set", "checkpoint.every_steps=8", "--set", "checkpoint.keep_last=0",
            "--set", f"train.run_dir={run_dir}"]
    for s in sets:
        args += ["--set", s]
    return run(f"train {run_dir} {' '.join(sets)}", args, code, needles, timeout=120)


subprocess.run([cohort, "data", "make-synthetic", "--kind", "classification", "--samples", "512",
                "--features", "16", "--classes", "4", "--seed", "1", "--out", "set.h5"],
               check=True, capture_output=True)
train("good")
GOOD = "good/checkpoints"
NEWEST, PREVIOUS = "step-00000032", "step-00000024"


def copy_run(name):
    shutil.rmtree(name, ignore_errors=True)
    shutil.copytree("good", name)
    return f"{name}/checkpoints"


def manifest_of(ckpt_dir, step=NEWEST):
    with open(f"{ckpt_dir}/{step}/manifest.json") as f:
        return json.load(f)


def write_manifest(ckpt_dir, m, step=NEWEST):
    with open(f"{ckpt_dir}/{step}/manifest.json", "w") as f:
        json.dump(m, f)


def tensor(m, name):
    return next(t for t in m["tensors"] if t["name"] == name)


def unsealed(d):
    """The newest manifest as a checkpoint written before shard metadata was covered has it: no
    metadata_checksum, no slice addresses ('at'). Such a checkpoint is read by its slices alone;
    the tests that rewrite a shard on purpose (another layout, a GPU run's rank_state) use it."""
    m = manifest_of(d)
    for shard in m["shards"]:
        shard.pop("metadata_checksum")
    for t in m["tensors"]:
        for s in t["slices"]:
            s.pop("at")
    write_manifest(d, m)


def hostile_everywhere(name, make, needles, resume=True):
    """make(ckpt_dir) damages the newest checkpoint of a copy of the good run; every reader is
    then refused in one line (exit 3), and a resume falls back to the previous checkpoint."""
    d = copy_run(name)
    make(d)
    step_dir = f"{d}/{NEWEST}"
    run(f"{name}: ckpt export", ["ckpt", "export", step_dir, "-o", f"{name}.pt"], 3, needles)
    if os.path.exists(f"{name}.pt") or any(".tmp-" in f for f in os.listdir(".")):
        failures.append(f"{name}: a failed export left a file behind")
    run(f"{name}: ckpt verify", ["ckpt", "verify", step_dir], 3, needles)
    if resume:
        train(name, needles=(f"skipping checkpoint {step_dir}", f"resumed from {d}/{PREVIOUS}"))


# 1. Size arithmetic that wraps: slice counts summing past 2^64 back to numel, the first slice
#    longer than the tensor (a heap overflow with bytes from the file before).
def wrapping_slices(d):
    m = manifest_of(d)
    t = tensor(m, "model.fc0.bias")  # 16 elements
    big = 2 ** 62
    t["shape"] = [16]
    t["slices"] = [dict(t["slices"][0], offset=0, count=256)] + [
        dict(t["slices"][0], offset=256 + i * big, count=big) for i in range(3)] + [
        dict(t["slices"][0], offset=256 + 3 * big, count=big - 240)]  # 2^64 + 16 in all
    write_manifest(d, m)


hostile_everywhere("wrapping-slices", wrapping_slices, ["manifest.json", "model.fc0.bias"])


def shard_index_2p32(d):
    m = manifest_of(d)
    tensor(m, "model.out.bias")["slices"][0]["shard"] = 2 ** 32
    write_manifest(d, m)


hostile_everywhere("shard-index-2^32", shard_index_2p32, ["manifest.json", "'shard'"])


# 2. Sizes trusted before they are checked: a shape of 2^40 elements in a 22 KB shard.
def huge_claim(d):
    m = manifest_of(d)
    t = tensor(m, "model.out.bias")
    t["shape"] = [2 ** 40]
    t["slices"] = [dict(t["slices"][0], offset=0, count=2 ** 40)]
    write_manifest(d, m)


hostile_everywhere("claims-2^40-elements", huge_claim, ["shard-00000-of-00001.h5", "cannot hold"],
                   resume=False)  # a shape that differs from the model's is refused by name


# A slice stored with inner dimensions: read, it would fill count x 1000 elements.
def inner_dims(d):
    path = f"{d}/{NEWEST}/shard-00000-of-00001.h5"
    with h5py.File(path, "a") as f:
        attrs = dict(f["slices/model.fc0.bias"].attrs)
        del f["slices/model.fc0.bias"]
        f["slices/model.fc0.bias"] = np.ones((16, 1000), np.float32)
        for k, v in attrs.items():
            f["slices/model.fc0.bias"].attrs[k] = v
    unsealed(d)  # the shard reader's own check, not the metadata checksum's


hostile_everywhere("slice-with-inner-dims", inner_dims, ["model.fc0.bias", "outside"])


# Not hostile: a slice rewritten by another tool, big-endian in compressed chunks, holds the same
# values; it is read through HDF5 instead of pread(2) at its offset, its checksum (of the native
# bytes) matches: export and the resume take the checkpoint, while `ckpt verify` still says that
# the shard is not the file Cohort wrote (its size).
def rewritten_by_h5py(d):
    with h5py.File(f"{d}/{NEWEST}/shard-00000-of-00001.h5", "a") as f:
        name = "slices/model.fc0.weight"
        attrs, values = dict(f[name].attrs), f[name][...]
        del f[name]
        f.create_dataset(name, data=values.astype(">f4"), chunks=(64,), compression="gzip")
        for k, v in attrs.items():
            f[name].attrs[k] = v


# A shard rewritten by h5py without metadata_checksum: refused (another file than the one saved).
d = copy_run("rewritten-sealed")
rewritten_by_h5py(d)
run("rewritten-sealed: ckpt verify", ["ckpt", "verify", f"{d}/{NEWEST}"], 3,
    ["shard-00000-of-00001.h5", "do not match the manifest's metadata_checksum"])
# A malformed checksum text in the manifest names its field at parse (not a mismatch later).
for key in ("metadata_checksum", "checksum"):
    d = copy_run(f"malformed-{key}")
    m = manifest_of(d)
    if key == "checksum":
        m["tensors"][0]["slices"][0]["checksum"] = "xxh3-64:not-hex-at-all!"
    else:
        m["shards"][0]["metadata_checksum"] = "crc32:1234"
    write_manifest(d, m)
    run(f"malformed {key}: ckpt verify", ["ckpt", "verify", f"{d}/{NEWEST}"], 3,
        ["manifest.json", f"field '{key}' is not xxh3-64:<16 hex digits>"])
d = copy_run("rewritten-by-h5py")
rewritten_by_h5py(d)
unsealed(d)
run("rewritten-by-h5py: ckpt export", ["ckpt", "export", f"{d}/{NEWEST}", "-o", "rewritten.pt"], 0,
    ["4 tensors"])
run("rewritten-by-h5py: ckpt verify", ["ckpt", "verify", f"{d}/{NEWEST}"], 3,
    ["shard-00000-of-00001.h5", "the manifest says"])
train("rewritten-by-h5py", needles=(f"resumed from {d}/{NEWEST}",))


# Garbage rank_state (the random generator's bytes): refused, the previous checkpoint taken.
def garbage_rank_state(d):
    with h5py.File(f"{d}/{NEWEST}/shard-00000-of-00001.h5", "a") as f:
        del f["rank_state"]
        f["rank_state"] = np.frombuffer(b"not a generator state", np.uint8)


d = copy_run("garbage-rank-state")
garbage_rank_state(d)
train("garbage-rank-state", needles=("rank_state", f"resumed from {d}/{PREVIOUS}"))


# A GPU run's rank_state (the CPU generator's bytes, then its GPU's 16: seed and Philox offset)
# resumed on a rank without a GPU: taken, the GPU part has nowhere to go. One byte more is no
# generator state of any run: refused, the previous checkpoint taken.
def gpu_rank_state(d, extra):
    with h5py.File(f"{d}/{NEWEST}/shard-00000-of-00001.h5", "a") as f:
        state = f["rank_state"][()].tobytes()
        del f["rank_state"]
        f["rank_state"] = np.frombuffer(state + extra, np.uint8)


d = copy_run("gpu-rank-state")
gpu_rank_state(d, (7).to_bytes(8, "little") + (64).to_bytes(8, "little"))
unsealed(d)
train("gpu-rank-state", needles=(f"resumed from {d}/{NEWEST}",))
d = copy_run("gpu-rank-state-17")
gpu_rank_state(d, bytes(17))
unsealed(d)
train("gpu-rank-state-17", needles=("rank_state is", f"resumed from {d}/{PREVIOUS}"))


# Every checkpoint found corrupt in the last tensor a load reads (trainer.position): by then a
# restarting run has read the model and the momentum into its own tensors (in place: its initial
# values, which it can make again). No candidate loads, so the run must start as if there were no
# checkpoint: trained again from its initial values, bit-identical to the good run (same config).
def corrupt_position_everywhere(d):
    for step in os.listdir(d):
        if step.startswith("step-"):
            with h5py.File(f"{d}/{step}/shard-00000-of-00001.h5", "a") as f:
                f["slices/trainer.position"][0] += 1


d = copy_run("late-corruption")
corrupt_position_everywhere(d)
proc = train("late-corruption", needles=(f"skipping checkpoint {d}/{NEWEST}",
                                         f"skipping checkpoint {d}/step-00000008",
                                         "does not match its checksum"))
if proc is not None and b"resumed from" in proc.stdout + proc.stderr:
    failures.append("late-corruption: the run resumed from a corrupt checkpoint")
slices = {t["name"]: [s_["checksum"] for s_ in t["slices"]]
          for t in manifest_of(d)["tensors"] if not t["name"].startswith("trainer.")}
good = {t["name"]: [s_["checksum"] for s_ in t["slices"]]
        for t in manifest_of(GOOD)["tensors"] if not t["name"].startswith("trainer.")}
same = slices == good and len(good) > 0
print(f"{'ok  ' if same else 'FAIL'} late-corruption: the retrained run's {NEWEST} "
      f"{'equals' if same else 'differs from'} the good run's ({len(good)} tensors)")
if not same:
    failures.append("late-corruption: a run that loaded no checkpoint did not start from its "
                    "initial values (its last checkpoint differs from the good run's)")


# 4. Non-regular files: a FIFO as manifest.json or latest never hangs a tool or the resume.
def fifo_manifest(d):
    os.remove(f"{d}/{NEWEST}/manifest.json")
    os.mkfifo(f"{d}/{NEWEST}/manifest.json")


hostile_everywhere("fifo-manifest", fifo_manifest, ["manifest.json", "not a regular file"])
d = copy_run("fifo-latest")
os.remove(f"{d}/latest")
os.mkfifo(f"{d}/latest")
run("fifo-latest: ckpt list", ["ckpt", "list", d], 0, lines=None)
run("fifo-latest: ckpt export", ["ckpt", "export", d, "-o", "fifo.pt"], 3,
    ["latest", "not a regular file"])
train("fifo-latest", needles=(f"resumed from {d}/{NEWEST}",))

# 3. Names parsed loosely: retention deletes only what Cohort wrote.
d = copy_run("retention")
mine = [f"{d}/step-00000001-my-backup", f"{d}/step-old", f"{d}/step-00000002.tmp-mine",
        f"{d}/step-1", f"{d}/latest.tmp-backup"]
for path in mine:
    os.makedirs(path)
    with open(f"{path}/precious.txt", "w") as f:
        f.write("user data\n")
shutil.rmtree(f"{d}/{NEWEST}")  # so that the run trains again, saves and applies retention
os.remove(f"{d}/latest")
train("retention", "checkpoint.keep_last=1")
for path in mine:
    if not os.path.exists(f"{path}/precious.txt"):
        failures.append(f"retention deleted {path}, which Cohort did not write")
kept = sorted(n for n in os.listdir(d) if n.startswith("step-0") and len(n) == 13)
if kept != [NEWEST]:
    failures.append(f"retention (keep_last=1) kept {kept}, expected [{NEWEST}]")
print(f"{'ok  ' if kept == [NEWEST] else 'FAIL'} retention: kept {kept}; user folders intact")

# An interrupted save's exact leftover is cleaned; a look-alike of the user's is not.
d = copy_run("partial")
os.makedirs(f"{d}/step-00000040.tmp-1234-0")
os.makedirs(f"{d}/step-00000040.tmp-users-copy")
train("partial", needles=("removed 1 leftover",))
if os.path.exists(f"{d}/step-00000040.tmp-1234-0") or \
        not os.path.exists(f"{d}/step-00000040.tmp-users-copy"):
    failures.append("clean_partial removed the wrong directories")

contract.verdict("hostile checkpoint cases")
