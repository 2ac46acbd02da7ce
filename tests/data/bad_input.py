#!/usr/bin/python3
"""Bad datasets get a clear one-line error naming the file and the dataset, and a documented
non-zero exit (3: data input, 2: a batch that does not fit) — never a crash, a hang or a
traceback; and a failed import never damages a file that was already there.
usage: bad_input.py COHORT WORKDIR"""
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np

cohort, work = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
failures = []


def path(name):
    return os.path.join(work, name)


def good(name, n=10, features=4):
    with h5py.File(path(name), "w") as f:
        f["inputs"] = np.zeros((n, features), np.float32)
        f["targets"] = np.zeros(n, np.int64)
    return path(name)


def check(case, args, code, *needles):
    proc = subprocess.run([cohort] + args, capture_output=True, text=True, timeout=60)
    err = proc.stderr.strip()
    problems = []
    if proc.returncode != code:
        problems.append(f"exit {proc.returncode}, expected {code}")
    if len(err.splitlines()) != 1:
        problems.append(f"{len(err.splitlines())} lines on stderr, expected one")
    problems += [f"message lacks '{n}'" for n in needles if n not in err]
    print(f"{'ok  ' if not problems else 'FAIL'} {case}: {err}")
    if problems:
        failures.append(f"{case}: {'; '.join(problems)}")


def inspect(case, name, code, *needles):
    check(case, ["data", "inspect", path(name)], code, path(name), *needles)


# missing file; missing dataset
inspect("missing file", "nope.h5", 3, "no such file")
with h5py.File(path("no_targets.h5"), "w") as f:
    f["inputs"] = np.zeros((10, 4), np.float32)
inspect("missing dataset", "no_targets.h5", 3, "'/targets'")
# N differs between inputs and targets
with h5py.File(path("n_mismatch.h5"), "w") as f:
    f["inputs"], f["targets"] = np.zeros((10, 4), np.float32), np.zeros(9, np.int64)
inspect("N mismatch", "n_mismatch.h5", 3, "'/inputs' has 10", "'/targets' has 9")
# wrong rank; wrong dtype (inputs, targets)
with h5py.File(path("rank.h5"), "w") as f:
    f["inputs"], f["targets"] = np.zeros(10, np.float32), np.zeros(10, np.int64)
inspect("wrong rank", "rank.h5", 3, "'/inputs'", "rank >= 2")
with h5py.File(path("dtype_in.h5"), "w") as f:
    f["inputs"], f["targets"] = np.zeros((10, 4), np.int32), np.zeros(10, np.int64)
inspect("wrong input dtype", "dtype_in.h5", 3, "'/inputs'", "int32")
with h5py.File(path("dtype_target.h5"), "w") as f:
    f["inputs"], f["targets"] = np.zeros((10, 4), np.float32), np.zeros(10, np.float64)
inspect("wrong target dtype", "dtype_target.h5", 3, "'/targets'", "float64")
with h5py.File(path("strings.h5"), "w") as f:
    f["inputs"], f["targets"] = np.zeros((10, 4), np.float32), np.array([b"a"] * 10)
inspect("non-numeric targets", "strings.h5", 3, "'/targets'", "unsupported")
# empty datasets
with h5py.File(path("empty.h5"), "w") as f:
    f["inputs"], f["targets"] = np.zeros((0, 4), np.float32), np.zeros(0, np.int64)
inspect("empty dataset", "empty.h5", 3, "'/inputs'", "empty")
with h5py.File(path("short_tokens.h5"), "w") as f:
    f["tokens"] = np.zeros(8, np.uint16)
    f.attrs["seq_len"] = 8
inspect("empty token dataset", "short_tokens.h5", 3, "'/tokens'", "empty")
with h5py.File(path("no_seq_len.h5"), "w") as f:
    f["tokens"] = np.zeros(100, np.uint16)
inspect("token dataset without seq_len", "no_seq_len.h5", 3, "seq_len")
# truncated and corrupt files
size = os.path.getsize(good("whole.h5", n=5000, features=64))
shutil.copy(path("whole.h5"), path("truncated.h5"))
os.truncate(path("truncated.h5"), size // 2)
inspect("truncated file", "truncated.h5", 3, "truncated")
with open(path("garbage.h5"), "wb") as f:
    f.write(os.urandom(4096))
inspect("not HDF5", "garbage.h5", 3, "not an HDF5 file")
shutil.copy(path("whole.h5"), path("corrupt.h5"))
with open(path("corrupt.h5"), "r+b") as f:  # keep the signature, wreck the superblock after it
    f.seek(8)
    f.write(b"\xff" * 120)
inspect("corrupt superblock", "corrupt.h5", 3, "corrupt.h5")
# inconsistent shards
os.makedirs(path("shards"))
good("shards/a.h5", features=4)
good("shards/b.h5", features=6)
check("inconsistent shards", ["data", "inspect", path("shards")], 3, path("shards/b.h5"),
      "inconsistent shards", "[6]")
os.makedirs(path("noshards"))
check("directory without shards", ["data", "inspect", path("noshards")], 3, "no *.h5 shard")
# a batch larger than a rank's shard
check("batch larger than the shard",
      ["data", "inspect", good("small.h5", n=10), "--batch-size", "8", "--ranks", "2"], 2,
      path("small.h5"), "batch size 8", "shard of 5 samples")
# a failed import leaves an existing output untouched and no temporary file behind
with open(path("bad.csv"), "w") as f:
    f.write("1,2,0\n3,4,1\n5,oops,0\n")
target = good("existing.h5")
before = open(target, "rb").read()
check("failed import", ["data", "import", "csv", path("bad.csv"), "--out", target], 3,
      path("bad.csv"), ":3:")
if open(target, "rb").read() != before:
    failures.append("failed import changed the existing output")
leftovers = [n for n in os.listdir(work) if ".tmp-" in n]
if leftovers:
    failures.append(f"temporary files left behind: {leftovers}")

if failures:
    print("\n".join(["FAILED:"] + failures))
    sys.exit(1)
print("OK: every bad input named its file and dataset and exited with its documented code")
