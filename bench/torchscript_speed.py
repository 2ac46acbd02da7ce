"""A TorchScript model against the built-in model of the same architecture, side by side.

The built-in `mlp` (model.hidden = 256,256: Linear + ReLU, Linear + ReLU, Linear) and the same
network written in Python as an nn.Sequential, scripted and saved, are trained by `cohort train`
on the same data set, in alternating order for several rounds (the order flips each round, so
that a machine getting slower or faster during the run weighs on both alike). Each run's steady
throughput (`steady_samples_per_s` of metrics.jsonl's end event: steps after the first ones,
where the TorchScript interpreter profiles and optimizes the graph) is read; the figure is the
median over rounds of scripted / built-in.

Usage: /usr/bin/python3 bench/torchscript_speed.py COHORT [--rounds R] [--steps S] [--batch B]
       [--ranks N] [--json]
(N > 1 runs under MPIEXEC/MPIEXEC_FLAGS from the environment, default mpiexec.)
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import torch

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("cohort", type=os.path.abspath)
parser.add_argument("--rounds", type=int, default=5)
parser.add_argument("--steps", type=int, default=400)
parser.add_argument("--batch", type=int, default=128)
parser.add_argument("--ranks", type=int, default=1)
parser.add_argument("--json", action="store_true", help="print the figures as JSON")
parser.add_argument("--jit-optimize", action="store_true",
                    help="also the module with model.jit_optimize=true (hangs on Debian 13)")
args = parser.parse_args()
if args.rounds < 1 or args.steps < 50 or args.batch < 1 or args.ranks < 1:
    sys.exit("torchscript_speed: --rounds >= 1, --steps >= 50, --batch >= 1, --ranks >= 1")

work = tempfile.mkdtemp(prefix="cohort-bench-torchscript-")
os.chdir(work)
rng = np.random.default_rng(0)
n, features, classes = 8192, 64, 10
x = rng.standard_normal((n, features)).astype(np.float32)
with h5py.File("set.h5", "w") as f:
    f["inputs"] = x
    f["targets"] = x[:, :classes].argmax(1).astype(np.int64)
    f.attrs["format_version"] = 1
    f.attrs["classes"] = classes
net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(features, 256), torch.nn.ReLU(),
                          torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, classes))
torch.jit.script(net).save("mlp.pt")

launch = []
if args.ranks > 1:
    launch = shlex.split(os.environ.get("MPIEXEC", "mpiexec")) + shlex.split(
        os.environ.get("MPIEXEC_FLAGS", "")) + ["-np", str(args.ranks)]
MODELS = {"built-in mlp": ["--set", "model.name=mlp", "--set", "model.hidden=256,256"],
          "TorchScript mlp": ["--set", "model.name=torchscript", "--set", "model.file=mlp.pt"]}
if args.jit_optimize:
    MODELS["TorchScript mlp, optimized"] = MODELS["TorchScript mlp"] + [
        "--set", "model.jit_optimize=true"]


def throughput(name, run):
    cmd = launch + [args.cohort, "train", *MODELS[name], "--set", "data.path=set.h5",
                    "--set", f"data.batch_size={args.batch}", "--set", "optim.name=sgd",
                    "--set", "optim.lr=0.01", "--set", f"train.max_steps={args.steps}",
                    "--set", "train.epochs=1000", "--set", "train.log_every=0",
                    "--set", "checkpoint.every_steps=0",
                    "--set", "checkpoint.at_end=false", "--set", f"train.run_dir={run}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"torchscript_speed: {name} failed: {done.stderr[-1500:]}")
    with open(f"{run}/metrics.jsonl") as f:
        end = [r for r in map(json.loads, f) if r["event"] == "end"]
    return end[-1]["steady_samples_per_s"]


rates = {name: [] for name in MODELS}
ratios = []
for r in range(args.rounds):
    order = list(MODELS) if r % 2 == 0 else list(reversed(MODELS))
    got = {name: throughput(name, f"run-{r}-{i}") for i, name in enumerate(order)}
    for name in MODELS:
        rates[name].append(got[name])
    ratios.append({name: got[name] / got["built-in mlp"] for name in MODELS})

result = {"ranks": args.ranks, "batch": args.batch, "steps": args.steps, "rounds": args.rounds,
          "samples_per_s": {k: statistics.median(v) for k, v in rates.items()},
          "ratio": {k: statistics.median(q[k] for q in ratios) for k in MODELS},
          "ratio_rounds": ratios, "floor": 0.95}
if args.json:
    print(json.dumps(result, indent=2))
else:
    print(f"TorchScript model vs built-in, same architecture (mlp 64-256-256-10), batch "
          f"{args.batch}, {args.ranks} rank(s), {args.steps} steps, median of {args.rounds} rounds")
    for k, v in result["samples_per_s"].items():
        print(f"  {k:26s} {v:10.0f} samples/s (steady)")
    for k in list(MODELS)[1:]:
        print(f"  {k} / built-in = {result['ratio'][k]:.3f} (rounds: "
              f"{', '.join(f'{q[k]:.3f}' for q in ratios)}; floor 0.95)")
