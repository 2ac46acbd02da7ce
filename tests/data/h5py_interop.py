#!/usr/bin/python3
"""Interop with h5py (Debian's python3-h5py), both ways.
 A. Files that `cohort data` writes are read by h5py, with the values of the real sources
    (scikit-learn's digits csv, Fashion-MNIST's IDX files parsed here independently).
 B. Files that h5py writes (float16/uint8/float32 inputs, shard directories, int32 tokens) are read
    by Cohort's loader with the expected values, normalization and torch-sampler order.
usage: h5py_interop.py COHORT DATA_PROBE WORKDIR"""
import gzip
import json
import os
import subprocess
import sys

import h5py
import numpy as np
import torch
from torch.utils.data import DistributedSampler

cohort, probe, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
FMNIST = "/usr/share/datasets/fashion-mnist"


def run(*args):
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout


def probe_read(path, rank, world, seed, batch, epochs, prefetch, raw=False):
    args = [probe, "read", path, str(rank), str(world), str(seed), str(batch), str(epochs),
            str(prefetch)] + (["raw"] if raw else [])
    return json.loads(run(*args))["batches"]


def expect(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


# ---- A: cohort writes, h5py reads ---------------------------------------------------------
digits = os.path.join(work, "digits.h5")
run(cohort, "data", "import", "digits", "--out", digits)
table = np.loadtxt(DIGITS, delimiter=",")
with h5py.File(digits, "r") as f:
    expect(f["inputs"].dtype == np.float32 and f["inputs"].shape == (1797, 64), "digits inputs")
    expect(np.array_equal(f["inputs"][:], table[:, :64].astype(np.float32)), "digits values")
    expect(f["targets"].dtype == np.int64 and np.array_equal(f["targets"][:], table[:, 64]),
           "digits labels")
    expect(f.attrs["format_version"] == 1 and f.attrs["classes"] == 10, "digits attributes")
    expect(DIGITS in f.attrs["source"] and f.attrs["source_checksum"].startswith("xxh3-64:"),
           "digits provenance")
    expect(np.allclose(f.attrs["mean"], table[:, :64].mean(axis=0)), "digits per-feature mean")
    expect(f["inputs"].chunks is not None, "digits chunked")

# split: the validation part is the tail of torch.randperm(N, generator=manual_seed(seed))
train, val = os.path.join(work, "d-train.h5"), os.path.join(work, "d-val.h5")
run(cohort, "data", "split", digits, "--train", train, "--val", val, "--val-fraction", "0.2",
    "--seed", "3")
perm = torch.randperm(1797, generator=torch.Generator().manual_seed(3)).tolist()
with h5py.File(train, "r") as t, h5py.File(val, "r") as v:
    expect(t["inputs"].shape[0] == 1438 and v["inputs"].shape[0] == 359, "split sizes")
    expect(np.array_equal(v["inputs"][:], table[sorted(perm[-359:]), :64]), "split val rows")
    expect(np.array_equal(t["targets"][:], table[sorted(perm[:-359]), 64]), "split train labels")
    expect(t.attrs["split"] == "train" and v.attrs["split"] == "val", "split attributes")
    expect(np.array_equal(v.attrs["mean"], table[:, :64].mean(axis=0)) or
           np.allclose(v.attrs["mean"], table[:, :64].mean(axis=0)), "split keeps normalization")

fm = os.path.join(work, "fm-test.h5")
run(cohort, "data", "import", "fashion-mnist", "--split", "test", "--out", fm)
with gzip.open(f"{FMNIST}/t10k-images-idx3-ubyte.gz") as g:
    images = np.frombuffer(g.read(), dtype=np.uint8, offset=16).reshape(-1, 1, 28, 28)
with gzip.open(f"{FMNIST}/t10k-labels-idx1-ubyte.gz") as g:
    labels = np.frombuffer(g.read(), dtype=np.uint8, offset=8)
with h5py.File(fm, "r") as f:
    expect(f["inputs"].dtype == np.uint8 and np.array_equal(f["inputs"][:], images),
           "fashion-mnist images")
    expect(np.array_equal(f["targets"][:], labels.astype(np.int64)), "fashion-mnist labels")
    expect(f.attrs["split"] == "test", "fashion-mnist split")
    chunk_bytes = np.prod(f["inputs"].chunks)
    expect(512 << 10 <= chunk_bytes <= 1 << 20, f"chunk of ~1 MiB, got {chunk_bytes}")

# inspect's statistics and histogram agree with numpy's over the same file
report = json.loads(run(cohort, "data", "inspect", fm, "--json", "--max-features", "300"))
expect(np.isclose(report["stats"]["mean"], images.mean()) and
       np.isclose(report["stats"]["std"], images.std()), "inspect: overall mean/std")
expect(np.allclose([f["mean"] for f in report["feature_stats"]],
                   images.reshape(10000, -1)[:, :300].mean(axis=0)), "inspect: per-value means")
expect(report["class_histogram"] == {str(k): int(v) for k, v in enumerate(np.bincount(labels))},
       "inspect: class histogram")
expect(report["sample_shape"] == [1, 28, 28] and report["input_dtype"] == "uint8", "inspect: layout")

tokens = os.path.join(work, "tokens.h5")
run(cohort, "data", "make-synthetic", "--kind", "tokens", "--tokens", "5000", "--seq-len", "16",
    "--out", tokens)
with h5py.File(tokens, "r") as f:
    expect(f["tokens"].dtype == np.uint16 and f["tokens"].shape == (5000,), "tokens layout")
    expect(f.attrs["seq_len"] == 16 and f.attrs["kind"] == "tokens", "tokens attributes")
    stream = f["tokens"][:].astype(np.int64)
# inspect over a token stream: sample i is tokens [16i, 16i + 16)
report = json.loads(run(cohort, "data", "inspect", tokens, "--json"))
seen = stream[:report["samples"] * 16]
expect(report["token_histogram"] == {str(k): int(v) for k, v in enumerate(np.bincount(seen)) if v},
       "inspect: token histogram")
expect(np.isclose(report["stats"]["mean"], seen.mean()), "inspect: token mean")

# other importers: .npy (float64 inputs stored as float32; uint8 kept), CSV with a header and
# real-valued targets, a text corpus as byte tokens
npx, npy_ = os.path.join(work, "x.npy"), os.path.join(work, "y.npy")
x64 = np.random.default_rng(1).normal(size=(40, 3, 5))
np.save(npx, x64)
np.save(npy_, np.arange(40) % 4)
run(cohort, "data", "import", "npy", npx, npy_, "--out", os.path.join(work, "npy.h5"))
with h5py.File(os.path.join(work, "npy.h5"), "r") as f:
    expect(f["inputs"].dtype == np.float32 and np.array_equal(f["inputs"][:], x64.astype(np.float32)),
           "npy float64 inputs as float32")
    expect(f["targets"].dtype == np.int64 and f.attrs["classes"] == 4, "npy labels")
np.save(npx, (x64 * 40 + 100).clip(0, 255).astype(np.uint8))
run(cohort, "data", "import", "npy", npx, npy_, "--out", os.path.join(work, "npy8.h5"))
with h5py.File(os.path.join(work, "npy8.h5"), "r") as f:
    expect(f["inputs"].dtype == np.uint8 and f["inputs"].shape == (40, 3, 5), "npy uint8 kept")
csv = os.path.join(work, "reg.csv")
with open(csv, "w") as c:
    c.write("a,b,target\n1,2,0.5\n3,4,1.5\n5,6,-2\n")
run(cohort, "data", "import", "csv", csv, "--out", os.path.join(work, "csv.h5"))
with h5py.File(os.path.join(work, "csv.h5"), "r") as f:
    expect(np.array_equal(f["inputs"][:], [[1, 2], [3, 4], [5, 6]]), "csv features")
    expect(f["targets"].dtype == np.float32 and np.allclose(f["targets"][:], [0.5, 1.5, -2]),
           "csv real-valued targets")
text = os.path.join(work, "corpus.txt")
with open(text, "w") as t:
    t.write("to be or not to be, that is the question. " * 20)
run(cohort, "data", "import", "text", text, "--seq-len", "32", "--out", os.path.join(work, "text.h5"))
with h5py.File(os.path.join(work, "text.h5"), "r") as f:
    expect(np.array_equal(f["tokens"][:], np.frombuffer(open(text, "rb").read(), np.uint8)),
           "text as byte tokens")
    expect(f.attrs["vocab_size"] == 256 and f.attrs["seq_len"] == 32, "text attributes")

# ---- B: h5py writes, cohort reads ---------------------------------------------------------
rng = np.random.default_rng(7)


def sampler_order(n, rank, world, seed, epoch):
    s = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=True, seed=seed)
    s.set_epoch(epoch)
    return list(s)


# float16 images [N, 3, 4, 4] with per-channel mean/std
half = os.path.join(work, "half.h5")
x16 = rng.normal(size=(50, 3, 4, 4)).astype(np.float16)
y = rng.integers(0, 5, size=50).astype(np.int64)
mean, std = np.array([0.1, -0.2, 0.3]), np.array([1.5, 0.5, 2.0])
with h5py.File(half, "w") as f:
    f["inputs"], f["targets"] = x16, y
    f.attrs["mean"], f.attrs["std"], f.attrs["classes"] = mean, std, 5
for prefetch in (0, 2):
    for rank in (0, 1):
        batches = probe_read(half, rank, 2, 11, 8, 2, prefetch)
        expect(len(batches) == 2 * 3, f"half: {len(batches)} batches, expected 6")
        for b in batches:
            order = sampler_order(50, rank, 2, 11, b["epoch"])
            idx = order[b["index"] * 8:(b["index"] + 1) * 8]
            expect(b["indices"] == idx, "half: batch follows torch's sampler order")
            want = (x16[idx].astype(np.float32) - mean[None, :, None, None]) / std[None, :, None, None]
            got = np.array(b["inputs"]).reshape(want.shape)
            expect(np.allclose(got, want, atol=1e-5), "half: normalized float16 values")
            expect(np.array_equal(np.array(b["targets"]), y[idx]), "half: targets")
# inspect decodes float16 itself: per-channel statistics as numpy's over the stored values
report = json.loads(run(cohort, "data", "inspect", half, "--json"))
h64 = x16.astype(np.float64)
expect(np.allclose([c["mean"] for c in report["channel_stats"]], h64.mean(axis=(0, 2, 3))) and
       np.allclose([c["max"] for c in report["channel_stats"]], h64.max(axis=(0, 2, 3))),
       "inspect: float16 per-channel statistics")

# uint8 without mean/std: scaled to [0, 1]
u8 = os.path.join(work, "u8.h5")
xu = rng.integers(0, 256, size=(20, 6, 6)).astype(np.uint8)
with h5py.File(u8, "w") as f:
    f["inputs"], f["targets"] = xu, np.arange(20, dtype=np.int64)
b = probe_read(u8, 0, 1, 0, 20, 1, 0)[0]
expect(np.allclose(np.array(b["inputs"]).reshape(20, 6, 6), xu[b["indices"]] / 255.0),
       "uint8 scaled to [0, 1]")

# a directory of shards, float32 inputs and float32 [N, 2] targets, read raw
shards = os.path.join(work, "shards")
os.makedirs(shards, exist_ok=True)
xs = rng.normal(size=(37, 5)).astype(np.float32)
ys = rng.normal(size=(37, 2)).astype(np.float32)
for i, (lo, hi) in enumerate([(0, 10), (10, 11), (11, 37)]):
    with h5py.File(os.path.join(shards, f"part-{i}.h5"), "w") as f:
        f["inputs"], f["targets"] = xs[lo:hi], ys[lo:hi]
for b in probe_read(shards, 1, 3, 5, 4, 1, 2, raw=True):
    expect(np.array_equal(np.array(b["inputs"], dtype=np.float32).reshape(-1, 5), xs[b["indices"]]),
           "shards: inputs across shard boundaries")
    expect(np.array_equal(np.array(b["targets"], dtype=np.float32).reshape(-1, 2), ys[b["indices"]]),
           "shards: float targets")

# int32 tokens: sample i is tokens[i*L : i*L+L], targets shifted by one
tok = os.path.join(work, "tok32.h5")
stream = rng.integers(0, 70000, size=1001).astype(np.int32)
with h5py.File(tok, "w") as f:
    f["tokens"] = stream
    f.attrs["seq_len"] = 10
for b in probe_read(tok, 0, 1, 3, 7, 1, 1):
    for row, i in enumerate(b["indices"]):
        got_in = np.array(b["inputs"]).reshape(-1, 10)[row]
        got_out = np.array(b["targets"]).reshape(-1, 10)[row]
        expect(np.array_equal(got_in, stream[i * 10:i * 10 + 10]), "tokens: inputs")
        expect(np.array_equal(got_out, stream[i * 10 + 1:i * 10 + 11]), "tokens: shifted targets")

print(f"OK: h5py {h5py.__version__} reads Cohort's files; Cohort reads h5py's "
      f"(float16, uint8, shards, int32 tokens); torch {torch.__version__} sampler order")
