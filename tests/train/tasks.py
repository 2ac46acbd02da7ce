"""train.task and train.loss against PyTorch and scikit-learn (Debian's /usr/bin/python3).

For each task and loss below, a scripted module (saved here) is trained for 20 steps by
`cohort train` on 1 rank (batch 32) and on 2 ranks (16 each), and by a plain PyTorch loop with
the same loss (torch.nn.functional's, with the same options) from the same file, in the order
of torch's DistributedSampler; the 2-rank reference averages the two ranks' losses, which is
what DDP's averaged gradients are. Parameters must agree within 1e-5. Cohort's final evaluation
of the validation set (split over the ranks, sums all-reduced) must equal the metrics
scikit-learn computes from PyTorch's trained module on the same set, within 1e-4 relative:
mean_squared_error, mean_absolute_error, r2_score (two outputs, uniform average), f1_score
(micro) and per-label accuracy, accuracy and top_k_accuracy_score, and the loss. Cases:
regression with two outputs (mse, l1, huber with delta 0.5), a scalar regression target (mse,
the model's [B, 1] output), multilabel (bce with logits; 0/1 targets stored as int64), and
classification with label smoothing and class weights (top-3 accuracy).

Then the misfits, each refused before the first step in one line, exit 2: a loss that does not
fit the task, a task the targets do not fit, a model whose output does not fit the targets
(naming both shapes), a target metric the task does not report, class weights of the wrong
count; and a multilabel target outside 0..1 (exit 3, the dataset's fault).

Usage: tasks.py COHORT WORKDIR   (MPIEXEC, MPIEXEC_FLAGS from the environment)
"""
import json
import subprocess

import h5py
import numpy as np
import torch
from sklearn import metrics

from torch_ref import fail, load_export, start, train_loop

cohort, launcher = start()
STEPS, BATCH, SEED, N, VAL = 20, 32, 5, 256, 100
F = torch.nn.functional


rng = np.random.default_rng(11)


def write(path, x, y, classes=0):
    with h5py.File(path, "w") as f:
        f["inputs"] = x
        f["targets"] = y
        f.attrs["format_version"] = 1
        if classes:
            f.attrs["classes"] = classes


# Learnable rules over 8 float features, for a training and a validation set each.
def features(n):
    return rng.standard_normal((n, 8)).astype(np.float32)


sets = {}
for split, n in (("train", N), ("val", VAL)):
    x = features(n)
    two = np.stack([x[:, 0] * 2 + x[:, 1], np.sin(x[:, 2]) - x[:, 3] ** 2], 1).astype(np.float32)
    write(f"reg-{split}.h5", x, two)
    write(f"scalar-{split}.h5", x, two[:, 0].copy())
    labels = (x[:, :5] + 0.3 * x[:, 5:6] > 0.2).astype(np.int64)  # five 0/1 labels
    write(f"multi-{split}.h5", x, labels)
    write(f"class-{split}.h5", x, (x[:, :5].argmax(1) + 5 * (x[:, 5] > 0)).astype(np.int64),
          classes=10)
    sets[split] = x
with h5py.File("multi-bad.h5", "w") as f:  # a multilabel target of 3
    bad = (sets["train"][:, :5] > 0).astype(np.int64)
    bad[7, 2] = 3
    f["inputs"], f["targets"] = sets["train"], bad
    f.attrs["format_version"] = 1


class Net(torch.nn.Module):
    def __init__(self, outputs):
        super().__init__()
        self.fc = torch.nn.Linear(8, 16)
        self.out = torch.nn.Linear(16, outputs)

    def forward(self, x):
        return self.out(torch.tanh(self.fc(x)))


torch.manual_seed(SEED)
for name, outputs in (("two", 2), ("one", 1), ("five", 5), ("ten", 10)):
    torch.jit.script(Net(outputs)).save(f"{name}.pt")

WEIGHTS = [1.0, 2.0, 0.5, 1.5, 1.0, 3.0, 1.0, 0.25, 1.0, 2.0]


def targets_of(data, split):
    with h5py.File(f"{data}-{split}.h5", "r") as f:
        return torch.from_numpy(f["targets"][()])


def loss_fn(task, loss, out, target):
    if task == "classification":
        return F.cross_entropy(out, target, weight=torch.tensor(WEIGHTS), label_smoothing=0.1)
    if task == "multilabel":
        return F.binary_cross_entropy_with_logits(out, target.float())
    out = out.reshape(out.shape[0], -1)
    target = target.reshape(target.shape[0], -1)
    if loss == "mse":
        return F.mse_loss(out, target)
    if loss == "l1":
        return F.l1_loss(out, target)
    return F.huber_loss(out, target, delta=0.5)


def reference(case, world):
    model, data, task, loss = case
    module = torch.jit.load(model)
    opt = torch.optim.SGD(list(module.parameters()), lr=0.05, momentum=0.9)
    x, y = torch.from_numpy(sets["train"]), targets_of(data, "train")
    train_loop(opt, STEPS, N, BATCH, world, SEED,
               lambda idx: loss_fn(task, loss, module(x[idx]), y[idx]))
    return module


def sklearn_metrics(case, module):
    """What Cohort's evaluation must report, from PyTorch's trained module."""
    _, data, task, loss = case
    with torch.no_grad():
        out = module(torch.from_numpy(sets["val"]))
    y = targets_of(data, "val")
    want = {"loss": float(loss_fn(task, loss, out, y))}
    if task == "regression":
        pred, true = out.reshape(VAL, -1).numpy(), y.reshape(VAL, -1).numpy()
        want["mse"] = metrics.mean_squared_error(true, pred)
        want["mae"] = metrics.mean_absolute_error(true, pred)
        want["r2"] = metrics.r2_score(true, pred)
    elif task == "multilabel":
        pred = (out > 0).numpy().astype(np.int64)
        want["label_accuracy"] = float((pred == y.numpy()).mean())
        want["micro_f1"] = metrics.f1_score(y.numpy(), pred, average="micro")
    else:
        # Cohort's eval loss is the set's weighted mean (sum of w*l over the sum of w), as
        # torch's is over one batch: the whole validation set is one batch here.
        want["accuracy"] = metrics.accuracy_score(y.numpy(), out.argmax(1).numpy())
        want["top3_accuracy"] = metrics.top_k_accuracy_score(y.numpy(), out.numpy(), k=3,
                                                             labels=list(range(10)))
    return want


def cohort_run(case, world, run, extra=()):
    model, data, task, loss = case
    launch = [] if world == 1 else launcher + ["-np", str(world)]
    sets_ = {"model.name": "torchscript", "model.file": model, "data.path": f"{data}-train.h5",
             "data.val_path": f"{data}-val.h5", "data.batch_size": BATCH // world,
             "optim.name": "sgd", "optim.lr": 0.05, "optim.momentum": 0.9, "train.seed": SEED,
             "train.max_steps": STEPS, "train.epochs": 10, "train.log_every": 0,
             "train.eval_every": 1000, "checkpoint.every_steps": STEPS, "train.run_dir": run,
             "train.task": task, "train.loss": loss, "train.top_k": 3}
    if task == "classification":
        sets_["train.label_smoothing"] = 0.1
        sets_["train.class_weights"] = ",".join(str(w) for w in WEIGHTS)
    cmd = launch + [cohort, "train", "--json"]
    for key, value in list(sets_.items()) + list(extra):
        cmd += ["--set", f"{key}={value}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{run}: {done.stdout[-2000:]}{done.stderr[-2000:]}")
    summary = json.loads(done.stdout[done.stdout.index("{"):])
    subprocess.run([cohort, "ckpt", "export", f"{run}/checkpoints", "-o", f"{run}.pt"],
                   check=True, capture_output=True)
    return load_export(f"{run}.pt"), summary


cases = [("two.pt", "reg", "regression", "mse"), ("two.pt", "reg", "regression", "l1"),
         ("two.pt", "reg", "regression", "huber"), ("one.pt", "scalar", "regression", "mse"),
         ("five.pt", "multi", "multilabel", "bce"),
         ("ten.pt", "class", "classification", "cross_entropy")]
for case in cases:
    for world in (1, 2):
        run = f"{case[1]}-{case[3]}-{world}"
        module = reference(case, world)
        got, summary = cohort_run(case, world, run, [("train.huber_delta", 0.5)])
        want = {k: v.detach() for k, v in module.named_parameters()}
        start = dict(torch.jit.load(case[0]).named_parameters())
        moved = max(float((want[k] - start[k]).abs().max()) for k in want)
        diff = max(float((got[k].double() - want[k].double()).abs().max()) for k in want)
        evaluation = summary.get("eval", {})
        expected = sklearn_metrics(case, module)
        off = {k: (evaluation.get(k), v) for k, v in expected.items()
               if evaluation.get(k) is None or abs(evaluation[k] - v) > 1e-4 * max(1, abs(v))}
        shown = " ".join(f"{k} {evaluation.get(k, float('nan')):.4f}" for k in expected)
        print(f"{case[2]:14s} {case[3]:13s} {world} rank(s): max |cohort - torch| = {diff:.1e} "
              f"(moved {moved:.2e}); eval {shown}")
        if not diff <= 1e-5 or moved < 1e-3:
            fail(f"{run}: parameters differ by {diff} (moved {moved})")
        if off or evaluation.get("samples") != VAL or evaluation.get("task") != case[2]:
            fail(f"{run}: eval {evaluation} against scikit-learn/torch {expected}: {off}")

# The misfits: refused before any step, one line naming what does not fit.
MISFITS = [
    ("class", "ten.pt", [("train.task", "classification"), ("train.loss", "mse")], 2,
     "train.loss = mse does not fit train.task = classification"),
    ("class", "ten.pt", [("train.task", "multilabel")], 2,
     "integer targets of shape []; train.task = multilabel needs one 0/1 vector"),
    ("reg", "two.pt", [("train.task", "classification")], 2,
     "float targets of shape [2] (0 classes); train.task = classification needs one integer"),
    ("reg", "ten.pt", [], 2,
     "the model's output per sample [10] does not fit train.task = regression on reg-train.h5: "
     "its targets are [2], the output must be [2]"),
    ("class", "five.pt", [], 2, "the model's output per sample [5] does not fit train.task = "
     "classification on class-train.h5: its targets are [], the output must be [10]"),
    ("reg", "two.pt", [("train.target_metric", "accuracy")], 2,
     "train.target_metric = accuracy: train.task = regression does not report it"),
    ("class", "ten.pt", [("train.class_weights", "1,2,3")], 2,
     "train.class_weights has 3 weights for the model's 10 classes"),
    ("multi", "five.pt", [("data.path", "multi-bad.h5"), ("train.task", "multilabel")], 3,
     "multi-bad.h5: a multilabel target is 3, outside 0..1"),
]
for data, model, extra, code, needle in MISFITS:
    cmd = [cohort, "train", "--set", "model.name=torchscript", "--set", f"model.file={model}",
           "--set", f"data.path={data}-train.h5", "--set", "train.run_dir=misfit"]
    for key, value in extra:
        cmd += ["--set", f"{key}={value}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    if done.returncode != code or not lines or needle not in lines[-1] or \
            "step 1" in done.stdout:
        fail(f"{data} {model} {extra}: exit {done.returncode}, {done.stdout[-600:]}"
             f"{done.stderr[-1500:]}")
    print(f"refused (exit {code}): {lines[-1]}")
print("PASS")
