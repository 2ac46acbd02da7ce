#!/usr/bin/python3
"""User transforms (data.transform): a TorchScript module written in Python
(examples/image-folder/make_transform.py: normalisation + random erasing from per-sample seeds)
applied by Cohort's loader equals the same module applied by Python to the same batch with the
seeds docs/data.md defines; the same with 2 workers and after a resume; and a transform that
changes the batch size or dtype, fails, or is no TorchScript, is refused naming the file (exit 3).
usage: transform.py DATA_PROBE WORKDIR"""
import json
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
import torch

probe, work = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
here = os.path.dirname(os.path.abspath(__file__))


def expect(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


def read(*extra, code=0):
    r = subprocess.run([probe, "read", data, "0", "1", "9", "16", "2", "2", *extra],
                       capture_output=True, text=True)
    expect(r.returncode == code, f"probe {extra}: exit {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)["batches"] if code == 0 else r.stderr.strip()


M = (1 << 64) - 1


def sample_seed(seed, epoch, index):  # docs/data.md "User transforms"
    z = seed ^ ((epoch * 0x9E3779B97F4A7C15) & M) ^ ((index * 0xBF58476D1CE4E5B9) & M)
    z = (z + 0x9E3779B97F4A7C15) & M
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return (z ^ (z >> 31)) >> 1


rng = np.random.default_rng(3)
data = os.path.join(work, "images.h5")
with h5py.File(data, "w") as f:
    f["inputs"] = rng.integers(0, 256, (100, 3, 12, 12), dtype=np.uint8)
    f["targets"] = rng.integers(0, 4, 100).astype(np.int64)
    f.attrs["classes"] = 4
pt = os.path.join(work, "transform.pt")
subprocess.run(["/usr/bin/python3", os.path.join(here, "../../examples/image-folder/make_transform.py"),
                pt], check=True)
module = torch.jit.load(pt)
plain, transformed = read(), read(f"transform={pt}")
erased = 0
for p, t in zip(plain, transformed):
    expect(p["indices"] == t["indices"], "same samples")
    x = torch.tensor(p["inputs"], dtype=torch.float32).reshape(p["shape"])
    seeds = torch.tensor([sample_seed(9, p["epoch"], i) for i in p["indices"]], dtype=torch.int64)
    want = module({"inputs": x}, seeds)["inputs"]
    got = torch.tensor(t["inputs"], dtype=torch.float32).reshape(t["shape"])
    expect(torch.allclose(got, want, atol=1e-6), f"batch {p['epoch']}.{p['index']} as Python's")
    erased += int(sum(int(s) % 2 == 0 for s in seeds))
expect(erased > 0, "some samples erased")
expect(read(f"transform={pt}", "workers=2") == transformed, "2 workers: the same batches")
tail = [b for b in transformed if (b["epoch"], b["index"]) >= (1, 2)]
expect(read(f"transform={pt}", "from=1,2") == tail, "resumed: the same batches")
print(f"transform: Cohort's batches equal Python's module on the same seeds ({erased} erased)")

for name, body, needle in (
        ("shrink", 'return {"inputs": inputs["inputs"][:-1]}', "changed the batch size"),
        ("dtype", 'return {"inputs": inputs["inputs"].double()}', "changed the dtype"),
        ("rename", 'return {"x": inputs["inputs"]}', "no tensor 'inputs'"),
        ("raise", 'raise RuntimeError("user error here")', "user error here")):
    src = os.path.join(work, name + ".py")
    with open(src, "w") as f:
        f.write("import sys\nfrom typing import Dict\nimport torch\n"
                "class T(torch.nn.Module):\n"
                "    def forward(self, inputs: Dict[str, torch.Tensor], seeds: torch.Tensor)"
                " -> Dict[str, torch.Tensor]:\n"
                f"        {body}\n"
                "torch.jit.script(T()).save(sys.argv[1])\n")
    bad = os.path.join(work, name + ".pt")
    subprocess.run(["/usr/bin/python3", src, bad], check=True)
    message = read(f"transform={bad}", code=3)
    expect(needle in message and bad in message and len(message.splitlines()) == 1,
           f"{name}: {message}")
junk = os.path.join(work, "junk.pt")
open(junk, "wb").write(b"PK\x03\x04 not really a zip" * 10)
message = read(f"transform={junk}", code=3)
expect("not a TorchScript module" in message and len(message.splitlines()) == 1, message)
print("bad transforms are refused with one line naming the file (exit 3)")
print("PASS")
