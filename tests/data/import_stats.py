#!/usr/bin/env python3
"""Every importer's normalisation statistics against numpy, and what the reader then hands the
model (docs/models.md, "What forward() receives"), on real data and on values chosen to catch
sign, range and precision mistakes:
  - fashion-mnist, both splits: mean/std of the training images' bytes (numpy over uint8, values
    up to 255), and the reader's batches equal (x - mean) / std in float32;
  - digits, diabetes: per-feature mean/std of the stored float32 values (numpy's population std;
    a constant feature gets 1);
  - csv: per-feature for flat samples, one value for shaped ones, on values above 127, negative
    ones and a column far from zero with a small spread (E[x^2] - E[x]^2 would cancel);
  - npy: u1 (bytes above 127) and f2 kept as stored, f4/f8/i4/i8 as float32, none with
    statistics; u1 read as x / 255, the others as stored;
  - images: uint8 without statistics, read as x / 255;
  - a uint8 dataset whose 'mean' lies outside [0, 255] (what the old importer wrote) is refused
    with exit 3, naming the file and the attribute.
    import_stats.py COHORT DATA_PROBE WORKDIR"""
import gzip
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
from PIL import Image

cohort, probe, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
failures = []
FMNIST = "/usr/share/datasets/fashion-mnist"
DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
DIABETES = "/usr/lib/python3/dist-packages/sklearn/datasets/data/diabetes_data_raw.csv.gz"


def expect(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def run(*args, code=0):
    r = subprocess.run(list(args), capture_output=True, text=True)
    if r.returncode != code:
        sys.exit(f"FAIL: {' '.join(args)} -> exit {r.returncode} (expected {code}): {r.stderr}")
    return r


def attrs(path):
    with h5py.File(path, "r") as f:
        return (f.attrs["mean"] if "mean" in f.attrs else None,
                f.attrs["std"] if "std" in f.attrs else None, f["inputs"].dtype)


def batches(path, batch):
    """Every sample as the trainer's loader delivers it: one rank, one epoch, in read order."""
    out = run(probe, "read", path, "0", "1", "0", str(batch), "1", "0").stdout
    return json.loads(out)["batches"]


def check_read(path, stored, want_fn, what, atol=1e-5):
    """The loader's float32 batches against want_fn(stored rows), sample by sample."""
    worst = 0.0
    for b in batches(path, min(16, len(stored))):
        got = np.array(b["inputs"], dtype=np.float64).reshape((len(b["indices"]),) + stored.shape[1:])
        want = want_fn(stored[b["indices"]].astype(np.float64))
        worst = max(worst, float(np.abs(got - want).max()))
    expect(worst <= atol, f"{what}: the model receives the documented values (max error {worst:.2e})")


def close(a, b, rtol=1e-9):
    return a is not None and np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=rtol, atol=1e-12)


# ---- fashion-mnist: statistics of the training bytes for both splits --------------------------
with gzip.open(f"{FMNIST}/train-images-idx3-ubyte.gz") as g:
    train_px = np.frombuffer(g.read(), dtype=np.uint8, offset=16)
with gzip.open(f"{FMNIST}/t10k-images-idx3-ubyte.gz") as g:
    test_px = np.frombuffer(g.read(), dtype=np.uint8, offset=16).reshape(-1, 1, 28, 28)
expect((train_px > 127).mean() > 0.2, "fashion-mnist: a fifth of the pixels are above 127")
fm_mean, fm_std = train_px.mean(dtype=np.float64), train_px.std(dtype=np.float64)
for split in ("train", "test"):
    path = f"fm-{split}.h5"
    run(cohort, "data", "import", "fashion-mnist", "--split", split, "--out", path)
    mean, std, dtype = attrs(path)
    expect(dtype == np.uint8 and close(mean, [fm_mean]) and close(std, [fm_std]),
           f"fashion-mnist {split}: mean {mean} std {std} (numpy: {fm_mean:.6f} {fm_std:.6f})")
# The reader: 40 test samples (split keeps the statistics), (x - mean) / std.
run(cohort, "data", "split", "fm-test.h5", "--train", "fm-rest.h5", "--val", "fm-40.h5",
    "--val-fraction", "0.004", "--seed", "1")
with h5py.File("fm-40.h5", "r") as f:
    rows = f["inputs"][:]
expect(rows.shape == (40, 1, 28, 28) and rows.max() > 200, "fashion-mnist: 40 samples, bright pixels")
check_read("fm-40.h5", rows, lambda x: (x - fm_mean) / fm_std, "fashion-mnist")

# ---- digits and diabetes: per-feature statistics ----------------------------------------------
run(cohort, "data", "import", "digits", "--out", "digits.h5")
table = np.loadtxt(DIGITS, delimiter=",")[:, :64]
std = table.std(axis=0)
std[std <= 1e-6] = 1.0
mean, got_std, _ = attrs("digits.h5")
expect(close(mean, table.mean(axis=0)) and close(got_std, std), "digits: per-feature mean/std")
run(cohort, "data", "import", "diabetes", "--out", "diabetes.h5")
table = np.loadtxt(DIABETES).astype(np.float32).astype(np.float64)  # the statistics of what is stored
mean, got_std, _ = attrs("diabetes.h5")
expect(close(mean, table.mean(axis=0)) and close(got_std, table.std(axis=0)),
       "diabetes: per-feature mean/std")

# ---- csv: flat (per feature) and shaped (one value) --------------------------------------------
rng = np.random.default_rng(5)
x = np.stack([rng.integers(0, 256, 300),                 # bytes, above 127 included
              rng.normal(-40.0, 7.0, 300),               # negative
              1.0e4 + rng.normal(0.0, 0.05, 300),        # far from zero, small spread
              np.full(300, 3.0)], axis=1).astype(np.float32)  # constant: std 1
y = rng.integers(0, 3, 300)
np.savetxt("flat.csv", np.column_stack([x, y]), delimiter=",", fmt="%.9g")
run(cohort, "data", "import", "csv", "flat.csv", "--out", "flat.h5")
x64 = x.astype(np.float64)
std = x64.std(axis=0)
std[3] = 1.0
mean, got_std, _ = attrs("flat.h5")
expect(close(mean, x64.mean(axis=0)) and close(got_std, std, rtol=1e-6),
       f"csv flat: per-feature mean {mean} std {got_std}")
# In float32 as the reader computes it, (x - mean) * (1 / std): the third column keeps its digits
# (x * (1/std) - mean/std, two terms near 2e5, would be off by 1e-2).
f32 = np.float32
check_read("flat.h5", x, lambda v: ((v.astype(f32) - x64.mean(axis=0).astype(f32)) *
                                    (1.0 / std).astype(f32)).astype(np.float64), "csv flat", atol=1e-5)
run(cohort, "data", "import", "csv", "flat.csv", "--shape", "1", "2", "2", "--out", "shaped.h5")
mean, got_std, _ = attrs("shaped.h5")
expect(close(mean, [x64.mean()]) and close(got_std, [x64.std()]), "csv shaped: one mean/std")

# ---- npy: stored as they come, no statistics ----------------------------------------------------
labels = rng.integers(0, 4, 50)
np.save("y.npy", labels.astype(np.int64))
for kind in ("u1", "f2", "f4", "f8", "i4", "i8"):
    if kind == "u1":
        data = rng.integers(100, 256, size=(50, 2, 3)).astype(np.uint8)
    elif kind[0] == "i":
        data = rng.integers(-300, 300, size=(50, 2, 3)).astype(kind)
    else:
        data = rng.normal(size=(50, 2, 3)).astype(kind)
    np.save(f"x-{kind}.npy", data)
    out = f"npy-{kind}.h5"
    run(cohort, "data", "import", "npy", f"x-{kind}.npy", "y.npy", "--out", out)
    mean, std, dtype = attrs(out)
    stored = {"u1": np.uint8, "f2": np.float16}.get(kind, np.float32)
    expect(mean is None and std is None and dtype == stored,
           f"npy {kind}: stored as {dtype}, no statistics")
    scale = 255.0 if kind == "u1" else 1.0
    check_read(out, data, lambda v, s=scale: v / s, f"npy {kind}", atol=1e-6 if kind != "f2" else 1e-3)

# ---- images: uint8, read as x / 255 ------------------------------------------------------------
for c in ("a", "b"):
    os.makedirs(f"pics/{c}", exist_ok=True)
    for i in range(3):
        Image.fromarray(rng.integers(0, 256, (6, 5, 3)).astype(np.uint8), "RGB").save(f"pics/{c}/{i}.png")
run(cohort, "data", "import", "images", "pics", "--size", "6,5", "--out", "pics.h5")
mean, std, dtype = attrs("pics.h5")
with h5py.File("pics.h5", "r") as f:
    pics = f["inputs"][:]
expect(mean is None and dtype == np.uint8 and pics.max() > 127, "images: uint8, no statistics")
check_read("pics.h5", pics, lambda v: v / 255.0, "images", atol=1e-6)

# ---- a uint8 set with a mean no bytes can have: refused ----------------------------------------
with h5py.File("old.h5", "w") as f:
    f["inputs"], f["targets"] = test_px[:10], np.zeros(10, dtype=np.int64)
    f.attrs["mean"], f.attrs["std"], f.attrs["classes"] = [-7.61], [49.26], 10
r = run(cohort, "data", "inspect", "old.h5", code=3)
expect("old.h5" in r.stderr and "'mean'" in r.stderr and "import" in r.stderr,
       f"uint8 set with mean -7.61 refused: {r.stderr.strip()}")

if failures:
    sys.exit(f"{len(failures)} failure(s): " + "; ".join(failures))
print("OK: every importer's statistics equal numpy's; the reader applies them as documented")
