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
    zero_check.py zero STAGE RUN...      each RUN really trained under ZeRO stage STAGE (below)
    zero_check.py not-zero DDP ZERO      the `zero` control rejects DDP, a parallel.zero = 0 run of
                                         ZERO's configuration: it can tell ZeRO from DDP there

A bit-identical comparison with DDP passes as well when parallel.zero is ignored, so every ZeRO
run carries the control `zero`: rank 0's banner says "zero STAGE over D data-parallel rank(s):
this rank steps X of the Y trained parameters", with D the run's data-parallel size (its `run`
record) and X within 64 D of Y / D; and the checkpoint holds, written by rank 0's tensor group,
exactly X elements of each kind of optimizer state (momentum_buffer, or exp_avg and exp_avg_sq),
and under stage 3 exactly X elements of the parameters too: ZeRO's pieces are written by the
lowest rank holding them, so rank 0 writes all of its own 1/D share and nothing of the others'.
Under DDP every rank holds every tensor whole and the checkpoint spreads them by bytes instead.
"""
import json
import re
import sys

import h5py
import numpy as np


def fail(message):
    """A failed check: exit 1 with the message (not `assert`, which python -O drops)."""
    raise SystemExit(f"FAIL: {message}")


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
    if a.keys() != b.keys():
        fail(f"{run}: tensors differ from {ref}'s: {sorted(set(a) ^ set(b))}")
    return worst(float(np.abs(a[k] - b[k]).max(initial=0)) for k in a)


def worst(values):
    """The largest of VALUES, NaN if any is NaN (Python's max keeps its current value when
    compared with NaN, so a NaN after the first would vanish), 0 for none."""
    values = list(values)
    return float("nan") if any(v != v for v in values) else max(values, default=0.0)


BANNER = re.compile(r"^zero (\d+) over (\d+) data-parallel rank\(s\): this rank steps (\d+) of "
                    r"the (\d+) trained parameters", re.M)
# Rank 0's gradients as DDP held them after the last step: ZeRO 2 and 3 keep this rank's shards
# only (its share, 4 bytes per element, padding aside), stage 1 whole buckets (every element).
GRADIENTS = re.compile(r"^zero (\d+): this rank held (\d+) bytes of gradients between steps$", re.M)
# A tensor-parallel part of another tensor rank than 0 (".tp1of2"): rank 0 holds none of it.
OTHER_TENSOR_RANK = re.compile(r"\.tp([1-9]\d*)of\d+(\.|$)")
STATE = re.compile(r"^optim\..*\.(momentum_buffer|exp_avg|exp_avg_sq)$")


def layout(run):
    """The run's data x pipeline x tensor layout, from its metrics' first `run` record."""
    for record in map(json.loads, open(f"{run}/metrics.jsonl")):
        if record.get("event") == "run":
            return record["layout"]
    fail(f"{run}: no run record in {run}/metrics.jsonl")


def banner(run):
    """(stage, data ranks, X, Y) from rank 0's ZeRO line in RUN.log; None without one."""
    m = BANNER.search(open(f"{run}.log").read())
    return tuple(map(int, m.groups())) if m else None


def held_by_rank_zero(run, tensor_size):
    """Elements per kind (each optimizer state, "model") the latest checkpoint holds from rank 0:
    written by its tensor group (ranks 0 .. T-1: docs/parallelism.md numbers the tensor index
    fastest), which share the tensors not split by tensor parallelism (the checkpoint spreads
    those among them), less the parts of other tensor ranks. "model" counts every model.* tensor:
    the models of zero.sh and recompute.sh have no buffers, which would stay whole."""
    base = f"{run}/checkpoints"
    name = open(f"{base}/latest").read().strip()
    manifest = json.load(open(f"{base}/{name}/manifest.json"))
    held = {}
    for t in manifest["tensors"]:
        if OTHER_TENSOR_RANK.search(t["name"]):
            continue
        m = STATE.match(t["name"])
        kind = m.group(1) if m else "model" if t["name"].startswith("model.") else None
        if kind is None:
            continue
        held[kind] = held.get(kind, 0) + sum(
            s["count"] for s in t["slices"]
            if manifest["shards"][s["shard"]]["rank"] < tensor_size)
    return held


def pieces_problems(run, stage, here, tensor_size):
    """What in RUN's checkpoint disagrees with rank 0 holding X = `here` of each state."""
    held = held_by_rank_zero(run, tensor_size)
    states = {k: v for k, v in held.items() if k != "model"}
    problems = []
    if not states:
        problems.append("its checkpoint holds no optimizer state to count")
    for kind, count in sorted(states.items()):
        if count != here:
            problems.append(f"rank 0 wrote {count} elements of {kind}, not its share {here}")
    if stage == 3 and held.get("model") != here:
        problems.append(f"rank 0 wrote {held.get('model')} parameter elements, not its share "
                        f"{here} (stage 3 holds parameters in pieces too)")
    return problems, held


def zero_problems(run, stage):
    """Why RUN did not train under ZeRO stage STAGE (empty: it did), and a summary."""
    data = layout(run)
    line = banner(run)
    if line is None:
        return ["no 'zero N over D data-parallel rank(s)' line in its banner"], ""
    shown, ranks, here, total = line
    problems = []
    if shown != stage:
        problems.append(f"its banner says zero {shown}")
    if ranks != data["data"]:
        problems.append(f"its banner says {ranks} data ranks, its layout {data['data']}")
    if abs(here - total / ranks) > 64 * ranks:
        problems.append(f"rank 0 steps {here} of {total} parameters, not about 1/{ranks}")
    grads = GRADIENTS.search(open(f"{run}.log").read())
    if grads is None:
        problems.append("no 'zero N: this rank held G bytes of gradients' line in its log")
    else:
        held_bytes, whole, share = int(grads.group(2)), 4 * total, 4 * here
        if stage >= 2 and not held_bytes <= 1.05 * share + 4096:
            problems.append(f"rank 0 held {held_bytes} bytes of gradients, not its share "
                            f"(~{share}): gradients not sharded")
        if stage == 1 and not held_bytes >= whole:
            problems.append(f"rank 0 held {held_bytes} bytes of gradients, less than all "
                            f"{whole} (stage 1 keeps whole buckets)")
    more, held = pieces_problems(run, stage, here, data["tensor"])
    summary = (f"zero {shown} over {ranks} data ranks: rank 0 steps {here} of {total} "
               f"parameters; its checkpoint holds from rank 0 " +
               ", ".join(f"{v} {k}" for k, v in sorted(held.items())))
    return problems + more, summary


def main(mode, args):
    if mode == "same":
        ref, runs = args[0], args[1:]
        for run in runs:
            d = largest_difference(ref, run)
            if d != 0:
                fail(f"{run} differs from {ref} by up to {d:.3e}")
            print(f"{run}: parameters and optimizer state bit-identical to {ref}")
    elif mode == "close":
        tol, ref, runs = float(args[0]), args[1], args[2:]
        for run in runs:
            d = largest_difference(ref, run)
            print(f"{run}: largest difference from {ref} {d:.2e} (bound {tol:.0e})")
            if not d <= tol:  # NaN fails too
                fail(f"{run} differs from {ref} by {d:.3e} > {tol:.0e}")
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
            if not d <= bound:  # NaN fails too
                fail(f"{run} differs from {ref} by {d:.3e} > {bound:.2e}")
    elif mode == "relative":
        tol, ref, runs = float(args[0]), args[1], args[2:]
        a = checkpoint(ref)[1]
        for run in runs:
            b = checkpoint(run)[1]
            rel = worst(float(np.abs(a[k] - b[k]).max() / (np.abs(a[k]).max() + 1e-12))
                        for k in a if k.startswith("model."))
            print(f"{run}: largest parameter difference from {ref} {rel:.1e} of the tensor's "
                  f"largest value (bound {tol:.0e})")
            if not rel <= tol:  # NaN fails too
                fail(f"{run}: parameters differ from {ref} by {rel:.1e} of a tensor's largest "
                     f"value > {tol:.0e}")
    elif mode == "zero":
        stage, runs = int(args[0]), args[1:]
        if not runs:
            raise SystemExit(__doc__)
        for run in runs:
            problems, summary = zero_problems(run, stage)
            if problems:
                fail(f"{run} did not train under ZeRO stage {stage}: " + "; ".join(problems))
            print(f"{run}: {summary}")
    elif mode == "not-zero":
        if len(args) != 2:
            raise SystemExit(__doc__)
        ddp, zero = args
        # Both halves of the control must reject DDP on their own: the banner, and the
        # checkpoint's count against the ZeRO run's share.
        if banner(ddp) is not None:
            fail(f"{ddp}: a parallel.zero = 0 run has a ZeRO line in its banner")
        line = banner(zero)
        if line is None:
            fail(f"{zero}: no ZeRO line in its banner to take rank 0's share from")
        problems, _ = pieces_problems(ddp, 1, line[2], layout(ddp)["tensor"])
        if not problems:
            fail(f"{ddp}: the checkpoint of a DDP run passes for ZeRO's (rank 0 wrote exactly "
                 f"{line[2]} elements of each optimizer state): the control cannot tell them "
                 f"apart")
        print(f"{ddp}: the ZeRO control rejects this DDP run (no ZeRO banner; {problems[0]})")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
