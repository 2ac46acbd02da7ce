#!/usr/bin/python3
"""Field datasets (format version 2): named, multi-field and ragged samples.
 A. h5py writes two shards with an image (uint8), features (float32, mean/std) and ragged tokens
    (int32, vocab_size) as inputs and a label as target; Cohort's loader (2 ranks, prefetch)
    yields torch's sampler order, the values numpy computes, tokens padded to the batch's
    longest sample with a mask; max_length cuts samples.
 B. Bucketing by length: the same samples per epoch, less padding, the order a function of
    (seed, epoch): a loader restored mid-epoch yields what the uninterrupted one did.
 C. `cohort data split` and `inspect` on field datasets; h5py reads the split parts back.
 D. `cohort data import labelled-text` (bytes; and a SentencePiece model: python3-sentencepiece's
    ids), read back by h5py.
 E. Bad input: each rule names the file and field and exits 3.
usage: fields.py COHORT DATA_PROBE WORKDIR"""
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
import torch
from torch.utils.data import DistributedSampler

cohort, probe, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)


def run(*args):
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout


def expect(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


def probe_read(path, rank, world, seed, batch, epochs, prefetch, *extra):
    return json.loads(run(probe, "read", path, str(rank), str(world), str(seed), str(batch),
                          str(epochs), str(prefetch), *extra))["batches"]


# ---- A: h5py writes, Cohort reads -----------------------------------------------------------
rng = np.random.default_rng(7)
N, VOCAB = 90, 50
image = rng.integers(0, 256, (N, 1, 6, 6), dtype=np.uint8)
features = rng.normal(3.0, 2.0, (N, 5)).astype(np.float32)
lengths = rng.integers(0, 13, N)
lengths[5] = 0  # an empty sample
offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
values = rng.integers(0, VOCAB, offsets[-1]).astype(np.int32)
labels = rng.integers(0, 3, N).astype(np.int64)
mean, std = [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 2.0, 2.0, 2.0, 4.0]


def write_fields(path, lo, hi, drop=None, tamper=None):
    with h5py.File(path, "w") as f:
        f.attrs["format_version"] = 2
        f.attrs["classes"] = 3
        if drop != "image":
            f["inputs/image"] = image[lo:hi]
        d = f.create_dataset("inputs/features", data=features[lo:hi])
        d.attrs["mean"], d.attrs["std"] = mean, std
        g = f.create_group("inputs/tokens")
        off = offsets[lo:hi + 1] - offsets[lo]
        g["values"] = values[offsets[lo]:offsets[hi]]
        g["offsets"] = off if tamper is None else tamper(off.copy())
        g.attrs["vocab_size"] = VOCAB
        f["targets/label"] = labels[lo:hi]


shards = os.path.join(work, "shards")
os.makedirs(shards)
write_fields(os.path.join(shards, "a.h5"), 0, 40)
write_fields(os.path.join(shards, "b.h5"), 40, N)
B = 8


def check_batch(b, max_length=0):
    idx = b["indices"]
    fields = b["fields"]
    expect(set(fields) == {"image", "features", "tokens", "tokens_mask", "label"},
           f"fields by name: {sorted(fields)}")
    img = np.array(fields["image"]["values"]).reshape(len(idx), 1, 6, 6)
    expect(np.allclose(img, image[idx] / 255.0, atol=1e-6), "image: uint8 scaled to [0, 1]")
    feat = np.array(fields["features"]["values"]).reshape(len(idx), 5)
    want = (features[idx] - np.array(mean)) / np.array(std)
    expect(np.allclose(feat, want, atol=1e-5), "features: the field's own mean/std")
    cut = [min(lengths[i], max_length) if max_length else lengths[i] for i in idx]
    longest = max(1, max(cut))
    expect(fields["tokens"]["shape"] == [len(idx), longest], "tokens padded to the longest")
    tok = np.array(fields["tokens"]["values"]).reshape(len(idx), longest)
    mask = np.array(fields["tokens_mask"]["values"]).reshape(len(idx), longest)
    for row, i in enumerate(idx):
        real = values[offsets[i]:offsets[i] + cut[row]]
        expect(np.array_equal(tok[row, :cut[row]], real), f"tokens of sample {i}")
        expect(not tok[row, cut[row]:].any(), "padding is zero")
        expect(mask[row].sum() == cut[row] and mask[row, :cut[row]].all(), "mask")
    expect(np.array_equal(np.array(fields["label"]["values"]), labels[idx]), "labels")


for rank in (0, 1):
    batches = probe_read(shards, rank, 2, 5, B, 2, 2)
    for e in (0, 1):
        sampler = DistributedSampler(range(N), num_replicas=2, rank=rank, shuffle=True, seed=5)
        sampler.set_epoch(e)
        order = list(sampler)
        mine = [b for b in batches if b["epoch"] == e]
        expect(len(mine) == len(order) // B, "batches per epoch")
        for b in mine:
            expect(b["indices"] == order[b["index"] * B:(b["index"] + 1) * B],
                   "batch follows torch's sampler order")
            check_batch(b)
for b in probe_read(shards, 0, 1, 1, B, 1, 0, "max_length=4"):
    check_batch(b, max_length=4)
print("A: multi-field and ragged reads match numpy, torch's order, max_length cuts")

# ---- B: bucketing ---------------------------------------------------------------------------
plain = probe_read(shards, 0, 1, 3, B, 2, 2)
bucketed = probe_read(shards, 0, 1, 3, B, 2, 2, "bucket=4")
for e in (0, 1):
    p = [b for b in plain if b["epoch"] == e]
    q = [b for b in bucketed if b["epoch"] == e]
    for b in q:
        check_batch(b)
    seen = sorted(i for b in q for i in b["indices"])
    sampler = DistributedSampler(range(N), num_replicas=1, rank=0, shuffle=True, seed=3)
    sampler.set_epoch(e)
    order = list(sampler)
    # Windows of 4 batches (32 samples) keep their samples; the partial batch at the end drops.
    windows = [order[w:w + 32] for w in range(0, N, 32)]
    kept = sorted(i for w in windows[:-1] for i in w) + sorted(windows[-1])
    expect(len(seen) == len(p) * B, "bucketing keeps the batch count")
    expect(set(seen) <= set(order) and len(set(seen)) == len(seen), "bucketing: each sample once")
    expect(set(sorted(i for w in windows[:-1] for i in w)) <= set(seen),
           "bucketing: every full window's samples")
    pad_plain = sum(b["fields"]["tokens"]["shape"][1] for b in p)
    pad_bucket = sum(b["fields"]["tokens"]["shape"][1] for b in q)
    expect(pad_bucket < pad_plain, f"bucketing pads less ({pad_bucket} >= {pad_plain})")
expect([b["indices"] for b in bucketed if b["epoch"] == 0] !=
       [b["indices"] for b in bucketed if b["epoch"] == 1], "bucketed order changes per epoch")
resumed = probe_read(shards, 0, 1, 3, B, 2, 2, "bucket=4", "from=1,3")
tail = [b for b in bucketed if (b["epoch"], b["index"]) >= (1, 3)]
expect([(b["epoch"], b["index"], b["indices"]) for b in resumed] ==
       [(b["epoch"], b["index"], b["indices"]) for b in tail], "bucketed resume is exact")
expect(resumed[0]["fields"] == tail[0]["fields"], "bucketed resume: same values")
# data.workers: three threads read and convert batches, yielded in order: the same batches.
threaded = probe_read(shards, 0, 1, 3, B, 2, 2, "bucket=4", "workers=3")
expect(threaded == bucketed, "workers=3 yields what one reader thread does")
expect(probe_read(shards, 0, 1, 3, B, 2, 1, "bucket=4", "workers=3", "from=1,3") == resumed,
       "workers=3 resumes exactly")
print("B: bucketing keeps samples, pads less, resumes exactly; 3 workers yield the same batches")

# ---- C: split and inspect -------------------------------------------------------------------
train, val = os.path.join(work, "train.h5"), os.path.join(work, "val.h5")
run(cohort, "data", "split", shards, "--train", train, "--val", val, "--val-fraction", "0.25",
    "--seed", "2")
perm = torch.randperm(N, generator=torch.Generator().manual_seed(2)).tolist()
for path, part in ((train, sorted(perm[:-23])), (val, sorted(perm[-23:]))):
    with h5py.File(path, "r") as f:
        expect(f.attrs["format_version"] == 2 and f.attrs["classes"] == 3, "split attributes")
        expect(np.array_equal(f["inputs/image"][:], image[part]), "split image")
        expect(np.array_equal(f["inputs/features"][:], features[part]), "split features")
        expect(list(f["inputs/features"].attrs["mean"]) == mean, "split keeps field attributes")
        off, vals = f["inputs/tokens/offsets"][:], f["inputs/tokens/values"][:]
        expect(f["inputs/tokens/values"].dtype == np.int32, "split keeps the dtype")
        for k, i in enumerate(part):
            expect(np.array_equal(vals[off[k]:off[k + 1]], values[offsets[i]:offsets[i + 1]]),
                   f"split tokens of sample {i}")
        expect(np.array_equal(f["targets/label"][:], labels[part]), "split labels")
report = json.loads(run(cohort, "data", "inspect", shards, "--json"))
by_name = {f["name"]: f for f in report["fields"]}
expect(report["kind"] == "fields" and report["samples"] == N, "inspect: kind and samples")
expect(set(by_name) == {"image", "features", "tokens", "label"}, "inspect shows every field")
expect(by_name["tokens"]["ragged"] and by_name["tokens"]["max_length"] == lengths.max(),
       "inspect: ragged tokens, max length")
expect(abs(by_name["tokens"]["length_stats"]["mean"] - lengths.mean()) < 1e-9, "inspect: lengths")
expect(abs(by_name["features"]["value_stats"]["mean"] - features.mean()) < 1e-4,
       "inspect: feature values")
expect(report["class_histogram"] == {str(k): int((labels == k).sum()) for k in range(3)},
       "inspect: class histogram")
text = run(cohort, "data", "inspect", shards)
expect("ragged" in text and "tokens" in text and "features" in text, "inspect text lists fields")
staged = json.loads(run(cohort, "data", "stage", shards, "--to", os.path.join(work, "local"),
                        "--json"))
restaged = json.loads(run(cohort, "data", "inspect", staged["destination"], "--json"))
expect([f["value_stats"] for f in restaged["fields"]] == [f["value_stats"] for f in report["fields"]],
       "stage: the staged copy holds the same fields")
# h5py alone wrote these shards: Cohort trains on them (every field by name).
trained = json.loads(run(cohort, "train", "--set", "model.name=fields_mlp", "--set",
                         f"data.path={shards}", "--set", "data.batch_size=16", "--set",
                         "model.width=8", "--set", "model.hidden=16", "--set", "train.epochs=2",
                         "--set", "train.log_every=0", "--set",
                         f"train.run_dir={os.path.join(work, 'run')}", "--json"))
expect(trained["steps"] == 10 and np.isfinite(trained["last_loss"]), f"training: {trained}")
print("C: split, inspect and stage handle field datasets; training on h5py's shards")

# ---- D: labelled text -----------------------------------------------------------------------
tsv = os.path.join(work, "lines.tsv")
rows = [("spam", "buy now"), ("ham", "see you at noon"), ("spam", "cheap pills é"),
        ("eggs", "")]
with open(tsv, "w", encoding="utf-8") as f:
    f.write("".join(f"{label}\t{line}\n" for label, line in rows) + "\n")
out = os.path.join(work, "lines.h5")
run(cohort, "data", "import", "labelled-text", tsv, "--out", out)
with h5py.File(out, "r") as f:
    names = json.loads(f.attrs["class_names"])
    expect(names == ["eggs", "ham", "spam"], "class names in name order")
    off, vals = f["inputs/tokens/offsets"][:], f["inputs/tokens/values"][:]
    for k, (label, line) in enumerate(rows):
        expect(list(vals[off[k]:off[k + 1]]) == list(line.encode()), f"bytes of line {k}")
        expect(f["targets/label"][k] == names.index(label), f"label of line {k}")
    expect(f["inputs/tokens"].attrs["vocab_size"] == 256, "byte vocabulary")
import sentencepiece as spm  # noqa: E402

corpus = "/usr/share/common-licenses/GPL-3"
prefix = os.path.join(work, "tok")
run(cohort, "data", "tokenizer", "train", corpus, "--vocab", "200", "--out", prefix + ".model")
sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
run(cohort, "data", "import", "labelled-text", tsv, "--tokenizer", prefix + ".model", "--out", out)
with h5py.File(out, "r") as f:
    off, vals = f["inputs/tokens/offsets"][:], f["inputs/tokens/values"][:]
    for k, (label, line) in enumerate(rows):
        want = sp.encode(line) + [sp.eos_id()] if line else []
        expect(list(vals[off[k]:off[k + 1]]) == want, f"subword ids of line {k}")
    expect(f.attrs["tokenizer_checksum"].startswith("xxh3-64:"), "tokenizer recorded")
print("D: labelled text imports as bytes and as python3-sentencepiece's ids")

# ---- E: bad input ---------------------------------------------------------------------------


def refused(path, *needles, probe_read_too=False):
    args = [probe, "read", path, "0", "1", "0", "2", "1", "0"] if probe_read_too else \
        [cohort, "data", "inspect", path]
    r = subprocess.run(args, capture_output=True, text=True)
    message = r.stderr.strip()
    expect(r.returncode == 3, f"{path}: exit {r.returncode} ({message})")
    expect(len(message.splitlines()) == 1, f"one line: {message}")
    for needle in needles:
        expect(needle in message, f"'{needle}' in: {message}")


def bad(name, **kw):
    path = os.path.join(work, name + ".h5")
    write_fields(path, 0, 40, **kw)
    return path


def not_monotonic(o):
    o[3], o[4] = o[4], o[3] - 1
    return o


def past_end(o):
    o[-1] += 5
    return o


refused(bad("not_monotonic", tamper=not_monotonic), "not monotonic", "/inputs/tokens/offsets",
        "not_monotonic.h5")
refused(bad("past_end", tamper=past_end), "runs past", "past_end.h5")
missing = os.path.join(work, "missing")
os.makedirs(missing)
write_fields(os.path.join(missing, "a.h5"), 0, 40)
write_fields(os.path.join(missing, "b.h5"), 40, N, drop="image")
refused(missing, "b.h5", "inconsistent shards")
with h5py.File(os.path.join(work, "vocab.h5"), "w") as f:
    g = f.create_group("inputs/tokens")
    g["values"] = np.array([1, 2, 99], dtype=np.int32)
    g["offsets"] = np.array([0, 1, 3], dtype=np.int64)
    g.attrs["vocab_size"] = 50
    f["targets/label"] = np.array([0, 1], dtype=np.int64)
refused(os.path.join(work, "vocab.h5"), "vocab.h5", "/inputs/tokens", "99")
refused(os.path.join(work, "vocab.h5"), "vocab.h5", "/inputs/tokens", "99", probe_read_too=True)
with h5py.File(os.path.join(work, "name.h5"), "w") as f:
    f["inputs/bad name"] = np.zeros((2, 3), dtype=np.float32)
    f["targets"] = np.array([0, 1], dtype=np.int64)
refused(os.path.join(work, "name.h5"), "name.h5", "letters, digits")
with h5py.File(os.path.join(work, "counts.h5"), "w") as f:
    f["inputs/a"] = np.zeros((2, 3), dtype=np.float32)
    f["inputs/b"] = np.zeros((3, 3), dtype=np.float32)
    f["targets"] = np.array([0, 1], dtype=np.int64)
refused(os.path.join(work, "counts.h5"), "counts.h5", "'/inputs/b' has 3 samples")
with h5py.File(os.path.join(work, "empty.h5"), "w") as f:
    f.create_group("inputs")
    f["targets"] = np.array([0, 1], dtype=np.int64)
refused(os.path.join(work, "empty.h5"), "empty.h5", "holds no field")
with h5py.File(os.path.join(work, "nooffsets.h5"), "w") as f:
    f["inputs/tokens/values"] = np.zeros(4, dtype=np.int32)
    f["targets"] = np.array([0, 1], dtype=np.int64)
refused(os.path.join(work, "nooffsets.h5"), "nooffsets.h5", "'values' and 'offsets'")
with h5py.File(os.path.join(work, "future.h5"), "w") as f:
    f.attrs["format_version"] = 3
    f["inputs/a"] = np.zeros((2, 3), dtype=np.float32)
    f["targets"] = np.array([0, 1], dtype=np.int64)
refused(os.path.join(work, "future.h5"), "future.h5", "format_version")
badtsv = os.path.join(work, "bad.tsv")
with open(badtsv, "w") as f:
    f.write("a\tfine\nno tab here\n")
r = subprocess.run([cohort, "data", "import", "labelled-text", badtsv, "--out",
                    os.path.join(work, "bad.h5")], capture_output=True, text=True)
expect(r.returncode == 3 and "bad.tsv:2" in r.stderr, f"labelled-text bad line: {r.stderr}")
expect(not os.path.exists(os.path.join(work, "bad.h5")), "no output for a bad import")
print("E: bad field datasets are refused with one line naming file and field (exit 3)")
print("PASS")
