#!/usr/bin/python3
"""Cohort's DistributedSampler against torch.utils.data.DistributedSampler (Debian's python3-torch):
the same indices per rank, exactly, over a grid of sizes, world sizes, seeds, epochs, shuffle and
drop_last settings (including a world larger than the dataset, where torch pads repeatedly)."""
import itertools
import json
import subprocess
import sys

import torch
from torch.utils.data import DistributedSampler

probe = sys.argv[1]
grid = [c for c in itertools.product([1, 7, 10, 1797, 60000], [1, 2, 3, 4, 8], [0, 1234],
                                     [0, 3], [True, False], [False, True])
        if c[0] != 60000 or (c[1], c[2], c[4]) == (4, 1234, True)]  # one large case is enough
lines = "".join(f"{size} {world} {seed} {epoch} {int(shuffle)} {int(drop_last)}\n"
                for size, world, seed, epoch, shuffle, drop_last in grid)
results = subprocess.run([probe, "sampler"], input=lines, check=True, capture_output=True,
                         text=True).stdout.splitlines()
assert len(results) == len(grid), f"probe answered {len(results)} of {len(grid)} cases"
for (size, world, seed, epoch, shuffle, drop_last), line in zip(grid, results):
    ours = json.loads(line)
    for rank in range(world):
        sampler = DistributedSampler(range(size), num_replicas=world, rank=rank, shuffle=shuffle,
                                     seed=seed, drop_last=drop_last)
        sampler.set_epoch(epoch)
        theirs = list(sampler)
        if ours["ranks"][rank] != theirs or ours["num_samples"] != len(sampler):
            print(f"MISMATCH size={size} world={world} seed={seed} epoch={epoch} "
                  f"shuffle={shuffle} drop_last={drop_last} rank={rank}:\n"
                  f" cohort {ours['ranks'][rank][:12]}...\n torch  {theirs[:12]}...")
            sys.exit(1)
print(f"OK: {len(grid)} configurations, every rank's indices identical to torch {torch.__version__}")
