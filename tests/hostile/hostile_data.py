#!/usr/bin/python3
"""Hostile and broken datasets, importer inputs, configs and metrics files against the real
`cohort` (issue: hostile input): the documented exit code, one `cohort: error:` line naming the
file and the field, bounded time and peak memory, nothing half-written, no escape sequence on the
terminal. usage: hostile_data.py COHORT WORKDIR"""
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import urllib.request

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import contract as hostile  # noqa: E402

contract = hostile.start("hostile_data.py COHORT WORKDIR")
cohort = contract.cohort
run, failures = contract.run, contract.failures


def inspect(case, path, *needles):
    run(case, ["data", "inspect", path], 3, (path,) + needles)


def good(name, n=64, features=4):
    with h5py.File(name, "w") as f:
        f["inputs"] = np.ones((n, features), np.float32)
        f["targets"] = np.arange(n, dtype=np.int64) % 4
        f.attrs["classes"] = 4
    return name


# 4. HDF5 indirection: links to other files or names, external raw data, virtual datasets.
good("other.h5")
with h5py.File("external_link.h5", "w") as f:
    f["inputs"] = h5py.ExternalLink("other.h5", "/inputs")
    f["targets"] = np.zeros(64, np.int64)
inspect("external link", "external_link.h5", "'/inputs'", "external link")
with h5py.File("soft_link.h5", "w") as f:
    f["data/x"] = np.ones((64, 4), np.float32)
    f["inputs"] = h5py.SoftLink("/data/x")
    f["targets"] = np.zeros(64, np.int64)
inspect("soft link", "soft_link.h5", "'/inputs'", "soft or external link")
with open("secret.bin", "wb") as f:
    f.write(os.urandom(64 * 16))
with h5py.File("external_storage.h5", "w") as f:
    f.create_dataset("inputs", shape=(64, 4), dtype=np.float32,
                     external=[(os.path.abspath("secret.bin"), 0, 64 * 16)])
    f["targets"] = np.zeros(64, np.int64)
inspect("external storage", "external_storage.h5", "external raw-data storage")
layout = h5py.VirtualLayout(shape=(64, 4), dtype=np.float32)
layout[:] = h5py.VirtualSource("other.h5", "inputs", shape=(64, 4))
with h5py.File("virtual.h5", "w") as f:
    f.create_virtual_dataset("inputs", layout)
    f["targets"] = np.zeros(64, np.int64)
inspect("virtual dataset", "virtual.h5", "virtual datasets")

# 2. Sizes trusted before checked: 2^28 samples claimed by a few kilobytes of file.
with h5py.File("claims.h5", "w") as f:
    f.create_dataset("inputs", shape=(2 ** 28, 4), dtype=np.float32, chunks=(4096, 4))
    f.create_dataset("targets", shape=(2 ** 28,), dtype=np.int64, chunks=(4096,))
    f["inputs"][:8] = 1
inspect("2^28 samples in a small file", "claims.h5", "chunks are written")
run("train on a claimed dataset", ["train", "--set", "data.path=claims.h5",
                                   "--set", "train.run_dir=claims-run"], 3, ["claims.h5"])
with h5py.File("contiguous.h5", "w") as f:
    f.create_dataset("inputs", shape=(2 ** 24, 4), dtype=np.float32)
    f.create_dataset("targets", shape=(2 ** 24,), dtype=np.int64)
inspect("unwritten contiguous dataset", "contiguous.h5", "never written")

# 5. Values that used to end as internal errors.
with h5py.File("zero_size.h5", "w") as f:
    f["inputs"] = np.zeros((64, 0), np.float32)
    f["targets"] = np.zeros(64, np.int64)
inspect("zero-size samples", "zero_size.h5", "hold no element")
for attr in ("mean", "std"):
    good(f"nan_{attr}.h5")
    with h5py.File(f"nan_{attr}.h5", "a") as f:
        f.attrs[attr] = [float("nan")]
    inspect(f"non-finite {attr}", f"nan_{attr}.h5", f"attribute '{attr}'")
with h5py.File("labels.h5", "w") as f:
    f["inputs"] = np.ones((64, 4), np.float32)
    f["targets"] = np.full(64, 12, np.int64)
    f.attrs["classes"] = 4  # the model gets 4 outputs; the labels say 12
run("class targets out of range", ["train", "--set", "data.path=labels.h5",
                                   "--set", "train.run_dir=labels-run", "--set", "train.epochs=1"],
    3, ["labels.h5", "class target 12"])
os.makedirs("config_dir.ini", exist_ok=True)
run("config path is a directory", ["config", "check", "config_dir.ini"], 2,
    ["config_dir.ini: a directory, not a regular file"])

for key, value, needle in [("model.dropout", "2", "outside 0..1"),
                           ("train.epochs", "-16", "outside 1.."),
                           ("optim.momentum", "-0.5", "outside 0..1"),
                           ("model.hidden", "0,16", "0 is outside 1.."),
                           ("model.width", "0", "outside 1.."),
                           ("train.seed", "99999999999999999999", "not an integer")]:
    run(f"config {key}={value}", ["config", "check", "--set", f"{key}={value}"], 2,
        [key, needle])
# Patterns go to RE2 (linear time, no recursion): one nested 2000 deep is checked without a
# crash (std::regex overflowed its stack on it), a longer one is refused by its length, a broken
# one is named, and one that backtracks exponentially in std::regex is accepted (RE2 matches it in
# time linear in the name).
deep = "(" * 2000 + "fc" + ")" * 2000
for key, value, code, needle in [
        ("model.freeze", deep, 0, "[model]"),
        ("model.init_skip", "(" * 40000 + "a" + ")" * 40000, 2, "more than 4096"),
        ("optim.lr_scale", deep + ":0.5", 0, "[model]"),
        ("model.freeze", "(a", 2, "not a regular expression"),
        ("model.freeze", "(a|aa)*c", 0, "[model]")]:
    run(f"config {key}= a pattern of {len(value)} bytes", ["config", "check", "--set",
                                                           f"{key}={value}"], code, [needle])
good("plain.h5")
run("train.threads beyond the cores", ["train", "--set", "data.path=plain.h5", "--set",
                                       f"train.threads={os.cpu_count() + 1}", "--set",
                                       "train.run_dir=threads-run"], 2, ["train.threads", "cores"])

# 1. Importers: dimensions whose product wraps, malformed shapes, a gzip bomb.
os.makedirs("idx", exist_ok=True)
def idx(dims, data=b""):
    return b"\x00\x00\x08" + bytes([len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + data
with gzip.open("idx/train-images-idx3-ubyte.gz", "wb") as f:
    f.write(idx([65536, 65536, 65536, 65536][:3] + [65536]))  # 2^64 elements, 0 bytes
with gzip.open("idx/train-labels-idx1-ubyte.gz", "wb") as f:
    f.write(idx([0]))
run("IDX dims wrapping to 0", ["data", "import", "fashion-mnist", "--input", "idx",
                               "--split", "train", "--out", "idx.h5"], 3,
    ["train-images-idx3-ubyte.gz", "do not match"])
def npy(shape_text, data=b""):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape_text
    h += " " * ((64 - (len(h) + 11) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + data
open("x.npy", "wb").write(npy("(4611686018427387904, 4)"))
np.save("y.npy", np.zeros(4, np.int64))
run("npy shape wrapping", ["data", "import", "npy", "x.npy", "y.npy", "--out", "npy.h5"], 3,
    ["x.npy", "does not match"])
open("neg.npy", "wb").write(npy("(-2, 2)", b"\0" * 16))
run("npy negative dimension", ["data", "import", "npy", "neg.npy", "y.npy", "--out", "npy.h5"],
    3, ["neg.npy", "'shape'"])
with gzip.open("bomb.npy.gz", "wb", compresslevel=9) as f:
    chunk = b"\0" * (1 << 20)
    for _ in range(400):
        f.write(chunk)
print(f"     bomb.npy.gz: {os.path.getsize('bomb.npy.gz')} bytes for 400 MiB")
run("gzip bomb", ["data", "import", "npy", "bomb.npy.gz", "y.npy", "--out", "npy.h5"], 3,
    ["bomb.npy.gz", "decompresses to more than"])
run("gzip bomb, bound raised", ["data", "import", "npy", "bomb.npy.gz", "y.npy", "--out", "npy.h5",
                                 "--max-inflate-ratio", "2000"], 3, ["bomb.npy.gz", "bad magic"],
    max_rss_mb=3 * hostile.MAX_RSS_MB)  # it inflates all 400 MiB, as asked
for out in ("idx.h5", "npy.h5"):
    if os.path.exists(out) or any(n.startswith(out + ".tmp") for n in os.listdir(".")):
        failures.append(f"a failed import left {out} behind")

# 5. Text that is not UTF-8, in --json output: replaced, never an internal error.
good("latin1.h5")
with h5py.File("latin1.h5", "a") as f:
    f.attrs["source"] = np.bytes_(b"caf\xe9 \xff")
proc = run("non-UTF-8 attribute in --json", ["data", "inspect", "latin1.h5", "--json"], 0)
if proc is not None:
    try:
        json.loads(proc.stdout.decode())
    except ValueError as e:
        failures.append(f"data inspect --json printed invalid JSON: {e}")

# 6. Half-written outputs: nothing under the final name unless it is whole and valid.
good("whole.h5")
run("split onto itself", ["data", "split", "whole.h5", "--train", "t.h5", "--val", "./t.h5"], 2,
    ["is the same file as --train"])
run("split over its input", ["data", "split", "whole.h5", "--train", "whole.h5", "--val", "v.h5"],
    2, ["is the same file as PATH"])
run("make-synthetic with empty shards", ["data", "make-synthetic", "--kind", "classification",
                                          "--samples", "3", "--features", "2", "--classes", "2",
                                          "--shards", "5", "--out", "shards"], 2, ["empty"])
with open("c.csv", "w") as f:
    f.write("1,0\n2,1\n3,0\n")
run("writer constructor that throws", ["data", "import", "csv", "c.csv", "--shape"] + ["1"] * 40 +
    ["--out", "csv.h5"], 3, ["csv.h5"])
for name in ("t.h5", "v.h5", "shards", "csv.h5"):
    if os.path.exists(name):
        failures.append(f"a failed command left {name} behind")
if any(".tmp-" in n for n in os.listdir(".")):
    failures.append(f"a temporary file was left behind: {os.listdir('.')}")
if subprocess.run(["/usr/bin/python3", "-c", "import h5py; h5py.File('whole.h5')['inputs'][:]"],
                  capture_output=True).returncode != 0:
    failures.append("split damaged its input")

# 7. data stage: paths with spaces are copied and verified.
os.makedirs("my data", exist_ok=True)
good("my data/set one.h5")
run("stage a path with spaces", ["data", "stage", "my data/set one.h5", "--to", "staged here"],
    0)
if not os.path.exists("staged here/set one.h5"):
    failures.append("stage did not copy a path with spaces")

# 5, 7. metrics.jsonl: out-of-range ranks, wrong types, a flat series at 1e17, escapes.
def metrics_run(name, records):
    os.makedirs(name, exist_ok=True)
    with open(f"{name}/metrics.jsonl", "w") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return name


run_rec = {"event": "run", "t": 0, "ranks": 2, "total_steps": 10, "hosts": ["h1", "h2"]}
def step(s, loss=1.0):
    return {"event": "step", "t": s, "step": s, "loss": loss, "lr": 0.1, "step_s": 0.01}
fields = {n: {"mean": 0.01, "min": 0.01, "max": 0.02, "min_rank": 0, "max_rank": 1}
          for n in ("step", "busy")}
summary = {"event": "summary", "first_step": 1, "step": 5, "window_steps": 5, "ranks": 2,
           "samples_per_s": 100.0, "loss": 1.0, "rank_busy_s": [0.01, 0.02],
           "rank_step_s": [0.01, 0.02], "slowest_rank": -2000000000, "fields": fields}
d = metrics_run("negative_rank", [run_rec] + [step(s) for s in range(1, 6)] + [summary])
run("report: slowest_rank -2e9", ["report", d], 0)
run("top: slowest_rank -2e9", ["top", d, "--once"], 0)
d = metrics_run("wrong_types", [dict(run_rec, hosts=[1, 2], job_id=7, ranks="two"), step(1),
                                dict(step(2), loss="low")])
run("report: wrongly typed fields", ["report", d], 0)
run("top: wrongly typed fields", ["top", d, "--once"], 0)
# Two values one ULP apart at 1e17: the tick step (5) is below half an ULP (8), so `y += step`
# never moved and the report looped for ever, growing its output.
# (Negative: the loss axis starts at 0 otherwise, which gives it a wide range.)
d = metrics_run("flat_1e17", [run_rec] + [step(s, -1e17 - 16 * (s % 2)) for s in range(1, 50)])
run("report: a series one ULP wide at 1e17", ["report", d], 0, timeout=30)
d = metrics_run("escapes", [dict(run_rec, hosts=["\x1b]0;owned\x07h1", "h2"]), step(1),
                            {"event": "note", "t": 1, "step": 1,
                             "message": "\x1b[31mred\u009b2J"}])
run("top: escape sequences", ["top", d, "--once"], 0)
run("report: escape sequences", ["report", d], 0)
os.makedirs("fifo_run", exist_ok=True)
os.mkfifo("fifo_run/metrics.jsonl")
run("report: metrics.jsonl is a FIFO", ["report", "fifo_run"], 3, ["metrics.jsonl",
                                                                  "not a regular file"])
run("top: metrics.jsonl is a FIFO", ["top", "fifo_run", "--once"], 3, ["not a regular file"])
# The one way in: a FIFO or a dangling link as a dataset or an import source is said to be one,
# at once (never a wait for a writer).
os.mkfifo("fifo.h5")
os.mkfifo("fifo.npy")
os.symlink("gone.h5", "dangling.h5")
run("inspect: a FIFO", ["data", "inspect", "fifo.h5"], 3, ["fifo.h5: a FIFO, not a regular file"])
run("inspect: a dangling link", ["data", "inspect", "dangling.h5"], 3,
    ["dangling.h5: a link to gone.h5, which does not exist"])
run("import: a FIFO source", ["data", "import", "npy", "fifo.npy", "fifo.npy", "--out", "f.h5"], 3,
    ["fifo.npy: a FIFO, not a regular file"])

# The /metrics endpoint: one listener only, Prometheus names only.
good("exporter.h5")
run("monitor.http_bind with a comma", ["train", "--set", "data.path=exporter.h5", "--set",
                                       "monitor.http_bind=127.0.0.1,0.0.0.0", "--set",
                                       "train.run_dir=bind-run"], 2, ["monitor.http_bind"])
exporter = os.path.join(os.path.dirname(cohort), "cohort-exporter")
proc = subprocess.run([exporter, "127.0.0.1,0.0.0.0", "0"], capture_output=True, text=True,
                      timeout=30)
if proc.returncode != 2 or not proc.stdout.startswith("error "):
    failures.append(f"cohort-exporter took two listeners: exit {proc.returncode}, {proc.stdout}")
exp = subprocess.Popen([exporter, "127.0.0.1", "0"], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
port = exp.stdout.readline().split()[-1]
good_gauge = {"n": "cohort_ok", "h": "fine", "l": {"rank": "0"}, "v": 1.0}
bad_gauge = {"n": "cohort_bad\ninjected_metric 1", "h": "x", "l": {}, "v": 2.0}
exp.stdin.write(json.dumps([bad_gauge]) + "\n" + json.dumps([good_gauge]) + "\n")
exp.stdin.flush()
body = ""
for _ in range(50):
    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    if "cohort_ok" in body:
        break
    time.sleep(0.1)
exp.stdin.close()
exp.wait(timeout=10)
if "cohort_ok" not in body or "injected_metric" in body:
    failures.append(f"/metrics after a bad and a good update: {body!r}")
print(f"{'ok  ' if 'injected_metric' not in body else 'FAIL'} exporter: invalid names dropped")

# report.html is replaced whole or not at all.
with open("escapes/report.html", "w") as f:
    f.write("previous report\n")
os.chmod("escapes", 0o555)
if os.geteuid() != 0:  # root writes anyway: the check needs an unwritable directory
    run("report into a read-only run", ["report", "escapes"], 3, ["report"])
    if open("escapes/report.html").read() != "previous report\n":
        failures.append("a failed report damaged the previous report.html")
os.chmod("escapes", 0o755)

# Sizes a dataset claims decide a model's memory: a token set whose vocab_size is 2^31 - 1 would
# make gpt's embedding 2^31 x width floats (2 TiB at width 256). Refused before it is allocated,
# under the host's memory and under a stated model.max_build_gib; within it, the model builds.
subprocess.run([cohort, "data", "make-synthetic", "--kind", "tokens", "--tokens", "4096",
                "--vocab", "50", "--seq-len", "16", "--out", "vocab.h5"], check=True,
               capture_output=True)
with h5py.File("vocab.h5", "a") as f:
    f.attrs["vocab_size"] = np.int64(2**31 - 1)
gpt = ["train", "--set", "data.path=vocab.h5", "--set", "model.name=gpt", "--set",
       "model.width=32", "--set", "model.blocks=1", "--set", "model.heads=2", "--set",
       "train.max_steps=1", "--set", "train.run_dir=vocab_run", "--set", "data.batch_size=8"]
run("a claimed vocab_size of 2^31 - 1", gpt, 2,
    ["model gpt (vocab_size 2147483647", "model.max_build_gib"], timeout=120)
run("a stated model.max_build_gib", gpt[:1] + ["--set", "model.max_build_gib=0.001"] + gpt[1:], 2,
    ["more than 1.0 MiB", "model.max_build_gib"], timeout=120)
with h5py.File("vocab.h5", "a") as f:
    f.attrs["vocab_size"] = np.int64(50)
run("the same set, its true vocab_size", gpt + ["--set", "model.max_build_gib=0.5"], 0,
    timeout=300)

contract.verdict("hostile data, config and metrics cases")
