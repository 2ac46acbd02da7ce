#!/usr/bin/env python3
# `cohort data import images` against Pillow doing the same work in one Python process (open,
# convert("RGB"), resize(BILINEAR) to the output size, into one array), side by side, alternating,
# on a folder this script writes: Fashion-MNIST test images tinted to colour and enlarged to
# --source pixels, as JPEG (quality 90) and PNG (every fourth), in their 10 class folders.
#   /usr/bin/python3 bench/image_import.py [--cohort build/cohort] [--images 2000]
#                                           [--source 256] [--size 224] [--repeat 3] [--json]
# (docs/data.md, "Images from folders"). Cohort's time includes writing the HDF5 file.
import argparse, gzip, json, os, shutil, statistics, subprocess, tempfile, time

import numpy as np
from PIL import Image

p = argparse.ArgumentParser()
p.add_argument("--cohort", default=os.path.join(os.path.dirname(__file__), "..", "build", "cohort"))
p.add_argument("--images", type=int, default=2000)
p.add_argument("--source", type=int, default=256)
p.add_argument("--size", type=int, default=224)
p.add_argument("--repeat", type=int, default=3)
p.add_argument("--json", action="store_true")
a = p.parse_args()

work = tempfile.mkdtemp(prefix="cohort-image-bench-")
try:
    with gzip.open("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz") as f:
        pixels = np.frombuffer(f.read()[16:], np.uint8).reshape(-1, 28, 28)
    with gzip.open("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read()[8:], np.uint8)
    files = []
    for i in range(a.images):
        image = pixels[i % len(pixels)]
        rgb = Image.fromarray(np.stack([image, image[:, ::-1], 255 - image], -1), "RGB")
        rgb = rgb.resize((a.source, a.source), Image.BICUBIC)
        folder = os.path.join(work, "images", f"class{labels[i % len(labels)]}")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, f"{i:06d}." + ("png" if i % 4 == 0 else "jpg"))
        rgb.save(path, quality=90) if path.endswith("jpg") else rgb.save(path)
        files.append(path)

    def cohort_run():
        out = os.path.join(work, "out.h5")
        start = time.perf_counter()
        subprocess.run([a.cohort, "data", "import", "images", os.path.join(work, "images"),
                        "--size", str(a.size), "--out", out], check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start

    def pillow_run():
        start = time.perf_counter()
        batch = np.empty((len(files), 3, a.size, a.size), np.uint8)
        for k, path in enumerate(sorted(files)):
            im = Image.open(path).convert("RGB").resize((a.size, a.size), Image.BILINEAR)
            batch[k] = np.asarray(im).transpose(2, 0, 1)
        return time.perf_counter() - start

    times = {"cohort": [], "pillow": []}
    for _ in range(a.repeat):
        times["cohort"].append(cohort_run())
        times["pillow"].append(pillow_run())
    c, q = statistics.median(times["cohort"]), statistics.median(times["pillow"])
    result = {"images": a.images, "source": a.source, "size": a.size, "repeat": a.repeat,
              "cohort_images_per_s": round(a.images / c, 1), "pillow_images_per_s": round(a.images / q, 1),
              "ratio": round(q / c, 2)}
    if a.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{a.images} images {a.source}x{a.source} -> {a.size}x{a.size}: cohort "
              f"{result['cohort_images_per_s']} images/s, Pillow {result['pillow_images_per_s']} "
              f"images/s, ratio {result['ratio']}")
finally:
    shutil.rmtree(work, ignore_errors=True)
