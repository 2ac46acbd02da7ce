"""`cohort predict` against PyTorch (Debian's /usr/bin/python3) and against itself on more ranks.

A scripted CNN with BatchNorm is trained by `cohort train` on 2 ranks; its checkpoint is
exported back as TorchScript (`ckpt export --run-module`), and Python's torch.jit.load of that
module, in eval mode, gives the reference outputs of all 301 samples of a validation set. Then
`cohort predict --checkpoint` on 1, 2 and 3 ranks (uneven shares, batch sizes 64, 50 and 7) and
`cohort predict --model` on the exported module must write outputs within 1e-5 of the reference,
in sample order, and argmax equal to the reference's argmax. The built-in mlp on a regression set
(2 ranks): the predictions' mean absolute error must equal the final evaluation's mae (the same
model on the same samples). A predict killed (SIGKILL, every rank) in the middle must leave the
file that was under the final name as it was (here: an older predictions file), and a fresh one
must leave none. Bad input, one line each: a dataset of other samples (exit 2), a checkpoint with
a config of another hash (exit 2), both --checkpoint and --model (exit 2).

Usage: predict.py COHORT WORKDIR   (MPIEXEC, MPIEXEC_FLAGS from the environment)
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import time

import h5py
import numpy as np
import torch

from torch_ref import Cnn, fail, start

cohort, launcher = start()


def run(cmd, ranks=1, check=True):
    launch = [] if ranks == 1 else launcher + ["-np", str(ranks)]
    done = subprocess.run(launch + cmd, capture_output=True, text=True)
    if check and done.returncode != 0:
        fail(f"{' '.join(cmd)}: exit {done.returncode}: {done.stdout[-1500:]}{done.stderr[-1500:]}")
    return done


rng = np.random.default_rng(3)


def images(n):
    x = rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
    return x, x.reshape(n, -1)[:, :10].argmax(1).astype(np.int64)


for name, n in (("train", 512), ("val", 301)):
    x, y = images(n)
    with h5py.File(f"{name}.h5", "w") as f:
        f["inputs"], f["targets"] = x, y
        f.attrs["format_version"] = 1
        f.attrs["classes"] = 10
    features = rng.standard_normal((n, 6)).astype(np.float32)
    with h5py.File(f"reg-{name}.h5", "w") as f:
        f["inputs"] = features
        f["targets"] = (features[:, 0] * 3 - features[:, 1]).astype(np.float32)
        f.attrs["format_version"] = 1
with h5py.File("other.h5", "w") as f:  # samples of another shape
    f["inputs"] = rng.standard_normal((20, 1, 6, 6)).astype(np.float32)
    f["targets"] = np.zeros(20, np.int64)
    f.attrs["format_version"] = 1
    f.attrs["classes"] = 10


torch.manual_seed(1)
torch.jit.script(Cnn()).save("cnn.pt")
run([cohort, "train", "--set", "model.name=torchscript", "--set", "model.file=cnn.pt",
     "--set", "data.path=train.h5", "--set", "data.batch_size=16", "--set", "train.epochs=2",
     "--set", "train.log_every=0", "--set", "checkpoint.every_steps=32",
     "--set", "train.run_dir=cnn"], ranks=2)
run([cohort, "ckpt", "export", "cnn/checkpoints", "-o", "trained.pt", "--run-module"])
module = torch.jit.load("trained.pt")
module.eval()
with h5py.File("val.h5", "r") as f:
    val = torch.from_numpy(f["inputs"][()])
with torch.no_grad():
    want = module(val).numpy()
print(f"reference: PyTorch's eval-mode outputs of the exported module, {want.shape}")


def check(path, what):
    with h5py.File(path, "r") as f:
        got, argmax = f["outputs"][()], f["argmax"][()]
        attrs = dict(f.attrs)
    diff = float(np.abs(got - want).max())
    print(f"{what}: {got.shape}, max |cohort - torch| = {diff:.1e}, argmax equal: "
          f"{bool((argmax == want.argmax(1)).all())}")
    scale = max(1.0, float(np.abs(want).max()))
    if got.shape != want.shape or not diff <= 1e-5 * scale or not (argmax == got.argmax(1)).all():
        fail(f"{what}: outputs {got.shape} differ by {diff}")
    if (argmax != want.argmax(1)).sum() > 0:
        fail(f"{what}: argmax differs from PyTorch's at {np.nonzero(argmax != want.argmax(1))}")
    if attrs.get("format") != "cohort-predictions" or attrs.get("task") != "classification":
        fail(f"{what}: attributes {attrs}")


for ranks, batch in ((1, 64), (2, 50), (3, 7)):
    done = run([cohort, "predict", "--checkpoint", "cnn/checkpoints", "--data", "val.h5",
                "--out", f"ckpt-{ranks}.h5", "--batch-size", str(batch), "--json"], ranks=ranks)
    summary = json.loads(done.stdout[done.stdout.index("{"):])
    if summary["samples"] != 301 or summary["ranks"] != ranks or summary["output_shape"] != [10]:
        fail(f"summary {summary}")
    check(f"ckpt-{ranks}.h5", f"predict --checkpoint, {ranks} rank(s), batch {batch}")
    if glob.glob(f"ckpt-{ranks}.h5.tmp-*"):
        fail("a finished predict left its temporary file")
run([cohort, "predict", "--model", "trained.pt", "--task", "classification", "--data", "val.h5",
     "--out", "module.h5"], ranks=2)
check("module.h5", "predict --model trained.pt, 2 ranks")

# The built-in mlp on a regression set: predictions and evaluation see the same model.
done = run([cohort, "train", "--json", "--set", "model.name=mlp", "--set", "model.hidden=16",
            "--set", "data.path=reg-train.h5", "--set", "data.val_path=reg-val.h5",
            "--set", "optim.name=adamw", "--set", "optim.lr=0.01", "--set", "train.epochs=5",
            "--set", "train.log_every=0", "--set", "checkpoint.every_steps=40",
            "--set", "train.run_dir=reg"], ranks=2)
mae = json.loads(done.stdout[done.stdout.index("{"):])["eval"]["mae"]
run([cohort, "predict", "--checkpoint", "reg/checkpoints", "--data", "reg-val.h5", "--out",
     "reg.h5"], ranks=2)
with h5py.File("reg.h5", "r") as f, h5py.File("reg-val.h5", "r") as v:
    got = f["outputs"][()]
    if "argmax" in f or got.shape != (301, 1):
        fail(f"regression predictions: {list(f)} {got.shape}")
    predicted_mae = float(np.abs(got[:, 0].astype(np.float64) - v["targets"][()]).mean())
print(f"mlp regression: predictions' MAE {predicted_mae:.6f}, the final evaluation's {mae:.6f}")
if abs(predicted_mae - mae) > 1e-5 * max(1.0, mae):
    fail("the predictions' MAE is not the evaluation's")

# Killed in the middle (every rank, SIGKILL): the file under the final name is untouched, and
# a run with none leaves none.
for existing in (True, False):
    out = "killed.h5"
    if existing:
        shutil.copy("ckpt-1.h5", out)
    elif os.path.exists(out):
        os.remove(out)
    before = open(out, "rb").read() if existing else None
    cmd = launcher + ["-np", "2", cohort, "predict", "--checkpoint", "cnn/checkpoints", "--data",
                      "val.h5", "--out", out, "--batch-size", "5", "--delay-ms", "200"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.time() + 60
    while not glob.glob(out + ".tmp-*") and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # some rows written
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    subprocess.run(["pkill", "-9", "-f", "--", f"--out {out} --batch-size 5"], check=False)
    time.sleep(0.5)
    if not glob.glob(out + ".tmp-*"):
        fail("the killed predict had not begun writing")
    after = open(out, "rb").read() if os.path.exists(out) else None
    if after != before:
        fail(f"killed predict (an older file: {existing}) changed {out}")
    print(f"killed mid-run ({'over an older file' if existing else 'no older file'}): "
          f"{out} {'unchanged' if existing else 'absent'}, the temporary left beside it")

BAD = [
    (["--checkpoint", "cnn/checkpoints", "--data", "other.h5"], 2,
     "other.h5: samples of [1, 6, 6]; the model was trained on samples of [1, 8, 8] (train.h5)"),
    (["--model", "trained.pt", "--data", "other.h5"], 2, "trained.pt: model.file: forward() "
     "failed"),
    (["--checkpoint", "reg/checkpoints", "--data", "val.h5"], 2,
     "val.h5: samples of [1, 8, 8]; the model was trained on samples of [6] (reg-train.h5)"),
    (["--checkpoint", "cnn/checkpoints", "--model", "trained.pt", "--data", "val.h5"], 2,
     "give --checkpoint DIR or --model FILE (one of them)"),
    (["--checkpoint", "cnn/checkpoints", "--config", "reg/config.resolved.ini", "--data",
      "val.h5"], 2, "reg/config.resolved.ini: its hash"),
]
for args, code, needle in BAD:
    done = run([cohort, "predict", "--out", "bad.h5"] + args, check=False)
    lines = done.stderr.strip().splitlines()
    if done.returncode != code or not lines or needle not in lines[-1] or \
            os.path.exists("bad.h5"):
        fail(f"{args}: exit {done.returncode}, {done.stderr[-1200:]}")
    print(f"refused (exit {code}): {lines[-1][:200]}")
print("PASS")
