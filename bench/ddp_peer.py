#!/usr/bin/python3
"""The peer of `cohort bench ddp`: the same MLP, batch and thread count under Debian's Python
PyTorch DDP (gloo backend). Started per rank with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT
set (bench/compare_ddp_peer.sh does it; Debian's torch.distributed.run fails before starting).
Prints one JSON line from rank 0: samples/s of the DDP step (median step time).
"""
import argparse
import json
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo")
    widths = [1024, 2048, 2048, 1024, 10]  # as DdpBenchOptions::layers
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(nn.ReLU())
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(*layers))
    sgd = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(args.batch, widths[0])
    y = torch.randint(0, widths[-1], (args.batch,))
    times = []
    for step in range(args.steps + 3):
        dist.barrier()
        start = time.perf_counter()
        sgd.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        sgd.step()
        if step >= 3:
            times.append(time.perf_counter() - start)
    step_s = statistics.median(times)
    if dist.get_rank() == 0:
        print(json.dumps({"ranks": dist.get_world_size(), "ddp_ms": step_s * 1e3,
                          "samples_per_s": args.batch * dist.get_world_size() / step_s}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
