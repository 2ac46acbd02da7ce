"""Checks `cohort ckpt export` files with Debian's PyTorch and h5py (tests/mpi/ckpt_export.sh).

usage: ckpt_export_check.py STEP_DIR FILE.pt FILE.h5 PREFIX

Every exported tensor must equal (1) the same tensor reassembled here, independently, from the
shards' slices as manifest.json indexes them, and (2) what tests/tools/ckpt_probe saved at that
step; torch.load's dtypes must be the checkpoint's, and the HDF5 attributes must say where the
file came from."""
import json
import sys

import h5py
import numpy as np
import torch

step_dir, pt_path, h5_path, prefix = sys.argv[1:5]
manifest = json.load(open(f"{step_dir}/manifest.json"))
step = manifest["step"]
TORCH = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16,
         "int64": torch.int64, "bool": torch.bool, "float16": torch.float16}


def reassemble(entry):
    """The tensor from its slices, read with h5py, in the checkpoint's own dtype."""
    parts = []
    for s in entry["slices"]:
        shard = h5py.File(f"{step_dir}/{manifest['shards'][s['shard']]['file']}", "r")
        data = shard["slices"][entry["name"]]
        assert data.attrs["offset"] == s["offset"], (entry["name"], s)
        parts.append(np.asarray(data[...]))
    flat = np.concatenate(parts)
    if entry["dtype"] == "bfloat16":  # stored as uint16: the upper half of a float32
        flat = (flat.astype(np.uint32) << 16).view(np.float32)
    t = torch.from_numpy(flat).to(TORCH[entry["dtype"]])
    return t.reshape(entry["shape"])


def expected(name):
    """What ckpt_probe's tensors(step) holds."""
    s = float(step)
    return {
        "fc.weight": (torch.arange(3000, dtype=torch.float32) * 0.5 + s).reshape(60, 50),
        "fc.bias": torch.arange(60, dtype=torch.float64) - s,
        "conv.weight": (torch.arange(216, dtype=torch.float32) + s).reshape(8, 3, 3, 3),
        "emb.weight": (torch.arange(500, dtype=torch.float32) / 7 + s).to(torch.bfloat16)
        .reshape(50, 10),
        "optim.step": torch.arange(1, dtype=torch.int64) + step,
        "mask": (torch.arange(17) % 2).to(torch.bool),
    }[name]


# torch >= 2.6 loads weights only by default and wants LibTorch's type tag of the typed dict
# allowed by name (docs/formats/checkpoint.md); torch 1.13 has no allow-list and needs none.
if hasattr(torch.serialization, "safe_globals"):
    from torch.jit._pickle import restore_type_tag
    with torch.serialization.safe_globals([restore_type_tag]):
        pt = torch.load(pt_path)
else:
    pt = torch.load(pt_path)
h5 = h5py.File(h5_path, "r")
assert isinstance(pt, dict), type(pt)
chosen = [e for e in manifest["tensors"] if e["name"].startswith(prefix)]
names = [e["name"][len(prefix):] for e in chosen]
assert sorted(pt) == sorted(names), (sorted(pt), names)
assert sorted(h5) == sorted(names), (sorted(h5), names)
for entry, name in zip(chosen, names):
    ref = reassemble(entry)
    got = pt[name]
    assert got.dtype == ref.dtype and got.shape == ref.shape, (name, got.dtype, got.shape)
    assert torch.equal(got, ref), f"{name}: torch.load differs from the shards"
    assert torch.equal(got, expected(entry["name"])), f"{name}: not what the probe saved"
    d = h5[name]
    assert d.attrs["dtype"] == entry["dtype"] and list(d.shape) == entry["shape"], name
    as_float = ref.float() if entry["dtype"] == "bfloat16" else ref
    assert np.array_equal(d[...], as_float.numpy()), f"{name}: the HDF5 export differs"
a = h5.attrs
assert a["format"] == "cohort-checkpoint-export" and a["step"] == step, dict(a)
assert a["world_size"] == manifest["world_size"] and a["config_hash"] == manifest["config_hash"]
print(f"export of step {step} ({manifest['world_size']} ranks): {len(names)} tensors match")
