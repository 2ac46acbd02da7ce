#!/usr/bin/env python3
"""`cohort data import images` against Pillow (python3-pil), on images this test writes itself:
Fashion-MNIST test images (Debian's dataset-fashion-mnist) saved by Pillow into class folders,
grey PNGs and tinted colour JPEGs, some in a nested folder, plus files that are not images.
  - the folder is listed as torchvision's ImageFolder lists it (sorted classes; sorted walk);
  - at the source size, every image's pixels equal Pillow's convert("RGB") / convert("L");
  - resized (down, up, centre-cropped), they differ from Pillow's resize(BILINEAR, box) by at
    most BOUND (the implementation follows Pillow's arithmetic; the maximum seen is printed);
  - a file that does not decode is skipped and counted (named), or stops --strict with exit 3;
  - 3 processes under mpirun write shards that, in order, equal the one-process file; the
    validation split is the same whichever the number of processes;
  - a folder without classes, or with an empty class, stops with exit 3 naming it.
    image_import.py COHORT WORKDIR      (MPIEXEC, MPIEXEC_FLAGS from the environment)"""
import gzip, json, os, shutil, subprocess, sys

import h5py
import numpy as np
from PIL import Image

BOUND = 1
cohort, work = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
failures = []

def expect(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)

def run(*args, code=0, mpi=0):
    cmd = [cohort, *args]
    if mpi:
        cmd = [os.environ["MPIEXEC"], *os.environ.get("MPIEXEC_FLAGS", "").split(), "-np", str(mpi)] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != code:
        sys.exit(f"FAIL: {' '.join(args)} -> exit {r.returncode} (expected {code}): {r.stderr}")
    return r

# ---- the folder -----------------------------------------------------------------------------
with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
    pixels = np.frombuffer(f.read()[16:], np.uint8).reshape(-1, 28, 28)[:240]
with gzip.open("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz") as f:
    labels = np.frombuffer(f.read()[8:], np.uint8)[:240]
names = ["T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Boot"]
root = os.path.join(work, "images")
for i, (image, label) in enumerate(zip(pixels, labels)):
    folder = os.path.join(root, names[label], "more" if i % 7 == 0 else "")
    os.makedirs(folder, exist_ok=True)
    if i % 2 == 0:
        Image.fromarray(image, "L").save(os.path.join(folder, f"{i:04d}.png"))
    else:  # colour: three different channels, so a channel mix-up shows
        rgb = np.stack([image, image[:, ::-1], 255 - image], axis=-1)
        Image.fromarray(rgb, "RGB").save(os.path.join(folder, f"{i:04d}.JPG"), quality=90)
good_jpeg = open(os.path.join(root, names[labels[1]], "0001.JPG"), "rb").read()
open(os.path.join(root, "Bag", "broken.jpg"), "wb").write(good_jpeg[: len(good_jpeg) // 2])
open(os.path.join(root, "Coat", "fake.png"), "wb").write(b"not an image at all\n" * 10)
open(os.path.join(root, "Coat", "notes.txt"), "w").write("ignored: not an image extension\n")

def image_folder(root):  # torchvision.datasets.ImageFolder's listing
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    items = []
    for label, name in enumerate(classes):
        for folder, _, files in sorted(os.walk(os.path.join(root, name), followlinks=True)):
            for file in sorted(files):
                if file.lower().endswith((".jpg", ".jpeg", ".png")):
                    items.append((os.path.join(folder, file), label))
    return classes, items

classes, items = image_folder(root)
good = [(p, l) for p, l in items if not p.endswith(("broken.jpg", "fake.png"))]

def read(path):
    files = sorted(os.path.join(path, f) for f in os.listdir(path)) if os.path.isdir(path) else [path]
    xs, ys = [], []
    for file in files:
        with h5py.File(file, "r") as f:
            xs.append(f["inputs"][:]), ys.append(f["targets"][:])
            names_attr = json.loads(f.attrs["class_names"])
    return np.concatenate(xs), np.concatenate(ys), names_attr

def pillow(path, mode, size=None, crop="none"):
    im = Image.open(path).convert(mode)
    if size is not None:
        h, w = size
        box = (0, 0, im.width, im.height)
        if crop == "center":
            aspect = w / h
            if im.width > aspect * im.height:
                cw = aspect * im.height
                box = ((im.width - cw) / 2, 0, (im.width - cw) / 2 + cw, im.height)
            else:
                ch = im.width / aspect
                box = (0, (im.height - ch) / 2, im.width, (im.height - ch) / 2 + ch)
        im = im.resize((w, h), Image.BILINEAR, box=box)
    a = np.asarray(im)
    return a[None] if a.ndim == 2 else a.transpose(2, 0, 1)

# ---- decoding, listing, skipping ------------------------------------------------------------
r = json.loads(run("data", "import", "images", root, "--size", "28,28", "--out", "rgb.h5", "--json").stdout)
x, y, got_classes = read("rgb.h5")
expect(got_classes == classes and r["classes"] == classes, f"class names {got_classes}")
expect(r["skipped"] == 2 and any("broken.jpg" in s for s in r["first_skipped"]) and
       any("fake.png" in s for s in r["first_skipped"]), f"2 skipped and named: {r['first_skipped']}")
expect(len(x) == len(good) and list(y) == [l for _, l in good], "ImageFolder's order and labels")
want = np.stack([pillow(p, "RGB") for p, _ in good])
expect(x.shape == (len(good), 3, 28, 28) and np.array_equal(x, want),
       "RGB at the source size: every pixel equals Pillow's decode")
x1, _, _ = read(run("data", "import", "images", root, "--size", "28", "--channels", "1",
                    "--out", "grey.h5", "--json") and "grey.h5")
expect(np.array_equal(x1, np.stack([pillow(p, "L") for p, _ in good])),
       "grey (Pillow's L of the colour JPEGs) equals Pillow's")

# ---- resizing -------------------------------------------------------------------------------
worst = 0
for size, crop, mode in [((20, 24), "none", "RGB"), ((40, 40), "none", "L"), ((16, 24), "center", "RGB"),
                         ((24, 12), "center", "L"), ((7, 7), "none", "RGB")]:
    out = f"r{size[0]}x{size[1]}{crop}{mode}.h5"
    run("data", "import", "images", root, "--size", f"{size[0]},{size[1]}", "--crop", crop,
        "--channels", "3" if mode == "RGB" else "1", "--out", out)
    xr, _, _ = read(out)
    ref = np.stack([pillow(p, mode, size, crop) for p, _ in good])
    diff = int(np.abs(xr.astype(int) - ref.astype(int)).max()) if xr.shape == ref.shape else 999
    worst = max(worst, diff)
    expect(diff <= BOUND, f"{mode} {size[0]}x{size[1]} crop {crop}: max |cohort - Pillow| = {diff}")
print(f"resize: largest difference from Pillow's bilinear over all cases: {worst}")

# ---- strict, bad folders --------------------------------------------------------------------
e = run("data", "import", "images", root, "--size", "28", "--strict", "--out", "s.h5", code=3).stderr
expect("broken.jpg" in e and "corrupt JPEG" in e and not os.path.exists("s.h5"), f"--strict: {e.strip()}")
os.makedirs("flat"), shutil.copy(good[0][0], "flat/")
e = run("data", "import", "images", "flat", "--size", "28", "--out", "f.h5", code=3).stderr
expect("no class folders" in e, f"no classes: {e.strip()}")
os.makedirs("empty/a"), os.makedirs("empty/b"), shutil.copy(good[0][0], "empty/a/")
e = run("data", "import", "images", "empty", "--size", "28", "--out", "f.h5", code=3).stderr
expect("class 'b' holds no" in e, f"empty class: {e.strip()}")

# ---- ranks and validation split -------------------------------------------------------------
run("data", "import", "images", root, "--size", "20,24", "--val-fraction", "0.25", "--out", "one.h5")
run("data", "import", "images", root, "--size", "20,24", "--val-fraction", "0.25", "--out", "three",
    mpi=3)
for a, b in [("one.h5", "three"), ("one-val.h5", "three-val")]:
    xa, ya, _ = read(a)
    xb, yb, _ = read(b)
    expect(np.array_equal(xa, xb) and np.array_equal(ya, yb), f"3 ranks' {b}/ equals one process's {a}")
xt, _, _ = read("one.h5")
xv, _, _ = read("one-val.h5")
share = len(xv) / (len(xt) + len(xv))
expect(len(xt) + len(xv) == len(good) and 0.1 < share < 0.4, f"validation share {share:.2f} of {len(good)}")
whole, _, _ = read("r20x24noneRGB.h5")
key = lambda a: sorted(bytes(s) for s in a)
expect(key(np.concatenate([xt, xv])) == key(whole), "train + val hold exactly the images")

print(f"{'FAIL' if failures else 'OK'}: {len(good)} images of {len(classes)} classes, "
      f"largest resize difference {worst}")
sys.exit(1 if failures else 0)
