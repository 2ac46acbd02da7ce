#!/usr/bin/env python3
"""Subword tokens against python3-sentencepiece. Cohort trains a BPE and a unigram model on the
licence texts every Debian system has; `cohort data import text --tokenizer` must hold exactly the
ids SentencePiece's Python binding gives for the same text by the documented rule (each file's
non-empty lines encoded alone, a line longer than 64 KiB in pieces cut at a character boundary,
then eos_id()), for Cohort's models and for one trained by Python. The dataset
records the model (vocab_size, tokenizer, its xxh3 checksum as `cohort data checksum` prints it);
training refuses a validation set tokenized by another model; a file that is not a model stops
the import (exit 3).
    tokenizer.py COHORT WORKDIR"""
import glob, os, shutil, subprocess, sys

import h5py
import numpy as np
import sentencepiece as spm

cohort, work = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
corpus = sorted(f for f in glob.glob("/usr/share/common-licenses/*") if os.path.isfile(f))
failures = []

def expect(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)

def run(*args, code=0):
    r = subprocess.run([cohort, *args], capture_output=True, text=True)
    if r.returncode != code:
        sys.exit(f"FAIL: cohort {' '.join(args)} -> exit {r.returncode} (expected {code}): {r.stderr}")
    return r

PIECE = 64 * 1024  # data::parse::kMaxLinePiece

def pieces(line):
    """A line's pieces by the documented rule: at most PIECE bytes, cut back over up to three
    UTF-8 continuation bytes so that no character is split."""
    while len(line) > PIECE:
        cut = PIECE
        while cut > 0 and PIECE - cut < 4 and (line[cut] & 0xC0) == 0x80:
            cut -= 1
        if not (cut > 0 and PIECE - cut < 4):
            cut = PIECE
        yield line[:cut]
        line = line[cut:]
    yield line

def reference(model, files=None):
    sp = spm.SentencePieceProcessor(model_file=model)
    ids = []
    for name in files or corpus:
        for line in open(name, "rb").read().split(b"\n"):
            got = [i for piece in pieces(line) if piece
                   for i in sp.encode(piece.decode("utf-8", errors="surrogateescape"))]
            if got:
                ids += got + ([sp.eos_id()] if sp.eos_id() >= 0 else [])
    return sp, np.array(ids)

run("data", "tokenizer", "train", *corpus, "--vocab", "600", "--type", "bpe", "--out", "bpe.model")
run("data", "tokenizer", "train", *corpus, "--vocab", "600", "--type", "unigram", "--out", "uni.model")
spm.SentencePieceTrainer.train(input=",".join(corpus), model_prefix="py", vocab_size=500,
                               model_type="bpe", minloglevel=1)
for model in ("bpe.model", "uni.model", "py.model"):
    out = model.replace(".model", ".h5")
    run("data", "import", "text", *corpus, "--tokenizer", model, "--seq-len", "32", "--out", out)
    sp, want = reference(model)
    checksum = run("data", "checksum", model).stdout.split("\t")[2]
    with h5py.File(out, "r") as f:
        got = f["tokens"][:].astype(np.int64)
        attrs = dict(f.attrs)
    expect(np.array_equal(got, want), f"{model}: {len(got)} token ids equal SentencePiece's")
    expect(attrs["vocab_size"] == sp.get_piece_size(), f"{model}: vocab_size {attrs['vocab_size']}")
    expect(attrs["tokenizer"] == model and attrs["tokenizer_checksum"] == checksum,
           f"{model}: the dataset names the model and its checksum {checksum}")

# Lines longer than a piece: encoded piece by piece by the same rule (cuts next to two-byte
# characters, so that a cut falls inside one), and one line of 16 MiB within a bounded memory
# (SentencePiece given it whole took about a gigabyte).
words = [("caf\u00e9" if i % 7 == 0 else "w%d" % (i % 13)) for i in range(60000)]
with open("long.txt", "w", encoding="utf-8") as f:
    f.write("short line\n" + " ".join(words) + "\n\n" + "\u00e9" * 70000 + "\nlast")
run("data", "import", "text", "long.txt", "--tokenizer", "bpe.model", "--seq-len", "32", "--out",
    "long.h5")
sp, want = reference("bpe.model", ["long.txt"])
with h5py.File("long.h5", "r") as f:
    got = f["tokens"][:].astype(np.int64)
expect(np.array_equal(got, want), f"lines of {len(' '.join(words))} and 140000 bytes: {len(got)} "
       "ids equal the reference's, piece by piece")
with open("huge.txt", "w") as f:
    f.write(" ".join("word%d" % (i % 97) for i in range(16 << 18))[:16 << 20] + "\n")
timed = subprocess.run(["/usr/bin/time", "-f", "%M", cohort, "data", "import", "text", "huge.txt",
                        "--tokenizer", "bpe.model", "--seq-len", "32", "--out", "huge.h5"],
                       capture_output=True, text=True)
peak_mb = int(timed.stderr.strip().splitlines()[-1]) / 1024
expect(timed.returncode == 0 and peak_mb < 600,
       f"one line of 16 MiB: exit {timed.returncode}, peak {peak_mb:.0f} MB (bound 600)")

# A validation set made with another model is refused before training starts.
e = run("train", "--set", "model.name=gpt", "--set", "model.context=32", "--set", "data.path=bpe.h5",
        "--set", "data.val_path=uni.h5", "--set", "train.max_steps=1", "--set", "train.run_dir=run",
        code=3).stderr
expect("uni.h5" in e and "bpe.h5" in e and "do not mean the same" in e, f"mixed models: {e.strip()}")
open("not.model", "wb").write(b"\x0a\x05hello" * 20)
e = run("data", "import", "text", corpus[0], "--tokenizer", "not.model", "--out", "x.h5", code=3).stderr
expect("not.model" in e and "not a SentencePiece model" in e, f"not a model: {e.strip()}")
print(f"{'FAIL' if failures else 'OK'}: SentencePiece {spm.__version__}")
sys.exit(1 if failures else 0)
