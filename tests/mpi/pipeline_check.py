"""Checks for tests/mpi/pipeline.sh, run in its work directory: pipeline_check.py MODE."""
import json
import re
import sys

import h5py
import numpy as np


def params(path):
    """The model's tensors from an exported checkpoint (whole: the export joins tensor-parallel
    parts; an export of parts is put back together here too)."""
    f = h5py.File(path, "r")
    return join({name: np.asarray(f[name]) for name in f})


def stored_model(run, step):
    """The checkpoint's model.* tensors as stored, read from its shards (parts by their names)."""
    base = f"{run}/checkpoints/step-{step:08d}"
    manifest = json.load(open(f"{base}/manifest.json"))
    out = {}
    for t in manifest["tensors"]:
        if not t["name"].startswith("model."):
            continue
        flat = np.zeros(int(np.prod(t["shape"], dtype=np.int64)), dtype=np.float32)
        for s in t["slices"]:
            with h5py.File(f"{base}/{manifest['shards'][s['shard']]['file']}", "r") as shard:
                flat[s["offset"]:s["offset"] + s["count"]] = shard["slices/" + t["name"]][...]
        out[t["name"][len("model."):]] = flat.reshape(t["shape"])
    return out


def join(tensors):
    """Tensor-parallel parts put back together the way the GPT splits them (qkv by heads inside
    q, k and v; proj and out by columns; fc by rows), independently of Cohort's layouts."""
    out, parts = {}, {}
    for name, value in tensors.items():
        m = re.match(r"(.*)\.tp(\d+)of(\d+)$", name)
        if m:
            parts.setdefault(m.group(1), {})[int(m.group(2))] = value
        else:
            out[name] = value
    for name, p in parts.items():
        pieces = [p[i] for i in range(len(p))]
        if ".qkv." in name:
            out[name] = np.concatenate([np.concatenate([x.reshape(3, -1, *x.shape[1:])[c]
                                                        for x in pieces]) for c in range(3)])
        elif name.endswith("proj.weight") or name.endswith("out.weight"):
            out[name] = np.concatenate(pieces, axis=1)
        else:
            out[name] = np.concatenate(pieces, axis=0)
    return out


def curve(run):
    return [r["loss"] for r in map(json.loads, open(f"{run}/metrics.jsonl"))
            if r["event"] == "step"]


def evaluation(run):
    evals = [r for r in map(json.loads, open(f"{run}/metrics.jsonl")) if r["event"] == "eval"]
    assert evals, f"{run}: no evaluation"
    return evals[-1]


def same(reference, run, tolerance=1e-5, evaluated=True):
    a, b = params(f"{reference}.h5"), params(f"{run}.h5")
    assert set(a) == set(b), (run, sorted(set(a) ^ set(b)))
    worst = max(float(np.abs(a[k] - b[k]).max()) for k in a)
    loss = max(abs(x - y) for x, y in zip(curve(reference), curve(run)))
    assert len(curve(run)) == 10, (run, len(curve(run)))
    print(f"{run:16s} vs {reference}: {len(a)} tensors, max |param diff| {worst:.1e}, "
          f"max |loss diff| {loss:.1e}")
    assert worst < tolerance, (run, worst)
    assert loss < tolerance, (run, loss)
    if not evaluated:
        return
    a_eval, b_eval = evaluation(reference), evaluation(run)
    assert a_eval["samples"] == b_eval["samples"], (a_eval, b_eval)
    assert abs(a_eval["loss"] - b_eval["loss"]) < tolerance, (run, a_eval, b_eval)
    assert abs(a_eval["accuracy"] - b_eval["accuracy"]) < 1e-3, (run, a_eval, b_eval)


mode = sys.argv[1]
if mode == "equivalence":
    for model in ("MLP", "GPT"):
        for schedule in ("gpipe", "1f1b"):
            same(f"{model}-one", f"{model}-p2-{schedule}")
            same(f"{model}-one", f"{model}-p2d2-{schedule}")
    for schedule in ("gpipe", "1f1b"):
        same("CNN-one", f"CNN-p2-{schedule}", evaluated=False)
    same("GPT-one", "GPT-t2")
    same("GPT-one", "GPT-p2t2")
    same("MLP-one-clip", "MLP-p2-clip")
    same("GPT-one-clip", "GPT-p2t2-clip")
    # The clipped runs really clipped: their norms (measured every step when clipping) exceed the
    # threshold, equal on both sides.
    for one, split in (("MLP-one-clip", "MLP-p2-clip"), ("GPT-one-clip", "GPT-p2t2-clip")):
        norms = [[r["grad_norm"] for r in map(json.loads, open(f"{run}/metrics.jsonl"))
                  if r["event"] == "step"] for run in (one, split)]
        assert max(norms[0]) > 0.05, norms
        assert max(abs(a - b) / a for a, b in zip(*norms)) < 1e-4, norms
        print(f"{split}: global gradient norms match one process's ({norms[0][0]:.4f}, ...)")
    # The tied token table: the first and the last stage hold equal copies.
    record = [json.loads(l) for l in open("GPT-p2-1f1b/metrics.jsonl")]
    assert any(r["event"] == "pipeline" for r in record)
elif mode == "memory":
    report = {}
    for schedule in ("gpipe", "1f1b"):
        rec = [r for r in map(json.loads, open(f"mem-{schedule}/metrics.jsonl"))
               if r["event"] == "pipeline"]
        assert len(rec) == 1, rec
        report[schedule] = {x["stage"]: x for x in rec[0]["ranks"]}
        p, m = rec[0]["stages"], rec[0]["micro_batches"]
    for s in range(p):
        g, o = report["gpipe"][s], report["1f1b"][s]
        print(f"stage {s}: micro-batches held gpipe {g['peak_in_flight']} 1f1b "
              f"{o['peak_in_flight']}; boundary activations {g['peak_activation_bytes']} vs "
              f"{o['peak_activation_bytes']} B; heap growth {g['peak_memory_growth_bytes']} vs "
              f"{o['peak_memory_growth_bytes']} B")
        assert g["peak_in_flight"] == m, g
        assert o["peak_in_flight"] == p - s <= p, o
        assert o["peak_activation_bytes"] * m == g["peak_activation_bytes"] * (p - s), (g, o)
        # Measured memory, not counted: 16 micro-batches held against at most 2 (sends still in
        # flight on a loaded machine add some to either; a factor 2 leaves room for them).
        assert 2 * o["peak_memory_growth_bytes"] < g["peak_memory_growth_bytes"], (g, o)
elif mode == "bench":
    rows = json.load(open("bench.json"))["rows"]
    assert len(rows) == 4, rows
    for r in rows:
        m = r["micro_batches"]
        held = m if r["schedule"] == "gpipe" else min(m, r["stages"])
        assert r["peak_in_flight"] == held, r
        assert 0 < r["bubble_measured"] < 1 and r["bubble_theory"] == 1 / (m + 1), r
    print("bench pipeline:", [(r["schedule"], r["micro_batches"], round(r["bubble_measured"], 3))
                              for r in rows])
elif mode == "resume":
    straight = params("straight.h5")
    for run in ("parted", "parted1"):
        got = params(f"{run}.h5")
        worst = max(float(np.abs(straight[k] - got[k]).max()) for k in straight)
        print(f"{run}: resumed on another layout, max |param diff| vs straight {worst:.1e}")
        assert worst < 1e-5, (run, worst)
    # Tensor-parallel resharding: the export joined the parts, as this script joins the stored ones.
    exported = h5py.File("tp-straight.h5", "r")
    assert not any(".tp" in name for name in exported), sorted(exported)
    joined = join(stored_model("tp-straight", 10))
    assert sorted(joined) == sorted(exported), (sorted(joined), sorted(exported))
    for k in joined:
        assert np.array_equal(joined[k], np.asarray(exported[k])), k
    print(f"tp-straight: the export joins the tensor-parallel parts ({len(joined)} tensors)")
    tp = params("tp-straight.h5")
    for run in ("tp1", "tp4", "tp1d4z2"):
        got = params(f"{run}.h5")
        assert sorted(got) == sorted(tp), (run, sorted(got))
        worst = max(float(np.abs(tp[k] - got[k]).max()) for k in tp)
        print(f"{run}: parallel.tensor = 2 checkpoint resumed there, max |param diff| vs the "
              f"uninterrupted run {worst:.1e}")
        assert worst < 1e-5, (run, worst)
else:
    raise SystemExit(f"unknown mode {mode}")
