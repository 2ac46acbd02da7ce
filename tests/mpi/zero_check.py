"""Checks of tests/mpi/zero.sh, on the runs' checkpoints (read through their manifests, every
tensor reassembled from its slices, so parts written by ZeRO ranks are joined independently of
Cohort's reader).

    zero_check.py same REF RUN...        model and optimizer state bit-identical to REF's
    zero_check.py close TOL REF RUN...   both within TOL (max absolute difference)
    zero_check.py order [floor=F] OTHER REF RUN...  within F (1e-6) of REF, or (AdamW magnifies
                                         the last bits of
                                         small gradients) within twice what DDP itself moves when
                                         only the summation order changes: REF against OTHER,
                                         the same training under another order
    zero_check.py relative TOL REF RUN... model parameters within TOL of REF's, relative to each
                                         tensor's largest value (resumed on another world size)
"""
import json
import sys

import h5py
import numpy as np


def checkpoint(run, step=None):
    base = f"{run}/checkpoints"
    name = f"step-{step:08d}" if step else open(f"{base}/latest").read().strip()
    manifest = json.load(open(f"{base}/{name}/manifest.json"))
    tensors = {}
    for t in manifest["tensors"]:
        flat = np.zeros(int(np.prod(t["shape"], dtype=np.int64)), dtype=np.float64)
        for s in t["slices"]:
            shard = manifest["shards"][s["shard"]]["file"]
            with h5py.File(f"{base}/{name}/{shard}", "r") as f:
                flat[s["offset"]:s["offset"] + s["count"]] = \
                    f["slices/" + t["name"]][...].astype(np.float64)
        tensors[t["name"]] = flat
    return manifest, tensors


def trained(tensors):
    return {k: v for k, v in tensors.items() if k.startswith(("model.", "optim."))}


def largest_difference(ref, run):
    a, b = trained(checkpoint(ref)[1]), trained(checkpoint(run)[1])
    assert a.keys() == b.keys(), f"{run}: tensors differ from {ref}'s: {sorted(set(a) ^ set(b))}"
    return max(float(np.abs(a[k] - b[k]).max(initial=0)) for k in a)


def main(mode, args):
    if mode == "same":
        ref, runs = args[0], args[1:]
        for run in runs:
            d = largest_difference(ref, run)
            assert d == 0, f"{run} differs from {ref} by up to {d:.3e}"
            print(f"{run}: parameters and optimizer state bit-identical to {ref}")
    elif mode == "close":
        tol, ref, runs = float(args[0]), args[1], args[2:]
        for run in runs:
            d = largest_difference(ref, run)
            print(f"{run}: largest difference from {ref} {d:.2e} (bound {tol:.0e})")
            assert d <= tol, f"{run} differs from {ref} by {d:.3e} > {tol:.0e}"
    elif mode == "order":
        floor = 1e-6
        if args[0].startswith("floor="):
            floor, args = float(args[0][len("floor="):]), args[1:]
        other, ref, runs = args[0], args[1], args[2:]
        own = largest_difference(other, ref)
        bound = max(floor, 2 * own)
        print(f"{ref}: moves by {own:.2e} from {other}, the same training summed in another order")
        for run in runs:
            d = largest_difference(ref, run)
            print(f"{run}: largest difference from {ref} {d:.2e} (bound {bound:.2e})")
            assert d <= bound, f"{run} differs from {ref} by {d:.3e} > {bound:.2e}"
    elif mode == "relative":
        tol, ref, runs = float(args[0]), args[1], args[2:]
        a = checkpoint(ref)[1]
        for run in runs:
            b = checkpoint(run)[1]
            rel = max(float(np.abs(a[k] - b[k]).max() / (np.abs(a[k]).max() + 1e-12))
                      for k in a if k.startswith("model."))
            print(f"{run}: largest parameter difference from {ref} {rel:.1e} of the tensor's "
                  f"largest value (bound {tol:.0e})")
            assert rel <= tol, (run, rel)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
