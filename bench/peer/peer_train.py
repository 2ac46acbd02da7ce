#!/usr/bin/python3
"""The Python peer of `cohort train` in bench/peer/run.sh: the same model, data, batch, optimizer
and threads under Debian's PyTorch 1.13 DistributedDataParallel with the gloo backend.

Started once per rank with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set, as torchrun would
(Debian's `python3 -m torch.distributed.run` fails in its own argument handling on Python 3.11).
The data set is read whole with h5py and normalized once, as a Python user with a small data set
would; each epoch's order comes from torch's DistributedSampler, like cohort's. Rank 0 prints one
JSON line: samples/s over the steps after the warm-up ones (the same measure `cohort train`
reports as steady_samples_per_s).
"""
import argparse
import json
import os
import time

import h5py
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def conv3x3(cin, cout, stride):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """As src/models/builtin/cnn.cpp's BasicBlock."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1, self.bn1 = conv3x3(cin, cout, stride), nn.BatchNorm2d(cout)
        self.conv2, self.bn2 = conv3x3(cout, cout, 1), nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class Cnn(nn.Module):
    """As src/models/builtin/cnn.cpp: stem, two stages of `blocks` blocks, pooling, a Linear."""

    def __init__(self, channels, classes, width, blocks):
        super().__init__()
        self.stem, self.stem_bn = conv3x3(channels, width, 1), nn.BatchNorm2d(width)
        layers, cin = [], width
        for stage in range(2):
            cout = width << stage
            for b in range(blocks):
                layers.append(BasicBlock(cin, cout, 2 if stage > 0 and b == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*layers)
        self.head = nn.Linear(cin, classes)

    def forward(self, x):
        x = F.relu(self.stem_bn(self.stem(x)))
        x = F.adaptive_avg_pool2d(self.blocks(x), 1)
        return self.head(x.flatten(1))


def mlp(features, hidden, classes):
    """As src/models/builtin/mlp.cpp without dropout."""
    layers, width = [nn.Flatten()], features
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(*layers)


def load(path):
    """Inputs as float32 normalized as cohort's reader does it; targets as int64."""
    with h5py.File(path, "r") as f:
        raw = torch.from_numpy(f["inputs"][...])
        targets = torch.from_numpy(f["targets"][...]).long()
        mean = float(f.attrs.get("mean", [0.0])[0]) if "mean" in f.attrs else None
        std = float(f.attrs.get("std", [1.0])[0]) if "std" in f.attrs else None
        classes = int(f.attrs["classes"])
    x = raw.float()
    if mean is not None or std is not None:
        x = (x - (mean or 0.0)) / (std or 1.0)
    elif raw.dtype == torch.uint8:
        x = x / 255.0
    if x.dim() == 3:
        x = x.unsqueeze(1)
    return x, targets, classes


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["mlp", "cnn"], required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--batch", type=int, default=64, help="per rank")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--warmup", type=int, default=3, help="steps left out of the figure")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--hidden", default="1024,1024")
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--blocks", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    x, y, classes = load(a.data)
    torch.manual_seed(a.seed)
    if a.model == "mlp":
        net = mlp(x[0].numel(), [int(h) for h in a.hidden.split(",")], classes)
    else:
        net = Cnn(x.shape[1], classes, a.width, a.blocks)
    model = nn.parallel.DistributedDataParallel(net)
    sgd = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    sampler = torch.utils.data.DistributedSampler(range(len(y)), world, rank, shuffle=True,
                                                  seed=a.seed, drop_last=True)
    step, epoch, start = 0, 0, None
    while step < a.steps:
        sampler.set_epoch(epoch)
        order = torch.tensor(list(sampler))
        for first in range(0, len(order) - a.batch + 1, a.batch):
            if step == a.warmup:
                start = time.perf_counter()
            idx = order[first:first + a.batch]
            sgd.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            sgd.step()
            loss.item()  # as a loop that logs its loss does; cohort reads it every step too
            step += 1
            if step == a.steps:
                break
        epoch += 1
    seconds = time.perf_counter() - start
    if rank == 0:
        malloc = {k: v for k, v in os.environ.items() if k.startswith("MALLOC_")}
        print(json.dumps({"side": "pytorch-ddp-gloo", "model": a.model, "ranks": world,
                          "threads_per_rank": a.threads, "batch_per_rank": a.batch,
                          "steps": a.steps - a.warmup, "malloc_env": malloc,
                          "samples_per_s": (a.steps - a.warmup) * a.batch * world / seconds}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
