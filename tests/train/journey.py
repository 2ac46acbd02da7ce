"""A new user's first day as one test (issue 44), through the commands the README gives, each
step checked against Python (Debian's /usr/bin/python3: torch, numpy, scikit-learn):

1. `cohort data import digits` of scikit-learn's bundled CSV: the stored per-feature statistics
   equal numpy's of the same file; `cohort data split` into train and validation.
2. The user's own model, scripted in Python, trained by `cohort launch -n 2 -- cohort train`;
   SIGTERM to the launcher mid-run: the ranks checkpoint and the launcher exits 75; the same
   command again resumes and finishes, and its weights equal an uninterrupted run's bit for bit.
3. `cohort eval` on 2 ranks: loss, accuracy and the confusion matrix equal PyTorch's on the
   exported weights, the inputs normalised as docs/models.md says.
4. `cohort ckpt export --run-module` and `cohort predict`: Python's torch.jit.load of the export
   gives the outputs predict wrote.

Usage: journey.py COHORT WORKDIR
"""
import gzip
import json
import os
import signal
import subprocess
import time

import h5py
import numpy as np
import torch
from sklearn import metrics

from torch_ref import fail, load_export, start

cohort, _ = start()
DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"


def run(*args, check=True):
    done = subprocess.run([cohort, *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        fail(f"cohort {' '.join(args)}: exit {done.returncode}: {done.stdout[-1200:]}"
             f"{done.stderr[-1200:]}")
    return done


def launch(*args, check=True):
    return run("launch", "-n", "2", "--", cohort, *args, check=check)


# 1. Import and split.
run("data", "import", "digits", "--out", "digits.h5")
with gzip.open(DIGITS, "rt") as f:
    table = np.loadtxt(f, delimiter=",", dtype=np.float64)
features = table[:, :-1].astype(np.float32).astype(np.float64)
want_std = features.std(0)
want_std[want_std == 0] = 1
with h5py.File("digits.h5") as f:
    mean, std = f.attrs["mean"], f.attrs["std"]
if np.abs(mean - features.mean(0)).max() > 1e-5 or np.abs(std - want_std).max() > 1e-5:
    fail(f"digits statistics differ from numpy's: {np.abs(mean - features.mean(0)).max()}")
run("data", "split", "digits.h5", "--train", "train.h5", "--val", "val.h5", "--val-fraction",
    "0.2")
print(f"1. import: {len(table)} samples, statistics equal numpy's; split 80/20")


# 2. The user's own model; an interrupted run resumed equals an uninterrupted one.
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(64, 48), torch.nn.ReLU(),
                                        torch.nn.Linear(48, 10))

    def forward(self, x):
        return self.body(x)


torch.manual_seed(3)
torch.jit.script(Net()).save("net.pt")
settings = ["--set", "model.name=torchscript", "--set", "model.file=net.pt",
            "--set", "data.path=train.h5", "--set", "data.val_path=val.h5",
            "--set", "data.batch_size=16", "--set", "optim.lr=0.05", "--set", "train.epochs=4",
            "--set", "train.log_every=0", "--set", "checkpoint.every_steps=25",
            "--set", "debug.slow_rank=0", "--set", "debug.slow_ms=15"]
launch("train", *settings, "--set", "train.run_dir=whole")
proc = subprocess.Popen([cohort, "launch", "-n", "2", "--", cohort, "train", *settings,
                         "--set", "train.run_dir=cut"], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
deadline = time.time() + 120
while time.time() < deadline and proc.poll() is None:
    try:
        if sum('"event":"step"' in l for l in open("cut/metrics.jsonl")) >= 40:
            break
    except OSError:
        pass
    time.sleep(0.05)
if proc.poll() is not None:
    fail(f"the run ended before the signal: {proc.communicate()}")
proc.send_signal(signal.SIGTERM)
out, err = proc.communicate(timeout=120)
if proc.returncode != 75:
    fail(f"SIGTERM to cohort launch: exit {proc.returncode}, want 75: {err[-1500:]}")
stopped = open("cut/checkpoints/latest").read().strip()
done = launch("train", *settings, "--set", "train.run_dir=cut")
if "resumed from" not in done.stdout + done.stderr:
    fail(f"the second start did not resume: {done.stdout[-800:]}")
for run_dir in ("whole", "cut"):
    run("ckpt", "export", f"{run_dir}/checkpoints", "-o", f"{run_dir}.pt")
whole, cut = load_export("whole.pt"), load_export("cut.pt")
if sorted(whole) != sorted(cut) or any(not torch.equal(whole[k], cut[k]) for k in whole):
    fail("the interrupted and resumed run's weights differ from the uninterrupted run's")
print(f"2. own model: SIGTERM -> exit 75 at {stopped}, resumed, final weights bit-identical")

# 3. cohort eval against PyTorch on the exported weights.
with h5py.File("val.h5") as f:
    raw, labels = f["inputs"][()], f["targets"][()]
    mean, std = f.attrs["mean"], f.attrs["std"]
x = (torch.from_numpy(raw.astype(np.float32)) - torch.tensor(mean, dtype=torch.float32)) * \
    torch.tensor(1 / std, dtype=torch.float32)
model = Net()
model.load_state_dict(cut)
model.eval()
with torch.no_grad():
    logits = model(x)
pred = logits.argmax(1).numpy()
report = json.loads(launch("eval", "--checkpoint", "cut/checkpoints", "--data", "val.h5",
                           "--json").stdout)
loss = float(torch.nn.functional.cross_entropy(logits, torch.from_numpy(labels)))
accuracy = metrics.accuracy_score(labels, pred)
confusion = metrics.confusion_matrix(labels, pred, labels=list(range(10))).tolist()
if abs(report["loss"] - loss) > 1e-5 or abs(report["metrics"]["accuracy"] - accuracy) > 1e-9 or \
        report["confusion"] != confusion:
    fail(f"eval: loss {report['loss']} vs {loss}, accuracy {report['metrics']['accuracy']} vs "
         f"{accuracy}, confusion equal: {report['confusion'] == confusion}")
if not accuracy > 0.8:
    fail(f"the trained model reaches only {accuracy} on validation")
print(f"3. eval on 2 ranks = PyTorch: loss {loss:.4f}, accuracy {accuracy:.4f}, confusion equal")

# 4. Export as TorchScript, predict, and Python's load of the export.
run("ckpt", "export", "cut/checkpoints", "-o", "trained.pt", "--run-module")
launch("predict", "--checkpoint", "cut/checkpoints", "--data", "val.h5", "--out", "preds.h5")
exported = torch.jit.load("trained.pt")
exported.eval()
with torch.no_grad():
    python_out = exported(x).numpy()
with h5py.File("preds.h5") as f:
    cohort_out = f["outputs"][()]
diff = float(np.abs(python_out - cohort_out).max())
if not diff <= 1e-5:
    fail(f"predict vs Python on the export: max difference {diff}")
print(f"4. export + predict: Python's outputs of the export equal predict's within {diff:.1e}")
print("PASS")
