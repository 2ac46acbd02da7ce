"""`cohort eval` against PyTorch and scikit-learn (Debian's /usr/bin/python3), and against itself
on more ranks (issue 44).

A scripted CNN with BatchNorm is trained by `cohort train` on 2 ranks on 10 classes, its
checkpoint exported back as TorchScript (`ckpt export --run-module`). Python's eval-mode outputs
of that module on all 301 validation samples give the reference: cross-entropy, accuracy and
top-5 accuracy (scikit-learn's accuracy_score, top_k_accuracy_score), each class's accuracy and
the confusion matrix (sklearn.metrics.confusion_matrix). `cohort eval --checkpoint` on 1, 2 and 3
ranks (uneven shares, batch sizes 64, 50 and 7) and `cohort eval --model` must give the counts
exactly and the metrics within 1e-5. The text output holds the per-class table and the matrix,
with a class name's escape sequence made harmless; `cohort report --eval` shows the record, and
refuses a damaged one (rows missing, a negative count, rows not summing to the class's samples,
no format, a metric that is not a number, another format_version, a class's correct count or
accuracy that the matrix does not give, a count past 2^62) in one line, exit 3. With 4 classes, no top-5 accuracy (it would
be 1 whatever the model does). Refused in one line: both --checkpoint and --model, a dataset of
other samples.

Usage: eval.py COHORT WORKDIR   (MPIEXEC, MPIEXEC_FLAGS from the environment)
"""
import json
import os
import subprocess

import h5py
import numpy as np
import torch
from sklearn import metrics

from torch_ref import Cnn, fail, start

cohort, launcher = start()
rng = np.random.default_rng(11)
NAMES = ["zero", "one", "two", "three", "four\x1b[31mred", "five", "six", "seven", "eight", "nine"]


def run(cmd, ranks=1, check=True):
    launch = [] if ranks == 1 else launcher + ["-np", str(ranks)]
    done = subprocess.run(launch + cmd, capture_output=True, text=True, timeout=240)
    if check and done.returncode != 0:
        fail(f"{' '.join(cmd)}: exit {done.returncode}: {done.stdout[-1500:]}{done.stderr[-1500:]}")
    return done


def write(path, n, classes, names=None):
    x = rng.standard_normal((n, 1, 8, 8)).astype(np.float32)
    y = x.reshape(n, -1)[:, :classes].argmax(1).astype(np.int64)
    with h5py.File(path, "w") as f:
        f["inputs"], f["targets"] = x, y
        f.attrs["format_version"] = 1
        f.attrs["classes"] = classes
        if names:
            f.attrs["class_names"] = json.dumps(names)
    return torch.from_numpy(x), y


write("train.h5", 512, 10)
val_x, val_y = write("val.h5", 301, 10, NAMES)
torch.manual_seed(1)
torch.jit.script(Cnn()).save("cnn.pt")
run([cohort, "train", "--set", "model.name=torchscript", "--set", "model.file=cnn.pt",
     "--set", "data.path=train.h5", "--set", "data.batch_size=16", "--set", "train.epochs=2",
     "--set", "train.log_every=0", "--set", "train.run_dir=cnn"], ranks=2)
run([cohort, "ckpt", "export", "cnn/checkpoints", "-o", "trained.pt", "--run-module"])
module = torch.jit.load("trained.pt")
module.eval()
with torch.no_grad():
    logits = module(val_x)
pred = logits.argmax(1).numpy()
want = {"loss": float(torch.nn.functional.cross_entropy(logits, torch.from_numpy(val_y))),
        "accuracy": metrics.accuracy_score(val_y, pred),
        "top5_accuracy": metrics.top_k_accuracy_score(val_y, logits.numpy(), k=5,
                                                      labels=list(range(10)))}
confusion = metrics.confusion_matrix(val_y, pred, labels=list(range(10)))
per_class = [confusion[c, c] / confusion[c].sum() if confusion[c].sum() else None
             for c in range(10)]
print(f"reference: accuracy {want['accuracy']:.4f}, top5 {want['top5_accuracy']:.4f}, "
      f"loss {want['loss']:.4f}")
if not 0.2 < want["accuracy"] < 1.0 or confusion.trace() == confusion.sum():
    fail("the reference model is untrained or perfect: the confusion check would be weak")


def check(report, what):
    got = {"loss": report["loss"], **report["metrics"]}
    for name, value in want.items():
        if abs(got.get(name, float("nan")) - value) > 1e-5:
            fail(f"{what}: {name} {got.get(name)} != {value}")
    if report["samples"] != 301 or report["task"] != "classification":
        fail(f"{what}: {report['samples']} samples, task {report['task']}")
    if report["confusion"] != confusion.tolist():
        fail(f"{what}: confusion {report['confusion']} != {confusion.tolist()}")
    for c, row in enumerate(report["classes"]):
        if row["name"] != NAMES[c] or row["samples"] != int(confusion[c].sum()) or \
                (per_class[c] is None) != (row["accuracy"] is None) or \
                (per_class[c] is not None and abs(row["accuracy"] - per_class[c]) > 1e-12):
            fail(f"{what}: class {c}: {row} (want {per_class[c]})")
    print(f"{what}: metrics within 1e-5, confusion and per-class accuracy equal")


for ranks, batch in ((1, 64), (2, 50), (3, 7)):
    done = run([cohort, "eval", "--checkpoint", "cnn/checkpoints", "--data", "val.h5",
                "--batch-size", str(batch), "--json"], ranks=ranks)
    report = json.loads(done.stdout[done.stdout.index("{"):])
    if report["ranks"] != ranks or not report["model"].endswith(f"step-{report['step']:08d}"):
        fail(f"report {report['ranks']} ranks, model {report['model']}, step {report['step']}")
    check(report, f"eval --checkpoint, {ranks} rank(s), batch {batch}")
done = run([cohort, "eval", "--model", "trained.pt", "--task", "classification", "--data",
            "val.h5", "--json"], ranks=2)
check(json.loads(done.stdout[done.stdout.index("{"):]), "eval --model trained.pt, 2 ranks")

# The text: the table and the matrix; the escape sequence of a class name not passed on.
text = run([cohort, "eval", "--checkpoint", "cnn/checkpoints", "--data", "val.h5"]).stdout
if "\x1b" in text or "four?[31mred" not in text or "confusion (rows: true class" not in text:
    fail(f"text output:\n{text}")
row3 = next(l for l in text.splitlines() if l.startswith("    3 "))
if [int(v) for v in row3.split()[1:]] != confusion[3].tolist():
    fail(f"text matrix row 3 '{row3}' != {confusion[3].tolist()}")
print("text: per-class table and confusion matrix; the class name's escape made harmless")

# The record in the run's report: the per-class table and the matrix, shaded by row share.
open("e.json", "w").write(run([cohort, "eval", "--checkpoint", "cnn/checkpoints", "--data",
                               "val.h5", "--json"]).stdout)
run([cohort, "report", "cnn", "--eval", "e.json", "-o", "report.html"])
html = open("report.html").read()
if "<h2>Evaluations</h2>" not in html or 'class="confusion"' not in html or \
        f">{confusion[3][3]}</td>" not in html:
    fail("the report lacks the evaluation's tables")
print("report --eval: metrics, per-class table and confusion matrix")
# ... and a damaged or hostile record: one line naming the file and the field, exit 3.
record = json.load(open("e.json"))
for name, change in (("rows", lambda r: r["confusion"].pop()),
                     ("count", lambda r: r["confusion"][0].__setitem__(0, -1)),
                     ("sum", lambda r: r["confusion"][1].__setitem__(1, 10**6)),
                     ("format", lambda r: r.__setitem__("format", ["cohort-eval"])),
                     ("metric", lambda r: r["metrics"].__setitem__("accuracy", "high")),
                     ("version", lambda r: r.__setitem__("format_version", 2)),
                     ("correct", lambda r: r["classes"][0].__setitem__("correct", 10**3)),
                     ("accuracy", lambda r: r["classes"][0].__setitem__("accuracy", 5.0)),
                     ("huge", lambda r: r["classes"][0].__setitem__("samples", 2**63))):
    bad = json.loads(json.dumps(record))
    change(bad)
    json.dump(bad, open(f"bad-{name}.json", "w"))
    done = run([cohort, "report", "cnn", "--eval", f"bad-{name}.json", "-o", "bad.html"],
               check=False)
    lines = done.stderr.strip().splitlines()
    if done.returncode != 3 or len(lines) != 1 or f"bad-{name}.json" not in lines[0]:
        fail(f"report --eval bad-{name}.json: exit {done.returncode}: {done.stderr}")
    print(f"refused ({name}): {lines[0]}")

# Four classes: no top-5 accuracy.
write("four.h5", 64, 4)
write("four-val.h5", 40, 4)
run([cohort, "train", "--set", "model.name=mlp", "--set", "model.hidden=8", "--set",
     "data.path=four.h5", "--set", "train.max_steps=3", "--set", "train.log_every=0",
     "--set", "train.run_dir=four"])
report = json.loads(run([cohort, "eval", "--checkpoint", "four/checkpoints", "--data",
                         "four-val.h5", "--json"]).stdout)
if any(k.startswith("top") for k in report["metrics"]) or len(report["confusion"]) != 4:
    fail(f"4 classes: metrics {report['metrics']}, {len(report['confusion'])} rows")
print(f"4 classes: metrics {sorted(report['metrics'])}, no top-5")

# A 10-class model on a set labelled 0..3 only: the matrix has the model's 10 classes.
report = json.loads(run([cohort, "eval", "--checkpoint", "cnn/checkpoints", "--data", "four-val.h5",
                         "--json"]).stdout)
if len(report["confusion"]) != 10 or sum(map(sum, report["confusion"])) != 40 or \
        any(sum(report["confusion"][c]) for c in range(4, 10)):
    fail(f"10-class model on 4 labels: {report['confusion']}")
print("10-class model on a 4-label set: a 10 x 10 matrix, rows 4-9 empty")

# Refusals: one line, exit 2.
with h5py.File("other.h5", "w") as f:  # samples of another shape
    f["inputs"] = rng.standard_normal((20, 1, 6, 6)).astype(np.float32)
    f["targets"] = np.zeros(20, np.int64)
    f.attrs["format_version"] = 1
    f.attrs["classes"] = 10
# A model path that is not a file says what it is (and a FIFO does not block the load).
os.mkfifo("model.fifo")
os.mkdir("model.dir")
os.symlink("gone.pt", "model.dangling")
not_files = [(["--model", name, "--data", "val.h5"], f"{name}: model.file: {what}")
             for name, what in (("model.fifo", "a FIFO"), ("model.dir", "a directory"),
                                ("/dev/zero", "a device"),
                                ("model.dangling", "a link to gone.pt, which does not exist"),
                                ("missing.pt", "no such file or directory"))]
for args, message in not_files + [
        (["--checkpoint", "cnn/checkpoints", "--model", "trained.pt", "--data", "val.h5"],
         "give --checkpoint DIR or --model FILE (one of them)"),
        (["--checkpoint", "cnn/checkpoints", "--data", "other.h5"],
         "the model was trained on samples of")]:
    done = run([cohort, "eval"] + args, check=False)
    lines = done.stderr.strip().splitlines()
    if done.returncode != 2 or len(lines) != 1 or message not in lines[0]:
        fail(f"eval {' '.join(args)}: exit {done.returncode}: {done.stderr}")
    print(f"refused: {lines[0]}")
print("PASS")
