"""Checks for tests/mpi/pipeline.sh, run in its work directory: pipeline_check.py MODE."""
import json
import re
import sys

import h5py
import numpy as np

from zero_check import worst  # NaN-safe maximum, shared with the ZeRO checks


def fail(message):
    """A failed check: exit 1 with the message (not `assert`, which python -O drops)."""
    raise SystemExit(f"FAIL: {message}")


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
    if not evals:
        fail(f"{run}: no evaluation")
    return evals[-1]


def same(reference, run, tolerance=1e-5, evaluated=True):
    a, b = params(f"{reference}.h5"), params(f"{run}.h5")
    if set(a) != set(b):
        fail(f"{run}: tensors differ from {reference}'s: {sorted(set(a) ^ set(b))}")
    largest = worst(float(np.abs(a[k] - b[k]).max()) for k in a)
    if len(curve(run)) != 10 or len(curve(reference)) != 10:
        fail(f"{run}: {len(curve(run))} step records, {reference} {len(curve(reference))}, not 10")
    loss = worst(abs(x - y) for x, y in zip(curve(reference), curve(run)))
    print(f"{run:16s} vs {reference}: {len(a)} tensors, max |param diff| {largest:.1e}, "
          f"max |loss diff| {loss:.1e}")
    if not largest < tolerance:  # NaN fails too
        fail(f"{run}: parameters differ from {reference}'s by {largest:.2e} >= {tolerance:.0e}")
    if not loss < tolerance:
        fail(f"{run}: losses differ from {reference}'s by {loss:.2e} >= {tolerance:.0e}")
    if not evaluated:
        return
    a_eval, b_eval = evaluation(reference), evaluation(run)
    if a_eval["samples"] != b_eval["samples"]:
        fail(f"{run}: evaluated {b_eval['samples']} samples, {reference} {a_eval['samples']}")
    if not abs(a_eval["loss"] - b_eval["loss"]) < tolerance:
        fail(f"{run}: evaluation loss {b_eval['loss']}, {reference}'s {a_eval['loss']}")
    if not abs(a_eval["accuracy"] - b_eval["accuracy"]) < 1e-3:
        fail(f"{run}: evaluation accuracy {b_eval['accuracy']}, {reference}'s "
             f"{a_eval['accuracy']}")


# The GPT's token table, tied to its output head (src/models/builtin/gpt.cpp): pipelined, the first
# stage holds one copy (the embedding) and the last another (the head).
TIED = "tokens.weight"


def pipeline_record(run):
    """The run's one `pipeline` record (metrics.jsonl)."""
    records = [r for r in map(json.loads, open(f"{run}/metrics.jsonl"))
               if r["event"] == "pipeline"]
    if len(records) != 1:
        fail(f"{run}: {len(records)} pipeline records in its metrics.jsonl, not 1")
    return records[0]


def tied_copies(reference, run, tolerance=1e-4):
    """Both stages' copies of the tied table against one process's, from what each stage wrote.

    The checkpoint stores a tensor held by several ranks once, spread among its holders by bytes
    (the table, its exp_avg, exp_avg_sq and step counter: here the first stage writes the table
    and part of exp_avg, the last stage the rest). So each stage's slices are compared, each
    stage's own copy, with the same tensors of the one-process run: within `tolerance` of the
    tensor's largest value (measured: 5e-7), the step counter exactly. If the copies parted (a
    gradient not summed across the stages, an update skipped on one), the slices of at least one
    stage fail; a stage that wrote no slice of them fails too, as it left nothing to compare."""
    record = pipeline_record(run)
    stage_of = {r["rank"]: r["stage"] for r in record["ranks"]}
    last = record["stages"] - 1
    def tied(name):
        return name == f"model.{TIED}" or name.startswith(f"optim.{TIED}.")

    want = stored(reference, 10, tied)
    base = f"{run}/checkpoints/step-{10:08d}"
    manifest = json.load(open(f"{base}/manifest.json"))
    seen, biggest = {}, 0.0
    for t in manifest["tensors"]:
        if not tied(t["name"]):
            continue
        if t["name"] not in want:
            fail(f"{run}: {t['name']} is not in {reference}'s checkpoint")
        scale = max(float(np.abs(want[t["name"]]).max()), 1e-30)
        for s in t["slices"]:
            shard = manifest["shards"][s["shard"]]
            stage = stage_of[shard["rank"]]
            with h5py.File(f"{base}/{shard['file']}", "r") as f:
                got = f["slices/" + t["name"]][...].astype(np.float64).reshape(-1)
            there = want[t["name"]][s["offset"]:s["offset"] + s["count"]]
            exact = t["name"].endswith(".step")
            d = float(np.abs(got - there).max(initial=0)) / (1 if exact else scale)
            what = f"{t['name']}[{s['offset']}:{s['offset'] + s['count']}]"
            if not d <= (0 if exact else tolerance):  # NaN fails too
                fail(f"{run}: stage {stage}'s copy of the tied {TIED}: {what}, written by rank "
                     f"{shard['rank']}, differs from {reference}'s by {d:.2e}"
                     f"{'' if exact else ' of its largest value'}: the stages' copies parted")
            seen.setdefault(stage, []).append(what)
            biggest = max(biggest, 0 if exact else d)
    for stage in sorted({0, last}):
        if stage not in seen:
            fail(f"{run}: stage {stage} wrote nothing of its copy of the tied {TIED}: nothing to "
                 f"compare")
    print(f"{run}: the tied {TIED} as each stage holds it equals {reference}'s (largest "
          f"difference {biggest:.1e} of a tensor's largest value): " +
          "; ".join(f"stage {k}: {', '.join(v)}" for k, v in sorted(seen.items())))


def copies_checksums(run, tied=True):
    """The checksums each rank gives of its copy of the shared parameters at the end of the run
    (the pipeline record's shared_checksum): in each replica (data and tensor coordinate) the
    first and the last stage hold equal copies, byte for byte, and no other stage holds one. A
    model without shared parameters (tied=False) has none anywhere."""
    record = pipeline_record(run)
    last = record["stages"] - 1
    replicas = {}
    for r in record["ranks"]:
        replicas.setdefault((r["data"], r["tensor"]), {})[r["stage"]] = r["shared_checksum"]
    for (data, tensor), by_stage in sorted(replicas.items()):
        where = f"{run}: replica data {data}, tensor {tensor}"
        if not tied:
            if any(c is not None for c in by_stage.values()):
                fail(f"{where}: a shared checksum where the model shares nothing: {by_stage}")
            continue
        first, end = by_stage.get(0), by_stage.get(last)
        if first is None or end is None:
            fail(f"{where}: stage 0 or stage {last} gives no checksum of its copy: {by_stage}")
        if first != end:
            fail(f"{where}: stage 0's copy ({first}) and stage {last}'s ({end}) differ: the tied "
                 f"{TIED} came apart")
        if any(c is not None for s, c in by_stage.items() if s not in (0, last)):
            fail(f"{where}: a middle stage holds a shared copy: {by_stage}")
    print(f"{run}: {len(replicas)} replica(s), "
          f"{'first and last stage copies byte-identical' if tied else 'no shared copies'}")


def stored(run, step, keep):
    """The checkpoint's tensors whose names `keep` accepts, flat float64, from their slices."""
    base = f"{run}/checkpoints/step-{step:08d}"
    manifest = json.load(open(f"{base}/manifest.json"))
    out = {}
    for t in manifest["tensors"]:
        if not keep(t["name"]):
            continue
        flat = np.zeros(int(np.prod(t["shape"], dtype=np.int64)), dtype=np.float64)
        for s in t["slices"]:
            with h5py.File(f"{base}/{manifest['shards'][s['shard']]['file']}", "r") as shard:
                flat[s["offset"]:s["offset"] + s["count"]] = \
                    shard["slices/" + t["name"]][...].astype(np.float64).reshape(-1)
        out[t["name"]] = flat
    return out


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
        if not max(norms[0]) > 0.05:
            fail(f"{one}: no gradient norm above the clipping threshold 0.05: {norms[0]}")
        if not worst(abs(a - b) / a for a, b in zip(*norms)) < 1e-4:
            fail(f"{split}: gradient norms {norms[1]} differ from {one}'s {norms[0]}")
        print(f"{split}: global gradient norms match one process's ({norms[0][0]:.4f}, ...)")
    # The tied token table: the first and the last stage hold equal copies, in every pipelined
    # GPT run (the loss curves alone would let a small parting through).
    for schedule in ("gpipe", "1f1b"):
        tied_copies("GPT-one", f"GPT-p2-{schedule}")
        tied_copies("GPT-one", f"GPT-p2d2-{schedule}")
        copies_checksums(f"GPT-p2-{schedule}")
        copies_checksums(f"GPT-p2d2-{schedule}")
        copies_checksums(f"MLP-p2-{schedule}", tied=False)
    tied_copies("GPT-one", "GPT-p2t2")
    copies_checksums("GPT-p2t2")
    tied_copies("GPT-one-clip", "GPT-p2t2-clip")
elif mode == "tied":
    # Runs of other tests (zero.sh's pipelined GPT under ZeRO, whose copies are pieces): the
    # checksums of the first and last stage's copies agree.
    for run in sys.argv[2:]:
        copies_checksums(run)
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
        largest = worst(float(np.abs(straight[k] - got[k]).max()) for k in straight)
        print(f"{run}: resumed on another layout, max |param diff| vs straight {largest:.1e}")
        assert largest < 1e-5, (run, largest)
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
        largest = worst(float(np.abs(tp[k] - got[k]).max()) for k in tp)
        print(f"{run}: parallel.tensor = 2 checkpoint resumed there, max |param diff| vs the "
              f"uninterrupted run {largest:.1e}")
        assert largest < 1e-5, (run, largest)
else:
    raise SystemExit(f"unknown mode {mode}")
