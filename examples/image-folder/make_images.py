#!/usr/bin/python3
"""A folder of class folders of image files, as a user's own photos would come: the first N
Fashion-MNIST training images (Debian's dataset-fashion-mnist) written by Pillow as files, each
class a folder named after it (torchvision's ImageFolder layout), alternately grey PNGs and
tinted colour JPEGs (quality 90), upscaled to 56x56 so that `cohort data import images` resizes.
usage: make_images.py OUT_DIR [N]"""
import gzip
import os
import sys

import numpy as np
from PIL import Image

out, count = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 12000
base = "/usr/share/datasets/fashion-mnist/train-"
with gzip.open(base + "images-idx3-ubyte.gz") as f:
    pixels = np.frombuffer(f.read()[16:], np.uint8).reshape(-1, 28, 28)[:count]
with gzip.open(base + "labels-idx1-ubyte.gz") as f:
    labels = np.frombuffer(f.read()[8:], np.uint8)[:count]
names = ["T-shirt", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
         "Boot"]
for name in names:
    os.makedirs(os.path.join(out, name), exist_ok=True)
for i, (image, label) in enumerate(zip(pixels, labels)):
    big = Image.fromarray(image, "L").resize((56, 56), Image.BILINEAR)
    path = os.path.join(out, names[label], f"{i:05d}")
    if i % 2 == 0:
        big.save(path + ".png")
    else:
        tint = Image.merge("RGB", (big, big.point(lambda v: v * 3 // 4), big.point(lambda v: v // 2)))
        tint.save(path + ".jpg", quality=90)
